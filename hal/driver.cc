#include "hal/driver.h"

#include "hal/vulkan/vulkan_driver.h"

namespace kiln::hal {
namespace {

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
  if (driver == "vulkan") return vulkan::EnumerateDevices();
  return UnknownDriver(driver);
}

StatusOr<Ref<Device>> CreateDevice(const std::string& driver, const DeviceOptions& options) {
  if (driver == "vulkan") return vulkan::CreateDevice(options);
  return UnknownDriver(driver);
}

uint64_t ValidationMessageCount() { return vulkan::ValidationMessageCount(); }

}  // namespace kiln::hal
