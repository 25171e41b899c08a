// The compiler library's C API (include/kiln/kiln_compiler.h) over the
// in-process driver (compiler/tools/compile_driver.h): flags are applied
// exactly as kiln-compile applies them.
#include "kiln/kiln_compiler.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/tools/compile_driver.h"

namespace {

#define KILN_COMPILER_STR2(x) #x
#define KILN_COMPILER_STR(x) KILN_COMPILER_STR2(x)

// Sets out->error to a malloc'd copy of `message`; returns 1.
int Fail(kiln_compile_output_t* out, const std::string& message) {
  out->error = static_cast<char*>(std::malloc(message.size() + 1));
  if (out->error) std::memcpy(out->error, message.c_str(), message.size() + 1);
  return 1;
}

// Applies `flags` to `options`; on error returns its message (else empty).
std::string ApplyFlags(const char* const* flags, size_t flag_count,
                       kiln::driver::CompileOptions* options) {
  if (flag_count && !flags) return "flags is NULL with flag_count > 0";
  for (size_t i = 0; i < flag_count; ++i) {
    if (!flags[i]) return "flags[" + std::to_string(i) + "] is NULL";
    kiln::Status s = kiln::driver::ApplyCompileFlag(flags[i], options);
    if (s.code() == kiln::StatusCode::kNotFound) {
      return std::string("unknown compile flag '") + flags[i] +
             "' (kiln_compiler.h lists the flags; kiln-compile --help describes them)";
    }
    if (!s.ok()) return s.message();
  }
  return std::string();
}

int Finish(kiln::StatusOr<std::vector<uint8_t>> bytes, kiln_compile_output_t* out) {
  if (!bytes.ok()) return Fail(out, bytes.status().message());
  const std::vector<uint8_t>& b = bytes.value();
  // 64-byte aligned, so kiln_module_load_from_memory loads it zero-copy.
  out->module = std::aligned_alloc(64, (b.size() + 63) / 64 * 64 + (b.empty() ? 64 : 0));
  if (!out->module) return Fail(out, "out of host memory for the module bytes");
  std::memcpy(out->module, b.data(), b.size());
  out->module_size = b.size();
  return 0;
}

// Compiles with the driver, turning a C++ exception (the ONNX and protobuf
// libraries throw on some malformed models; std::bad_alloc) into an error.
template <typename Compile>
int Run(kiln_compile_output_t* out, const char* const* flags, size_t flag_count,
        const std::string& default_name, Compile compile) {
  if (!out) return 1;
  *out = kiln_compile_output_t{};
  try {
    kiln::driver::CompileOptions options;
    options.emit.module_name = default_name;
    std::string bad = ApplyFlags(flags, flag_count, &options);
    if (!bad.empty()) return Fail(out, bad);
    return Finish(compile(options), out);
  } catch (const std::exception& e) {
    std::free(out->module);
    *out = kiln_compile_output_t{};
    return Fail(out, std::string("compiler error: ") + e.what());
  }
}

}  // namespace

extern "C" {

int kiln_compile_onnx(const void* onnx, size_t onnx_size, const char* const* flags, size_t flag_count,
                      kiln_compile_output_t* out) {
  return Run(out, flags, flag_count, "module", [&](const kiln::driver::CompileOptions& options) {
    if (!onnx) return kiln::StatusOr<std::vector<uint8_t>>(kiln::InvalidArgumentError("onnx is NULL"));
    return kiln::driver::CompileOnnxBytes(onnx, onnx_size, options);
  });
}

int kiln_compile_onnx_file(const char* path, const char* const* flags, size_t flag_count,
                           kiln_compile_output_t* out) {
  std::string p = path ? path : "";
  return Run(out, flags, flag_count, kiln::driver::DefaultModuleName(p),
             [&](const kiln::driver::CompileOptions& options) {
               if (!path) return kiln::StatusOr<std::vector<uint8_t>>(kiln::InvalidArgumentError("path is NULL"));
               return kiln::driver::CompileOnnxFile(p, options);
             });
}

void kiln_compile_output_free(kiln_compile_output_t* out) {
  if (!out) return;
  std::free(out->module);
  std::free(out->error);
  *out = kiln_compile_output_t{};
}

const char* kiln_compiler_version(void) {
  return KILN_COMPILER_STR(KILN_PROJECT_VERSION_MAJOR) "." KILN_COMPILER_STR(
      KILN_PROJECT_VERSION_MINOR) "." KILN_COMPILER_STR(KILN_PROJECT_VERSION_PATCH);
}

}  // extern "C"
