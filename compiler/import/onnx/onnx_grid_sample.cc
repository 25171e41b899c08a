// ONNX GridSample (2-D: X [N, C, H, W], grid [N, Ho, Wo, 2] of (x, y) in
// [-1, 1]) → tensor-level elementwise ops and tensor.gather_elements. The
// sampling follows PyTorch's grid_sampler_2d, which ONNX's definition and
// ONNX Runtime follow:
//   unnormalize: align_corners ? (g + 1) / 2 * (size - 1) : ((g + 1) * size - 1) / 2
//   bilinear / nearest: the coordinate is padded first: border clamps it to
//     [0, size - 1]; reflection reflects it about [0, size - 1]
//     (align_corners) or [-0.5, size - 0.5], then clamps.
//     bilinear: the 4 neighbours of (floor x, floor y), weights from the
//     fractions; nearest: the pixel at round-half-even (x, y).
//   bicubic: 4x4 taps around floor, cubic convolution weights (A = -0.75);
//     each tap index is padded (border: clamped; reflection: reflected).
//   A tap outside the image reads 0 (the zeros mode; under border and
//   reflection the padded taps are inside).
// Each tap is a gather of X viewed as [N, C, H*W] at y*W + x (clamped
// in-range indices, the out-of-range taps masked to weight 0).
#include <cmath>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::GridSample(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* grid = in[1];
  const Shape xs = x->type().shape, gs = grid->type().shape;
  if (xs.size() != 4)
    return Unimpl("GridSample with " + std::to_string(static_cast<int64_t>(xs.size()) - 2) +
                  " spatial dims (2 are supported)");
  if (gs.size() != 4 || gs[0] != xs[0] || gs[3] != 2)
    return Invalid("grid must be [N, Ho, Wo, 2]; got " + ShapeStr(gs));
  if (x->type().dtype != DType::kF32 || grid->type().dtype != DType::kF32)
    return Unimpl("GridSample on non-f32 tensors");
  std::string mode = AttrStr("mode", opset_ >= 20 ? "linear" : "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    return Unimpl("mode '" + mode + "' is not supported");
  const std::string pad = AttrStr("padding_mode", "zeros");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return Unimpl("padding_mode '" + pad + "' is not supported");
  const bool align = AttrInt("align_corners", 0) != 0;
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], P = gs[1] * gs[2];
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
  auto U = [&](const char* op, Value* a) { return Emit(std::string("tensor.") + op, {a}, a->type()); };
  auto K = [&](double v) { return ScalarConst(f, v); };
  auto clampc = [&](Value* v, double lo, double hi) {
    return Emit("tensor.clamp", {v}, v->type(), {{"min", lo}, {"max", hi}});
  };
  // PyTorch's reflect_coordinates(v, twice_low, twice_high).
  auto reflect = [&](Value* v, int64_t twice_low, int64_t twice_high) -> Value* {
    if (twice_low == twice_high) return B("mul", v, K(0.0));
    const double mn = twice_low / 2.0, span = (twice_high - twice_low) / 2.0;
    Value* a = U("abs", B("sub", v, K(mn)));
    Value* flips = U("floor", B("div", a, K(span)));
    Value* extra = B("sub", a, B("mul", flips, K(span)));  // fmod(a, span), a >= 0
    Value* half = U("floor", B("div", flips, K(2.0)));
    Value* odd = B("greater", B("sub", flips, B("mul", half, K(2.0))), K(0.5));
    Value* even_v = B("add", extra, K(mn));
    Value* odd_v = B("add", B("sub", K(span), extra), K(mn));
    return Emit("tensor.select", {odd, odd_v, even_v}, even_v->type());
  };
  auto pad_coord = [&](Value* v, int64_t size) -> Value* {
    if (pad == "border") return clampc(v, 0.0, static_cast<double>(size - 1));
    if (pad == "reflection") {
      Value* r = align ? reflect(v, 0, 2 * (size - 1)) : reflect(v, -1, 2 * size - 1);
      return clampc(r, 0.0, static_cast<double>(size - 1));
    }
    return v;
  };
  Value* g = Reshape(grid, {N, P, 2});
  auto unnorm = [&](int64_t comp, int64_t size) -> Value* {
    Value* v = Reshape(SliceAxis(g, 2, comp, 1), {N, P});
    if (align) return B("mul", B("add", v, K(1.0)), K((size - 1) / 2.0));
    return B("div", B("sub", B("mul", B("add", v, K(1.0)), K(static_cast<double>(size))), K(1.0)), K(2.0));
  };
  Value* ix = unnorm(0, W);
  Value* iy = unnorm(1, H);
  Value* xf = Reshape(x, {N, C, H * W});
  // One tap: X at integer-valued coordinates (tx, ty) [N, P] times weight w.
  auto tap = [&](Value* tx, Value* ty, Value* w) -> Value* {
    Value* valid = B("and", B("and", B("greater_equal", tx, K(0.0)), B("less_equal", tx, K(W - 1.0))),
                     B("and", B("greater_equal", ty, K(0.0)), B("less_equal", ty, K(H - 1.0))));
    Value* flat = B("add", B("mul", clampc(ty, 0.0, H - 1.0), K(static_cast<double>(W))), clampc(tx, 0.0, W - 1.0));
    Value* idx = Emit("tensor.expand", {Reshape(Cast(flat, DType::kI64), {N, 1, P})},
                      Type::Tensor(DType::kI64, {N, C, P}));
    Value* v = GatherElementsOf(xf, idx, 2);
    Value* wm = Emit("tensor.select", {valid, w, K(0.0)}, w->type());
    return B("mul", v, Reshape(wm, {N, 1, P}));
  };
  Value* y = nullptr;
  auto acc = [&](Value* t) { y = y ? B("add", y, t) : t; };
  if (mode == "nearest") {
    acc(tap(U("round", pad_coord(ix, W)), U("round", pad_coord(iy, H)), B("add", B("mul", ix, K(0.0)), K(1.0))));
  } else if (mode == "bilinear") {
    Value* px = pad_coord(ix, W);
    Value* py = pad_coord(iy, H);
    Value* x0 = U("floor", px);
    Value* y0 = U("floor", py);
    Value* fx = B("sub", px, x0);
    Value* fy = B("sub", py, y0);
    Value* gx = B("sub", K(1.0), fx);
    Value* gy = B("sub", K(1.0), fy);
    Value* x1 = B("add", x0, K(1.0));
    Value* y1 = B("add", y0, K(1.0));
    acc(tap(x0, y0, B("mul", gx, gy)));
    acc(tap(x1, y0, B("mul", fx, gy)));
    acc(tap(x0, y1, B("mul", gx, fy)));
    acc(tap(x1, y1, B("mul", fx, fy)));
  } else {
    const double A = -0.75;
    // cubic convolution weights of the 4 taps at offsets -1..2 from floor.
    auto cc1 = [&](Value* t) {  // ((A + 2) t - (A + 3)) t t + 1
      return B("add", B("mul", B("mul", B("sub", B("mul", t, K(A + 2)), K(A + 3)), t), t), K(1.0));
    };
    auto cc2 = [&](Value* t) {  // ((A t - 5A) t + 8A) t - 4A
      return B("sub", B("mul", B("add", B("mul", B("sub", B("mul", t, K(A)), K(5 * A)), t), K(8 * A)), t), K(4 * A));
    };
    auto weights = [&](Value* t) {
      return std::vector<Value*>{cc2(B("add", t, K(1.0))), cc1(t), cc1(B("sub", K(1.0), t)),
                                 cc2(B("sub", K(2.0), t))};
    };
    Value* x0 = U("floor", ix);
    Value* y0 = U("floor", iy);
    std::vector<Value*> wx = weights(B("sub", ix, x0)), wy = weights(B("sub", iy, y0));
    auto pad_index = [&](Value* v, int64_t size) -> Value* {
      return pad == "zeros" ? v : pad_coord(v, size);
    };
    for (int dy = 0; dy < 4; ++dy)
      for (int dx = 0; dx < 4; ++dx) {
        Value* tx = pad_index(B("add", x0, K(dx - 1.0)), W);
        Value* ty = pad_index(B("add", y0, K(dy - 1.0)), H);
        acc(tap(tx, ty, B("mul", wx[dx], wy[dy])));
      }
  }
  KILN_RETURN_IF_ERROR(st);
  out[0] = Reshape(y, {N, C, gs[1], gs[2]});
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
