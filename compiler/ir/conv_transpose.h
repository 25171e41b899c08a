// tensor.conv_transpose: the geometry of a transposed convolution (ONNX
// ConvTranspose, "deconvolution"), shared by the verifier, the ONNX importer
// and codegen so the three agree on one rule.
//
// The op (see ops.h): operands X [N, C, D1..Dk] (k = 1, 2 or 3 spatial dims),
// W [C, M/group, K1..Kk], optional B [M]; result Y [N, M, O1..Ok]; f32.
// attrs: strides [k], dilations [k], pads [2k] (ONNX order: every begin,
// then every end; >= 0), output_padding [k] (>= 0), group (>= 1, divides C).
// Each output extent is exactly ONNX's
//   O_i = s_i * (D_i - 1) + output_padding_i + ((K_i - 1) * d_i + 1)
//         - pads_begin_i - pads_end_i
// and element y[n, m, o] = B[m] + sum over taps k and input channels c of
// group g = m / (M/group) of X[n, c, i] * W[c, m % (M/group), k] where
// o_j = i_j * s_j - pads_begin_j + k_j * d_j (the scatter of the ONNX spec and
// onnx/reference/ops/op_conv_transpose.py, read as a gather).
#ifndef KILN_COMPILER_IR_CONV_TRANSPOSE_H_
#define KILN_COMPILER_IR_CONV_TRANSPOSE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// Attributes and shapes of one tensor.conv_transpose, each list sized to the
// number of spatial dims (absent attrs take ONNX's defaults).
struct ConvTransposeParams {
  int spatial = 0;                         // k
  std::vector<int64_t> strides;            // [k]
  std::vector<int64_t> dilations;          // [k]
  std::vector<int64_t> pads;               // [2k]: begins, then ends
  std::vector<int64_t> output_padding;     // [k]
  int64_t group = 1;
};

// ONNX's output extent of one spatial dim (formula above); may be <= 0 for
// bad attributes (callers reject that).
int64_t ConvTransposeOutputSize(int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                                int64_t pad_begin, int64_t pad_end, int64_t output_padding);

// Reads `op`'s attributes and checks them against its operand and result
// types (ranks, channel counts, bias shape, every output extent). On
// failure returns false and sets *error to a message (without the op name).
bool GetConvTransposeParams(const Operation& op, ConvTransposeParams* params, std::string* error);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_CONV_TRANSPOSE_H_
