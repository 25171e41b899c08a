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
 *    `*_release` drops one (NULL is ignored). Objects keep what they depend on
 *    alive (a context retains its device and modules, a tensor its device), so
 *    handles may be released in any order.
 *  - Results come back through `out_` parameters, written only on success.
 *  - Every fallible call returns kiln_status_t: NULL means OK; otherwise the
 *    caller owns the status and frees it with kiln_status_free(). The library
 *    never aborts or throws on bad input: NULL handles, wrong sizes, wrong
 *    dtypes/shapes and malformed modules are reported as statuses.
 *  - Threading: distinct objects may be used from different threads; one
 *    context must not be invoked from two threads at once.
 *  - Units: sizes are bytes; dims are element counts; tensors are dense,
 *    row-major (C order).
 *
 * Compatibility: functions are only ever added. Planned additions (not yet
 * present): per-argument ownership flags (consume, output storage) and
 * asynchronous invocation with wait/signal fences, as new functions taking an
 * options struct; kiln_invoke keeps its current meaning.
 */
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_API_VERSION 1
/* Maximum tensor rank accepted anywhere in the API. */
#define KILN_MAX_RANK 8

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
} kiln_status_code_t;

/* Code of `status`; KILN_STATUS_OK for NULL. */
kiln_status_code_t kiln_status_code(kiln_status_t status);
/* Human-readable message, valid until kiln_status_free; "" for NULL. */
const char* kiln_status_message(kiln_status_t status);
/* "INVALID_ARGUMENT", ... ; "OK" for KILN_STATUS_OK. Static storage. */
const char* kiln_status_code_name(kiln_status_code_t code);
/* Frees `status` (NULL is ignored). */
void kiln_status_free(kiln_status_t status);

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
} kiln_dtype_t;

/* Bytes per element; 0 for KILN_DTYPE_INVALID or unknown values. */
size_t kiln_dtype_size(kiln_dtype_t dtype);
/* "f32", "f16", "i64", "i32", "i16", "i8", "u8", "i1", "f64"; "invalid". */
const char* kiln_dtype_name(kiln_dtype_t dtype);

/* ABI ownership of an exported argument (see DESIGN.md). */
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

/* ------------------------------------------------------------------------ */
/* Instance                                                                 */
/* ------------------------------------------------------------------------ */

/* Creates the runtime instance (process-wide state; cheap). */
kiln_status_t kiln_instance_create(kiln_instance_t* out_instance);
void kiln_instance_retain(kiln_instance_t instance);
void kiln_instance_release(kiln_instance_t instance);

/* ------------------------------------------------------------------------ */
/* Device                                                                   */
/* ------------------------------------------------------------------------ */

/* Creates a device of `driver` ("vulkan"). Selection: `device_name` is a
 * case-insensitive substring of the device name (NULL or "": any); otherwise
 * `device_index` in enumeration order (-1: the first). Env KILN_VALIDATION=1
 * enables the Vulkan validation layer.
 * Errors: NOT_FOUND (unknown driver, no matching device: the message lists
 * the devices), UNIMPLEMENTED (no Vulkan loader, missing device features).
 * Cost: milliseconds to tens of milliseconds. */
kiln_status_t kiln_device_create(kiln_instance_t instance, const char* driver,
                                 const char* device_name, int32_t device_index,
                                 kiln_device_t* out_device);
void kiln_device_retain(kiln_device_t device);
void kiln_device_release(kiln_device_t device);
/* e.g. "llvmpipe (LLVM 15.0.6, 256 bits)". Owned by the device; "" for NULL. */
const char* kiln_device_name(kiln_device_t device);

/* Counters of work done on a device (what every tool's --stats prints).
 * All counts accumulate from device creation or the last stats reset. */
typedef struct kiln_device_stats_t {
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
} kiln_device_stats_t;

/* Copies the current counters into *out_stats. */
kiln_status_t kiln_device_stats(kiln_device_t device, kiln_device_stats_t* out_stats);
/* Zeroes every counter except device_bytes_live; the peak restarts at the
 * bytes live now. */
kiln_status_t kiln_device_stats_reset(kiln_device_t device);

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
kiln_status_t kiln_module_load_from_memory(kiln_instance_t instance, const void* data,
                                           size_t size, kiln_module_t* out_module);
/* Loads and verifies `path`, mapped read-only (mmap); the mapping lives as
 * long as the module. Errors: NOT_FOUND (cannot open), DATA_LOSS. */
kiln_status_t kiln_module_load_from_file(kiln_instance_t instance, const char* path,
                                         kiln_module_t* out_module);
void kiln_module_retain(kiln_module_t module);
void kiln_module_release(kiln_module_t module);
/* Module name; owned by the module; "" for NULL. */
const char* kiln_module_name(kiln_module_t module);

/* ------------------------------------------------------------------------ */
/* Context and functions                                                    */
/* ------------------------------------------------------------------------ */

/* Links `modules[0..module_count)` in order on `device`: resolves imports,
 * creates the GPU pipelines of every executable, runs each module's
 * initializer (uploads constants). Retains the device and the modules.
 * Errors: NOT_FOUND/INVALID_ARGUMENT for unresolvable imports, driver errors
 * from pipeline creation, the initializer's error. Cost: pipeline creation
 * (milliseconds per executable) plus constant uploads. */
kiln_status_t kiln_context_create(kiln_device_t device, const kiln_module_t* modules,
                                  size_t module_count, kiln_context_t* out_context);
void kiln_context_retain(kiln_context_t context);
void kiln_context_release(kiln_context_t context);

/* Finds the exported function `name` (modules searched in order).
 * Errors: NOT_FOUND (message lists the exported functions). */
kiln_status_t kiln_context_lookup_function(kiln_context_t context, const char* name,
                                           kiln_function_t* out_function);

/* Signature of one argument or result. `name` is owned by the module. */
typedef struct kiln_tensor_signature_t {
  const char* name;
  kiln_dtype_t dtype;
  size_t rank;
  int64_t dims[KILN_MAX_RANK];  /* dims[0..rank) are valid */
  kiln_ownership_t ownership;   /* arguments only; BORROW for results */
} kiln_tensor_signature_t;

/* Function name, argument and result counts (0/"" for NULL). */
const char* kiln_function_name(kiln_function_t function);
size_t kiln_function_arg_count(kiln_function_t function);
size_t kiln_function_result_count(kiln_function_t function);
/* Signature of argument / result `index`. Errors: OUT_OF_RANGE, INVALID_ARGUMENT. */
kiln_status_t kiln_function_arg(kiln_function_t function, size_t index,
                                kiln_tensor_signature_t* out_signature);
kiln_status_t kiln_function_result(kiln_function_t function, size_t index,
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
kiln_status_t kiln_tensor_create(kiln_device_t device, kiln_dtype_t dtype, size_t rank,
                                 const int64_t* dims, const void* data, size_t data_bytes,
                                 kiln_tensor_t* out_tensor);
void kiln_tensor_retain(kiln_tensor_t tensor);
void kiln_tensor_release(kiln_tensor_t tensor);

/* Copies the tensor's contents to `dst`; `dst_bytes` must equal
 * kiln_tensor_byte_size() (INVALID_ARGUMENT otherwise). Blocks until the
 * data is on the host (a staging copy when the memory is not host visible). */
kiln_status_t kiln_tensor_read(kiln_tensor_t tensor, void* dst, size_t dst_bytes);

kiln_dtype_t kiln_tensor_dtype(kiln_tensor_t tensor);   /* INVALID for NULL */
size_t kiln_tensor_rank(kiln_tensor_t tensor);          /* 0 for NULL */
/* Pointer to `rank` dims, owned by the tensor; NULL for NULL. */
const int64_t* kiln_tensor_dims(kiln_tensor_t tensor);
size_t kiln_tensor_byte_size(kiln_tensor_t tensor);     /* 0 for NULL */

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
 * function, bytecode offset and source location. */
kiln_status_t kiln_invoke(kiln_context_t context, kiln_function_t function,
                          const kiln_tensor_t* args, size_t arg_count,
                          kiln_tensor_t* out_results, size_t result_count);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* KILN_KILN_H_ */
