#include "compiler/transforms/transient_planner.h"

#include <algorithm>
#include <numeric>

namespace kiln::transforms {
namespace {

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) & ~(a - 1); }

enum class Fit { kFirst, kBest };

// One greedy pass: visit requests in `order`, put each at the offset `fit`
// picks among the gaps left by the already placed requests whose lifetimes
// intersect its own (or right after the highest of them).
TransientPlan Greedy(const std::vector<TransientRequest>& requests, const std::vector<int64_t>& sizes,
                     const std::vector<size_t>& order, Fit fit) {
  TransientPlan plan;
  plan.offsets.assign(requests.size(), 0);
  std::vector<size_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t i : order) {
    const TransientRequest& r = requests[i];
    const int64_t size = sizes[i];
    // Occupied ranges of lifetime-overlapping buffers, sorted by offset.
    busy.clear();
    for (size_t j : placed) {
      const TransientRequest& o = requests[j];
      if (o.last_use < r.first_use || r.last_use < o.first_use) continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + sizes[j]});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = -1, best_gap = INT64_MAX, end = 0;
    for (const auto& [b, e] : busy) {
      const int64_t gap = b - end;
      if (gap >= size && gap < best_gap) {
        offset = end;
        best_gap = gap;
        if (fit == Fit::kFirst) break;
      }
      end = std::max(end, e);
    }
    if (offset < 0) offset = end;  // no gap fits: above every overlapping buffer
    plan.offsets[i] = offset;
    plan.arena_size = std::max(plan.arena_size, offset + size);
    placed.push_back(i);
  }
  return plan;
}

}  // namespace

TransientPlan PlanTransients(const std::vector<TransientRequest>& requests, int64_t alignment) {
  std::vector<int64_t> sizes(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) sizes[i] = AlignUp(std::max<int64_t>(requests[i].size, 1), alignment);
  // The orders tried (each stable, so ties keep request order):
  //  0. by size, largest first (greedy by size);
  //  1. by size, then the longer lifetime first;
  //  2. by lifetime, longest first, then by size;
  //  3. by size x lifetime (the area a buffer takes in the offset-time plane).
  auto span = [&](size_t i) { return static_cast<int64_t>(requests[i].last_use) - requests[i].first_use + 1; };
  std::vector<std::vector<size_t>> orders(4, std::vector<size_t>(requests.size()));
  for (auto& o : orders) std::iota(o.begin(), o.end(), 0);
  std::stable_sort(orders[0].begin(), orders[0].end(), [&](size_t a, size_t b) { return sizes[a] > sizes[b]; });
  std::stable_sort(orders[1].begin(), orders[1].end(), [&](size_t a, size_t b) {
    return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : span(a) > span(b);
  });
  std::stable_sort(orders[2].begin(), orders[2].end(), [&](size_t a, size_t b) {
    return span(a) != span(b) ? span(a) > span(b) : sizes[a] > sizes[b];
  });
  std::stable_sort(orders[3].begin(), orders[3].end(),
                   [&](size_t a, size_t b) { return sizes[a] * span(a) > sizes[b] * span(b); });
  TransientPlan best;
  bool have = false;
  for (Fit fit : {Fit::kFirst, Fit::kBest})
    for (const std::vector<size_t>& order : orders) {
      TransientPlan plan = Greedy(requests, sizes, order, fit);
      if (!have || plan.arena_size < best.arena_size) best = std::move(plan);
      have = true;
    }
  return best;
}

}  // namespace kiln::transforms
