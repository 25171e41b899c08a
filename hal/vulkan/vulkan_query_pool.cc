#include "hal/vulkan/vulkan_query_pool.h"

#include <new>

#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {

StatusOr<Ref<VulkanQueryPool>> VulkanQueryPool::Create(VulkanDevice* device, uint32_t count) {
  if (count == 0) return InvalidArgumentError("CreateTimestampQueryPool: count must be >= 1");
  if (device->info().timestamp_valid_bits == 0) {
    return UnimplementedError(
        "CreateTimestampQueryPool: device '%s' has no timestamps on its compute queue "
        "(timestampValidBits is 0)",
        device->info().name.c_str());
  }
  VulkanQueryPool* self = new (std::nothrow) VulkanQueryPool();
  if (!self) return ResourceExhaustedError("CreateTimestampQueryPool: out of host memory");
  device->Retain();
  self->device_ = device;
  Ref<VulkanQueryPool> ref = Ref<VulkanQueryPool>::Adopt(self);
  VkQueryPoolCreateInfo info = {};
  info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
  info.queryType = VK_QUERY_TYPE_TIMESTAMP;
  info.queryCount = count;
  KILN_VK_RETURN_IF_ERROR(
      device->syms().vkCreateQueryPool(device->handle(), &info, nullptr, &self->pool_),
      "vkCreateQueryPool");
  self->count_ = count;
  return ref;
}

VulkanQueryPool::~VulkanQueryPool() {
  if (!device_) return;
  if (pool_ != VK_NULL_HANDLE) device_->syms().vkDestroyQueryPool(device_->handle(), pool_, nullptr);
  device_->Release();
}

Status VulkanQueryPool::ReadTimestamps(uint32_t first, uint32_t count, uint64_t* ticks) {
  if (first > count_ || count > count_ - first) {
    return OutOfRangeError("ReadTimestamps: queries [%u, %u) outside the pool of %u", first,
                           first + count, count_);
  }
  if (count == 0) return OkStatus();
  if (!ticks) return InvalidArgumentError("ReadTimestamps: ticks is null");
  scratch_.resize(2 * static_cast<size_t>(count));
  VkResult result = device_->syms().vkGetQueryPoolResults(
      device_->handle(), pool_, first, count, scratch_.size() * sizeof(uint64_t), scratch_.data(),
      2 * sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WITH_AVAILABILITY_BIT);
  if (result != VK_SUCCESS && result != VK_NOT_READY) {
    return VkResultToStatus(result, "vkGetQueryPoolResults");
  }
  const uint32_t bits = device_->info().timestamp_valid_bits;
  const uint64_t mask = bits >= 64 ? ~0ull : ((1ull << bits) - 1);
  for (uint32_t i = 0; i < count; ++i) {
    if (scratch_[2 * i + 1] == 0) {
      return FailedPreconditionError(
          "ReadTimestamps: query %u has no result (not written since its reset, or its "
          "submission has not completed)",
          first + i);
    }
    ticks[i] = scratch_[2 * i] & mask;
  }
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
