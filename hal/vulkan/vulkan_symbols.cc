#include "hal/vulkan/vulkan_symbols.h"

#include <dlfcn.h>

#include <cstddef>
#include <cstring>
#include <new>

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

// One table for the three loaders (vulkan_symbols.def): per entry its level,
// whether it may be missing and its offset in that level's struct; the names
// are one string of NUL-terminated names in the same order.
enum Level : uint8_t { kGlobal, kInstance, kDevice };
struct Entry {
  uint8_t level;
  uint8_t optional;
  uint16_t offset;
};
constexpr Entry kEntries[] = {
#define KILN_VK_GLOBAL(name) {kGlobal, 0, offsetof(VulkanLoaderSyms, name)},
#define KILN_VK_GLOBAL_OPTIONAL(name) {kGlobal, 1, offsetof(VulkanLoaderSyms, name)},
#define KILN_VK_INSTANCE(name) {kInstance, 0, offsetof(VulkanInstanceSyms, name)},
#define KILN_VK_INSTANCE_OPTIONAL(name) {kInstance, 1, offsetof(VulkanInstanceSyms, name)},
#define KILN_VK_DEVICE(name) {kDevice, 0, offsetof(VulkanDeviceSyms, name)},
#define KILN_VK_DEVICE_OPTIONAL(name) {kDevice, 1, offsetof(VulkanDeviceSyms, name)},
#include "hal/vulkan/vulkan_symbols.def"
};
constexpr char kNames[] =
#define KILN_VK_GLOBAL(name) #name "\0"
#define KILN_VK_INSTANCE(name) #name "\0"
#define KILN_VK_DEVICE(name) #name "\0"
#include "hal/vulkan/vulkan_symbols.def"
    "";

// Resolves the entries of `level` into the struct at `out` with `resolve`
// (a vkGet*ProcAddr bound to its handle). Returns the name of the first
// required entry that is missing, or null.
template <typename Resolve>
const char* LoadLevel(Level level, void* out, Resolve resolve) {
  const char* name = kNames;
  const char* missing = nullptr;
  for (const Entry& e : kEntries) {
    if (e.level == level) {
      PFN_vkVoidFunction fn = resolve(name);
      std::memcpy(static_cast<char*>(out) + e.offset, &fn, sizeof(fn));
      if (!fn && !e.optional && !missing) missing = name;
    }
    name += std::strlen(name) + 1;
  }
  return missing;
}

LoaderState* OpenLoader() {
  // Process lifetime, never freed: static storage (no host allocation).
  alignas(LoaderState) static unsigned char storage[sizeof(LoaderState)];
  auto* state = new (storage) LoaderState();
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
  const char* missing = LoadLevel(kGlobal, &state->syms,
                                  [gipa](const char* n) { return gipa(VK_NULL_HANDLE, n); });
  if (missing) state->status = UnimplementedError("the Vulkan loader lacks %s", missing);
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
  PFN_vkGetInstanceProcAddr gipa = loader.vkGetInstanceProcAddr;
  const char* missing =
      LoadLevel(kInstance, out, [gipa, instance](const char* n) { return gipa(instance, n); });
  if (missing) return UnimplementedError("Vulkan instance lacks %s", missing);
  return OkStatus();
}

Status LoadVulkanDeviceSyms(const VulkanInstanceSyms& instance_syms, VkDevice device,
                            VulkanDeviceSyms* out) {
  PFN_vkGetDeviceProcAddr gdpa = instance_syms.vkGetDeviceProcAddr;
  const char* missing =
      LoadLevel(kDevice, out, [gdpa, device](const char* n) { return gdpa(device, n); });
  if (missing) return UnimplementedError("Vulkan device lacks %s", missing);
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
