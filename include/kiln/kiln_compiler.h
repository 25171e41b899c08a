/* Kiln compiler library: ONNX model -> Kiln module bytes, in process.
 *
 * The same compiler as the kiln-compile tool (libkiln_compiler.so; CMake
 * target Kiln::compiler, pkg-config kiln-compiler), for apps and build tools
 * that compile models themselves, e.g. at install time on the device. The
 * module it returns is loaded with the runtime's kiln_module_load_from_memory
 * (include/kiln/kiln.h, libkiln).
 *
 *   kiln_compile_output_t out = {0};
 *   const char* flags[] = {"--input-shape=x=1x3x48x192"};
 *   if (kiln_compile_onnx_file("model.onnx", flags, 1, &out) != 0) {
 *     fprintf(stderr, "%s\n", out.error);
 *   } else {
 *     kiln_module_load_from_memory(instance, out.module, out.module_size, &module);
 *   }
 *   ... run ...; kiln_module_release(module);
 *   kiln_compile_output_free(&out);  (the module used the bytes in place)
 *
 * Options are kiln-compile's own flags, as strings (the way IREE's compiler
 * embedding API takes session flags): --input-shape=NAME=DIMS,
 * --constant-input=NAME=V, --sequence-input=NAME=[S0,...], --consume=NAME,
 * --topology=unified|discrete|FILE, --no-elision, --module-name=NAME,
 * --precision=f32|f16, --fuse-pad, --unroll-in-module. `kiln-compile --help` describes each. The library exports
 * kiln_compile* symbols only.
 *
 * Thread safety: calls may run on several threads at once; each call uses
 * only its own state. Memory: the compiler allocates with the C++ runtime's
 * allocator (not the runtime's kiln_set_allocator hook); a compile of a
 * model takes a few times the model's size in host memory. */
#ifndef KILN_KILN_COMPILER_H_
#define KILN_KILN_COMPILER_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KILN_COMPILER_BUILDING_LIBRARY)
#define KILN_COMPILER_API __attribute__((visibility("default")))
#else
#define KILN_COMPILER_API
#endif

/* What a compile returns. Zero-initialize before the call; free with
 * kiln_compile_output_free (also after a failure). */
typedef struct kiln_compile_output_t {
  void* module;       /* the module bytes (FlatBuffer, schemas/kiln_module.fbs); owned,
                       * 64-byte aligned. kiln_module_load_from_memory does not copy
                       * them: free the output only after releasing that module. */
  size_t module_size; /* bytes */
  char* error;        /* NUL-terminated message on failure, else NULL; owned */
} kiln_compile_output_t;

/* Compiles the serialized ONNX ModelProto `onnx[0..onnx_size)` (not
 * retained) with `flags[0..flag_count)`. Returns 0 and fills out->module on
 * success. On failure returns nonzero, leaves out->module NULL and sets
 * out->error, e.g. "unknown compile flag '--inptu-shape=x=1x4'",
 * "node 'n0' (TfIdfVectorizer): unsupported op", "graph input 'x' has a
 * dynamic dim; give --input-shape=x=...", "not a valid ONNX model".
 * A NULL `out` returns nonzero and does nothing. */
KILN_COMPILER_API int kiln_compile_onnx(const void* onnx, size_t onnx_size, const char* const* flags,
                                        size_t flag_count, kiln_compile_output_t* out);

/* kiln_compile_onnx on the file at `path` (errors name the file; a missing
 * file fails with "... cannot be opened"). The module is named after the
 * file (up to its first '.') unless --module-name is given. */
KILN_COMPILER_API int kiln_compile_onnx_file(const char* path, const char* const* flags,
                                             size_t flag_count, kiln_compile_output_t* out);

/* Frees out->module and out->error and zeroes `out`. NULL is ignored. */
KILN_COMPILER_API void kiln_compile_output_free(kiln_compile_output_t* out);

/* The library's version, "MAJOR.MINOR.PATCH" (static storage); the module
 * format it writes is the one the runtime of the same version loads. */
KILN_COMPILER_API const char* kiln_compiler_version(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* KILN_KILN_COMPILER_H_ */
