// QDQ convolutions computed as the integer convolution they stand for.
//
// A QDQ model writes a quantized convolution as
//   y_q = QuantizeLinear(Conv(DQ(x_q), DQ(w_q), DQ(b_i32)), s_y, zp_y)
// and ONNX Runtime runs it as QLinearConv: an exact i32 accumulation
// acc = sum (x_q - zp_x) * (w_q - zp_w) + b_i32, then one f32 multiply by
// M[o] = (s_x * s_w[o]) / s_y (each step rounded to f32, in that order),
// round half to even, + zp_y, saturate. Convolving the dequantized f32 values
// instead rounds every term, and a sum that lands near a .5 boundary of y / s_y
// rounds the other way: one step off, which grows through later layers (three
// steps at the embedding model's output on audio outside its calibration set).
//
// So when Conv's operands are DequantizeLinear results (x per tensor, u8/i8;
// w an 8-bit constant, per tensor or per output channel; the bias, if any, an
// i32 constant whose scale is s_x * s_w[o]) and the integer sum cannot reach
// 2^24 (max over o of sum|w_q - zp_w| * max|x_q - zp_x| + max|b|: then every
// partial sum is an integer that f32 holds exactly, in any order), the conv
// runs on the zero-point-shifted integers held in f32, exactly. Its
// dequantized result acc * (s_x * s_w[o]) is what other readers see, and a
// QuantizeLinear of it (per tensor) requantizes acc * M[o] directly, as ONNX
// Runtime does. Anything else keeps the f32 path (DequantizeLinear's
// elementwise composition, onnx_quantize.cc).
#include <cmath>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {
namespace {

// The values of a constant (nullptr: all zero), or false when not constant.
bool ConstValues(Value* v, std::vector<double>* out) {
  out->clear();
  if (!v) return true;
  const DenseElements* d = GetConst(v);
  if (!d) return false;
  for (int64_t i = 0; i < Product(d->type.shape); ++i) out->push_back(ReadElementAsDouble(*d, i));
  return true;
}

// A per-tensor (1 value) or per-output-channel (O values along axis 0)
// parameter; false otherwise.
bool PerChannel(Value* p, int64_t O, std::vector<double>* out) {
  if (!ConstValues(p, out)) return false;
  if (!p) return true;
  const Shape& s = p->type().shape;
  if (out->size() == 1) return true;
  if (static_cast<int64_t>(out->size()) != O || s.empty() || s[0] != O) return false;
  return true;
}

double At(const std::vector<double>& v, int64_t i) { return v.empty() ? 0.0 : v.size() == 1 ? v[0] : v[i]; }

}  // namespace

StatusOr<bool> Importer::ExactQdqConvOperands(Value** x, Value** w, Value** b, std::vector<float>* sxsw) {
  auto dx = dq_info_.find(*x), dw = dq_info_.find(*w);
  if (dx == dq_info_.end() || dw == dq_info_.end()) return false;
  const DType xt = dx->second.q->type().dtype, wt = dw->second.q->type().dtype;
  if ((xt != DType::kU8 && xt != DType::kI8) || (wt != DType::kU8 && wt != DType::kI8)) return false;
  const DenseElements* wq = GetConst(dw->second.q);
  if (!wq) return false;
  const Shape& ws = dw->second.q->type().shape;
  const int64_t O = ws[0], per_o = Product(ws) / std::max<int64_t>(O, 1);
  std::vector<double> sx, zpx, sw, zpw;
  if (!ConstValues(dx->second.scale, &sx) || sx.size() != 1 || !ConstValues(dx->second.zp, &zpx) || zpx.size() > 1)
    return false;
  if (!PerChannel(dw->second.scale, O, &sw) || !PerChannel(dw->second.zp, O, &zpw)) return false;
  // s_x * s_w[o] in f32, as ONNX Runtime's QLinearConv forms it.
  sxsw->assign(static_cast<size_t>(O), 0.0f);
  for (int64_t o = 0; o < O; ++o) (*sxsw)[o] = static_cast<float>(sx[0]) * static_cast<float>(At(sw, o));
  std::vector<double> bq;
  if (*b) {
    auto db = dq_info_.find(*b);
    if (db == dq_info_.end() || db->second.q->type().dtype != DType::kI32) return false;
    std::vector<double> sb, zpb;
    if (!ConstValues(db->second.q, &bq) || static_cast<int64_t>(bq.size()) != O) return false;
    if (!PerChannel(db->second.scale, O, &sb) || !ConstValues(db->second.zp, &zpb)) return false;
    for (double z : zpb)
      if (z != 0) return false;
    for (int64_t o = 0; o < O; ++o)
      if (static_cast<float>(At(sb, o)) != (*sxsw)[o]) return false;  // not the QLinearConv bias
  }
  // Exactness bound: |every partial sum| < 2^24.
  const double zx = zpx.empty() ? 0.0 : zpx[0];
  const double xmax = xt == DType::kU8 ? std::max(zx, 255.0 - zx) : std::max(zx + 128.0, 127.0 - zx);
  double worst = 0;
  for (int64_t o = 0; o < O; ++o) {
    double s = 0;
    for (int64_t k = 0; k < per_o; ++k) s += std::fabs(ReadElementAsDouble(*wq, o * per_o + k) - At(zpw, o));
    worst = std::max(worst, s * xmax + (bq.empty() ? 0.0 : std::fabs(bq[o])));
  }
  if (!(worst < 16777216.0)) return false;

  // x - zp_x and w - zp_w as f32 integers; the weight stays 8-bit in the
  // module (its cast fuses into the conv as a prologue).
  Value* xi = Cast(dx->second.q, DType::kF32);
  if (dx->second.zp) { KILN_ASSIGN_OR_RETURN(xi, Binary("tensor.sub", xi, dx->second.zp)); }
  const bool saved_fold = fold_;
  fold_ = Product(ws) < kMinInt8WeightElements;
  Value* wi = Cast(dw->second.q, DType::kF32);
  StatusOr<Value*> wr = dw->second.zp ? Binary("tensor.sub", wi, dw->second.zp) : StatusOr<Value*>(wi);
  fold_ = saved_fold;
  KILN_ASSIGN_OR_RETURN(wi, std::move(wr));
  *x = xi;
  *w = wi;
  if (*b) {
    std::vector<float> bf(bq.begin(), bq.end());
    *b = Constant(ir::MakeDenseF32({O}, bf));
  }
  return true;
}

// acc * v[o] along axis 1 of acc (v as an f32 constant [1, O, 1, ...]).
StatusOr<Value*> Importer::ScaleChannels(Value* acc, const std::vector<float>& v) {
  Shape s(acc->type().shape.size(), 1);
  s[1] = static_cast<int64_t>(v.size());
  return Binary("tensor.mul", acc, Constant(ir::MakeDenseF32(s, v)));
}

StatusOr<Value*> Importer::QdqConvRequantize(const QdqConv& c, Value* y_scale, Value* y_zp, DType dt) {
  std::vector<double> sy;
  if (!ConstValues(y_scale, &sy) || sy.size() != 1) return static_cast<Value*>(nullptr);
  if (y_zp && Product(y_zp->type().shape) != 1) return static_cast<Value*>(nullptr);
  std::vector<float> m(c.sxsw.size());
  for (size_t o = 0; o < m.size(); ++o) m[o] = c.sxsw[o] / static_cast<float>(sy[0]);
  KILN_ASSIGN_OR_RETURN(Value* v, ScaleChannels(c.acc, m));
  if (y_zp) y_zp = Reshape(y_zp, {});
  return Requantize(v, y_zp, dt);
}

}  // namespace kiln::onnx_import::detail
