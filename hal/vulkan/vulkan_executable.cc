#include "hal/vulkan/vulkan_executable.h"

#include <cstring>
#include <new>
#include <string>

#include "hal/command_checks.h"
#include "hal/vulkan/exact_fma_splice.h"
#include "hal/vulkan/spirv_layout_check.h"
#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

constexpr uint32_t kOpCapability = 17;

// SPIR-V capabilities that need an optional device feature: the capability
// (SPIR-V spec 3.31), its VulkanDevice::kFeature* bit and the feature's name
// (the VkPhysicalDevice*Features field).
struct CapabilityFeature {
  uint16_t capability;
  uint8_t bit;
  const char* feature;
};
constexpr CapabilityFeature kCapabilityFeatures[] = {
    {9, VulkanDevice::kFeatureShaderFloat16, "shaderFloat16"},
    {10, VulkanDevice::kFeatureShaderFloat64, "shaderFloat64"},
    {11, VulkanDevice::kFeatureShaderInt64, "shaderInt64"},
    {22, VulkanDevice::kFeatureShaderInt16, "shaderInt16"},
    {39, VulkanDevice::kFeatureShaderInt8, "shaderInt8"},
    {4433, VulkanDevice::kFeatureStorageBuffer16BitAccess, "storageBuffer16BitAccess"},
    {4448, VulkanDevice::kFeatureStorageBuffer8BitAccess, "storageBuffer8BitAccess"},
};

// Every OpCapability of the module whose device feature is not enabled is an
// error naming the feature (a module compiled for f16, f64, 64/16/8-bit
// integers on a device without them), before the driver sees the module.
// Capabilities not listed are left to the driver. `words` passed
// CheckSpirvLayout (well-formed instruction lengths).
Status CheckCapabilities(const VulkanDevice* device, const uint32_t* words, size_t count) {
  for (size_t i = 5; i < count; i += words[i] >> 16) {
    if ((words[i] & 0xffffu) != kOpCapability || (words[i] >> 16) < 2) continue;
    for (const CapabilityFeature& c : kCapabilityFeatures) {
      if (c.capability == words[i + 1] && !(device->enabled_features() & c.bit)) {
        return UnimplementedError(
            "SPIR-V module needs the device feature '%s' (SPIR-V capability %u), which Vulkan "
            "device '%s' does not have",
            c.feature, words[i + 1], device->info().name.c_str());
      }
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<Ref<VulkanExecutable>> VulkanExecutable::Create(
    VulkanDevice* device, const uint32_t* spirv, size_t word_count,
    const HostVector<EntryPointInfo>& entry_points) {
  if (!spirv) return InvalidArgumentError("CreateExecutable: spirv is null");
  if (entry_points.empty()) return InvalidArgumentError("CreateExecutable: no entry points");
  HostVector<uint32_t> invocations;
  KILN_RETURN_IF_ERROR(CheckSpirvLayout(spirv, word_count, entry_points,
                                        SpirvLimits(device->info()), &invocations));
  KILN_RETURN_IF_ERROR(CheckCapabilities(device, spirv, word_count));
  KILN_RETURN_IF_ERROR(CheckEntryPointLimits(entry_points, device->info()));

  VulkanExecutable* self = new (std::nothrow) VulkanExecutable();
  if (!self) return ResourceExhaustedError("CreateExecutable: out of host memory");
  device->Retain();
  self->device_ = device;
  Ref<VulkanExecutable> ref = Ref<VulkanExecutable>::Adopt(self);
  self->entry_points_ = entry_points;
  self->pipelines_.resize(entry_points.size());

  const VulkanDeviceSyms& vk = device->syms();
  VkDevice handle = device->handle();
  // A driver that splits fma() gets an exact emulation of it (exact_fma_splice.h)
  // where an entry point asks for one rounding (EntryPointInfo::exact_fma);
  // the spliced copy lives until the driver has made its shader module.
  HostVector<uint32_t> spliced_words;
  uint32_t spliced = 0;
#if !defined(KILN_CPU_DRIVER_FMA) || KILN_CPU_DRIVER_FMA
  bool exact = false;
  for (const EntryPointInfo& entry : entry_points) exact = exact || entry.exact_fma;
  if (exact && device->exact_fma()) {
    KILN_RETURN_IF_ERROR(SpliceExactFma(spirv, word_count, device->exact_fma_body(),
                                        &spliced_words, &spliced));
  }
#endif  // KILN_CPU_DRIVER_FMA=0: GPU-only runtime, fma() as the driver runs it
  VkShaderModuleCreateInfo module_info = {};
  module_info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  module_info.codeSize = (spliced ? spliced_words.size() : word_count) * sizeof(uint32_t);
  module_info.pCode = spliced ? spliced_words.data() : spirv;
  KILN_VK_RETURN_IF_ERROR(vk.vkCreateShaderModule(handle, &module_info, nullptr, &self->module_),
                          "vkCreateShaderModule");

  HostVector<VkDescriptorSetLayoutBinding> bindings;
  for (size_t e = 0; e < entry_points.size(); ++e) {
    const EntryPointInfo& entry = entry_points[e];
    Pipeline& pipeline = self->pipelines_[e];
    pipeline.workgroup_invocations = invocations[e];
    pipeline.push_descriptor = device->push_descriptors() && entry.binding_count > 0 &&
                               entry.binding_count <= device->max_push_descriptors();

    bindings.assign(entry.binding_count, VkDescriptorSetLayoutBinding{});
    for (uint32_t b = 0; b < entry.binding_count; ++b) {
      bindings[b].binding = b;
      bindings[b].descriptorType = entry.kind(b) == BindingKind::kUniformTexelBuffer
                                       ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER
                                       : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[b].descriptorCount = 1;
      bindings[b].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo set_info = {};
    set_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    set_info.flags =
        pipeline.push_descriptor ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
    set_info.bindingCount = entry.binding_count;
    set_info.pBindings = bindings.data();
    KILN_VK_RETURN_IF_ERROR(
        vk.vkCreateDescriptorSetLayout(handle, &set_info, nullptr, &pipeline.set_layout),
        "vkCreateDescriptorSetLayout");

    VkPushConstantRange push_range = {};
    push_range.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    push_range.offset = 0;
    push_range.size = entry.push_constant_bytes;
    VkPipelineLayoutCreateInfo layout_info = {};
    layout_info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &pipeline.set_layout;
    layout_info.pushConstantRangeCount = entry.push_constant_bytes ? 1 : 0;
    layout_info.pPushConstantRanges = entry.push_constant_bytes ? &push_range : nullptr;
    KILN_VK_RETURN_IF_ERROR(
        vk.vkCreatePipelineLayout(handle, &layout_info, nullptr, &pipeline.layout),
        "vkCreatePipelineLayout");

    VkComputePipelineCreateInfo pipeline_info = {};
    pipeline_info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = self->module_;
    pipeline_info.stage.pName = entry.name.c_str();
    pipeline_info.layout = pipeline.layout;
    // Specialization constant 0: on where the driver splits fma(), for
    // modules compiled before the runtime spliced fma() (they carry
    // their own float emulation behind it). Shaders that do not declare it
    // ignore the entry. Constants 1..N: the entry
    // point's own values (a shader shared by several dispatches,
    // compiler/backend/shader_dedupe.h).
    const uint32_t spec_count = static_cast<uint32_t>(entry.specialization.size());
    HostVector<uint32_t> spec_data(spec_count + 1);
    HostVector<VkSpecializationMapEntry> spec_entries(spec_count + 1);
    spec_data[0] = device->exact_fma() ? VK_TRUE : VK_FALSE;
    spec_entries[0] = {0, 0, sizeof(VkBool32)};
    for (uint32_t k = 0; k < spec_count; ++k) {
      spec_data[k + 1] = entry.specialization[k];
      spec_entries[k + 1] = {k + 1, (k + 1) * 4u, sizeof(uint32_t)};
    }
    VkSpecializationInfo spec_info = {};
    spec_info.mapEntryCount = spec_count + 1;
    spec_info.pMapEntries = spec_entries.data();
    spec_info.dataSize = spec_data.size() * sizeof(uint32_t);
    spec_info.pData = spec_data.data();
    pipeline_info.stage.pSpecializationInfo = &spec_info;
    VkResult result = vk.vkCreateComputePipelines(handle, device->pipeline_cache(), 1,
                                                  &pipeline_info, nullptr, &pipeline.pipeline);
    if (result != VK_SUCCESS) {
      pipeline.pipeline = VK_NULL_HANDLE;
#if KILN_STATUS_MESSAGES
      return VkResultToStatus(
          result, ("vkCreateComputePipelines(entry point '" + entry.name + "')").c_str());
#else
      return VkResultToStatus(result, nullptr);
#endif
    }
  }
  return ref;
}

VulkanExecutable::~VulkanExecutable() {
  if (!device_) return;
  const VulkanDeviceSyms& vk = device_->syms();
  VkDevice handle = device_->handle();
  for (Pipeline& pipeline : pipelines_) {
    if (pipeline.pipeline) vk.vkDestroyPipeline(handle, pipeline.pipeline, nullptr);
    if (pipeline.layout) vk.vkDestroyPipelineLayout(handle, pipeline.layout, nullptr);
    if (pipeline.set_layout) vk.vkDestroyDescriptorSetLayout(handle, pipeline.set_layout, nullptr);
  }
  if (module_) vk.vkDestroyShaderModule(handle, module_, nullptr);
  device_->Release();
}

}  // namespace kiln::hal::vulkan
