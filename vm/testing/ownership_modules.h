// Test-only modules for buffer ownership: aliased results, consume and
// adoption, output storage, the allocation-free streaming state loop and a
// multi-module pipeline. Shared by the VM, C API, tool and stress tests.
//
// All tensors are f32[n] (n a multiple of 4, at most 2^20). Shaders are the
// HAL CTS ones: vadd (c = a + b) and scale (dst = src * s).
#ifndef KILN_VM_TESTING_OWNERSHIP_MODULES_H_
#define KILN_VM_TESTING_OWNERSHIP_MODULES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::vm::testing {

struct TestShaders {
  const uint32_t* vadd = nullptr;
  size_t vadd_words = 0;
  const uint32_t* scale = nullptr;
  size_t scale_words = 0;
};

// Module "own". Every function works on f32[n]:
//   same_twice() -> (a, b)       one new buffer (filled with 1.0) returned twice,
//                                as the same view
//   two_subviews() -> (a, b)     one buffer of 2n floats: a = first half (1.0),
//                                b = second half (2.0), two views of one buffer
//   subspans() -> (a, b)         same through hal.buffer.subspan (a view of a
//                                subspan of the allocation each)
//   distinct() -> (a, b)         two buffers (1.0 and 2.0)
//   passthrough(x) -> (a, b)     returns the argument view twice
//   steal(x: consume) -> (y)     y = 3.0 everywhere, written into
//                                take_or_allocate(x) (x's own storage when owned)
//   patch(x: consume) -> (y)     y = x with y[0..4) = 7.0, through take_or_clone
//   write_output(x) -> (y)       y = x + x, written into output_storage(0) when
//                                given, else into allocate_cached(slot 0)
//   ignore_output(x) -> (y)      y = x + x into a new buffer (never reads
//                                output_storage: the runtime copies)
//   cached(x) -> (y)             y = x + x into allocate_cached(slot 0)
std::vector<uint8_t> BuildOwnershipModule(const TestShaders& shaders, int n);

// Module "stream": the streaming state loop.
//   step(x: f32[n], state: f32[n] consume) -> (y: f32[n], next: f32[n])
//     tmp  = x + state          (arena: allocate_cached slot 0, device local)
//     y    = tmp + x            (allocate_cached slot 1, host visible)
//     next = tmp * 0.5          (take_or_allocate(state): in place when owned)
// With y released and next fed back as a consumed argument, every
// invocation after the first makes no device and no host allocation.
std::vector<uint8_t> BuildStreamModule(const TestShaders& shaders, int n);

// The multi-module pipeline, in registration order:
//   "mel":    main(x) -> (m)                    m = 2x (allocate_cached)
//   "emb":    main(m: consume) -> (e)           e = m + bias (bias[i] = i/4, a
//                                               rodata global), in place
//   "head":   main(e, s: consume) -> (h, s2)    h = e + s (allocate_cached),
//                                               s2 = s/2 in place
//   "driver": main(x, s: consume) -> (h, e, s2) imports mel.main, emb.main,
//                                               head.main (typed signatures)
//                                               and chains them; m is moved
//                                               into emb, s into head.
std::vector<std::vector<uint8_t>> BuildPipelineModules(const TestShaders& shaders, int n);

// Host reference of the pipeline for one element: (h, e, s2) from x, s, i.
struct PipelineExpected {
  float h, e, s2;
};
PipelineExpected PipelineReference(float x, float s, int i);

}  // namespace kiln::vm::testing

#endif  // KILN_VM_TESTING_OWNERSHIP_MODULES_H_
