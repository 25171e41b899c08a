// ONNX node handlers: Constant, Identity and the elementwise ops (unary,
// binary, variadic, Where, Clip, PRelu). The Importer class is declared in onnx_importer_internal.h;
// see onnx_importer.cc for the structure.
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "compiler/import/onnx/onnx_importer_internal.h"
#include "compiler/import/onnx/onnx_op_attributes.h"

namespace kiln::onnx_import {
namespace detail {

// ---------------------------------------------------------------------------
// Constants and identities
// ---------------------------------------------------------------------------
Status Importer::ConstantOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  const std::string what = "node '" + loc_ + "' (Constant)";
  for (const auto& a : n.attribute()) {
    if (a.name() == "value") {
      KILN_ASSIGN_OR_RETURN(DenseElements d, TensorToDense(a.t(), what));
      out[0] = Constant(std::move(d));
    } else if (a.name() == "value_float") {
      out[0] = ScalarConst(DType::kF32, a.f());
    } else if (a.name() == "value_int") {
      out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {}), {a.i()}));
    } else if (a.name() == "value_floats") {
      std::vector<double> v(a.floats().begin(), a.floats().end());
      out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kF32, {int64_t(v.size())}), v));
    } else if (a.name() == "value_ints") {
      Shape v(a.ints().begin(), a.ints().end());
      out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {int64_t(v.size())}), v));
    } else {
      return Unimpl("Constant attribute '" + a.name() + "' is not supported");
    }
  }
  if (!out[0]) return Invalid("Constant has no value");
  return OkStatus();
}

Status Importer::Identity(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  if (op_type_ == "Dropout") {
    // Inference only: training_mode (opset 12 input, or is_test = 0 before
    // opset 7) must be absent or a constant false.
    if (AttrInt("is_test", 1) == 0) return Unimpl("Dropout in training mode is not supported");
    if (in.size() > 2 && in[2]) {
      const DenseElements* t = GetConst(in[2]);
      if (!t || t->type.num_elements() != 1 || ReadElementAsInt(*t, 0) != 0)
        return Unimpl("Dropout in training mode (training_mode not a constant false) is not supported");
    }
  }
  out[0] = in[0];
  if (op_type_ == "Dropout" && out.size() > 1 && !n.output(1).empty()) {
    // Inference: the mask is all true.
    const Shape& s = in[0]->type().shape;
    out[1] = Constant(MakeDenseFromInts(Type::Tensor(DType::kBool, s),
                                        std::vector<int64_t>(Product(s), 1)));
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------
Status Importer::Unary(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  static const std::map<std::string, std::string> kNames = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},
      {"Log", "log"}, {"Sqrt", "sqrt"}, {"Neg", "neg"}, {"Abs", "abs"},
      {"Reciprocal", "reciprocal"}, {"Floor", "floor"}, {"Ceil", "ceil"}, {"Round", "round"},
      {"Erf", "erf"}, {"Sin", "sin"}, {"Cos", "cos"}, {"Not", "not"},
      {"LeakyRelu", "leaky_relu"}, {"HardSigmoid", "hard_sigmoid"}, {"HardSwish", "hard_swish"},
      {"Elu", "elu"}, {"Softplus", "softplus"}, {"Tan", "tan"}, {"Asin", "asin"},
      {"Acos", "acos"}, {"Atan", "atan"}, {"Sinh", "sinh"}, {"Cosh", "cosh"}, {"Asinh", "asinh"},
      {"Acosh", "acosh"}, {"Atanh", "atanh"}, {"Sign", "sign"}, {"IsNaN", "isnan"},
      {"IsInf", "isinf"}};
  Attrs attrs;
  if (op_type_ == "LeakyRelu") attrs["alpha"] = AttrFloat("alpha", 0.01);
  if (op_type_ == "Elu") attrs["alpha"] = AttrFloat("alpha", 1.0);
  if (op_type_ == "HardSigmoid") {
    attrs["alpha"] = AttrFloat("alpha", 0.2);
    attrs["beta"] = AttrFloat("beta", 0.5);
  }
  if (op_type_ == "Not" && in[0]->type().dtype != DType::kBool) return Invalid("Not needs a bool input");
  Type rt = in[0]->type();
  if (op_type_ == "IsNaN" || op_type_ == "IsInf") {
    if (rt.dtype != DType::kF32)
      return Unimpl(std::string(op_type_) + " of " + DTypeName(rt.dtype) + " (only f32)");
    rt.dtype = DType::kBool;
  }
  if (op_type_ == "IsInf") {
    attrs["detect_negative"] = AttrInt("detect_negative", 1);
    attrs["detect_positive"] = AttrInt("detect_positive", 1);
  }
  out[0] = Emit("tensor." + kNames.at(op_type_), {in[0]}, rt, std::move(attrs));
  return OkStatus();
}

Status Importer::BinaryOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  static const std::map<std::string, std::string> kNames = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
      {"Mod", "mod"}, {"Equal", "equal"}, {"Greater", "greater"}, {"Less", "less"},
      {"GreaterOrEqual", "greater_equal"}, {"LessOrEqual", "less_equal"},
      {"And", "and"}, {"Or", "or"}, {"Xor", "xor"}};
  if (opset_ < 7 && HasAttr("broadcast") && AttrInt("broadcast", 0) != 0 && HasAttr("axis"))
    return Unimpl("legacy broadcast with 'axis' (opset < 7) is not supported");
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor." + kNames.at(op_type_), in[0], in[1]));
  return OkStatus();
}

Status Importer::Variadic(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  std::string op = op_type_ == "Max" ? "tensor.max" : op_type_ == "Min" ? "tensor.min" : "tensor.add";
  Value* acc = in[0];
  int count = 1;
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i]) continue;
    KILN_ASSIGN_OR_RETURN(acc, Binary(op, acc, in[i]));
    ++count;
  }
  if (op_type_ == "Mean" && count > 1) {
    KILN_ASSIGN_OR_RETURN(acc, Binary("tensor.div", acc, ScalarConst(acc->type().dtype, count)));
  }
  out[0] = acc;
  return OkStatus();
}

Status Importer::Where(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  if (in[0]->type().dtype != DType::kBool) return Invalid("Where condition must be bool");
  if (in[1]->type().dtype != in[2]->type().dtype) return Invalid("Where branches differ in dtype");
  Shape s1, s;
  if (!BroadcastShapes(in[0]->type().shape, in[1]->type().shape, &s1) ||
      !BroadcastShapes(s1, in[2]->type().shape, &s))
    return Invalid("Where operands do not broadcast");
  out[0] = Emit("tensor.select", {in[0], in[1], in[2]}, Type::Tensor(in[1]->type().dtype, s));
  return OkStatus();
}

Status Importer::Clip(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  DType dt = x->type().dtype;
  double lo = -INFINITY, hi = INFINITY;
  if (opset_ < 11) {
    lo = AttrFloat("min", -INFINITY);
    hi = AttrFloat("max", INFINITY);
  } else {
    Value* vmin = in.size() > 1 ? in[1] : nullptr;
    Value* vmax = in.size() > 2 ? in[2] : nullptr;
    for (Value* b : {vmin, vmax})
      if (b && b->type().num_elements() != 1) return Invalid("Clip bounds must be scalars");
    bool all_const = (!vmin || GetConst(vmin)) && (!vmax || GetConst(vmax));
    if (!all_const) {
      // Data-dependent bounds: max(x, min) then min(., max).
      auto irrelevant = [](Value* bound, bool is_min) {
        const DenseElements* c = GetConst(bound);
        if (!c) return false;
        double v = ReadElementAsDouble(*c, 0);
        return std::isinf(v) && (is_min ? v < 0 : v > 0);
      };
      if (vmin && irrelevant(vmin, true)) vmin = nullptr;
      if (vmax && irrelevant(vmax, false)) vmax = nullptr;
      Value* y = x;
      if (vmin) {
        KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.max", y, Reshape(Cast(vmin, dt), {})));
        y = m;
      }
      if (vmax) {
        KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.min", y, Reshape(Cast(vmax, dt), {})));
        y = m;
      }
      out[0] = y;
      return OkStatus();
    }
    if (vmin) lo = ReadElementAsDouble(*GetConst(vmin), 0);
    if (vmax) hi = ReadElementAsDouble(*GetConst(vmax), 0);
  }
  if (std::isinf(lo) && lo < 0 && std::isinf(hi) && hi > 0) {
    out[0] = x;
    return OkStatus();
  }
  out[0] = Emit("tensor.clamp", {x}, x->type(), {{"min", lo}, {"max", hi}});
  return OkStatus();
}

Status Importer::PRelu(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  // relu(x) + slope * min(x, 0)
  Value* pos = Emit("tensor.relu", {x}, x->type());
  KILN_ASSIGN_OR_RETURN(Value* neg, Binary("tensor.min", x, ScalarConst(x->type().dtype, 0)));
  KILN_ASSIGN_OR_RETURN(Value* scaled, Binary("tensor.mul", neg, in[1]));
  if (scaled->type().shape != x->type().shape) return Invalid("PRelu slope does not broadcast to X");
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", pos, scaled));
  return OkStatus();
}

}  // namespace detail
}  // namespace kiln::onnx_import
