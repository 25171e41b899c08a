#include "compiler/transforms/passes.h"

namespace kiln::transforms {

void RegisterAllPasses() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  ir::RegisterPassWithOption("mark-consumed-arguments", CreateMarkConsumedArgumentsPass);
  ir::RegisterPassWithOption("set-topology", CreateSetTopologyPass);
  ir::RegisterPass("fold-zero-trip-loops", CreateFoldZeroTripLoopsPass);
  ir::RegisterPass("fold-empty-tensors", CreateFoldEmptyTensorsPass);
  ir::RegisterPass("fuse-dispatch-regions", CreateFuseDispatchRegionsPass);
  ir::RegisterPass("fuse-workgroup-stages", CreateFuseWorkgroupStagesPass);
  ir::RegisterPassWithOption("mark-exact-fma", CreateMarkExactFmaPass);
  ir::RegisterPass("infer-argument-ownership", CreateInferArgumentOwnershipPass);
  ir::RegisterPass("materialize-copy-on-write", CreateMaterializeCopyOnWritePass);
  ir::RegisterPass("elide-async-copies", CreateElideAsyncCopiesPass);
  ir::RegisterPass("elide-dead-writes", CreateElideDeadWritesPass);
  ir::RegisterPass("slice-views", CreateSliceViewsPass);
  ir::RegisterPass("emplace-allocations", CreateEmplaceAllocationsPass);
  ir::RegisterPass("fuse-pad", CreateFusePadPass);
  ir::RegisterPass("elide-transfers", CreateElideTransfersPass);
  ir::RegisterPass("schedule-execution", CreateScheduleExecutionPass);
  ir::RegisterPass("elide-timepoints", CreateElideTimepointsPass);
  ir::RegisterPass("convert-to-stream", CreateConvertToStreamPass);
  ir::RegisterPass("resource-lifetime", CreateResourceLifetimePass);
  ir::RegisterPass("demote-f32-to-f16", CreateDemoteF32ToF16Pass);
  ir::RegisterPass("lower-timeline", CreateLowerTimelinePass);
  ir::RegisterPass("materialize-result-copies", CreateMaterializeResultCopiesPass);
  ir::RegisterPass("share-result-copies", CreateShareResultCopiesPass);
  ir::RegisterPass("schedule-allocation", CreateScheduleAllocationPass);
  ir::RegisterPass("materialize-edge-copies", CreateMaterializeEdgeCopiesPass);
  ir::RegisterPass("place-barriers", CreatePlaceBarriersPass);
}

}  // namespace kiln::transforms
