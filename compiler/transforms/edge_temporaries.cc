// Parallel-copy temporaries (edge_temporaries.h), moved out of
// schedule_allocation.cc unchanged.
#include "compiler/transforms/edge_temporaries.h"

#include "compiler/analysis/resource_values.h"

namespace kiln::transforms {
namespace {

int NewStorage(analysis::StoragePlan* plan, analysis::StorageSlot s) {
  plan->storages.push_back(std::move(s));
  return static_cast<int>(plan->storages.size() - 1);
}

}  // namespace

void PlanEdgeTemporaries(ir::Operation* func, analysis::StoragePlan* plan, int* slot) {
  using analysis::SizeOf;
  using analysis::StorageSlot;
  // Edges that copy several values at once (loop yields, scf.while's
  // forwarded values, branch operands) are parallel copies: a value that
  // lives in another destination of the same edge (carried values yielded
  // at swapped positions, a slice of a carried value) would be overwritten
  // before it is read. Each such value gets a temporary (a cached buffer,
  // reused across calls) and is copied there first.
  auto each = [&](ir::Operation* op) {
    for (const analysis::EdgeCopy& g : analysis::EdgeCopiesOf(op)) {
      for (size_t i = 0; i < g.operands.size(); ++i) {
        ir::Value* src = op->operand(g.operands[i]);
        if (!plan->values.count(src) || !plan->values.count(g.destinations[i])) continue;
        const analysis::Placement from = analysis::PlacementOf(*plan, src);
        bool conflict = false;
        for (size_t j = 0; j < g.operands.size(); ++j) {
          if (!plan->values.count(g.destinations[j])) continue;
          const analysis::Placement to = analysis::PlacementOf(*plan, g.destinations[j]);
          bool overlaps = analysis::Overlap(from, to);
          if (j != i ? overlaps : (overlaps && !analysis::SamePlace(from, to))) conflict = true;
        }
        if (!conflict) continue;
        StorageSlot t;
        t.kind = StorageSlot::kTemporary;
        t.slot = (*slot)++;
        t.length = SizeOf(g.destinations[i]);
        plan->edge_temps[op].push_back({g.operands[i], NewStorage(plan, t)});
      }
    }
  };
  for (auto& b : func->region(0)->blocks())
    for (auto& owned : b->ops()) owned->Walk(each);
}

}  // namespace kiln::transforms
