// Calls within one module: a func.call of a function defined in the same
// module is a VM CALL with the calling convention of a call into another
// module (vm/README.md): borrowed arguments are shared views, a `consume`
// argument is moved and claimed by the callee, results are fresh storage.
// Expected values are derived by hand in the comments.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// main(state consume, x) = (y, state + y) with y = sq(sq(x)) = x^4, sq a
// function of the same module called twice (the first call's result is the
// second call's operand).
//   x = [1, 2, 3, 4], state = [10, 20, 30, 40]
//   y = [1, 16, 81, 256], state' = [11, 36, 111, 296]
//   fed back: state'' = [12, 52, 192, 552]
const char* kSquareTwice = R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "tensor.mul"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%0) : (tensor<4xf32>) -> ()
}) {sym_name = "sq", arg_names = ["x"], result_names = ["y"]} : () -> ()
"func.func"() ({
^bb0(%state: tensor<4xf32>, %x: tensor<4xf32>):
  %s = "func.call"(%x) {callee = @sq} : (tensor<4xf32>) -> tensor<4xf32> loc("first")
  %y = "func.call"(%s) {callee = @sq} : (tensor<4xf32>) -> tensor<4xf32> loc("second")
  %n = "tensor.add"(%state, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%y, %n) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {sym_name = "main", arg_names = ["state", "x"], result_names = ["y", "state_next"], arg_ownership = ["consume", "borrow"]} : () -> ()
)";

// acc(x consume) = x + 1 written in place into x's storage; main(s consume)
// = acc(s), its own consumed argument moved on whole: no copy, no
// allocation. Borrowed by the app instead, acc works on one counted copy.
// Inside an scf.if the call runs only on the taken branch:
// cond(s consume, p) = p != 0 ? acc(s) : s.
//   s = [1, 2, 3, 4] -> [2, 3, 4, 5]
const char* kAccumulate = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2 = "stream.async.dispatch"(%0, %1) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<external>
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {sym_name = "acc", arg_ownership = ["consume"]} : () -> ()
"func.func"() ({
^bb0(%s: tensor<4xf32>):
  %r = "func.call"(%s) {callee = @acc} : (tensor<4xf32>) -> tensor<4xf32> loc("move")
  "func.return"(%r) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume"]} : () -> ()
)";

// The callee declares its argument borrowed; `VISIBILITY` is replaced by
// nothing (acc is exported: any caller may pass a buffer it keeps, so acc
// updates a copy) or by `sym_visibility = "private", ` (module-internal:
// --infer-argument-ownership sees that both callers pass their last use
// and makes the argument consumed). main(s consume) = acc(s): s moved whole.
// fresh(x) = acc(x + x): a transient handed over.
//   s = [1, 2, 3, 4] -> [2, 3, 4, 5]; x = [1, 2, 3, 4] -> [3, 5, 7, 9]
const char* kInferredAccumulate = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2 = "stream.async.dispatch"(%0, %1) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<external>
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {VISIBILITYsym_name = "acc", arg_ownership = ["borrow"]} : () -> ()
"func.func"() ({
^bb0(%s: tensor<4xf32>):
  %r = "func.call"(%s) {callee = @acc} : (tensor<4xf32>) -> tensor<4xf32> loc("move")
  "func.return"(%r) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume"]} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.dispatch"(%0, %0) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<transient>
  %2 = "func.call"(%1) {callee = @acc, sizes = [16]} : (!stream.resource<transient>) -> !stream.resource<external> loc("fresh")
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {sym_name = "fresh", arg_ownership = ["borrow"]} : () -> ()
)";

struct Loaded {
  std::vector<uint8_t> bytes;
  kiln_module_t module = nullptr;
  kiln_context_t ctx = nullptr;
  kiln_function_t fn = nullptr;
  ~Loaded() {
    if (ctx) kiln_context_release(ctx);
    if (module) kiln_module_release(module);
  }
};

// Compiles `kir` as module `name` and looks up name.<function>.
void Load(const char* kir, const char* name, Loaded* l, const char* function = "main") {
  l->bytes = CompileKirModule(kir, name);
  ASSERT_FALSE(l->bytes.empty());
  l->module = LoadModule(l->bytes);
  ASSERT_NE(l->module, nullptr);
  kiln_status_t s = kiln_context_create(SharedDevice(), &l->module, 1, &l->ctx);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  s = kiln_context_lookup_function(l->ctx, (std::string(name) + "." + function).c_str(), &l->fn);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
}

TEST(LocalCallTest, FunctionOfTheSameModuleCalledTwice) {
  ASSERT_NE(SharedDevice(), nullptr);
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(Load(kSquareTwice, "sq2", &l));
  kiln_tensor_t state = DeviceF32({10, 20, 30, 40}), x = DeviceF32({1, 2, 3, 4});
  const std::vector<std::vector<float>> want_state = {{11, 36, 111, 296}, {12, 52, 192, 552}};
  for (int call = 0; call < 2; ++call) {
    kiln_invoke_arg_t args[2] = {{state, KILN_ARG_CONSUME, 0}, {x, KILN_ARG_BORROW, 0}};
    state = nullptr;
    kiln_tensor_t out[2] = {nullptr, nullptr};
    ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
    kiln_status_t s = kiln_invoke_ex(l.ctx, l.fn, args, 2, out, 2);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    kiln_device_stats_t st;
    ASSERT_EQ(kiln_device_stats(SharedDevice(), &st), nullptr);
    EXPECT_EQ(st.copies, 0u) << "call " << call;
    EXPECT_EQ(st.dispatches, 3u) << "call " << call;  // sq twice, the add once
    EXPECT_EQ(st.host_waits, 1u) << "call " << call;  // the synchronous end only
    EXPECT_EQ(ReadF32(out[0]), (std::vector<float>{1, 16, 81, 256})) << "call " << call;
    EXPECT_EQ(ReadF32(out[1]), want_state[call]) << "call " << call;
    kiln_tensor_release(out[0]);
    state = out[1];
  }
  EXPECT_EQ(ReadF32(x), (std::vector<float>{1, 2, 3, 4}));  // borrowed: unchanged
  kiln_tensor_release(state);
  kiln_tensor_release(x);
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(LocalCallTest, ConsumedArgumentIsMovedIntoTheCallee) {
  ASSERT_NE(SharedDevice(), nullptr);
  Loaded l;
  ASSERT_NO_FATAL_FAILURE(Load(kAccumulate, "acc", &l));
  for (bool consume : {true, false}) {
    kiln_tensor_t in = DeviceF32({1, 2, 3, 4});
    kiln_invoke_arg_t arg = {in, consume ? KILN_ARG_CONSUME : KILN_ARG_BORROW, 0};
    kiln_tensor_t out = nullptr;
    ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
    kiln_status_t s = kiln_invoke_ex(l.ctx, l.fn, &arg, 1, &out, 1);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    kiln_device_stats_t st;
    ASSERT_EQ(kiln_device_stats(SharedDevice(), &st), nullptr);
    EXPECT_EQ(ReadF32(out), (std::vector<float>{2, 3, 4, 5})) << "consume " << consume;
    EXPECT_EQ(st.copies, consume ? 0u : 1u) << "consume " << consume;
    EXPECT_EQ(st.device_allocations, consume ? 0u : 1u) << "consume " << consume;
    if (!consume) {
      EXPECT_EQ(ReadF32(in), (std::vector<float>{1, 2, 3, 4}));  // the borrowed tensor is untouched
      kiln_tensor_release(in);
    }
    kiln_tensor_release(out);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// By-value arguments inferred from callers (issue 15, IREE's
// callee_with_consume_import and argMoveCallee): the same program with acc
// exported and with acc module-internal. Exported, acc keeps its borrowed
// argument and updates a copy (1 copy per call). Internal, the argument is
// inferred consumed: main's own consumed argument is moved through both
// frames and updated in place (0 copies); a transient handed over by
// `fresh` is a view of the caller's storage at run time, so acc takes it
// with one counted copy (the same count as before: the copy moves from the
// IR into take_or_clone).
TEST(LocalCallTest, InferredConsumedArgumentOfAnInternalCallee) {
  ASSERT_NE(SharedDevice(), nullptr);
  for (bool internal : {false, true}) {
    std::string kir = kInferredAccumulate;
    kir.replace(kir.find("VISIBILITY"), 10, internal ? "sym_visibility = \"private\", " : "");
    for (const char* function : {"main", "fresh"}) {
      SCOPED_TRACE(std::string(internal ? "internal acc, " : "exported acc, ") + function);
      Loaded l;
      ASSERT_NO_FATAL_FAILURE(Load(kir.c_str(), "inf", &l, function));
      bool main = std::string(function) == "main";
      kiln_tensor_t in = DeviceF32({1, 2, 3, 4});
      kiln_invoke_arg_t arg = {in, main ? KILN_ARG_CONSUME : KILN_ARG_BORROW, 0};
      kiln_tensor_t out = nullptr;
      ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
      kiln_status_t s = kiln_invoke_ex(l.ctx, l.fn, &arg, 1, &out, 1);
      ASSERT_EQ(s, nullptr) << kiln_status_message(s);
      kiln_device_stats_t st;
      ASSERT_EQ(kiln_device_stats(SharedDevice(), &st), nullptr);
      EXPECT_EQ(ReadF32(out), main ? (std::vector<float>{2, 3, 4, 5}) : (std::vector<float>{3, 5, 7, 9}));
      EXPECT_EQ(st.copies, internal && main ? 0u : 1u);
      if (!main) {
        EXPECT_EQ(ReadF32(in), (std::vector<float>{1, 2, 3, 4}));  // borrowed: untouched
        kiln_tensor_release(in);
      }
      kiln_tensor_release(out);
    }
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
