// Implementation of the C API (include/kiln/kiln.h) on vm/ and hal/.
//
// Every handle is a RefObject; C handles are pointers to these structs.
// Nothing here throws or aborts on bad input: each entry point checks its
// handles and returns a kiln_status_t.
#include "kiln/kiln.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

#include "base/dtype.h"
#include "base/log.h"
#include "base/ref.h"
#include "base/status.h"
#include "hal/api.h"
#include "vm/context.h"
#include "vm/module.h"
#include "vm/value.h"
#if KILN_HAVE_HAL_DRIVERS
#include "hal/driver.h"
#endif

// --- ABI consistency ---------------------------------------------------------

#define KILN_CHECK_DTYPE(C, CPP) \
  static_assert(static_cast<int>(C) == static_cast<int>(kiln::DType::CPP), #C);
KILN_CHECK_DTYPE(KILN_DTYPE_INVALID, kInvalid)
KILN_CHECK_DTYPE(KILN_DTYPE_F32, kF32)
KILN_CHECK_DTYPE(KILN_DTYPE_F16, kF16)
KILN_CHECK_DTYPE(KILN_DTYPE_I64, kI64)
KILN_CHECK_DTYPE(KILN_DTYPE_I32, kI32)
KILN_CHECK_DTYPE(KILN_DTYPE_I16, kI16)
KILN_CHECK_DTYPE(KILN_DTYPE_I8, kI8)
KILN_CHECK_DTYPE(KILN_DTYPE_U8, kU8)
KILN_CHECK_DTYPE(KILN_DTYPE_BOOL, kBool)
KILN_CHECK_DTYPE(KILN_DTYPE_F64, kF64)
#undef KILN_CHECK_DTYPE
#define KILN_CHECK_CODE(C, CPP) \
  static_assert(static_cast<int>(C) == static_cast<int>(kiln::StatusCode::CPP), #C);
KILN_CHECK_CODE(KILN_STATUS_OK, kOk)
KILN_CHECK_CODE(KILN_STATUS_INVALID_ARGUMENT, kInvalidArgument)
KILN_CHECK_CODE(KILN_STATUS_DATA_LOSS, kDataLoss)
KILN_CHECK_CODE(KILN_STATUS_NOT_FOUND, kNotFound)
KILN_CHECK_CODE(KILN_STATUS_UNIMPLEMENTED, kUnimplemented)
KILN_CHECK_CODE(KILN_STATUS_RESOURCE_EXHAUSTED, kResourceExhausted)
KILN_CHECK_CODE(KILN_STATUS_FAILED_PRECONDITION, kFailedPrecondition)
KILN_CHECK_CODE(KILN_STATUS_INTERNAL, kInternal)
KILN_CHECK_CODE(KILN_STATUS_OUT_OF_RANGE, kOutOfRange)
#undef KILN_CHECK_CODE
static_assert(KILN_MAX_RANK == kiln::vm::kMaxRank, "KILN_MAX_RANK");
static_assert(static_cast<int>(KILN_OWNERSHIP_CONSUME) ==
                  static_cast<int>(kiln::format::Ownership::consume), "ownership");
static_assert(static_cast<int>(KILN_OWNERSHIP_OUTPUT_STORAGE) ==
                  static_cast<int>(kiln::format::Ownership::output_storage), "ownership");

#if defined(KILN_PROJECT_VERSION_MAJOR)
static_assert(KILN_VERSION_MAJOR == KILN_PROJECT_VERSION_MAJOR &&
                  KILN_VERSION_MINOR == KILN_PROJECT_VERSION_MINOR &&
                  KILN_VERSION_PATCH == KILN_PROJECT_VERSION_PATCH,
              "kiln.h KILN_VERSION_* must equal project(kiln VERSION ...) in CMakeLists.txt");
static_assert(KILN_API_VERSION == KILN_PROJECT_ABI_VERSION,
              "kiln.h KILN_API_VERSION must equal KILN_ABI_VERSION (the SONAME)");
#endif

// --- handle types ------------------------------------------------------------

// Handle checks: every handle carries a tag naming its type while alive; the
// destructor overwrites it, so a release of a dead handle is caught (as long
// as its memory has not been reused; ASan builds check the poisoning too).
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

struct kiln_status_s {
  kiln::Status status;
};

struct kiln_instance_s : public kiln::RefObject {
  HandleCheck<HandleTag::kInstance> check;
  static constexpr const char* kName = "instance";
};

struct kiln_device_s : public kiln::RefObject {
  HandleCheck<HandleTag::kDevice> check;
  static constexpr const char* kName = "device";
  kiln::Ref<kiln_instance_s> instance;
  kiln::Ref<kiln::hal::Device> device;
  kiln::Ref<kiln::hal::Semaphore> readback_semaphore;  // created on first staged read
  uint64_t readback_value = 0;
};

struct kiln_module_s : public kiln::RefObject {
  HandleCheck<HandleTag::kModule> check;
  static constexpr const char* kName = "module";
  kiln::Ref<kiln::vm::Module> module;
};

// A fence: timepoint `value` of its own timeline semaphore (created at 0,
// first point 1). kiln_fence_reset moves a reached fence to the next value,
// so one semaphore serves any number of points in time.
struct kiln_fence_s : public kiln::RefObject {
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
  kiln_context_s* context = nullptr;  // borrowed: the function lives inside it
  kiln::vm::FunctionRef ref;
  const kiln::vm::FunctionInfo* info = nullptr;
};

struct kiln_context_s : public kiln::RefObject {
  HandleCheck<HandleTag::kContext> check;
  static constexpr const char* kName = "context";
  kiln::Ref<kiln_device_s> device;
  std::vector<kiln::Ref<kiln_module_s>> modules;
  kiln::Ref<kiln::vm::Context> context;
  // One record per looked-up function; unique_ptr keeps addresses stable.
  std::vector<std::unique_ptr<kiln_function_s>> functions;
  // Invoke scratch, grown on demand and reused.
  std::vector<kiln::vm::InvokeArg> invoke_args;
  std::vector<kiln::vm::BufferView*> storage_views;  // per result (kiln_invoke_ex)
  std::vector<kiln_tensor_s*> storage_tensors;       // per result (kiln_invoke_ex)
  std::vector<kiln::Ref<kiln::vm::BufferView>> result_views;
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

namespace {

using kiln::Ref;
using kiln::Status;
using kiln::StatusCode;

// Returned when allocating a status itself fails; never freed.
kiln_status_s g_out_of_memory_status{kiln::Status(StatusCode::kResourceExhausted,
                                                  "out of memory (reporting an error)")};

kiln_status_t Wrap(Status status) {
  if (status.ok()) return nullptr;
  auto* s = new (std::nothrow) kiln_status_s{std::move(status)};
  return s ? s : &g_out_of_memory_status;
}

kiln_status_t NullArg(const char* fn, const char* what) {
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

void FillSignature(const kiln::format::TensorSig* sig, bool is_arg,
                   kiln_tensor_signature_t* out) {
  std::memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->name = sig->name() ? sig->name()->c_str() : "";
  out->dtype = static_cast<kiln_dtype_t>(sig->dtype());
  out->rank = sig->shape() ? sig->shape()->size() : 0;
  for (size_t i = 0; i < out->rank && i < KILN_MAX_RANK; ++i) {
    out->dims[i] = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i));
  }
  out->ownership =
      is_arg ? static_cast<kiln_ownership_t>(sig->ownership()) : KILN_OWNERSHIP_BORROW;
}

// Copies [offset, offset+length) of `buffer` to host memory through a
// host-visible staging buffer (used when `buffer` is not host visible).
Status StagedRead(kiln_device_s* dev, kiln::hal::Buffer* buffer, uint64_t offset, void* dst,
                  uint64_t length) {
  kiln::hal::Device* device = dev->device.get();
  if (!dev->readback_semaphore) {
    KILN_ASSIGN_OR_RETURN(dev->readback_semaphore, device->CreateSemaphore(0));
  }
  KILN_ASSIGN_OR_RETURN(Ref<kiln::hal::Buffer> staging,
                        device->AllocateBuffer(length, kiln::hal::MemoryKind::kHostVisible));
  KILN_ASSIGN_OR_RETURN(Ref<kiln::hal::CommandBuffer> cb, device->CreateCommandBuffer());
  KILN_RETURN_IF_ERROR(cb->CopyBuffer(buffer, offset, staging.get(), 0, length));
  KILN_RETURN_IF_ERROR(cb->End());
  kiln::hal::SemaphorePoint signal{dev->readback_semaphore.get(), ++dev->readback_value};
  KILN_RETURN_IF_ERROR(device->QueueExecute(cb.get(), nullptr, 0, &signal, 1));
  KILN_RETURN_IF_ERROR(dev->readback_semaphore->Wait(signal.value, UINT64_MAX));
  device->stats().transfers++;
  return staging->Read(0, dst, length);
}

// The root allocation under `view`.
kiln::hal::Buffer* RootOf(const kiln::vm::BufferView* view) {
  return view->buffer()->allocation();
}

// Records that device work signalling `point` writes the storage of `view`.
void MarkPendingWrite(const kiln::vm::BufferView* view, const kiln::hal::SemaphorePoint& point) {
  kiln::hal::Buffer* root = RootOf(view);
  if (root->pending_write_semaphore.get() != point.semaphore) {
    root->pending_write_semaphore = Ref<kiln::hal::Semaphore>::Retain(point.semaphore);
  }
  root->pending_write_value = point.value;
}

// Waits (at most `timeout_ns`) until device work submitted by an
// asynchronous invocation that writes `tensor`'s storage has finished.
// A reached mark is cleared, so later reads cost nothing.
Status WaitPendingWrite(const char* api, kiln_tensor_s* tensor, uint64_t timeout_ns) {
  kiln::hal::Buffer* root = RootOf(tensor->view.get());
  kiln::hal::Semaphore* semaphore = root->pending_write_semaphore.get();
  if (!semaphore) return kiln::OkStatus();
  uint64_t value = root->pending_write_value;
  KILN_ASSIGN_OR_RETURN(uint64_t reached, semaphore->Query());
  if (reached < value) {
    Status s = semaphore->Wait(value, timeout_ns);
    if (!s.ok()) {
      auto now = semaphore->Query();
      if (now.ok() && now.value() < value) {
        return kiln::FailedPreconditionError(
            "%s: timeout: the invocation writing %s has not finished within %llu ns (its "
            "wait fence is not signalled yet?)",
            api, tensor->view->TypeString().c_str(), static_cast<unsigned long long>(timeout_ns));
      }
      return s;
    }
  }
  if (root->pending_write_semaphore.get() == semaphore && root->pending_write_value == value) {
    root->pending_write_semaphore.reset();
  }
  return kiln::OkStatus();
}

// Copies `length` bytes of `src` to [offset, offset+length) of `buffer`
// through a host-visible staging buffer (used when `buffer` is not host
// visible). Blocks until the copy is done.
Status StagedWrite(kiln_device_s* dev, kiln::hal::Buffer* buffer, uint64_t offset,
                   const void* src, uint64_t length) {
  kiln::hal::Device* device = dev->device.get();
  if (!dev->readback_semaphore) {
    KILN_ASSIGN_OR_RETURN(dev->readback_semaphore, device->CreateSemaphore(0));
  }
  KILN_ASSIGN_OR_RETURN(Ref<kiln::hal::Buffer> staging,
                        device->AllocateBuffer(length, kiln::hal::MemoryKind::kHostVisible));
  KILN_RETURN_IF_ERROR(staging->Write(0, src, length));
  KILN_ASSIGN_OR_RETURN(Ref<kiln::hal::CommandBuffer> cb, device->CreateCommandBuffer());
  KILN_RETURN_IF_ERROR(cb->CopyBuffer(staging.get(), 0, buffer, offset, length));
  KILN_RETURN_IF_ERROR(cb->End());
  kiln::hal::SemaphorePoint signal{dev->readback_semaphore.get(), ++dev->readback_value};
  KILN_RETURN_IF_ERROR(device->QueueExecute(cb.get(), nullptr, 0, &signal, 1));
  KILN_RETURN_IF_ERROR(dev->readback_semaphore->Wait(signal.value, UINT64_MAX));
  device->stats().transfers++;
  return kiln::OkStatus();
}

}  // namespace

extern "C" {

// --- version -----------------------------------------------------------------

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)
const char* kiln_version(void) {
  return KILN_STR(KILN_VERSION_MAJOR) "." KILN_STR(KILN_VERSION_MINOR) "." KILN_STR(
      KILN_VERSION_PATCH);
}
uint32_t kiln_api_version(void) { return KILN_API_VERSION; }

// --- diagnostics -------------------------------------------------------------

void kiln_set_log_callback(kiln_log_callback_t callback, void* user_data) {
  // kiln_log_callback_t and kiln::LogSink differ only in the enum type of
  // `level`, whose values are equal.
  static_assert(static_cast<int>(KILN_LOG_ERROR) == static_cast<int>(kiln::LogLevel::kError) &&
                    static_cast<int>(KILN_LOG_WARNING) == static_cast<int>(kiln::LogLevel::kWarning) &&
                    static_cast<int>(KILN_LOG_INFO) == static_cast<int>(kiln::LogLevel::kInfo),
                "log levels");
  kiln::SetLogSink(reinterpret_cast<kiln::LogSink>(callback), user_data);
}

// --- status ------------------------------------------------------------------

kiln_status_code_t kiln_status_code(kiln_status_t status) {
  return status ? static_cast<kiln_status_code_t>(status->status.code()) : KILN_STATUS_OK;
}

const char* kiln_status_message(kiln_status_t status) {
  return status ? status->status.message().c_str() : "";
}

const char* kiln_status_code_name(kiln_status_code_t code) {
  return kiln::StatusCodeName(static_cast<StatusCode>(code));
}

void kiln_status_free(kiln_status_t status) {
  if (status != &g_out_of_memory_status) delete status;
}

// --- dtypes ------------------------------------------------------------------

size_t kiln_dtype_size(kiln_dtype_t dtype) {
  if (dtype < 0 || dtype > 255) return 0;
  return kiln::DTypeSize(static_cast<kiln::DType>(dtype));
}

const char* kiln_dtype_name(kiln_dtype_t dtype) {
  if (dtype < 0 || dtype > 255) return "invalid";
  return kiln::DTypeName(static_cast<kiln::DType>(dtype));
}

// --- instance ----------------------------------------------------------------

kiln_status_t kiln_instance_create(kiln_instance_t* out_instance) {
  if (!out_instance) return NullArg("kiln_instance_create", "out_instance");
  *out_instance = new kiln_instance_s();
  return nullptr;
}
void kiln_instance_retain(kiln_instance_t instance) {
  RetainHandle<HandleTag::kInstance>(instance, "kiln_instance_retain");
}
void kiln_instance_release(kiln_instance_t instance) {
  ReleaseHandle<HandleTag::kInstance>(instance, "kiln_instance_release");
}

// --- device ------------------------------------------------------------------

kiln_status_t kiln_device_create(kiln_instance_t instance, const char* driver,
                                 const char* device_name, int32_t device_index,
                                 kiln_device_t* out_device) {
  if (!instance) return NullArg("kiln_device_create", "instance");
  if (!driver) return NullArg("kiln_device_create", "driver");
  if (!out_device) return NullArg("kiln_device_create", "out_device");
#if KILN_HAVE_HAL_DRIVERS
  kiln::hal::DeviceOptions options;
  options.index = device_index;
  options.name = device_name ? device_name : "";
  auto device = kiln::hal::CreateDevice(driver, options);
  if (!device.ok()) return Wrap(device.take_status());
  auto* dev = new kiln_device_s();
  dev->instance = Ref<kiln_instance_s>::Retain(instance);
  dev->device = std::move(device).value();
  *out_device = dev;
  return nullptr;
#else
  return Wrap(kiln::UnimplementedError("kiln_device_create: no HAL drivers in this build"));
#endif
}
kiln_status_t kiln_enumerate_devices(kiln_instance_t instance, const char* driver,
                                     kiln_device_info_t* out_infos, size_t capacity,
                                     size_t* out_count) {
  if (!instance) return NullArg("kiln_enumerate_devices", "instance");
  if (!driver) return NullArg("kiln_enumerate_devices", "driver");
  if (!out_count) return NullArg("kiln_enumerate_devices", "out_count");
  if (!out_infos && capacity) return NullArg("kiln_enumerate_devices", "out_infos");
#if KILN_HAVE_HAL_DRIVERS
  auto devices = kiln::hal::DescribeDevices(driver);
  if (!devices.ok()) return Wrap(devices.take_status());
  for (size_t i = 0; i < devices->size() && i < capacity; ++i) {
    const kiln::hal::DeviceDescription& d = (*devices)[i];
    kiln_device_info_t* info = &out_infos[i];
    std::memset(info, 0, sizeof(*info));
    info->struct_size = sizeof(*info);
    std::snprintf(info->name, sizeof(info->name), "%s", d.name.c_str());
    info->type = static_cast<kiln_device_type_t>(d.type);
    info->vendor_id = d.vendor_id;
    info->device_id = d.device_id;
    info->driver_version = d.driver_version;
    info->api_version = d.api_version;
  }
  *out_count = devices->size();
  return nullptr;
#else
  return Wrap(kiln::UnimplementedError("kiln_enumerate_devices: no HAL drivers in this build"));
#endif
}

void kiln_device_retain(kiln_device_t device) {
  RetainHandle<HandleTag::kDevice>(device, "kiln_device_retain");
}
void kiln_device_release(kiln_device_t device) {
  ReleaseHandle<HandleTag::kDevice>(device, "kiln_device_release");
}

const char* kiln_device_name(kiln_device_t device) {
  return device ? device->device->info().name.c_str() : "";
}

kiln_status_t kiln_device_stats(kiln_device_t device, kiln_device_stats_t* out_stats) {
  if (!device) return NullArg("kiln_device_stats", "device");
  if (!out_stats) return NullArg("kiln_device_stats", "out_stats");
  const kiln::hal::Stats& s = device->device->stats();
  out_stats->struct_size = sizeof(*out_stats);
  out_stats->device_allocations = s.device_allocations;
  out_stats->device_bytes_allocated = s.device_bytes_allocated;
  out_stats->device_bytes_live = s.device_bytes_live;
  out_stats->device_peak_bytes = s.device_peak_bytes;
  out_stats->copies = s.copies;
  out_stats->copy_bytes = s.copy_bytes;
  out_stats->transfers = s.transfers;
  out_stats->fills = s.fills;
  out_stats->dispatches = s.dispatches;
  out_stats->barriers = s.barriers;
  out_stats->submissions = s.submissions;
  out_stats->host_allocations_invoke = s.host_allocations_invoke;
  out_stats->host_waits = s.host_waits;
  out_stats->deferred_frees = s.deferred_frees;
  return nullptr;
}

kiln_status_t kiln_device_stats_reset(kiln_device_t device) {
  if (!device) return NullArg("kiln_device_stats_reset", "device");
  kiln::hal::Stats& s = device->device->stats();
  uint64_t live = s.device_bytes_live;
  s = kiln::hal::Stats();
  s.device_bytes_live = live;
  s.device_peak_bytes = live;
  return nullptr;
}

// --- module ------------------------------------------------------------------

static kiln_status_t FinishModule(kiln::StatusOr<Ref<kiln::vm::Module>> loaded,
                                  kiln_module_t* out_module) {
  if (!loaded.ok()) return Wrap(loaded.take_status());
  auto* m = new kiln_module_s();
  m->module = std::move(loaded).value();
  *out_module = m;
  return nullptr;
}

kiln_status_t kiln_module_load_from_memory(kiln_instance_t instance, const void* data,
                                           size_t size, kiln_module_t* out_module) {
  if (!instance) return NullArg("kiln_module_load_from_memory", "instance");
  if (!data) return NullArg("kiln_module_load_from_memory", "data");
  if (!out_module) return NullArg("kiln_module_load_from_memory", "out_module");
  return FinishModule(kiln::vm::Module::LoadFromMemory(data, size), out_module);
}

kiln_status_t kiln_module_load_from_file(kiln_instance_t instance, const char* path,
                                         kiln_module_t* out_module) {
  if (!instance) return NullArg("kiln_module_load_from_file", "instance");
  if (!path) return NullArg("kiln_module_load_from_file", "path");
  if (!out_module) return NullArg("kiln_module_load_from_file", "out_module");
  return FinishModule(kiln::vm::Module::LoadFromFile(path), out_module);
}
void kiln_module_retain(kiln_module_t module) {
  RetainHandle<HandleTag::kModule>(module, "kiln_module_retain");
}
void kiln_module_release(kiln_module_t module) {
  ReleaseHandle<HandleTag::kModule>(module, "kiln_module_release");
}
const char* kiln_module_name(kiln_module_t module) {
  return module ? module->module->name().c_str() : "";
}

// --- context -----------------------------------------------------------------

kiln_status_t kiln_context_create(kiln_device_t device, const kiln_module_t* modules,
                                  size_t module_count, kiln_context_t* out_context) {
  if (!device) return NullArg("kiln_context_create", "device");
  if (!modules && module_count) return NullArg("kiln_context_create", "modules");
  if (!out_context) return NullArg("kiln_context_create", "out_context");
  for (size_t i = 0; i < module_count; ++i) {
    if (!modules[i]) {
      return Wrap(kiln::InvalidArgumentError("kiln_context_create: modules[%zu] is NULL", i));
    }
  }
  auto vm_context = kiln::vm::Context::Create(device->device);
  if (!vm_context.ok()) return Wrap(vm_context.take_status());
  Ref<kiln_context_s> ctx = Ref<kiln_context_s>::Adopt(new kiln_context_s());
  ctx->device = Ref<kiln_device_s>::Retain(device);
  ctx->context = std::move(vm_context).value();
  for (size_t i = 0; i < module_count; ++i) {
    Status s = ctx->context->RegisterModule(modules[i]->module);
    if (!s.ok()) return Wrap(std::move(s));
    ctx->modules.push_back(Ref<kiln_module_s>::Retain(modules[i]));
  }
  *out_context = ctx.release();
  return nullptr;
}
void kiln_context_retain(kiln_context_t context) {
  RetainHandle<HandleTag::kContext>(context, "kiln_context_retain");
}
void kiln_context_release(kiln_context_t context) {
  ReleaseHandle<HandleTag::kContext>(context, "kiln_context_release");
}

kiln_status_t kiln_context_lookup_function(kiln_context_t context, const char* name,
                                           kiln_function_t* out_function) {
  if (!context) return NullArg("kiln_context_lookup_function", "context");
  if (!name) return NullArg("kiln_context_lookup_function", "name");
  if (!out_function) return NullArg("kiln_context_lookup_function", "out_function");
  auto ref = context->context->LookupFunction(name);
  if (!ref.ok()) return Wrap(ref.take_status());
  for (const auto& f : context->functions) {
    if (f->ref.module == ref->module && f->ref.ordinal == ref->ordinal) {
      *out_function = f.get();
      return nullptr;
    }
  }
  auto f = std::make_unique<kiln_function_s>();
  f->context = context;
  f->ref = ref.value();
  f->info = &context->context->function_info(ref.value());
  *out_function = f.get();
  context->functions.push_back(std::move(f));
  return nullptr;
}

const char* kiln_function_name(kiln_function_t function) {
  return function ? function->info->name.c_str() : "";
}
size_t kiln_function_arg_count(kiln_function_t function) {
  return function ? function->info->arg_count : 0;
}
size_t kiln_function_result_count(kiln_function_t function) {
  return function ? function->info->result_count : 0;
}

kiln_status_t kiln_function_arg(kiln_function_t function, size_t index,
                                kiln_tensor_signature_t* out_signature) {
  if (!function) return NullArg("kiln_function_arg", "function");
  if (!out_signature) return NullArg("kiln_function_arg", "out_signature");
  if (index >= function->info->arg_count) {
    return Wrap(kiln::OutOfRangeError("kiln_function_arg: index %zu out of range (%u arguments)",
                                      index, function->info->arg_count));
  }
  FillSignature(function->info->def->args()->Get(static_cast<flatbuffers::uoffset_t>(index)),
                true, out_signature);
  return nullptr;
}

kiln_status_t kiln_function_result(kiln_function_t function, size_t index,
                                   kiln_tensor_signature_t* out_signature) {
  if (!function) return NullArg("kiln_function_result", "function");
  if (!out_signature) return NullArg("kiln_function_result", "out_signature");
  if (index >= function->info->result_count) {
    return Wrap(kiln::OutOfRangeError("kiln_function_result: index %zu out of range (%u results)",
                                      index, function->info->result_count));
  }
  FillSignature(function->info->def->results()->Get(static_cast<flatbuffers::uoffset_t>(index)),
                false, out_signature);
  return nullptr;
}

// --- tensors -----------------------------------------------------------------

kiln_status_t kiln_tensor_create(kiln_device_t device, kiln_dtype_t dtype, size_t rank,
                                 const int64_t* dims, const void* data, size_t data_bytes,
                                 kiln_tensor_t* out_tensor) {
  if (!device) return NullArg("kiln_tensor_create", "device");
  if (!dims && rank) return NullArg("kiln_tensor_create", "dims");
  if (!out_tensor) return NullArg("kiln_tensor_create", "out_tensor");
  if (kiln_dtype_size(dtype) == 0) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: invalid dtype %d",
                                           static_cast<int>(dtype)));
  }
  if (rank > KILN_MAX_RANK) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: rank %zu exceeds %d", rank,
                                           KILN_MAX_RANK));
  }
  uint64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) {
      return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: dim %zu is negative (%lld)", i,
                                             static_cast<long long>(dims[i])));
    }
    if (dims[i] != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(dims[i])) {
      return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: shape is too large"));
    }
    count *= static_cast<uint64_t>(dims[i]);
  }
  uint64_t bytes = count * kiln_dtype_size(dtype);
  if (data && data_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_tensor_create: %s needs %llu bytes, %zu given",
        kiln::vm::TensorTypeString(static_cast<kiln::DType>(dtype), dims, rank).c_str(),
        static_cast<unsigned long long>(bytes), data_bytes));
  }
  kiln::hal::Device* dev = device->device.get();
  uint64_t alloc = bytes ? (bytes + 3) / 4 * 4 : 4;
  auto buffer = dev->AllocateBuffer(alloc, kiln::hal::MemoryKind::kHostVisible);
  if (!buffer.ok()) return Wrap(buffer.take_status());
  if (data && bytes) {
    Status s = buffer.value()->Write(0, data, bytes);
    if (!s.ok()) return Wrap(std::move(s));
  } else if (bytes) {
    std::vector<uint8_t> zeros(bytes);
    Status s = buffer.value()->Write(0, zeros.data(), bytes);
    if (!s.ok()) return Wrap(std::move(s));
  }
  auto view = kiln::vm::BufferView::Create(std::move(buffer).value(), 0,
                                           static_cast<kiln::DType>(dtype), dims, rank);
  if (!view.ok()) return Wrap(view.take_status());
  auto* t = new kiln_tensor_s();
  t->device = Ref<kiln_device_s>::Retain(device);
  t->view = std::move(view).value();
  *out_tensor = t;
  return nullptr;
}
void kiln_tensor_retain(kiln_tensor_t tensor) {
  RetainHandle<HandleTag::kTensor>(tensor, "kiln_tensor_retain");
}
void kiln_tensor_release(kiln_tensor_t tensor) {
  ReleaseHandle<HandleTag::kTensor>(tensor, "kiln_tensor_release");
}

kiln_status_t kiln_tensor_read(kiln_tensor_t tensor, void* dst, size_t dst_bytes) {
  if (!tensor) return NullArg("kiln_tensor_read", "tensor");
  uint64_t bytes = tensor->view->byte_length();
  if (dst_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_read: %s has %llu bytes, %zu requested",
                                           tensor->view->TypeString().c_str(),
                                           static_cast<unsigned long long>(bytes), dst_bytes));
  }
  if (bytes == 0) return nullptr;
  if (!dst) return NullArg("kiln_tensor_read", "dst");
  // Results of kiln_invoke_async: wait for the work that writes them.
  Status pending = WaitPendingWrite("kiln_tensor_read", tensor, UINT64_MAX);
  if (!pending.ok()) return Wrap(std::move(pending));
  kiln::hal::Buffer* buffer = tensor->view->buffer();
  Status s = buffer->Read(tensor->view->byte_offset(), dst, bytes);
  if (s.code() == StatusCode::kFailedPrecondition) {
    s = StagedRead(tensor->device.get(), buffer, tensor->view->byte_offset(), dst, bytes);
  }
  return Wrap(std::move(s));
}

kiln_status_t kiln_tensor_write(kiln_tensor_t tensor, const void* src, size_t src_bytes) {
  if (!tensor) return NullArg("kiln_tensor_write", "tensor");
  uint64_t bytes = tensor->view->byte_length();
  if (src_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_write: %s has %llu bytes, %zu given",
                                           tensor->view->TypeString().c_str(),
                                           static_cast<unsigned long long>(bytes), src_bytes));
  }
  if (bytes == 0) return nullptr;
  if (!src) return NullArg("kiln_tensor_write", "src");
  // Work still writing the storage (an asynchronous result) finishes first.
  Status pending = WaitPendingWrite("kiln_tensor_write", tensor, UINT64_MAX);
  if (!pending.ok()) return Wrap(std::move(pending));
  kiln::hal::Buffer* buffer = tensor->view->buffer();
  Status s = buffer->Write(tensor->view->byte_offset(), src, bytes);
  if (s.code() == StatusCode::kFailedPrecondition) {
    s = StagedWrite(tensor->device.get(), buffer, tensor->view->byte_offset(), src, bytes);
  }
  return Wrap(std::move(s));
}

kiln_status_t kiln_tensor_wait(kiln_tensor_t tensor, uint64_t timeout_ns) {
  if (!tensor) return NullArg("kiln_tensor_wait", "tensor");
  return Wrap(WaitPendingWrite("kiln_tensor_wait", tensor, timeout_ns));
}

kiln_dtype_t kiln_tensor_dtype(kiln_tensor_t tensor) {
  return tensor ? static_cast<kiln_dtype_t>(tensor->view->dtype()) : KILN_DTYPE_INVALID;
}
size_t kiln_tensor_rank(kiln_tensor_t tensor) { return tensor ? tensor->view->rank() : 0; }
const int64_t* kiln_tensor_dims(kiln_tensor_t tensor) {
  return tensor ? tensor->view->dims() : nullptr;
}
size_t kiln_tensor_byte_size(kiln_tensor_t tensor) {
  return tensor ? static_cast<size_t>(tensor->view->byte_length()) : 0;
}

// --- invoke ------------------------------------------------------------------

}  // extern "C"

namespace {

// Releases the references that KILN_ARG_CONSUME entries hand to a call which
// fails before adopting them.
void ReleaseConsumed(const kiln_invoke_arg_t* args, size_t arg_count) {
  if (!args) return;
  for (size_t i = 0; i < arg_count; ++i) {
    if ((args[i].flags & KILN_ARG_CONSUME) && !(args[i].flags & KILN_ARG_OUTPUT_STORAGE)) {
      kiln_tensor_release(args[i].tensor);
    }
  }
}

template <typename T>
void Grow(std::vector<T>* v, size_t n) {
  if (v->size() < n) {
    kiln::vm::CountHostAllocation();
    v->resize(n);
  }
}

// The shared body of kiln_invoke and kiln_invoke_ex: context->invoke_args
// (arguments; consumed ones already adopted) and, when `with_storage`,
// context->storage_views/storage_tensors are filled in.
kiln_status_t InvokePrepared(kiln_context_t context, kiln_function_t function, size_t arg_count,
                             bool with_storage, kiln_tensor_t* out_results, size_t result_count,
                             uint64_t allocations_before,
                             kiln::vm::InvokeFences* fences = nullptr) {
  Grow(&context->result_views, result_count);
  uint64_t vm_before = kiln::vm::HostAllocationCount();
  Status s = context->context->InvokeEx(function->ref, context->invoke_args.data(), arg_count,
                                        context->result_views.data(), result_count,
                                        with_storage ? context->storage_views.data() : nullptr,
                                        fences);
  // Context::InvokeEx added its own allocations to the stats; add the rest.
  uint64_t vm_allocations = kiln::vm::HostAllocationCount() - vm_before;
  if (s.ok() && fences && fences->signal_submitted) {
    // Asynchronous: host reads of the results and output storage wait for
    // the signal point (kiln_tensor_read).
    for (size_t i = 0; i < result_count; ++i) {
      if (context->result_views[i]) MarkPendingWrite(context->result_views[i].get(), fences->signal);
      if (with_storage && context->storage_views[i]) {
        MarkPendingWrite(context->storage_views[i], fences->signal);
      }
    }
  }
  if (s.ok()) {
    for (size_t i = 0; i < result_count; ++i) {
      kiln_tensor_s* storage = with_storage ? context->storage_tensors[i] : nullptr;
      if (storage && context->result_views[i].get() == storage->view.get()) {
        storage->Retain();  // the caller's own tensor is the result
        out_results[i] = storage;
        continue;
      }
      auto* t = new kiln_tensor_s();  // pooled; counts only on a pool miss
      t->device = context->device;
      t->view = std::move(context->result_views[i]);
      out_results[i] = t;
    }
  }
  for (size_t i = 0; i < result_count; ++i) context->result_views[i].reset();
  context->device->device->stats().host_allocations_invoke +=
      kiln::vm::HostAllocationCount() - allocations_before - vm_allocations;
  return Wrap(std::move(s));
}

}  // namespace

extern "C" {

kiln_status_t kiln_invoke(kiln_context_t context, kiln_function_t function,
                          const kiln_tensor_t* args, size_t arg_count,
                          kiln_tensor_t* out_results, size_t result_count) {
  if (!context) return NullArg("kiln_invoke", "context");
  if (!function) return NullArg("kiln_invoke", "function");
  if (function->context != context) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_invoke: function '%s' was looked up in a different context",
        function->info->name.c_str()));
  }
  if (!args && arg_count) return NullArg("kiln_invoke", "args");
  if (!out_results && result_count) return NullArg("kiln_invoke", "out_results");
  uint64_t allocations_before = kiln::vm::HostAllocationCount();
  Grow(&context->invoke_args, arg_count);
  for (size_t i = 0; i < arg_count; ++i) {
    if (!args[i]) {
      return Wrap(kiln::InvalidArgumentError("kiln_invoke: args[%zu] is NULL", i));
    }
    if (args[i]->device->device.get() != context->device->device.get()) {
      return Wrap(kiln::InvalidArgumentError(
          "kiln_invoke: args[%zu] lives on a different device than the context", i));
    }
    context->invoke_args[i] = kiln::vm::InvokeArg{args[i]->view.get(), false};
  }
  return InvokePrepared(context, function, arg_count, false, out_results, result_count,
                        allocations_before);
}

}  // extern "C"

namespace {

// kiln_invoke_ex and kiln_invoke_async (`api` names the entry point in
// messages; `fences` null: synchronous).
kiln_status_t InvokeExImpl(const char* api, kiln_context_t context, kiln_function_t function,
                           const kiln_invoke_arg_t* args, size_t arg_count,
                           kiln::vm::InvokeFences* fences, kiln_tensor_t* out_results,
                           size_t result_count) {
  auto fail = [&](Status status) {
    ReleaseConsumed(args, arg_count);
    return Wrap(std::move(status));
  };
  if (!context) return fail(kiln::InvalidArgumentError("%s: context is NULL", api));
  if (!function) return fail(kiln::InvalidArgumentError("%s: function is NULL", api));
  if (function->context != context) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' was looked up in a different context", api,
        function->info->name.c_str()));
  }
  if (!args && arg_count) return NullArg(api, "args");
  if (!out_results && result_count) {
    return fail(kiln::InvalidArgumentError("%s: out_results is NULL", api));
  }
  if (result_count != function->info->result_count) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' returns %u results, %zu result slots given", api,
        function->info->name.c_str(), function->info->result_count, result_count));
  }
  uint64_t allocations_before = kiln::vm::HostAllocationCount();
  Grow(&context->invoke_args, arg_count);
  Grow(&context->storage_views, result_count);
  Grow(&context->storage_tensors, result_count);
  for (size_t k = 0; k < result_count; ++k) {
    context->storage_views[k] = nullptr;
    context->storage_tensors[k] = nullptr;
  }
  // Pass 1: validate every entry and take borrowed pointers (before any
  // consumed handle is released: one tensor may appear twice).
  size_t n = 0;
  bool any_storage = false;
  for (size_t i = 0; i < arg_count; ++i) {
    const kiln_invoke_arg_t& a = args[i];
    if (!a.tensor) {
      return fail(kiln::InvalidArgumentError("%s: args[%zu].tensor is NULL", api, i));
    }
    if (a.tensor->device->device.get() != context->device->device.get()) {
      return fail(kiln::InvalidArgumentError(
          "%s: args[%zu] lives on a different device than the context", api, i));
    }
    if (a.flags & ~static_cast<kiln_arg_flags_t>(KILN_ARG_CONSUME | KILN_ARG_OUTPUT_STORAGE)) {
      return fail(kiln::InvalidArgumentError("%s: args[%zu]: unknown flags 0x%x", api, i,
                                             a.flags));
    }
    if ((a.flags & KILN_ARG_CONSUME) && (a.flags & KILN_ARG_OUTPUT_STORAGE)) {
      return fail(kiln::InvalidArgumentError(
          "%s: args[%zu]: KILN_ARG_CONSUME and KILN_ARG_OUTPUT_STORAGE exclude each "
          "other",
          api, i));
    }
    if (a.flags & KILN_ARG_OUTPUT_STORAGE) {
      if (a.result_index < 0 || static_cast<size_t>(a.result_index) >= result_count) {
        return fail(kiln::InvalidArgumentError(
            "%s: args[%zu]: output storage for result %d, but function '%s' has %zu "
            "results",
            api, i, a.result_index, function->info->name.c_str(), result_count));
      }
      size_t k = static_cast<size_t>(a.result_index);
      if (context->storage_tensors[k]) {
        return fail(kiln::InvalidArgumentError(
            "%s: args[%zu]: result %zu already has output storage", api, i, k));
      }
      context->storage_tensors[k] = a.tensor;
      context->storage_views[k] = a.tensor->view.get();
      any_storage = true;
      continue;
    }
    if (n < arg_count) context->invoke_args[n] = kiln::vm::InvokeArg{a.tensor->view.get(), false};
    ++n;
  }
  if (n != function->info->arg_count) {
    return fail(kiln::InvalidArgumentError(
        "%s: function '%s' expects %u arguments, got %zu (plus %zu output storage "
        "entries)", api,
        function->info->name.c_str(), function->info->arg_count, n, arg_count - n));
  }
  // Pass 2: adopt consumed references. A handle nobody else holds gives up
  // its view (so the view's only holder becomes the call); otherwise the view
  // is retained for the call and the caller's handle reference released.
  n = 0;
  for (size_t i = 0; i < arg_count; ++i) {
    const kiln_invoke_arg_t& a = args[i];
    if (a.flags & KILN_ARG_OUTPUT_STORAGE) continue;
    if (a.flags & KILN_ARG_CONSUME) {
      kiln_tensor_s* t = a.tensor;
      kiln::vm::BufferView* view;
      if (t->refcount() == 1) {
        view = t->view.release();
      } else {
        view = t->view.get();
        view->Retain();
      }
      t->Release();
      context->invoke_args[n] = kiln::vm::InvokeArg{view, true};
    }
    ++n;
  }
  return InvokePrepared(context, function, n, any_storage, out_results, result_count,
                        allocations_before, fences);
}

}  // namespace

extern "C" {

kiln_status_t kiln_invoke_ex(kiln_context_t context, kiln_function_t function,
                             const kiln_invoke_arg_t* args, size_t arg_count,
                             kiln_tensor_t* out_results, size_t result_count) {
  return InvokeExImpl("kiln_invoke_ex", context, function, args, arg_count, nullptr, out_results,
                      result_count);
}

kiln_status_t kiln_invoke_async(kiln_context_t context, kiln_function_t function,
                                const kiln_invoke_arg_t* args, size_t arg_count,
                                kiln_fence_t wait_fence, kiln_fence_t signal_fence,
                                kiln_tensor_t* out_results, size_t result_count) {
  auto fail = [&](Status status) {
    ReleaseConsumed(args, arg_count);
    return Wrap(std::move(status));
  };
  if (!context) return fail(kiln::InvalidArgumentError("kiln_invoke_async: context is NULL"));
  if (!signal_fence) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: signal_fence is NULL (the results are valid only once it is "
        "signalled)"));
  }
  if (signal_fence->device->device.get() != context->device->device.get() ||
      (wait_fence && wait_fence->device->device.get() != context->device->device.get())) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: a fence belongs to a different device than the context"));
  }
  if (wait_fence == signal_fence) {
    return fail(kiln::InvalidArgumentError(
        "kiln_invoke_async: wait_fence and signal_fence are the same fence (the call would "
        "wait on itself)"));
  }
  if (signal_fence->signal_claimed.exchange(true)) {
    return fail(kiln::FailedPreconditionError(
        "kiln_invoke_async: signal_fence was already signalled or given to another call "
        "(kiln_fence_reset it once reached, or create a new one)"));
  }
  kiln::vm::InvokeFences fences;
  if (wait_fence) fences.wait = {wait_fence->semaphore.get(), wait_fence->value.load()};
  fences.signal = {signal_fence->semaphore.get(), signal_fence->value.load()};
  kiln_status_t status = InvokeExImpl("kiln_invoke_async", context, function, args, arg_count,
                                      &fences, out_results, result_count);
  // Failed before any work was submitted: the fence stays usable.
  if (!fences.signal_submitted) {
    signal_fence->signal_claimed.store(false);
  } else {
    if (context->last_signal_semaphore.get() != fences.signal.semaphore) {
      context->last_signal_semaphore = Ref<kiln::hal::Semaphore>::Retain(fences.signal.semaphore);
    }
    context->last_signal_value = fences.signal.value;
  }
  return status;
}

kiln_status_t kiln_context_wait_idle(kiln_context_t context, uint64_t timeout_ns) {
  if (!context) return NullArg("kiln_context_wait_idle", "context");
  kiln::hal::Semaphore* semaphore = context->last_signal_semaphore.get();
  if (semaphore) {
    uint64_t value = context->last_signal_value;
    Status s = semaphore->Wait(value, timeout_ns);
    if (!s.ok()) {
      auto now = semaphore->Query();
      if (now.ok() && now.value() < value) {
        return Wrap(kiln::FailedPreconditionError(
            "kiln_context_wait_idle: timeout: the context's work has not finished within %llu "
            "ns (is it waiting on a fence nobody signalled?)",
            static_cast<unsigned long long>(timeout_ns)));
      }
      return Wrap(std::move(s));
    }
  }
  return Wrap(context->context->Collect());
}

kiln_status_t kiln_context_release_within(kiln_context_t context, uint64_t timeout_ns) {
  if (!context) return nullptr;
  if (!LiveHandle<kiln_context_s, HandleTag::kContext>(context, "kiln_context_release_within")) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_context_release_within: not a live context handle (double release?)"));
  }
  // Only the last reference waits (kiln_context_release blocks there).
  if (context->refcount() == 1) {
    kiln_status_t idle = kiln_context_wait_idle(context, timeout_ns);
    if (idle) return idle;  // still held by the caller
  }
  context->Release();
  return nullptr;
}

kiln_status_t kiln_context_collect(kiln_context_t context) {
  if (!context) return NullArg("kiln_context_collect", "context");
  return Wrap(context->context->Collect());
}

// --- fences --------------------------------------------------------------------

kiln_status_t kiln_fence_create(kiln_device_t device, kiln_fence_t* out_fence) {
  if (!device) return NullArg("kiln_fence_create", "device");
  if (!out_fence) return NullArg("kiln_fence_create", "out_fence");
  auto semaphore = device->device->CreateSemaphore(0);
  if (!semaphore.ok()) {
    Status s = semaphore.take_status();
    return Wrap(s.Annotate("kiln_fence_create"));
  }
  auto* fence = new (std::nothrow) kiln_fence_s();
  if (!fence) return Wrap(kiln::ResourceExhaustedError("kiln_fence_create: out of memory"));
  fence->device = Ref<kiln_device_s>::Retain(device);
  fence->semaphore = std::move(semaphore).value();
  *out_fence = fence;
  return nullptr;
}
void kiln_fence_retain(kiln_fence_t fence) {
  RetainHandle<HandleTag::kFence>(fence, "kiln_fence_retain");
}
void kiln_fence_release(kiln_fence_t fence) {
  ReleaseHandle<HandleTag::kFence>(fence, "kiln_fence_release");
}

kiln_status_t kiln_fence_signal(kiln_fence_t fence) {
  if (!fence) return NullArg("kiln_fence_signal", "fence");
  if (fence->signal_claimed.exchange(true)) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_fence_signal: the fence was already signalled or is the signal fence of an "
        "invocation"));
  }
  Status s = fence->semaphore->Signal(fence->value.load());
  if (!s.ok()) fence->signal_claimed.store(false);
  return Wrap(std::move(s));
}

kiln_status_t kiln_fence_reset(kiln_fence_t fence) {
  if (!fence) return NullArg("kiln_fence_reset", "fence");
  if (!fence->signal_claimed.load()) return nullptr;  // unsignalled, nothing scheduled: already reset
  auto value = fence->semaphore->Query();
  if (!value.ok()) return Wrap(value.take_status());
  if (value.value() < fence->value.load()) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_fence_reset: the fence has a signal scheduled that has not been reached yet "
        "(kiln_fence_wait for it first)"));
  }
  // Work already submitted against the old point waits for a smaller value,
  // which the semaphore has passed: it is unaffected.
  fence->value.fetch_add(1);
  fence->signal_claimed.store(false);
  return nullptr;
}

kiln_status_t kiln_fence_query(kiln_fence_t fence, int* out_signaled) {
  if (!fence) return NullArg("kiln_fence_query", "fence");
  if (!out_signaled) return NullArg("kiln_fence_query", "out_signaled");
  auto value = fence->semaphore->Query();
  if (!value.ok()) return Wrap(value.take_status());
  *out_signaled = value.value() >= fence->value.load() ? 1 : 0;
  return nullptr;
}

kiln_status_t kiln_fence_wait(kiln_fence_t fence, uint64_t timeout_ns) {
  if (!fence) return NullArg("kiln_fence_wait", "fence");
  uint64_t point = fence->value.load();
  Status s = fence->semaphore->Wait(point, timeout_ns);
  if (s.ok()) return nullptr;
  auto value = fence->semaphore->Query();
  if (value.ok() && value.value() < point) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_fence_wait: timeout: the fence was not signalled within %llu ns",
        static_cast<unsigned long long>(timeout_ns)));
  }
  return Wrap(std::move(s));
}

kiln_status_t kiln_tensor_create_view(kiln_tensor_t parent, size_t byte_offset,
                                      kiln_dtype_t dtype, size_t rank, const int64_t* dims,
                                      kiln_tensor_t* out_tensor) {
  if (!parent) return NullArg("kiln_tensor_create_view", "parent");
  if (!dims && rank) return NullArg("kiln_tensor_create_view", "dims");
  if (!out_tensor) return NullArg("kiln_tensor_create_view", "out_tensor");
  if (kiln_dtype_size(dtype) == 0) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create_view: invalid dtype %d",
                                           static_cast<int>(dtype)));
  }
  auto view = kiln::vm::BufferView::CreateSubview(*parent->view, byte_offset,
                                                  static_cast<kiln::DType>(dtype), dims, rank);
  if (!view.ok()) {
    Status s = view.take_status();
    return Wrap(s.Annotate("kiln_tensor_create_view"));
  }
  auto* t = new kiln_tensor_s();
  t->device = parent->device;
  t->view = std::move(view).value();
  *out_tensor = t;
  return nullptr;
}

}  // extern "C"
