// ONNX RoiAlign → tensor-level ops with gathers (X [N, C, H, W], rois [R, 4]
// of (x1, y1, x2, y2), batch_indices [R] → Y [R, C, oh, ow]). The algorithm
// of ONNX's definition / ONNX Runtime (after Detectron's RoIAlign, He et al.
// 2017, "Mask R-CNN"): per ROI, start = roi * spatial_scale - offset (offset
// 0.5 for coordinate_transformation_mode half_pixel, 0 for
// output_half_pixel, which also widens the ROI to at least 1x1); each output
// bin of size (roi / out) averages (mode avg) or maxes (mode max, per sample
// the largest weighted corner) sampling_ratio^2 bilinear samples at
// start + (bin + (i + 0.5) / sampling_ratio) * bin_size. A sample outside
// [-1, size] contributes 0; coordinates are clamped at 0, and a sample at or
// beyond size - 1 reads the last pixel.
// The sample coordinates come from the runtime rois; sampling_ratio 0 (a
// per-ROI count that depends on the ROI's size) is rejected.
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::RoiAlign(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  Value* x = in[0];
  Value* rois = in[1];
  Value* bidx = in[2];
  const Shape xs = x->type().shape;
  if (xs.size() != 4) return Invalid("X must be [N, C, H, W]");
  if (x->type().dtype != DType::kF32 || rois->type().dtype != DType::kF32) return Unimpl("RoiAlign on non-f32 tensors");
  const Shape rs = rois->type().shape;
  if (rs.size() != 2 || rs[1] != 4) return Invalid("rois must be [R, 4]");
  const int64_t R = rs[0], N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (bidx->type().shape != Shape{R}) return Invalid("batch_indices must be [R]");
  const int64_t PH = AttrInt("output_height", 1), PW = AttrInt("output_width", 1), SR = AttrInt("sampling_ratio", 0);
  if (PH <= 0 || PW <= 0) return Invalid("output_height and output_width must be positive");
  if (SR <= 0)
    return Unimpl("sampling_ratio " + std::to_string(SR) +
                  " (adaptive: the sample count depends on each ROI's size) is not supported");
  const std::string mode = AttrStr("mode", "avg");
  if (mode != "avg" && mode != "max") return Invalid("mode '" + mode + "' is unknown");
  const std::string ctm = AttrStr("coordinate_transformation_mode", opset_ >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return Invalid("coordinate_transformation_mode '" + ctm + "' is unknown");
  const bool half = ctm == "half_pixel";
  const double scale = AttrFloat("spatial_scale", 1.0);
  const DType f = DType::kF32;
  Status st;
  auto B = [&](const char* op, Value* a, Value* b) -> Value* {
    if (!st.ok()) return a;
    auto r = Binary(std::string("tensor.") + op, a, b);
    if (!r.ok()) {
      st = r.status();
      return a;
    }
    return r.value();
  };
  auto K = [&](double v) { return ScalarConst(f, v); };
  auto sel = [&](Value* c, Value* a, Value* b) {
    Shape s;
    BroadcastShapes(c->type().shape, a->type().shape, &s);
    BroadcastShapes(s, b->type().shape, &s);
    return Emit("tensor.select", {c, a, b}, Type::Tensor(a->type().dtype, s));
  };
  auto col = [&](int64_t k) { return SliceAxis(rois, 1, k, 1); };  // [R, 1]
  const double off = half ? 0.5 : 0.0;
  Value* sx = B("sub", B("mul", col(0), K(scale)), K(off));
  Value* sy = B("sub", B("mul", col(1), K(scale)), K(off));
  Value* rw = B("sub", B("sub", B("mul", col(2), K(scale)), K(off)), sx);
  Value* rh = B("sub", B("sub", B("mul", col(3), K(scale)), K(off)), sy);
  if (!half) {
    rw = B("max", rw, K(1.0));
    rh = B("max", rh, K(1.0));
  }
  // Sample positions in bin units: p + (i + 0.5) / SR.
  auto grid = [&](int64_t P) {
    std::vector<double> g;
    for (int64_t p = 0; p < P; ++p)
      for (int64_t i = 0; i < SR; ++i) g.push_back(static_cast<double>(p) + (i + 0.5) / static_cast<double>(SR));
    return g;
  };
  const int64_t QY = PH * SR, QX = PW * SR;
  Value* gy = Constant(MakeDenseFromDoubles(Type::Tensor(f, {1, QY, 1}), grid(PH)));
  Value* gx = Constant(MakeDenseFromDoubles(Type::Tensor(f, {1, 1, QX}), grid(PW)));
  // y [R, QY, 1], x [R, 1, QX].
  Value* y = B("add", Reshape(sy, {R, 1, 1}), B("mul", gy, Reshape(B("div", rh, K(PH)), {R, 1, 1})));
  Value* xx = B("add", Reshape(sx, {R, 1, 1}), B("mul", gx, Reshape(B("div", rw, K(PW)), {R, 1, 1})));
  Value* valid = B("and", B("and", B("greater_equal", y, K(-1.0)), B("less_equal", y, K(static_cast<double>(H)))),
                   B("and", B("greater_equal", xx, K(-1.0)), B("less_equal", xx, K(static_cast<double>(W)))));
  // Clamp, low/high neighbours and fractions along one axis.
  struct Axis { Value *lo, *hi, *l; };
  auto axis = [&](Value* v, int64_t size) {
    Value* c = B("max", v, K(0.0));
    Value* lo = Emit("tensor.floor", {c}, c->type());
    Value* at_end = B("greater_equal", lo, K(size - 1.0));
    Value* last = K(size - 1.0);
    Axis a;
    a.lo = sel(at_end, last, lo);
    a.hi = sel(at_end, last, B("add", lo, K(1.0)));
    a.l = B("sub", sel(at_end, last, c), a.lo);
    return a;
  };
  Axis ay = axis(y, H), ax = axis(xx, W);
  Value* hy = B("sub", K(1.0), ay.l);
  Value* hx = B("sub", K(1.0), ax.l);
  // Flat index into X [N*C*H*W]: ((b*C + c)*H + yi)*W + xi, i64.
  Value* base = B("mul", Reshape(Cast(bidx, DType::kI64), {R, 1, 1, 1}), I64Const(C * H * W));
  std::vector<double> cs;
  for (int64_t c = 0; c < C; ++c) cs.push_back(static_cast<double>(c * H * W));
  base = B("add", base, Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, {1, C, 1, 1}), cs)));
  Value* xflat = Reshape(x, {N * C * H * W});
  const Shape full = {R, C, QY, QX};
  const int64_t total = R * C * QY * QX;
  Value* zero = K(0.0);
  auto tap = [&](Value* yi, Value* xi, Value* w) -> Value* {
    Value* off2 = B("add", B("mul", Cast(yi, DType::kI64), I64Const(W)), Cast(xi, DType::kI64));  // [R, QY, QX]
    Value* idx = B("add", base, Reshape(off2, {R, 1, QY, QX}));
    if (idx->type().shape != full) idx = Emit("tensor.expand", {idx}, Type::Tensor(DType::kI64, full));
    Value* v = Reshape(GatherElementsOf(xflat, Reshape(idx, {total}), 0), full);
    Value* wm = sel(valid, w, zero);  // [R, QY, QX]
    return B("mul", v, Reshape(wm, {R, 1, QY, QX}));
  };
  Value* t1 = tap(ay.lo, ax.lo, B("mul", hy, hx));
  Value* t2 = tap(ay.lo, ax.hi, B("mul", hy, ax.l));
  Value* t3 = tap(ay.hi, ax.lo, B("mul", ay.l, hx));
  Value* t4 = tap(ay.hi, ax.hi, B("mul", ay.l, ax.l));
  const bool avg = mode == "avg";
  Value* s = avg ? B("add", B("add", t1, t2), B("add", t3, t4)) : B("max", B("max", t1, t2), B("max", t3, t4));
  KILN_RETURN_IF_ERROR(st);
  s = Reshape(s, {R, C, PH, SR, PW, SR});
  Value* yv = Emit("tensor.reduce", {s}, Type::Tensor(f, {R, C, PH, PW}),
                   {{"kind", std::string(avg ? "sum" : "max")}, {"axes", Shape{3, 5}}, {"keepdims", false}});
  if (avg) yv = B("div", yv, K(static_cast<double>(SR * SR)));
  KILN_RETURN_IF_ERROR(st);
  out[0] = yv;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
