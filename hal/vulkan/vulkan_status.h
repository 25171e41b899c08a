// VkResult -> kiln::Status mapping for the Vulkan HAL driver.
//
// Every Vulkan error surfaces as a Status whose message names the failing
// call and the VkResult, e.g. "vkAllocateMemory(65536 bytes): VK_ERROR_OUT_OF_DEVICE_MEMORY".
// Allocation failures (VK_ERROR_OUT_OF_{HOST,DEVICE,POOL}_MEMORY,
// VK_ERROR_FRAGMENTED_POOL) map to kResourceExhausted.
#ifndef KILN_HAL_VULKAN_VULKAN_STATUS_H_
#define KILN_HAL_VULKAN_VULKAN_STATUS_H_

#include "hal/vulkan/vulkan_symbols.h"

#include "base/status.h"

namespace kiln::hal::vulkan {

// "VK_ERROR_DEVICE_LOST", ...; never null. Unknown values give "VK_RESULT_<n>"
// from a static buffer (not thread-safe for unknown values only).
const char* VkResultName(VkResult result);

// The StatusCode a failing VkResult maps to (kOk for VK_SUCCESS).
StatusCode VkResultCode(VkResult result);

// OK for VK_SUCCESS, otherwise "<what>: <VK_RESULT_NAME>" with VkResultCode().
Status VkResultToStatus(VkResult result, const char* what);

}  // namespace kiln::hal::vulkan

// Returns a Status from the enclosing function when `expr` (a VkResult) is
// not VK_SUCCESS. `what` names the call for the message.
#define KILN_VK_RETURN_IF_ERROR(expr, what)                                   \
  do {                                                                        \
    VkResult _kiln_vk_result = (expr);                                        \
    if (_kiln_vk_result != VK_SUCCESS)                                        \
      return ::kiln::hal::vulkan::VkResultToStatus(_kiln_vk_result, (what));  \
  } while (0)

#endif  // KILN_HAL_VULKAN_VULKAN_STATUS_H_
