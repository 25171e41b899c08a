// Vulkan HAL driver entry points: device enumeration and creation.
//
// Most code should go through hal/driver.h (CreateDevice("vulkan", ...)).
#ifndef KILN_HAL_VULKAN_VULKAN_DRIVER_H_
#define KILN_HAL_VULKAN_VULKAN_DRIVER_H_

#include <string>
#include <vector>

#include "hal/api.h"
#include "hal/driver.h"
#include "hal/vulkan/vulkan_instance.h"  // ValidationMessageCount()

namespace kiln::hal::vulkan {

// Names (VkPhysicalDeviceProperties::deviceName) of the Vulkan physical
// devices in enumeration order; DeviceOptions::index indexes this list.
// Creates and destroys a temporary VkInstance (validation per
// KILN_VALIDATION). Errors: as VulkanInstance::Create. Cost: milliseconds.
StatusOr<std::vector<std::string>> EnumerateDevices();

// Name, type, vendor/device ids, driver and API versions of every physical
// device, in EnumerateDevices order. Errors and cost: as EnumerateDevices.
StatusOr<HostVector<DeviceDescription>> DescribeDevices();

// Creates a device: by case-insensitive substring of the name when
// options.name is non-empty, else by options.index when >= 0, else the first
// device. Validation is on when options.validation or KILN_VALIDATION=1.
// Errors: kNotFound when no device matches (the message lists the available
// names) or validation is requested without the layer; kUnimplemented when the
// device lacks Vulkan 1.2 / timeline semaphores; VkResult errors otherwise.
// Ownership: the caller owns the returned reference; the device keeps its
// VkInstance alive. Cost: tens of milliseconds (more with validation).
StatusOr<Ref<Device>> CreateDevice(const DeviceOptions& options);

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_DRIVER_H_
