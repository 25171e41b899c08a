#include "compiler/transforms/transient_planner.h"

#include <algorithm>
#include <numeric>

namespace kiln::transforms {

static int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) & ~(a - 1); }

TransientPlan PlanTransients(const std::vector<TransientRequest>& requests, int64_t alignment) {
  TransientPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> order(requests.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return requests[a].size > requests[b].size;
  });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const TransientRequest& r = requests[i];
    const int64_t size = AlignUp(std::max<int64_t>(r.size, 1), alignment);
    // Occupied ranges of lifetime-overlapping buffers, sorted by offset.
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (size_t j : placed) {
      const TransientRequest& o = requests[j];
      if (o.last_use < r.first_use || r.last_use < o.first_use) continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + AlignUp(std::max<int64_t>(o.size, 1), alignment)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (offset + size <= begin) break;  // fits in the gap before `begin`
      offset = std::max(offset, end);
    }
    plan.offsets[i] = offset;
    plan.arena_size = std::max(plan.arena_size, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace kiln::transforms
