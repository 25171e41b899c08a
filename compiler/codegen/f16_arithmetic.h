// Which dispatches get an f16-arithmetic variant.
//
// An f16 tensor is stored 16-bit everywhere, and by default every dispatch
// computes on it in f32 (converted at load and store), which needs only
// storageBuffer16BitAccess. Where the device also has shaderFloat16, a
// dispatch can compute in float16_t instead: on mobile GPUs (Mali, Adreno)
// that is twice the ALU rate and half the registers, the reason ncnn runs
// fp16 arithmetic by default. A SPIR-V module that declares the Float16
// capability cannot be created on a device without the feature, even where
// the code is dead, so the variant is a second SPIR-V module of the same
// executable (schemas/kiln_module.fbs Executable.spirv_f16): the runtime
// creates its pipelines from it when the device enables shaderFloat16 and
// from `spirv` otherwise (vm/context.cc).
//
// The rule (F16ArithmeticApplies): the region computes only
//   add, sub, mul, div, min, max, neg, abs, relu, clamp
// (besides tensor.constant, tensor.expand and tensor.reshape, which only
// index), and every tensor it loads, computes and stores is f16. Each of
// these ops rounds its exact result once to f16 either way, so a single op
// gives the same f16 bits in both variants; a chain of them rounds after
// every op in f16 arithmetic (as numpy's and ONNX's float16 references
// do) and once at the store in f32 arithmetic. Reductions, convolutions and
// matrix products keep f32 accumulation (a K-term f16 sum loses
// log2(K) bits), transcendental ops keep f32 (Vulkan lets their built-ins
// err by several ulps, which at f16's 11 bits would dominate the error), and
// casts keep f32.
#ifndef KILN_COMPILER_CODEGEN_F16_ARITHMETIC_H_
#define KILN_COMPILER_CODEGEN_F16_ARITHMETIC_H_

#include "compiler/ir/ir.h"

namespace kiln::codegen {

// True when `dispatch` (a flow.dispatch with one single-block region) meets
// the rule above. False for anything else, malformed regions included.
bool F16ArithmeticApplies(const ir::Operation* dispatch);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_F16_ARITHMETIC_H_
