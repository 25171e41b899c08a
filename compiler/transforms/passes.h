// Registration of every compiler pass (one pass per file in this folder).
#ifndef KILN_COMPILER_TRANSFORMS_PASSES_H_
#define KILN_COMPILER_TRANSFORMS_PASSES_H_

#include <memory>
#include <string>

#include "compiler/ir/pass.h"

namespace kiln::transforms {

// Registers every pass below under its flag. Idempotent.
void RegisterAllPasses();

// --mark-consumed-arguments=NAME (mark_consumed_arguments.cc): exported
// function arguments named NAME become ABI `consume`.
std::unique_ptr<ir::Pass> CreateMarkConsumedArgumentsPass(const std::string& name);

// --set-topology=SPEC (set_topology.cc): the module's kiln.topology op, from
// a preset or the topology text format.
std::unique_ptr<ir::Pass> CreateSetTopologyPass(const std::string& spec);

// --fold-zero-trip-loops (fold_zero_trip_loops.cc): an scf.for with
// constant bounds that runs no trip is replaced by its initial values.
std::unique_ptr<ir::Pass> CreateFoldZeroTripLoopsPass();

// --fold-empty-tensors: tensor ops with zero-element results become empty
// constants (no dispatch).
std::unique_ptr<ir::Pass> CreateFoldEmptyTensorsPass();

// --fuse-dispatch-regions: groups tensor-level ops into flow.dispatch ops.
std::unique_ptr<ir::Pass> CreateFuseDispatchRegionsPass();
// --fuse-workgroup-stages: merges chains of small dispatches into one
// workgroup that runs them in stages (fuse_workgroup_stages.cc).
std::unique_ptr<ir::Pass> CreateFuseWorkgroupStagesPass();
// --mark-exact-fma=state|all|none: marks the dispatches that multiply-add
// with one rounding on every device (mark_exact_fma.cc).
std::unique_ptr<ir::Pass> CreateMarkExactFmaPass(const std::string& policy);

// --convert-to-stream: tensors/flow.dispatch -> stream resources and
// stream.async.dispatch (dispatch bodies outlined into flow.executable ops).
std::unique_ptr<ir::Pass> CreateConvertToStreamPass();

// --elide-transfers: stream.async.transfer between devices that share memory
// (module-level kiln.topology op) -> its source (runs before copy-on-write).
std::unique_ptr<ir::Pass> CreateElideTransfersPass();

// --schedule-execution: straight-line runs of async work -> stream.async.execute
// regions with a timepoint; outside uses go through stream.timepoint.await.
std::unique_ptr<ir::Pass> CreateScheduleExecutionPass();

// --elide-timepoints: drops awaits/joins/execute awaits already covered by an
// earlier wait (same block, enclosing regions, all branches of an scf op).
std::unique_ptr<ir::Pass> CreateElideTimepointsPass();

// --infer-argument-ownership: marks resource arguments of module-internal
// (sym_visibility = "private") functions `consume` when every call site
// passes its last use (by-value arguments inferred from callers).
std::unique_ptr<ir::Pass> CreateInferArgumentOwnershipPass();

// --materialize-copy-on-write: clones each resource before its tied (in-place)
// use, so in-place writes never clobber a value observed elsewhere.
std::unique_ptr<ir::Pass> CreateMaterializeCopyOnWritePass();

// --elide-async-copies: removes each stream.async.clone whose source is owned
// and dead after it (across branches, scf regions and loop trips); remarks
// say why each remaining copy is kept.
std::unique_ptr<ir::Pass> CreateElideAsyncCopiesPass();

// --elide-dead-writes: removes an in-place update/copy/fill whose bytes the
// next write of the same resource overwrites before any read.
std::unique_ptr<ir::Pass> CreateElideDeadWritesPass();
// --slice-views (slice_views.cc): dispatches that only copy one contiguous,
// 256-byte-aligned range of their operand become stream.async.slice views.
std::unique_ptr<ir::Pass> CreateSliceViewsPass();
// --emplace-allocations (emplace_allocations.cc): producer dispatches write
// into the subrange of the concat target their result is copied into (the
// stream.async.update goes; in-place concat).
std::unique_ptr<ir::Pass> CreateEmplaceAllocationsPass();
// --fuse-pad (fuse_pad.cc; opt-in, kiln-compile --fuse-pad): a constant pad
// dispatch of a producer dispatch's result becomes an alloca, an update of
// the interior (placed by --emplace-allocations) and fills of the border.
std::unique_ptr<ir::Pass> CreateFusePadPass();

std::unique_ptr<ir::Pass> CreateResourceLifetimePass();  // --resource-lifetime: dealloca / retain / release

// --demote-f32-to-f16: f32 tensors are stored as f16 (f32 arithmetic), the
// ABI keeps its dtypes (kiln-compile --precision=f16).
std::unique_ptr<ir::Pass> CreateDemoteF32ToF16Pass();

// --lower-timeline (lower_timeline.h): execution regions recorded in place,
// awaits and joins dropped (one in-order queue); first pass of the
// allocated level.
std::unique_ptr<ir::Pass> CreateLowerTimelinePass();

// --materialize-result-copies (materialize_result_copies.cc): results
// living in the constant pool, a global or a borrowed argument are cloned
// before their export (fresh storage the caller owns).
std::unique_ptr<ir::Pass> CreateMaterializeResultCopiesPass();
std::unique_ptr<ir::Pass> CreateShareResultCopiesPass();

// --schedule-allocation (schedule_allocation.h): every resource's storage
// (arena slot, result, donated or taken argument, global, coalesced edge),
// written into the IR as the function's storage plan.
std::unique_ptr<ir::Pass> CreateScheduleAllocationPass();

// --materialize-edge-copies (materialize_edge_copies.cc): the copies the
// storage plan implies on scf edges and global stores become
// stream.async.clone ops placed in their destination.
std::unique_ptr<ir::Pass> CreateMaterializeEdgeCopiesPass();

// --place-barriers (place_barriers.h): stream.cmd.barrier ops with the byte
// ranges they cover, between conflicting device commands (last pass).
std::unique_ptr<ir::Pass> CreatePlaceBarriersPass();

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_PASSES_H_
