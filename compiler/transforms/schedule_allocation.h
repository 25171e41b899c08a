// Pass: --schedule-allocation (the allocated level; pipeline.cc
// AllocationPipeline, after --lower-timeline)
//
// Decides where every resource of every function lives at run time and
// writes the decision into the IR as its storage plan
// (compiler/analysis/storage_plan.h): the backend only writes it out.
// IREE draws the same line with its schedule-allocation and layout-slices
// passes (stream.resource.pack); Kiln's plan is attributes on the function
// and its ops.
//
// What it decides, in order:
//  1. Which values escape (back a function result, or move into a call's
//     consumed parameter) and need storage of their own outside the arena.
//  2. Copy coalescing, so an edge copies nothing (region_coalescing.h):
//     a region result or loop-carried value living in a consumed argument's
//     storage or in its enclosing loop's carried storage; a fresh value a
//     branch yields written straight into the region result; a copy made
//     only to be a loop's initial value written into the carried storage;
//     a value made before an scf.if that one branch yields; a block argument
//     reached by one edge sharing its incoming value's storage.
//  3. Global snapshots: a util.global.load gets storage of its own only when
//     the global is stored to while the loaded value may still be read
//     (global_snapshots.h, which also sizes every load by its global).
//  4. Transient lifetimes (program steps; over the block graph for bodies
//     with branches, analysis/liveness.h), ended at their
//     stream.resource.dealloca, and the arena: greedy-by-size offsets
//     (transient_planner.h), 256-byte aligned. live_bytes_peak is the most
//     bytes live at one step, the arena's lower bound.
//  5. Consumed arguments written in place: taken at their first write (or
//     before a loop whose carried storage they are); escaping values take a
//     consumed argument's buffer that is not read again once they are
//     written (donated; an in-place concat's target is written piece by
//     piece, and a read of the argument's other bytes may follow a piece:
//     analysis/donation.h), one argument per value by a maximum matching
//     (each value first takes the first free argument in program order),
//     else the caller's output storage for the result they back, or a
//     cached slot.
//  6. Parallel copies: an edge whose operand lives in another destination
//     of the same edge copies it through a temporary first
//     (edge_temporaries.h).
//
// Errors: kUnimplemented for an op the backend cannot write out (named, with
// its location); kInternal when a resource is used after its
// stream.resource.dealloca; kFailedPrecondition when a borrowed argument is
// written in place (materialize-copy-on-write did not run);
// kInvalidArgument for a non-tensor function argument or a block argument of
// unknown size.
//
// Preconditions: the stream level after --lower-timeline (no execution
// regions or awaits).
#ifndef KILN_COMPILER_TRANSFORMS_SCHEDULE_ALLOCATION_H_
#define KILN_COMPILER_TRANSFORMS_SCHEDULE_ALLOCATION_H_

#include "base/status.h"
#include "compiler/analysis/storage_plan.h"
#include "compiler/ir/ir.h"

namespace kiln::transforms {

// The storage plan of `func` (a func.func of `module`) as described above,
// without writing it.
StatusOr<analysis::StoragePlan> ScheduleAllocation(ir::Operation* func);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_SCHEDULE_ALLOCATION_H_
