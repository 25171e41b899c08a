// VulkanInstance: one VkInstance (+ optional validation messenger), shared by
// the devices created from it.
//
// Ownership: a RefObject. Every VulkanDevice retains the instance it was
// created from, so the VkInstance is destroyed after its last device.
// Threading: Create() may be called from any thread (the loader is opened
// once per process); an instance is immutable after creation.
//
// Dispatch: instance-level Vulkan functions are called through syms() (see
// vulkan_symbols.h: no global vk* symbols).
//
// Validation: when requested (DeviceOptions.validation or env
// KILN_VALIDATION=1) the instance enables VK_LAYER_KHRONOS_validation with
// VkValidationFeaturesEXT{SYNCHRONIZATION_VALIDATION} and a VK_EXT_debug_utils
// messenger. Every warning or error message is printed to stderr as
// "kiln: vulkan validation: <severity>: <message>" and counted in one
// process-global counter (ValidationMessageCount()).
#ifndef KILN_HAL_VULKAN_VULKAN_INSTANCE_H_
#define KILN_HAL_VULKAN_VULKAN_INSTANCE_H_


#include <cstdint>
#include <vector>

#include "base/ref.h"
#include "base/status.h"
#include "hal/vulkan/vulkan_symbols.h"

namespace kiln::hal::vulkan {

// Number of validation messages (warning or error severity, any type) that
// any Kiln Vulkan instance in this process has received since process start
// (or since the last ResetValidationMessageCountForTesting()). Process-global,
// thread-safe, cost: one atomic load.
uint64_t ValidationMessageCount();

// Sets the counter back to zero. Only for tests that provoke messages on
// purpose (e.g. to prove synchronization validation is live).
void ResetValidationMessageCountForTesting();

// True when env KILN_VALIDATION is set to a value other than "" or "0".
bool ValidationRequestedByEnvironment();

class VulkanInstance : public RefObject {
 public:
  // Opens the Vulkan loader (once per process) and creates a
  // VkInstance with API version min(loader, 1.3).
  // Errors: kUnimplemented if no Vulkan loader or loader < 1.2; kNotFound if
  // validation is requested but VK_LAYER_KHRONOS_validation or
  // VK_EXT_debug_utils is missing; VkResult errors from vkCreateInstance.
  // Cost: milliseconds (tens with the validation layer).
  static StatusOr<Ref<VulkanInstance>> Create(bool validation);

  VkInstance handle() const { return instance_; }
  // Instance-level functions of this instance.
  const VulkanInstanceSyms& syms() const { return syms_; }
  // The apiVersion the instance was created with (>= VK_API_VERSION_1_2).
  uint32_t api_version() const { return api_version_; }
  bool validation() const { return validation_; }

  // Physical devices in the loader's enumeration order.
  StatusOr<HostVector<VkPhysicalDevice>> EnumeratePhysicalDevices() const;

 private:
  VulkanInstance() = default;
  ~VulkanInstance() override;

  VkInstance instance_ = VK_NULL_HANDLE;
  VulkanInstanceSyms syms_;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t api_version_ = 0;
  bool validation_ = false;
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_INSTANCE_H_
