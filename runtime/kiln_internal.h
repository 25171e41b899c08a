// Internals of the C API implementation (runtime/kiln*.cc): the handle
// types behind include/kiln/kiln.h and the helpers every entry point uses.
// Not installed; nothing here is exported (hidden visibility).
//
// Files: kiln.cc (status, version, diagnostics, instance, device, module,
// context, functions), kiln_tensor.cc (tensors: create, views, read, write,
// wait), kiln_invoke.cc (invocation, asynchronous invocation, fences).
#ifndef KILN_RUNTIME_KILN_INTERNAL_H_
#define KILN_RUNTIME_KILN_INTERNAL_H_

#include "kiln/kiln.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "base/host_alloc.h"
#include "base/log.h"
#include "base/ref.h"
#include "base/status.h"
#include "hal/api.h"
#include "vm/context.h"
#include "vm/module.h"
#include "vm/value.h"

// --- handle types ------------------------------------------------------------

// Containers of the C API's handles: host memory through the allocator hook.
using kiln::HostVector;

// Handle checks: every handle carries a tag naming its type while alive; the
// destructor overwrites it, so a release of a dead handle is caught as long
// as its memory has not been reused (ASan builds check the poisoning too).
// Debug builds (NDEBUG undefined) make that reliable: the memory of a
// released handle is quarantined (the last kHandleQuarantine handles of the
// instance, device, module, context and fence kinds here; the last
// BlockPool::kQuarantine tensors in their pool) before it can be reused.
// The tag is the first member after RefObject (byte 16): malloc writes its
// free-list links into bytes 0-15 of a small freed block (and the size of a
// freed block into the last 8 bytes of it), the block pools into bytes 0-7.
enum class HandleTag : uint32_t {
  kDead = 0xdeadbeefu,
  kInstance = 0x4b494e31u,
  kDevice,
  kModule,
  kContext,
  kTensor,
  kFence,
};
template <HandleTag kTag>
struct alignas(8) HandleCheck {
  HandleTag tag = kTag;
  // A volatile store: the compiler may otherwise drop a store to an object
  // whose lifetime ends (GCC's lifetime dead-store elimination).
  ~HandleCheck() { *const_cast<volatile HandleTag*>(&tag) = HandleTag::kDead; }
};

namespace kiln::capi {
// Frees the memory of a released handle (HostFree); debug builds hold it in
// a FIFO quarantine of kHandleQuarantine handles first. Releasing the last
// instance also empties the quarantine and the block pools
// (vm::BlockPool::ReleaseAllPools), so an app's allocator gets every block
// back.
#if !defined(NDEBUG)
constexpr size_t kHandleQuarantine = 64;
#endif
void FreeHandleMemory(void* p) noexcept;
}  // namespace kiln::capi
#define KILN_HANDLE_DELETE \
  static void operator delete(void* p) noexcept { ::kiln::capi::FreeHandleMemory(p); }

struct kiln_status_s {
  KILN_HOST_NEW_DELETE
  kiln::Status status;
};

struct kiln_instance_s : public kiln::RefObject {
  KILN_HANDLE_DELETE
  kiln_instance_s();
  ~kiln_instance_s() override;
  HandleCheck<HandleTag::kInstance> check;
  static constexpr const char* kName = "instance";
};

struct kiln_device_s : public kiln::RefObject {
  KILN_HANDLE_DELETE
  HandleCheck<HandleTag::kDevice> check;
  static constexpr const char* kName = "device";
  kiln::Ref<kiln_instance_s> instance;
  kiln::Ref<kiln::hal::Device> device;
  kiln::Ref<kiln::hal::Semaphore> readback_semaphore;  // created on first staged read
  uint64_t readback_value = 0;
};

struct kiln_module_s : public kiln::RefObject {
  KILN_HANDLE_DELETE
  HandleCheck<HandleTag::kModule> check;
  static constexpr const char* kName = "module";
  kiln::Ref<kiln::vm::Module> module;
};

// A fence: timepoint `value` of its own timeline semaphore (created at 0,
// first point 1). kiln_fence_reset moves a reached fence to the next value,
// so one semaphore serves any number of points in time.
struct kiln_fence_s : public kiln::RefObject {
  KILN_HANDLE_DELETE
  HandleCheck<HandleTag::kFence> check;
  static constexpr const char* kName = "fence";
  kiln::Ref<kiln_device_s> device;
  kiln::Ref<kiln::hal::Semaphore> semaphore;
  std::atomic<uint64_t> value{1};
  // Set once a signal of the current point is scheduled (host signal or an
  // invocation's signal): a point is signalled at most once.
  std::atomic<bool> signal_claimed{false};
};

struct kiln_function_s {
  KILN_HOST_NEW_DELETE
  kiln_context_s* context = nullptr;  // borrowed: the function lives inside it
  kiln::vm::FunctionRef ref;
  const kiln::vm::FunctionInfo* info = nullptr;
};

struct kiln_context_s : public kiln::RefObject {
  KILN_HANDLE_DELETE
  HandleCheck<HandleTag::kContext> check;
  static constexpr const char* kName = "context";
  kiln::Ref<kiln_device_s> device;
  HostVector<kiln::Ref<kiln_module_s>> modules;
  kiln::Ref<kiln::vm::Context> context;
  // One record per looked-up function; unique_ptr keeps addresses stable.
  HostVector<std::unique_ptr<kiln_function_s>> functions;
  // Invoke scratch, grown on demand and reused.
  HostVector<kiln::vm::InvokeArg> invoke_args;
  HostVector<kiln::vm::BufferView*> storage_views;  // per result (kiln_invoke_ex)
  HostVector<kiln_tensor_s*> storage_tensors;       // per result (kiln_invoke_ex)
  HostVector<kiln::Ref<kiln::vm::BufferView>> result_views;
  // The signal point of the last kiln_invoke_async whose work was submitted:
  // once reached, every earlier invocation of the context is done too (one
  // queue, in order). Synchronous invokes finish before they return.
  kiln::Ref<kiln::hal::Semaphore> last_signal_semaphore;
  uint64_t last_signal_value = 0;
};

// Pooled (vm::BlockPool): result handles made on every invoke cost no host
// allocation in the steady state.
struct kiln_tensor_s : public kiln::RefObject {
  KILN_POOLED_NEW_DELETE(kiln_tensor_s)

 public:
  HandleCheck<HandleTag::kTensor> check;
  static constexpr const char* kName = "tensor";
  kiln::Ref<kiln_device_s> device;
  kiln::Ref<kiln::vm::BufferView> view;
};

namespace kiln::capi {


using kiln::Ref;
using kiln::Status;
using kiln::StatusCode;

// Returned when allocating a status itself fails; never freed.
inline kiln_status_s g_out_of_memory_status{kiln::Status(StatusCode::kResourceExhausted,
                                                  "out of memory (reporting an error)")};

inline kiln_status_t Wrap(Status status) {
  if (status.ok()) return nullptr;
  auto* s = new (std::nothrow) kiln_status_s{std::move(status)};
  return s ? s : &g_out_of_memory_status;
}

// Watches for allocator failures during a call (host_alloc.h: a container
// whose request the hook refused carried on with malloc; the call must fail).
struct HostFailureWatch {
  uint64_t start = kiln::HostAllocationFailures();
  bool failed() const { return kiln::HostAllocationFailures() != start; }
};

inline kiln_status_t OutOfHostMemory(const char* fn) {
  return Wrap(kiln::ResourceExhaustedError(
      "%s: out of host memory (the allocator returned NULL)", fn));
}

inline kiln_status_t NullArg(const char* fn, const char* what) {
  return Wrap(kiln::InvalidArgumentError("%s: %s is NULL", fn, what));
}

// Whether `h` is a live handle of its type; reports misuse otherwise.
template <typename T, HandleTag kTag>
bool LiveHandle(T* h, const char* api) {
  const volatile HandleTag* tag = &h->check.tag;
#if defined(__SANITIZE_ADDRESS__)
  bool poisoned = __asan_address_is_poisoned(const_cast<HandleTag*>(tag)) != 0;
#else
  bool poisoned = false;
#endif
  if (!poisoned && *tag == kTag && h->refcount() > 0) return true;
  kiln::Log(kiln::LogLevel::kError, "runtime",
            "%s: double release of %s handle %p (its last reference was already released; "
            "the call is ignored)",
            api, T::kName, static_cast<const void*>(h));
  return false;
}

template <HandleTag kTag, typename T>
void RetainHandle(T* h, const char* api) {
  if (h && LiveHandle<T, kTag>(h, api)) h->Retain();
}
template <HandleTag kTag, typename T>
void ReleaseHandle(T* h, const char* api) {
  if (h && LiveHandle<T, kTag>(h, api)) h->Release();
}

// The root allocation under `view`.
inline kiln::hal::Buffer* RootOf(const kiln::vm::BufferView* view) {
  return view->buffer()->allocation();
}

// Records that device work signalling `point` writes the storage of `view`
// (kiln_tensor.cc).
void MarkPendingWrite(const kiln::vm::BufferView* view, const kiln::hal::SemaphorePoint& point,
                      uint64_t timeout_ns);

}  // namespace kiln::capi

#endif  // KILN_RUNTIME_KILN_INTERNAL_H_
