#include "hal/driver.h"

#include <cctype>

#include "hal/vulkan/vulkan_driver.h"

namespace kiln::hal {
namespace {

bool IsVulkan(const std::string& driver) {
  static const char kName[] = "vulkan";
  if (driver.size() != sizeof(kName) - 1) return false;
  for (size_t i = 0; i < driver.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(driver[i])) != kName[i]) return false;
  }
  return true;
}

Status UnknownDriver(const std::string& driver) {
  std::string available;
  for (const std::string& name : AvailableDrivers()) {
    if (!available.empty()) available += ", ";
    available += name;
  }
  return NotFoundError("unknown HAL driver '%s' (available: %s)", driver.c_str(),
                       available.c_str());
}

}  // namespace

std::vector<std::string> AvailableDrivers() { return {"vulkan"}; }

StatusOr<std::vector<std::string>> EnumerateDevices(const std::string& driver) {
  if (IsVulkan(driver)) return vulkan::EnumerateDevices();
  return UnknownDriver(driver);
}

StatusOr<std::vector<DeviceDescription>> DescribeDevices(const std::string& driver) {
  if (IsVulkan(driver)) return vulkan::DescribeDevices();
  return UnknownDriver(driver);
}

StatusOr<Ref<Device>> CreateDevice(const std::string& driver, const DeviceOptions& options) {
  if (IsVulkan(driver)) return vulkan::CreateDevice(options);
  return UnknownDriver(driver);
}

uint64_t ValidationMessageCount() { return vulkan::ValidationMessageCount(); }

}  // namespace kiln::hal
