// Vulkan-specific tests (the driver-agnostic ones live in hal/cts): that
// validation is really on under ctest and catches a missing barrier, the
// descriptor-pool fallback used when VK_KHR_push_descriptor is unavailable,
// the missing-layer error and the VkResult mapping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "hal/vulkan/vulkan_driver.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

bool HasFeature(const DeviceInfo& info, const char* feature) {
  return std::find(info.features.begin(), info.features.end(), feature) != info.features.end();
}

struct ScalePush {
  float scale;
  uint32_t count;
};

Ref<Executable> MakeScale(Device* device) {
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 2;
  entry.push_constant_bytes = 8;
  auto executable = device->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {entry});
  EXPECT_TRUE(executable.ok()) << executable.status().ToString();
  return executable.ok() ? std::move(executable).value() : Ref<Executable>();
}

Status SubmitAndWait(Device* device, CommandBuffer* command_buffer) {
  KILN_ASSIGN_OR_RETURN(Ref<Semaphore> done, device->CreateSemaphore(0));
  SemaphorePoint signal{done.get(), 1};
  KILN_RETURN_IF_ERROR(device->QueueExecute(command_buffer, nullptr, 0, &signal, 1));
  return done->Wait(1, UINT64_MAX);
}

class VulkanDriverTest : public ::testing::Test {
 protected:
  void TearDown() override {
    EXPECT_EQ(ValidationMessageCount(), 0u) << "validation messages on stderr";
  }
};

TEST_F(VulkanDriverTest, ValidationIsOnWhenRequestedByEnvironment) {
  auto device = CreateDevice(DeviceOptions{});
  ASSERT_TRUE(device.ok()) << device.status().ToString();
  const DeviceInfo& info = device.value()->info();
  EXPECT_TRUE(HasFeature(info, "timelineSemaphore"));
  if (!ValidationRequestedByEnvironment()) GTEST_SKIP() << "KILN_VALIDATION is not set";
  EXPECT_TRUE(HasFeature(info, "validation"));
  std::string features;
  for (const auto& f : info.features) features.append(f.data(), f.size()) += " ";
  std::printf("device: %s; unified_memory=%d; features: %s\n", info.name.c_str(),
              info.unified_memory, features.c_str());
}

TEST_F(VulkanDriverTest, SyncValidationCatchesMissingBarrier) {
  DeviceOptions options;
  options.validation = true;
  auto device_or = CreateDevice(options);
  ASSERT_TRUE(device_or.ok()) << device_or.status().ToString();
  Ref<Device> device = std::move(device_or).value();
  Ref<Executable> scale = MakeScale(device.get());
  ASSERT_TRUE(scale);
  auto a = device->AllocateBuffer(256, MemoryKind::kHostVisible);
  auto b = device->AllocateBuffer(256, MemoryKind::kHostVisible);
  auto c = device->AllocateBuffer(256, MemoryKind::kHostVisible);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  auto cb = device->CreateCommandBuffer();
  ASSERT_TRUE(cb.ok());
  const uint32_t groups[3] = {1, 1, 1};
  ScalePush push = {2.0f, 64};
  BufferBinding first[2] = {{a->get(), 0, 0}, {b->get(), 0, 0}};
  BufferBinding second[2] = {{b->get(), 0, 0}, {c->get(), 0, 0}};
  ASSERT_TRUE(cb.value()->Dispatch(scale.get(), 0, groups, &push, 8, first, 2).ok());
  // Read-after-write on b with no Barrier(): synchronization validation must
  // report SYNC-HAZARD-READ-AFTER-WRITE.
  ASSERT_TRUE(cb.value()->Dispatch(scale.get(), 0, groups, &push, 8, second, 2).ok());
  ASSERT_TRUE(cb.value()->End().ok());
  EXPECT_GT(ValidationMessageCount(), 0u) << "synchronization validation is not active";
  ResetValidationMessageCountForTesting();
  ASSERT_TRUE(SubmitAndWait(device.get(), cb.value().get()).ok());
  ResetValidationMessageCountForTesting();  // submit-time reports of the same hazard
}

TEST_F(VulkanDriverTest, DescriptorPoolFallbackAcrossManyDispatches) {
  // 100 dependent dispatches (x *= 2, ping-pong) need two 64-set pools.
  setenv("KILN_VULKAN_DISABLE_PUSH_DESCRIPTOR", "1", 1);
  auto device_or = CreateDevice(DeviceOptions{});
  unsetenv("KILN_VULKAN_DISABLE_PUSH_DESCRIPTOR");
  ASSERT_TRUE(device_or.ok()) << device_or.status().ToString();
  Ref<Device> device = std::move(device_or).value();
  EXPECT_FALSE(HasFeature(device->info(), "push_descriptor"));
  Ref<Executable> scale = MakeScale(device.get());
  ASSERT_TRUE(scale);
  constexpr uint32_t kN = 64;
  auto x = device->AllocateBuffer(kN * 4, MemoryKind::kHostVisible);
  auto y = device->AllocateBuffer(kN * 4, MemoryKind::kHostVisible);
  ASSERT_TRUE(x.ok() && y.ok());
  Buffer* buffers[2] = {x->get(), y->get()};
  auto cb_or = device->CreateCommandBuffer();
  ASSERT_TRUE(cb_or.ok());
  CommandBuffer* cb = cb_or.value().get();
  for (int round = 0; round < 2; ++round) {
    std::vector<float> init(kN);
    for (uint32_t i = 0; i < kN; ++i) init[i] = static_cast<float>(i + round);
    ASSERT_TRUE(x.value()->Write(0, init.data(), kN * 4).ok());
    const uint32_t groups[3] = {1, 1, 1};
    ScalePush push = {2.0f, kN};
    for (int step = 0; step < 100; ++step) {
      Buffer* src = buffers[step % 2];
      Buffer* dst = buffers[(step + 1) % 2];
      BufferBinding bindings[2] = {{src, 0, 0}, {dst, 0, 0}};
      ASSERT_TRUE(cb->Dispatch(scale.get(), 0, groups, &push, 8, bindings, 2).ok());
      BufferBarrier barrier{dst, 0, 0};
      ASSERT_TRUE(cb->Barrier(&barrier, 1).ok());
    }
    ASSERT_TRUE(cb->End().ok());
    ASSERT_TRUE(SubmitAndWait(device.get(), cb).ok());
    std::vector<float> out(kN);
    ASSERT_TRUE(x.value()->Read(0, out.data(), kN * 4).ok());  // 100 steps end in x
    for (uint32_t i = 0; i < kN; ++i) {
      ASSERT_EQ(out[i], static_cast<float>(i + round) * 1267650600228229401496703205376.0f)
          << "element " << i;  // * 2^100, exact in float
    }
    ASSERT_TRUE(cb->Reset().ok());
  }
  EXPECT_EQ(device->stats().dispatches, 200u);
  EXPECT_EQ(device->stats().barriers, 200u);
}

// SPIR-V that spirv-val accepts but that names a binding or descriptor set
// the declared layout lacks crashed lavapipe in vkCreateComputePipelines; the
// load-time layout check (spirv_layout_check.h) refuses it before any driver
// call, and the device stays usable.
TEST_F(VulkanDriverTest, CraftedSpirvIsRefusedBeforeTheDriverSeesIt) {
  auto device_or = CreateDevice(DeviceOptions{});
  ASSERT_TRUE(device_or.ok()) << device_or.status().ToString();
  Ref<Device> device = std::move(device_or).value();
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 3;
  entry.push_constant_bytes = 4;
  for (uint32_t decoration : {33u /*Binding*/, 34u /*DescriptorSet*/}) {
    std::vector<uint32_t> w(std::begin(kVaddSpirv), std::end(kVaddSpirv));
    for (size_t at = 5; at < w.size(); at += w[at] >> 16)
      if ((w[at] & 0xffff) == 71 /*OpDecorate*/ && w[at + 2] == decoration) {
        w[at + 3] = decoration == 33u ? 131072u : 1u;
        break;
      }
    auto exe = device->CreateExecutable(w.data(), w.size(), {entry});
    ASSERT_FALSE(exe.ok());
    EXPECT_EQ(exe.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(exe.status().ToString().find(decoration == 33u ? "has binding 131072" : "descriptor set 1"),
              std::string::npos)
        << exe.status().ToString();
  }
  auto ok = device->CreateExecutable(kVaddSpirv, kVaddSpirvWordCount, {entry});
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

// 65535^3 workgroups passed the per-dimension limit and lavapipe silently
// miscounted; a grid beyond 2^32 invocations (64 per workgroup here) is
// refused when recorded, and the command buffer stays usable.
TEST_F(VulkanDriverTest, DispatchBeyondTwoToTheThirtyTwoInvocationsIsRefused) {
  auto device_or = CreateDevice(DeviceOptions{});
  ASSERT_TRUE(device_or.ok()) << device_or.status().ToString();
  Ref<Device> device = std::move(device_or).value();
  Ref<Executable> scale = MakeScale(device.get());
  ASSERT_TRUE(scale);
  auto x = device->AllocateBuffer(256, MemoryKind::kHostVisible);
  ASSERT_TRUE(x.ok());
  auto cb_or = device->CreateCommandBuffer();
  ASSERT_TRUE(cb_or.ok());
  CommandBuffer* cb = cb_or.value().get();
  ScalePush push = {2.0f, 0};
  BufferBinding bindings[2] = {{x->get(), 0, 0}, {x->get(), 0, 0}};
  const uint32_t huge[3] = {65535, 65535, 65535};
  Status s = cb->Dispatch(scale.get(), 0, huge, &push, 8, bindings, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("65535x65535x65535 workgroups of 64 invocations exceed 2^32"), std::string::npos)
      << s.ToString();
  const uint32_t fine[3] = {65535, 1, 1};
  EXPECT_TRUE(cb->Dispatch(scale.get(), 0, fine, &push, 8, bindings, 2).ok());
  ASSERT_TRUE(cb->End().ok());
  ASSERT_TRUE(SubmitAndWait(device.get(), cb).ok());  // count 0: every invocation returns at once
}

TEST_F(VulkanDriverTest, MissingValidationLayerIsNotFound) {
  const char* old = std::getenv("VK_LAYER_PATH");
  std::string saved = old ? old : "";
  setenv("VK_LAYER_PATH", "/nonexistent-kiln-layer-dir", 1);
  DeviceOptions options;
  options.validation = true;
  auto device = CreateDevice(options);
  if (old) {
    setenv("VK_LAYER_PATH", saved.c_str(), 1);
  } else {
    unsetenv("VK_LAYER_PATH");
  }
  ASSERT_FALSE(device.ok());
  EXPECT_EQ(device.status().code(), StatusCode::kNotFound) << device.status().ToString();
  EXPECT_NE(device.status().message().find("VK_LAYER_KHRONOS_validation"), std::string::npos);
}

TEST_F(VulkanDriverTest, VkResultMapping) {
  Status oom = VkResultToStatus(VK_ERROR_OUT_OF_DEVICE_MEMORY, "vkAllocateMemory");
  EXPECT_EQ(oom.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(oom.message(), "vkAllocateMemory: VK_ERROR_OUT_OF_DEVICE_MEMORY");
  EXPECT_EQ(VkResultToStatus(VK_ERROR_OUT_OF_HOST_MEMORY, "x").code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ(VkResultToStatus(VK_ERROR_DEVICE_LOST, "x").code(), StatusCode::kInternal);
  EXPECT_TRUE(VkResultToStatus(VK_SUCCESS, "x").ok());
  // The name table: first, middle and last entries, and a code without a name.
  EXPECT_STREQ(VkResultName(VK_SUCCESS), "VK_SUCCESS");
  EXPECT_STREQ(VkResultName(VK_TIMEOUT), "VK_TIMEOUT");
  EXPECT_STREQ(VkResultName(VK_ERROR_OUT_OF_POOL_MEMORY), "VK_ERROR_OUT_OF_POOL_MEMORY");
  EXPECT_STREQ(VkResultName(VK_ERROR_NOT_PERMITTED_KHR), "VK_ERROR_NOT_PERMITTED_KHR");
  EXPECT_STREQ(VkResultName(static_cast<VkResult>(-12345)), "VK_RESULT_-12345");
}

}  // namespace
}  // namespace kiln::hal::vulkan
