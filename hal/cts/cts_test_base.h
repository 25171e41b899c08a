// Shared fixture and helpers of the HAL conformance suite (CTS).
//
// Every suite is parameterized by driver name and instantiated with
// KILN_CTS_INSTANTIATE(Suite), which runs it once per driver in
// hal::AvailableDrivers() ({"vulkan"} today). A new driver passes the suite by
// registering in hal/driver.cc; no test changes.
//
// Each test gets a fresh device (SetUp) and, in TearDown, releases it and
// asserts that the validation layer reported nothing
// (hal::ValidationMessageCount() == 0; ctest runs each test in its own process
// with validation and synchronization validation forced on).
#ifndef KILN_HAL_CTS_CTS_TEST_BASE_H_
#define KILN_HAL_CTS_CTS_TEST_BASE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/cts/scale_spirv.h"
#include "hal/cts/texels_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"

namespace kiln::hal::cts {

inline Status ToStatus(const Status& status) { return status; }
template <typename T>
Status ToStatus(const StatusOr<T>& status_or) {
  return status_or.status();
}

}  // namespace kiln::hal::cts

#define KILN_CTS_CONCAT_INNER(a, b) a##b
#define KILN_CTS_CONCAT(a, b) KILN_CTS_CONCAT_INNER(a, b)

#define KILN_ASSERT_OK(expr)                                              \
  do {                                                                    \
    ::kiln::Status _cts_status = ::kiln::hal::cts::ToStatus(expr);        \
    ASSERT_TRUE(_cts_status.ok()) << #expr << ": " << _cts_status.ToString(); \
  } while (0)

#define KILN_EXPECT_OK(expr)                                              \
  do {                                                                    \
    ::kiln::Status _cts_status = ::kiln::hal::cts::ToStatus(expr);        \
    EXPECT_TRUE(_cts_status.ok()) << #expr << ": " << _cts_status.ToString(); \
  } while (0)

// Expects `expr` to fail with `code` (a StatusCode enumerator name).
#define KILN_EXPECT_CODE(expr, code_name)                                 \
  do {                                                                    \
    ::kiln::Status _cts_status = ::kiln::hal::cts::ToStatus(expr);        \
    EXPECT_EQ(_cts_status.code(), ::kiln::StatusCode::code_name)          \
        << #expr << " returned " << _cts_status.ToString();               \
    EXPECT_FALSE(_cts_status.message().empty()) << #expr << ": empty message"; \
  } while (0)

#define KILN_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  KILN_ASSERT_OK_AND_ASSIGN_IMPL(KILN_CTS_CONCAT(_cts_sor_, __LINE__), lhs, expr)
#define KILN_ASSERT_OK_AND_ASSIGN_IMPL(tmp, lhs, expr)               \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << ": " << tmp.status().ToString(); \
  lhs = std::move(tmp).value()

// Runs Suite once per compiled-in driver; test names end in /<driver>.
#define KILN_CTS_INSTANTIATE(Suite)                                               \
  INSTANTIATE_TEST_SUITE_P(Drivers, Suite,                                        \
                           ::testing::ValuesIn(::kiln::hal::AvailableDrivers()),  \
                           [](const ::testing::TestParamInfo<std::string>& info) { \
                             return info.param;                                   \
                           })

namespace kiln::hal::cts {

constexpr uint64_t kWaitTimeoutNs = 30ull * 1000 * 1000 * 1000;  // 30 s

class CtsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto device = CreateDevice(GetParam(), DeviceOptions{});
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
  }

  void TearDown() override {
    device_.reset();
    EXPECT_EQ(ValidationMessageCount(), 0u)
        << "the validation layer reported problems (\"kiln: vulkan validation:\" on stderr)";
  }

  Device* device() { return device_.get(); }

  // Submits `command_buffer` (already ended) and blocks until it completes.
  Status SubmitAndWait(CommandBuffer* command_buffer) {
    KILN_ASSIGN_OR_RETURN(Ref<Semaphore> done, device_->CreateSemaphore(0));
    SemaphorePoint signal{done.get(), 1};
    KILN_RETURN_IF_ERROR(device_->QueueExecute(command_buffer, nullptr, 0, &signal, 1));
    return done->Wait(1, kWaitTimeoutNs);
  }

  StatusOr<Ref<Executable>> CreateVadd() {
    EntryPointInfo entry;
    entry.name = "main";
    entry.binding_count = 3;
    entry.push_constant_bytes = 4;
    entry.workgroup_size[0] = 64;
    return device_->CreateExecutable(kVaddSpirv, kVaddSpirvWordCount, {entry});
  }

  // shaders/texels.comp; `kinds` overrides its declared binding kinds
  // (binding 0 a texel buffer, binding 1 a storage buffer).
  StatusOr<Ref<Executable>> CreateTexels(HostVector<BindingKind> kinds = {
                                             BindingKind::kUniformTexelBuffer,
                                             BindingKind::kStorageBuffer}) {
    EntryPointInfo entry;
    entry.name = "main";
    entry.binding_count = 2;
    entry.push_constant_bytes = 4;
    entry.workgroup_size[0] = 64;
    entry.binding_readonly = {1, 0};
    entry.binding_kinds = std::move(kinds);
    return device_->CreateExecutable(kTexelsSpirv, kTexelsSpirvWordCount, {entry});
  }

  StatusOr<Ref<Executable>> CreateScale() {
    EntryPointInfo entry;
    entry.name = "main";
    entry.binding_count = 2;
    entry.push_constant_bytes = 8;
    entry.workgroup_size[0] = 64;
    return device_->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {entry});
  }

  static Status WriteFloats(Buffer* buffer, uint64_t offset, const std::vector<float>& values) {
    return buffer->Write(offset, values.data(), values.size() * sizeof(float));
  }

  static StatusOr<std::vector<float>> ReadFloats(Buffer* buffer, uint64_t offset, size_t count) {
    std::vector<float> values(count);
    KILN_RETURN_IF_ERROR(buffer->Read(offset, values.data(), count * sizeof(float)));
    return values;
  }

  static StatusOr<std::vector<uint8_t>> ReadBytes(Buffer* buffer, uint64_t offset,
                                                  size_t count) {
    std::vector<uint8_t> bytes(count);
    KILN_RETURN_IF_ERROR(buffer->Read(offset, bytes.data(), count));
    return bytes;
  }

  Ref<Device> device_;
};

}  // namespace kiln::hal::cts

#endif  // KILN_HAL_CTS_CTS_TEST_BASE_H_
