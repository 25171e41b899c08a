// ONNX MaxPool with its Indices output (1-D and 2-D pooling), and 3-D
// MaxPool / AveragePool (below), → tensor-level ops. The input is padded with -inf (pads, plus what ceil_mode's last
// window needs), each kernel tap (kh, kw) is a strided tensor.slice
// [N, C, OH, OW], the taps are concatenated along a new axis K = KH*KW;
// Y = max over K and the tap k = arg max (the first in kh-major order on
// ties, ONNX Runtime's scan order). The index is flat over the input
// [N, C, H, W]: h = oh*sh - pad_top + (k / KW)*dh, w likewise;
// ((n*C + c)*H + h)*W + w, or with storage_order = 1 (column major)
// (n*C + c)*H*W + h + w*H.
#include <algorithm>
#include <limits>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::MaxPoolWithIndices(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                    std::vector<Value*>& out) {
  Value* x = in[0];
  const Shape xs0 = x->type().shape;
  const int64_t r = x->type().rank();
  if (r != 3 && r != 4)
    return Unimpl("MaxPool Indices with " + std::to_string(r - 2) + " spatial dims (1 or 2 are supported)");
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("MaxPool Indices on ") + DTypeName(x->type().dtype));
  Shape kernel = AttrInts("kernel_shape");
  if (static_cast<int64_t>(kernel.size()) != r - 2) return Invalid("kernel_shape must have rank-2 entries");
  Shape in_sp(xs0.begin() + 2, xs0.end()), st, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, true, &st, &dil, &pads, &out_sp));
  const int64_t order = AttrInt("storage_order", 0);
  if (order != 0 && order != 1) return Invalid("storage_order must be 0 or 1");
  if (r == 3) {
    x = Reshape(x, {xs0[0], xs0[1], 1, xs0[2]});
    kernel = {1, kernel[0]};
    st = {1, st[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
  }
  const Shape xs = x->type().shape;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], KH = kernel[0], KW = kernel[1];
  const int64_t OH = out_sp[0], OW = out_sp[1];
  const DType dt = x->type().dtype;
  // End padding: at least `pads`, and what the last (ceil_mode) window reaches.
  const int64_t pb = std::max(pads[2], (OH - 1) * st[0] + (KH - 1) * dil[0] + 1 - H - pads[0]);
  const int64_t pr = std::max(pads[3], (OW - 1) * st[1] + (KW - 1) * dil[1] + 1 - W - pads[1]);
  Value* xp = x;
  if (pads[0] || pads[1] || pb || pr)
    xp = Emit("tensor.pad", {x}, Type::Tensor(dt, {N, C, H + pads[0] + pb, W + pads[1] + pr}),
              {{"pads", Shape{0, 0, pads[0], pads[1], 0, 0, pb, pr}},
               {"mode", std::string("constant")},
               {"value", -std::numeric_limits<double>::infinity()}});
  std::vector<Value*> taps;
  std::vector<double> hoff, woff;
  for (int64_t kh = 0; kh < KH; ++kh)
    for (int64_t kw = 0; kw < KW; ++kw) {
      Value* t = Emit("tensor.slice", {xp}, Type::Tensor(dt, {N, C, OH, OW}),
                      {{"starts", Shape{0, 0, kh * dil[0], kw * dil[1]}}, {"strides", Shape{1, 1, st[0], st[1]}}});
      taps.push_back(Reshape(t, {N, C, 1, OH, OW}));
      hoff.push_back(static_cast<double>(kh * dil[0]));
      woff.push_back(static_cast<double>(kw * dil[1]));
    }
  const int64_t K = KH * KW;
  Value* all = taps.size() == 1 ? taps[0]
                                : Emit("tensor.concat", taps, Type::Tensor(dt, {N, C, K, OH, OW}), {{"axis", int64_t{2}}});
  const Shape os = {N, C, OH, OW};
  Value* y = Emit("tensor.reduce", {all}, Type::Tensor(dt, os),
                  {{"kind", std::string("max")}, {"axes", Shape{2}}, {"keepdims", false}});
  Value* k = Emit("tensor.arg_reduce", {all}, Type::Tensor(DType::kI64, os),
                  {{"kind", std::string("max")}, {"axis", int64_t{2}}, {"keepdims", false}, {"select_last_index", false}});
  auto table = [&](const std::vector<double>& v) {
    Value* t = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {K}), v));
    return Emit("tensor.gather", {t, k}, Type::Tensor(DType::kI64, os), {{"axis", int64_t{0}}});
  };
  auto iota = [&](int64_t len, int64_t step, int64_t start, const Shape& shape) {
    std::vector<double> v;
    for (int64_t i = 0; i < len; ++i) v.push_back(static_cast<double>(i * step + start));
    return Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, shape), v));
  };
  KILN_ASSIGN_OR_RETURN(Value* h, Binary("tensor.add", iota(OH, st[0], -pads[0], {1, 1, OH, 1}), table(hoff)));
  KILN_ASSIGN_OR_RETURN(Value* w, Binary("tensor.add", iota(OW, st[1], -pads[1], {1, 1, 1, OW}), table(woff)));
  Value* nc = iota(N * C, H * W, 0, {N, C, 1, 1});
  Value* inner;
  if (order == 0) {
    KILN_ASSIGN_OR_RETURN(Value* hw, Binary("tensor.mul", h, I64Const(W)));
    KILN_ASSIGN_OR_RETURN(inner, Binary("tensor.add", hw, w));
  } else {
    KILN_ASSIGN_OR_RETURN(Value* wh, Binary("tensor.mul", w, I64Const(H)));
    KILN_ASSIGN_OR_RETURN(inner, Binary("tensor.add", h, wh));
  }
  KILN_ASSIGN_OR_RETURN(Value* idx, Binary("tensor.add", nc, inner));
  if (r == 3) {
    y = Reshape(y, {N, C, OW});
    idx = Reshape(idx, {N, C, OW});
  }
  out[0] = y;
  out[1] = idx;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail

namespace kiln::onnx_import::detail {

// 3-D MaxPool / AveragePool (X [N, C, D, H, W]): like the Indices path, each
// kernel tap is a strided slice of the padded input (max: -inf padding;
// avg: 0), the taps are concatenated on a new axis and reduced. Average
// divides by the window size (count_include_pad) or by the count of input
// elements in each window (a constant: the same taps over a padded ones
// tensor, folded at import).
Status Importer::Pool3D(const onnx::NodeProto& n, const std::vector<Value*>& in, std::vector<Value*>& out) {
  Value* x = in[0];
  const Shape xs = x->type().shape;
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("3-D pooling on ") + DTypeName(x->type().dtype));
  Shape kernel = AttrInts("kernel_shape");
  if (kernel.size() != 3) return Invalid("kernel_shape must have 3 entries");
  Shape in_sp(xs.begin() + 2, xs.end()), st, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, true, &st, &dil, &pads, &out_sp));
  const bool is_max = op_type_ == "MaxPool";
  const bool cip = !is_max && AttrInt("count_include_pad", 0) != 0;
  const DType dt = x->type().dtype;
  Shape full_pads(10, 0), padded = xs;
  for (int d = 0; d < 3; ++d) {
    const int64_t end = std::max(pads[3 + d], (out_sp[d] - 1) * st[d] + (kernel[d] - 1) * dil[d] + 1 - xs[2 + d] - pads[d]);
    full_pads[2 + d] = pads[d];
    full_pads[7 + d] = end;
    padded[2 + d] += pads[d] + end;
  }
  const Shape os = {xs[0], xs[1], out_sp[0], out_sp[1], out_sp[2]};
  const int64_t K = kernel[0] * kernel[1] * kernel[2];
  if (K > 4096) return Unimpl("3-D pooling kernel of more than 4096 taps");
  auto taps = [&](Value* v, double pad_value) -> Value* {
    Value* p = Emit("tensor.pad", {v}, Type::Tensor(dt, padded),
                    {{"pads", full_pads}, {"mode", std::string("constant")}, {"value", pad_value}});
    std::vector<Value*> ts;
    Shape one = os;
    one.insert(one.begin() + 2, 1);
    for (int64_t a = 0; a < kernel[0]; ++a)
      for (int64_t b = 0; b < kernel[1]; ++b)
        for (int64_t c = 0; c < kernel[2]; ++c) {
          Value* t = Emit("tensor.slice", {p}, Type::Tensor(dt, os),
                          {{"starts", Shape{0, 0, a * dil[0], b * dil[1], c * dil[2]}},
                           {"strides", Shape{1, 1, st[0], st[1], st[2]}}});
          ts.push_back(Reshape(t, one));
        }
    Shape cs = one;
    cs[2] = K;
    Value* all = ts.size() == 1 ? ts[0] : Emit("tensor.concat", ts, Type::Tensor(dt, cs), {{"axis", int64_t{2}}});
    return Emit("tensor.reduce", {all}, Type::Tensor(dt, os),
                {{"kind", std::string(is_max ? "max" : "sum")}, {"axes", Shape{2}}, {"keepdims", false}});
  };
  Value* y = taps(x, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
  if (!is_max) {
    Value* cnt;
    if (cip) {
      cnt = ScalarConst(dt, static_cast<double>(K));
    } else {
      Value* ones = Constant(MakeDenseFromDoubles(Type::Tensor(dt, xs), std::vector<double>(Product(xs), 1.0)));
      cnt = taps(ones, 0.0);
    }
    KILN_ASSIGN_OR_RETURN(y, Binary("tensor.div", y, cnt));
  }
  out[0] = y;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
