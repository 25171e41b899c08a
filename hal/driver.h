// HAL driver registry: create devices by driver name.
//
// Drivers compiled into this build: "vulkan". Driver names are matched
// case-insensitively ("Vulkan" works). A future "cpu" driver registers
// here too; the conformance suite (hal/cts) runs against every name
// AvailableDrivers() returns.
#ifndef KILN_HAL_DRIVER_H_
#define KILN_HAL_DRIVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "hal/api.h"

namespace kiln::hal {

// Names of the drivers compiled into this build, e.g. {"vulkan"}.
std::vector<std::string> AvailableDrivers();

// Device names of `driver` in enumeration order (DeviceOptions::index indexes
// this list). Errors: kNotFound for an unknown driver; driver errors (e.g. no
// Vulkan loader: kUnimplemented). Cost: creates a temporary instance (ms).
StatusOr<std::vector<std::string>> EnumerateDevices(std::string_view driver);

// What a driver reports about one device (kiln_enumerate_devices).
struct DeviceDescription {
  HostString name;              // e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  // 0 other, 1 integrated GPU, 2 discrete GPU, 3 virtual GPU, 4 CPU (the
  // numbering of VkPhysicalDeviceType and kiln_device_type_t).
  uint32_t type = 0;
  uint32_t vendor_id = 0;       // PCI vendor id (0x10de NVIDIA, 0x5143 Qualcomm, ...)
  uint32_t device_id = 0;
  uint32_t driver_version = 0;  // vendor-encoded
  uint32_t api_version = 0;     // Vulkan version the device supports (VK_MAKE_API_VERSION)
};

// Descriptions of the devices of `driver`, in the order of EnumerateDevices.
// Errors and cost: as EnumerateDevices.
StatusOr<HostVector<DeviceDescription>> DescribeDevices(std::string_view driver);

// Creates a device of `driver` ("vulkan") selected by `options` (see
// DeviceOptions). Errors: kNotFound for an unknown driver or when no device
// matches the name/index (the message lists the available devices);
// kNotFound when validation is requested but the layer is missing;
// kUnimplemented when the device lacks required features.
// Ownership: the caller owns the returned reference.
StatusOr<Ref<Device>> CreateDevice(std::string_view driver, const DeviceOptions& options);

// Validation-layer messages (warning or error severity) received so far by
// all drivers in this process. Process-global (not per device), thread-safe;
// tests assert it is 0 when they finish.
uint64_t ValidationMessageCount();

}  // namespace kiln::hal

#endif  // KILN_HAL_DRIVER_H_
