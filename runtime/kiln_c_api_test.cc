// The C API end to end on the vadd test module (vm/testing/test_modules.h),
// plus each error path: wrong dtype/shape/arity, NULL handles, bad sizes,
// garbage modules.
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "vm/testing/test_modules.h"

namespace {

using kiln::vm::testing::kVaddCount;

// Takes ownership of `s`; returns "OK" or "CODE: message".
using kiln_test::Str;

class CApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Str(kiln_instance_create(&instance_)), "OK");
    ASSERT_EQ(Str(kiln_device_create(instance_, "vulkan", nullptr, -1, &device_)), "OK");
    bytes_ = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
    ASSERT_EQ(Str(kiln_module_load_from_memory(instance_, bytes_.data(), bytes_.size(),
                                               &module_)),
              "OK");
    ASSERT_EQ(Str(kiln_context_create(device_, &module_, 1, &context_)), "OK");
    ASSERT_EQ(Str(kiln_context_lookup_function(context_, "main", &main_)), "OK");
  }
  void TearDown() override {
    kiln_context_release(context_);
    kiln_module_release(module_);
    kiln_device_release(device_);
    kiln_instance_release(instance_);
    EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
  }
  kiln_tensor_t Vector(const std::vector<float>& v, kiln_dtype_t dtype = KILN_DTYPE_F32) {
    int64_t dims[] = {static_cast<int64_t>(v.size())};
    kiln_tensor_t t = nullptr;
    EXPECT_EQ(Str(kiln_tensor_create(device_, dtype, 1, dims, v.data(), v.size() * 4, &t)), "OK");
    return t;
  }

  std::vector<uint8_t> bytes_;
  kiln_instance_t instance_ = nullptr;
  kiln_device_t device_ = nullptr;
  kiln_module_t module_ = nullptr;
  kiln_context_t context_ = nullptr;
  kiln_function_t main_ = nullptr;
};

TEST_F(CApiTest, EndToEnd) {
  EXPECT_STRNE(kiln_device_name(device_), "");
  EXPECT_STREQ(kiln_module_name(module_), "vadd_test");
  EXPECT_STREQ(kiln_function_name(main_), "main");
  ASSERT_EQ(kiln_function_arg_count(main_), 2u);
  ASSERT_EQ(kiln_function_result_count(main_), 3u);
  kiln_tensor_signature_t sig;
  ASSERT_EQ(Str(kiln_function_arg(main_, 1, &sig)), "OK");
  EXPECT_STREQ(sig.name, "b");
  EXPECT_EQ(sig.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(sig.rank, 1u);
  EXPECT_EQ(sig.dims[0], kVaddCount);
  EXPECT_EQ(sig.ownership, KILN_OWNERSHIP_BORROW);
  ASSERT_EQ(Str(kiln_function_result(main_, 2, &sig)), "OK");
  EXPECT_STREQ(sig.name, "e");
  EXPECT_EQ(sig.dims[0], 8);
  EXPECT_EQ(Str(kiln_function_result(main_, 3, &sig)),
            "OUT_OF_RANGE: kiln_function_result: index 3 out of range (3 results)");

  std::vector<float> a(kVaddCount), b(kVaddCount);
  for (int i = 0; i < kVaddCount; ++i) {
    a[i] = 2.0f * i;
    b[i] = -1.0f * i;
  }
  kiln_tensor_t args[2] = {Vector(a), Vector(b)};
  ASSERT_EQ(Str(kiln_device_stats_reset(device_)), "OK");
  kiln_tensor_t results[3] = {};
  ASSERT_EQ(Str(kiln_invoke(context_, main_, args, 2, results, 3)), "OK");
  kiln_device_stats_t stats;
  ASSERT_EQ(Str(kiln_device_stats(device_, &stats)), "OK");
  EXPECT_EQ(stats.dispatches, 2u);
  EXPECT_EQ(stats.submissions, 1u);
  EXPECT_EQ(stats.device_allocations, 3u);
  EXPECT_GT(stats.host_allocations_invoke, 0u);

  EXPECT_EQ(kiln_tensor_dtype(results[0]), KILN_DTYPE_F32);
  EXPECT_EQ(kiln_tensor_rank(results[0]), 1u);
  EXPECT_EQ(kiln_tensor_dims(results[0])[0], kVaddCount);
  EXPECT_EQ(kiln_tensor_byte_size(results[2]), 32u);
  std::vector<float> c(kVaddCount), d(kVaddCount), e(8);
  ASSERT_EQ(Str(kiln_tensor_read(results[0], c.data(), c.size() * 4)), "OK");
  ASSERT_EQ(Str(kiln_tensor_read(results[1], d.data(), d.size() * 4)), "OK");
  ASSERT_EQ(Str(kiln_tensor_read(results[2], e.data(), e.size() * 4)), "OK");
  for (int i = 0; i < kVaddCount; ++i) {
    EXPECT_EQ(c[i], a[i] + b[i] + (i + 0.5f)) << i;
    EXPECT_EQ(d[i], i < kVaddCount / 2 ? a[i] : 1.0f) << i;
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(e[i], c[4 + i]);
  EXPECT_EQ(Str(kiln_tensor_read(results[2], e.data(), 16)),
            "INVALID_ARGUMENT: kiln_tensor_read: tensor<8xf32> has 32 bytes, 16 requested");

  // Handles can be released in any order: results outlive the context.
  kiln_tensor_t keep = results[0];
  kiln_tensor_retain(keep);
  for (kiln_tensor_t t : results) kiln_tensor_release(t);
  for (kiln_tensor_t t : args) kiln_tensor_release(t);
  kiln_context_release(context_);
  context_ = nullptr;
  ASSERT_EQ(Str(kiln_tensor_read(keep, c.data(), c.size() * 4)), "OK");
  EXPECT_EQ(c[3], a[3] + b[3] + 3.5f);
  kiln_tensor_release(keep);
}

// kiln_tensor_write refills an input in place: the second invoke sees the
// new values and makes no device allocation for its inputs.
TEST_F(CApiTest, TensorWriteRefillsInputs) {
  std::vector<float> a(kVaddCount, 1.0f), b(kVaddCount, 2.0f);
  kiln_tensor_t args[2] = {Vector(a), Vector(b)};
  for (int i = 0; i < kVaddCount; ++i) a[i] = 3.0f * i;
  ASSERT_EQ(Str(kiln_tensor_write(args[0], a.data(), a.size() * 4)), "OK");
  ASSERT_EQ(Str(kiln_device_stats_reset(device_)), "OK");
  kiln_tensor_t results[3] = {};
  ASSERT_EQ(Str(kiln_invoke(context_, main_, args, 2, results, 3)), "OK");
  kiln_device_stats_t stats;
  ASSERT_EQ(Str(kiln_device_stats(device_, &stats)), "OK");
  EXPECT_EQ(stats.device_allocations, 3u);  // the three results, none for inputs
  std::vector<float> c(kVaddCount);
  ASSERT_EQ(Str(kiln_tensor_read(results[0], c.data(), c.size() * 4)), "OK");
  for (int i = 0; i < kVaddCount; ++i) EXPECT_EQ(c[i], 3.0f * i + 2.0f + (i + 0.5f)) << i;
  EXPECT_EQ(Str(kiln_tensor_write(args[0], a.data(), 8)),
            "INVALID_ARGUMENT: kiln_tensor_write: tensor<" + std::to_string(kVaddCount) +
                "xf32> has " + std::to_string(kVaddCount * 4) + " bytes, 8 given");
  EXPECT_EQ(Str(kiln_tensor_write(nullptr, a.data(), 8)).rfind("INVALID_ARGUMENT", 0), 0u);
  for (kiln_tensor_t t : results) kiln_tensor_release(t);
  for (kiln_tensor_t t : args) kiln_tensor_release(t);
}

TEST_F(CApiTest, ArgumentErrors) {
  std::vector<float> a(kVaddCount), short_v(kVaddCount - 1);
  kiln_tensor_t good = Vector(a);
  kiln_tensor_t wrong_shape = Vector(short_v);
  kiln_tensor_t wrong_dtype = Vector(a, KILN_DTYPE_I32);
  kiln_tensor_t results[3] = {};

  kiln_tensor_t shape_args[2] = {good, wrong_shape};
  EXPECT_EQ(Str(kiln_invoke(context_, main_, shape_args, 2, results, 3)),
            "INVALID_ARGUMENT: argument 1 'b': expected tensor<100xf32>, got tensor<99xf32>");
  kiln_tensor_t dtype_args[2] = {wrong_dtype, good};
  EXPECT_EQ(Str(kiln_invoke(context_, main_, dtype_args, 2, results, 3)),
            "INVALID_ARGUMENT: argument 0 'a': expected tensor<100xf32>, got tensor<100xi32>");
  EXPECT_EQ(Str(kiln_invoke(context_, main_, shape_args, 1, results, 3)),
            "INVALID_ARGUMENT: function 'main' expects 2 arguments, got 1");
  kiln_tensor_t good_args[2] = {good, good};
  EXPECT_EQ(Str(kiln_invoke(context_, main_, good_args, 2, results, 2)),
            "INVALID_ARGUMENT: function 'main' returns 3 results, 2 result slots given");
  kiln_tensor_t null_args[2] = {good, nullptr};
  EXPECT_EQ(Str(kiln_invoke(context_, main_, null_args, 2, results, 3)),
            "INVALID_ARGUMENT: kiln_invoke: args[1] is NULL");
  EXPECT_EQ(results[0], nullptr);  // untouched on failure

  kiln_function_t missing = nullptr;
  EXPECT_EQ(Str(kiln_context_lookup_function(context_, "nope", &missing)),
            "NOT_FOUND: no exported function 'nope' (exported: main, i32_only)");

  kiln_tensor_t t = nullptr;
  int64_t dims[] = {2, 2};
  float four[4] = {1, 2, 3, 4};
  EXPECT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, dims, four, 12, &t)),
            "INVALID_ARGUMENT: kiln_tensor_create: tensor<2x2xf32> needs 16 bytes, 12 given");
  EXPECT_EQ(Str(kiln_tensor_create(device_, static_cast<kiln_dtype_t>(42), 2, dims, four, 16, &t)),
            "INVALID_ARGUMENT: kiln_tensor_create: invalid dtype 42");
  int64_t neg[] = {2, -2};
  EXPECT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, neg, nullptr, 0, &t)),
            "INVALID_ARGUMENT: kiln_tensor_create: dim 1 is negative (-2)");
  ASSERT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, dims, nullptr, 0, &t)), "OK");
  float back[4] = {9, 9, 9, 9};
  ASSERT_EQ(Str(kiln_tensor_read(t, back, 16)), "OK");
  EXPECT_EQ(back[0], 0.0f);  // zero-filled
  kiln_tensor_release(t);

  kiln_tensor_release(good);
  kiln_tensor_release(wrong_shape);
  kiln_tensor_release(wrong_dtype);
}

TEST_F(CApiTest, NullHandlesAndGarbage) {
  EXPECT_EQ(Str(kiln_instance_create(nullptr)),
            "INVALID_ARGUMENT: kiln_instance_create: out_instance is NULL");
  kiln_device_t dev = nullptr;
  EXPECT_EQ(Str(kiln_device_create(nullptr, "vulkan", nullptr, -1, &dev)),
            "INVALID_ARGUMENT: kiln_device_create: instance is NULL");
  kiln_status_t s = kiln_device_create(instance_, "nope", nullptr, -1, &dev);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_NOT_FOUND);
  kiln_status_free(s);
  s = kiln_device_create(instance_, "vulkan", "no-such-gpu", -1, &dev);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_NOT_FOUND);
  kiln_status_free(s);
  EXPECT_EQ(Str(kiln_invoke(nullptr, main_, nullptr, 0, nullptr, 0)),
            "INVALID_ARGUMENT: kiln_invoke: context is NULL");
  EXPECT_EQ(Str(kiln_invoke(context_, nullptr, nullptr, 0, nullptr, 0)),
            "INVALID_ARGUMENT: kiln_invoke: function is NULL");
  EXPECT_EQ(Str(kiln_tensor_read(nullptr, nullptr, 0)),
            "INVALID_ARGUMENT: kiln_tensor_read: tensor is NULL");
  EXPECT_EQ(Str(kiln_device_stats(nullptr, nullptr)),
            "INVALID_ARGUMENT: kiln_device_stats: device is NULL");
  EXPECT_EQ(Str(kiln_context_create(device_, nullptr, 1, nullptr)),
            "INVALID_ARGUMENT: kiln_context_create: modules is NULL");
  EXPECT_EQ(kiln_tensor_rank(nullptr), 0u);
  EXPECT_EQ(kiln_tensor_dims(nullptr), nullptr);
  EXPECT_EQ(kiln_status_code(nullptr), KILN_STATUS_OK);
  EXPECT_STREQ(kiln_status_message(nullptr), "");
  kiln_tensor_release(nullptr);
  kiln_context_release(nullptr);
  kiln_status_free(nullptr);

  kiln_module_t m = nullptr;
  std::vector<uint8_t> garbage(bytes_.begin(), bytes_.begin() + bytes_.size() / 2);
  EXPECT_EQ(Str(kiln_module_load_from_memory(instance_, garbage.data(), garbage.size(), &m)),
            "DATA_LOSS: truncated or corrupt module: size prefix says " +
                std::to_string(bytes_.size()) + " bytes, buffer has " +
                std::to_string(garbage.size()));
  s = kiln_module_load_from_file(instance_, "/nonexistent.kiln", &m);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_NOT_FOUND);
  kiln_status_free(s);
  EXPECT_EQ(m, nullptr);

  // Pure-i32 function through the C API.
  kiln_function_t i32_only = nullptr;
  ASSERT_EQ(Str(kiln_context_lookup_function(context_, "i32_only", &i32_only)), "OK");
  EXPECT_EQ(Str(kiln_invoke(context_, i32_only, nullptr, 0, nullptr, 0)), "OK");
}

TEST_F(CApiTest, LoadFromFile) {
  char path[] = "/tmp/kiln_c_api_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes_.data(), bytes_.size()), static_cast<ssize_t>(bytes_.size()));
  close(fd);
  kiln_module_t m = nullptr;
  ASSERT_EQ(Str(kiln_module_load_from_file(instance_, path, &m)), "OK");
  unlink(path);  // the mapping stays valid
  kiln_context_t ctx = nullptr;
  ASSERT_EQ(Str(kiln_context_create(device_, &m, 1, &ctx)), "OK");
  kiln_module_release(m);  // the context retains it
  kiln_function_t fn = nullptr;
  ASSERT_EQ(Str(kiln_context_lookup_function(ctx, "i32_only", &fn)), "OK");
  EXPECT_EQ(Str(kiln_invoke(ctx, fn, nullptr, 0, nullptr, 0)), "OK");
  kiln_context_release(ctx);
}

}  // namespace
