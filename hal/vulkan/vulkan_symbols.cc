#include "hal/vulkan/vulkan_symbols.h"

#include <dlfcn.h>

namespace kiln::hal::vulkan {
namespace {

struct LoaderState {
  VulkanLoaderSyms syms;
  Status status;
};

// The loader's file names: Android ships only libvulkan.so (no SONAME
// version); desktop Linux's development-free name is libvulkan.so.1.
#if defined(__ANDROID__)
constexpr const char* kLoaderNames[] = {"libvulkan.so"};
constexpr const char* kLoaderName = "libvulkan.so";
#else
constexpr const char* kLoaderNames[] = {"libvulkan.so.1", "libvulkan.so"};
constexpr const char* kLoaderName = "libvulkan.so.1";
#endif

LoaderState* OpenLoader() {
  auto* state = new LoaderState();  // process lifetime, never freed
  void* library = nullptr;
  for (const char* name : kLoaderNames) {
    // RTLD_LOCAL: the loader's symbols stay out of the global namespace.
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library) break;
  }
  if (!library) {
    state->status = UnimplementedError("no Vulkan loader found (%s): %s", kLoaderName, dlerror());
    return state;
  }
  state->syms.vkGetInstanceProcAddr =
      reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(library, "vkGetInstanceProcAddr"));
  if (!state->syms.vkGetInstanceProcAddr) {
    state->status = UnimplementedError("the Vulkan loader lacks vkGetInstanceProcAddr");
    return state;
  }
  PFN_vkGetInstanceProcAddr gipa = state->syms.vkGetInstanceProcAddr;
#define KILN_VK_GLOBAL(name)                                                        \
  state->syms.name = reinterpret_cast<PFN_##name>(gipa(VK_NULL_HANDLE, #name));     \
  if (!state->syms.name && state->status.ok()) {                                    \
    state->status = UnimplementedError("the Vulkan loader lacks %s", #name);        \
  }
#define KILN_VK_GLOBAL_OPTIONAL(name) \
  state->syms.name = reinterpret_cast<PFN_##name>(gipa(VK_NULL_HANDLE, #name));
#define KILN_VK_INSTANCE(name)
#define KILN_VK_INSTANCE_OPTIONAL(name)
#define KILN_VK_DEVICE(name)
#define KILN_VK_DEVICE_OPTIONAL(name)
#include "hal/vulkan/vulkan_symbols.def"
#undef KILN_VK_GLOBAL
#undef KILN_VK_GLOBAL_OPTIONAL
#undef KILN_VK_INSTANCE
#undef KILN_VK_INSTANCE_OPTIONAL
#undef KILN_VK_DEVICE
#undef KILN_VK_DEVICE_OPTIONAL
  return state;
}

}  // namespace

StatusOr<const VulkanLoaderSyms*> LoadVulkanLoader() {
  static LoaderState* state = OpenLoader();  // thread-safe static init
  if (!state->status.ok()) return state->status;
  return &state->syms;
}

uint32_t VulkanLoaderVersion(const VulkanLoaderSyms& loader) {
  uint32_t version = VK_API_VERSION_1_0;
  if (loader.vkEnumerateInstanceVersion &&
      loader.vkEnumerateInstanceVersion(&version) != VK_SUCCESS) {
    version = VK_API_VERSION_1_0;
  }
  return version;
}

Status LoadVulkanInstanceSyms(const VulkanLoaderSyms& loader, VkInstance instance,
                              VulkanInstanceSyms* out) {
  *out = VulkanInstanceSyms();
  PFN_vkGetInstanceProcAddr gipa = loader.vkGetInstanceProcAddr;
#define KILN_VK_GLOBAL(name)
#define KILN_VK_GLOBAL_OPTIONAL(name)
#define KILN_VK_INSTANCE(name)                                           \
  out->name = reinterpret_cast<PFN_##name>(gipa(instance, #name));       \
  if (!out->name) return UnimplementedError("Vulkan instance lacks %s", #name);
#define KILN_VK_INSTANCE_OPTIONAL(name) \
  out->name = reinterpret_cast<PFN_##name>(gipa(instance, #name));
#define KILN_VK_DEVICE(name)
#define KILN_VK_DEVICE_OPTIONAL(name)
#include "hal/vulkan/vulkan_symbols.def"
#undef KILN_VK_GLOBAL
#undef KILN_VK_GLOBAL_OPTIONAL
#undef KILN_VK_INSTANCE
#undef KILN_VK_INSTANCE_OPTIONAL
#undef KILN_VK_DEVICE
#undef KILN_VK_DEVICE_OPTIONAL
  return OkStatus();
}

Status LoadVulkanDeviceSyms(const VulkanInstanceSyms& instance_syms, VkDevice device,
                            VulkanDeviceSyms* out) {
  *out = VulkanDeviceSyms();
  PFN_vkGetDeviceProcAddr gdpa = instance_syms.vkGetDeviceProcAddr;
#define KILN_VK_GLOBAL(name)
#define KILN_VK_GLOBAL_OPTIONAL(name)
#define KILN_VK_INSTANCE(name)
#define KILN_VK_INSTANCE_OPTIONAL(name)
#define KILN_VK_DEVICE(name)                                         \
  out->name = reinterpret_cast<PFN_##name>(gdpa(device, #name));     \
  if (!out->name) return UnimplementedError("Vulkan device lacks %s", #name);
#define KILN_VK_DEVICE_OPTIONAL(name) \
  out->name = reinterpret_cast<PFN_##name>(gdpa(device, #name));
#include "hal/vulkan/vulkan_symbols.def"
#undef KILN_VK_GLOBAL
#undef KILN_VK_GLOBAL_OPTIONAL
#undef KILN_VK_INSTANCE
#undef KILN_VK_INSTANCE_OPTIONAL
#undef KILN_VK_DEVICE
#undef KILN_VK_DEVICE_OPTIONAL
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
