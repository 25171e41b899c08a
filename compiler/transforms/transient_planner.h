// Memory planning of transients: packs buffers with known lifetimes into one
// arena so that buffers whose lifetimes do not overlap share bytes.
//
// Algorithm: greedy-by-size offset assignment (Pisarchyk & Lee, "Efficient
// Memory Management for Deep Neural Net Inference", 2020; the "GreedyBySize"
// planner of TFLite's arena): visit buffers from largest to smallest and put
// each at the lowest aligned offset that does not overlap any already placed
// buffer whose lifetime interval intersects its own.
#ifndef KILN_COMPILER_TRANSFORMS_TRANSIENT_PLANNER_H_
#define KILN_COMPILER_TRANSFORMS_TRANSIENT_PLANNER_H_

#include <cstdint>
#include <vector>

namespace kiln::transforms {

struct TransientRequest {
  int64_t size = 0;   // bytes
  int first_use = 0;  // step that writes it (inclusive)
  int last_use = 0;   // last step that reads it (inclusive)
};

struct TransientPlan {
  std::vector<int64_t> offsets;  // byte offset per request, aligned
  int64_t arena_size = 0;        // bytes, a multiple of `alignment`
};

// `alignment` must be a power of two (>= minStorageBufferOffsetAlignment of
// every target device; Kiln uses 256, the largest value Vulkan allows).
TransientPlan PlanTransients(const std::vector<TransientRequest>& requests, int64_t alignment);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_TRANSIENT_PLANNER_H_
