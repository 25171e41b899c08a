// Per-axis sampling taps of ONNX Resize (resize_taps.h).
#include "compiler/import/onnx/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/import/onnx/const_eval.h"

namespace kiln::onnx_import {

bool ParseResizeMode(const std::string& s, ResizeMode* out) {
  if (s == "nearest") *out = ResizeMode::kNearest;
  else if (s == "linear" || s == "bilinear") *out = ResizeMode::kLinear;
  else if (s == "cubic") *out = ResizeMode::kCubic;
  else return false;
  return true;
}

bool ParseResizeCoordMode(const std::string& s, ResizeCoordMode* out) {
  if (s == "half_pixel") *out = ResizeCoordMode::kHalfPixel;
  else if (s == "half_pixel_symmetric") *out = ResizeCoordMode::kHalfPixelSymmetric;
  else if (s == "pytorch_half_pixel") *out = ResizeCoordMode::kPytorchHalfPixel;
  else if (s == "align_corners") *out = ResizeCoordMode::kAlignCorners;
  else if (s == "asymmetric") *out = ResizeCoordMode::kAsymmetric;
  else if (s == "tf_half_pixel_for_nn") *out = ResizeCoordMode::kTfHalfPixelForNearest;
  else if (s == "tf_crop_and_resize") *out = ResizeCoordMode::kTfCropAndResize;
  else return false;
  return true;
}

bool ParseResizeNearestMode(const std::string& s, ResizeNearestMode* out) {
  if (s == "round_prefer_floor") *out = ResizeNearestMode::kRoundPreferFloor;
  else if (s == "round_prefer_ceil") *out = ResizeNearestMode::kRoundPreferCeil;
  else if (s == "floor") *out = ResizeNearestMode::kFloor;
  else if (s == "ceil") *out = ResizeNearestMode::kCeil;
  else return false;
  return true;
}

float ResizeSourceCoordinate(const ResizeAxisSpec& s, int64_t xi) {
  // Every operand is an f32, as in ONNX Runtime's GetOriginalCoordinate
  // lambdas; `volatile` keeps each step rounded to f32 in this order.
  const float x = static_cast<float>(xi);
  const float scale = s.scale;
  const float len_out = s.length_resized;
  const float len_in = static_cast<float>(s.in_len);
  switch (s.coord) {
    case ResizeCoordMode::kAsymmetric:
      return x / scale;
    case ResizeCoordMode::kPytorchHalfPixel:
      return len_out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case ResizeCoordMode::kTfHalfPixelForNearest:
      return (x + 0.5f) / scale;
    case ResizeCoordMode::kAlignCorners:
      return len_out == 1 ? 0.0f : x * (len_in - 1) / (len_out - 1);
    case ResizeCoordMode::kTfCropAndResize: {
      if (len_out > 1) {
        volatile float a = s.roi_start * (len_in - 1);
        volatile float b = x * (s.roi_end - s.roi_start) * (len_in - 1);
        volatile float c = b / (len_out - 1);
        return a + c;
      }
      // 0.5 is a double: this branch runs in f64 and is then rounded.
      return static_cast<float>(0.5 * (s.roi_start + s.roi_end) * (len_in - 1));
    }
    case ResizeCoordMode::kHalfPixelSymmetric: {
      volatile float output_width = scale * len_in;
      volatile float adjustment = static_cast<float>(s.out_len) / output_width;
      volatile float center = len_in / 2;
      volatile float offset = center * (1 - adjustment);
      // (x + 0.5) is a double here: the rest runs in f64, then is rounded.
      return static_cast<float>(offset + (x + 0.5) / scale - 0.5);
    }
    case ResizeCoordMode::kHalfPixel:
    default:
      return ((x + 0.5f) / scale) - 0.5f;
  }
}

namespace {

int64_t NearestIndex(ResizeNearestMode m, float x, bool downsample) {
  switch (m) {
    case ResizeNearestMode::kSimple:
      return downsample ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case ResizeNearestMode::kRoundPreferCeil:
      return static_cast<int64_t>(std::round(x));
    case ResizeNearestMode::kFloor:
      return static_cast<int64_t>(std::floor(x));
    case ResizeNearestMode::kCeil:
      return static_cast<int64_t>(std::ceil(x));
    case ResizeNearestMode::kRoundPreferFloor:
    default:
      if (x == static_cast<float>(static_cast<int64_t>(x)) + 0.5f)
        return static_cast<int64_t>(std::floor(x));
      return static_cast<int64_t>(std::round(x));
  }
}

// ONNX Runtime's GetCubicCoeffs (f32).
void CubicCoeffs(float s, float a, float c[4]) {
  float t = std::abs(s);
  c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); }

// Antialiased linear / cubic taps of output coordinate with source `x`
// (onnx/reference/ops/op_resize.py, f64): the filter is stretched by 1/scale;
// the n nearest input coordinates of x (preferring smaller ones) inside the
// input padded by ceil(n/2) edge copies.
void AntialiasTaps(const ResizeAxisSpec& s, double x, int64_t n, int32_t* index, float* weight) {
  double scale = std::min<double>(s.scale, 1.0);
  double a = s.cubic_coeff_a;
  int64_t start = 1 - n / 2;  // first tap relative to base
  double xc = std::ceil(x);
  int64_t base = static_cast<int64_t>(xc) - 1;  // ratio in (0, 1]
  double ratio = x - static_cast<double>(base);
  int64_t pad = (n + 1) / 2;
  int64_t first = base + start;
  first = std::max(first, -pad);
  first = std::min(first, s.in_len + pad - n);
  std::vector<double> c(n);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double t = scale * (static_cast<double>(start + i) - ratio);
    double v;
    if (s.mode == ResizeMode::kLinear) {
      v = std::min(std::max(1 - std::abs(t), 0.0), 1.0);
    } else {
      double u = std::abs(t), u2 = u * u, u3 = u * u2;
      v = u <= 1 ? (a + 2) * u3 - (a + 3) * u2 + 1
                 : u < 2 ? a * u3 - 5 * a * u2 + 8 * a * u - 4 * a : 0.0;
    }
    c[i] = v;
    sum += v;
  }
  for (int64_t i = 0; i < n; ++i) c[i] /= sum;
  if (s.exclude_outside) {
    double kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      int64_t idx = first + i;
      if (idx < 0 || idx >= s.in_len) c[i] = 0;
      kept += c[i];
    }
    if (kept != 0)
      for (int64_t i = 0; i < n; ++i) c[i] /= kept;
  }
  for (int64_t i = 0; i < n; ++i) {
    index[i] = static_cast<int32_t>(Clamp(first + i, 0, s.in_len - 1));
    weight[i] = static_cast<float>(c[i]);
  }
}

// Merges equal indices of each row and drops zero weights; when every row
// then has one tap of weight 1, rewrites `t` as a gather (taps == 1), and a
// gather of x[o] with in_len == out_len as the copy (taps == 0).
void Simplify(const ResizeAxisSpec& s, ResizeAxisTaps* t) {
  std::vector<int32_t> gather(s.out_len);
  for (int64_t o = 0; o < s.out_len; ++o) {
    const int32_t* idx = &t->index[o * t->taps];
    const float* w = &t->weight[o * t->taps];
    if (idx[0] < 0) {  // extrapolated row
      gather[o] = -1;
      continue;
    }
    int32_t only = -1;
    float total = 0;
    for (int64_t k = 0; k < t->taps; ++k) {
      if (w[k] == 0.0f) continue;
      if (only >= 0 && idx[k] != only) return;  // two distinct taps
      only = idx[k];
      total += w[k];
    }
    if (only < 0 || total != 1.0f) return;
    gather[o] = only;
  }
  t->taps = 1;
  t->index = std::move(gather);
  t->weight.assign(s.out_len, 1.0f);
  t->unit_weights = true;
  if (s.in_len != s.out_len) return;
  for (int64_t o = 0; o < s.out_len; ++o)
    if (t->index[o] != o) return;
  t->taps = 0;
  t->index.clear();
  t->weight.clear();
}

}  // namespace

ResizeAxisTaps ComputeResizeAxisTaps(const ResizeAxisSpec& s) {
  ResizeAxisTaps t;
  const int64_t in = s.in_len;
  const bool crop = s.coord == ResizeCoordMode::kTfCropAndResize;
  if (s.scale == 1.0f && s.in_len == s.out_len &&
      !(crop && (s.roi_start != 0.0f || s.roi_end != 1.0f)))
    return t;  // copied
  const bool aa = s.antialias && s.mode != ResizeMode::kNearest && s.scale < 1.0f;
  if (s.mode == ResizeMode::kNearest) {
    t.taps = 1;
  } else if (aa) {
    // onnx/reference: footprint of the stretched filter.
    double scale = s.scale;
    int64_t start = s.mode == ResizeMode::kLinear
                        ? static_cast<int64_t>(std::floor(-1 / scale) + 1)
                        : static_cast<int64_t>(std::floor(-2 / scale) + 1);
    t.taps = 2 - 2 * start;
  } else {
    t.taps = s.mode == ResizeMode::kLinear ? 2 : 4;
  }
  t.index.assign(s.out_len * t.taps, 0);
  t.weight.assign(s.out_len * t.taps, 0.0f);
  t.unit_weights = false;
  for (int64_t o = 0; o < s.out_len; ++o) {
    int32_t* idx = &t.index[o * t.taps];
    float* w = &t.weight[o * t.taps];
    float x = ResizeSourceCoordinate(s, o);
    if (crop && (x < 0 || x > static_cast<float>(in - 1))) {
      for (int64_t k = 0; k < t.taps; ++k) idx[k] = -1, w[k] = 0.0f;
      continue;
    }
    if (s.mode == ResizeMode::kNearest) {
      int64_t i = NearestIndex(s.nearest, x, s.scale < 1.0f);
      idx[0] = static_cast<int32_t>(Clamp(i, 0, in - 1));
      w[0] = 1.0f;
    } else if (aa) {
      AntialiasTaps(s, x, t.taps, idx, w);
    } else if (s.mode == ResizeMode::kLinear) {
      // ONNX Runtime's bilinear setup: clamp, then the two neighbours.
      float xc = std::max(0.0f, std::min(x, static_cast<float>(in - 1)));
      int64_t x1 = std::min(static_cast<int64_t>(xc), in - 1);
      int64_t x2 = std::min(x1 + 1, in - 1);
      float d1 = std::fabs(xc - static_cast<float>(x1));
      float d2 = std::fabs(xc - static_cast<float>(x2));
      if (x1 == x2) d1 = d2 = 0.5f;
      idx[0] = static_cast<int32_t>(x1), w[0] = d2;
      idx[1] = static_cast<int32_t>(x2), w[1] = d1;
    } else {
      // ONNX Runtime's bicubic: 4 taps around floor(x), edge-clamped;
      // exclude_outside zeroes the outside ones and renormalizes.
      float xf = std::floor(x);
      int64_t xi = static_cast<int64_t>(xf);
      float c[4];
      CubicCoeffs(x - xf, s.cubic_coeff_a, c);
      if (s.exclude_outside) {
        float sum = 0;
        for (int k = 0; k < 4; ++k) {
          int64_t p = xi - 1 + k;
          if (p < 0 || p >= in) c[k] = 0;
          sum += c[k];
        }
        for (int k = 0; k < 4; ++k) c[k] = sum != 0 ? c[k] / sum : 0.0f;
      }
      for (int k = 0; k < 4; ++k) {
        idx[k] = static_cast<int32_t>(Clamp(xi - 1 + k, 0, in - 1));
        w[k] = c[k];
      }
    }
  }
  Simplify(s, &t);
  return t;
}

bool EvaluateResize(const ir::DenseElements& x, const ir::DenseElements& index,
                    const ir::DenseElements* weight, const ir::Type& result_type,
                    const std::vector<int64_t>& taps, double extrapolation_value,
                    ir::DenseElements* out) {
  const std::vector<int64_t>& xs = x.type.shape;
  const std::vector<int64_t>& ys = result_type.shape;
  size_t r = xs.size();
  if (ys.size() != r || taps.size() != r || index.type.dtype != DType::kI32) return false;
  if (weight && (weight->type.dtype != DType::kF32 ||
                 weight->type.num_elements() != index.type.num_elements()))
    return false;
  std::vector<int64_t> offset(r, 0);
  int64_t total = 0;
  for (size_t d = 0; d < r; ++d) {
    if (taps[d] < 0 || (taps[d] == 0 && xs[d] != ys[d])) return false;
    offset[d] = total;
    total += taps[d] * ys[d];
  }
  if (total != index.type.num_elements()) return false;
  std::vector<int64_t> xstride(r, 1);
  for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d) xstride[d] = xstride[d + 1] * xs[d + 1];
  int64_t n = result_type.num_elements();
  std::vector<double> values(n);
  std::vector<int64_t> o(r, 0);
  for (int64_t e = 0; e < n; ++e) {
    // Decompose e into o.
    int64_t rem = e;
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      o[d] = rem % ys[d];
      rem /= ys[d];
    }
    bool extrapolate = false;
    for (size_t d = 0; d < r; ++d)
      if (taps[d] > 0 && index.GetInt(offset[d] + o[d] * taps[d]) < 0) extrapolate = true;
    if (extrapolate) {
      values[e] = extrapolation_value;
      continue;
    }
    // Every combination of taps (odometer over the axes).
    std::vector<int64_t> k(r, 0);
    double acc = 0;
    while (true) {
      double w = 1;
      int64_t src = 0;
      for (size_t d = 0; d < r; ++d) {
        if (taps[d] == 0) {
          src += o[d] * xstride[d];
          continue;
        }
        int64_t at = offset[d] + o[d] * taps[d] + k[d];
        int64_t i = index.GetInt(at);
        if (i < 0 || i >= xs[d]) return false;
        src += i * xstride[d];
        if (weight) w *= weight->GetDouble(at);
      }
      acc += w * x.GetDouble(src);
      size_t d = 0;
      for (; d < r; ++d) {
        if (taps[d] == 0) continue;
        if (++k[d] < taps[d]) break;
        k[d] = 0;
      }
      if (d == r) break;
    }
    values[e] = acc;
  }
  *out = MakeDenseFromDoubles(result_type, values);
  return true;
}

}  // namespace kiln::onnx_import
