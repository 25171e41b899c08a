#include "base/host_alloc.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace kiln {
namespace {

// Every block carries a 16-byte header right before the pointer handed out:
// who allocated it (so a block outlives a change of hooks, and a fallback
// block goes back to malloc) and how far the hook's pointer lies before it.
struct Header {
  uint32_t origin;  // kFromHook or kFromMalloc
  uint32_t offset;  // bytes from the allocated base to the user pointer
  uint64_t reserved;
};
static_assert(sizeof(Header) == 16, "header size");
constexpr uint32_t kFromHook = 0x6b686f6bu;    // "khok"
constexpr uint32_t kFromMalloc = 0x6b6d6c63u;  // "kmlc"

HostAllocatorHooks g_hooks;  // allocate == null: malloc
std::atomic<uint64_t> g_live_hook{0};
std::atomic<uint64_t> g_live{0};
thread_local uint64_t g_failures = 0;

void* Finish(void* base, size_t offset, uint32_t origin) {
  char* p = static_cast<char*>(base) + offset;
  Header h = {origin, static_cast<uint32_t>(offset), 0};
  std::memcpy(p - sizeof(Header), &h, sizeof(Header));
  g_live.fetch_add(1, std::memory_order_relaxed);
  if (origin == kFromHook) g_live_hook.fetch_add(1, std::memory_order_relaxed);
  return p;
}

void* MallocAligned(size_t total, size_t alignment) {
  void* base = nullptr;
  if (posix_memalign(&base, alignment, total) != 0) return nullptr;
  return base;
}

// Alignment and offset of a request: at least the header's 16 bytes.
size_t Offset(size_t alignment) {
  return alignment < sizeof(Header) ? sizeof(Header) : alignment;
}

}  // namespace

void* HostAllocate(size_t size, size_t alignment) noexcept {
  size_t offset = Offset(alignment);
  if (size > SIZE_MAX - offset) return nullptr;
  size_t total = size + offset;
  const HostAllocatorHooks hooks = g_hooks;
  if (hooks.allocate) {
    void* base = hooks.allocate(hooks.user_data, total, offset);
    if (!base) {
      ++g_failures;
      return nullptr;
    }
    return Finish(base, offset, kFromHook);
  }
  void* base = MallocAligned(total, offset);
  if (!base) {
    ++g_failures;
    return nullptr;
  }
  return Finish(base, offset, kFromMalloc);
}

void* HostAllocateOrFallBack(size_t size, size_t alignment) noexcept {
  void* p = HostAllocate(size, alignment);
  if (p) return p;
  size_t offset = Offset(alignment);
  void* base = MallocAligned(size + offset, offset);
  if (!base) std::abort();  // the system itself is out of memory (as operator new would)
  return Finish(base, offset, kFromMalloc);
}

void HostFree(void* p) noexcept {
  if (!p) return;
  Header h;
  std::memcpy(&h, static_cast<char*>(p) - sizeof(Header), sizeof(Header));
  void* base = static_cast<char*>(p) - h.offset;
  g_live.fetch_sub(1, std::memory_order_relaxed);
  if (h.origin == kFromHook) {
    g_live_hook.fetch_sub(1, std::memory_order_relaxed);
    g_hooks.free(g_hooks.user_data, base);
  } else {
    std::free(base);
  }
}

uint64_t HostAllocationFailures() noexcept { return g_failures; }

bool SetHostAllocator(const HostAllocatorHooks* hooks) noexcept {
  if (g_live_hook.load() != 0) return false;
  g_hooks = hooks ? *hooks : HostAllocatorHooks();
  return true;
}

uint64_t HostAllocationsLive() noexcept { return g_live.load(std::memory_order_relaxed); }

uint64_t HostAllocationsLiveOutsideHooks() noexcept {
  return g_live.load(std::memory_order_relaxed) - g_live_hook.load(std::memory_order_relaxed);
}

}  // namespace kiln
