// Internal to compiler/codegen: the one table of schedule-selection
// thresholds and register-block sizes for the conv and matmul schedules,
// and the function that picks a schedule for an anchor (SelectSchedule).
// Codegen.cc's Run() asks SelectSchedule and emits what it names; the
// schedule files read their block sizes from the plan it returns.
//
// Why these numbers (measured on lavapipe / llvmpipe, LLVM 15, Mesa 22.3; see
// docs/architecture.md "Kernel schedules" for the figures): llvmpipe runs a
// workgroup as a loop over 8-lane AVX2 vectors, and a storage-buffer load
// inside any loop or branch is an 8-iteration scalar loop with a bounds check
// per lane, even when every lane reads the same address. A vec4 load costs
// about one scalar load (4 components per lane iteration). Loads, not FMAs,
// bound the kernels there, so every schedule below maximizes the number of
// multiply-adds per load instruction: each invocation computes a block of
// outputs (register blocking) and reads its operands four at a time (vec4)
// where the layout and alignment allow. The same blocking is what a tiled
// phone-GPU kernel does (fewer, wider loads per FMA).
#ifndef KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_
#define KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_

#include <cstdint>
#include <string>

namespace kiln::codegen::detail {

// ---- thresholds and block sizes (the one table) ----
// conv-gemm (1x1, stride 1, no padding, group 1): each invocation computes
// kConvGemmChannels output channels x kConvGemmPixels consecutive pixels.
constexpr int64_t kConvGemmChannels = 4;
constexpr int64_t kConvGemmPixels = 4;
// conv-direct (every other conv but single-channel ones, which keep
// conv-tiled):
// kConvDirectChannels output channels x kConvDirectColumns columns of one
// output row; the input row is loaded once per (channel, kh) and reused
// across kw, the columns and the channels.
constexpr int64_t kConvDirectChannels = 4;
constexpr int64_t kConvDirectColumns = 4;
// conv-direct and depthwise unroll the kernel row (kw) and loop over kh: at
// most this many taps (KH * KW) and this many input columns per row; larger
// windows use conv-tiled.
constexpr int64_t kConvMaxUnrolledTaps = 25;
constexpr int64_t kConvMaxRowElements = 32;
// depthwise (one input channel per group, Cg == 1): kDepthwiseColumns columns
// x kDepthwiseRows rows of one channel per invocation; per kernel row the
// input row is loaded once and reused by every (kw, column) pair.
constexpr int64_t kDepthwiseColumns = 8;
constexpr int64_t kDepthwiseRows = 1;
// matmul-tiled: a kMatmulRows x kMatmulCols tile of outputs per invocation,
// A read as vec4 along K and B as vec4 along N where aligned.
constexpr int64_t kMatmulRows = 4;
constexpr int64_t kMatmulCols = 8;
// matmul-splitk: at most this many outputs and a depth of at least this.
constexpr uint64_t kSplitKMaxOutputs = 1024;
constexpr int64_t kSplitKMinDepth = 256;
// reduce-group / softmax-rows: lanes per output from Generator::ReduceLanes
// (schedule_reduce.cc).

// The schedule families Run() can emit.
enum class ScheduleKind {
  kPointwise,
  kReduceGroup,
  kSoftmaxRows,
  kConvGemm,
  kConvDirect,
  kDepthwise,
  kConvTiled,  // the 4 x 4 register tile, for convs the others do not take
  kMatmulTiled,
  kMatmulSplitK,
};

// A schedule and its block sizes for one dispatch (SelectSchedule).
struct SchedulePlan {
  ScheduleKind kind = ScheduleKind::kPointwise;
  int64_t block0 = 1;  // output channels (conv) or rows (matmul) per invocation;
                       // lanes per output (reduce-group, softmax-rows)
  int64_t block1 = 1;  // pixels / columns per invocation
};

}  // namespace kiln::codegen::detail

#endif  // KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_
