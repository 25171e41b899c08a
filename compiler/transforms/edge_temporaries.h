// Parallel-copy temporaries, a rule of --schedule-allocation
// (schedule_allocation.h), decided last, on the finished placements.
#ifndef KILN_COMPILER_TRANSFORMS_EDGE_TEMPORARIES_H_
#define KILN_COMPILER_TRANSFORMS_EDGE_TEMPORARIES_H_

#include "compiler/analysis/storage_plan.h"
#include "compiler/ir/ir.h"

namespace kiln::transforms {

// Edges that copy several values at once (loop yields, scf.while's
// forwarded values, branch operands: analysis::EdgeCopiesOf) are parallel
// copies: a value that lives in another destination of the same edge
// (carried values yielded at swapped positions, a slice of a carried value)
// would be overwritten before it is read. Each such value gets a temporary
// (StorageSlot::kTemporary: a cached buffer, reused across calls, in
// allocation-cache slot *slot, which is advanced) recorded in
// plan->edge_temps, and the edge copies it there first. Every op of `func`
// (all blocks, nested regions) whose operands and destinations have
// placements in *plan is considered.
void PlanEdgeTemporaries(ir::Operation* func, analysis::StoragePlan* plan, int* slot);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_EDGE_TEMPORARIES_H_
