#include "hal/vulkan/vulkan_status.h"

#include <cstdio>
#include <string>

namespace kiln::hal::vulkan {

const char* VkResultName(VkResult result) {
  switch (result) {
#define KILN_VK_CASE(x) \
  case x:               \
    return #x;
    KILN_VK_CASE(VK_SUCCESS)
    KILN_VK_CASE(VK_NOT_READY)
    KILN_VK_CASE(VK_TIMEOUT)
    KILN_VK_CASE(VK_EVENT_SET)
    KILN_VK_CASE(VK_EVENT_RESET)
    KILN_VK_CASE(VK_INCOMPLETE)
    KILN_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_CASE(VK_ERROR_DEVICE_LOST)
    KILN_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    KILN_VK_CASE(VK_ERROR_UNKNOWN)
    KILN_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VK_CASE(VK_ERROR_FRAGMENTATION)
    KILN_VK_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    KILN_VK_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    KILN_VK_CASE(VK_ERROR_SURFACE_LOST_KHR)
    KILN_VK_CASE(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    KILN_VK_CASE(VK_SUBOPTIMAL_KHR)
    KILN_VK_CASE(VK_ERROR_OUT_OF_DATE_KHR)
    KILN_VK_CASE(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    KILN_VK_CASE(VK_ERROR_VALIDATION_FAILED_EXT)
    KILN_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
    KILN_VK_CASE(VK_ERROR_NOT_PERMITTED_KHR)
#undef KILN_VK_CASE
    default:
      break;
  }
  static char unknown[32];
  std::snprintf(unknown, sizeof(unknown), "VK_RESULT_%d", static_cast<int>(result));
  return unknown;
}

StatusCode VkResultCode(VkResult result) {
  switch (result) {
    case VK_SUCCESS:
      return StatusCode::kOk;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return StatusCode::kResourceExhausted;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
      return StatusCode::kNotFound;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return StatusCode::kUnimplemented;
    case VK_TIMEOUT:
    case VK_NOT_READY:
      return StatusCode::kFailedPrecondition;
    default:
      return StatusCode::kInternal;
  }
}

Status VkResultToStatus(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return OkStatus();
  return Status(VkResultCode(result),
                std::string(what ? what : "vulkan") + ": " + VkResultName(result));
}

}  // namespace kiln::hal::vulkan
