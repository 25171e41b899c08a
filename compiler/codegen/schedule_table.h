// The per-shape schedule thresholds of compiler/codegen, in one place: the
// register block of tensor.conv2d (conv-tiled) and of tensor.conv_transpose
// (conv-transpose-tiled), and the tensor.matmul schedule split. codegen.cc's schedule selection reads only this table.
// Internal to compiler/codegen (lit and unit tests check the choices through
// the "// schedule:" line of the generated GLSL and SelectConvTile).
//
// Why these numbers (docs/architecture.md, "Convolution schedules", has the
// measurements). On a CPU driver (lavapipe, Mesa 22.3) every storage-buffer
// load is a loop over the SIMD lanes, one bounds-checked scalar load per
// lane and component, whether its index is uniform or not and whether it is
// a float or a vec4: about 19 instructions per element per lane, against 2
// for the multiply-add it feeds. A conv's cost is therefore the number of
// elements each invocation loads per multiply-add. A TO x TW block (TO
// output channels x TW output columns of one row) loads, per input channel
// and kernel row, R = (TW - 1) * stride + (KW - 1) * dilation + 1 inputs and
// TO * KW weights for TO * TW * KW multiply-adds, so a larger block loads
// less per multiply-add (4x4 -> 8x8 halves it). On a GPU the same block is
// the classic register tile; 8 x 8 = 64 accumulators stays within a GPU's
// per-thread registers (a real GPU gained 1.6-2.8x from unrolled register
// blocks, docs/device.md).
#ifndef KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_
#define KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_

#include <cstdint>
#include <vector>

namespace kiln::codegen::detail {

// ---- tensor.conv2d: conv-tiled register block -------------------------------
// Most output channels per invocation (a power of two dividing the group's
// output channels: the block never straddles two groups).
constexpr int64_t kConvMaxTileChannels = 8;
// Most output columns per invocation when the block has several channels.
constexpr int64_t kConvMaxTileColumns = 8;
// Most output columns per invocation for one channel per group (depthwise):
// the weights are few, so the block grows along the row instead.
constexpr int64_t kConvMaxTileColumnsDepthwise = 16;
// Most accumulators (TO * TW) per invocation.
constexpr int64_t kConvMaxTileOutputs = 64;
// A conv whose input or weights come from a fused prologue (a dequantize of
// 8-bit weights, the squeeze-excite multiply) gets the same block: the
// block's loads are loops (schedule_conv.cc), so its code no longer grows
// with the block (it was capped at 4 x 4 while every load was written out).
// Longest input row one invocation keeps in registers (else the kernel's
// columns become a loop; conv-tiled).
constexpr int64_t kConvMaxInputRow = 32;

// ---- tensor.conv_transpose: conv-transpose-tiled / -upsample blocks ---------
// 2-D transposed convolutions (ONNX ConvTranspose, the decoders' upsampling)
// get a register block (schedule_conv_transpose_tiled.cc); 1-D and 3-D ones
// stay pointwise (one invocation per output, conv_transpose_schedule.h).
constexpr int kConvTransposeTiledSpatialDims = 2;
// The block's limits are the conv2d ones: TO <= kConvMaxTileChannels, TW <=
// kConvMaxTileColumns (kConvMaxTileColumnsDepthwise for one channel per
// block), TO * TW <= kConvMaxTileOutputs.

// ---- tensor.matmul ------------------------------------------------------------
// At most this many outputs and a depth of at least kSplitKMinDepth: one
// workgroup per output, lanes split K (matmul-splitk).
constexpr uint64_t kSplitKMaxOutputs = 1024;
constexpr int64_t kSplitKMinDepth = 256;
// matmul-tiled register block: at most this many rows (TM) and columns (TN)
// per invocation, TM * TN <= kConvMaxTileOutputs accumulators.
constexpr int64_t kMatmulMaxTileRows = 16;
constexpr int64_t kMatmulMaxTileColumns = 8;
// A block is only as large as leaves at least this many invocations (4
// workgroups of 64), so that lavapipe's one thread per core gets equal
// shares; below it for every block, the 4 x 4 default without texels.
constexpr uint64_t kMatmulMinInvocations = 256;
// Relative cost of reading one element, per k: a storage-buffer float 16, a
// quarter of a vec4 texel 1 (a texel fetch gathers 4 floats for about the
// price of one float load on lavapipe; ConvTexels below).
constexpr int64_t kFloatLoadCost = 16;
constexpr int64_t kTexelElementCost = 1;

// The conv-tiled block of one tensor.conv2d: `channels` (TO) output channels
// x `columns` (TW) output columns per invocation.
struct ConvTile {
  int64_t channels = 1;
  int64_t columns = 1;
};

// The block for an NCHW conv with result shape `out` [N, O, OH, OW], weights
// [O, C/group, KH, KW], `group` groups, column stride `stride_w` and
// dilation `dilation_w`. TO: the largest power of two <= kConvMaxTileChannels
// dividing O / group. TW: the power of two up to the most columns
// (kConvMaxTileColumns, or kConvMaxTileColumnsDepthwise when TO is 1, capped
// by kConvMaxTileOutputs / TO and OW) that loads the fewest elements per
// useful multiply-add, ceil(OW / TW) * (R(TW) + TO * KW) / (TO * OW * KW)
// with R as above and R(TW) <= kConvMaxInputRow; ties go to the narrower
// block (less code). Powers of two only, so convs of nearby widths keep one
// shader (compiler/backend/shader_dedupe.h shares shaders that differ only
// in baked shapes). Pure function of the shapes.
ConvTile SelectConvTile(const std::vector<int64_t>& out, const std::vector<int64_t>& weights,
                        int64_t group, int64_t stride_w, int64_t dilation_w);

// Whether conv-tiled runs a tensor.conv2d over flattened positions: a 1x1
// kernel with stride 1 and no padding on an input of more than one row.
// Output position p is then input position p, and each channel's H * W
// positions are one contiguous row of the input and of the result, so the
// block's TW columns are TW positions: 6 x 10 outputs take 8 blocks of 8
// (60 of 64 used) instead of 6 rows of 2 blocks (60 of 96), and a channel's
// row is whole texels when H * W % 4 == 0 (PP-OCRv4 det's neck on 6 x 10).
// The block computes the same sums in the same order. `in` [N, C, H, W],
// `weights` [O, C/group, KH, KW], `strides` [2], `pads` [4].
bool ConvFlattensPositions(const std::vector<int64_t>& in, const std::vector<int64_t>& weights,
                           const std::vector<int64_t>& strides, const std::vector<int64_t>& pads);
// The [N, C, H, W] shape as conv-tiled sees it: [N, C, 1, H * W] when the
// conv flattens positions, else `shape`.
std::vector<int64_t> ConvTileShape(const std::vector<int64_t>& shape, bool flattened);

// Which operands of a conv-tiled block are read as vec4 texels (a uniform
// texel buffer, hal/api.h BindingKind::kUniformTexelBuffer) instead of
// storage-buffer floats. Why: on lavapipe (Mesa 22.3) a texel fetch is a
// branch-free gather of 4 floats per lane, where a storage-buffer load is a
// bounds-checked loop over the lanes per float. A microbenchmark of an 8 x 8
// block (one invocation: 8 channels x 8 columns, 256 input channels, 2 vec4
// fetches of input and 2 of weights per input channel) ran 2.9x faster than
// with float loads (13.6 vs 4.7 GMAC/s, split fma; docs/architecture.md).
//   input: the input row of every (input channel, kernel row) comes from
//     ceil((R + lead) / 4) texels, lead = (-pad_w) mod 4; needs W % 4 == 0
//     (a row starts on a texel) and TW * stride % 4 == 0 (every block's row
//     starts at the same place in a texel), and the row kept in registers
//     (R <= kConvMaxInputRow, KW <= the unroll limit 16).
//   weights: a 1x1 kernel's weights [O, C/group] as 4 input channels per
//     texel; needs C/group % 4 == 0.
//   weight_kernels: a KH x KW kernel's weights (KH * KW in 2..16) when
//     C/group % 4 == 0: input channels go by 4 (ic = 4 * ic4 + q), and the
//     kernel of (o, ic) starts (q * KH * KW) mod 4 floats into texel
//     ((o * C/group + 4 * ic4) * KH * KW + q * KH * KW) / 4, a lead known
//     once the driver unrolls q: per output channel and input channel
//     ceil((lead + KH * KW) / 4) fetches (3 for 3x3) and no selects. Needs
//     the row in registers (as input).
//   weight_rows: any other kernel's weights, per (output channel, input
//     channel, kernel row): its KW floats from ceil((KW + 3) / 4) texels
//     starting at a run-time lead of 0-3 floats, picked by selects (3 per
//     weight); needs the row in registers (as input) and KW <= 13. Cheaper
//     than KW storage-buffer loads on lavapipe (depthwise convs and the
//     stems' 3 input channels).
// `*_eligible`: the emitter admits the operand (CodegenOptions::
// texel_eligible) and the block reads it element for element: the input
// directly or through an elementwise prologue whose other operands
// broadcast (the squeeze-excite x * scale[c]: the block fetches x's operand
// as texels and applies the prologue per element); the weights directly.
// Shapes as SelectConvTile; `in` is the input [N, C, H, W].
struct ConvTexels {
  bool input = false;
  bool weights = false;
  bool weight_kernels = false;
  bool weight_rows = false;
};
ConvTexels SelectConvTexels(const std::vector<int64_t>& in, const std::vector<int64_t>& weights,
                            int64_t stride_w, int64_t dilation_w, const ConvTile& tile,
                            bool input_eligible, bool weights_eligible);

// The matmul-tiled block of one tensor.matmul [..., M, K] x [..., K, N]:
// `rows` (TM) x `columns` (TN) outputs per invocation. a_texels: A's rows
// are read as vec4 texels along K (4 k per fetch; needs K % 4 == 0). b_texels:
// B's rows as vec4 texels along N (needs N % 4 == 0 and TN % 4 == 0, so a
// block's columns start on a texel).
struct MatmulTile {
  int64_t rows = 1;
  int64_t columns = 1;
  bool a_texels = false;
  bool b_texels = false;
};

// The block for `batch` matrices of M x N outputs over depth K, with A and
// B admitted as texel buffers or not (`*_eligible`, as SelectConvTexels).
// Over TM = min(M, 1..16) and TN = min(N, 1..8) (powers of two), TM * TN <=
// kConvMaxTileOutputs, leaving >= kMatmulMinInvocations invocations: the
// fewest element reads over the whole output per k, tiles * (TM * cost_A +
// TN * cost_B) with the costs above (ties: fewer accumulators). Every
// output still sums k = 0 .. K-1 in order with one fma each, so any block
// gives the same bits. PP-OCRv4 rec's classifier (16 x 6625, K = 120, B a
// 3.2 MB constant: over the portable texel limit) gets 16 x 4 with A as
// texels: 16 texel and 16 float reads per 4 k for 256 multiply-adds, where
// the 4 x 4 float block read 32 for 64. Pure function of the shapes.
MatmulTile SelectMatmulTile(int64_t batch, int64_t M, int64_t N, int64_t K, bool a_eligible,
                            bool b_eligible);

// The geometry of one tensor.conv_transpose that its schedule depends on
// (compiler/ir/conv_transpose.h ConvTransposeParams, shapes included).
struct ConvTransposeShape {
  int spatial = 0;              // spatial dims k
  std::vector<int64_t> input;   // [N, C, D1..Dk]
  std::vector<int64_t> weights; // [C, M/group, K1..Kk]
  std::vector<int64_t> out;     // [N, M, O1..Ok]
  std::vector<int64_t> strides, dilations, pads, output_padding;  // [k], [k], [2k], [k]
};

// The schedule of one tensor.conv_transpose.
//   kPointwise: one invocation per output (1-D, 3-D).
//   kPhase (conv-transpose-tiled, 2-D): `tile` is TO output channels x TW
//     output columns of one stride phase (ow = phase + s_w * j, j = j0 ..
//     j0 + TW - 1) of one output row. Per tap and input channel it loads TW
//     inputs and TO weights for TO * TW multiply-adds; over a row that is
//     P * ceil(J / TW) * (TW + TO) loads (P = min(s_w, OW) phases of J =
//     ceil(OW / s_w) columns).
//   kUpsample (conv-transpose-upsample, 2-D with stride == kernel,
//     dilation 1, no pads, no output_padding: each output reads exactly one
//     tap of one input pixel, y[n, m, ih*s_h + kh, iw*s_w + kw]): `tile` is
//     TO output channels x TW input columns of one input row, each with its
//     KH x KW outputs. Per input channel it loads TW inputs and TO * KH *
//     KW weights for TO * TW * KH * KW multiply-adds; over an input row
//     ceil(W / TW) * (TW + TO * KH * KW) loads, per TO channels.
// Both: TO a power of two <= kConvMaxTileChannels dividing M/group, TW a
// power of two <= kConvMaxTileColumns (kConvMaxTileColumnsDepthwise when TO
// is 1) and <= the columns it tiles, accumulators (TO * TW, times KH * KW
// for kUpsample) <= kConvMaxTileOutputs. Per kind the (TO, TW) with the
// fewest loads over the whole output wins (ties: more channels, then fewer
// columns); then the kind with fewer loads, kUpsample on a tie. PaddleOCR
// det's 24 -> 24 upsampler ties at 23,040 loads per input channel (phase
// 8x8, upsample 2x8), and upsample ran 5% fewer shader instructions
// (callgrind, 40.6 M against 42.8 M for 3 invokes: no tap loops); its
// 24 -> 1 one loads 4,800 as kUpsample against 16,320. Pure function of
// the shapes.
struct ConvTransposeSchedule {
  enum Kind { kPointwise, kPhase, kUpsample };
  Kind kind = kPointwise;
  ConvTile tile;
};
ConvTransposeSchedule SelectConvTransposeTile(const ConvTransposeShape& shape);

// Which operands of a conv-transpose-upsample block (`tile`) are read as
// vec4 texels (why: ConvTexels above). input: each block's TW inputs of one
// input channel are TW / 4 whole texels, so W % 4 == 0 and TW % 4 == 0 (the
// last block of a ragged row reads past it, clamped to the binding; those
// outputs are not stored). weights: a block's TO x KH x KW weights of one
// input channel, w[c, m0 .. m0+TO-1, :, :], are contiguous and start on a
// texel when KH * KW % 4 == 0 (2x2 kernels). `*_eligible` as
// SelectConvTexels. The conv-transpose-tiled (phase) block reads neither
// (its inputs start anywhere in a texel, its weights are strided).
ConvTexels SelectConvTransposeTexels(const ConvTransposeShape& shape, const ConvTile& tile,
                                     bool input_eligible, bool weights_eligible);

}  // namespace kiln::codegen::detail

#endif  // KILN_COMPILER_CODEGEN_SCHEDULE_TABLE_H_
