// Stream-level programs (written in .kir text) compiled by the real pipeline
// and run on Vulkan: tied (in-place) dispatches, clones, splats, subrange
// updates and slices. Expected values are derived by hand in the comments.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// x + c computed in place into a clone of x; x itself returned unchanged; a
// splat of 1.0 with elements 1..2 overwritten from a slice of the sum.
//   x = [1, 2, 3, 4], c = [1, 2, 3, 4]
//   sum = [2, 4, 6, 8]; x stays [1, 2, 3, 4]
//   ones = [1, 1, 1, 1]; update bytes [4, 12) with sum[0..2) -> [1, 2, 4, 1]
const char* kInPlaceProgram = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2 = "stream.async.clone"(%0) {size = 16 : i64} : (!stream.resource<external>) -> !stream.resource<transient>
  %3 = "stream.async.dispatch"(%2, %1) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>, !stream.resource<constant>) -> !stream.resource<transient>
  %4 = "stream.async.splat"() {pattern = 1065353216 : i64, size = 16 : i64} : () -> !stream.resource<transient>
  %5 = "stream.async.slice"(%3) {length = 8 : i64, offset = 0 : i64} : (!stream.resource<transient>) -> !stream.resource<transient>
  %6 = "stream.async.update"(%4, %5) {length = 8 : i64, offset = 4 : i64, size = 16 : i64} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %7 = "stream.tensor.export"(%3) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  %8 = "stream.tensor.export"(%0) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  %9 = "stream.tensor.export"(%6) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%7, %8, %9) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(StreamEmissionTest, InPlaceCloneSplatSliceUpdate) {
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kInPlaceProgram, {F32({4}, {1, 2, 3, 4})}, &out), "");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(Values(out[2]), (std::vector<float>{1, 2, 4, 1}));
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A loop-carried value updated in place on every trip: x + 1 ten times.
// materialize-copy-on-write puts a clone before the tied dispatch in the
// body; elide-async-copies removes it (the carried value is dead after the
// tied use and the init is consumed), so the loop runs with no copy per trip:
// only the one copy of the init into the loop's carried storage remains.
//   x = [1, 2, 3, 4] -> [11, 12, 13, 14]
const char* kLoopCarriedProgram = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 10 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %2 = "scf.for"(%lb, %ub, %st, %0) ({
  ^bb0(%iv: index, %acc: !stream.resource<*>):
    %3 = "stream.async.dispatch"(%acc, %1) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%3) : (!stream.resource<*>) -> ()
  }) : (index, index, index, !stream.resource<external>) -> !stream.resource<*>
  %4 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%4) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(StreamEmissionTest, LoopCarriedValueIsUpdatedInPlace) {
  kiln_device_stats_t before, after;
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &before), nullptr);
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kLoopCarriedProgram, {F32({4}, {1, 2, 3, 4})}, &out), "");
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &after), nullptr);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{11, 12, 13, 14}));
  EXPECT_EQ(after.dispatches - before.dispatches, 10u);
  EXPECT_LE(after.copies - before.copies, 1u) << "a copy per trip was not elided";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Execution regions and timepoints (already scheduled, as schedule-execution
// and elide-timepoints leave them): two regions read x, a join of their
// timepoints is awaited, and a third dispatch adds their results. On one
// queue the emitter records the bodies in place: one submission, no host
// wait inside the program (kiln_invoke's single wait at its end).
//   x = [1, 2, 3, 4], c = [1, 2, 3, 4], s = splat 2.0
//   e1 = x + c = [2, 4, 6, 8]; e2 = x + s = [3, 4, 5, 6]; r = e1 + e2 = [5, 8, 11, 14]
const char* kTimelineProgram = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2:2 = "stream.async.execute"(%0, %1) ({
  ^bb0(%x_r1: !stream.resource<external>, %c_r1: !stream.resource<constant>):
    %d_r1 = "stream.async.dispatch"(%x_r1, %c_r1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient>
    "stream.yield"(%d_r1) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [0, 2]} : (!stream.resource<external>, !stream.resource<constant>) -> (!stream.resource<transient>, !stream.timepoint)
  %3 = "stream.timepoint.immediate"() : () -> !stream.timepoint
  %4:2 = "stream.async.execute"(%3, %0) ({
  ^bb0(%x_r2: !stream.resource<external>):
    %s_r2 = "stream.async.splat"() {pattern = 1073741824 : i64, size = 16 : i64} : () -> !stream.resource<transient>
    %d_r2 = "stream.async.dispatch"(%x_r2, %s_r2) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<transient>) -> !stream.resource<transient>
    "stream.yield"(%d_r2) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [1, 1]} : (!stream.timepoint, !stream.resource<external>) -> (!stream.resource<transient>, !stream.timepoint)
  %5 = "stream.timepoint.join"(%2#1, %4#1) : (!stream.timepoint, !stream.timepoint) -> !stream.timepoint
  %6:2 = "stream.timepoint.await"(%5, %2#0, %4#0) : (!stream.timepoint, !stream.resource<transient>, !stream.resource<transient>) -> (!stream.resource<transient>, !stream.resource<transient>)
  %7 = "stream.async.dispatch"(%6#0, %6#1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %8 = "stream.tensor.export"(%7) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%8) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(StreamEmissionTest, ExecutionRegionsJoinAndAwait) {
  kiln_device_stats_t before, after;
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &before), nullptr);
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kTimelineProgram, {F32({4}, {1, 2, 3, 4})}, &out), "");
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &after), nullptr);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{5, 8, 11, 14}));
  EXPECT_EQ(after.dispatches - before.dispatches, 3u);
  // The module initializer's constant upload is one more submission + wait
  // (or none on unified memory); the invocation itself is one of each.
  EXPECT_LE(after.submissions - before.submissions, 2u);
  EXPECT_LE(after.host_waits - before.host_waits, 2u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A timepoint carried by an scf.for next to the value it orders: each trip
// runs an execution region that waits on the previous trip's timepoint and
// adds c in place; the loop's timepoint is awaited after it. On one queue
// the carried timepoint is queue order (LowerTimeline makes it an
// immediate), and the value is still updated in place.
//   x = [1, 2, 3, 4], c = [1, 2, 3, 4], 3 trips: x + 3c = [4, 8, 12, 16]
const char* kTimepointLoopProgram = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 3 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %init = "stream.async.clone"(%0) {size = 16 : i64} : (!stream.resource<external>) -> !stream.resource<transient>
  %t0 = "stream.timepoint.immediate"() : () -> !stream.timepoint
  %f:2 = "scf.for"(%lb, %ub, %st, %t0, %init) ({
  ^bb0(%iv: index, %tp: !stream.timepoint, %v: !stream.resource<transient>):
    %e:2 = "stream.async.execute"(%tp, %v, %1) ({
    ^bb0(%y: !stream.resource<transient>, %c: !stream.resource<constant>):
      %u = "stream.async.dispatch"(%y, %c) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>, !stream.resource<constant>) -> !stream.resource<transient>
      "stream.yield"(%u) : (!stream.resource<transient>) -> ()
    }) {operand_segments = [1, 2]} : (!stream.timepoint, !stream.resource<transient>, !stream.resource<constant>) -> (!stream.resource<transient>, !stream.timepoint)
    "scf.yield"(%e#1, %e#0) : (!stream.timepoint, !stream.resource<transient>) -> ()
  }) : (index, index, index, !stream.timepoint, !stream.resource<transient>) -> (!stream.timepoint, !stream.resource<transient>)
  %w = "stream.timepoint.await"(%f#0, %f#1) : (!stream.timepoint, !stream.resource<transient>) -> !stream.resource<transient>
  %8 = "stream.tensor.export"(%w) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%8) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(StreamEmissionTest, TimepointCarriedByALoop) {
  kiln_device_stats_t before, after;
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &before), nullptr);
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kTimepointLoopProgram, {F32({4}, {1, 2, 3, 4})}, &out), "");
  ASSERT_EQ(kiln_device_stats(SharedDevice(), &after), nullptr);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 8, 12, 16}));
  EXPECT_EQ(after.dispatches - before.dispatches, 3u);
  // The borrowed x, once, straight into the loop's carried storage: none
  // per trip.
  EXPECT_EQ(after.copies - before.copies, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(StreamEmissionTest, UnsupportedOpIsNamed) {
  const char* program = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  "test.unsupported"(%0) : (!stream.resource<external>) -> ()
  %1 = "stream.tensor.export"(%0) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  std::vector<HostTensor> out;
  std::string error = CompileTextAndRun(program, {F32({4}, {1, 2, 3, 4})}, &out);
  EXPECT_NE(error.find("'test.unsupported'"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln::e2e
