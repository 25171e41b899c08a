// Memory planning of transients: packs buffers with known lifetimes into one
// arena so that buffers whose lifetimes do not overlap share bytes.
//
// Algorithm: greedy offset assignment (Pisarchyk & Lee, "Efficient Memory
// Management for Deep Neural Net Inference", 2020; the "GreedyBySize"
// planner of TFLite's arena): visit buffers in some order and put each into
// a gap between the already placed buffers whose lifetime intervals
// intersect its own, or above them all. Greedy by size alone (largest first,
// the lowest gap that fits) leaves gaps: four 1 KiB buffers live over steps
// [4,4], [0,2], [2,3], [3,5] (at most two at once) get a 3 KiB arena, since
// [4,4] goes first and splits the bytes the other three could share. So the
// plan is the smallest of several greedy passes: four orders (by size; by
// size then longer lifetime; by lifetime then size; by size x lifetime)
// times two gap choices (the lowest gap that fits, the smallest one: the
// paper's best fit). That example then gets 2 KiB, its lower bound. While
// the plan is still above the lower bound (the most bytes live at one step),
// up to 64 shuffled orders (fixed seed: the same plan on every host) are
// tried too, stopping at the bound. Greedy by size with the lowest gap is
// one of the passes, so no plan is larger than it was.
// Cost: 8 to 136 passes of O(n^2 log n) for n buffers (n is a few hundred).
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
