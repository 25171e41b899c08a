// Multi-module programs from the compiler: a driver module written in .kir
// declares another module's function (func.func {import = true}) and calls
// it (func.call); kiln-compile's pipeline emits CALL_IMPORT of a typed module
// import; both modules are linked in one context and run on Vulkan.
// Expected values are derived by hand in the comments.
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// sq.main(x) = x * x
const char* kSquare = R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "tensor.mul"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%0) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_names = ["x"], result_names = ["y"]} : () -> ()
)";

// The same function for tensor<8xf32>: a driver typed for tensor<4xf32>
// must not link against it.
const char* kSquare8 = R"(
"func.func"() ({
^bb0(%x: tensor<8xf32>):
  %0 = "tensor.mul"(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  "func.return"(%0) : (tensor<8xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

// driver.main(state consume, x) = (y, state + y) with y = sq(sq(x)) = x^4:
// a call result passed straight to the next call, then read by a dispatch.
//   x = [1, 2, 3, 4], state = [10, 20, 30, 40]
//   y = [1, 16, 81, 256], state' = [11, 36, 111, 296]
//   fed back: state'' = [12, 52, 192, 552]
const char* kDriver = R"(
"func.func"() ({
}) {sym_name = "sq.main", import = true, arg_types = [tensor<4xf32>], result_types = [tensor<4xf32>], arg_ownership = ["borrow"]} : () -> ()
"func.func"() ({
^bb0(%state: tensor<4xf32>, %x: tensor<4xf32>):
  %s = "func.call"(%x) {callee = @sq.main} : (tensor<4xf32>) -> tensor<4xf32> loc("first")
  %y = "func.call"(%s) {callee = @sq.main} : (tensor<4xf32>) -> tensor<4xf32> loc("second")
  %n = "tensor.add"(%state, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%y, %n) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {sym_name = "main", arg_names = ["state", "x"], result_names = ["y", "state_next"], arg_ownership = ["consume", "borrow"]} : () -> ()
)";

// acc.main(x consume) = x + 1, written in place into x's storage (a tied
// dispatch on a consumed import: take_or_clone, so in place when the frame
// owns x, else on a counted copy).
const char* kAccumulate = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = true, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2 = "stream.async.dispatch"(%0, %1) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<external>
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume"]} : () -> ()
)";

// mover.main(s consume) = acc.main(s), s passed to acc's `consume` parameter:
// the driver's own consumed argument is moved on (no view of its own).
const char* kMover = R"(
"func.func"() ({
}) {sym_name = "acc.main", import = true, arg_types = [tensor<4xf32>], result_types = [tensor<4xf32>], arg_ownership = ["consume"]} : () -> ()
"func.func"() ({
^bb0(%s: tensor<4xf32>):
  %r = "func.call"(%s) {callee = @acc.main} : (tensor<4xf32>) -> tensor<4xf32> loc("move")
  "func.return"(%r) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume"]} : () -> ()
)";

// id.main(x borrow) = x: a callee that returns its borrowed argument
// unchanged. The result must still be fresh storage (the callee's return
// copies it): the caller owns call results and may write them in place.
const char* kIdentity = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.tensor.export"(%0) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["borrow"]} : () -> ()
)";

// user.main(x) = (t, r + 1) with t = x + 1 and r = id.main(t): the caller
// passes its own transient t (borrowed) and updates the call result r in
// place (a tied dispatch: r is the caller's to write, no copy-on-write).
// Were r an alias of t, that write would change t too.
//   x = [1, 2, 3, 4] -> t = [2, 3, 4, 5], r + 1 = [3, 4, 5, 6]
const char* kIdentityUser = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
}) {sym_name = "id.main", import = true, arg_types = [tensor<4xf32>], result_types = [tensor<4xf32>], arg_ownership = ["borrow"]} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %one = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %t = "stream.async.dispatch"(%x, %one) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<external>
  %r = "func.call"(%t) {callee = @id.main, sizes = [16]} : (!stream.resource<external>) -> !stream.resource<external>
  %u = "stream.async.dispatch"(%r, %one) {entry = @add, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<external>
  %e0 = "stream.tensor.export"(%t) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  %e1 = "stream.tensor.export"(%u) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%e0, %e1) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["borrow"]} : () -> ()
)";

TEST(MultiModuleTest, DriverCallsAnotherModuleAndFeedsStateBack) {
  ASSERT_NE(SharedDevice(), nullptr);
  std::vector<uint8_t> sq = CompileKirModule(kSquare, "sq"), drv = CompileKirModule(kDriver, "driver");
  ASSERT_FALSE(sq.empty());
  ASSERT_FALSE(drv.empty());
  kiln_module_t modules[2] = {LoadModule(sq), LoadModule(drv)};
  kiln_context_t ctx = nullptr;
  kiln_status_t s = kiln_context_create(SharedDevice(), modules, 2, &ctx);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_function_t fn = nullptr;
  s = kiln_context_lookup_function(ctx, "driver.main", &fn);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);

  kiln_tensor_t state = DeviceF32({10, 20, 30, 40}), x = DeviceF32({1, 2, 3, 4});
  const std::vector<std::vector<float>> want_state = {{11, 36, 111, 296}, {12, 52, 192, 552}};
  for (int call = 0; call < 2; ++call) {
    kiln_invoke_arg_t args[2] = {{state, KILN_ARG_CONSUME, 0}, {x, KILN_ARG_BORROW, 0}};
    state = nullptr;
    kiln_tensor_t out[2] = {nullptr, nullptr};
    ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
    s = kiln_invoke_ex(ctx, fn, args, 2, out, 2);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    kiln_device_stats_t st;
    ASSERT_EQ(kiln_device_stats(SharedDevice(), &st), nullptr);
    EXPECT_EQ(st.copies, 0u) << "call " << call;  // views pass between the modules
    EXPECT_EQ(st.dispatches, 3u) << "call " << call;  // sq twice, the add once
    EXPECT_EQ(ReadF32(out[0]), (std::vector<float>{1, 16, 81, 256})) << "call " << call;
    EXPECT_EQ(ReadF32(out[1]), want_state[call]) << "call " << call;
    kiln_tensor_release(out[0]);
    state = out[1];
  }
  kiln_tensor_release(state);
  kiln_tensor_release(x);
  kiln_context_release(ctx);
  kiln_module_release(modules[0]);
  kiln_module_release(modules[1]);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Ownership passes through two frames: the app consumes s into mover.main,
// which moves it into acc.main's `consume` parameter; acc owns the storage
// and adds 1 in place: no copy, no allocation. Borrowed by the app instead,
// the storage is shared, so acc works on one counted copy and the app's
// tensor keeps its values.
//   s = [1, 2, 3, 4] -> [2, 3, 4, 5]
TEST(MultiModuleTest, ConsumedArgumentIsMovedIntoTheCallee) {
  ASSERT_NE(SharedDevice(), nullptr);
  std::vector<uint8_t> acc = CompileKirModule(kAccumulate, "acc"), mover = CompileKirModule(kMover, "mover");
  ASSERT_FALSE(acc.empty());
  ASSERT_FALSE(mover.empty());
  kiln_module_t modules[2] = {LoadModule(acc), LoadModule(mover)};
  kiln_context_t ctx = nullptr;
  kiln_status_t s = kiln_context_create(SharedDevice(), modules, 2, &ctx);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_function_t fn = nullptr;
  s = kiln_context_lookup_function(ctx, "mover.main", &fn);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  for (bool consume : {true, false}) {
    kiln_tensor_t in = DeviceF32({1, 2, 3, 4});
    kiln_invoke_arg_t arg = {in, consume ? KILN_ARG_CONSUME : KILN_ARG_BORROW, 0};
    kiln_tensor_t out = nullptr;
    ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
    s = kiln_invoke_ex(ctx, fn, &arg, 1, &out, 1);
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
  kiln_context_release(ctx);
  kiln_module_release(modules[0]);
  kiln_module_release(modules[1]);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A callee returning its borrowed argument hands back a copy: the caller's
// in-place update of the call result leaves its own operand t intact. The
// one copy is the callee's return.
TEST(MultiModuleTest, ReturnedBorrowedArgumentIsFreshStorage) {
  ASSERT_NE(SharedDevice(), nullptr);
  std::vector<uint8_t> id = CompileKirModule(kIdentity, "id"), user = CompileKirModule(kIdentityUser, "user");
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(user.empty());
  kiln_module_t modules[2] = {LoadModule(id), LoadModule(user)};
  kiln_context_t ctx = nullptr;
  kiln_status_t s = kiln_context_create(SharedDevice(), modules, 2, &ctx);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_function_t fn = nullptr;
  s = kiln_context_lookup_function(ctx, "user.main", &fn);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_tensor_t x = DeviceF32({1, 2, 3, 4});
  for (int call = 0; call < 2; ++call) {
    kiln_invoke_arg_t arg = {x, KILN_ARG_BORROW, 0};
    kiln_tensor_t out[2] = {nullptr, nullptr};
    ASSERT_EQ(kiln_device_stats_reset(SharedDevice()), nullptr);
    s = kiln_invoke_ex(ctx, fn, &arg, 1, out, 2);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    kiln_device_stats_t st;
    ASSERT_EQ(kiln_device_stats(SharedDevice(), &st), nullptr);
    EXPECT_EQ(ReadF32(out[0]), (std::vector<float>{2, 3, 4, 5})) << "call " << call;
    EXPECT_EQ(ReadF32(out[1]), (std::vector<float>{3, 4, 5, 6})) << "call " << call;
    EXPECT_EQ(st.copies, 1u) << "call " << call;
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
  }
  EXPECT_EQ(ReadF32(x), (std::vector<float>{1, 2, 3, 4}));
  kiln_tensor_release(x);
  kiln_context_release(ctx);
  kiln_module_release(modules[0]);
  kiln_module_release(modules[1]);
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(MultiModuleTest, LinkChecksTheTypedImportSignature) {
  ASSERT_NE(SharedDevice(), nullptr);
  std::vector<uint8_t> sq8 = CompileKirModule(kSquare8, "sq"), drv = CompileKirModule(kDriver, "driver");
  ASSERT_FALSE(sq8.empty());
  ASSERT_FALSE(drv.empty());
  kiln_module_t modules[2] = {LoadModule(sq8), LoadModule(drv)};
  kiln_context_t ctx = nullptr;
  kiln_status_t s = kiln_context_create(SharedDevice(), modules, 2, &ctx);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_NE(std::string(kiln_status_message(s)).find("sq.main"), std::string::npos) << kiln_status_message(s);
  kiln_status_free(s);
  // Dependency order matters: the driver before its callee does not link.
  kiln_module_t reversed[2] = {modules[1], modules[0]};
  s = kiln_context_create(SharedDevice(), reversed, 2, &ctx);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_NOT_FOUND) << kiln_status_message(s);
  kiln_status_free(s);
  kiln_module_release(modules[0]);
  kiln_module_release(modules[1]);
}

}  // namespace
}  // namespace kiln::e2e
