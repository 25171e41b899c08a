// Implementation of the C API (include/kiln/kiln.h) on vm/ and hal/.
//
// Every handle is a RefObject; C handles are pointers to these structs.
// Nothing here throws or aborts on bad input: each entry point checks its
// handles and returns a kiln_status_t.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "base/dtype.h"
#include "runtime/kiln_internal.h"
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
KILN_CHECK_DTYPE(KILN_DTYPE_BF16, kBF16)
KILN_CHECK_DTYPE(KILN_DTYPE_U16, kU16)
KILN_CHECK_DTYPE(KILN_DTYPE_U32, kU32)
KILN_CHECK_DTYPE(KILN_DTYPE_U64, kU64)
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
KILN_CHECK_CODE(KILN_STATUS_DEADLINE_EXCEEDED, kDeadlineExceeded)
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

using namespace kiln::capi;  // NOLINT: the entry points below use the helpers

// --- handle memory, allocator --------------------------------------------------

namespace {
std::atomic<int> g_live_instances{0};
#if !defined(NDEBUG)
std::mutex g_quarantine_mutex;
void* g_quarantine[kHandleQuarantine];
size_t g_quarantine_count = 0, g_quarantine_head = 0;
#endif

// Frees the handle quarantine and the block pools' cached blocks.
void ReleaseCachedHostMemory() {
#if !defined(NDEBUG)
  {
    std::lock_guard<std::mutex> lock(g_quarantine_mutex);
    for (size_t i = 0; i < g_quarantine_count; ++i) {
      kiln::HostFree(g_quarantine[(g_quarantine_head + i) % kHandleQuarantine]);
    }
    g_quarantine_count = g_quarantine_head = 0;
  }
#endif
  kiln::vm::BlockPool::ReleaseAllPools();
}
}  // namespace

namespace kiln::capi {
void FreeHandleMemory(void* p) noexcept {
#if !defined(NDEBUG)
  {
    std::lock_guard<std::mutex> lock(g_quarantine_mutex);
    void* evicted = nullptr;
    if (g_quarantine_count < kHandleQuarantine) {
      g_quarantine[(g_quarantine_head + g_quarantine_count++) % kHandleQuarantine] = p;
    } else {
      evicted = g_quarantine[g_quarantine_head];
      g_quarantine[g_quarantine_head] = p;
      g_quarantine_head = (g_quarantine_head + 1) % kHandleQuarantine;
    }
    p = evicted;
  }
#endif
  kiln::HostFree(p);
  // The last instance's own memory has just been freed (or quarantined):
  // every other handle depends on an instance, so nothing is live.
  if (g_live_instances.load() == 0) ReleaseCachedHostMemory();
}
}  // namespace kiln::capi

kiln_instance_s::kiln_instance_s() { g_live_instances.fetch_add(1); }
kiln_instance_s::~kiln_instance_s() { g_live_instances.fetch_sub(1); }

namespace {

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

kiln_status_t kiln_set_allocator(const kiln_allocator_t* allocator) {
  kiln::HostAllocatorHooks hooks;
  if (allocator) {
    if (allocator->struct_size < offsetof(kiln_allocator_t, free) + sizeof(allocator->free) ||
        !allocator->allocate || !allocator->free) {
      return Wrap(kiln::InvalidArgumentError(
          "kiln_set_allocator: struct_size too small, or allocate/free is NULL"));
    }
    hooks.user_data = allocator->user_data;
    hooks.allocate = allocator->allocate;
    hooks.free = allocator->free;
  }
  if (g_live_instances.load() == 0) ReleaseCachedHostMemory();
  if (!kiln::SetHostAllocator(allocator ? &hooks : nullptr)) {
    return Wrap(kiln::FailedPreconditionError(
        "kiln_set_allocator: memory from the current allocator is still in use (release every "
        "instance and every object first)"));
  }
  return nullptr;
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
  // From C, an enum may hold any int.
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) > 255) return 0;
  return kiln::DTypeSize(static_cast<kiln::DType>(dtype));
}

const char* kiln_dtype_name(kiln_dtype_t dtype) {
  // From C, an enum may hold any int.
  if (static_cast<int>(dtype) < 0 || static_cast<int>(dtype) > 255) return "invalid";
  return kiln::DTypeName(static_cast<kiln::DType>(dtype));
}

// --- instance ----------------------------------------------------------------

kiln_status_t kiln_instance_create(kiln_instance_t* out_instance) {
  if (!out_instance) return NullArg("kiln_instance_create", "out_instance");
  kiln_instance_s* instance = new kiln_instance_s();
  if (!instance) return OutOfHostMemory("kiln_instance_create");
  *out_instance = instance;
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
  HostFailureWatch watch;
  auto device = kiln::hal::CreateDevice(driver, options);
  if (!device.ok()) return Wrap(device.take_status());
  auto* dev = watch.failed() ? nullptr : new kiln_device_s();
  if (!dev) return OutOfHostMemory("kiln_device_create");
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
  out_stats->command_buffer_recordings = s.command_buffer_recordings;
  out_stats->command_buffer_replays = s.command_buffer_replays;
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

static kiln_status_t FinishModule(const HostFailureWatch& watch,
                                  kiln::StatusOr<Ref<kiln::vm::Module>> loaded,
                                  kiln_module_t* out_module) {
  if (!loaded.ok()) return Wrap(loaded.take_status());
  auto* m = watch.failed() ? nullptr : new kiln_module_s();
  if (!m) return OutOfHostMemory("kiln_module_load");
  m->module = std::move(loaded).value();
  *out_module = m;
  return nullptr;
}

kiln_status_t kiln_module_load_from_memory(kiln_instance_t instance, const void* data,
                                           size_t size, kiln_module_t* out_module) {
  if (!instance) return NullArg("kiln_module_load_from_memory", "instance");
  if (!data) return NullArg("kiln_module_load_from_memory", "data");
  if (!out_module) return NullArg("kiln_module_load_from_memory", "out_module");
  HostFailureWatch watch;
  return FinishModule(watch, kiln::vm::Module::LoadFromMemory(data, size), out_module);
}

kiln_status_t kiln_module_load_from_file(kiln_instance_t instance, const char* path,
                                         kiln_module_t* out_module) {
  if (!instance) return NullArg("kiln_module_load_from_file", "instance");
  if (!path) return NullArg("kiln_module_load_from_file", "path");
  if (!out_module) return NullArg("kiln_module_load_from_file", "out_module");
  HostFailureWatch watch;
  return FinishModule(watch, kiln::vm::Module::LoadFromFile(path), out_module);
}
void kiln_module_retain(kiln_module_t module) {
  RetainHandle<HandleTag::kModule>(module, "kiln_module_retain");
}
void kiln_module_release(kiln_module_t module) {
  ReleaseHandle<HandleTag::kModule>(module, "kiln_module_release");
}
const char* kiln_module_name(kiln_module_t module) {
  return module ? module->module->name().data() : "";
}

// --- context -----------------------------------------------------------------

kiln_status_t kiln_context_create(kiln_device_t device, const kiln_module_t* modules,
                                  size_t module_count, kiln_context_t* out_context) {
  return kiln_context_create_with_options(device, modules, module_count, nullptr, out_context);
}

kiln_status_t kiln_context_create_with_options(kiln_device_t device, const kiln_module_t* modules,
                                               size_t module_count,
                                               const kiln_context_options_t* options,
                                               kiln_context_t* out_context) {
  // Older callers' struct ends before wait_timeout_ns.
  if (options && options->struct_size != sizeof(kiln_context_options_t) &&
      options->struct_size != offsetof(kiln_context_options_t, wait_timeout_ns)) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_context_create: options->struct_size is %zu, expected %zu", options->struct_size,
        sizeof(kiln_context_options_t)));
  }
  if (!device) return NullArg("kiln_context_create", "device");
  if (!modules && module_count) return NullArg("kiln_context_create", "modules");
  if (!out_context) return NullArg("kiln_context_create", "out_context");
  for (size_t i = 0; i < module_count; ++i) {
    if (!modules[i]) {
      return Wrap(kiln::InvalidArgumentError("kiln_context_create: modules[%zu] is NULL", i));
    }
  }
  HostFailureWatch watch;
  auto vm_context = kiln::vm::Context::Create(device->device);
  if (!vm_context.ok()) return Wrap(vm_context.take_status());
  Ref<kiln_context_s> ctx = Ref<kiln_context_s>::Adopt(new kiln_context_s());
  if (!ctx) return OutOfHostMemory("kiln_context_create");
  ctx->device = Ref<kiln_device_s>::Retain(device);
  ctx->context = std::move(vm_context).value();
  if (options) {
    kiln::vm::Context::Limits limits;
    limits.step_budget = options->step_budget;
    limits.device_memory_budget = options->device_memory_budget;
    if (options->struct_size == sizeof(kiln_context_options_t) && options->wait_timeout_ns) {
      limits.wait_timeout_ns = options->wait_timeout_ns;
    }
    ctx->context->set_limits(limits);
  }
  for (size_t i = 0; i < module_count; ++i) {
    Status s = ctx->context->RegisterModule(modules[i]->module);
    if (!s.ok()) return Wrap(std::move(s));
    ctx->modules.push_back(Ref<kiln_module_s>::Retain(modules[i]));
  }
  if (watch.failed()) return OutOfHostMemory("kiln_context_create");
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
  HostFailureWatch watch;
  auto& functions = context->functions;
  if (functions.size() == functions.capacity()) {
    // Grown into a separate vector first: when the hook refuses its block,
    // malloc's stand-in (base/host_alloc.h) is freed with it here, and the
    // records already handed out stay where they are.
    HostVector<std::unique_ptr<kiln_function_s>> grown;
    grown.reserve(functions.empty() ? 4 : 2 * functions.size());
    if (watch.failed()) return OutOfHostMemory("kiln_context_lookup_function");
    for (auto& f : functions) grown.push_back(std::move(f));
    functions.swap(grown);
  }
  auto f = std::unique_ptr<kiln_function_s>(new kiln_function_s());
  if (!f) return OutOfHostMemory("kiln_context_lookup_function");
  f->context = context;
  f->ref = ref.value();
  f->info = &context->context->function_info(ref.value());
  functions.push_back(std::move(f));  // within capacity: no allocation
  *out_function = functions.back().get();
  return nullptr;
}

const char* kiln_function_name(kiln_function_t function) {
  return function ? function->info->name.data() : "";
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

}  // extern "C"
