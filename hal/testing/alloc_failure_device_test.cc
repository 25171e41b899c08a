// AllocFailureDevice on the Vulkan driver (validation + sync validation):
// it refuses exactly the armed allocation, once, with kResourceExhausted,
// counts every call, and hands the other allocations through untouched
// (usable buffers, counted in the inner device's stats).
#include "hal/testing/alloc_failure_device.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "hal/driver.h"

namespace kiln::hal {
namespace {

TEST(AllocFailureDeviceTest, RefusesTheArmedAllocationOnce) {
  auto inner = CreateDevice("vulkan", DeviceOptions{});
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  Ref<Device> vulkan = inner.value();
  auto created = AllocFailureDevice::Create(std::move(inner).value());
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Ref<AllocFailureDevice> device = std::move(created).value();
  EXPECT_EQ(device->inner(), vulkan.get());

  device->Arm(2);
  uint64_t before = device->stats().device_allocations;
  auto a = device->AllocateBuffer(64, MemoryKind::kHostVisible);
  auto b = device->AllocateBuffer(64, MemoryKind::kHostVisible);
  auto c = device->AllocateBuffer(32, MemoryKind::kDeviceLocal);
  auto d = device->AllocateBuffer(64, MemoryKind::kHostVisible);
  ASSERT_TRUE(a.ok() && c.ok() && d.ok());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(b.status().message().find("injected failure of allocation 2"), std::string::npos)
      << b.status().ToString();
  EXPECT_EQ(device->allocations(), 4u);
  EXPECT_EQ(device->refused(), 1u);
  EXPECT_EQ(device->stats().device_allocations, before + 3);  // the refused one never reached Vulkan

  // The buffers are the inner device's, and work.
  uint32_t in = 0x12345678, out = 0;
  ASSERT_TRUE((*a)->Write(0, &in, 4).ok());
  ASSERT_TRUE((*a)->Read(0, &out, 4).ok());
  EXPECT_EQ(out, in);

  // Re-arming restarts the count; 0 refuses nothing.
  device->Arm(0);
  EXPECT_EQ(device->allocations(), 0u);
  EXPECT_EQ(device->refused(), 0u);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(device->AllocateBuffer(16, MemoryKind::kHostVisible).ok());
  EXPECT_EQ(device->refused(), 0u);
  device->Arm(1);
  EXPECT_EQ(device->AllocateBuffer(16, MemoryKind::kHostVisible).status().code(),
            StatusCode::kResourceExhausted);
  EXPECT_TRUE(device->AllocateBuffer(16, MemoryKind::kHostVisible).ok());
  EXPECT_EQ(ValidationMessageCount(), 0u);
}

TEST(AllocFailureDeviceTest, NullInner) {
  EXPECT_EQ(AllocFailureDevice::Create(nullptr).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::hal
