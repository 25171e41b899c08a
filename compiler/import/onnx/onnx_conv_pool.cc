// ONNX node handlers: Conv, the pools (MaxPool, AveragePool, LpPool and the
// global ones) and BatchNormalization, with their spatial parameters. The Importer class is declared in onnx_importer_internal.h;
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
// Convolution and pooling
// ---------------------------------------------------------------------------
// Resolves strides/dilations/pads (auto_pad) and output sizes for `kernel`
// over `in_spatial`. Pool: applies ceil_mode.
Status Importer::SpatialParams(const Shape& in_spatial, const Shape& kernel, bool pool,
                               Shape* strides, Shape* dilations, Shape* pads, Shape* out_spatial) {
  size_t k = in_spatial.size();
  *strides = AttrInts("strides", Shape(k, 1));
  *dilations = AttrInts("dilations", Shape(k, 1));
  *pads = AttrInts("pads", Shape(2 * k, 0));
  if (strides->size() != k || dilations->size() != k || pads->size() != 2 * k)
    return Invalid("strides/dilations/pads have the wrong length");
  for (size_t i = 0; i < k; ++i)
    if ((*strides)[i] <= 0 || (*dilations)[i] <= 0 || kernel[i] <= 0 || (*strides)[i] > kMaxDim ||
        (*dilations)[i] > kMaxDim || kernel[i] > kMaxDim)
      return Invalid("strides, dilations and kernel sizes must be positive");
  for (int64_t p : *pads)
    if (p < 0 || p > kMaxDim) return Invalid("bad pad " + std::to_string(p));
  std::string auto_pad = AttrStr("auto_pad", "NOTSET");
  bool ceil_mode = pool && AttrInt("ceil_mode", 0) != 0;
  out_spatial->assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t eff = (kernel[i] - 1) * (*dilations)[i] + 1;
    int64_t s = (*strides)[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = CeilDiv(in_spatial[i], s);
      int64_t total = std::max<int64_t>(0, (o - 1) * s + eff - in_spatial[i]);
      int64_t small = total / 2, big = total - total / 2;
      (*pads)[i] = auto_pad == "SAME_UPPER" ? small : big;
      (*pads)[i + k] = auto_pad == "SAME_UPPER" ? big : small;
    } else if (auto_pad == "VALID") {
      (*pads)[i] = (*pads)[i + k] = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      return Unimpl("auto_pad '" + auto_pad + "' is not supported");
    }
    int64_t num = in_spatial[i] + (*pads)[i] + (*pads)[i + k] - eff;
    if (num < 0)
      return Invalid("kernel (" + std::to_string(eff) + ") larger than padded input (" +
                     std::to_string(in_spatial[i] + (*pads)[i] + (*pads)[i + k]) + ")");
    int64_t o = (ceil_mode ? CeilDiv(num, s) : FloorDiv(num, s)) + 1;
    // The last window must start inside the input or the left padding.
    if (ceil_mode && (o - 1) * s >= in_spatial[i] + (*pads)[i]) --o;
    (*out_spatial)[i] = o;
  }
  return OkStatus();
}

Status Importer::Conv(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* w = in[1];
  Value* b = in.size() > 2 ? in[2] : nullptr;
  const Shape& xs = x->type().shape;
  const Shape& ws = w->type().shape;
  int64_t r = x->type().rank();
  if (r != 3 && r != 4) return Unimpl("Conv with " + std::to_string(r - 2) + " spatial dims is not supported");
  if (w->type().rank() != r) return Invalid("Conv weight rank differs from input rank");
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("Conv on ") + DTypeName(x->type().dtype));
  if (w->type().dtype != x->type().dtype) return Invalid("Conv weight dtype differs from input");
  int64_t group = AttrInt("group", 1);
  if (group <= 0 || ws[0] % group != 0 || ws[1] * group != xs[1])
    return Invalid("Conv channels mismatch: input " + ShapeStr(xs) + ", weight " + ShapeStr(ws) +
                   ", group " + std::to_string(group));
  Shape kernel(ws.begin() + 2, ws.end());
  if (HasAttr("kernel_shape") && AttrInts("kernel_shape") != kernel)
    return Invalid("kernel_shape attribute disagrees with the weight shape");
  Shape in_sp(xs.begin() + 2, xs.end()), strides, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, false, &strides, &dil, &pads, &out_sp));
  if (b) {
    if (b->type().shape != Shape{ws[0]}) return Invalid("Conv bias must be [" + std::to_string(ws[0]) + "]");
    if (b->type().dtype != x->type().dtype) return Invalid("Conv bias dtype differs");
  }
  // A QDQ convolution runs on its integers, exactly (onnx_qdq_conv.cc).
  std::vector<float> sxsw;
  KILN_ASSIGN_OR_RETURN(bool exact_qdq, ExactQdqConvOperands(&x, &w, &b, &sxsw));
  if (r == 3) {  // 1-D: conv2d with H = 1
    x = Reshape(x, {xs[0], xs[1], 1, xs[2]});
    w = Reshape(w, {ws[0], ws[1], 1, ws[2]});
    strides = {1, strides[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
  }
  std::vector<Value*> ops = {x, w};
  if (b) ops.push_back(b);
  Shape os = {xs[0], ws[0], out_sp[0], out_sp[1]};
  Value* y = Emit("tensor.conv2d", ops, Type::Tensor(x->type().dtype, os),
                  {{"strides", strides}, {"pads", pads}, {"dilations", dil}, {"group", group}});
  if (r == 3) y = Reshape(y, {xs[0], ws[0], out_sp[1]});
  if (exact_qdq) {
    Value* acc = y;
    KILN_ASSIGN_OR_RETURN(y, ScaleChannels(acc, sxsw));
    qdq_convs_[y] = QdqConv{acc, sxsw};
  }
  out[0] = y;
  return OkStatus();
}

Status Importer::Pool(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  if (out.size() > 1 && !n.output(1).empty()) return MaxPoolWithIndices(n, in, out);  // onnx_pool_indices.cc
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  if (r == 5) return Pool3D(n, in, out);  // onnx_pool_indices.cc
  if (r != 3 && r != 4) return Unimpl("pooling with " + std::to_string(r - 2) + " spatial dims is not supported");
  Shape kernel = AttrInts("kernel_shape");
  if (static_cast<int64_t>(kernel.size()) != r - 2) return Invalid("kernel_shape must have rank-2 entries");
  Shape in_sp(xs.begin() + 2, xs.end()), strides, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, true, &strides, &dil, &pads, &out_sp));
  bool is_max = op_type_ == "MaxPool";
  bool cip = !is_max && AttrInt("count_include_pad", 0) != 0;
  if (r == 3) {
    x = Reshape(x, {xs[0], xs[1], 1, xs[2]});
    kernel = {1, kernel[0]};
    strides = {1, strides[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
  }
  Shape os = {xs[0], xs[1], out_sp[0], out_sp[1]};
  Value* y = Emit("tensor.pool2d", {x}, Type::Tensor(x->type().dtype, os),
                  {{"kind", std::string(is_max ? "max" : "avg")},
                   {"kernel", kernel},
                   {"strides", strides},
                   {"pads", pads},
                   {"dilations", dil},
                   {"count_include_pad", cip}});
  if (r == 3) y = Reshape(y, {xs[0], xs[1], out_sp[1]});
  out[0] = y;
  return OkStatus();
}

Status Importer::GlobalPool(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  if (r < 3) return Invalid("global pooling needs rank >= 3");
  Shape axes, os = x->type().shape;
  for (int64_t i = 2; i < r; ++i) { axes.push_back(i); os[i] = 1; }
  out[0] = Emit("tensor.reduce", {x}, Type::Tensor(x->type().dtype, os),
                {{"kind", std::string(op_type_ == "GlobalMaxPool" ? "max" : "mean")},
                 {"axes", axes},
                 {"keepdims", true}});
  return OkStatus();
}

Status Importer::BatchNorm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(5);
  if (AttrInt("training_mode", 0) != 0 || AttrInt("is_test", 1) == 0)
    return Unimpl("BatchNormalization in training mode is not supported");
  if (AttrInt("spatial", 1) == 0)
    return Unimpl("attribute 'spatial' = 0 (per-element statistics, opsets 1-8) is not supported");
  for (size_t i = 1; i < out.size(); ++i)
    if (!n.output(i).empty()) return Unimpl("BatchNormalization training outputs are not supported");
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  if (xs.size() < 2) return Invalid("BatchNormalization input must have rank >= 2");
  if (!IsFloatDType(x->type().dtype)) return Unimpl("BatchNormalization on non-float input");
  int64_t c = xs[1];
  const DenseElements* p[4];
  const char* names[4] = {"scale", "B", "input_mean", "input_var"};
  bool all_const = true;
  for (int i = 0; i < 4; ++i) {
    p[i] = GetConst(in[i + 1]);
    all_const &= p[i] != nullptr;
    if (in[i + 1]->type().num_elements() != c || in[i + 1]->type().dtype != x->type().dtype)
      return Invalid(std::string("BatchNormalization '") + names[i] + "' must have " +
                     std::to_string(c) + " elements of the input's dtype");
  }
  double eps = AttrFloat("epsilon", 1e-5);
  Shape cs = {c};
  for (size_t i = 2; i < xs.size(); ++i) cs.push_back(1);
  if (!all_const) {
    // Parameters computed at run time: (x - mean) / sqrt(var + eps) * scale + B.
    Value* scale = Reshape(in[1], cs);
    Value* bias = Reshape(in[2], cs);
    Value* mean = Reshape(in[3], cs);
    Value* var = Reshape(in[4], cs);
    KILN_ASSIGN_OR_RETURN(Value* ve, Binary("tensor.add", var, ScalarConst(x->type().dtype, eps)));
    Value* sd = Emit("tensor.sqrt", {ve}, ve->type());
    KILN_ASSIGN_OR_RETURN(Value* d, Binary("tensor.sub", x, mean));
    KILN_ASSIGN_OR_RETURN(Value* y, Binary("tensor.div", d, sd));
    KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, scale));
    KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", y, bias));
    return OkStatus();
  }
  std::vector<double> mul(c), add(c);
  for (int64_t i = 0; i < c; ++i) {
    // Round like f32 arithmetic would.
    float scale = static_cast<float>(ReadElementAsDouble(*p[0], i));
    float bias = static_cast<float>(ReadElementAsDouble(*p[1], i));
    float mean = static_cast<float>(ReadElementAsDouble(*p[2], i));
    float var = static_cast<float>(ReadElementAsDouble(*p[3], i));
    double m = static_cast<double>(scale) / std::sqrt(static_cast<double>(var) + eps);
    mul[i] = m;
    add[i] = static_cast<double>(bias) - static_cast<double>(mean) * static_cast<float>(m);
  }
  Value* vm = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, cs), mul));
  Value* va = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, cs), add));
  KILN_ASSIGN_OR_RETURN(Value* y, Binary("tensor.mul", x, vm));
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", y, va));
  return OkStatus();
}

}  // namespace detail
}  // namespace kiln::onnx_import
