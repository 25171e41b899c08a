// ONNX node handlers: the reductions, Softmax and friends, MatMul and Gemm. The Importer class is declared in onnx_importer_internal.h;
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
// Reductions, softmax, matmul
// ---------------------------------------------------------------------------
Status Importer::Reduce(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  bool axes_input = (op_type_ == "ReduceSum" && opset_ >= 13) || opset_ >= 18;
  Shape axes;
  if (axes_input) {
    if (in.size() > 1 && in[1]) { KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes")); }
  } else {
    axes = AttrInts("axes");
  }
  bool keepdims = AttrInt("keepdims", 1) != 0;
  if (axes.empty()) {
    if (AttrInt("noop_with_empty_axes", 0) != 0) { out[0] = x; return OkStatus(); }
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, r)); }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape os;
  for (int64_t i = 0; i < r; ++i) {
    bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!red) os.push_back(x->type().shape[i]);
    else if (keepdims) os.push_back(1);
  }
  if (axes.empty()) { out[0] = x; return OkStatus(); }  // rank-0 input
  std::string kind;
  if (op_type_ == "ReduceMean") kind = "mean";
  else if (op_type_ == "ReduceMax") kind = "max";
  else if (op_type_ == "ReduceMin") kind = "min";
  else if (op_type_ == "ReduceSum" || op_type_ == "ReduceL1" || op_type_ == "ReduceLogSum") kind = "sum";
  else if (op_type_ == "ReduceProd") kind = "prod";
  else if (op_type_ == "ReduceSumSquare") kind = "sum_square";
  else if (op_type_ == "ReduceL2") kind = "l2";
  else kind = "log_sum_exp";
  if (op_type_ == "ReduceL1") x = Emit("tensor.abs", {x}, x->type());
  Value* y = Emit("tensor.reduce", {x}, Type::Tensor(x->type().dtype, os),
                  {{"kind", kind}, {"axes", axes}, {"keepdims", keepdims}});
  if (op_type_ == "ReduceLogSum") y = Emit("tensor.log", {y}, y->type());
  out[0] = y;
  return OkStatus();
}

Status Importer::Softmax(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  int64_t r = x->type().rank();
  if (r == 0) return Invalid("Softmax of a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", opset_ < 13 ? 1 : -1), r));
  bool log = op_type_ == "LogSoftmax";
  if (opset_ >= 13 || axis == r - 1) {
    out[0] = Emit("tensor.softmax", {x}, x->type(), {{"axis", axis}, {"log", log}});
    return OkStatus();
  }
  // opset < 13: coerce to 2-D [prod(d<axis), prod(d>=axis)], softmax over dim 1.
  Shape s2 = {Product(xs, 0, axis), Product(xs, axis)};
  Value* x2 = Reshape(x, s2);
  Value* y2 = Emit("tensor.softmax", {x2}, x2->type(), {{"axis", int64_t{1}}, {"log", log}});
  out[0] = Reshape(y2, xs);
  return OkStatus();
}

Status Importer::MatMul(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* a = in[0];
  Value* b = in[1];
  if (a->type().dtype != b->type().dtype) return Invalid("MatMul operand dtypes differ");
  int64_t ra = a->type().rank(), rb = b->type().rank();
  if (ra == 0 || rb == 0) return Invalid("MatMul of a scalar");
  if (ra == 1) a = Reshape(a, {1, a->type().shape[0]});
  if (rb == 1) b = Reshape(b, {b->type().shape[0], 1});
  const Shape& as = a->type().shape;
  const Shape& bs = b->type().shape;
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], nn = bs.back();
  if (k != k2) return Invalid("MatMul inner dims differ: " + ShapeStr(in[0]->type().shape) + " x " +
                              ShapeStr(in[1]->type().shape));
  Shape batch;
  if (!BroadcastShapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), &batch))
    return Invalid("MatMul batch dims do not broadcast");
  Shape os = batch;
  os.push_back(m);
  os.push_back(nn);
  Value* y = Emit("tensor.matmul", {a, b}, Type::Tensor(a->type().dtype, os));
  Shape fs = batch;
  if (ra != 1) fs.push_back(m);
  if (rb != 1) fs.push_back(nn);
  out[0] = Reshape(y, fs);
  return OkStatus();
}

Status Importer::Gemm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* a = in[0];
  Value* b = in[1];
  Value* c = in.size() > 2 ? in[2] : nullptr;
  if (a->type().rank() != 2 || b->type().rank() != 2) return Invalid("Gemm operands must be 2-D");
  if (a->type().dtype != b->type().dtype) return Invalid("Gemm operand dtypes differ");
  DType dt = a->type().dtype;
  if (AttrInt("transA", 0)) a = Transpose(a, {1, 0});
  if (AttrInt("transB", 0)) b = Transpose(b, {1, 0});  // folds into a constant B
  double alpha = AttrFloat("alpha", 1.0), beta = AttrFloat("beta", 1.0);
  if (a->type().shape[1] != b->type().shape[0])
    return Invalid("Gemm inner dims differ: " + ShapeStr(a->type().shape) + " x " + ShapeStr(b->type().shape));
  bool alpha_on_b = alpha != 1.0 && GetConst(b);
  if (alpha_on_b) { KILN_ASSIGN_OR_RETURN(b, Binary("tensor.mul", b, ScalarConst(dt, alpha))); }
  Shape os = {a->type().shape[0], b->type().shape[1]};
  Value* y = Emit("tensor.matmul", {a, b}, Type::Tensor(dt, os));
  if (alpha != 1.0 && !alpha_on_b) { KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, ScalarConst(dt, alpha))); }
  if (c && beta != 0.0) {
    if (beta != 1.0) { KILN_ASSIGN_OR_RETURN(c, Binary("tensor.mul", c, ScalarConst(dt, beta))); }
    KILN_ASSIGN_OR_RETURN(y, Binary("tensor.add", y, c));
    if (y->type().shape != os) return Invalid("Gemm C does not broadcast to " + ShapeStr(os));
  }
  out[0] = y;
  return OkStatus();
}

}  // namespace detail
}  // namespace kiln::onnx_import
