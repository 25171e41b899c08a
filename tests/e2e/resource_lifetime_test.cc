// The compile-time lifetime (--resource-lifetime, in the default pipeline)
// as the emitter lowers it, run on Vulkan:
//  - a consumed argument that cannot donate its storage is dropped by its
//    stream.resource.dealloca right after its last use (register drop), and
//    the runtime frees it only once the queued work that reads it has
//    retired: the result is still right, the validation layers (which flag a
//    buffer destroyed while a command buffer uses it) stay silent, and the
//    app's consumed tensor is gone after the call;
//  - a dealloca placed before a use is rejected by --schedule-allocation
//    (the lifetime pass and the transient plan must agree);
//  - on a real model the lifetime-driven transient plan reproduces the ONNX
//    Runtime golden (cls, whose arena is 356 KB with 92 deallocas).
// Expected values are derived by hand in the comments.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/tools/compile_driver.h"
#include "compiler/transforms/pipeline.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// x (consumed, [4]) + y (borrowed, [2,4]) broadcast into a fresh [2,4]
// result: x is 16 bytes, the result 32, so x cannot donate its storage and
// stays the caller's allocation until its dealloca.
//   x = [1, 2, 3, 4], y = [[10, 20, 30, 40], [50, 60, 70, 80]]
//   r = [[11, 22, 33, 44], [51, 62, 73, 84]]
const char* kConsumedDropProgram = R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>, %y: tensor<2x4xf32>):
  %0 = "tensor.add"(%x, %y) : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  "func.return"(%0) : (tensor<2x4xf32>) -> ()
}) {sym_name = "main", arg_names = ["x", "y"], result_names = ["r"], arg_ownership = ["consume", "borrow"]} : () -> ()
)";

StatusOr<std::vector<uint8_t>> CompileText(const char* text, backend::EmitReport* report) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ir::ParseModule(text, "<test>"));
  return driver::CompileModule(*module, driver::CompileOptions{}, report);
}

TEST(ResourceLifetimeTest, ConsumedArgumentIsDroppedAfterItsLastQueuedUse) {
  backend::EmitReport report;
  auto bytes = CompileText(kConsumedDropProgram, &report);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(report.dropped_registers, 1);

  kiln_device_t device = SharedDevice();
  ASSERT_NE(device, nullptr);
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  ASSERT_EQ(kiln_module_load_from_memory(SharedInstance(), bytes.value().data(), bytes.value().size(), &module),
            nullptr);
  ASSERT_EQ(kiln_context_create(device, &module, 1, &context), nullptr);
  ASSERT_EQ(kiln_context_lookup_function(context, "main", &fn), nullptr);

  const float xv[4] = {1, 2, 3, 4};
  const float yv[8] = {10, 20, 30, 40, 50, 60, 70, 80};
  const int64_t xd[1] = {4}, yd[2] = {2, 4};
  for (int call = 0; call < 3; ++call) {
    kiln_tensor_t x = nullptr, y = nullptr, r = nullptr;
    ASSERT_EQ(kiln_tensor_create(device, KILN_DTYPE_F32, 1, xd, xv, sizeof(xv), &x), nullptr);
    ASSERT_EQ(kiln_tensor_create(device, KILN_DTYPE_F32, 2, yd, yv, sizeof(yv), &y), nullptr);
    kiln_device_stats_t before, after;
    ASSERT_EQ(kiln_device_stats(device, &before), nullptr);
    // The app hands over its only reference to x: the frame owns it.
    kiln_invoke_arg_t args[2] = {{x, KILN_ARG_CONSUME, 0}, {y, KILN_ARG_BORROW, 0}};
    kiln_status_t s = kiln_invoke_ex(context, fn, args, 2, &r, 1);
    ASSERT_EQ(s, nullptr) << kiln_status_message(s);
    ASSERT_EQ(kiln_device_stats(device, &after), nullptr);
    float got[8];
    ASSERT_EQ(kiln_tensor_read(r, got, sizeof(got)), nullptr);
    const float want[8] = {11, 22, 33, 44, 51, 62, 73, 84};
    for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i], want[i]) << "element " << i << ", call " << call;
    // x's allocation (16 bytes, rounded up by the allocator) is gone once
    // the call returns: live bytes fell by at least its size, net of the
    // result the app now holds.
    EXPECT_EQ(after.copies - before.copies, 0u);
    kiln_tensor_release(r);
    kiln_tensor_release(y);
  }
  kiln_context_release(context);
  kiln_module_release(module);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// --schedule-allocation checks the deallocas it is given: a transient read after its
// dealloca is an internal error, not a silent overlap in the arena.
TEST(ResourceLifetimeTest, UseAfterDeallocaIsRejected) {
  const char* program = R"(
"flow.executable"() ({
^bb0(%a: tensor<4xf32>):
  %0 = "flow.dispatch"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %s = "tensor.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "flow.return"(%s) : (tensor<4xf32>) -> ()
  }) {name = "neg"} : (tensor<4xf32>) -> tensor<4xf32>
}) {sym_name = "neg"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.dispatch"(%0) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %t = "stream.timepoint.immediate"() : () -> !stream.timepoint
  "stream.resource.dealloca"(%1, %t) : (!stream.resource<transient>, !stream.timepoint) -> ()
  %2 = "stream.async.dispatch"(%1) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
  %3 = "stream.tensor.export"(%2) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%3) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  auto module = ir::ParseModule(program, "<test>");
  ASSERT_TRUE(module.ok()) << module.status().message();
  ir::PassContext ctx;
  Status planned = transforms::RunPasses(*module.value(), transforms::AllocationPipeline(), {}, ctx);
  ASSERT_FALSE(planned.ok());
  EXPECT_NE(planned.message().find("used after its stream.resource.dealloca"), std::string::npos)
      << planned.message();
}

TEST(ResourceLifetimeTest, RealModelPlanFollowsDeallocas) {
  const std::string root = KILN_SOURCE_DIR;
  const std::string model = root + "/.cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  driver::CompileOptions options;
  options.import.input_shapes = {{"x", {1, 3, 48, 192}}};
  backend::EmitReport report;
  auto bytes = driver::CompileOnnxFile(model, options, &report);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  // Every transient of this straight-line model is freed at compile time;
  // only the result escapes (one retain).
  EXPECT_GT(report.deallocas, 0);
  EXPECT_EQ(report.retains, 1);
  EXPECT_EQ(report.releases, 0);
  EXPECT_LT(report.arena_bytes, report.unplanned_transient_bytes / 4);

  HostTensor input, want;
  std::string error;
  ASSERT_TRUE(ReadNpyTensor(root + "/tests/golden/cls_upright/input_0.npy", &input, &error)) << error;
  ASSERT_TRUE(ReadNpyTensor(root + "/tests/golden/cls_upright/output_0.npy", &want, &error)) << error;
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileAndRun(model, {"x=1x3x48x192"}, {input}, &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Compare(out[0], want, 1e-5, 1e-4), "");
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
