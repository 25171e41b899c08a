// ONNX activations that are compositions of tensor-level elementwise ops
// (compiler/ir/ops.h); the fusion pass puts each chain into one dispatch, so
// they cost no more than a dedicated op would. f32 only (every ONNX type
// constraint of these ops is a float type; f16/f64 are kUnimplemented with
// the node's name, like the rest of the importer).
//
//   Softsign(x)            = x / (1 + |x|)
//   Selu(x; alpha, gamma)  = gamma * elu(x; alpha)
//                            (ONNX: gamma * x for x > 0, gamma * (alpha * e^x - alpha) else)
//   Celu(x; alpha)         = alpha * elu(x / alpha; 1)
//                            (ONNX: max(0, x) + min(0, alpha * (exp(x / alpha) - 1)))
//   ThresholdedRelu(x; alpha) = x > alpha ? x : 0
//   Shrink(x; bias, lambd) = x < -lambd ? x + bias : (x > lambd ? x - bias : 0)
// Defaults are ONNX's: Selu alpha 1.67326319217681884765625, gamma
// 1.05070102214813232421875; Celu alpha 1; ThresholdedRelu alpha 1; Shrink
// bias 0, lambd 0.5.
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::Activation(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Type t = x->type();
  if (t.dtype != DType::kF32)
    return Unimpl(std::string("input of dtype ") + DTypeName(t.dtype) + " (only f32)");
  auto f32 = [&](double v) { return ScalarConst(DType::kF32, v); };
  Value* zero = f32(0.0);
  if (op_type_ == "Softsign") {
    Value* ax = Emit("tensor.abs", {x}, t);
    KILN_ASSIGN_OR_RETURN(Value* den, Binary("tensor.add", ax, f32(1.0)));
    KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.div", x, den));
  } else if (op_type_ == "Selu") {
    Value* e = Emit("tensor.elu", {x}, t, {{"alpha", AttrFloat("alpha", 1.67326319217681884765625)}});
    KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.mul", e, f32(AttrFloat("gamma", 1.05070102214813232421875))));
  } else if (op_type_ == "Celu") {
    double alpha = AttrFloat("alpha", 1.0);
    if (alpha == 0.0) return Invalid("alpha must not be 0");
    KILN_ASSIGN_OR_RETURN(Value* s, Binary("tensor.div", x, f32(alpha)));
    Value* e = Emit("tensor.elu", {s}, t, {{"alpha", 1.0}});
    KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.mul", e, f32(alpha)));
  } else if (op_type_ == "ThresholdedRelu") {
    KILN_ASSIGN_OR_RETURN(Value* gt, Binary("tensor.greater", x, f32(AttrFloat("alpha", 1.0))));
    out[0] = Emit("tensor.select", {gt, x, zero}, t);
  } else if (op_type_ == "Shrink") {
    double bias = AttrFloat("bias", 0.0), lambd = AttrFloat("lambd", 0.5);
    KILN_ASSIGN_OR_RETURN(Value* lo, Binary("tensor.less", x, f32(-lambd)));
    KILN_ASSIGN_OR_RETURN(Value* hi, Binary("tensor.greater", x, f32(lambd)));
    KILN_ASSIGN_OR_RETURN(Value* plus, Binary("tensor.add", x, f32(bias)));
    KILN_ASSIGN_OR_RETURN(Value* minus, Binary("tensor.sub", x, f32(bias)));
    Value* upper = Emit("tensor.select", {hi, minus, zero}, t);
    out[0] = Emit("tensor.select", {lo, plus, upper}, t);
  } else {
    return Unimpl("not an activation handled here");
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
