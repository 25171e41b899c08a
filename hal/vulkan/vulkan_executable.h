// VulkanExecutable: hal::Executable holding one VkShaderModule and, per entry
// point, a descriptor set layout (set 0: `binding_count` storage buffers at
// bindings 0..n-1, compute stage), a pipeline layout (+ one push-constant
// range of `push_constant_bytes`, compute stage, when nonzero) and a compute
// pipeline created through the device's shared VkPipelineCache.
//
// Descriptor binding: entry points whose binding_count is within the device's
// maxPushDescriptors use VK_KHR_push_descriptor (layout flag
// PUSH_DESCRIPTOR_BIT_KHR); otherwise the command buffer allocates descriptor
// sets from its own pools.
//
// Ownership: retains its VulkanDevice. Cost: Create compiles every pipeline
// (milliseconds each on lavapipe; JIT). Create once per module load.
#ifndef KILN_HAL_VULKAN_VULKAN_EXECUTABLE_H_
#define KILN_HAL_VULKAN_VULKAN_EXECUTABLE_H_

#include "hal/vulkan/vulkan_symbols.h"

#include <vector>

#include "hal/api.h"

namespace kiln::hal::vulkan {

class VulkanDevice;

class VulkanExecutable final : public Executable {
 public:
  struct Pipeline {
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
    bool push_descriptor = false;
    uint32_t workgroup_invocations = 1;  // as the SPIR-V declares it (spirv_layout_check.h)
  };

  // `spirv` is `word_count` 32-bit words (copied; the caller keeps its
  // memory). Checks before touching Vulkan: the SPIR-V against the declared
  // layout and the device's workgroup limits (CheckSpirvLayout,
  // spirv_layout_check.h); binding_count <= maxPerStageDescriptorStorageBuffers
  // and push_constant_bytes (multiple of 4) <= maxPushConstantsSize. Each
  // failure is kInvalidArgument and no driver call is made.
  static StatusOr<Ref<VulkanExecutable>> Create(VulkanDevice* device, const uint32_t* spirv,
                                                size_t word_count,
                                                const HostVector<EntryPointInfo>& entry_points);

  uint32_t entry_point_count() const override {
    return static_cast<uint32_t>(entry_points_.size());
  }
  const EntryPointInfo& entry_point(uint32_t ordinal) const override {
    return entry_points_[ordinal];
  }
  const Pipeline& pipeline(uint32_t ordinal) const { return pipelines_[ordinal]; }
  VulkanDevice* device() const { return device_; }

 private:
  VulkanExecutable() = default;
  ~VulkanExecutable() override;

  VulkanDevice* device_ = nullptr;  // retained
  VkShaderModule module_ = VK_NULL_HANDLE;
  HostVector<EntryPointInfo> entry_points_;
  HostVector<Pipeline> pipelines_;
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_EXECUTABLE_H_
