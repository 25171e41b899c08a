// Codegen: one flow.dispatch op -> GLSL compute shader -> SPIR-V (glslang C
// API, see TOOLCHAIN.md: Debian's libshaderc.so is broken) -> validated with
// SPIRV-Tools (spvtools::SpirvTools::Validate, Vulkan 1.2 target env).
//
// Binding layout contract with compiler/backend (bytecode emission) and the
// runtime: descriptor set 0; bindings 0..N-1 are the dispatch operands in
// order (read-only storage buffers), then bindings N..N+R-1 are the results
// (written). Each binding is bound at the byte range holding exactly that
// tensor (dense, row-major, little-endian), except an operand with an
// element offset (CodegenOptions::operand_element_offsets), whose binding is
// a 256-byte-aligned subrange the tensor lies in or covers, and a result with
// one (CodegenOptions::result_element_offsets), bound from the 256-byte
// boundary before it. Bindings are declared `restrict`
// unless CodegenOptions::aliased_bindings says the call site binds
// overlapping bytes: an in-place (tied) operand and its result stay two
// bindings of one range, both non-restrict, rather than one read-write
// binding, so the layout (operands, then results) never depends on the call
// site and the emitter, the module's binding table and the runtime's SPIR-V
// layout check (readonly operands) are unchanged. `coherent` is not needed:
// it orders accesses between invocations, and in an aliased dispatch each
// invocation reads only the elements it writes. Shapes are static and baked into
// the shader as constants (the module writer turns those that differ between
// otherwise equal shaders into specialization constants,
// compiler/backend/shader_dedupe.h; specialization constant 0 is reserved for the runtime). Push constants are 32-bit words listed in
// `push_constants` (values known at compile time; emitted by the bytecode);
// the current generator uses none.
//
// What a dispatch region may hold (anything else: kUnimplemented):
//   ops: every elementwise op of ops.h, tensor.conv2d/matmul/reduce/pool2d/
//        softmax/transpose/slice/concat/pad/gather/expand/conv_transpose/resize/
//        arg_reduce/cumsum/gather_elements/scatter_elements/scatter_nd/top_k, plus
//        tensor.reshape and small tensor.constant (<= 4096 elements).
//   dtypes: every DType (base/dtype.h). f16 and bf16 are stored 16-bit and
//        computed in f32 (all-f16 elementwise regions also get a float16_t
//        variant, f16_arithmetic.h); i8/i16 in i32, u8/u16 in u32; i64, u64 and f64 in
//        64 bits (generator.h ComputeType). conv2d/conv_transpose/pool2d/
//        softmax and the transcendental ops take f32, f16 and bf16.
// Any DAG of these is correct (producers are recomputed per use index).
// Fast schedules (see codegen.cc) apply when the region has exactly one
// non-elementwise op (the anchor) and every result has the anchor's shape:
// conv2d/matmul register tiles, split-K matmul, workgroup reductions for
// reduce/softmax. Otherwise one invocation computes one result element.
// Workgroup size is 64x1x1; workgroup_count may use y when the grid exceeds
// CodegenOptions::max_workgroup_count.
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
  // The same entry point computing f16 values in float16_t (Float16
  // capability), for devices with shaderFloat16; empty when the dispatch
  // gets no such variant (f16_arithmetic.h says which do).
  std::vector<uint32_t> spirv_f16;
  std::string entry_point = "main";
  uint32_t binding_count = 0;        // operands + results
  std::vector<bool> binding_readonly;
  // Per binding, the module format's BindingKind: 0 a storage buffer, 1 a
  // uniform texel buffer of vec4 f32 texels (read-only, whole 16-byte
  // texels). Empty: all storage buffers.
  std::vector<uint8_t> binding_kinds;
  uint32_t workgroup_size[3] = {64, 1, 1};
  uint32_t workgroup_count[3] = {1, 1, 1};
  std::vector<uint32_t> push_constants;  // words; size*4 = push-constant bytes
  // Device features the SPIR-V uses; the HAL must have enabled them.
  bool requires_int64 = false;         // shaderInt64 (an i64 or u64 tensor is touched)
  bool requires_8bit_storage = false;  // storageBuffer8BitAccess + shaderInt8 (i8/u8/i1 buffers)
  bool requires_16bit_storage = false; // storageBuffer16BitAccess (f16/bf16/i16/u16 buffers)
  bool requires_float64 = false;       // shaderFloat64 (an f64 tensor is touched)
  // The dispatch's fma() must round once on every device: the flow.dispatch's
  // `exact_fma` attribute (compiler/transforms/mark_exact_fma.cc). A CPU
  // driver then gets the exact emulation at load (EntryPoint.exact_fma).
  bool exact_fma = false;
};

// Vulkan's guaranteed minimum of maxTexelBufferElements: an operand of at
// most this many 16-byte texels (1 MiB) binds as a texel buffer on every
// device.
constexpr int64_t kMaxPortableTexels = 65536;

struct CodegenOptions {
  // Device limits the shaders must respect (lavapipe: 1024 invocations,
  // 65535 workgroups per dimension).
  uint32_t max_workgroup_count = 65535;
  bool validate_spirv = true;
  // Run spirv-opt's performance passes on glslang's output (before validation).
  bool optimize_spirv = true;
  // With optimize_spirv: also run spirv-opt's loop-unroll pass, so every
  // [[unroll]] loop (a conv's register block) is unrolled in the module
  // instead of by the driver's compiler. Off by default: the module carries
  // each loop body once (cls's module 998,976 -> 670,592 B) and drivers
  // unroll loops marked Unroll. `kiln-compile --unroll-in-module` turns it
  // on, for a driver that ignores the hint and for A/B runs on a GPU.
  bool unroll_in_module = false;
  // Let the emitter admit operands as uniform texel buffers
  // (texel_eligible below). `kiln-compile --no-texels` turns it off: every
  // binding a storage buffer.
  bool texel_buffers = true;
  // Also compile an f16-arithmetic variant (CompiledDispatch::spirv_f16) of
  // each dispatch that f16_arithmetic.h's rule admits. `kiln-compile
  // --no-f16-arithmetic` turns it off (one SPIR-V module per executable).
  bool f16_arithmetic_variants = true;
  // Internal to CompileDispatch: generate the variant itself (f16 values
  // compute in float16_t).
  bool f16_arithmetic = false;
  // Per call site, set by the emitter for one dispatch (binding index ->
  // true): bindings that may name bytes another binding of the same dispatch
  // names, with a write among them (an in-place dispatch binds its tied
  // operand and result to one range; after --elide-async-copies' aliased-read
  // rule a third binding, another operand, reads that range too). These are
  // declared without `restrict` (keeping readonly / writeonly); every other
  // binding stays `restrict`. Empty: no binding aliases (every dispatch of
  // an ONNX model). Bindings that alias only other read-only bindings keep
  // `restrict`: as in C99, restrict constrains only memory that is written.
  // Correctness of such a shader still needs each invocation to read an
  // aliased element only before it writes it, and no invocation to read an
  // element another one writes: copy elision's aliased read rule admits
  // only one-result bodies elementwise at one index
  // (compiler/transforms/aliased_dispatch_read.h); a tied dispatch is
  // assumed to read its tied operand only at the index it writes.
  std::vector<bool> aliased_bindings;
  // Per call site, set by the emitter from the dispatch's `element_offsets`
  // attribute (compiler/transforms/slice_views.cc): for operand i, a signed
  // element count added to every row-major index the shader reads from
  // binding i. The binding is then bound at a coarse, 256-byte-aligned
  // subrange of the tensor's allocation and the shader indexes the tensor
  // inside it: an operand that is a slice at an unaligned byte offset reads
  // element j at j + offset (offset > 0); a dispatch that reads only a
  // subrange of its operand, bound to that subrange, reads element j of the
  // whole tensor at j + offset (offset < 0, minus the subrange's first
  // element). The offset is baked into the shader as an integer constant
  // (no push constant, nothing at run time); call sites that differ only in
  // it share SPIR-V through specialization constants
  // (compiler/backend/shader_dedupe.h). Empty or 0: the index as is.
  std::vector<int64_t> operand_element_offsets;
  // Per call site, set by the emitter from the dispatch's
  // `result_element_offsets` (compiler/transforms/emplace_allocations.cc):
  // for result r, a non-negative element count added to every row-major
  // index the shader writes to result binding r. The binding then starts at
  // a 256-byte-aligned offset before the tensor (a producer placed into an
  // unaligned subrange of its concat's target). Baked in like
  // operand_element_offsets. Empty or 0: the index as is.
  std::vector<int64_t> result_element_offsets;
  // Per call site, set by the emitter from the dispatch's `result_strides`
  // (compiler/transforms/emplace_allocations.cc, a strided placement: a
  // producer writing the interior of a padded target, --fuse-pad): for
  // result r, one element stride per dimension of the result; element
  // (i0, ..., ik) is written at result_element_offsets[r] + sum(i_d *
  // strides[d]) of result binding r instead of its row-major index. Every
  // schedule writes results through one path (Generator::StoreResults), so
  // this holds for all of them; stores are per element (no vec4 result
  // stores exist to split at a pitch). Baked in like
  // result_element_offsets. Empty (or an empty entry): row-major.
  std::vector<std::vector<int64_t>> result_strides;
  // Per call site, set by the emitter (operand i -> true): operands the
  // shader may read as a uniform texel buffer of vec4 f32 texels
  // (CompiledDispatch::binding_kinds): bound at a static offset that is a
  // multiple of 256 bytes (every device's minTexelBufferOffsetAlignment is at
  // most 256), for exactly the tensor's bytes, a multiple of 16 and at most
  // kMaxPortableTexels texels (Vulkan's guaranteed maxTexelBufferElements),
  // and not aliased by a written binding. The schedule decides whether to (conv
  // register blocks, schedule_table.h SelectConvTexels). Empty: none.
  std::vector<bool> texel_eligible;
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
