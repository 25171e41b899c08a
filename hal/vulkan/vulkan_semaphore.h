// VulkanSemaphore: hal::Semaphore over a Vulkan timeline semaphore
// (VkSemaphoreTypeCreateInfo{TIMELINE}).
//
// Timeline values must strictly increase across all signal operations issued
// through Kiln (host Signal and QueueExecute signals); a value not above both
// the current payload and the largest value already scheduled is rejected with
// kInvalidArgument (Vulkan would otherwise be undefined behaviour).
//
// Ownership: retains its VulkanDevice. Releasing the last reference blocks
// until the last submission that waits on or signals it has retired (a
// submission whose wait is never satisfied therefore blocks forever). Threading: Query/Wait may be called
// from any thread; Signal and QueueExecute follow the device's rule.
#ifndef KILN_HAL_VULKAN_VULKAN_SEMAPHORE_H_
#define KILN_HAL_VULKAN_VULKAN_SEMAPHORE_H_

#include "hal/vulkan/vulkan_symbols.h"

#include <atomic>

#include "hal/api.h"

namespace kiln::hal::vulkan {

class VulkanDevice;

class VulkanSemaphore final : public Semaphore {
 public:
  static StatusOr<Ref<VulkanSemaphore>> Create(VulkanDevice* device, uint64_t initial_value);

  // Current payload. Cost: one vkGetSemaphoreCounterValue.
  StatusOr<uint64_t> Query() override;
  // Host signal to `value` (vkSignalSemaphore). kInvalidArgument if `value`
  // does not increase the timeline; kFailedPrecondition while a queue signal
  // of this semaphore is still pending (Vulkan forbids a host signal from
  // overtaking it).
  Status Signal(uint64_t value) override;
  // Blocks until payload >= value or `timeout_ns` nanoseconds elapse
  // (kDeadlineExceeded; timeout_ns 0 polls, UINT64_MAX waits
  // forever).
  Status Wait(uint64_t value, uint64_t timeout_ns) override;
  // Waits for the last device submission that used the semaphore.
  Status WaitUnused(uint64_t timeout_ns) override;

  // Driver-internal.
  VkSemaphore handle() const { return semaphore_; }
  Status CheckSignalValue(uint64_t value);
  // Records a scheduled signal (`from_queue`: by QueueExecute).
  void NoteSignal(uint64_t value, bool from_queue);
  // Records that device submission `submission_value` waits on or signals
  // this semaphore; destruction blocks until that submission retires.
  void NoteQueueUse(uint64_t submission_value) { last_use_ = submission_value; }

 private:
  VulkanSemaphore() = default;
  ~VulkanSemaphore() override;

  VulkanDevice* device_ = nullptr;  // retained
  VkSemaphore semaphore_ = VK_NULL_HANDLE;
  std::atomic<uint64_t> max_signal_{0};  // largest value signalled or scheduled
  std::atomic<uint64_t> queue_max_{0};   // largest value scheduled by a queue
  uint64_t last_use_ = 0;                // device submission value, 0: never used
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_SEMAPHORE_H_
