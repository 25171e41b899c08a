#include "hal/vulkan/vulkan_semaphore.h"

#include <new>

#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {

StatusOr<Ref<VulkanSemaphore>> VulkanSemaphore::Create(VulkanDevice* device,
                                                       uint64_t initial_value) {
  VulkanSemaphore* self = new (std::nothrow) VulkanSemaphore();
  if (!self) return ResourceExhaustedError("CreateSemaphore: out of host memory");
  device->Retain();
  self->device_ = device;
  Ref<VulkanSemaphore> ref = Ref<VulkanSemaphore>::Adopt(self);

  VkSemaphoreTypeCreateInfo type_info = {};
  type_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type_info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type_info.initialValue = initial_value;
  VkSemaphoreCreateInfo create_info = {};
  create_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  create_info.pNext = &type_info;
  KILN_VK_RETURN_IF_ERROR(
      device->syms().vkCreateSemaphore(device->handle(), &create_info, nullptr, &self->semaphore_),
      "vkCreateSemaphore(timeline)");
  self->max_signal_.store(initial_value, std::memory_order_relaxed);
  return ref;
}

VulkanSemaphore::~VulkanSemaphore() {
  if (!device_) return;
  if (semaphore_ != VK_NULL_HANDLE) {
    // A queue may still wait on or signal this semaphore: wait for the last
    // submission that used it. A signalled submission is done, but Mesa's
    // common queue (lavapipe, Mesa 22.3) still touches the semaphore after
    // it: its submit thread releases the submission's timeline points
    // (vk_queue_submit_cleanup, under the timeline's mutex) before it takes
    // the next submission. Destroying the semaphore in between left that
    // thread locking freed memory (ReplayTest.AsyncChain hung now and then:
    // the main thread in vkWaitSemaphores, the submit thread in
    // pthread_mutex_lock on a freed timeline). So wait for the next
    // submission when there is one, else for the queue to drain.
    if (last_use_ != 0 && device_->last_submission() > last_use_) {
      (void)device_->WaitSubmission(last_use_ + 1);
    } else if (last_use_ != 0) {
      (void)device_->WaitIdle();
    }
    device_->syms().vkDestroySemaphore(device_->handle(), semaphore_, nullptr);
  }
  device_->Release();
}

StatusOr<uint64_t> VulkanSemaphore::Query() {
  uint64_t value = 0;
  KILN_VK_RETURN_IF_ERROR(
      device_->syms().vkGetSemaphoreCounterValue(device_->handle(), semaphore_, &value),
      "vkGetSemaphoreCounterValue");
  return value;
}

Status VulkanSemaphore::CheckSignalValue(uint64_t value) {
  KILN_ASSIGN_OR_RETURN(uint64_t current, Query());
  uint64_t scheduled = max_signal_.load(std::memory_order_relaxed);
  if (value <= current || value <= scheduled) {
    return InvalidArgumentError(
        "semaphore signal to %llu does not advance the timeline (payload %llu, largest "
        "scheduled %llu)",
        static_cast<unsigned long long>(value), static_cast<unsigned long long>(current),
        static_cast<unsigned long long>(scheduled));
  }
  return OkStatus();
}

void VulkanSemaphore::NoteSignal(uint64_t value, bool from_queue) {
  auto raise = [value](std::atomic<uint64_t>& target) {
    uint64_t previous = target.load(std::memory_order_relaxed);
    while (previous < value &&
           !target.compare_exchange_weak(previous, value, std::memory_order_relaxed)) {
    }
  };
  raise(max_signal_);
  if (from_queue) raise(queue_max_);
}

Status VulkanSemaphore::Signal(uint64_t value) {
  KILN_RETURN_IF_ERROR(CheckSignalValue(value));
  KILN_ASSIGN_OR_RETURN(uint64_t current, Query());
  uint64_t queue_max = queue_max_.load(std::memory_order_relaxed);
  if (queue_max > current) {
    return FailedPreconditionError(
        "semaphore host signal to %llu while a queue signal to %llu is pending (payload %llu)",
        static_cast<unsigned long long>(value), static_cast<unsigned long long>(queue_max),
        static_cast<unsigned long long>(current));
  }
  VkSemaphoreSignalInfo signal_info = {};
  signal_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO;
  signal_info.semaphore = semaphore_;
  signal_info.value = value;
  KILN_VK_RETURN_IF_ERROR(device_->syms().vkSignalSemaphore(device_->handle(), &signal_info),
                          "vkSignalSemaphore");
  NoteSignal(value, /*from_queue=*/false);
  return OkStatus();
}

Status VulkanSemaphore::WaitUnused(uint64_t timeout_ns) {
  if (timeout_ns == 0) {  // a poll (no vkWaitSemaphores; see Wait)
    KILN_ASSIGN_OR_RETURN(bool retired, device_->SubmissionRetired(last_use_));
    if (retired) return OkStatus();
    return DeadlineExceededError("timeout: device work using the semaphore is still pending");
  }
  return device_->WaitSubmission(last_use_, timeout_ns);
}

Status VulkanSemaphore::Wait(uint64_t value, uint64_t timeout_ns) {
  if (timeout_ns == 0) {
    // A poll needs no vkWaitSemaphores. (It also sidesteps a validation layer
    // 1.3.239 false positive: after a vkWaitSemaphores that returns
    // VK_TIMEOUT, a second host vkSignalSemaphore on that semaphore reports
    // VUID-VkSemaphoreSignalInfo-value-03259.)
    KILN_ASSIGN_OR_RETURN(uint64_t current, Query());
    if (current >= value) return OkStatus();
    return DeadlineExceededError("timeout: semaphore value %llu not reached (payload %llu)",
                                   static_cast<unsigned long long>(value),
                                   static_cast<unsigned long long>(current));
  }
  VkSemaphoreWaitInfo wait_info = {};
  wait_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  wait_info.semaphoreCount = 1;
  wait_info.pSemaphores = &semaphore_;
  wait_info.pValues = &value;
  VkResult result = device_->syms().vkWaitSemaphores(device_->handle(), &wait_info, timeout_ns);
  if (result == VK_TIMEOUT) {
    return DeadlineExceededError("timeout: semaphore value %llu not reached after %llu ns",
                                   static_cast<unsigned long long>(value),
                                   static_cast<unsigned long long>(timeout_ns));
  }
  KILN_VK_RETURN_IF_ERROR(result, "vkWaitSemaphores");
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
