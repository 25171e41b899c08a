/* Kiln runtime C API (C99).
 *
 * Load a compiled module (model.kiln), create a device and a context, look up
 * an exported function, create input tensors, invoke, read the results.
 *
 *   kiln_instance_t inst;   kiln_instance_create(&inst);
 *   kiln_device_t dev;      kiln_device_create(inst, "vulkan", NULL, -1, &dev);
 *   kiln_module_t mod;      kiln_module_load_from_file(inst, "model.kiln", &mod);
 *   kiln_context_t ctx;     kiln_context_create(dev, &mod, 1, &ctx);
 *   kiln_function_t fn;     kiln_context_lookup_function(ctx, "main", &fn);
 *   int64_t dims[] = {1, 16, 96};
 *   kiln_tensor_t x;        kiln_tensor_create(dev, KILN_DTYPE_F32, 3, dims, data,
 *                                              sizeof(data), &x);
 *   kiln_tensor_t y;        kiln_invoke(ctx, fn, &x, 1, &y, 1);
 *   kiln_tensor_read(y, out, sizeof(out));
 *   kiln_tensor_release(y); kiln_tensor_release(x); kiln_context_release(ctx);
 *   kiln_module_release(mod); kiln_device_release(dev); kiln_instance_release(inst);
 *
 * Conventions
 *  - Handles are opaque and reference counted: `*_create`/`*_load_*` return
 *    a handle holding one reference owned by the caller; `*_retain` adds one,
 *    `*_release` drops one (NULL is ignored). Objects keep what they depend
 *    on alive (a context retains its device and modules, a tensor its
 *    device), so handles may be released in any order.
 *  - Double release: releasing (or retaining) a handle whose last reference
 *    is already gone is a bug in the app. When it is caught, the call
 *    reports "kiln_tensor_release: double release of tensor handle 0x..."
 *    through the log callback (source "runtime", level ERROR) and does
 *    nothing else. Debug builds of libkiln (NDEBUG not defined, e.g. the
 *    asan preset) catch it reliably for the most recently released handles:
 *    their memory is quarantined instead of reused (the last 64 instance,
 *    device, module, context and fence handles, and the last 64 tensors), so
 *    a handle made after the first release never takes the dead one's
 *    address; under AddressSanitizer every such access is caught. Release
 *    builds catch it only while the memory has not been reused (always right
 *    after the first release; a later double release may instead release a
 *    new handle at the same address): never rely on it.
 *  - Results come back through `out_` parameters, written only on success.
 *  - Every fallible call returns kiln_status_t: NULL means OK; otherwise the
 *    caller owns the status and frees it with kiln_status_free(). The library
 *    never aborts or throws on bad input: NULL handles, wrong sizes, wrong
 *    dtypes/shapes and malformed modules are reported as statuses.
 *  - Threading: distinct objects may be used from different threads; one
 *    context must not be invoked from two threads at once.
 *  - Callbacks (log, allocator) must return normally: a C++ exception thrown
 *    from one cannot pass through the library (built without unwind
 *    tables) and ends the process.
 *  - Units: sizes are bytes; dims are element counts; tensors are dense,
 *    row-major (C order).
 *
 * Ownership (see kiln_invoke_ex): an argument is borrowed by default; it can
 * be consumed (the caller hands its reference to the call, so a streaming
 * model's state can be updated in place and round-trip with no allocation),
 * and the caller can supply preallocated output storage for any result
 * (possibly a slice of a larger buffer, made with kiln_tensor_create_view).
 * Tensors are reference-counted views of device buffers: views of one buffer
 * (results that alias, slices) keep it alive, and it is freed exactly once,
 * when the last of them is released.
 *
 * Asynchronous invocation (kiln_invoke_async): the device work of a call
 * waits on a fence and signals another; the calling thread does not block
 * on the device, results come back at once and hold valid contents once the
 * signal fence is reached. Chains of calls pass a result and a fence from
 * one call to the next without any host wait.
 *
 * Compatibility: functions are only ever added; kiln_invoke and
 * kiln_invoke_ex stay synchronous.
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function of the API is declared KILN_API: the only symbols libkiln
 * exports (the rest of the library is built with hidden visibility). */
#ifndef KILN_API
#if defined(_WIN32)
#define KILN_API
#elif defined(__GNUC__) || defined(__clang__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif
#endif

/* The library version (semantic: MAJOR.MINOR.PATCH) and the API version.
 * KILN_API_VERSION is the ABI generation: it is the SONAME of the shared
 * library (libkiln.so.1) and changes only when a function is removed or a
 * signature changes; within one API version functions are only added. */
#define KILN_VERSION_MAJOR 0
#define KILN_VERSION_MINOR 1
#define KILN_VERSION_PATCH 0
#define KILN_API_VERSION 1
/* Maximum tensor rank accepted anywhere in the API. */
#define KILN_MAX_RANK 8

/* ------------------------------------------------------------------------ */
/* Version                                                                  */
/* ------------------------------------------------------------------------ */

/* The library's version, "MAJOR.MINOR.PATCH" (e.g. "0.1.0"), of the libkiln
 * actually loaded (it may differ from the KILN_VERSION_* macros the app was
 * compiled with). Static storage. */
KILN_API const char* kiln_version(void);
/* The KILN_API_VERSION of the loaded library. */
KILN_API uint32_t kiln_api_version(void);
/* API-version check for apps that load libkiln dynamically: nonzero when the
 * loaded library implements the API of the kiln.h the app was compiled
 * with (same KILN_API_VERSION, the SONAME's number). Check once at start-up. */
#define KILN_API_VERSION_OK() (kiln_api_version() == KILN_API_VERSION)

/* ------------------------------------------------------------------------ */
/* Status                                                                   */
/* ------------------------------------------------------------------------ */

/* NULL = OK. A non-NULL status is owned by the caller (kiln_status_free). */
typedef struct kiln_status_s* kiln_status_t;

typedef enum kiln_status_code_e {
  KILN_STATUS_OK = 0,
  KILN_STATUS_INVALID_ARGUMENT = 1,   /* bad input: shape/dtype mismatch, NULL handle, bad size */
  KILN_STATUS_DATA_LOSS = 2,          /* malformed or truncated module bytes */
  KILN_STATUS_NOT_FOUND = 3,          /* missing function, file, device, driver */
  KILN_STATUS_UNIMPLEMENTED = 4,      /* unsupported feature of this build/device */
  KILN_STATUS_RESOURCE_EXHAUSTED = 5, /* host or device allocation failed */
  KILN_STATUS_FAILED_PRECONDITION = 6,/* wrong state, e.g. aliasing violation */
  KILN_STATUS_INTERNAL = 7,           /* Kiln bug or driver failure */
  KILN_STATUS_OUT_OF_RANGE = 8,       /* index/offset beyond bounds */
  KILN_STATUS_DEADLINE_EXCEEDED = 9,  /* a bounded wait timed out; nothing changed (appended) */
} kiln_status_code_t;

/* Code of `status`; KILN_STATUS_OK for NULL. */
KILN_API kiln_status_code_t kiln_status_code(kiln_status_t status);
/* Human-readable message, valid until kiln_status_free; "" for NULL. A
 * runtime built with KILN_STATUS_MESSAGES=OFF (the smallest build) returns
 * the code's name instead, e.g. "DATA_LOSS". */
KILN_API const char* kiln_status_message(kiln_status_t status);
/* "INVALID_ARGUMENT", ... ; "OK" for KILN_STATUS_OK. Static storage. */
KILN_API const char* kiln_status_code_name(kiln_status_code_t code);
/* Frees `status` (NULL is ignored). */
KILN_API void kiln_status_free(kiln_status_t status);

/* ------------------------------------------------------------------------ */
/* Diagnostics                                                              */
/* ------------------------------------------------------------------------ */

typedef enum kiln_log_level_e {
  KILN_LOG_ERROR = 0,
  KILN_LOG_WARNING = 1,
  KILN_LOG_INFO = 2,
} kiln_log_level_t;

/* Receives one diagnostic the runtime emits outside of a returned status:
 * `source` is "vulkan validation" (a Vulkan validation-layer message, with
 * KILN_VALIDATION=1), "vulkan loader", "vulkan" or "runtime" (API misuse
 * the library caught, e.g. a double release). `message` is valid only
 * during the call. May be called on any thread, also on the driver's. */
typedef void (*kiln_log_callback_t)(void* user_data, kiln_log_level_t level, const char* source,
                                    const char* message);

/* Routes every diagnostic of the process to `callback` (NULL: back to the
 * default, stderr lines "kiln: <source>: <message>"). Process-wide; set it
 * before creating instances (messages already being delivered on other
 * threads may reach the previous callback). */
KILN_API void kiln_set_log_callback(kiln_log_callback_t callback, void* user_data);

/* ------------------------------------------------------------------------ */
/* Host memory                                                              */
/* ------------------------------------------------------------------------ */

/* The app's allocator for the runtime's host memory (kiln_set_allocator). */
typedef struct kiln_allocator_t {
  uint32_t struct_size; /* sizeof(kiln_allocator_t), set by the app */
  void* user_data;      /* passed to both callbacks */
  /* Returns `size` bytes aligned to `alignment` (a power of two, >= 16), or
   * NULL when it cannot (the runtime then fails the call with
   * KILN_STATUS_RESOURCE_EXHAUSTED). May be called on any thread at once. */
  void* (*allocate)(void* user_data, size_t size, size_t alignment);
  /* Frees a pointer `allocate` returned (never NULL). Any thread. */
  void (*free)(void* user_data, void* ptr);
} kiln_allocator_t;

/* Routes the runtime's host allocations through `allocator` (NULL: back to
 * malloc/free). Process-wide, like kiln_set_log_callback; call it before
 * creating the first instance, or after releasing every object.
 *
 * Covered: every object behind a handle (instances, devices, modules,
 * contexts, functions, tensors, fences, statuses), the HAL's objects (Vulkan
 * devices, buffers, command buffers, pipelines, semaphores), the VM's
 * (modules, contexts, buffer views, command-buffer states), the pools of
 * per-invoke objects, the copy of a misaligned module, the C API's invoke
 * scratch, the VM's and the HAL's tables (built at module load and context
 * creation) and status messages: on the success path every host allocation
 * of the runtime. Not covered: temporary strings that format an error
 * message, and the Vulkan loader's and driver's own memory (they allocate
 * through the system's malloc).
 *
 * Steady state: once warm, kiln_invoke/kiln_invoke_ex/kiln_invoke_async
 * with results released make no call to `allocate`. When the last instance
 * is released, the runtime's caches (pooled blocks) go back to `free`, so
 * every block `allocate` returned has been freed.
 *
 * Failure: an `allocate` that returns NULL makes the creating call fail
 * with RESOURCE_EXHAUSTED "out of host memory" and leave nothing behind;
 * never a crash. (A container whose growth was refused carries on with
 * malloc for the moment; the call still fails and frees it.)
 *
 * Errors: INVALID_ARGUMENT (struct_size too small, NULL callback),
 * FAILED_PRECONDITION while memory of the current allocator is in use. */
KILN_API kiln_status_t kiln_set_allocator(const kiln_allocator_t* allocator);

/* ------------------------------------------------------------------------ */
/* Element types (numbering equals kiln::DType and the module schema)       */
/* ------------------------------------------------------------------------ */

typedef enum kiln_dtype_e {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_F16 = 2,
  KILN_DTYPE_I64 = 3,
  KILN_DTYPE_I32 = 4,
  KILN_DTYPE_I16 = 5,
  KILN_DTYPE_I8 = 6,
  KILN_DTYPE_U8 = 7,
  KILN_DTYPE_BOOL = 8, /* one byte per element, 0 or 1 */
  KILN_DTYPE_F64 = 9,
  /* Appended; values are never renumbered. */
  KILN_DTYPE_BF16 = 10, /* bfloat16: the top 16 bits of an IEEE f32 */
  KILN_DTYPE_U16 = 11,
  KILN_DTYPE_U32 = 12,
  KILN_DTYPE_U64 = 13,
} kiln_dtype_t;

/* Bytes per element; 0 for KILN_DTYPE_INVALID or unknown values. */
KILN_API size_t kiln_dtype_size(kiln_dtype_t dtype);
/* "f32", "f16", "i64", "i32", "i16", "i8", "u8", "i1", "f64", "bf16", "u16",
 * "u32", "u64"; "invalid". */
KILN_API const char* kiln_dtype_name(kiln_dtype_t dtype);

/* ABI ownership of an exported argument (see docs/design.md). */
typedef enum kiln_ownership_e {
  KILN_OWNERSHIP_BORROW = 0,         /* caller keeps the buffer; callee never writes it */
  KILN_OWNERSHIP_CONSUME = 1,        /* ownership passes to the callee */
  KILN_OWNERSHIP_OUTPUT_STORAGE = 2, /* caller-supplied storage for a result */
} kiln_ownership_t;

/* ------------------------------------------------------------------------ */
/* Handles                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct kiln_instance_s* kiln_instance_t;
typedef struct kiln_device_s* kiln_device_t;
typedef struct kiln_module_s* kiln_module_t;
typedef struct kiln_context_s* kiln_context_t;
/* Borrowed from its context: valid until the context is destroyed; never
 * released by the caller. */
typedef const struct kiln_function_s* kiln_function_t;
typedef struct kiln_tensor_s* kiln_tensor_t;
typedef struct kiln_fence_s* kiln_fence_t;

/* ------------------------------------------------------------------------ */
/* Instance                                                                 */
/* ------------------------------------------------------------------------ */

/* Creates the runtime instance (process-wide state; cheap). */
KILN_API kiln_status_t kiln_instance_create(kiln_instance_t* out_instance);
KILN_API void kiln_instance_retain(kiln_instance_t instance);
KILN_API void kiln_instance_release(kiln_instance_t instance);

/* ------------------------------------------------------------------------ */
/* Device                                                                   */
/* ------------------------------------------------------------------------ */

/* Kind of device (numbering of VkPhysicalDeviceType). */
typedef enum kiln_device_type_e {
  KILN_DEVICE_TYPE_OTHER = 0,
  KILN_DEVICE_TYPE_INTEGRATED_GPU = 1,
  KILN_DEVICE_TYPE_DISCRETE_GPU = 2,
  KILN_DEVICE_TYPE_VIRTUAL_GPU = 3,
  KILN_DEVICE_TYPE_CPU = 4, /* e.g. lavapipe/llvmpipe, SwiftShader */
} kiln_device_type_t;

/* One device as its driver reports it (kiln_enumerate_devices). */
typedef struct kiln_device_info_t {
  uint32_t struct_size;        /* written by the library (as kiln_device_stats_t) */
  char name[256];              /* NUL-terminated, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)" */
  kiln_device_type_t type;
  uint32_t vendor_id;          /* PCI vendor id: 0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel,
                                * 0x13b5 ARM, 0x5143 Qualcomm, 0x10005 Mesa (lavapipe) */
  uint32_t device_id;
  uint32_t driver_version;     /* vendor-encoded driver version */
  uint32_t api_version;        /* Vulkan version the device supports (VK_MAKE_API_VERSION) */
} kiln_device_info_t;

/* Lists the devices of `driver` ("vulkan", case-insensitive) in enumeration
 * order: the order `device_index` of kiln_device_create counts in. Writes
 * min(count, capacity) entries to out_infos[0..) (out_infos may be NULL when
 * capacity is 0) and the number of devices to *out_count.
 * Errors: NOT_FOUND (unknown driver: the message lists the drivers),
 * UNIMPLEMENTED (no Vulkan loader). Cost: creates and destroys a driver
 * instance (milliseconds). */
KILN_API kiln_status_t kiln_enumerate_devices(kiln_instance_t instance, const char* driver,
                                              kiln_device_info_t* out_infos, size_t capacity,
                                              size_t* out_count);

/* Creates a device of `driver` ("vulkan"; case-insensitive). Selection: `device_name` is a
 * case-insensitive substring of the device name (NULL or "": any); otherwise
 * `device_index` in enumeration order (-1: the first). Env KILN_VALIDATION=1
 * enables the Vulkan validation layer.
 * Errors: NOT_FOUND (unknown driver, no matching device: the message lists
 * the devices), UNIMPLEMENTED (no Vulkan loader, missing device features).
 * Cost: milliseconds to tens of milliseconds. */
KILN_API kiln_status_t kiln_device_create(kiln_instance_t instance, const char* driver,
                                 const char* device_name, int32_t device_index,
                                 kiln_device_t* out_device);
KILN_API void kiln_device_retain(kiln_device_t device);
KILN_API void kiln_device_release(kiln_device_t device);
/* e.g. "llvmpipe (LLVM 15.0.6, 256 bits)". Owned by the device; "" for NULL. */
KILN_API const char* kiln_device_name(kiln_device_t device);

/* Counters of work done on a device (what every tool's --stats prints).
 * All counts accumulate from device creation or the last stats reset. */
typedef struct kiln_device_stats_t {
  /* Written by the library: the bytes it filled (sizeof this struct in the
   * library's kiln.h). Fields are only ever appended: an app that may run on
   * an older libkiln reads an appended field only when its offset is below
   * struct_size. */
  uint32_t struct_size;
  uint64_t device_allocations;      /* buffers allocated */
  uint64_t device_bytes_allocated;  /* sum of their sizes, bytes */
  uint64_t device_bytes_live;       /* currently allocated, bytes */
  uint64_t device_peak_bytes;       /* high-water mark of bytes live */
  uint64_t copies;                  /* device buffer copies recorded */
  uint64_t copy_bytes;              /* bytes copied by them */
  uint64_t transfers;               /* host<->device staging transfers */
  uint64_t fills;                   /* buffer fills recorded */
  uint64_t dispatches;              /* compute dispatches recorded */
  uint64_t barriers;                /* barriers recorded */
  uint64_t submissions;             /* queue submissions */
  uint64_t host_allocations_invoke; /* host allocations made inside kiln_invoke */
  /* Appended (timeline): */
  uint64_t host_waits;      /* times the runtime blocked the host on the device inside
                             * an invoke: one at the end of a synchronous invoke, one
                             * per device value read on the host (branch conditions,
                             * trip counts), none for an asynchronous invoke of a
                             * program without such reads. Application fence waits
                             * are not counted. */
  uint64_t deferred_frees;  /* buffers released by every holder while device work
                             * using them was in flight, freed when that work's
                             * timepoint was reached (queue-ordered frees) */
  /* Appended (recorded command buffers): */
  uint64_t command_buffer_recordings; /* command buffers recorded and kept for
                                       * replay (functions whose command sequence
                                       * is static; once per argument binding set) */
  uint64_t command_buffer_replays;    /* invocations that resubmitted a recorded
                                       * command buffer instead of interpreting and
                                       * recording (its dispatches, barriers,
                                       * copies and fills are counted again) */
} kiln_device_stats_t;

/* Copies the current counters into *out_stats. */
KILN_API kiln_status_t kiln_device_stats(kiln_device_t device, kiln_device_stats_t* out_stats);
/* Zeroes every counter except device_bytes_live; the peak restarts at the
 * bytes live now. */
KILN_API kiln_status_t kiln_device_stats_reset(kiln_device_t device);

/* ------------------------------------------------------------------------ */
/* Module                                                                   */
/* ------------------------------------------------------------------------ */

/* Loads and verifies a module from `data` (`size` bytes). Zero-copy: the
 * bytes are NOT copied and must stay alive and unchanged until the module
 * and every context using it are released (8-byte alignment required for
 * zero-copy, 64 for aligned weights; misaligned data is copied once).
 * Errors: DATA_LOSS for anything malformed (message names the function and
 * bytecode offset), UNIMPLEMENTED for features this runtime lacks.
 * Cost: O(size) verification. */
KILN_API kiln_status_t kiln_module_load_from_memory(kiln_instance_t instance, const void* data,
                                           size_t size, kiln_module_t* out_module);
/* Loads and verifies `path`, mapped read-only (mmap); the mapping lives as
 * long as the module. Errors: NOT_FOUND (cannot open), DATA_LOSS. */
KILN_API kiln_status_t kiln_module_load_from_file(kiln_instance_t instance, const char* path,
                                         kiln_module_t* out_module);
KILN_API void kiln_module_retain(kiln_module_t module);
KILN_API void kiln_module_release(kiln_module_t module);
/* Module name; owned by the module; "" for NULL. */
KILN_API const char* kiln_module_name(kiln_module_t module);

/* ------------------------------------------------------------------------ */
/* Context and functions                                                    */
/* ------------------------------------------------------------------------ */

/* Links `modules[0..module_count)` in order on `device`: resolves imports,
 * creates the GPU pipelines of every executable, runs each module's
 * initializer (uploads constants). Retains the device and the modules.
 * Multi-module programs: an import named "module.function" resolves to that
 * export of a module earlier in `modules` (names must be unique); calls pass
 * tensors between modules on the device, with no copy and no host round
 * trip. Its signature is checked here: arity, and dtypes and shapes when the
 * import is typed.
 * Errors: NOT_FOUND for unresolvable imports (unknown hal function, no such
 * module or export), INVALID_ARGUMENT for a hal signature mismatch or a
 * repeated module name, FAILED_PRECONDITION for an import whose signature
 * does not match the export ("module 'driver': import 0 'mel.main' expects
 * (tensor<4xf32>) -> (tensor<8xf32>), module 'mel' exports main(x:
 * tensor<4xf32>) -> (m: tensor<4xf32>)"), driver errors from pipeline
 * creation, the initializer's error. Cost: pipeline creation (milliseconds
 * per executable) plus constant uploads. */
KILN_API kiln_status_t kiln_context_create(kiln_device_t device, const kiln_module_t* modules,
                                  size_t module_count, kiln_context_t* out_context);
/* Limits on what the context's modules may consume (docs/security.md: a
 * module is untrusted input). Zero-initialize, set struct_size, then the
 * fields wanted; 0 leaves a limit off.
 *  - step_budget: branches and calls the bytecode interpreter runs per
 *    invocation (and per initializer). Past it the call fails with
 *    RESOURCE_EXHAUSTED ("step budget ... exhausted"): a program that never
 *    returns is bounded. Kiln's own programs take a few per loop trip.
 *  - device_memory_budget: bytes of device memory the context's modules may
 *    hold allocated (their allocations not yet freed, including results the
 *    app still holds); an allocation a module makes past it fails with
 *    RESOURCE_EXHAUSTED. Each context has its own budget; the app's own
 *    tensors (kiln_tensor_create) do not count.
 *  - wait_timeout_ns: the longest the host blocks on the context's device
 *    work in one call: the end of kiln_invoke/kiln_invoke_ex (including
 *    their reads back mid-program), and kiln_tensor_read/kiln_tensor_write
 *    of tensors that a kiln_invoke_async of this context writes. Past it the
 *    call fails with DEADLINE_EXCEEDED. A
 *    synchronous invocation that timed out returns no results, but its
 *    device work stays queued and runs once what it is queued behind (an
 *    unsignalled wait fence of earlier asynchronous work) is done: module
 *    state it updates then changes; its buffers are freed after it.
 * Either way the context stays usable and nothing leaks. Callers built
 * before wait_timeout_ns existed pass the shorter struct_size; it is
 * accepted (no timeout). */
typedef struct kiln_context_options_t {
  size_t struct_size; /* sizeof(kiln_context_options_t) */
  uint64_t step_budget;
  uint64_t device_memory_budget; /* bytes */
  uint64_t wait_timeout_ns;      /* appended; 0: no limit */
} kiln_context_options_t;
/* kiln_context_create with `options` (NULL: no limits). The limits hold
 * from the first initializer on. Errors: those of kiln_context_create;
 * INVALID_ARGUMENT for an unknown struct_size. */
KILN_API kiln_status_t kiln_context_create_with_options(kiln_device_t device,
                                                        const kiln_module_t* modules,
                                                        size_t module_count,
                                                        const kiln_context_options_t* options,
                                                        kiln_context_t* out_context);
KILN_API void kiln_context_retain(kiln_context_t context);
/* Releasing the last reference waits until the context's device work is
 * done (its buffers are freed in queue order), without a time limit: work
 * held back by a wait fence that is never signalled would block it forever.
 * kiln_context_release_within bounds that wait. */
KILN_API void kiln_context_release(kiln_context_t context);
/* Blocks until every invocation submitted on `context` has finished, or
 * `timeout_ns` nanoseconds elapse (0 polls; UINT64_MAX: no limit), then
 * frees what finished work released (kiln_context_collect).
 * Errors: DEADLINE_EXCEEDED (nothing
 * changes; e.g. work waits on a wait fence not signalled yet), driver
 * errors. */
KILN_API kiln_status_t kiln_context_wait_idle(kiln_context_t context, uint64_t timeout_ns);
/* kiln_context_release with a deadline: when this is the last reference
 * and the context's work does not finish within `timeout_ns`, returns the
 * timeout status of kiln_context_wait_idle and releases NOTHING (the caller
 * still owns its reference: signal the fences the work waits on, then call
 * again, or keep the context). Otherwise releases the reference and returns
 * NULL. NULL `context` is ignored. */
KILN_API kiln_status_t kiln_context_release_within(kiln_context_t context, uint64_t timeout_ns);

/* Finds the exported function `name`: "function" searches the modules in
 * registration order (the first match wins); "module.function" names the
 * module (kiln_module_name), e.g. "driver.main" when several modules export
 * "main". Errors: NOT_FOUND (message lists the exported functions). */
KILN_API kiln_status_t kiln_context_lookup_function(kiln_context_t context, const char* name,
                                           kiln_function_t* out_function);

/* Signature of one argument or result. `name` is owned by the module. */
typedef struct kiln_tensor_signature_t {
  uint32_t struct_size;  /* written by the library (as kiln_device_stats_t) */
  const char* name;
  kiln_dtype_t dtype;
  size_t rank;
  int64_t dims[KILN_MAX_RANK];  /* dims[0..rank) are valid */
  kiln_ownership_t ownership;   /* arguments only; BORROW for results */
} kiln_tensor_signature_t;

/* Function name, argument and result counts (0/"" for NULL). */
KILN_API const char* kiln_function_name(kiln_function_t function);
KILN_API size_t kiln_function_arg_count(kiln_function_t function);
KILN_API size_t kiln_function_result_count(kiln_function_t function);
/* Signature of argument / result `index`. Errors: OUT_OF_RANGE, INVALID_ARGUMENT. */
KILN_API kiln_status_t kiln_function_arg(kiln_function_t function, size_t index,
                                kiln_tensor_signature_t* out_signature);
KILN_API kiln_status_t kiln_function_result(kiln_function_t function, size_t index,
                                   kiln_tensor_signature_t* out_signature);

/* ------------------------------------------------------------------------ */
/* Tensors                                                                  */
/* ------------------------------------------------------------------------ */

/* Creates a tensor of `dtype` and shape dims[0..rank) in a new host-visible
 * device buffer. If `data` is non-NULL, `data_bytes` must equal the tensor's
 * byte size (product of dims x dtype size) and the bytes are copied in;
 * if NULL the tensor is zero-filled and `data_bytes` is ignored.
 * Errors: INVALID_ARGUMENT (bad dtype, rank > KILN_MAX_RANK, negative dim,
 * size mismatch), RESOURCE_EXHAUSTED. Counts one device allocation. */
KILN_API kiln_status_t kiln_tensor_create(kiln_device_t device, kiln_dtype_t dtype, size_t rank,
                                 const int64_t* dims, const void* data, size_t data_bytes,
                                 kiln_tensor_t* out_tensor);
KILN_API void kiln_tensor_retain(kiln_tensor_t tensor);
KILN_API void kiln_tensor_release(kiln_tensor_t tensor);

/* Creates a tensor viewing part of `parent`'s storage: `byte_offset` bytes
 * after the parent's first byte, with `dtype` and shape dims[0..rank). No
 * device memory is allocated and nothing is copied: writes through either
 * tensor are seen by the other. Views of views resolve to the root storage
 * (c = view of b = view of a holds a's buffer directly). The view keeps the
 * storage alive, not the parent handle: `parent` may be released first.
 * Typical use: one row of a batch buffer as output storage
 * (kiln_invoke_ex), e.g. byte_offset = row * row_bytes. Dispatches that
 * bind a view need its absolute offset aligned to the device's storage
 * buffer offset alignment (at most 256 bytes); an unaligned output storage
 * still works through a copy.
 * Errors: INVALID_ARGUMENT (NULL handles, bad dtype, rank > KILN_MAX_RANK,
 * negative dim), OUT_OF_RANGE (the view does not lie inside the parent's
 * bytes). Cost: one small host allocation (pooled). */
KILN_API kiln_status_t kiln_tensor_create_view(kiln_tensor_t parent, size_t byte_offset,
                                      kiln_dtype_t dtype, size_t rank, const int64_t* dims,
                                      kiln_tensor_t* out_tensor);

/* Copies the tensor's contents to `dst`; `dst_bytes` must equal
 * kiln_tensor_byte_size() (INVALID_ARGUMENT otherwise). Blocks until the
 * data is on the host (a staging copy when the memory is not host visible).
 * A result (or output storage, or any view of that storage) of a
 * kiln_invoke_async whose work is still in flight is never read stale: the
 * call first waits until that invocation's signal_fence is reached: without
 * a time limit, or at most the context's wait_timeout_ns
 * (kiln_context_options_t; DEADLINE_EXCEEDED, nothing read).
 * kiln_tensor_wait bounds the wait per call. */
KILN_API kiln_status_t kiln_tensor_read(kiln_tensor_t tensor, void* dst, size_t dst_bytes);

/* Copies `src_bytes` bytes from `src` into the tensor's existing storage (a
 * tensor of its own or a view): the streaming-input counterpart of
 * kiln_tensor_create, with no allocation. `src_bytes` must equal
 * kiln_tensor_byte_size() (INVALID_ARGUMENT otherwise). Every other tensor
 * sharing the storage (views, aliased results) sees the new bytes. Waits
 * first for asynchronous work that writes the storage (as kiln_tensor_read);
 * the caller must not write a tensor that in-flight work reads (an argument
 * of kiln_invoke_async before its signal_fence). Host-visible storage (every
 * kiln_tensor_create tensor) is written directly: no device or host
 * allocation; other storage goes through a staging copy (one device
 * allocation, one transfer, one wait). Errors: INVALID_ARGUMENT (NULL, size),
 * driver errors. */
KILN_API kiln_status_t kiln_tensor_write(kiln_tensor_t tensor, const void* src, size_t src_bytes);

/* Blocks until the device work of asynchronous invocations that writes the
 * tensor's storage (as a result or output storage) has finished, or
 * `timeout_ns` nanoseconds elapse (0 polls; UINT64_MAX waits forever).
 * Returns at once for tensors with no such work in flight.
 * Errors: INVALID_ARGUMENT (NULL), DEADLINE_EXCEEDED when the time ran out (nothing changes: wait again), driver
 * errors. No host allocation. */
KILN_API kiln_status_t kiln_tensor_wait(kiln_tensor_t tensor, uint64_t timeout_ns);

KILN_API kiln_dtype_t kiln_tensor_dtype(kiln_tensor_t tensor);   /* INVALID for NULL */
KILN_API size_t kiln_tensor_rank(kiln_tensor_t tensor);          /* 0 for NULL */
/* Pointer to `rank` dims, owned by the tensor; NULL for NULL. */
KILN_API const int64_t* kiln_tensor_dims(kiln_tensor_t tensor);
KILN_API size_t kiln_tensor_byte_size(kiln_tensor_t tensor);     /* 0 for NULL */

/* ------------------------------------------------------------------------ */
/* Invocation                                                               */
/* ------------------------------------------------------------------------ */

/* Runs `function` synchronously. `args[0..arg_count)` are borrowed (the
 * callee does not keep them) and must match the argument signatures exactly
 * (dtype and shape) and live on the context's device. On success
 * `out_results[0..result_count)` receive new tensors owned by the caller
 * (kiln_tensor_release each); on failure they are left unchanged.
 * Errors: INVALID_ARGUMENT ("argument 0 'x': expected tensor<1x3xf32>, got
 * tensor<1x4xf32>", arity mismatch, NULL handles), FAILED_PRECONDITION (an
 * input aliases output storage), errors raised while running, annotated with
 * function, bytecode offset and source location.
 * Waiting: the call blocks until its device work is done; it runs after
 * earlier kiln_invoke_async work of the context, so work held back by an
 * unsignalled wait fence holds it too. The block is bounded by the
 * context's wait_timeout_ns (kiln_context_options_t; DEADLINE_EXCEEDED),
 * else unbounded (kiln_context_wait_idle first bounds it). */
KILN_API kiln_status_t kiln_invoke(kiln_context_t context, kiln_function_t function,
                          const kiln_tensor_t* args, size_t arg_count,
                          kiln_tensor_t* out_results, size_t result_count);

/* Per-entry flags of kiln_invoke_ex (bit mask). */
typedef enum kiln_arg_flag_bits_e {
  KILN_ARG_BORROW = 0,                /* default: the caller keeps the tensor */
  KILN_ARG_CONSUME = 1u << 0,         /* the call takes the caller's reference */
  KILN_ARG_OUTPUT_STORAGE = 1u << 1,  /* storage for result `result_index` */
} kiln_arg_flag_bits_t;
typedef uint32_t kiln_arg_flags_t;

/* One entry of kiln_invoke_ex. */
typedef struct kiln_invoke_arg_t {
  kiln_tensor_t tensor;
  kiln_arg_flags_t flags;  /* kiln_arg_flag_bits_t; CONSUME and OUTPUT_STORAGE exclude
                            * each other */
  int32_t result_index;    /* OUTPUT_STORAGE: the result it backs; ignored otherwise */
} kiln_invoke_arg_t;

/* Runs `function` synchronously with per-argument ownership.
 *
 * `args[0..arg_count)` holds the function's arguments in order (every entry
 * without KILN_ARG_OUTPUT_STORAGE; there must be kiln_function_arg_count of
 * them, each matching its signature's dtype and shape exactly) and, anywhere
 * in the array, at most one KILN_ARG_OUTPUT_STORAGE entry per result.
 *
 * KILN_ARG_BORROW: as kiln_invoke; the tensor is unchanged by the call.
 *
 * KILN_ARG_CONSUME: the caller hands one reference of `tensor` to the call,
 * which releases it in every case (success or any error): do not use or
 * release that reference afterwards (kiln_tensor_retain first to keep
 * one). If that was the only reference to the tensor, its storage and the
 * buffer under it (no other tensor viewing it, no result still holding it),
 * the callee owns the storage and may update it in place or return it as a
 * result: a state tensor fed back from the previous call's result is then
 * reused with no allocation and no copy. Otherwise the callee treats it as
 * borrowed and, where it needs storage of its own, allocates or makes a
 * counted copy (stats `copies`), so every other holder keeps seeing the old
 * values.
 *
 * KILN_ARG_OUTPUT_STORAGE: `tensor` (borrowed) receives result
 * `result_index`; it may be a view into a larger buffer
 * (kiln_tensor_create_view). Its dtype must equal the result's and it must
 * have at least the result's byte size (its shape may differ). On success
 * out_results[result_index] is a new reference to `tensor` itself when the
 * shapes are equal (else a new tensor viewing its first bytes, typed as the
 * result), holding the result's values. Programs that write the storage
 * directly (hal.buffer_view.output_storage) cost nothing extra; otherwise
 * the result is copied into it (one counted copy).
 *
 * On success `out_results[0..result_count)` receive new references owned by
 * the caller (kiln_tensor_release each); results may alias each other or an
 * argument (the same buffer twice, two slices of one buffer): each handle is
 * released separately and the storage is freed once, after the last. On
 * failure the results are left unchanged.
 *
 * Errors: INVALID_ARGUMENT (NULL handles, wrong arity or types, both flags
 * set, result_index out of range or given twice, storage dtype or size
 * "output storage for result 0 'y': tensor<2xf32> (8 bytes) is smaller than
 * tensor<4xf32> (16 bytes)"), FAILED_PRECONDITION (an argument overlapping
 * an output storage: "argument 1 'x' overlaps the output storage of result 0
 * 'y' (bytes [0, 16) and [8, 24) of one allocation)", or two overlapping
 * storages), and errors raised while running (as kiln_invoke).
 * Cost: as kiln_invoke; once warm, a program using allocate_cached /
 * take_or_allocate with results released and state consumed makes no host
 * and no device allocation per call. */
KILN_API kiln_status_t kiln_invoke_ex(kiln_context_t context, kiln_function_t function,
                             const kiln_invoke_arg_t* args, size_t arg_count,
                             kiln_tensor_t* out_results, size_t result_count);

/* ------------------------------------------------------------------------ */
/* Fences and asynchronous invocation                                       */
/* ------------------------------------------------------------------------ */

/* A fence is a point on a device timeline (a timeline semaphore and a
 * value): it starts unsignalled and is signalled exactly once, by the host
 * (kiln_fence_signal) or by the device when an asynchronous invocation
 * finishes (kiln_invoke_async's signal_fence). Any number of invocations may
 * wait on it. For the next point in time, kiln_fence_reset a reached fence
 * (no allocation: a streaming loop can ping-pong two fences) or create a new
 * one.
 * Errors: INVALID_ARGUMENT (NULL), RESOURCE_EXHAUSTED, driver errors.
 * Cost: one timeline semaphore (a few microseconds). */
KILN_API kiln_status_t kiln_fence_create(kiln_device_t device, kiln_fence_t* out_fence);
KILN_API void kiln_fence_retain(kiln_fence_t fence);
/* Releasing the last reference of a fence that submitted work still waits
 * on or signals blocks until that work has retired: signal every wait fence
 * you handed to kiln_invoke_async before releasing it (this wait has no
 * time limit; kiln_fence_release_within bounds it). A fence whose point is
 * also a context's last signal point (the signal_fence of that context's
 * latest kiln_invoke_async) is kept alive by the context and never blocks
 * here; the context's release waits instead. */
KILN_API void kiln_fence_release(kiln_fence_t fence);
/* kiln_fence_release with a deadline (as kiln_context_release_within): when
 * this release would block (see kiln_fence_release) and that work does not
 * retire within `timeout_ns` (0 polls; UINT64_MAX: no limit), returns
 * DEADLINE_EXCEEDED and releases NOTHING
 * (the caller still owns its reference: signal the fences the work waits
 * on, then call again). Otherwise releases the reference and returns NULL.
 * NULL `fence` is ignored; a released handle gives INVALID_ARGUMENT. */
KILN_API kiln_status_t kiln_fence_release_within(kiln_fence_t fence, uint64_t timeout_ns);
/* Signals `fence` from the host: device work waiting on it may start.
 * Errors: FAILED_PRECONDITION when it was already signalled or is the
 * signal fence of an invocation. Never blocks. */
KILN_API kiln_status_t kiln_fence_signal(kiln_fence_t fence);
/* Re-arms a fence for the next point on its timeline: afterwards it is
 * unsignalled and may be signalled again (kiln_fence_signal, or as the
 * signal_fence of kiln_invoke_async). Work already submitted that waits on
 * the fence waited for the reached point and is unaffected. A fence with
 * nothing scheduled is left as it is. Not thread-safe against concurrent use
 * of the same fence. Errors: INVALID_ARGUMENT (NULL), FAILED_PRECONDITION
 * when its scheduled signal has not been reached yet. Never blocks; no host
 * allocation. */
KILN_API kiln_status_t kiln_fence_reset(kiln_fence_t fence);
/* *out_signaled = 1 when the fence has been reached, else 0. Never blocks. */
KILN_API kiln_status_t kiln_fence_query(kiln_fence_t fence, int* out_signaled);
/* Blocks until `fence` is signalled or `timeout_ns` nanoseconds elapse
 * (0 polls; UINT64_MAX waits forever). Errors: FAILED_PRECONDITION with
 * "timeout" in the message when the time ran out (the fence is unchanged:
 * wait again or query), driver errors (device lost). */
KILN_API kiln_status_t kiln_fence_wait(kiln_fence_t fence, uint64_t timeout_ns);

/* Runs `function` asynchronously, with the ownership rules of
 * kiln_invoke_ex (`args` as there: borrowed, consumed and output-storage
 * entries).
 *
 *  - The device work of the call waits until `wait_fence` is signalled
 *    (NULL: no wait; it is still ordered after every earlier invocation of
 *    this context, which runs on the same queue).
 *  - `signal_fence` (required, unsignalled, not used as a signal fence
 *    before) is signalled once all of the call's device work is done.
 *  - The call returns as soon as the work is recorded and submitted:
 *    `out_results` receive new tensors at once, whose contents are valid
 *    once `signal_fence` is reached; kiln_tensor_read of a result (or of
 *    output storage) waits for that point by itself, and kiln_tensor_wait
 *    waits with a timeout. They may be passed straight to another
 *    kiln_invoke_async whose wait_fence is this signal_fence: the second
 *    call's device work then starts after the first one's, with no host
 *    wait in between.
 *  - Tensors may be released at any time, also while the work using them
 *    is in flight: their memory is freed once that work's timepoint is
 *    reached (queue-ordered free; stats deferred_frees), which the context
 *    notices without blocking at its next invoke, kiln_context_collect, or
 *    at kiln_context_release (which waits for the context's work).
 *  - The calling thread does not block on the device, except for programs
 *    that read device values on the host to decide control flow (a data
 *    dependent branch or trip count): each such read waits for the work
 *    before it, including for `wait_fence` (stats host_waits). Programs
 *    compiled before the timeline existed (ending in execute_and_wait) also
 *    block until their work is done.
 *  - Arguments, output storage and consumed tensors must not be written by
 *    the host until `signal_fence` is reached.
 *
 * Errors: as kiln_invoke_ex; INVALID_ARGUMENT (NULL signal_fence, a fence
 * of another device, wait_fence == signal_fence), FAILED_PRECONDITION
 * (signal_fence already signalled or claimed by another call). When the
 * call fails before submitting anything, signal_fence is left untouched
 * (reusable); once work was submitted it is signalled even if a later step
 * fails, so waiters never hang (the results are then left unchanged).
 * Cost: recording + submission; once warm, with results released, no host
 * allocation. */
KILN_API kiln_status_t kiln_invoke_async(kiln_context_t context, kiln_function_t function,
                                const kiln_invoke_arg_t* args, size_t arg_count,
                                kiln_fence_t wait_fence, kiln_fence_t signal_fence,
                                kiln_tensor_t* out_results, size_t result_count);

/* Frees the memory of tensors released while device work using them was in
 * flight, for the work that has finished. Never blocks (one timeline
 * query). Every invoke does this first; call it after kiln_fence_wait to
 * reclaim memory without invoking again. */
KILN_API kiln_status_t kiln_context_collect(kiln_context_t context);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KILN_KILN_H_ */
