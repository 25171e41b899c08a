// VulkanDevice: the Vulkan implementation of hal::Device.
//
// One VkDevice with one compute-capable queue, one VkCommandPool, one
// VkPipelineCache (shared by every executable of the device) and one internal
// timeline semaphore that every QueueExecute signals, so command buffers know
// when their last submission has retired.
//
// Ownership: created through vulkan::CreateDevice (vulkan_driver.h) or
// hal::CreateDevice("vulkan", ...). Every object the device creates (buffers,
// executables, command buffers, semaphores) retains the device, so the VkDevice
// is destroyed only after its last object; the device retains its
// VulkanInstance.
//
// Threading: like hal::Device, one thread at a time per device. In Vulkan terms
// the command pool and the queue are externally synchronized: creating,
// recording, resetting or destroying command buffers and calling
// QueueExecute / WaitIdle must not overlap across threads for one device.
//
// Memory: one VkDeviceMemory per AllocateBuffer call (no sub-allocator yet;
// every allocation counts against maxMemoryAllocationCount, often 4096 on
// mobile). Host-visible memory is mapped persistently at allocation.
//
// Environment: KILN_VULKAN_DISABLE_PUSH_DESCRIPTOR=1 (read at device creation)
// makes the device ignore VK_KHR_push_descriptor and bind descriptors through
// per-command-buffer descriptor pools; the CTS uses it to cover that path.
#ifndef KILN_HAL_VULKAN_VULKAN_DEVICE_H_
#define KILN_HAL_VULKAN_VULKAN_DEVICE_H_

#include "hal/vulkan/vulkan_symbols.h"

#include <cstdint>
#include <vector>

#include "hal/api.h"
#include "hal/vulkan/exact_fma_splice.h"
#include "hal/vulkan/vulkan_instance.h"

namespace kiln::hal::vulkan {

class VulkanDevice final : public Device {
 public:
  // Creates a logical device on `physical_device` (enumerated from
  // `instance`). Errors: kUnimplemented if the device lacks Vulkan 1.2,
  // timelineSemaphore or a compute queue; VkResult errors otherwise.
  static StatusOr<Ref<VulkanDevice>> Create(Ref<VulkanInstance> instance,
                                            VkPhysicalDevice physical_device);

  // hal::Device
  const DeviceInfo& info() const override { return info_; }
  StatusOr<Ref<Buffer>> AllocateBuffer(uint64_t size, MemoryKind kind) override;
  StatusOr<Ref<Buffer>> CreateSubspan(Buffer* parent, uint64_t offset,
                                      uint64_t length) override;
  StatusOr<Ref<Executable>> CreateExecutable(
      const uint32_t* spirv, size_t word_count,
      const HostVector<EntryPointInfo>& entry_points) override;
  StatusOr<Ref<CommandBuffer>> CreateCommandBuffer() override;
  StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) override;
  Status QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits,
                      uint32_t wait_count, const SemaphorePoint* signals,
                      uint32_t signal_count) override;
  Status WaitIdle(uint64_t timeout_ns = UINT64_MAX) override;
  Stats& stats() override { return stats_; }
  // Profiling: a VulkanQueryPool (vulkan_query_pool.h).
  StatusOr<Ref<QueryPool>> CreateTimestampQueryPool(uint32_t count) override;

  // --- driver-internal accessors (used by the other vulkan_* files) --------
  const VulkanDeviceSyms& syms() const { return syms_; }
  VkDevice handle() const { return device_; }
  VkPhysicalDevice physical_device() const { return physical_device_; }
  VulkanInstance* instance() const { return instance_.get(); }
  VkCommandPool command_pool() const { return command_pool_; }
  VkPipelineCache pipeline_cache() const { return pipeline_cache_; }
  const VkPhysicalDeviceLimits& limits() const { return limits_; }
  const VkPhysicalDeviceMemoryProperties& memory_properties() const {
    return memory_properties_;
  }
  // True when descriptors are bound with vkCmdPushDescriptorSetKHR.
  bool push_descriptors() const { return push_descriptors_; }
  uint32_t max_push_descriptors() const { return max_push_descriptors_; }
  uint64_t max_memory_allocation_size() const { return max_memory_allocation_size_; }
  // True where the driver does not fuse GLSL fma() (CPU implementations:
  // lavapipe/llvmpipe and SwiftShader split it into a multiply and an add):
  // VulkanExecutable::Create then replaces each f32 fma() of a module with
  // a call of an exact emulation (exact_fma_splice.h), and passes it as
  // specialization constant 0 (modules compiled before the splice carry
  // their own emulation behind that constant). False on GPUs, whose fma() is
  // one hardware instruction. KILN_EXACT_FMA=0/1 overrides; =exact picks the
  // f64 body with the midpoint fix, =f32 the float-only body.
  bool exact_fma() const { return exact_fma_; }
  // The body spliced where exact_fma(): kFloat64 where shaderFloat64 is
  // enabled, else kFloat32 (KILN_EXACT_FMA=exact/f32 choose).
  ExactFmaBody exact_fma_body() const { return exact_fma_body_; }
  // Optional shader features enabled on this device (kFeature* bits below);
  // VulkanExecutable::Create refuses SPIR-V that needs one not set.
  enum : uint32_t {
    kFeatureShaderInt64 = 1u << 0,
    kFeatureShaderFloat64 = 1u << 1,
    kFeatureShaderInt16 = 1u << 2,
    kFeatureStorageBuffer16BitAccess = 1u << 3,
    kFeatureStorageBuffer8BitAccess = 1u << 4,
    kFeatureShaderFloat16 = 1u << 5,
    kFeatureShaderInt8 = 1u << 6,
  };
  uint32_t enabled_features() const { return enabled_features_; }

  // True when KILN_VULKAN_UNMAPPED_DEVICE_LOCAL=1: device-local buffers are
  // never mapped, as on a discrete GPU, and info().unified_memory is false.
  // Lets a unified-memory device (lavapipe) test the staged paths of
  // discrete GPUs (hal.buffer.load, kiln_tensor_read/write).
  bool unmapped_device_local() const { return unmapped_device_local_; }

  // Internal timeline (every QueueExecute signals the next value): whether
  // submission `value` has retired, and a blocking wait for it (0: no-op;
  // kDeadlineExceeded when `timeout_ns` elapses first).
  StatusOr<bool> SubmissionRetired(uint64_t value);
  Status WaitSubmission(uint64_t value, uint64_t timeout_ns = UINT64_MAX);
  // The internal timeline value of the last QueueExecute (0: none yet).
  uint64_t last_submission() const { return submission_value_; }

 private:
  VulkanDevice() = default;
  ~VulkanDevice() override;
  Status Initialize(Ref<VulkanInstance> instance, VkPhysicalDevice physical_device);

  Ref<VulkanInstance> instance_;
  VkPhysicalDevice physical_device_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VulkanDeviceSyms syms_;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;
  VkSemaphore submission_semaphore_ = VK_NULL_HANDLE;
  uint64_t submission_value_ = 0;

  VkPhysicalDeviceLimits limits_ = {};
  VkPhysicalDeviceMemoryProperties memory_properties_ = {};
  bool push_descriptors_ = false;
  uint32_t max_push_descriptors_ = 0;
  uint64_t max_memory_allocation_size_ = 0;
  bool exact_fma_ = true;
  ExactFmaBody exact_fma_body_ = ExactFmaBody::kFloat32;
  uint32_t enabled_features_ = 0;
  bool unmapped_device_local_ = false;

  DeviceInfo info_;
  Stats stats_;

  // Scratch reused by QueueExecute (no steady-state host allocation).
  HostVector<VkSemaphore> scratch_semaphores_;
  HostVector<uint64_t> scratch_values_;
  HostVector<VkPipelineStageFlags> scratch_stages_;
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_DEVICE_H_
