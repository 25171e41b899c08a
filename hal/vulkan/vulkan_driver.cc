#include "hal/vulkan/vulkan_driver.h"

#include <cctype>

#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

// Whether `text` contains `fragment`, ignoring ASCII case.
bool ContainsNoCase(std::string_view text, std::string_view fragment) {
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  for (size_t i = 0; i + fragment.size() <= text.size(); ++i) {
    size_t k = 0;
    while (k < fragment.size() && lower(text[i + k]) == lower(fragment[k])) ++k;
    if (k == fragment.size()) return true;
  }
  return false;
}

std::string DeviceName(const VulkanInstance& instance, VkPhysicalDevice device) {
  VkPhysicalDeviceProperties properties = {};
  instance.syms().vkGetPhysicalDeviceProperties(device, &properties);
  return properties.deviceName;
}

std::string JoinNames(const VulkanInstance& instance,
                      const HostVector<VkPhysicalDevice>& devices) {
  std::string names;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (i) names += ", ";
    names += "'" + DeviceName(instance, devices[i]) + "'";
  }
  return names.empty() ? "none" : names;
}

}  // namespace

StatusOr<std::vector<std::string>> EnumerateDevices() {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanInstance> instance,
                        VulkanInstance::Create(ValidationRequestedByEnvironment()));
  KILN_ASSIGN_OR_RETURN(HostVector<VkPhysicalDevice> devices,
                        instance->EnumeratePhysicalDevices());
  std::vector<std::string> names;
  names.reserve(devices.size());
  for (VkPhysicalDevice device : devices) names.push_back(DeviceName(*instance, device));
  return names;
}

StatusOr<HostVector<DeviceDescription>> DescribeDevices() {
  KILN_ASSIGN_OR_RETURN(Ref<VulkanInstance> instance,
                        VulkanInstance::Create(ValidationRequestedByEnvironment()));
  KILN_ASSIGN_OR_RETURN(HostVector<VkPhysicalDevice> devices,
                        instance->EnumeratePhysicalDevices());
  HostVector<DeviceDescription> out;
  out.reserve(devices.size());
  for (VkPhysicalDevice device : devices) {
    VkPhysicalDeviceProperties p = {};
    instance->syms().vkGetPhysicalDeviceProperties(device, &p);
    DeviceDescription d;
    d.name = p.deviceName;
    d.type = static_cast<uint32_t>(p.deviceType) <= 4 ? static_cast<uint32_t>(p.deviceType) : 0;
    d.vendor_id = p.vendorID;
    d.device_id = p.deviceID;
    d.driver_version = p.driverVersion;
    d.api_version = p.apiVersion;
    out.push_back(std::move(d));
  }
  return out;
}

StatusOr<Ref<Device>> CreateDevice(const DeviceOptions& options) {
  const bool validation = options.validation || ValidationRequestedByEnvironment();
  KILN_ASSIGN_OR_RETURN(Ref<VulkanInstance> instance, VulkanInstance::Create(validation));
  KILN_ASSIGN_OR_RETURN(HostVector<VkPhysicalDevice> devices,
                        instance->EnumeratePhysicalDevices());
  if (devices.empty()) {
    return NotFoundError("no Vulkan devices found (check the ICD: VK_DRIVER_FILES)");
  }
  VkPhysicalDevice selected = VK_NULL_HANDLE;
  if (!options.name.empty()) {
    for (VkPhysicalDevice device : devices) {
      VkPhysicalDeviceProperties properties = {};
      instance->syms().vkGetPhysicalDeviceProperties(device, &properties);
      if (ContainsNoCase(properties.deviceName, options.name)) {
        selected = device;
        break;
      }
    }
    if (selected == VK_NULL_HANDLE) {
      return NotFoundError("no Vulkan device name contains '%s' (available: %s)",
                           options.name.c_str(),
                           KILN_STATUS_TEXT(JoinNames(*instance, devices).c_str()));
    }
  } else if (options.index >= 0) {
    if (static_cast<size_t>(options.index) >= devices.size()) {
      return NotFoundError("Vulkan device index %d out of range (%zu devices: %s)", options.index,
                           devices.size(),
                           KILN_STATUS_TEXT(JoinNames(*instance, devices).c_str()));
    }
    selected = devices[static_cast<size_t>(options.index)];
  } else {
    selected = devices[0];
  }
  KILN_ASSIGN_OR_RETURN(Ref<VulkanDevice> device,
                        VulkanDevice::Create(std::move(instance), selected));
  return Ref<Device>(std::move(device));
}

}  // namespace kiln::hal::vulkan
