// Codegen of tensor.resize (compiler/ir/ops.h): the GLSL that computes one
// output element inside a dispatch (codegen.cc's pointwise schedule runs it
// once per output element, then the elementwise epilogue).
//
// tensor.resize carries host-computed per-axis taps (the ONNX importer's
// resize_taps.h): along resized axis d, output coordinate o reads x at
// index[off_d + o * T_d + t] with weight weight[off_d + o * T_d + t],
// t < T_d. The element is the separable weighted sum, innermost axis first
// (s_last = sum_t w * x[...]; s_d = sum_t w_d * s_{d+1}), like the ONNX
// reference implementation; with unit weights (no weight operand) it is a
// gather of x (any dtype, exact). An output coordinate whose first index is
// -1 on any axis is extrapolation_value (tf_crop_and_resize); other indices
// are clamped to x's extent, so a bad table never reads outside a binding.
// Cost per element: prod_d T_d loads of x plus sum_d T_d (index, weight)
// loads (bilinear: 4 + 4 + 4; bicubic: 16 + 8 + 8).
#ifndef KILN_COMPILER_CODEGEN_RESIZE_SCHEDULE_H_
#define KILN_COMPILER_CODEGEN_RESIZE_SCHEDULE_H_

#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::codegen {

// Hooks into the dispatch generator: each emits GLSL at its current point.
struct ResizeEmitter {
  std::function<void(const std::string&)> line;  // one statement
  std::function<void(const std::string&)> open;  // "head {" + a new CSE scope
  std::function<void()> close;                   // "}"
  std::function<std::string(const char*)> fresh;  // a fresh identifier
  // Element `idx` (one GLSL int expression per dim) of `v`: the name of a
  // local of v's compute type.
  std::function<std::string(ir::Value*, const std::vector<std::string>&)> eval;
  // GLSL compute type of `v`: "float", "int", "int64_t", "uint" or "bool".
  std::function<std::string(ir::Value*)> type_name;
};

// Checks a tensor.resize's operands against its attributes; the error text
// says what is wrong (the caller names the op).
Status CheckResize(ir::Operation* op);

// Emits element `out_idx` of tensor.resize `op` and returns the local that
// holds it: a float when the op has weights, else x's compute type.
std::string EmitResizeElement(ir::Operation* op, const std::vector<std::string>& out_idx,
                              const ResizeEmitter& e);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_RESIZE_SCHEDULE_H_
