// ONNX normalizations as compositions of tensor.reduce and elementwise ops
// (compiler/ir/ops.h); fusion puts the elementwise tails into the
// reductions' consumers.
//
//   LayerNormalization(x, scale, bias?; axis, epsilon) over axes [axis, rank):
//       y = (x - mean) / sqrt(var + eps) * scale + bias;
//       optional outputs Mean and InvStdDev = 1 / sqrt(var + eps).
//   InstanceNormalization(x [N, C, D...], scale [C], B [C]; epsilon):
//       the same over the spatial axes D..., per (n, c).
//   MeanVarianceNormalization(x; axes = [0, 2, 3]):
//       (x - mean) / (sqrt(var) + 1e-9), ONNX's function definition.
//   LRN(x [N, C, D...]; alpha, beta, bias, size):
//       y = x / (bias + alpha / size * sum_{c' in window(c)} x[n, c']^2)^beta,
//       window(c) = [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped to
//       [0, C): the squares are zero-padded on the channel axis and `size`
//       shifted channel slices are added (AlexNet's LRN, Krizhevsky et al. 2012).
// Variances are biased (divide by the count), as ONNX defines them.
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

StatusOr<Value*> Importer::Standardize(Value* x, const Shape& axes, double eps, Value** mean_out,
                                       Value** sd_out) {
  const DType dt = x->type().dtype;
  Shape ks = x->type().shape;
  for (int64_t a : axes) ks[a] = 1;
  Attrs ra = {{"kind", std::string("mean")}, {"axes", axes}, {"keepdims", true}};
  Value* mean = Emit("tensor.reduce", {x}, Type::Tensor(dt, ks), ra);
  KILN_ASSIGN_OR_RETURN(Value* d, Binary("tensor.sub", x, mean));
  KILN_ASSIGN_OR_RETURN(Value* d2, Binary("tensor.mul", d, d));
  Value* var = Emit("tensor.reduce", {d2}, Type::Tensor(dt, ks), ra);
  KILN_ASSIGN_OR_RETURN(Value* ve, Binary("tensor.add", var, ScalarConst(dt, eps)));
  Value* sd = Emit("tensor.sqrt", {ve}, ve->type());
  if (mean_out) *mean_out = mean;
  if (sd_out) *sd_out = sd;
  return Binary("tensor.div", d, sd);
}

Status Importer::LayerNorm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  int64_t r = x->type().rank();
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", -1), r));
  if (!IsFloatDType(x->type().dtype)) return Unimpl("LayerNormalization on non-float input");
  Shape axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  Value *mean = nullptr, *sd = nullptr;
  KILN_ASSIGN_OR_RETURN(Value* y, Standardize(x, axes, AttrFloat("epsilon", 1e-5), &mean, &sd));
  KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, in[1]));
  if (in.size() > 2 && in[2]) { KILN_ASSIGN_OR_RETURN(y, Binary("tensor.add", y, in[2])); }
  if (y->type().shape != x->type().shape) return Invalid("LayerNormalization scale/bias do not broadcast to X");
  out[0] = y;
  if (out.size() > 1) out[1] = mean;                                       // Mean
  if (out.size() > 2) out[2] = Emit("tensor.reciprocal", {sd}, sd->type());  // InvStdDev
  return OkStatus();
}

Status Importer::InstanceNorm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                              std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  Value* x = in[0];
  const int64_t r = x->type().rank();
  if (r < 3) return Invalid("input must be [N, C, D1..Dk] with k >= 1");
  if (x->type().dtype != DType::kF32) return Unimpl(std::string("input of dtype ") + DTypeName(x->type().dtype) + " (only f32)");
  const int64_t C = x->type().shape[1];
  for (int i = 1; i <= 2; ++i)
    if (in[i]->type().rank() != 1 || in[i]->type().shape[0] != C)
      return Invalid(std::string(i == 1 ? "scale" : "B") + " must be [C]");
  Shape axes, cs(static_cast<size_t>(r), 1);
  for (int64_t d = 2; d < r; ++d) axes.push_back(d);
  cs[1] = C;
  KILN_ASSIGN_OR_RETURN(Value* y, Standardize(x, axes, AttrFloat("epsilon", 1e-5), nullptr, nullptr));
  KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, Reshape(in[1], cs)));
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", y, Reshape(in[2], cs)));
  return OkStatus();
}

Status Importer::MeanVarianceNorm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                  std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const int64_t r = x->type().rank();
  if (x->type().dtype != DType::kF32) return Unimpl(std::string("input of dtype ") + DTypeName(x->type().dtype) + " (only f32)");
  Shape axes = AttrInts("axes", {0, 2, 3});
  for (int64_t& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, r)); }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Value* mean = nullptr;
  Value* sd = nullptr;
  // var + 0 under the sqrt, then + 1e-9 on the deviation (ONNX's definition).
  KILN_RETURN_IF_ERROR(Standardize(x, axes, 0.0, &mean, &sd).status());
  KILN_ASSIGN_OR_RETURN(Value* d, Binary("tensor.sub", x, mean));
  KILN_ASSIGN_OR_RETURN(Value* den, Binary("tensor.add", sd, ScalarConst(DType::kF32, 1e-9)));
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.div", d, den));
  return OkStatus();
}

Status Importer::Lrn(const onnx::NodeProto& n, const std::vector<Value*>& in,
                     std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Type t = x->type();
  const int64_t r = t.rank();
  if (r < 3) return Invalid("input must be [N, C, D1..Dk]");
  if (t.dtype != DType::kF32) return Unimpl(std::string("input of dtype ") + DTypeName(t.dtype) + " (only f32)");
  const int64_t size = AttrInt("size", 0);
  if (size <= 0) return Invalid("size must be positive");
  const double alpha = AttrFloat("alpha", 1e-4), beta = AttrFloat("beta", 0.75), bias = AttrFloat("bias", 1.0);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo, C = t.shape[1];
  KILN_ASSIGN_OR_RETURN(Value* sq, Binary("tensor.mul", x, x));
  Shape pads(static_cast<size_t>(2 * r), 0);
  pads[1] = lo;
  pads[static_cast<size_t>(r + 1)] = hi;
  Shape ps = t.shape;
  ps[1] += lo + hi;
  Value* padded = Emit("tensor.pad", {sq}, Type::Tensor(t.dtype, ps),
                       {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
  Value* sum = SliceAxis(padded, 1, 0, C);
  for (int64_t k = 1; k < size; ++k) {
    KILN_ASSIGN_OR_RETURN(sum, Binary("tensor.add", sum, SliceAxis(padded, 1, k, C)));
  }
  KILN_ASSIGN_OR_RETURN(Value* scaled, Binary("tensor.mul", sum, ScalarConst(t.dtype, alpha / static_cast<double>(size))));
  KILN_ASSIGN_OR_RETURN(Value* base, Binary("tensor.add", scaled, ScalarConst(t.dtype, bias)));
  KILN_ASSIGN_OR_RETURN(Value* den, Binary("tensor.pow", base, ScalarConst(t.dtype, beta)));
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.div", x, den));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
