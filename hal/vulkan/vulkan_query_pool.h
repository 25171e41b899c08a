// VulkanQueryPool: hal::QueryPool over a VkQueryPool of
// VK_QUERY_TYPE_TIMESTAMP (profiling only; see hal/api.h).
//
// Ownership: retains its VulkanDevice. Command buffers that record a reset or
// a write of the pool retain it until their Reset, so the VkQueryPool lives
// until the last submission using it has retired.
// Threading: the device's rule (one thread at a time).
#ifndef KILN_HAL_VULKAN_VULKAN_QUERY_POOL_H_
#define KILN_HAL_VULKAN_VULKAN_QUERY_POOL_H_

#include "hal/vulkan/vulkan_symbols.h"

#include <vector>

#include "hal/api.h"

namespace kiln::hal::vulkan {

class VulkanDevice;

class VulkanQueryPool final : public QueryPool {
 public:
  // `count` >= 1 timestamp queries. Errors: kUnimplemented when the device's
  // compute queue has no timestamps (timestampValidBits 0), kInvalidArgument
  // for count 0, VkResult failures.
  static StatusOr<Ref<VulkanQueryPool>> Create(VulkanDevice* device, uint32_t count);

  uint32_t count() const override { return count_; }
  // vkGetQueryPoolResults (64-bit, WITH_AVAILABILITY, no WAIT): never blocks;
  // a query without a result is kFailedPrecondition.
  Status ReadTimestamps(uint32_t first, uint32_t count, uint64_t* ticks) override;

  // Driver-internal.
  VkQueryPool handle() const { return pool_; }
  VulkanDevice* device() const { return device_; }

 private:
  VulkanQueryPool() = default;
  ~VulkanQueryPool() override;

  VulkanDevice* device_ = nullptr;  // retained
  VkQueryPool pool_ = VK_NULL_HANDLE;
  uint32_t count_ = 0;
  HostVector<uint64_t> scratch_;  // (value, availability) pairs
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_QUERY_POOL_H_
