// Codegen: one flow.dispatch op -> GLSL compute shader -> SPIR-V (glslang C
// API, see TOOLCHAIN.md: Debian's libshaderc.so is broken) -> validated with
// SPIRV-Tools (spvtools::SpirvTools::Validate, Vulkan 1.2 target env).
//
// Binding layout contract with compiler/target (bytecode emission) and the
// runtime: descriptor set 0; bindings 0..N-1 are the dispatch operands in
// order (read-only storage buffers), then bindings N..N+R-1 are the results
// (written). Each binding is bound at the byte range holding exactly that
// tensor (dense, row-major, little-endian). Shapes are static and baked into
// the shader as constants. Push constants are 32-bit words listed in
// `push_constants` (values known at compile time; emitted by the bytecode).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::codegen {

struct CompiledDispatch {
  std::string debug_name;            // "dispatch_3_conv2d_leaky_relu"
  std::string glsl;                  // the generated source (for --dump-glsl)
  std::vector<uint32_t> spirv;       // validated SPIR-V words
  std::string entry_point = "main";
  uint32_t binding_count = 0;        // operands + results
  std::vector<bool> binding_readonly;
  uint32_t workgroup_size[3] = {64, 1, 1};
  uint32_t workgroup_count[3] = {1, 1, 1};
  std::vector<uint32_t> push_constants;  // words; size*4 = push-constant bytes
};

struct CodegenOptions {
  // Device limits the shaders must respect (lavapipe: 1024 invocations,
  // 65535 workgroups per dimension).
  uint32_t max_workgroup_count = 65535;
  bool validate_spirv = true;
};

// Compiles `dispatch` (a "flow.dispatch" op whose region holds tensor-level
// ops, see compiler/ir/ops.h). Errors: kUnimplemented naming the op (and its
// ONNX node loc) the generator cannot handle; kInternal with the glslang log
// when GLSL fails to compile (a Kiln bug).
StatusOr<CompiledDispatch> CompileDispatch(ir::Operation* dispatch, const CodegenOptions& options);

// Lower-level entry points, exposed for tests and tools.
StatusOr<std::vector<uint32_t>> CompileGlslToSpirv(const std::string& glsl, const std::string& name);
Status ValidateSpirv(const std::vector<uint32_t>& spirv);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_H_
