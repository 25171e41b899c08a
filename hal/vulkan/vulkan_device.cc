#include "hal/vulkan/vulkan_device.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "hal/command_checks.h"
#include "hal/vulkan/vulkan_buffer.h"
#include "hal/vulkan/vulkan_command_buffer.h"
#include "hal/vulkan/vulkan_executable.h"
#include "hal/vulkan/vulkan_query_pool.h"
#include "hal/vulkan/vulkan_semaphore.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

bool EnvFlag(const char* name) {
  const char* value = std::getenv(name);
  return value && value[0] != '\0' && std::strcmp(value, "0") != 0;
}

bool HasExtension(const HostVector<VkExtensionProperties>& extensions, const char* name) {
  for (const auto& extension : extensions) {
    if (std::strcmp(extension.extensionName, name) == 0) return true;
  }
  return false;
}

// True if comma-separated `list` holds `name`. Not inlined: one copy for
// every feature below.
__attribute__((noinline)) bool ListHas(const char* list, const char* name) {
  const size_t n = std::strlen(name);
  for (const char* p = list; (p = std::strstr(p, name)) != nullptr; p += n) {
    if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ',')) return true;
  }
  return false;
}

}  // namespace

StatusOr<Ref<VulkanDevice>> VulkanDevice::Create(Ref<VulkanInstance> instance,
                                                 VkPhysicalDevice physical_device) {
  VulkanDevice* device = new (std::nothrow) VulkanDevice();
  if (!device) return ResourceExhaustedError("out of host memory creating VulkanDevice");
  Ref<VulkanDevice> ref = Ref<VulkanDevice>::Adopt(device);
  KILN_RETURN_IF_ERROR(device->Initialize(std::move(instance), physical_device));
  return ref;
}

Status VulkanDevice::Initialize(Ref<VulkanInstance> instance,
                                VkPhysicalDevice physical_device) {
  instance_ = std::move(instance);
  physical_device_ = physical_device;

  // --- properties ------------------------------------------------------------
  VkPhysicalDeviceProperties properties = {};
  instance_->syms().vkGetPhysicalDeviceProperties(physical_device, &properties);
  uint32_t api_version = properties.apiVersion < instance_->api_version()
                             ? properties.apiVersion
                             : instance_->api_version();
  if (api_version < VK_API_VERSION_1_2) {
    return UnimplementedError(
        "Vulkan device '%s' supports Vulkan %u.%u; Kiln needs 1.2 (timeline semaphores)",
        properties.deviceName, VK_API_VERSION_MAJOR(properties.apiVersion),
        VK_API_VERSION_MINOR(properties.apiVersion));
  }
  const bool vulkan13 = api_version >= VK_API_VERSION_1_3;
  exact_fma_ = properties.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  if (const char* f = std::getenv("KILN_EXACT_FMA"); f && f[0] != '\0') exact_fma_ = std::strcmp(f, "0") != 0;

  uint32_t extension_count = 0;
  KILN_VK_RETURN_IF_ERROR(
      instance_->syms().vkEnumerateDeviceExtensionProperties(physical_device, nullptr, &extension_count, nullptr),
      "vkEnumerateDeviceExtensionProperties");
  HostVector<VkExtensionProperties> extensions(extension_count);
  VkResult result = instance_->syms().vkEnumerateDeviceExtensionProperties(physical_device, nullptr,
                                                         &extension_count, extensions.data());
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    return VkResultToStatus(result, "vkEnumerateDeviceExtensionProperties");
  }
  extensions.resize(extension_count);
  const bool has_push_descriptor =
      HasExtension(extensions, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) &&
      !EnvFlag("KILN_VULKAN_DISABLE_PUSH_DESCRIPTOR");

  VkPhysicalDevicePushDescriptorPropertiesKHR push_properties = {};
  push_properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR;
  VkPhysicalDeviceMaintenance3Properties maintenance3 = {};
  maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
  if (has_push_descriptor) maintenance3.pNext = &push_properties;
  VkPhysicalDeviceProperties2 properties2 = {};
  properties2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  properties2.pNext = &maintenance3;
  instance_->syms().vkGetPhysicalDeviceProperties2(physical_device, &properties2);
  limits_ = properties.limits;
  max_memory_allocation_size_ = maintenance3.maxMemoryAllocationSize;
  instance_->syms().vkGetPhysicalDeviceMemoryProperties(physical_device, &memory_properties_);

  // --- features --------------------------------------------------------------
  VkPhysicalDeviceVulkan13Features supported13 = {};
  supported13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
  VkPhysicalDeviceVulkan12Features supported12 = {};
  supported12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  supported12.pNext = vulkan13 ? &supported13 : nullptr;
  VkPhysicalDeviceVulkan11Features supported11 = {};
  supported11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  supported11.pNext = &supported12;
  VkPhysicalDeviceFeatures2 supported = {};
  supported.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  supported.pNext = &supported11;
  instance_->syms().vkGetPhysicalDeviceFeatures2(physical_device, &supported);
  if (!supported12.timelineSemaphore) {
    return UnimplementedError("Vulkan device '%s' lacks timelineSemaphore (required)",
                              properties.deviceName);
  }

  HostVector<HostString> features;
  VkPhysicalDeviceVulkan13Features enable13 = {};
  enable13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
  VkPhysicalDeviceVulkan12Features enable12 = {};
  enable12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  enable12.pNext = vulkan13 ? &enable13 : nullptr;
  VkPhysicalDeviceVulkan11Features enable11 = {};
  enable11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  enable11.pNext = &enable12;
  VkPhysicalDeviceFeatures2 enable = {};
  enable.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  enable.pNext = &enable11;

  enable12.timelineSemaphore = VK_TRUE;
  features.push_back("timelineSemaphore");
  // KILN_VULKAN_DISABLE_FEATURES=shaderFloat16,storageBuffer16BitAccess,...
  // leaves the named optional features off, as on a device without them
  // (tests of the load-time feature check, vulkan_executable.cc).
  const char* disabled = std::getenv("KILN_VULKAN_DISABLE_FEATURES");
  auto allowed = [disabled](const char* name) { return !disabled || !ListHas(disabled, name); };
#define KILN_ENABLE_IF(dst, src, field, bit) \
  if (src.field && allowed(#field)) {        \
    dst.field = VK_TRUE;                     \
    features.push_back(#field);              \
    enabled_features_ |= bit;                \
  }
  // Out-of-bounds buffer accesses stay inside the bound range (docs/security.md):
  // on wherever the device has it, so a module's shader cannot reach memory
  // outside its bindings (KILN_VULKAN_DISABLE_FEATURES=robustBufferAccess
  // turns it off, for measuring its cost only).
  KILN_ENABLE_IF(enable.features, supported.features, robustBufferAccess, 0)
  KILN_ENABLE_IF(enable.features, supported.features, shaderInt64, kFeatureShaderInt64)
  KILN_ENABLE_IF(enable.features, supported.features, shaderFloat64, kFeatureShaderFloat64)
  {
    const bool f64 = enabled_features_ & kFeatureShaderFloat64;
    const char* f = std::getenv("KILN_EXACT_FMA");
    exact_fma_body_ = !f64 || (f && std::strcmp(f, "f32") == 0) ? ExactFmaBody::kFloat32
                      : f && std::strcmp(f, "exact") == 0       ? ExactFmaBody::kFloat64Exact
                                                                : ExactFmaBody::kFloat64;
  }
  KILN_ENABLE_IF(enable.features, supported.features, shaderInt16, kFeatureShaderInt16)
  KILN_ENABLE_IF(enable11, supported11, storageBuffer16BitAccess, kFeatureStorageBuffer16BitAccess)
  KILN_ENABLE_IF(enable12, supported12, storageBuffer8BitAccess, kFeatureStorageBuffer8BitAccess)
  KILN_ENABLE_IF(enable12, supported12, shaderFloat16, kFeatureShaderFloat16)
  KILN_ENABLE_IF(enable12, supported12, shaderInt8, kFeatureShaderInt8)
  if (vulkan13) {
    KILN_ENABLE_IF(enable13, supported13, synchronization2, 0)
  }
#undef KILN_ENABLE_IF

  HostVector<const char*> enabled_extensions;
  if (has_push_descriptor) {
    enabled_extensions.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    features.push_back("push_descriptor");
  }
  if (HasExtension(extensions, "VK_KHR_portability_subset")) {
    enabled_extensions.push_back("VK_KHR_portability_subset");  // required when present
  }
  if (instance_->validation()) features.push_back("validation");

  // --- queue -----------------------------------------------------------------
  uint32_t family_count = 0;
  instance_->syms().vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, nullptr);
  HostVector<VkQueueFamilyProperties> families(family_count);
  instance_->syms().vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count, families.data());
  bool found_queue = false;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT && families[i].queueCount > 0) {
      queue_family_ = i;
      found_queue = true;
      break;
    }
  }
  if (!found_queue) {
    return UnimplementedError("Vulkan device '%s' has no compute queue", properties.deviceName);
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info = {};
  queue_info.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  queue_info.queueFamilyIndex = queue_family_;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;

  VkDeviceCreateInfo device_info = {};
  device_info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  device_info.pNext = &enable;
  device_info.queueCreateInfoCount = 1;
  device_info.pQueueCreateInfos = &queue_info;
  device_info.enabledExtensionCount = static_cast<uint32_t>(enabled_extensions.size());
  device_info.ppEnabledExtensionNames = enabled_extensions.data();
  KILN_VK_RETURN_IF_ERROR(instance_->syms().vkCreateDevice(physical_device, &device_info, nullptr, &device_),
                          "vkCreateDevice");
  {
    Status loaded = LoadVulkanDeviceSyms(instance_->syms(), device_, &syms_);
    if (!loaded.ok()) {
      if (syms_.vkDestroyDevice) syms_.vkDestroyDevice(device_, nullptr);
      device_ = VK_NULL_HANDLE;
      return loaded;
    }
  }
  syms_.vkGetDeviceQueue(device_, queue_family_, 0, &queue_);

  VkCommandPoolCreateInfo pool_info = {};
  pool_info.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool_info.queueFamilyIndex = queue_family_;
  KILN_VK_RETURN_IF_ERROR(syms_.vkCreateCommandPool(device_, &pool_info, nullptr, &command_pool_),
                          "vkCreateCommandPool");

  VkPipelineCacheCreateInfo cache_info = {};
  cache_info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
  KILN_VK_RETURN_IF_ERROR(
      syms_.vkCreatePipelineCache(device_, &cache_info, nullptr, &pipeline_cache_),
      "vkCreatePipelineCache");

  VkSemaphoreTypeCreateInfo type_info = {};
  type_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO;
  type_info.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type_info.initialValue = 0;
  VkSemaphoreCreateInfo semaphore_info = {};
  semaphore_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO;
  semaphore_info.pNext = &type_info;
  KILN_VK_RETURN_IF_ERROR(
      syms_.vkCreateSemaphore(device_, &semaphore_info, nullptr, &submission_semaphore_),
      "vkCreateSemaphore(internal timeline)");

  push_descriptors_ = has_push_descriptor;
  max_push_descriptors_ = has_push_descriptor ? push_properties.maxPushDescriptors : 0;

  // --- info ------------------------------------------------------------------
  info_.name = properties.deviceName;
  info_.driver = "vulkan";
  bool any_device_local = false;
  bool unified = true;
  for (uint32_t i = 0; i < memory_properties_.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = memory_properties_.memoryTypes[i].propertyFlags;
    if (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) {
      any_device_local = true;
      if (!(flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) unified = false;
    }
  }
  unmapped_device_local_ = EnvFlag("KILN_VULKAN_UNMAPPED_DEVICE_LOCAL");
  info_.unified_memory = any_device_local && unified && !unmapped_device_local_;
  info_.max_storage_buffer_range = limits_.maxStorageBufferRange;
  info_.min_storage_buffer_offset_alignment =
      static_cast<uint32_t>(limits_.minStorageBufferOffsetAlignment);
  info_.max_push_constants_size = limits_.maxPushConstantsSize;
  info_.max_bound_storage_buffers = limits_.maxPerStageDescriptorStorageBuffers;
  info_.max_bound_texel_buffers = limits_.maxPerStageDescriptorSampledImages;
  info_.min_texel_buffer_offset_alignment =
      static_cast<uint32_t>(limits_.minTexelBufferOffsetAlignment);
  info_.max_texel_buffer_elements = limits_.maxTexelBufferElements;
  info_.max_compute_workgroup_invocations = limits_.maxComputeWorkGroupInvocations;
  for (int i = 0; i < 3; ++i) {
    info_.max_compute_workgroup_size[i] = limits_.maxComputeWorkGroupSize[i];
    info_.max_compute_workgroup_count[i] = limits_.maxComputeWorkGroupCount[i];
  }
  info_.features = std::move(features);
  // Timestamps: valid bits of the chosen queue family (0: none), and the
  // tick length (timestampComputeAndGraphics guarantees every family but is
  // not required: the family's own count decides).
  info_.timestamp_valid_bits = families[queue_family_].timestampValidBits;
  info_.timestamp_period_ns = limits_.timestampPeriod;

  // Scratch capacity for QueueExecute: typical submissions never reallocate.
  scratch_semaphores_.reserve(16);
  scratch_values_.reserve(16);
  scratch_stages_.reserve(16);
  return OkStatus();
}

VulkanDevice::~VulkanDevice() {
  if (device_ != VK_NULL_HANDLE) {
    syms_.vkDeviceWaitIdle(device_);
    if (submission_semaphore_ != VK_NULL_HANDLE) {
      syms_.vkDestroySemaphore(device_, submission_semaphore_, nullptr);
    }
    if (pipeline_cache_ != VK_NULL_HANDLE) {
      syms_.vkDestroyPipelineCache(device_, pipeline_cache_, nullptr);
    }
    if (command_pool_ != VK_NULL_HANDLE) {
      syms_.vkDestroyCommandPool(device_, command_pool_, nullptr);
    }
    syms_.vkDestroyDevice(device_, nullptr);
  }
  // instance_ is released after the device is gone.
}

StatusOr<Ref<Buffer>> VulkanDevice::AllocateBuffer(uint64_t size, MemoryKind kind) {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanBuffer> buffer, VulkanBuffer::Allocate(this, size, kind));
  return Ref<Buffer>(std::move(buffer));
}

StatusOr<Ref<Buffer>> VulkanDevice::CreateSubspan(Buffer* parent, uint64_t offset,
                                                  uint64_t length) {
  if (!parent) return InvalidArgumentError("CreateSubspan: parent buffer is null");
  KILN_ASSIGN_OR_RETURN(
      Ref<VulkanBuffer> buffer,
      VulkanBuffer::CreateSubspan(static_cast<VulkanBuffer*>(parent), offset, length));
  return Ref<Buffer>(std::move(buffer));
}

StatusOr<Ref<Executable>> VulkanDevice::CreateExecutable(
    const uint32_t* spirv, size_t word_count, const HostVector<EntryPointInfo>& entry_points) {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanExecutable> executable,
                        VulkanExecutable::Create(this, spirv, word_count, entry_points));
  return Ref<Executable>(std::move(executable));
}

StatusOr<Ref<CommandBuffer>> VulkanDevice::CreateCommandBuffer() {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanCommandBuffer> command_buffer,
                        VulkanCommandBuffer::Create(this));
  return Ref<CommandBuffer>(std::move(command_buffer));
}

StatusOr<Ref<Semaphore>> VulkanDevice::CreateSemaphore(uint64_t initial_value) {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanSemaphore> semaphore,
                        VulkanSemaphore::Create(this, initial_value));
  return Ref<Semaphore>(std::move(semaphore));
}

StatusOr<bool> VulkanDevice::SubmissionRetired(uint64_t value) {
  if (value == 0) return true;
  uint64_t current = 0;
  KILN_VK_RETURN_IF_ERROR(
      syms_.vkGetSemaphoreCounterValue(device_, submission_semaphore_, &current),
      "vkGetSemaphoreCounterValue(internal timeline)");
  return current >= value;
}

Status VulkanDevice::WaitSubmission(uint64_t value, uint64_t timeout_ns) {
  if (value == 0) return OkStatus();
  VkSemaphoreWaitInfo wait_info = {};
  wait_info.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO;
  wait_info.semaphoreCount = 1;
  wait_info.pSemaphores = &submission_semaphore_;
  wait_info.pValues = &value;
  VkResult result = syms_.vkWaitSemaphores(device_, &wait_info, timeout_ns);
  if (result == VK_TIMEOUT) {
    return DeadlineExceededError("timeout: device submission %llu has not retired",
                                   static_cast<unsigned long long>(value));
  }
  KILN_VK_RETURN_IF_ERROR(result, "vkWaitSemaphores(internal timeline)");
  return OkStatus();
}

Status VulkanDevice::QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits,
                                  uint32_t wait_count, const SemaphorePoint* signals,
                                  uint32_t signal_count) {
  KILN_RETURN_IF_ERROR(CheckSubmission(waits, wait_count, signals, signal_count));
  VulkanCommandBuffer* vk_command_buffer = static_cast<VulkanCommandBuffer*>(command_buffer);
  if (vk_command_buffer) {
    KILN_RETURN_IF_ERROR(vk_command_buffer->CheckSubmittable());
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    KILN_RETURN_IF_ERROR(
        static_cast<VulkanSemaphore*>(signals[i].semaphore)->CheckSignalValue(signals[i].value));
  }

  // Layout of the scratch arrays: [waits..., signals..., internal timeline].
  scratch_semaphores_.clear();
  scratch_values_.clear();
  scratch_stages_.clear();
  for (uint32_t i = 0; i < wait_count; ++i) {
    scratch_semaphores_.push_back(static_cast<VulkanSemaphore*>(waits[i].semaphore)->handle());
    scratch_values_.push_back(waits[i].value);
    scratch_stages_.push_back(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    scratch_semaphores_.push_back(static_cast<VulkanSemaphore*>(signals[i].semaphore)->handle());
    scratch_values_.push_back(signals[i].value);
  }
  const uint64_t submission_value = submission_value_ + 1;
  scratch_semaphores_.push_back(submission_semaphore_);
  scratch_values_.push_back(submission_value);

  VkTimelineSemaphoreSubmitInfo timeline_info = {};
  timeline_info.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO;
  timeline_info.waitSemaphoreValueCount = wait_count;
  timeline_info.pWaitSemaphoreValues = scratch_values_.data();
  timeline_info.signalSemaphoreValueCount = signal_count + 1;
  timeline_info.pSignalSemaphoreValues = scratch_values_.data() + wait_count;

  VkCommandBuffer handle = vk_command_buffer ? vk_command_buffer->handle() : VK_NULL_HANDLE;
  VkSubmitInfo submit = {};
  submit.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  submit.pNext = &timeline_info;
  submit.waitSemaphoreCount = wait_count;
  submit.pWaitSemaphores = scratch_semaphores_.data();
  submit.pWaitDstStageMask = scratch_stages_.data();
  submit.commandBufferCount = vk_command_buffer ? 1 : 0;
  submit.pCommandBuffers = vk_command_buffer ? &handle : nullptr;
  submit.signalSemaphoreCount = signal_count + 1;
  submit.pSignalSemaphores = scratch_semaphores_.data() + wait_count;
  KILN_VK_RETURN_IF_ERROR(syms_.vkQueueSubmit(queue_, 1, &submit, VK_NULL_HANDLE),
                          "vkQueueSubmit");

  submission_value_ = submission_value;
  for (uint32_t i = 0; i < wait_count; ++i) {
    static_cast<VulkanSemaphore*>(waits[i].semaphore)->NoteQueueUse(submission_value);
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    VulkanSemaphore* semaphore = static_cast<VulkanSemaphore*>(signals[i].semaphore);
    semaphore->NoteSignal(signals[i].value, /*from_queue=*/true);
    semaphore->NoteQueueUse(submission_value);
  }
  if (vk_command_buffer) vk_command_buffer->NoteSubmitted(submission_value, signals, signal_count);
  ++stats_.submissions;
  return OkStatus();
}

Status VulkanDevice::WaitIdle(uint64_t timeout_ns) {
  // Bounded: every submission signals the internal timeline, so its last
  // value covers all of them.
  if (timeout_ns != UINT64_MAX) return WaitSubmission(submission_value_, timeout_ns);
  KILN_VK_RETURN_IF_ERROR(syms_.vkQueueWaitIdle(queue_), "vkQueueWaitIdle");
  return OkStatus();
}

}  // namespace kiln::hal::vulkan

namespace kiln::hal::vulkan {

StatusOr<Ref<QueryPool>> VulkanDevice::CreateTimestampQueryPool(uint32_t count) {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanQueryPool> pool, VulkanQueryPool::Create(this, count));
  return Ref<QueryPool>(std::move(pool));
}

}  // namespace kiln::hal::vulkan
