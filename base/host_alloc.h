// Host memory of the runtime: the one place where the VM, the HAL and the C
// API get heap memory (the allocator hook of the C API, kiln_set_allocator).
//
// Every allocation goes through HostAllocate/HostFree, which call the app's
// hooks (process-wide) or malloc/free. Routed so far: every RefObject (HAL
// devices, buffers, command buffers, executables, semaphores; VM modules,
// contexts, buffer views; C API handles), the block pools behind the
// per-invoke objects, C API statuses and function records, and the
// containers declared with HostStdAllocator (HostVector, HostString: the
// VM's and HAL's tables and scratch), frames, module states, recordings and
// base::Status messages. Not routed: std::string temporaries that format an
// error message (error paths only), and the Vulkan loader's and driver's
// own memory. tests/e2e/host_memory_test.cc checks, with malloc replaced
// for the process, that a real model's load, invokes and release allocate
// nothing outside the hooks.
//
// Failure: HostAllocate returns null (callers report kResourceExhausted).
// A container (HostStdAllocator) cannot report a failure, so when the hook
// refuses a container's request the block comes from malloc instead, is
// freed back to malloc, and the thread's failure count goes up: the C API
// checks that count around every creating call and fails the call with
// RESOURCE_EXHAUSTED (releasing what it made), so no failure crashes and
// none goes unreported.
#ifndef KILN_BASE_HOST_ALLOC_H_
#define KILN_BASE_HOST_ALLOC_H_

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

namespace kiln {

// The hooks (numbering and meaning as kiln_allocator_t). `allocate` returns
// `size` bytes aligned to `alignment` (a power of two, >= 16) or null;
// `free` gets exactly the pointers `allocate` returned.
struct HostAllocatorHooks {
  void* user_data = nullptr;
  void* (*allocate)(void* user_data, size_t size, size_t alignment) = nullptr;
  void (*free)(void* user_data, void* ptr) = nullptr;
};

// `size` bytes aligned to `alignment` (power of two; at least 16 is used),
// or null when the hook (or malloc) fails. Never aborts.
void* HostAllocate(size_t size, size_t alignment = 16) noexcept;
// Frees a HostAllocate (or HostStdAllocator) pointer; null is ignored.
void HostFree(void* p) noexcept;
// For HostStdAllocator: like HostAllocate, but never null (see the file
// comment: malloc stands in and the failure is counted).
void* HostAllocateOrFallBack(size_t size, size_t alignment) noexcept;
// Number of hook failures on this thread so far (HostAllocate and
// HostAllocateOrFallBack).
uint64_t HostAllocationFailures() noexcept;

// Installs `hooks` (null: malloc/free) for the whole process. Fails (false)
// while blocks allocated through the current hooks are live.
bool SetHostAllocator(const HostAllocatorHooks* hooks) noexcept;
// Blocks allocated by HostAllocate* and not freed yet.
uint64_t HostAllocationsLive() noexcept;
// Of those, the blocks malloc made: all of them without hooks; with hooks,
// the blocks made before the hooks were installed and the ones malloc gave
// in place of a refused container request (HostAllocateOrFallBack). Tests
// use it to check that a failed call keeps none of the latter.
uint64_t HostAllocationsLiveOutsideHooks() noexcept;

// Class-specific operator new/delete through HostAllocate/HostFree (inside a
// class definition). `new T` yields null on failure (noexcept operator new).
#define KILN_HOST_NEW_DELETE                                                              \
  static void* operator new(size_t size) noexcept { return ::kiln::HostAllocate(size); } \
  static void* operator new(size_t size, const std::nothrow_t&) noexcept {                \
    return ::kiln::HostAllocate(size);                                                    \
  }                                                                                       \
  static void* operator new(size_t, void* where) noexcept { return where; }               \
  static void operator delete(void* p) noexcept { ::kiln::HostFree(p); }

// Like KILN_HOST_NEW_DELETE, for objects whose creators cannot report a
// failure (never null: HostAllocateOrFallBack, a refusal is counted).
#define KILN_HOST_NEW_DELETE_NEVER_NULL                                        \
  static void* operator new(size_t size) {                                     \
    return ::kiln::HostAllocateOrFallBack(size, alignof(std::max_align_t));    \
  }                                                                            \
  static void operator delete(void* p) noexcept { ::kiln::HostFree(p); }

// std allocator over HostAllocateOrFallBack: std::vector<T, HostStdAllocator<T>>.
template <typename T>
struct HostStdAllocator {
  using value_type = T;
  HostStdAllocator() = default;
  template <typename U>
  HostStdAllocator(const HostStdAllocator<U>&) noexcept {}  // NOLINT
  T* allocate(size_t n) {
    return static_cast<T*>(HostAllocateOrFallBack(n * sizeof(T), alignof(T) > 16 ? alignof(T) : 16));
  }
  void deallocate(T* p, size_t) noexcept { HostFree(p); }
  template <typename U>
  bool operator==(const HostStdAllocator<U>&) const noexcept { return true; }
  template <typename U>
  bool operator!=(const HostStdAllocator<U>&) const noexcept { return false; }
};

// The runtime's containers: std::vector and std::string over the hooks.
template <typename T>
using HostVector = std::vector<T, HostStdAllocator<T>>;
using HostString = std::basic_string<char, std::char_traits<char>, HostStdAllocator<char>>;

}  // namespace kiln

#endif  // KILN_BASE_HOST_ALLOC_H_
