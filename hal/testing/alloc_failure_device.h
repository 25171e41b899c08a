// AllocFailureDevice: a hal::Device decorator for allocation-failure
// injection tests. It counts every Device::AllocateBuffer call and makes the
// k-th one (k chosen by Arm) fail, once, with kResourceExhausted, as a
// driver's vkAllocateMemory returning VK_ERROR_OUT_OF_DEVICE_MEMORY would.
// Every other call, and every other allocation, is forwarded unchanged to
// the wrapped device.
//
// Every device allocation of the runtime goes through
// hal::Device::AllocateBuffer (the VM's hal module, its staged copies and
// reads, kiln_tensor_create), and the Vulkan HAL allocates device memory
// nowhere else (VulkanBuffer::Allocate is reached only from there), so
// wrapping a C API device's hal::Device sees them all.
//
// Test-only: the runtime never links it, so shipped builds pay nothing for
// it (tests install it on a kiln_device_t through runtime/kiln_internal.h,
// as kiln-bench installs hal::DispatchTimingDevice).
//
// Contract: objects are created by the wrapped device and handed back as
// they are (command buffers, buffers and executables are the inner
// device's own), so they may be used with either device.
// Threading and ownership: those of hal::Device; the decorator retains the
// wrapped device. The counters are atomics, so an app thread may read them.
#ifndef KILN_HAL_TESTING_ALLOC_FAILURE_DEVICE_H_
#define KILN_HAL_TESTING_ALLOC_FAILURE_DEVICE_H_

#include <atomic>
#include <cstdint>

#include "hal/api.h"

namespace kiln::hal {

class AllocFailureDevice final : public Device {
 public:
  // Wraps `inner`. Errors: kInvalidArgument (null), kResourceExhausted (out
  // of host memory).
  static StatusOr<Ref<AllocFailureDevice>> Create(Ref<Device> inner);

  Device* inner() const { return inner_.get(); }

  // Restarts the count: the `fail_at`-th AllocateBuffer call from now
  // (1-based) fails; 0 fails none. Clears allocations() and refused().
  void Arm(uint64_t fail_at) {
    fail_at_.store(fail_at);
    allocations_.store(0);
    refused_.store(0);
  }
  // AllocateBuffer calls since the last Arm, the refused one included.
  uint64_t allocations() const { return allocations_.load(); }
  // Calls refused since the last Arm (0 or 1).
  uint64_t refused() const { return refused_.load(); }

  // hal::Device: forwarded to the wrapped device, except the armed
  // allocation.
  const DeviceInfo& info() const override { return inner_->info(); }
  StatusOr<Ref<Buffer>> AllocateBuffer(uint64_t size, MemoryKind kind) override;
  StatusOr<Ref<Buffer>> CreateSubspan(Buffer* parent, uint64_t offset, uint64_t length) override {
    return inner_->CreateSubspan(parent, offset, length);
  }
  StatusOr<Ref<Executable>> CreateExecutable(const uint32_t* spirv, size_t word_count,
                                             const HostVector<EntryPointInfo>& entry_points) override {
    return inner_->CreateExecutable(spirv, word_count, entry_points);
  }
  StatusOr<Ref<CommandBuffer>> CreateCommandBuffer() override { return inner_->CreateCommandBuffer(); }
  StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) override {
    return inner_->CreateSemaphore(initial_value);
  }
  Status QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits, uint32_t wait_count,
                      const SemaphorePoint* signals, uint32_t signal_count) override {
    return inner_->QueueExecute(command_buffer, waits, wait_count, signals, signal_count);
  }
  Status WaitIdle(uint64_t timeout_ns = UINT64_MAX) override { return inner_->WaitIdle(timeout_ns); }
  Stats& stats() override { return inner_->stats(); }
  StatusOr<Ref<QueryPool>> CreateTimestampQueryPool(uint32_t count) override {
    return inner_->CreateTimestampQueryPool(count);
  }

 private:
  explicit AllocFailureDevice(Ref<Device> inner) : inner_(std::move(inner)) {}

  Ref<Device> inner_;
  std::atomic<uint64_t> fail_at_{0};
  std::atomic<uint64_t> allocations_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace kiln::hal

#endif  // KILN_HAL_TESTING_ALLOC_FAILURE_DEVICE_H_
