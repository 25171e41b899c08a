#include "hal/driver.h"

#include <cctype>

#include "hal/vulkan/vulkan_driver.h"

namespace kiln::hal {
namespace {

bool IsVulkan(std::string_view driver) {
  static const char kName[] = "vulkan";
  if (driver.size() != sizeof(kName) - 1) return false;
  for (size_t i = 0; i < driver.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(driver[i])) != kName[i]) return false;
  }
  return true;
}

Status UnknownDriver(std::string_view driver) {
  return NotFoundError("unknown HAL driver '%.*s' (available: vulkan)",
                       static_cast<int>(driver.size()), driver.data());
}

}  // namespace

std::vector<std::string> AvailableDrivers() { return {"vulkan"}; }

StatusOr<std::vector<std::string>> EnumerateDevices(std::string_view driver) {
  if (IsVulkan(driver)) return vulkan::EnumerateDevices();
  return UnknownDriver(driver);
}

StatusOr<HostVector<DeviceDescription>> DescribeDevices(std::string_view driver) {
  if (IsVulkan(driver)) return vulkan::DescribeDevices();
  return UnknownDriver(driver);
}

StatusOr<Ref<Device>> CreateDevice(std::string_view driver, const DeviceOptions& options) {
  if (IsVulkan(driver)) return vulkan::CreateDevice(options);
  return UnknownDriver(driver);
}

uint64_t ValidationMessageCount() { return vulkan::ValidationMessageCount(); }

}  // namespace kiln::hal
