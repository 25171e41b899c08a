// A compiled real model (openWakeWord's alexa head) writing its result
// straight into caller-supplied output storage: one row of a larger batch
// buffer, made with kiln_tensor_create_view. The emitter asks the runtime for
// the storage (hal.buffer_view.output_storage), so no copy is made, and the
// bytes land in the caller's row and nowhere else. Reference: ONNX Runtime
// (tests/golden/alexa_v0.1).
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/tools/compile_driver.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

TEST(OutputStorageTest, ResultLandsInCallerRowWithoutCopy) {
  const std::string root = KILN_SOURCE_DIR;
  const std::string model = root + "/.cache/models/alexa_v0.1.onnx";
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  auto bytes = driver::CompileOnnxFile(model, driver::CompileOptions{});
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  HostTensor input, want;
  std::string error;
  ASSERT_TRUE(ReadNpyTensor(root + "/tests/golden/alexa_v0.1/input_0.npy", &input, &error)) << error;
  ASSERT_TRUE(ReadNpyTensor(root + "/tests/golden/alexa_v0.1/output_0.npy", &want, &error)) << error;

  kiln_device_t device = SharedDevice();
  ASSERT_NE(device, nullptr);
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  ASSERT_EQ(kiln_module_load_from_memory(SharedInstance(), bytes.value().data(), bytes.value().size(), &module), nullptr);
  ASSERT_EQ(kiln_context_create(device, &module, 1, &context), nullptr);
  ASSERT_EQ(kiln_context_lookup_function(context, "main", &fn), nullptr);

  // A [3, 16] f32 batch buffer (64-byte rows); the result [1, 1] goes to row 1.
  std::vector<float> zeros(48, 0.0f);
  const int64_t batch_dims[2] = {3, 16}, row_dims[2] = {1, 1};
  kiln_tensor_t batch = nullptr, row = nullptr, in = nullptr;
  ASSERT_EQ(kiln_tensor_create(device, KILN_DTYPE_F32, 2, batch_dims, zeros.data(), zeros.size() * 4, &batch), nullptr);
  ASSERT_EQ(kiln_tensor_create_view(batch, 64, KILN_DTYPE_F32, 2, row_dims, &row), nullptr);
  ASSERT_EQ(kiln_tensor_create(device, input.dtype, input.shape.size(), input.shape.data(), input.data.data(),
                               input.data.size(), &in),
            nullptr);

  kiln_device_stats_t before, after;
  ASSERT_EQ(kiln_device_stats(device, &before), nullptr);
  kiln_invoke_arg_t args[2] = {{in, KILN_ARG_BORROW, 0}, {row, KILN_ARG_OUTPUT_STORAGE, 0}};
  kiln_tensor_t result = nullptr;
  kiln_status_t s = kiln_invoke_ex(context, fn, args, 2, &result, 1);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  ASSERT_EQ(kiln_device_stats(device, &after), nullptr);
  EXPECT_EQ(after.copies - before.copies, 0u) << "the result was copied instead of written in place";

  std::vector<float> all(48);
  ASSERT_EQ(kiln_tensor_read(batch, all.data(), all.size() * 4), nullptr);
  for (int i = 0; i < 48; ++i) {
    if (i == 16) EXPECT_NEAR(all[i], want.At(0), 1e-4);
    else EXPECT_EQ(all[i], 0.0f) << "byte outside the caller's row written at element " << i;
  }
  kiln_tensor_release(result);
  kiln_tensor_release(row);
  kiln_tensor_release(batch);
  kiln_tensor_release(in);
  kiln_context_release(context);
  kiln_module_release(module);
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
