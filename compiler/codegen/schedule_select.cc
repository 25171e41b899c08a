// Schedule selection (SelectSchedule) and the per-schedule grid and main()
// emission (EmitSchedule). The thresholds and block sizes live in
// schedule_table.h; the schedules are listed at the top of codegen.cc.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "compiler/codegen/generator.h"
#include "compiler/codegen/schedule_table.h"

namespace kiln::codegen::detail {
namespace {

// KILN_CODEGEN_SCHEDULES=legacy selects the schedules Kiln had before
// conv-gemm / conv-direct / depthwise and the vec4 matmul tiles (conv-tiled
// for every conv, 4 x 4 scalar matmul tiles), so that old and new kernels can
// be compared in one build. A compile-time switch only; the runtime never
// reads it.
bool LegacySchedules() {
  const char* e = std::getenv("KILN_CODEGEN_SCHEDULES");
  return e && std::strcmp(e, "legacy") == 0;
}

struct ConvShape {
  int64_t O, Cg, KH, KW, group, OH, OW;
  std::vector<int64_t> st, pads, dil;
};

ConvShape GetConvShape(Operation* op) {
  ConvShape c;
  const auto& ws = op->operand(1)->type().shape;
  const auto& os = op->result()->type().shape;
  c.O = ws[0], c.Cg = ws[1], c.KH = ws[2], c.KW = ws[3];
  c.OH = os[2], c.OW = os[3];
  c.group = std::max<int64_t>(op->int_attr("group", 1), 1);
  c.st = op->ints_attr("strides"), c.pads = op->ints_attr("pads"), c.dil = op->ints_attr("dilations");
  if (c.st.size() != 2) c.st = {1, 1};
  if (c.pads.size() != 4) c.pads = {0, 0, 0, 0};
  if (c.dil.size() != 2) c.dil = {1, 1};
  return c;
}

}  // namespace

SchedulePlan Generator::SelectSchedule(Operation* anchor) {
  SchedulePlan plan;
  if (!anchor) return plan;
  const std::string& kind = anchor->name();
  if (kind == "tensor.reduce") {
    int64_t count = 1;
    for (int64_t ax : ReduceAxes(anchor)) count *= ShapeOf(anchor->operand(0))[ax];
    const int lanes = ReduceLanes(count, NumElements(ShapeOf(anchor->result())));
    if (lanes > 1) plan = {ScheduleKind::kReduceGroup, lanes, 1};
  } else if (kind == "tensor.softmax") {
    plan.kind = ScheduleKind::kSoftmaxRows;
  } else if (kind == "tensor.conv2d" && ShapeOf(anchor->operand(0)).size() == 4 &&
             CTOf(anchor->result()) == CT::kF32) {
    const ConvShape c = GetConvShape(anchor);
    const int64_t Og = c.O / c.group;
    plan.kind = ScheduleKind::kConvTiled;
    plan.block0 = Og % 4 == 0 ? 4 : Og % 2 == 0 ? 2 : 1;
    plan.block1 = std::min<int64_t>(c.OW, 4);
    if (LegacySchedules()) return plan;
    const bool pointwise_kernel = c.KH == 1 && c.KW == 1 && c.st == std::vector<int64_t>{1, 1} &&
                                  c.pads == std::vector<int64_t>{0, 0, 0, 0};
    auto row = [&](int64_t cols) { return (cols - 1) * c.st[1] + (c.KW - 1) * c.dil[1] + 1; };
    const bool unrollable = c.KH * c.KW <= kConvMaxUnrolledTaps;
    if (c.Cg == 1 && c.group > 1 && unrollable &&
        row(std::min<int64_t>(c.OW, kDepthwiseColumns)) <= kConvMaxRowElements) {
      plan = {ScheduleKind::kDepthwise, std::min<int64_t>(c.OW, kDepthwiseColumns),
              std::min<int64_t>(c.OH, kDepthwiseRows)};
    } else if (pointwise_kernel && c.group == 1) {
      const int64_t P = c.OH * c.OW;
      plan = {ScheduleKind::kConvGemm, std::min<int64_t>(c.O, kConvGemmChannels),
              std::min<int64_t>(P, kConvGemmPixels)};
    } else if (!(c.Cg == 1 && c.group == 1) && unrollable &&
               row(std::min<int64_t>(c.OW, kConvDirectColumns)) <= kConvMaxRowElements) {
      plan = {ScheduleKind::kConvDirect, std::min<int64_t>(Og, kConvDirectChannels),
              std::min<int64_t>(c.OW, kConvDirectColumns)};
      // The channel block must not straddle two groups.
      while (Og % plan.block0) --plan.block0;
    }
  } else if (kind == "tensor.matmul" && ShapeOf(anchor->operand(0)).size() >= 2 &&
             ShapeOf(anchor->operand(1)).size() >= 2) {
    const Shape& os = ShapeOf(anchor->result());
    const int64_t K = ShapeOf(anchor->operand(0)).back(), M = os[os.size() - 2], N = os.back();
    const uint64_t outputs = static_cast<uint64_t>(NumElements(os));
    if (outputs <= kSplitKMaxOutputs && K >= kSplitKMinDepth) {
      plan.kind = ScheduleKind::kMatmulSplitK;
    } else {
      const bool legacy = LegacySchedules();
      plan = {ScheduleKind::kMatmulTiled, std::min<int64_t>(M, legacy ? 4 : kMatmulRows),
              std::min<int64_t>(N, legacy ? 4 : kMatmulCols)};
    }
  }
  return plan;
}

Status Generator::EmitSchedule(Operation* anchor, uint32_t* wx, uint32_t* wy) {
  const SchedulePlan plan = SelectSchedule(anchor);
  auto invocations = [&](uint64_t n) {
    return Grid((n + kWorkgroupSize - 1) / kWorkgroupSize, wx, wy);
  };
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const int64_t B0 = plan.block0, B1 = plan.block1;
  const std::string blk = std::to_string(B0) + "x" + std::to_string(B1);
  switch (plan.kind) {
    case ScheduleKind::kReduceGroup: {
      const int lanes = static_cast<int>(B0);
      uint64_t rows = static_cast<uint64_t>(NumElements(ShapeOf(anchor->result())));
      uint64_t per_group = static_cast<uint64_t>(kWorkgroupSize / lanes);
      KILN_RETURN_IF_ERROR(Grid((rows + per_group - 1) / per_group, wx, wy));
      schedule_comment_ = "reduce-group: " + std::to_string(lanes) + " lanes per output (" +
                          std::to_string(rows) + " outputs, " + std::to_string(per_group) +
                          " per workgroup)";
      EmitReduceGroupMain(anchor, lanes, *wx, *wy);
      break;
    }
    case ScheduleKind::kSoftmaxRows: {
      Shape row_shape = ShapeOf(anchor->operand(0));
      int64_t axis = anchor->int_attr("axis", static_cast<int64_t>(row_shape.size()) - 1);
      if (axis < 0) axis += static_cast<int64_t>(row_shape.size());
      const int64_t extent = row_shape[axis];
      row_shape.erase(row_shape.begin() + axis);
      uint64_t rows = static_cast<uint64_t>(NumElements(row_shape));
      int lanes = ReduceLanes(extent, static_cast<int64_t>(rows));
      if (lanes > 1) {
        uint64_t per_group = static_cast<uint64_t>(kWorkgroupSize / lanes);
        KILN_RETURN_IF_ERROR(Grid((rows + per_group - 1) / per_group, wx, wy));
      } else {
        KILN_RETURN_IF_ERROR(invocations(rows));
      }
      schedule_comment_ = "softmax-rows: " +
                          (lanes > 1 ? std::to_string(lanes) + " lanes" : std::string("one invocation")) +
                          " per row (" + std::to_string(rows) + " rows)";
      EmitSoftmaxRowsMain(anchor, lanes, *wx, *wy);
      break;
    }
    case ScheduleKind::kConvTiled:
    case ScheduleKind::kConvDirect: {
      const Shape &ws = ShapeOf(anchor->operand(1)), &os = ShapeOf(anchor->result());
      uint64_t tiles = static_cast<uint64_t>(os[0] * (ws[0] / B0) * os[2] * ceil_div(os[3], B1));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      const bool direct = plan.kind == ScheduleKind::kConvDirect;
      schedule_comment_ = std::string(direct ? "conv-direct" : "conv-tiled") +
                          ": one invocation per " + blk + " (channel x column) tile (" +
                          std::to_string(tiles) + " invocations)";
      if (direct) {
        EmitConvDirectMain(anchor, B0, B1, *wx, *wy);
      } else {
        EmitConvTiledMain(anchor, B0, B1, *wx, *wy);
      }
      break;
    }
    case ScheduleKind::kConvGemm: {
      const Shape& os = ShapeOf(anchor->result());
      uint64_t tiles =
          static_cast<uint64_t>(os[0] * ceil_div(os[1], B0) * ceil_div(os[2] * os[3], B1));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      schedule_comment_ = "conv-gemm: one invocation per " + blk + " (channel x pixel) tile (" +
                          std::to_string(tiles) + " invocations)";
      EmitConvGemmMain(anchor, B0, B1, *wx, *wy);
      break;
    }
    case ScheduleKind::kDepthwise: {
      const Shape& os = ShapeOf(anchor->result());
      uint64_t tiles =
          static_cast<uint64_t>(os[0] * os[1] * ceil_div(os[2], B1) * ceil_div(os[3], B0));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      schedule_comment_ = "depthwise: one invocation per " + std::to_string(B1) + "x" +
                          std::to_string(B0) + " (row x column) tile of one channel (" +
                          std::to_string(tiles) + " invocations)";
      EmitDepthwiseMain(anchor, B0, B1, *wx, *wy);
      break;
    }
    case ScheduleKind::kMatmulSplitK: {
      uint64_t outputs = static_cast<uint64_t>(NumElements(ShapeOf(anchor->result())));
      KILN_RETURN_IF_ERROR(Grid(outputs, wx, wy));
      schedule_comment_ = "matmul-splitk: one workgroup per output element (" +
                          std::to_string(outputs) + " workgroups)";
      EmitMatmulSplitKMain(anchor, *wx, *wy);
      break;
    }
    case ScheduleKind::kMatmulTiled: {
      const Shape& os = ShapeOf(anchor->result());
      const int64_t M = os[os.size() - 2], N = os.back();
      uint64_t tiles = static_cast<uint64_t>(NumElements(os) / (M * N) * ceil_div(M, B0) *
                                             ceil_div(N, B1));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      schedule_comment_ = "matmul-tiled: one invocation per " + blk + " tile (" +
                          std::to_string(tiles) + " invocations)";
      EmitMatmulTiledMain(anchor, B0, B1, *wx, *wy);
      break;
    }
    case ScheduleKind::kPointwise: {
      int64_t total = 0;
      for (Value* v : results_) total = std::max(total, NumElements(ShapeOf(v)));
      KILN_RETURN_IF_ERROR(invocations(static_cast<uint64_t>(total)));
      schedule_comment_ = "pointwise: one invocation per output element (" +
                          std::to_string(total) + " invocations)";
      EmitPointwiseMain(*wx, *wy);
      break;
    }
  }
  return OkStatus();
}

}  // namespace kiln::codegen::detail
