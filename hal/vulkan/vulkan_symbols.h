// Vulkan dispatch tables: every Vulkan entry point Kiln calls, loaded at run
// time into structs (never into global `vk*` symbols).
//
// Why: a global function pointer named like a Vulkan command (what volk.c
// defines, 578 of them) collides with libvulkan's own symbols in an app that
// links both: the app's `vkEnumerateInstanceVersion()` call then jumps into a
// data pointer. Here the loader (libvulkan.so.1, dlopen'ed once per process)
// is reached only through vkGetInstanceProcAddr; instance-level functions sit
// in a VulkanInstanceSyms per VkInstance and device-level functions in a
// VulkanDeviceSyms per VkDevice (fetched with vkGetDeviceProcAddr, which
// also skips the loader's dispatch trampoline). The design follows IREE's
// DynamicSymbols (iree/hal/drivers/vulkan/dynamic_symbols.h); the list of
// functions is vulkan_symbols.def.
//
// Threading: LoadVulkanLoader() is thread-safe (initialized once); the
// tables are immutable after loading.
#ifndef KILN_HAL_VULKAN_VULKAN_SYMBOLS_H_
#define KILN_HAL_VULKAN_VULKAN_SYMBOLS_H_

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "base/status.h"

namespace kiln::hal::vulkan {

#define KILN_VK_PFN(name) PFN_##name name = nullptr;

// Loader-level functions (plus vkGetInstanceProcAddr itself).
struct VulkanLoaderSyms {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define KILN_VK_GLOBAL KILN_VK_PFN
#include "hal/vulkan/vulkan_symbols.def"
};

// Instance-level functions of one VkInstance.
struct VulkanInstanceSyms {
#define KILN_VK_INSTANCE KILN_VK_PFN
#include "hal/vulkan/vulkan_symbols.def"
};

// Device-level functions of one VkDevice.
struct VulkanDeviceSyms {
#define KILN_VK_DEVICE KILN_VK_PFN
#include "hal/vulkan/vulkan_symbols.def"
};

#undef KILN_VK_PFN

// Opens the Vulkan loader (libvulkan.so.1, else libvulkan.so; once per
// process, never closed) and resolves the loader-level functions.
// Errors: kUnimplemented when no loader is found or it lacks a required
// function (the message names it). Thread-safe; the result is process-wide.
StatusOr<const VulkanLoaderSyms*> LoadVulkanLoader();

// Loader API version: vkEnumerateInstanceVersion, or 1.0 without it.
uint32_t VulkanLoaderVersion(const VulkanLoaderSyms& loader);

// Resolves the instance-level functions of `instance` into *out.
// Errors: kUnimplemented naming the first missing required function.
Status LoadVulkanInstanceSyms(const VulkanLoaderSyms& loader, VkInstance instance,
                              VulkanInstanceSyms* out);

// Resolves the device-level functions of `device` into *out.
// Errors: kUnimplemented naming the first missing required function.
Status LoadVulkanDeviceSyms(const VulkanInstanceSyms& instance_syms, VkDevice device,
                            VulkanDeviceSyms* out);

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_SYMBOLS_H_
