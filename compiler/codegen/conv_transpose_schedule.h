// Codegen of tensor.conv_transpose (ONNX ConvTranspose): each output
// element as a gather, no atomics or scatter. Two schedules share the rules
// below (codegen.cc picks one, schedule_table.h SelectConvTransposeTile):
//   - pointwise, EmitConvTransposeElement here: one invocation per output
//     element (1-D and 3-D, and 2-D when the table says so);
//   - conv-transpose-tiled, Generator::EmitConvTransposeTiledMain
//     (schedule_conv_transpose_tiled.cc), 2-D: one invocation per TO output
//     channels x TW output columns of one stride phase of one output row.
//     Columns ow = phase + s_w * j all read the same taps (kw with
//     (ow + pads_begin_w - kw * d_w) % s_w == 0) at input columns
//     iw = j - const, so per tap and input channel the block loads TW
//     inputs and TO weights for TO * TW multiply-adds (the pointwise
//     schedule loads 2 per multiply-add);
//   - conv-transpose-upsample, Generator::EmitConvTransposeUpsampleMain
//     (the same file), 2-D with stride == kernel, dilation 1, no pads and
//     no output_padding, where every output reads exactly one tap of one
//     input pixel: one invocation per TO output channels x TW input
//     columns of one input row, each pixel's KH x KW outputs; per input
//     channel TW inputs and TO * KH * KW weights (as vec4 texels where the
//     emitter admits the operands, schedule_table.h
//     SelectConvTransposeTexels).
//
// Output element y[n, m, o_1..o_k] reads input position i_j from tap k_j
// when o_j + pads_begin_j = i_j * s_j + k_j * d_j. For each spatial dim only
// the taps with (o_j + pads_begin_j - k_j * d_j) divisible by s_j are
// visited: with g = gcd(s_j, d_j) there are none unless g divides
// t = o_j + pads_begin_j, and then they are k_j = k0, k0 + s_j/g, ... with
// k0 = (t/g) * inverse(d_j/g mod s_j/g) mod s_j/g, so a stride-2 2x2 kernel
// costs one tap per output, not four. Taps whose i_j falls outside the input
// are skipped (i_j decreases along the loop: the first negative one ends it).
//
// Arithmetic (f32), the order of ONNX Runtime's CPU kernel (a GEMM per group,
// W_g^T x X_g, then col2im, then the bias): for each visited tap, in
// lexicographic (k_1, ..., k_k) order, the dot product over the group's input
// channels c = 0..C/group-1 is accumulated with one rounding per term
// (GLSL fma(), see Generator::Mac), then added to the running sum
// (col2im adds the columns in kernel order); the bias is added last.
// The register-block schedules keep this order exactly, so all three give
// bit-identical results (checked on PaddleOCR det's output). Tiled: per tap
// (kh outer, kw inner, in kernel order) a TO x TW array of dots is
// accumulated over the channels with fma() and then added to the TO x TW
// sums, or accumulated into them directly when each output reads one tap
// at most (0.0 + dot is dot: a dot that starts at +0.0 is never -0.0).
// Upsample: one tap per output, so the dot over the channels is the sum.
// Both: the bias last, then the fused epilogue per output element. A tap
// that reads outside the input for some columns of a tiled block adds a
// dot of +0.0 to those columns (the pointwise schedule skips it): the same
// sum, since a sum that starts at +0.0 and adds such dots is never -0.0
// (finite weights; an infinite or NaN weight times a padded 0 would
// differ).
#ifndef KILN_COMPILER_CODEGEN_CONV_TRANSPOSE_SCHEDULE_H_
#define KILN_COMPILER_CODEGEN_CONV_TRANSPOSE_SCHEDULE_H_

#include <string>
#include <vector>

#include "compiler/ir/conv_transpose.h"
#include "compiler/ir/ir.h"

namespace kiln::codegen {

// The statement-level services of the dispatch generator (codegen.cc) that
// the ConvTranspose emitter uses. Names returned are GLSL identifiers or
// expressions valid at the current point of the shader body.
class ConvTransposeEmitter {
 public:
  virtual ~ConvTransposeEmitter() = default;
  // Appends one statement line at the current indentation.
  virtual void Line(const std::string& s) = 0;
  // Opens `head {` (a loop or an if) and a scope for values evaluated inside.
  virtual void Open(const std::string& head) = 0;
  virtual void Close() = 0;
  // A fresh identifier starting with `prefix`.
  virtual std::string Fresh(const char* prefix) = 0;
  // Element `idx` (one GLSL int expression per dim) of operand `i` of the op,
  // as a float expression.
  virtual std::string Operand(unsigned i, const std::vector<std::string>& idx) = 0;
  // acc = a * b + acc, rounded once.
  virtual void Mac(const std::string& acc, const std::string& a, const std::string& b) = 0;
};

// The first tap k0 (a GLSL int expression, "0" when every tap qualifies)
// along one spatial dim of stride `stride` and dilation `dilation` for the
// padded output position `t` (a GLSL int expression, t = o + pads_begin >=
// 0): the least k with (t - k * dilation) % stride == 0, valid when t is a
// multiple of g = gcd(stride, dilation) (there is none otherwise); the
// next taps are k0 + stride / g, ... (a modular inverse, see above).
std::string FirstTapExpr(const std::string& t, int64_t stride, int64_t dilation);

// Emits the statements computing element `out_idx` (GLSL int expressions for
// [n, m, o_1..o_k]) of `op`, a verified tensor.conv_transpose with geometry
// `p` (ir::GetConvTransposeParams); returns the float variable holding it.
std::string EmitConvTransposeElement(const ir::Operation& op, const ir::ConvTransposeParams& p,
                                     const std::vector<std::string>& out_idx,
                                     ConvTransposeEmitter& e);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_CONV_TRANSPOSE_SCHEDULE_H_
