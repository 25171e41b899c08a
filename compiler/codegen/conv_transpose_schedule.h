// Codegen of tensor.conv_transpose (ONNX ConvTranspose): one output element
// as a gather, no atomics or scatter.
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

// Emits the statements computing element `out_idx` (GLSL int expressions for
// [n, m, o_1..o_k]) of `op`, a verified tensor.conv_transpose with geometry
// `p` (ir::GetConvTransposeParams); returns the float variable holding it.
std::string EmitConvTransposeElement(const ir::Operation& op, const ir::ConvTransposeParams& p,
                                     const std::vector<std::string>& out_idx,
                                     ConvTransposeEmitter& e);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_CONV_TRANSPOSE_SCHEDULE_H_
