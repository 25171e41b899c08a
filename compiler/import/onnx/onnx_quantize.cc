// ONNX's linear quantization ops → tensor-level ops (no new IR op):
//   QuantizeLinear         y = saturate(round_half_even(x / scale) + zp)   (u8, i8)
//   DequantizeLinear       y = (f32(x) - f32(zp)) * scale                  (u8, i8, i32)
//   DynamicQuantizeLinear  scale = (max(0, max x) - min(0, min x)) / 255,
//                          zp = saturate(round(0 - min / scale)), y as QuantizeLinear (u8)
//   MatMulInteger          (i32(A) - a_zp) @ (i32(B) - b_zp)               → i32, exact
//   ConvInteger            conv(i32(x) - x_zp, i32(w) - w_zp)              → i32, exact
//   QLinearMatMul          saturate(round(MatMulInteger * (a_s * b_s / y_s)) + y_zp)
//   QLinearConv            saturate(round((ConvInteger + B) * (x_s * w_s / y_s)) + y_zp)
// (the formulas of the ONNX operator definitions and of onnx.reference).
// Integer products accumulate in i32 (tensor.matmul with an integer compute
// type is exact); the integer convolutions are lowered to an im2col matmul:
// the zero-point-free input is padded with 0, each kernel tap is a strided
// tensor.slice, the taps are concatenated into [N, C*KH*KW, OH*OW] and
// multiplied by the weight reshaped to [O, C*KH*KW] (per group). Scales and
// zero points are per tensor (scalar or [1]) or per `axis` (1-D); the
// requantization multiplies in f32 and rounds half to even (roundEven).
// Unsupported: block quantization (block_size), dtypes other than u8/i8
// (i32 for DequantizeLinear's input), 3-D integer convolutions.
#include <algorithm>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {
namespace {

bool IsQuantDType(DType dt) { return dt == DType::kU8 || dt == DType::kI8; }
double QMin(DType dt) { return dt == DType::kU8 ? 0.0 : -128.0; }
double QMax(DType dt) { return dt == DType::kU8 ? 255.0 : 127.0; }

}  // namespace

// A scale / zero point `p` shaped to broadcast against a tensor of rank
// `rank`: a scalar or [1] stays per tensor (reshaped to a scalar), a 1-D
// tensor of x's extent along `axis` is reshaped to [1.., C, 1..].
StatusOr<Value*> Importer::QuantParam(Value* p, const Shape& xs, int64_t axis, const char* what) {
  const Shape& ps = p->type().shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (Product(ps) == 1 && ps.size() <= 1) return Reshape(p, {});
  if (ps.size() != 1)
    return Unimpl(std::string(what) + " of shape " + ShapeStr(ps) +
                  " (only per-tensor or 1-D per-axis quantization is supported)");
  KILN_ASSIGN_OR_RETURN(int64_t ax, NormAxis(axis, rank));
  if (ps[0] != xs[ax])
    return Invalid(std::string(what) + " has " + std::to_string(ps[0]) + " elements, but axis " +
                   std::to_string(ax) + " of the input has " + std::to_string(xs[ax]));
  Shape s(rank, 1);
  s[ax] = ps[0];
  return Reshape(p, s);
}

// saturate(round_half_even(v) + zp) as `dt` (v: f32, zp: f32 or null).
StatusOr<Value*> Importer::Requantize(Value* v, Value* zp, DType dt) {
  Value* r = Emit("tensor.round", {v}, v->type());
  if (zp) { KILN_ASSIGN_OR_RETURN(r, Binary("tensor.add", r, Cast(zp, DType::kF32))); }
  r = Emit("tensor.clamp", {r}, r->type(), {{"min", QMin(dt)}, {"max", QMax(dt)}});
  return Cast(r, dt);
}

// i32(x) - i32(zp) (zp may be null).
StatusOr<Value*> Importer::ZeroPointShift(Value* x, Value* zp) {
  Value* xi = Cast(x, DType::kI32);
  if (!zp) return xi;
  return Binary("tensor.sub", xi, Cast(zp, DType::kI32));
}

Status Importer::QuantizeLinear(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* zp = in.size() > 2 ? in[2] : nullptr;
  if (AttrInt("block_size", 0) != 0) return Unimpl("block quantization (block_size) is not supported");
  if (x->type().dtype != DType::kF32)
    return Unimpl(std::string("QuantizeLinear of ") + DTypeName(x->type().dtype) + " (f32 only)");
  DType dt = DType::kU8;
  if (zp) dt = zp->type().dtype;
  else if (HasAttr("output_dtype")) dt = ConvertDType(static_cast<int32_t>(AttrInt("output_dtype", 2)));
  if (!IsQuantDType(dt))
    return Unimpl(std::string("QuantizeLinear to ") + DTypeName(dt) + " (u8 and i8 only)");
  // The requantization of a QDQ convolution computed exactly (onnx_qdq_conv.cc).
  if (auto qc = qdq_convs_.find(x); qc != qdq_convs_.end()) {
    KILN_ASSIGN_OR_RETURN(Value* r, QdqConvRequantize(qc->second, in[1], zp, dt));
    if (r) {
      out[0] = r;
      return OkStatus();
    }
  }
  const Shape& xs = x->type().shape;
  const int64_t axis = AttrInt("axis", 1);
  KILN_ASSIGN_OR_RETURN(Value* scale, QuantParam(in[1], xs, axis, "y_scale"));
  if (scale->type().dtype != DType::kF32) return Unimpl("y_scale must be f32");
  if (zp) { KILN_ASSIGN_OR_RETURN(zp, QuantParam(zp, xs, axis, "y_zero_point")); }
  KILN_ASSIGN_OR_RETURN(Value* q, Binary("tensor.div", x, scale));
  KILN_ASSIGN_OR_RETURN(out[0], Requantize(q, zp, dt));
  return OkStatus();
}

Status Importer::DequantizeLinear(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                  std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* zp = in.size() > 2 ? in[2] : nullptr;
  if (AttrInt("block_size", 0) != 0) return Unimpl("block quantization (block_size) is not supported");
  DType xt = x->type().dtype;
  if (!IsQuantDType(xt) && xt != DType::kI32)
    return Unimpl(std::string("DequantizeLinear of ") + DTypeName(xt) + " (u8, i8 and i32 only)");
  if (zp && zp->type().dtype != xt) return Invalid("x_zero_point's dtype differs from x's");
  const Shape& xs = x->type().shape;
  const int64_t axis = AttrInt("axis", 1);
  KILN_ASSIGN_OR_RETURN(Value* scale, QuantParam(in[1], xs, axis, "x_scale"));
  if (scale->type().dtype != DType::kF32) return Unimpl("x_scale must be f32");
  if (zp) {
    KILN_ASSIGN_OR_RETURN(zp, QuantParam(zp, xs, axis, "x_zero_point"));
    zp = Cast(zp, DType::kF32);  // (Binary drops a subtraction of an all-zero constant)
  }
  // An 8-bit constant (a QDQ model's weight) is not folded into an f32
  // constant: it stays 8-bit in the module's constant pool (4x smaller), and
  // the cast / sub / mul below fuse into the consuming conv2d or matmul as a
  // weight prologue (fuse_dispatch_regions.cc), evaluated at each weight load.
  // Small ones (< kMinInt8WeightElements) fold: they would cost a binding for
  // a few bytes saved.
  const bool keep_8bit = IsQuantDType(xt) && GetConst(x) && Product(xs) >= kMinInt8WeightElements;
  const bool saved_fold = fold_;
  if (keep_8bit) fold_ = false;
  Value* y = Cast(x, DType::kF32);
  StatusOr<Value*> r = zp ? Binary("tensor.sub", y, zp) : StatusOr<Value*>(y);
  if (r.ok()) r = Binary("tensor.mul", *r, scale);
  fold_ = saved_fold;
  KILN_ASSIGN_OR_RETURN(out[0], std::move(r));
  dq_info_[out[0]] = DqInfo{x, scale, zp};  // for QDQ convolutions (onnx_qdq_conv.cc)
  return OkStatus();
}

Status Importer::DynamicQuantizeLinear(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  if (x->type().dtype != DType::kF32) return Unimpl("DynamicQuantizeLinear of a non-f32 input");
  const int64_t rank = x->type().rank();
  Shape axes;
  for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  auto reduce = [&](const char* kind) {
    if (rank == 0) return x;
    return Emit("tensor.reduce", {x}, Type::Tensor(DType::kF32, {}),
                {{"kind", std::string(kind)}, {"axes", axes}, {"keepdims", false}});
  };
  Value* zero = ScalarConst(DType::kF32, 0.0);
  KILN_ASSIGN_OR_RETURN(Value* hi, Binary("tensor.max", reduce("max"), zero));
  KILN_ASSIGN_OR_RETURN(Value* lo, Binary("tensor.min", reduce("min"), zero));
  KILN_ASSIGN_OR_RETURN(Value* range, Binary("tensor.sub", hi, lo));
  // An all-zero input: range 1 (as the reference does), so that scale != 0.
  KILN_ASSIGN_OR_RETURN(Value* is_zero, Binary("tensor.equal", range, zero));
  range = Emit("tensor.select", {is_zero, ScalarConst(DType::kF32, 1.0), range}, range->type());
  KILN_ASSIGN_OR_RETURN(Value* scale, Binary("tensor.div", range, ScalarConst(DType::kF32, 255.0)));
  KILN_ASSIGN_OR_RETURN(Value* lo_s, Binary("tensor.div", lo, scale));
  KILN_ASSIGN_OR_RETURN(Value* zp_f, Binary("tensor.sub", zero, lo_s));
  zp_f = Emit("tensor.clamp", {zp_f}, zp_f->type(), {{"min", 0.0}, {"max", 255.0}});
  Value* zp_r = Emit("tensor.round", {zp_f}, zp_f->type());
  KILN_ASSIGN_OR_RETURN(Value* q, Binary("tensor.div", x, scale));
  KILN_ASSIGN_OR_RETURN(out[0], Requantize(q, zp_r, DType::kU8));
  if (out.size() > 1) out[1] = scale;
  if (out.size() > 2) out[2] = Cast(zp_r, DType::kU8);
  return OkStatus();
}

// (i32(a) - a_zp) @ (i32(b) - b_zp); a_zp per tensor or per row of a (its
// second-to-last dim), b_zp per tensor or per column (b's last dim).
StatusOr<Value*> Importer::IntegerMatMul(Value* a, Value* a_zp, Value* b, Value* b_zp) {
  if (!IsQuantDType(a->type().dtype) || !IsQuantDType(b->type().dtype))
    return Unimpl(std::string("integer matmul of ") + DTypeName(a->type().dtype) + " x " +
                  DTypeName(b->type().dtype) + " (u8 and i8 only)");
  if (a->type().rank() < 2 || b->type().rank() < 2)
    return Unimpl("integer matmul of rank-1 operands is not supported");
  const Shape as = a->type().shape, bs = b->type().shape;
  auto param = [&](Value* p, const Shape& xs, int64_t axis, const char* what) -> StatusOr<Value*> {
    if (!p) return static_cast<Value*>(nullptr);
    if (p->type().rank() <= 1) return QuantParam(p, xs, axis, what);
    return p;  // an N-D zero point broadcasts as it is ([.., M, 1] / [.., 1, N])
  };
  KILN_ASSIGN_OR_RETURN(a_zp, param(a_zp, as, -2, "a_zero_point"));
  KILN_ASSIGN_OR_RETURN(b_zp, param(b_zp, bs, -1, "b_zero_point"));
  KILN_ASSIGN_OR_RETURN(Value* ai, ZeroPointShift(a, a_zp));
  KILN_ASSIGN_OR_RETURN(Value* bi, ZeroPointShift(b, b_zp));
  if (ai->type().shape != as || bi->type().shape != bs)
    return Invalid("a zero point does not broadcast to its operand");
  if (as.back() != bs[bs.size() - 2])
    return Invalid("inner dims differ: " + ShapeStr(as) + " x " + ShapeStr(bs));
  Shape batch;
  if (!BroadcastShapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), &batch))
    return Invalid("batch dims do not broadcast");
  batch.push_back(as[as.size() - 2]);
  batch.push_back(bs.back());
  return Emit("tensor.matmul", {ai, bi}, Type::Tensor(DType::kI32, batch));
}

// The exact i32 convolution of ConvInteger / QLinearConv: x [N, C, H, W] (or
// [N, C, W]) and w [O, C/group, KH, KW] are u8/i8; x_zp per tensor, w_zp per
// tensor or per output channel. Uses the current node's conv attributes.
StatusOr<Value*> Importer::IntegerConv(Value* x, Value* x_zp, Value* w, Value* w_zp) {
  if (!IsQuantDType(x->type().dtype) || !IsQuantDType(w->type().dtype))
    return Unimpl(std::string("integer convolution of ") + DTypeName(x->type().dtype) + " x " +
                  DTypeName(w->type().dtype) + " (u8 and i8 only)");
  const int64_t r = x->type().rank();
  if (r != 3 && r != 4)
    return Unimpl("integer convolution with " + std::to_string(r - 2) + " spatial dims is not supported");
  if (w->type().rank() != r) return Invalid("weight rank differs from input rank");
  Shape xs = x->type().shape, ws = w->type().shape;
  if (x_zp) {
    if (Product(x_zp->type().shape) != 1) return Unimpl("x_zero_point must be per tensor");
    x_zp = Reshape(x_zp, {});
  }
  if (w_zp) { KILN_ASSIGN_OR_RETURN(w_zp, QuantParam(w_zp, ws, 0, "w_zero_point")); }
  KILN_ASSIGN_OR_RETURN(Value* xi, ZeroPointShift(x, x_zp));
  KILN_ASSIGN_OR_RETURN(Value* wi, ZeroPointShift(w, w_zp));
  const int64_t group = AttrInt("group", 1);
  if (group <= 0 || ws[0] % group != 0 || ws[1] * group != xs[1])
    return Invalid("channels mismatch: input " + ShapeStr(xs) + ", weight " + ShapeStr(ws) + ", group " +
                   std::to_string(group));
  Shape kernel(ws.begin() + 2, ws.end());
  if (HasAttr("kernel_shape") && AttrInts("kernel_shape") != kernel)
    return Invalid("kernel_shape attribute disagrees with the weight shape");
  Shape in_sp(xs.begin() + 2, xs.end()), st, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, false, &st, &dil, &pads, &out_sp));
  if (r == 3) {  // 1-D: H = 1
    xi = Reshape(xi, {xs[0], xs[1], 1, xs[2]});
    wi = Reshape(wi, {ws[0], ws[1], 1, ws[2]});
    st = {1, st[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
    kernel = {1, kernel[0]};
  }
  const int64_t N = xs[0], O = ws[0], Cg = ws[1], KH = kernel[0], KW = kernel[1];
  const int64_t OH = out_sp[0], OW = out_sp[1], P = OH * OW, Og = O / group;
  if (Product({N, Cg * KH * KW, P}) > kMaxCreatedElements)
    return Unimpl("integer convolution too large for the im2col lowering");
  Value* xp = xi;
  if (std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p != 0; })) {
    const Shape& s = xi->type().shape;
    Shape ps = {s[0], s[1], s[2] + pads[0] + pads[2], s[3] + pads[1] + pads[3]};
    xp = Emit("tensor.pad", {xi}, Type::Tensor(DType::kI32, ps),
              {{"pads", Shape{0, 0, pads[0], pads[1], 0, 0, pads[2], pads[3]}},
               {"mode", std::string("constant")},
               {"value", 0.0}});
  }
  std::vector<Value*> ys;
  for (int64_t g = 0; g < group; ++g) {
    std::vector<Value*> taps;
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw) {
        Value* t = Emit("tensor.slice", {xp}, Type::Tensor(DType::kI32, {N, Cg, OH, OW}),
                        {{"starts", Shape{0, g * Cg, kh * dil[0], kw * dil[1]}},
                         {"strides", Shape{1, 1, st[0], st[1]}}});
        taps.push_back(Reshape(t, {N, Cg, 1, P}));
      }
    Value* cols = taps[0];
    if (taps.size() > 1)
      cols = Emit("tensor.concat", taps, Type::Tensor(DType::kI32, {N, Cg, KH * KW, P}), {{"axis", int64_t{2}}});
    cols = Reshape(cols, {N, Cg * KH * KW, P});
    Value* wg = wi;
    if (group > 1)
      wg = Emit("tensor.slice", {wi}, Type::Tensor(DType::kI32, {Og, Cg, KH, KW}),
                {{"starts", Shape{g * Og, 0, 0, 0}}, {"strides", Shape{1, 1, 1, 1}}});
    wg = Reshape(wg, {Og, Cg * KH * KW});
    ys.push_back(Emit("tensor.matmul", {wg, cols}, Type::Tensor(DType::kI32, {N, Og, P})));
  }
  Value* y = ys[0];
  if (group > 1) y = Emit("tensor.concat", ys, Type::Tensor(DType::kI32, {N, O, P}), {{"axis", int64_t{1}}});
  if (r == 3) return Reshape(y, {N, O, OW});
  return Reshape(y, {N, O, OH, OW});
}

Status Importer::MatMulInteger(const onnx::NodeProto& n, const std::vector<Value*>& in,
                               std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  auto opt = [&](size_t i) -> Value* { return in.size() > i ? in[i] : nullptr; };
  KILN_ASSIGN_OR_RETURN(out[0], IntegerMatMul(in[0], opt(2), in[1], opt(3)));
  return OkStatus();
}

Status Importer::ConvInteger(const onnx::NodeProto& n, const std::vector<Value*>& in,
                             std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  auto opt = [&](size_t i) -> Value* { return in.size() > i ? in[i] : nullptr; };
  KILN_ASSIGN_OR_RETURN(out[0], IntegerConv(in[0], opt(2), in[1], opt(3)));
  return OkStatus();
}

Status Importer::QLinearMatMul(const onnx::NodeProto& n, const std::vector<Value*>& in,
                               std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(8);
  Value *a = in[0], *b = in[3];
  DType yt = in[7]->type().dtype;
  if (!IsQuantDType(yt)) return Unimpl(std::string("QLinearMatMul to ") + DTypeName(yt));
  KILN_ASSIGN_OR_RETURN(Value* acc, IntegerMatMul(a, in[2], b, in[5]));
  const Shape& as = a->type().shape;
  const Shape& bs = b->type().shape;
  auto param = [&](Value* p, const Shape& xs, int64_t axis, const char* what) -> StatusOr<Value*> {
    if (p->type().dtype != DType::kF32) return Unimpl(std::string(what) + " must be f32");
    if (p->type().rank() <= 1) return QuantParam(p, xs, axis, what);
    return p;
  };
  KILN_ASSIGN_OR_RETURN(Value* sa, param(in[1], as, -2, "a_scale"));
  KILN_ASSIGN_OR_RETURN(Value* sb, param(in[4], bs, -1, "b_scale"));
  KILN_ASSIGN_OR_RETURN(Value* sy, param(in[6], {1}, 0, "y_scale"));
  if (sy->type().rank() != 0) return Unimpl("y_scale must be per tensor");
  KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.mul", sa, sb));
  KILN_ASSIGN_OR_RETURN(m, Binary("tensor.div", m, sy));
  KILN_ASSIGN_OR_RETURN(Value* v, Binary("tensor.mul", Cast(acc, DType::kF32), m));
  KILN_ASSIGN_OR_RETURN(out[0], Requantize(v, Reshape(in[7], {}), yt));
  return OkStatus();
}

Status Importer::QLinearConv(const onnx::NodeProto& n, const std::vector<Value*>& in,
                             std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(8);
  Value* bias = in.size() > 8 ? in[8] : nullptr;
  DType yt = in[7]->type().dtype;
  if (!IsQuantDType(yt)) return Unimpl(std::string("QLinearConv to ") + DTypeName(yt));
  KILN_ASSIGN_OR_RETURN(Value* acc, IntegerConv(in[0], in[2], in[3], in[5]));
  const Shape& ys = acc->type().shape;
  if (bias) {
    if (bias->type().dtype != DType::kI32 || bias->type().shape != Shape{ys[1]})
      return Invalid("B must be i32 [" + std::to_string(ys[1]) + "]");
    Shape bsh(ys.size(), 1);
    bsh[1] = ys[1];
    KILN_ASSIGN_OR_RETURN(acc, Binary("tensor.add", acc, Reshape(bias, bsh)));
  }
  for (int i : {1, 4, 6})
    if (in[i]->type().dtype != DType::kF32) return Unimpl("scales must be f32");
  if (Product(in[1]->type().shape) != 1 || Product(in[6]->type().shape) != 1)
    return Unimpl("x_scale and y_scale must be per tensor");
  KILN_ASSIGN_OR_RETURN(Value* sw, QuantParam(in[4], ys, 1, "w_scale"));
  KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.mul", Reshape(in[1], {}), sw));
  KILN_ASSIGN_OR_RETURN(m, Binary("tensor.div", m, Reshape(in[6], {})));
  KILN_ASSIGN_OR_RETURN(Value* v, Binary("tensor.mul", Cast(acc, DType::kF32), m));
  KILN_ASSIGN_OR_RETURN(out[0], Requantize(v, Reshape(in[7], {}), yt));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
