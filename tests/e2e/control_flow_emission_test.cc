// Stream-level control flow and module globals, compiled by the real
// pipeline (materialize-copy-on-write, elide-async-copies, emission) and run
// on Vulkan: scf.while (device condition through stream.async.load, and a
// host counter), scf.index_switch, cf.br / cf.cond_br with block arguments,
// util.global load / tied update / store across invocations of one context.
// Expected values are derived by hand in the comments; copy counts come from
// kiln_device_stats (the --stats counters) around each invoke.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

const char* const kExecutables = kArithExecutables;

// scf.while with a device condition: while (x[0] < 10) x = x * 2.
//   x = [1, 2, 3, 4]: x[0] goes 1 -> 2 -> 4 -> 8 -> 16 (4 trips, 5 tests)
//   result [16, 32, 48, 64]. The donated init is the carried storage
//   (region_coalescing.cc): no copy on entry, and the tied mul updates the
//   carried value in place on every trip (no copy per trip).
const char* kWhileDevice = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %ten = "stream.async.constant"() {size = 16 : i64, value = dense<[10.0, 10.0, 10.0, 10.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %w = "scf.while"(%0) ({
  ^bb0(%x: !stream.resource<*>):
    %lt = "stream.async.dispatch"(%x, %ten) {entry = @less, sizes = [4], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<transient>
    %c = "stream.async.load"(%lt) {dtype = "i1", offset = 0 : i64} : (!stream.resource<transient>) -> i1
    "scf.condition"(%c, %x) : (i1, !stream.resource<*>) -> ()
  }, {
  ^bb0(%y: !stream.resource<*>):
    %n = "stream.async.dispatch"(%y, %two) {entry = @mul, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%n) : (!stream.resource<*>) -> ()
  }) : (!stream.resource<external>) -> !stream.resource<*>
  %e = "stream.tensor.export"(%w) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(ControlFlowEmissionTest, WhileWithDeviceCondition) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kWhileDevice), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{16, 32, 48, 64}));
  EXPECT_EQ(d.dispatches, 9u);  // 5 less + 4 mul
  EXPECT_EQ(d.copies, 0u) << "the donated init is the carried storage; no copy per trip";
  // A zero-trip loop: x[0] = 20 is not < 10, the result is the init (the
  // donated buffer itself).
  ASSERT_EQ(s.Invoke("main", {F32({4}, {20, 1, 1, 1})}, &out, &d, /*consume=*/true), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{20, 1, 1, 1}));
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// scf.while with a host counter (arith.cmpi / arith.addi on index values
// carried in registers) and a second carried resource:
//   i = 0; a = x; b = 1s; while (i < 3) { a = a + b; b = b * 2; i = i + 1 }
//   b: 1, 2, 4 added in turn -> a = x + 7 = [8, 9, 10, 11]; b = 8s.
const char* kWhileCounter = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %ones = "stream.async.splat"() {pattern = 1065353216 : i64, size = 16 : i64} : () -> !stream.resource<transient>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %c0 = "arith.constant"() {value = 0 : i64} : () -> index
  %c1 = "arith.constant"() {value = 1 : i64} : () -> index
  %c3 = "arith.constant"() {value = 3 : i64} : () -> index
  %w:3 = "scf.while"(%c0, %0, %ones) ({
  ^bb0(%i: index, %a: !stream.resource<*>, %b: !stream.resource<*>):
    %lt = "arith.cmpi"(%i, %c3) {predicate = "slt"} : (index, index) -> i1
    "scf.condition"(%lt, %i, %a, %b) : (i1, index, !stream.resource<*>, !stream.resource<*>) -> ()
  }, {
  ^bb0(%j: index, %x: !stream.resource<*>, %y: !stream.resource<*>):
    %s = "stream.async.dispatch"(%x, %y) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<*>) -> !stream.resource<*>
    %m = "stream.async.dispatch"(%y, %two) {entry = @mul, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    %k = "arith.addi"(%j, %c1) : (index, index) -> index
    "scf.yield"(%k, %s, %m) : (index, !stream.resource<*>, !stream.resource<*>) -> ()
  }) : (index, !stream.resource<external>, !stream.resource<transient>) -> (index, !stream.resource<*>, !stream.resource<*>)
  %e = "stream.tensor.export"(%w#1) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  %f = "stream.tensor.export"(%w#2) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(ControlFlowEmissionTest, WhileWithHostCounter) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kWhileCounter), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{8, 9, 10, 11}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{8, 8, 8, 8}));
  EXPECT_EQ(d.dispatches, 6u);
  // The constant init of b is copied into its carried storage (the clone
  // elide-async-copies hoists before the loop); the donated x is a's
  // carried storage itself; nothing per trip (14 without elision).
  EXPECT_EQ(d.copies, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// scf.index_switch inside an scf.for, on the induction variable:
//   case 0: acc = acc + 1 (tied); case 1: acc = acc * 2 (tied);
//   default: acc = -acc (a fresh value written straight into the result).
//   x = [1, 2, 3, 4]: iv 0 -> [2, 3, 4, 5]; iv 1 -> [4, 6, 8, 10];
//   iv 2, 3 (default) -> [-4, -6, -8, -10] -> [4, 6, 8, 10].
const char* kSwitch = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %two = "stream.async.constant"() {size = 16 : i64, value = dense<[2.0, 2.0, 2.0, 2.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 4 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r = "scf.for"(%lb, %ub, %st, %0) ({
  ^bb0(%iv: index, %acc: !stream.resource<*>):
    %s = "scf.index_switch"(%iv) ({
      %a = "stream.async.dispatch"(%acc, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
      "scf.yield"(%a) : (!stream.resource<*>) -> ()
    }, {
      %m = "stream.async.dispatch"(%acc, %two) {entry = @mul, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
      "scf.yield"(%m) : (!stream.resource<*>) -> ()
    }, {
      %n = "stream.async.dispatch"(%acc) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>) -> !stream.resource<transient>
      "scf.yield"(%n) : (!stream.resource<transient>) -> ()
    }) {cases = [0, 1]} : (index) -> !stream.resource<*>
    "scf.yield"(%s) : (!stream.resource<*>) -> ()
  }) : (index, index, index, !stream.resource<external>) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";

TEST(ControlFlowEmissionTest, IndexSwitchInLoop) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kSwitch), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(d.dispatches, 4u);
  // Copies: none on entry (the donated init is the carried storage). The
  // switch result shares the carried storage (region_coalescing.cc), so
  // trips 0 and 1 update it in place and copy nothing; trips 2 and 3
  // compute the neg into storage of its own (it reads the carried value)
  // and copy it in at the yield (1 each): 2 (was 7: the init, and 2 per
  // in-place trip into the switch result and back).
  EXPECT_EQ(d.copies, 2u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A loop built from blocks over a consumed argument, 3 trips: ^bb1 tests
// the counter %i < 3 and passes the carried value (%x) to ^bb2 or, on exit,
// to ^bb3, which returns it. `body` is ^bb2 (arguments %y, the carried
// value, and %j, the counter); it ends with %k = %j + 1 and
// `"cf.br"(<next value>, %k)[^bb1]`. %one is a constant splat of 1.0.
std::string ConsumedBlockLoop(const char* body) {
  return std::string(R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %c0 = "arith.constant"() {value = 0 : i64} : () -> index
  %c1 = "arith.constant"() {value = 1 : i64} : () -> index
  %c3 = "arith.constant"() {value = 3 : i64} : () -> index
  "cf.br"(%0, %c0)[^bb1] : (!stream.resource<external>, index) -> ()
^bb1(%x: !stream.resource<*>, %i: index):
  %lt = "arith.cmpi"(%i, %c3) {predicate = "slt"} : (index, index) -> i1
  "cf.cond_br"(%lt, %x, %i, %x)[^bb2, ^bb3] {operand_segments = [1, 2, 1]} : (i1, !stream.resource<*>, index, !stream.resource<*>) -> ()
^bb2(%y: !stream.resource<*>, %j: index):
)") + body + R"(^bb3(%z: !stream.resource<*>):
  %e = "stream.tensor.export"(%z) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume"], sym_name = "main"} : () -> ()
)";
}

// cf.br / cf.cond_br: a loop built from blocks with a resource and an index
// block argument: for (i = 0; i < 3; ++i) x = x + 1 (tied), then return x.
//   x = [1, 2, 3, 4] -> [4, 5, 6, 7]. Each resource block argument has one
//   storage; a branch copies its operand in unless it already lives there
//   (bb2 -> bb1 passes the tied add's result, which lives in ^bb2's %y).
const std::string kBranches = ConsumedBlockLoop(R"(
  %u = "stream.async.dispatch"(%y, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
  %k = "arith.addi"(%j, %c1) : (index, index) -> index
  "cf.br"(%u, %k)[^bb1] : (!stream.resource<*>, index) -> ()
)");

TEST(ControlFlowEmissionTest, BranchesWithBlockArguments) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kBranches), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(d.dispatches, 3u);
  // Copies: entry edge (1), exit edge ^bb1 -> ^bb3 (1): 2. Nothing per
  // trip: ^bb2's %y has one incoming edge and %x is dead after it, so %y
  // shares %x's storage (^bb1 -> ^bb2 copies nothing) and the tied add's
  // result, living there too, goes back to ^bb1 without a copy (it was 2
  // per trip, 8 in all, before block arguments were coalesced).
  EXPECT_EQ(d.copies, 2u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A loop built from blocks whose body reads the carried value after its
// tied update, so the update works on a copy (copy-on-write keeps the clone
// in the body): x = (x + 1) + x, 3 trips:
//   [1, 2, 3, 4] -> [3, 5, 7, 9] -> [7, 11, 15, 19] -> [15, 23, 31, 39].
// Copies: entry edge (1); per trip the clone (1) and the back edge copying
// the updated clone into ^bb1's %x (1), while ^bb1 -> ^bb2 copies nothing
// (%y shares %x's storage): 2 per trip (3 before block arguments were
// coalesced); exit edge (1): 1 + 3 x 2 + 1 = 8.
const std::string kBranchesReadAfter = ConsumedBlockLoop(R"(
  %u = "stream.async.dispatch"(%y, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
  %v = "stream.async.dispatch"(%u, %y) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<*>) -> !stream.resource<*>
  %k = "arith.addi"(%j, %c1) : (index, index) -> index
  "cf.br"(%v, %k)[^bb1] : (!stream.resource<*>, index) -> ()
)");

TEST(ControlFlowEmissionTest, BranchLoopReadAfterUpdateCopiesOncePerEdge) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kBranchesReadAfter), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{15, 23, 31, 39}));
  EXPECT_EQ(d.dispatches, 6u);
  EXPECT_EQ(d.copies, 8u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Arena sharing in a body of several blocks: each trip of the loop built
// from blocks makes five fresh 16-byte temporaries in ^bb2, each dead once
// the next one is made: x -> t1 = -x -> t2 = -t1 -> t3 = t2 + 1 -> t4 = -t3
// -> t5 = -t4 = x + 1, 3 trips: [1, 2, 3, 4] -> [4, 5, 6, 7]. Liveness over
// the block graph gives each temporary a short interval (and %x, live
// around the back edge, the whole loop), so the arena holds 3 slots of
// 256 bytes (binding alignment), not 6 (every transient for the whole
// function). Copies: entry edge (1), the back edge copies t5 into %x (1 per
// trip), ^bb1 -> ^bb2 nothing (%y shares %x's storage), exit edge (1): 5.
const std::string kBranchesTemps = ConsumedBlockLoop(R"(
  %t1 = "stream.async.dispatch"(%y) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>) -> !stream.resource<transient>
  %t2 = "stream.async.dispatch"(%t1) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
  %t3 = "stream.async.dispatch"(%t2, %one) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<constant>) -> !stream.resource<transient>
  %t4 = "stream.async.dispatch"(%t3) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
  %t5 = "stream.async.dispatch"(%t4) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
  %k = "arith.addi"(%j, %c1) : (index, index) -> index
  "cf.br"(%t5, %k)[^bb1] : (!stream.resource<transient>, index) -> ()
)");

TEST(ControlFlowEmissionTest, BranchLoopSharesTheArena) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kBranchesTemps, false, &report), "");
  EXPECT_EQ(report.unplanned_transient_bytes, 6 * 256);
  EXPECT_EQ(report.arena_bytes, 3 * 256);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d, /*consume=*/true), "");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(Values(out[0]), (std::vector<float>{4, 5, 6, 7}));
    EXPECT_EQ(d.dispatches, 15u);
    EXPECT_EQ(d.copies, 5u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Loop-carried values whose initial value is a BORROWED argument (the
// caller keeps it; the function must not write it), updated in place on
// each of 10 trips and returned. The copy-on-write copy of the initial value
// is made once, before the loop (elide-async-copies hoists it), straight
// into the loop's carried storage; every trip then updates the carried
// value in place: 1 copy in all, not 1 (or 2) per trip. After the loop the
// argument is read again, which shows it was not written:
//   x = [1, 2, 3, 4]; r = x + 10 * 1 = [11, 12, 13, 14];
//   s = r + x = [12, 14, 16, 18] (it would be [22, 24, 26, 28] had the
//   loop updated x itself).
const char* kForBorrowed = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 10 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r = "scf.for"(%lb, %ub, %st, %x) ({
  ^bb0(%iv: index, %acc: !stream.resource<*>):
    %a = "stream.async.dispatch"(%acc, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
    "scf.yield"(%a) : (!stream.resource<*>) -> ()
  }) : (index, index, index, !stream.resource<external>) -> !stream.resource<*>
  %s = "stream.async.dispatch"(%r, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<external>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  %f = "stream.tensor.export"(%s) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "main"} : () -> ()
)";

void RunForBorrowed(bool disable_elision, uint64_t copies) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kForBorrowed, disable_elision), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{11, 12, 13, 14}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{12, 14, 16, 18}));
  EXPECT_EQ(d.dispatches, 11u);  // 10 trips + the add after the loop
  EXPECT_EQ(d.copies, copies);
  // A second call: same values (the borrowed argument is fresh each call,
  // the carried storage is re-initialised by the copy).
  ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{11, 12, 13, 14}));
  EXPECT_EQ(Values(out[1]), (std::vector<float>{12, 14, 16, 18}));
  EXPECT_EQ(d.copies, copies);
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(ControlFlowEmissionTest, ForWithBorrowedInitCopiesOnce) { RunForBorrowed(false, 1); }
// Without elision each trip clones the carried value and copies the
// updated clone back at the yield (2 per trip), plus the init copy:
// 1 + 2 x 10 = 21, same values.
TEST(ControlFlowEmissionTest, ForWithBorrowedInitWithoutElision) { RunForBorrowed(true, 21); }

// The same loop built from blocks (cf.br / cf.cond_br), 10 trips, with a
// borrowed initial value: the copy of the initial value goes onto the entry
// edge ^bb0 -> ^bb1, written straight into %h's storage (1); %y shares
// %h's storage (one incoming edge, %h dead after it), so neither ^bb1 ->
// ^bb2 nor the back edge copies anything (0 per trip); the exit edge copies
// %h into the returned %z (1): 2 copies in all.
//   x = [1, 2, 3, 4] -> [11, 12, 13, 14]; s = r + x = [12, 14, 16, 18].
const char* kBranchesBorrowed = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %c0 = "arith.constant"() {value = 0 : i64} : () -> index
  %c1 = "arith.constant"() {value = 1 : i64} : () -> index
  %c10 = "arith.constant"() {value = 10 : i64} : () -> index
  "cf.br"(%x, %c0)[^bb1] : (!stream.resource<external>, index) -> ()
^bb1(%h: !stream.resource<*>, %i: index):
  %lt = "arith.cmpi"(%i, %c10) {predicate = "slt"} : (index, index) -> i1
  "cf.cond_br"(%lt, %h, %i, %h)[^bb2, ^bb3] {operand_segments = [1, 2, 1]} : (i1, !stream.resource<*>, index, !stream.resource<*>) -> ()
^bb2(%y: !stream.resource<*>, %j: index):
  %u = "stream.async.dispatch"(%y, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<*>, !stream.resource<constant>) -> !stream.resource<*>
  %k = "arith.addi"(%j, %c1) : (index, index) -> index
  "cf.br"(%u, %k)[^bb1] : (!stream.resource<*>, index) -> ()
^bb3(%z: !stream.resource<*>):
  %s = "stream.async.dispatch"(%z, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<*>, !stream.resource<external>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%z) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  %f = "stream.tensor.export"(%s) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e, %f) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "main"} : () -> ()
)";

TEST(ControlFlowEmissionTest, BranchLoopWithBorrowedInit) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kBranchesBorrowed), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  for (int call = 0; call < 2; ++call) {
    ASSERT_EQ(s.Invoke("main", {F32({4}, {1, 2, 3, 4})}, &out, &d), "");
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(Values(out[0]), (std::vector<float>{11, 12, 13, 14}));
    EXPECT_EQ(Values(out[1]), (std::vector<float>{12, 14, 16, 18}));
    EXPECT_EQ(d.dispatches, 11u);
    EXPECT_EQ(d.copies, 2u) << "entry and exit edge only; nothing per trip";
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Module globals (variable lifetime) across calls of one context:
//   @step: out = state + x (fresh); state = state + x (tied, stored back:
//          a state update in place, zero copies per call).
//   @swap: old = state; state = x; returns old (the load is read after the
//          store, so it is a snapshot: one copy in, one copy of x out).
// state starts at zero. x = [1, 2, 3, 4]:
//   step #1 -> out [1, 2, 3, 4]; state [1, 2, 3, 4]
//   step #2 -> out [2, 4, 6, 8]; state [2, 4, 6, 8]
//   swap(y = [5, 5, 5, 5]) -> [2, 4, 6, 8]; state [5, 5, 5, 5]
//   step #3 -> out [6, 7, 8, 9]
const char* kGlobals = R"(
"util.global"() {sym_name = "state", size = 16 : i64, type = !stream.resource<variable>} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %g = "util.global.load"() {global = @state} : () -> !stream.resource<variable>
  %out = "stream.async.dispatch"(%g, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<variable>, !stream.resource<external>) -> !stream.resource<transient>
  %n = "stream.async.dispatch"(%g, %x) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<variable>, !stream.resource<external>) -> !stream.resource<variable>
  "util.global.store"(%n) {global = @state} : (!stream.resource<variable>) -> ()
  %e = "stream.tensor.export"(%out) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "step"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %y = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %old = "util.global.load"() {global = @state} : () -> !stream.resource<variable>
  "util.global.store"(%y) {global = @state} : (!stream.resource<external>) -> ()
  %e = "stream.tensor.export"(%old) {size = 16 : i64} : (!stream.resource<variable>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "swap"} : () -> ()
)";

void RunGlobals(bool disable_elision, uint64_t step_copies) {
  Session s;
  ASSERT_EQ(s.Load(std::string(kExecutables) + kGlobals, disable_elision), "");
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  const HostTensor x = F32({4}, {1, 2, 3, 4});
  ASSERT_EQ(s.Invoke("step", {x}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(d.copies, step_copies);
  ASSERT_EQ(s.Invoke("step", {x}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(d.copies, step_copies);
  EXPECT_EQ(d.device_allocations, 0u) << "a warm call allocates nothing";
  ASSERT_EQ(s.Invoke("swap", {F32({4}, {5, 5, 5, 5})}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(d.copies, 2u);
  ASSERT_EQ(s.Invoke("step", {x}, &out, &d), "");
  EXPECT_EQ(Values(out[0]), (std::vector<float>{6, 7, 8, 9}));
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(ControlFlowEmissionTest, GlobalStateUpdatedInPlace) { RunGlobals(false, 0); }
// Without elision the tied update works on a clone of the state and the
// store copies it back: two copies per call, same values.
TEST(ControlFlowEmissionTest, GlobalStateWithoutElision) { RunGlobals(true, 2); }

TEST(ControlFlowEmissionTest, UnknownGlobalIsAnError) {
  const char* program = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  "util.global.store"(%0) {global = @missing} : (!stream.resource<external>) -> ()
  %1 = "stream.tensor.export"(%0) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  Session s;
  std::string error = s.Load(program);
  EXPECT_NE(error.find("names no util.global @missing"), std::string::npos) << error;
}

TEST(ControlFlowEmissionTest, GlobalWithoutSizeIsAnError) {
  std::string program = std::string(R"(
"util.global"() {sym_name = "state", type = !stream.resource<variable>} : () -> ()
)") + kExecutables + R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %g = "util.global.load"() {global = @state} : () -> !stream.resource<variable>
  %e = "stream.tensor.export"(%g) {size = 16 : i64} : (!stream.resource<variable>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  Session s;
  std::string error = s.Load(program);
  EXPECT_NE(error.find("util.global @state needs a positive byte `size`"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln::e2e
