// Exact multiply-add on drivers that split fma(), put in at load
// (docs/architecture.md, "fma()").
//
// The compiler accumulates f32 dot products with GLSL fma(a, b, acc)
// (OpExtInst GLSL.std.450 Fma; compiler/codegen CodegenOptions::exact_fma):
// a multiply-add rounded once, as ONNX Runtime's MLAS kernels compute. A GPU
// runs it as one fused instruction. A CPU driver such as lavapipe splits
// every fma into a multiply and an add (llvmpipe's NIR option lower_ffma32),
// which rounds twice, and a model that amplifies the difference (silero_vad's
// recurrent state) drifts. On such a device (VulkanDevice::exact_fma), in
// an executable one of whose entry points asks for it (EntryPointInfo::
// exact_fma: the compiler's --mark-exact-fma decision, by default the
// dispatches carried state depends on), the runtime rewrites, before the
// driver sees the module, every f32 Fma into a
// call of one function it appends, whose body is an exact emulation; the
// driver inlines it (Mesa inlines every function). The module carries only
// fma(): a GPU pays nothing for the emulation, in bytes or instructions.
//
// Bodies (every floating-point step decorated NoContraction, so the driver
// neither fuses nor reassociates it):
//  - kFloat64 (the default where the device has shaderFloat64; lavapipe):
//    r = RN32(s), s = RN64(a*b + c). A f32 x f32 product is exact in f64,
//    so s is the only rounding before r's. Rounding twice gives a wrong r
//    only where the f64 sum is inexact and s lands exactly on the midpoint
//    between two floats: never in 40 million random triples, nor on any
//    triple of special values (zeros, infinities, NaN, extremes,
//    subnormals); 3.8% of triples constructed to sit at a midpoint, which
//    the former f32 emulation (kFloat32) misses as often.
//  - kFloat64Exact (KILN_EXACT_FMA=exact): kFloat64 plus the midpoint fix,
//    equal to C's fmaf on all of the above. With `other` r's f32 neighbour
//    on s's side and m = (r + other) / 2 (exact in f64), a wrong r means
//    s == m while the exact a*b + c lies beyond m: then `other` is the
//    rounding. The side of the exact value is the sign of the f64 sum's error
//    e = (c - (s - ab)) + (ab - (s - c)): each bracket is 0 or has the
//    error's sign, and one of them is the exact error (the two orders of
//    Fast2Sum, Dekker 1971; Knuth TAOCP 4.2.2), so e is 0 exactly when the
//    sum was exact. On the device: the codegen case matmul_exact_fma_midpoints
//    (run with KILN_EXACT_FMA=exact). A result in the f32 subnormal range may
//    still round twice.
//  - kFloat32 (no shaderFloat64, or KILN_EXACT_FMA=f32): Dekker's exact
//    product p + pe (Veltkamp split at 2^12 + 1) and Knuth's TwoSum s + se,
//    then s + (se + pe); where that is not finite, a * b + c rounded twice.
//    Equal to fmaf on random triples, but not on all midpoint cases (se + pe
//    is itself rounded), nor where a product overflows or underflows.
//
// Cost on lavapipe: see docs/architecture.md (measured per model).
#ifndef KILN_HAL_VULKAN_EXACT_FMA_SPLICE_H_
#define KILN_HAL_VULKAN_EXACT_FMA_SPLICE_H_

#include <cstddef>
#include <cstdint>

#include "hal/api.h"

namespace kiln::hal::vulkan {

enum class ExactFmaBody : uint8_t {
  kFloat64,       // RN32(RN64(a*b + c)); needs shaderFloat64 (adds OpCapability Float64)
  kFloat64Exact,  // the same with the midpoint fix: fmaf exactly; needs shaderFloat64
  kFloat32,       // Dekker + TwoSum in f32 operations only
};

// Copies `count` words of SPIR-V into `out` with every f32 OpExtInst
// GLSL.std.450 Fma replaced by a call of an appended function computing it
// with `body`. `*spliced` gets the number of calls made; when it is 0, `out`
// is left empty and the words are to be used as they are. The module must
// have passed CheckSpirvLayout (well-formed instruction lengths). Cost:
// O(words) time and one copy of the module (plus about 100 words) in host
// memory, through the allocator hook. Errors: kInvalidArgument on a
// malformed header or instruction, or an id bound that the new ids would
// push past kMaxSpirvIdBound.
Status SpliceExactFma(const uint32_t* words, size_t count, ExactFmaBody body,
                      HostVector<uint32_t>* out, uint32_t* spliced);

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_EXACT_FMA_SPLICE_H_
