// Copies the backend used to add that the stream IR does not have (issue:
// run-time copies equal the copies in the final stream IR). Each program
// below has no copy left in its stream IR on the path it takes, or exactly
// the copies named in its comment; the run-time count (kiln_device_stats
// around one invoke) must match. Expected values are derived by hand.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/backend/emit_module.h"
#include "compiler/ir/parser.h"
#include "compiler/transforms/pipeline.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

const char* const kExecutables = kArithExecutables;

// An scf.for that updates a CONSUMED argument in place, 3 trips:
//   x = [1, 2, 3, 4]; r = x + 3 * 1 = [4, 5, 6, 7].
// The donated storage is the loop's carried storage: no copy when the caller
// hands its buffer over (0 copies in the IR, 0 at run time).
const char* kForConsumed = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 3 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r = "scf.for"(%lb, %ub, %st, %x) ({
  ^bb0(%iv: index, %acc: !stream.resource<*>):
    %a = "stream.async.dispatch"(%acc, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%a) : (!stream.resource<*>) -> ()
  }) : (index, index, index, !stream.resource<external>) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(BackendCopiesTest, ForOverConsumedArgumentCopiesNothing) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kForConsumed, false, &report), "");
  EXPECT_EQ(report.ir_copies, 0);
  for (int call = 0; call < 2; ++call) {
    std::vector<HostTensor> out;
    kiln_device_stats_t d{};
    ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(d.dispatches, 3u);
    EXPECT_EQ(d.copies, 0u) << "call " << call;
  }
  // A caller that keeps its tensor (borrowed at run time) does not hand the
  // buffer over: the runtime's take copies it once (not an IR copy: the
  // module cannot know), and the caller's bytes stay as they were.
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/false), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(d.copies, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Must not act: the consumed argument is read again after the loop
// (t = r + x), so the loop cannot update its storage; the copy of the
// initial value stays, as an IR clone written into the carried storage:
//   r = [4, 5, 6, 7], t = [5, 7, 9, 11]; 1 copy.
const char* kForConsumedReadAfter = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 3 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r = "scf.for"(%lb, %ub, %st, %x) ({
  ^bb0(%iv: index, %acc: !stream.resource<*>):
    %a = "stream.async.dispatch"(%acc, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%a) : (!stream.resource<*>) -> ()
  }) : (index, index, index, !stream.resource<external>) -> !stream.resource<*>
  %t = "stream.async.dispatch"(%r, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<external>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  %f = "stream.tensor.export"(%t) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(BackendCopiesTest, ForOverConsumedArgumentReadAfterKeepsItsCopy) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kForConsumedReadAfter, false, &report), "");
  EXPECT_EQ(report.ir_copies, 1);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{5, 7, 9, 11}));
  EXPECT_EQ(d.copies, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A CONSUMED argument updated in place inside an scf.if (device condition
// x[0] < 10): then x * 2, else x unchanged. Both branches leave the value in
// the donated storage, so neither copies:
//   x = [1, 2, 3, 4] -> [2, 4, 6, 8]; x = [20, 1, 1, 1] -> unchanged.
const char* kIfConsumed = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %ten = "stream.async.constant"() {size = 16 : i64, value = dense<[10.0, 10.0, 10.0, 10.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lt = "stream.async.dispatch"(%x, %ten) {entry = @less, sizes = [4], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient>
  %c = "stream.async.load"(%lt) {dtype = "i1", offset = 0 : i64} : (!stream.resource<transient>) -> i1
  %r = "scf.if"(%c) ({
    %m = "stream.async.dispatch"(%x, %two) {entry = @mul, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%m) : (!stream.resource<*>) -> ()
  }, {
    "scf.yield"(%x) : (!stream.resource<external>) -> ()
  }) : (i1) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(BackendCopiesTest, IfOverConsumedArgumentCopiesNothing) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kIfConsumed, false, &report), "");
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(d.copies, 0u) << "then branch";
  ASSERT_EQ(s.Invoke("main", {F32({4}, {20, 1, 1, 1})}, &out, &d, /*consume=*/true), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{20, 1, 1, 1}));
  EXPECT_EQ(d.copies, 0u) << "else branch";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A BORROWED argument cloned and doubled in the then-branch of an scf.if,
// and read again after it (s = r + x): the clone is the one copy the IR
// keeps on that path, written straight into the if's result storage.
//   x = [1, 2, 3, 4]: r = [2, 4, 6, 8], s = [3, 6, 9, 12]: 1 copy.
const char* kIfClone = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %ten = "stream.async.constant"() {size = 16 : i64, value = dense<[10.0, 10.0, 10.0, 10.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lt = "stream.async.dispatch"(%x, %ten) {entry = @less, sizes = [4], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient>
  %c = "stream.async.load"(%lt) {dtype = "i1", offset = 0 : i64} : (!stream.resource<transient>) -> i1
  %r = "scf.if"(%c) ({
    %m = "stream.async.dispatch"(%x, %two) {entry = @mul, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%m) : (!stream.resource<*>) -> ()
  }, {
    %n = "stream.async.dispatch"(%x, %two) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%n) : (!stream.resource<*>) -> ()
  }) : (i1) -> !stream.resource<*>
  %s = "stream.async.dispatch"(%r, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<external>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  %f = "stream.tensor.export"(%s) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "main"} : () -> ()
)";

TEST(BackendCopiesTest, IfCloneIsWrittenIntoTheResultStorage) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kIfClone, false, &report), "");
  EXPECT_EQ(report.ir_copies, 1) << "the clone";
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(d.copies, 1u) << "then branch: the clone only";
  // else: r = x + 2 = [22, 3, 3, 3], s = r + x = [42, 4, 4, 4]; no copy.
  ASSERT_EQ(s.Invoke("main", {F32({4}, {20, 1, 1, 1})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{22, 3, 3, 3}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{42, 4, 4, 4}));
  EXPECT_EQ(d.copies, 0u) << "else branch";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A transfer a branch makes only to yield it is a new allocation like a
// clone (ops.def): it is written straight into the scf.if's result storage.
// Discrete topology (host -> gpu kept), borrowed argument, device condition
// x[0] < 10; both branches yield the argument's bytes:
//   then: the transfer (1 copy); else: the clone (1 copy).
const char* kIfTransfer = R"(
"kiln.topology"() {spec = "discrete"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %ten = "stream.async.constant"() {size = 16 : i64, value = dense<[10.0, 10.0, 10.0, 10.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lt = "stream.async.dispatch"(%x, %ten) {entry = @less, sizes = [4], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient>
  %c = "stream.async.load"(%lt) {dtype = "i1", offset = 0 : i64} : (!stream.resource<transient>) -> i1
  %r = "scf.if"(%c) ({
    %t = "stream.async.transfer"(%x) {affinity = "gpu", size = 16 : i64, source_affinity = "host"} : (!stream.resource<external>) -> !stream.resource<transient>
    "scf.yield"(%t) : (!stream.resource<transient>) -> ()
  }, {
    %k = "stream.async.clone"(%x) {size = 16 : i64} : (!stream.resource<external>) -> !stream.resource<transient>
    "scf.yield"(%k) : (!stream.resource<transient>) -> ()
  }) : (i1) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(BackendCopiesTest, IfTransferIsWrittenIntoTheResultStorage) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kIfTransfer, false, &report), "");
  EXPECT_EQ(report.ir_copies, 2) << "the transfer and the clone";
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(d.copies, 1u) << "then branch: the transfer only";
  ASSERT_EQ(s.Invoke("main", {F32({4}, {20, 1, 1, 1})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{20, 1, 1, 1}));
  EXPECT_EQ(d.copies, 1u) << "else branch: the clone only";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A value computed before an scf.if that the else-branch yields (the form
// of hey_jarvis's If after its execution regions are inlined): it is
// written into the if's result storage when it is made, so neither branch
// copies. s = -x; if (s[0] < 10) r = x + 2 else r = s.
//   x = [1, 2, 3, 4]: s = [-1, -2, -3, -4], r = [3, 4, 5, 6];
//   x = [-20, 1, 1, 1]: s = [20, -1, -1, -1] = r.
// With `read_after`, t = r + s is returned too: s is read after the if, so
// it cannot live in r's storage, and the else-branch copies it (1):
//   then: t = [2, 2, 2, 2]; else: t = 2s = [40, -2, -2, -2].
std::string OuterYield(bool read_after) {
  std::string after = read_after ? R"(
  %t = "stream.async.dispatch"(%r, %s) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<transient>) -> !stream.resource<transient>
  %f = "stream.tensor.export"(%t) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "main"} : () -> ()
)"
                                 : R"(
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "main"} : () -> ()
)";
  return std::string(R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %ten = "stream.async.constant"() {size = 16 : i64, value = dense<[10.0, 10.0, 10.0, 10.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %s = "stream.async.dispatch"(%x) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %lt = "stream.async.dispatch"(%s, %ten) {entry = @less, sizes = [4], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<constant>) -> !stream.resource<transient>
  %c = "stream.async.load"(%lt) {dtype = "i1", offset = 0 : i64} : (!stream.resource<transient>) -> i1
  %r = "scf.if"(%c) ({
    %n = "stream.async.dispatch"(%x, %two) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%n) : (!stream.resource<*>) -> ()
  }, {
    "scf.yield"(%s) : (!stream.resource<transient>) -> ()
  }) : (i1) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>)") +
         after;
}

TEST(BackendCopiesTest, OuterValueYieldedIsWrittenIntoTheResultStorage) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + OuterYield(false), false, &report), "");
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(d.copies, 0u) << "then branch";
  ASSERT_EQ(s.Invoke("main", {F32({4}, {-20, 1, 1, 1})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{20, -1, -1, -1}));
  EXPECT_EQ(d.copies, 0u) << "else branch";
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(BackendCopiesTest, OuterValueReadAfterTheIfIsCopied) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + OuterYield(true), false, &report), "");
  // The else branch's copy of s into the result storage is an IR clone
  // (--materialize-edge-copies), not a copy only the backend knows of.
  EXPECT_EQ(report.ir_copies, 1);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{3, 4, 5, 6}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{2, 2, 2, 2}));
  EXPECT_EQ(d.copies, 0u) << "then branch";
  ASSERT_EQ(s.Invoke("main", {F32({4}, {-20, 1, 1, 1})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{20, -1, -1, -1}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{40, -2, -2, -2}));
  EXPECT_EQ(d.copies, 1u) << "else branch: s is read after the if";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The backend records no copy of its own: without --materialize-edge-copies
// the else-branch's value (read after the if) is not in the if's result
// storage, and emission fails naming the edge instead of copying behind the
// IR's back (OuterValueReadAfterTheIfIsCopied is the same program compiled
// whole).
TEST(BackendCopiesTest, EmissionRefusesAValueNotInItsEdgeStorage) {
  auto parsed = ir::ParseModule(std::string(kExecutables) + OuterYield(true), "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  transforms::PipelineOptions options;
  std::vector<std::string> flags;
  for (const std::string& f : transforms::PipelineFor(options))
    if (f != "materialize-edge-copies") flags.push_back(f);
  ASSERT_LT(flags.size(), transforms::PipelineFor(options).size());
  ir::PassContext ctx;
  ASSERT_TRUE(transforms::RunPasses(*parsed.value(), flags, options, ctx).ok());
  auto bytes = backend::EmitModule(*parsed.value(), backend::EmitOptions{});
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), StatusCode::kInternal);
  EXPECT_NE(bytes.status().message().find("a yield into the region's result needs a copy the IR does not have"),
            std::string::npos)
      << bytes.status().message();
}

}  // namespace
}  // namespace kiln::e2e
