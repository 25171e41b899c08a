// ONNX signal ops → tensor-level ops: DFT and STFT as matmuls with constant
// cos/sin matrices, MelWeightMatrix as a constant at import.
//   DFT (opset 17: axis attribute, default 1; opset 20: axis input 2,
//   default -2): x [.., n, 1 (real) | 2 (complex)], the signal axis moved
//   last, truncated or zero-padded to N = dft_length (default n). With
//   theta = 2 pi k j / N, k < K (N, or N/2+1 with onesided):
//     forward  X_k = sum_j x_j e^{-i theta}:  re = xr C + xi S, im = xi C - xr S
//     inverse  x_k = sum_j X_j e^{+i theta} / N
//   where C[j, k] = cos theta, S[j, k] = sin theta (host-computed in double,
//   k j reduced mod N). Output [.., K, 2].
//   STFT: signal [B, L, 1|2], frame_step and frame_length (or the window's
//   length) constants; frame f = signal[f*step, f*step + frame_length) times
//   the window, frames = (L - frame_length) / step + 1; each frame's DFT
//   (onesided default 1). Output [B, frames, K, 2].
//   MelWeightMatrix: the triangular mel filterbank of the ONNX reference
//   (onnx.reference op_mel_weight_matrix): mel(f) = 2595 log10(1 + f/700),
//   num_mel_bins + 2 edges spaced by (mel(hi) - mel(lo)) / (num_mel_bins + 2),
//   bin(f) = floor((dft_length + 1) f / sample_rate); output
//   [dft_length/2 + 1, num_mel_bins]. Its inputs must be constants.
#include <cmath>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

// re/im of the DFT of xr (+ i xi) along the last axis (length L), N points,
// K output bins. xi may be null (real input).
StatusOr<std::pair<Value*, Value*>> Importer::DftLastAxis(Value* xr, Value* xi, int64_t N, int64_t K,
                                                          bool inverse) {
  const DType dt = xr->type().dtype;
  Shape s = xr->type().shape;
  int64_t L = s.back();
  if (L > N) {
    xr = SliceAxis(xr, static_cast<int64_t>(s.size()) - 1, 0, N);
    if (xi) xi = SliceAxis(xi, static_cast<int64_t>(s.size()) - 1, 0, N);
    L = N;
  }
  if (Product({L, K}) > kMaxCreatedElements) return Unimpl("DFT matrix too large");
  const double pi = 3.14159265358979323846;
  std::vector<double> c(static_cast<size_t>(L * K)), sp(c.size()), sm(c.size());
  const double scale = inverse ? 1.0 / static_cast<double>(N) : 1.0;
  for (int64_t j = 0; j < L; ++j)
    for (int64_t k = 0; k < K; ++k) {
      const double th = 2.0 * pi * static_cast<double>((j * k) % N) / static_cast<double>(N);
      const size_t i = static_cast<size_t>(j * K + k);
      c[i] = std::cos(th) * scale;
      // forward: re += xi S, im -= xr S; inverse: re -= xi S, im += xr S.
      sp[i] = (inverse ? -1.0 : 1.0) * std::sin(th) * scale;
      sm[i] = -sp[i];
    }
  const int64_t P = Product(s) / s.back();
  Shape os = s;
  os.back() = K;
  Value* C = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {L, K}), c));
  Value* S1 = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {L, K}), sp));
  Value* S2 = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {L, K}), sm));
  auto mm = [&](Value* x, Value* m) {
    return Emit("tensor.matmul", {Reshape(x, {P, L}), m}, Type::Tensor(dt, {P, K}));
  };
  Value* re = mm(xr, C);
  Value* im = mm(xr, S2);
  if (xi) {
    KILN_ASSIGN_OR_RETURN(re, Binary("tensor.add", re, mm(xi, S1)));
    KILN_ASSIGN_OR_RETURN(im, Binary("tensor.add", mm(xi, C), im));
  }
  return std::make_pair(Reshape(re, os), Reshape(im, os));
}

Status Importer::DFT(const onnx::NodeProto& n, const std::vector<Value*>& in, std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const DType dt = x->type().dtype;
  if (dt != DType::kF32) return Unimpl(std::string("DFT of ") + DTypeName(dt) + " (f32 only)");
  const Shape xs = x->type().shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  if (r < 2 || (xs.back() != 1 && xs.back() != 2))
    return Invalid("input must be [.., n, 1] (real) or [.., n, 2] (complex); got " + ShapeStr(xs));
  int64_t axis = AttrInt("axis", 1);
  if (opset_ >= 20) {
    axis = -2;
    if (in.size() > 2 && in[2]) {
      KILN_ASSIGN_OR_RETURN(double a, ConstScalarValue(in[2], "axis"));
      axis = static_cast<int64_t>(a);
    }
  }
  // The axis counts the signal dims (not the trailing re/im one).
  KILN_ASSIGN_OR_RETURN(axis, NormAxis(axis < 0 ? axis - 1 : axis, r));
  if (axis == r - 1) return Invalid("axis is the re/im dim");
  const bool inverse = AttrInt("inverse", 0) != 0, onesided = AttrInt("onesided", 0) != 0;
  if (inverse && onesided) return Unimpl("onesided inverse DFT is not supported");
  int64_t N = xs[axis];
  if (in.size() > 1 && in[1]) {
    KILN_ASSIGN_OR_RETURN(double d, ConstScalarValue(in[1], "dft_length"));
    N = static_cast<int64_t>(d);
  }
  if (N <= 0 || N > kMaxDim) return Invalid("dft_length must be positive");
  const int64_t K = onesided ? N / 2 + 1 : N;
  // Move the signal axis last: perm = others (without re/im), axis, then re/im split.
  Shape perm;
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != axis) perm.push_back(d);
  perm.push_back(axis);
  perm.push_back(r - 1);
  Value* xt = Transpose(x, perm);
  Shape ts = xt->type().shape;
  Shape ps(ts.begin(), ts.end() - 1);
  Value* xr = Reshape(SliceAxis(xt, r - 1, 0, 1), ps);
  Value* xi = xs.back() == 2 ? Reshape(SliceAxis(xt, r - 1, 1, 1), ps) : nullptr;
  KILN_ASSIGN_OR_RETURN(auto y, DftLastAxis(xr, xi, N, K, inverse));
  Shape es = y.first->type().shape;
  es.push_back(1);
  Value* yc = Emit("tensor.concat", {Reshape(y.first, es), Reshape(y.second, es)},
                   Type::Tensor(dt, [&] { Shape t = es; t.back() = 2; return t; }()), {{"axis", r - 1}});
  // Back: inverse of perm.
  Shape inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  out[0] = Transpose(yc, inv);
  return OkStatus();
}

Status Importer::STFT(const onnx::NodeProto& n, const std::vector<Value*>& in, std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* sig = in[0];
  Value* window = in.size() > 2 ? in[2] : nullptr;
  const DType dt = sig->type().dtype;
  if (dt != DType::kF32) return Unimpl(std::string("STFT of ") + DTypeName(dt) + " (f32 only)");
  const Shape ss = sig->type().shape;
  if (ss.size() != 3 || (ss[2] != 1 && ss[2] != 2))
    return Invalid("signal must be [batch, length, 1 | 2]; got " + ShapeStr(ss));
  KILN_ASSIGN_OR_RETURN(double step_d, ConstScalarValue(in[1], "frame_step"));
  int64_t flen = -1;
  if (in.size() > 3 && in[3]) {
    KILN_ASSIGN_OR_RETURN(double fl, ConstScalarValue(in[3], "frame_length"));
    flen = static_cast<int64_t>(fl);
  }
  if (window) {
    if (window->type().rank() != 1) return Invalid("window must be 1-D");
    if (flen >= 0 && window->type().shape[0] != flen) return Invalid("window length differs from frame_length");
    flen = window->type().shape[0];
  }
  const int64_t step = static_cast<int64_t>(step_d);
  if (flen <= 0 || step <= 0) return Invalid("frame_length (or a window) and a positive frame_step are required");
  if (flen > ss[1]) return Invalid("frame_length exceeds the signal length");
  const int64_t frames = (ss[1] - flen) / step + 1;
  if (frames > kMaxUnrollTrips) return Unimpl("more than " + std::to_string(kMaxUnrollTrips) + " frames");
  const bool onesided = AttrInt("onesided", 1) != 0;
  if (onesided && ss[2] == 2) return Invalid("onesided STFT of a complex signal");
  const int64_t K = onesided ? flen / 2 + 1 : flen;
  std::vector<Value*> fs;
  for (int64_t f = 0; f < frames; ++f) fs.push_back(SliceAxis(sig, 1, f * step, flen));  // [B, flen, c]
  KILN_ASSIGN_OR_RETURN(Value* st, Stack(fs, 1, "STFT frames"));                       // [B, F, flen, c]
  const Shape ps = {ss[0], frames, flen};
  Value* xr = Reshape(SliceAxis(st, 3, 0, 1), ps);
  Value* xi = ss[2] == 2 ? Reshape(SliceAxis(st, 3, 1, 1), ps) : nullptr;
  if (window) {
    KILN_ASSIGN_OR_RETURN(xr, Binary("tensor.mul", xr, window));
    if (xi) { KILN_ASSIGN_OR_RETURN(xi, Binary("tensor.mul", xi, window)); }
  }
  KILN_ASSIGN_OR_RETURN(auto y, DftLastAxis(xr, xi, flen, K, false));
  const Shape es = {ss[0], frames, K, 1};
  out[0] = Emit("tensor.concat", {Reshape(y.first, es), Reshape(y.second, es)},
                Type::Tensor(dt, {ss[0], frames, K, 2}), {{"axis", int64_t{3}}});
  return OkStatus();
}

Status Importer::MelWeightMatrix(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                 std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(5);
  KILN_ASSIGN_OR_RETURN(double bins_d, ConstScalarValue(in[0], "num_mel_bins"));
  KILN_ASSIGN_OR_RETURN(double dft_d, ConstScalarValue(in[1], "dft_length"));
  KILN_ASSIGN_OR_RETURN(double rate_d, ConstScalarValue(in[2], "sample_rate"));
  KILN_ASSIGN_OR_RETURN(double lo, ConstScalarValue(in[3], "lower_edge_hertz"));
  KILN_ASSIGN_OR_RETURN(double hi, ConstScalarValue(in[4], "upper_edge_hertz"));
  const int64_t bins = static_cast<int64_t>(bins_d), dft = static_cast<int64_t>(dft_d),
                rate = static_cast<int64_t>(rate_d);
  if (bins <= 0 || dft <= 0 || rate <= 0 || bins > (1 << 16) || dft > (1 << 24))
    return Invalid("num_mel_bins, dft_length and sample_rate must be positive (and not huge)");
  const DType dt = ConvertDType(static_cast<int32_t>(AttrInt("output_datatype", 1)));
  if (dt == DType::kInvalid) return Unimpl("unsupported output_datatype");
  const int64_t spec = dft / 2 + 1;
  auto mel = [](double f) { return 2595.0 * std::log10(1.0 + f / 700.0); };
  const double lo_mel = mel(lo), step = (mel(hi) - lo_mel) / static_cast<double>(bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700.0 * (std::pow(10.0, (static_cast<double>(i) * step + lo_mel) / 2595.0) - 1.0);
    edge[i] = static_cast<int64_t>(std::floor(static_cast<double>(dft + 1) * hz / static_cast<double>(rate)));
  }
  std::vector<double> w(static_cast<size_t>(spec * bins), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) -> Status {
    if (j < 0 || j >= spec) return Invalid("a mel band edge falls outside the spectrogram bins");
    w[static_cast<size_t>(j * bins + i)] = v;
    return OkStatus();
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t l = edge[i], c = edge[i + 1], h = edge[i + 2];
    if (c == l) {
      KILN_RETURN_IF_ERROR(set(c, i, 1.0));
    } else {
      for (int64_t j = l; j <= c; ++j)
        KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(j - l) / static_cast<double>(c - l)));
    }
    if (h > c)
      for (int64_t j = c; j < h; ++j)
        KILN_RETURN_IF_ERROR(set(j, i, static_cast<double>(h - j) / static_cast<double>(h - c)));
  }
  out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {spec, bins}), w));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
