// Test helpers shared by codegen_test.cc and codegen_vulkan_test.cc:
//   DispatchBuilder  builds a func.func holding one flow.dispatch whose region
//                    the test fills with tensor-level ops.
//   Ref*             naive row-major C++ reference implementations (float).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_TEST_UTIL_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::codegen::testing {

using Shape = std::vector<int64_t>;

inline ir::Type F32(Shape s) { return ir::Type::Tensor(DType::kF32, std::move(s)); }
inline ir::Type I64(Shape s) { return ir::Type::Tensor(DType::kI64, std::move(s)); }
inline ir::Type I32(Shape s) { return ir::Type::Tensor(DType::kI32, std::move(s)); }
inline ir::Type Bool(Shape s) { return ir::Type::Tensor(DType::kBool, std::move(s)); }
inline ir::Type U8(Shape s) { return ir::Type::Tensor(DType::kU8, std::move(s)); }

// Owns a module: func.func @f(inputs...) { flow.dispatch(inputs) ({...}) }.
class DispatchBuilder {
 public:
  DispatchBuilder(const std::vector<ir::Type>& inputs, const std::vector<ir::Type>& results,
                  const std::string& name = "dispatch_test") {
    func_ = ir::Builder::AtEnd(module_.body())
                .Create("func.func", {}, {}, {{"sym_name", ir::Attribute("f")}}, 1);
    ir::Block* fb = func_->region(0)->AddBlock();
    std::vector<ir::Value*> fargs;
    for (const auto& t : inputs) fargs.push_back(fb->AddArgument(t));
    dispatch_ = ir::Builder::AtEnd(fb).Create("flow.dispatch", fargs, results,
                                              {{"name", ir::Attribute(name)}}, 1);
    body_ = dispatch_->region(0)->AddBlock();
    for (const auto& t : inputs) body_->AddArgument(t);
  }
  ir::Value* arg(unsigned i) { return body_->argument(i); }
  ir::Value* Op(const std::string& name, const std::vector<ir::Value*>& operands, ir::Type type,
                std::map<std::string, ir::Attribute> attrs = {}, const std::string& loc = "") {
    ir::Builder b = ir::Builder::AtEnd(body_);
    b.set_loc(loc.empty() ? name.substr(name.find('.') + 1) + "_" + std::to_string(n_++) : loc);
    return b.Create(name, operands, {std::move(type)}, std::move(attrs))->result();
  }
  ir::Operation* Return(const std::vector<ir::Value*>& values) {
    ir::Builder::AtEnd(body_).Create("flow.return", values, {});
    return dispatch_;
  }
  ir::Operation* dispatch() { return dispatch_; }

 private:
  ir::Module module_;
  ir::Operation* func_ = nullptr;
  ir::Operation* dispatch_ = nullptr;
  ir::Block* body_ = nullptr;
  int n_ = 0;
};

inline ir::Attribute Ints(std::vector<int64_t> v) { return ir::Attribute(std::move(v)); }

// ---------------------------------------------------------------------------
// Reference tensors.
// ---------------------------------------------------------------------------
struct T {
  Shape shape;
  std::vector<double> v;
  int64_t size() const { return static_cast<int64_t>(v.size()); }
};

inline int64_t Numel(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
inline Shape StridesOf(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}
inline Shape Unflatten(int64_t f, const Shape& s) {
  Shape idx(s.size());
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
    idx[d] = s[d] ? f % s[d] : 0;
    f = s[d] ? f / s[d] : 0;
  }
  return idx;
}
inline int64_t Flatten(const Shape& idx, const Shape& s) {
  int64_t f = 0;
  for (size_t d = 0; d < s.size(); ++d) f = f * s[d] + idx[d];
  return f;
}

// Deterministic values in [lo, hi).
// Fills rows [0, 2 * half) of a (M x 2) and row 1 of bm (2 x 2, row 0 all
// ones) with multiply-add cases (alpha, beta, c), as row i = (c, alpha) and
// column j of row 1 = beta, whose exact result lies at or next to a midpoint
// between two floats (codegen_test_cases.h matmul_exact_fma_midpoints).
// Rows [0, half): beta0 has 24 significant bits, c is the f32 nearest to
// the difference between a midpoint m and alpha * beta0, m next to alpha *
// beta0 + c0 for a c0 2^-30..2^-49 below it. Rows [half, 2 * half):
// alpha and beta1 have 12 and 13 significant bits, both odd, so the product
// is a midpoint whenever it needs 25 bits; c is 2^-60 or less.
inline void MidpointFmaCases(int64_t half, T* a, T* bm) {
  uint32_t x = 2463534242u;
  auto next = [&x] {  // xorshift32
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  auto unit = [&] { return static_cast<float>(static_cast<int32_t>(next()) * 0x1p-31); };
  auto bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; };
  auto from = [](uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; };
  const float beta0 = 0.7853982f, beta1 = from((bits(0.8164966f) & ~0xfffu) | 0x800u);
  bm->v[2] = beta0;
  bm->v[3] = beta1;
  a->v.assign(static_cast<size_t>(4 * half), 0.0);
  for (int64_t i = 0; i < half; ++i) {
    float alpha = unit();
    double xy = static_cast<double>(alpha) * beta0;
    double c0 = std::ldexp(static_cast<double>(unit()), -30 - static_cast<int>(next() % 20)) * xy;
    float r = static_cast<float>(xy + c0);
    float side = (next() & 1) ? std::nextafter(r, INFINITY) : std::nextafter(r, -INFINITY);
    double mid = 0.5 * (static_cast<double>(r) + side);
    a->v[2 * i] = static_cast<float>(mid - xy);
    a->v[2 * i + 1] = alpha;
    a->v[2 * (half + i)] = std::ldexp(static_cast<double>(unit()), -60);
    a->v[2 * (half + i) + 1] = from((bits(unit()) & ~0x1fffu) | 0x1000u);
  }
}

inline T Random(Shape s, uint32_t seed, double lo = -2, double hi = 2) {
  T t{s, {}};
  uint32_t x = seed * 2654435761u + 12345u;
  for (int64_t i = 0; i < Numel(s); ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    t.v.push_back(static_cast<float>(lo + (hi - lo) * ((x >> 8) / 16777216.0)));
  }
  return t;
}

inline Shape BroadcastShape(const Shape& a, const Shape& b) {
  Shape r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    int64_t da = i < r.size() - a.size() ? 1 : a[i - (r.size() - a.size())];
    int64_t db = i < r.size() - b.size() ? 1 : b[i - (r.size() - b.size())];
    r[i] = std::max(da, db);
  }
  return r;
}
inline double At(const T& t, const Shape& out_idx) {  // broadcast read
  int64_t f = 0;
  size_t off = out_idx.size() - t.shape.size();
  for (size_t d = 0; d < t.shape.size(); ++d)
    f = f * t.shape[d] + (t.shape[d] == 1 ? 0 : out_idx[off + d]);
  return t.v[f];
}
inline T Map(const std::vector<const T*>& in, const std::function<double(const std::vector<double>&)>& f) {
  Shape s = in[0]->shape;
  for (auto* t : in) s = BroadcastShape(s, t->shape);
  T r{s, std::vector<double>(Numel(s))};
  for (int64_t i = 0; i < Numel(s); ++i) {
    Shape idx = Unflatten(i, s);
    std::vector<double> a;
    for (auto* t : in) a.push_back(At(*t, idx));
    r.v[i] = f(a);
  }
  return r;
}
inline T Map1(const T& a, const std::function<double(double)>& f) {
  return Map({&a}, [&](const std::vector<double>& x) { return f(x[0]); });
}
inline T Map2(const T& a, const T& b, const std::function<double(double, double)>& f) {
  return Map({&a, &b}, [&](const std::vector<double>& x) { return f(x[0], x[1]); });
}

inline T RefConv2d(const T& x, const T& w, const T* bias, Shape st, Shape pads, Shape dil,
                   int64_t group) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  int64_t OH = (H + pads[0] + pads[2] - dil[0] * (KH - 1) - 1) / st[0] + 1;
  int64_t OW = (W + pads[1] + pads[3] - dil[1] * (KW - 1) - 1) / st[1] + 1;
  T r{{N, O, OH, OW}, std::vector<double>(N * O * OH * OW)};
  int64_t Og = O / group;
  (void)C;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias ? bias->v[o] : 0;
          for (int64_t ic = 0; ic < Cg; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t ih = oh * st[0] - pads[0] + kh * dil[0];
                int64_t iw = ow * st[1] - pads[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                int64_t c = (o / Og) * Cg + ic;
                acc += x.v[((n * C + c) * H + ih) * W + iw] * w.v[((o * Cg + ic) * KH + kh) * KW + kw];
              }
          r.v[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
  return r;
}

// tensor.conv_transpose on NC[H]W (1 or 2 spatial dims; 1-D as H = 1), as
// the scatter of the ONNX spec: x[n, c, i] adds x * w[c, m', k] to
// y[n, g*Mg + m', i*s - pad_begin + k*d]. `out` is the result's spatial shape.
inline T RefConvTranspose(const T& x, const T& w, const T* bias, Shape st, Shape pads_begin,
                          Shape dil, int64_t group, Shape out) {
  const bool one_d = x.shape.size() == 3;
  auto at = [&](const Shape& s, size_t i) { return one_d ? (i == 2 ? int64_t{1} : s[i == 3 ? 2 : i]) : s[i]; };
  if (one_d) {
    st.insert(st.begin(), 1);
    pads_begin.insert(pads_begin.begin(), 0);
    dil.insert(dil.begin(), 1);
    out.insert(out.begin(), 1);
  }
  const int64_t N = x.shape[0], C = x.shape[1], H = at(x.shape, 2), W = at(x.shape, 3);
  const int64_t Mg = w.shape[1], KH = at(w.shape, 2), KW = at(w.shape, 3), Cg = C / group, M = Mg * group;
  const int64_t OH = out[0], OW = out[1];
  Shape rs = one_d ? Shape{N, M, OW} : Shape{N, M, OH, OW};
  T r{rs, std::vector<double>(Numel(rs), 0.0)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ih = 0; ih < H; ++ih)
        for (int64_t iw = 0; iw < W; ++iw)
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              int64_t oh = ih * st[0] - pads_begin[0] + kh * dil[0];
              int64_t ow = iw * st[1] - pads_begin[1] + kw * dil[1];
              if (oh < 0 || oh >= OH || ow < 0 || ow >= OW) continue;
              for (int64_t mg = 0; mg < Mg; ++mg) {
                int64_t m = (c / Cg) * Mg + mg;
                r.v[((n * M + m) * OH + oh) * OW + ow] +=
                    x.v[((n * C + c) * H + ih) * W + iw] * w.v[((c * Mg + mg) * KH + kh) * KW + kw];
              }
            }
  if (bias)
    for (int64_t i = 0; i < r.size(); ++i) r.v[i] += bias->v[(i / (OH * OW)) % M];
  return r;
}

inline T RefMatmul(const T& a, const T& b) {
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch = BroadcastShape(ab, bb);
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  Shape os = batch;
  os.push_back(M);
  os.push_back(N);
  T r{os, std::vector<double>(Numel(os))};
  for (int64_t i = 0; i < Numel(os); ++i) {
    Shape idx = Unflatten(i, os);
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) {
      Shape ai(idx.begin(), idx.end() - 2), bi = ai;
      ai.push_back(idx[idx.size() - 2]);
      ai.push_back(k);
      bi.push_back(k);
      bi.push_back(idx.back());
      acc += At(a, ai) * At(b, bi);
    }
    r.v[i] = acc;
  }
  return r;
}

inline T RefReduce(const T& x, const std::string& kind, std::vector<int64_t> axes, bool keep) {
  std::vector<bool> red(x.shape.size(), false);
  for (auto a : axes) red[a] = true;
  Shape ks = x.shape, os;
  for (size_t d = 0; d < ks.size(); ++d) {
    if (red[d]) ks[d] = 1;
    if (!red[d] || keep) os.push_back(ks[d]);
  }
  int64_t n = Numel(ks);
  std::vector<std::vector<double>> groups(n);
  for (int64_t i = 0; i < x.size(); ++i) {
    Shape idx = Unflatten(i, x.shape);
    for (size_t d = 0; d < idx.size(); ++d)
      if (red[d]) idx[d] = 0;
    groups[Flatten(idx, ks)].push_back(x.v[i]);
  }
  T r{os, std::vector<double>(n)};
  for (int64_t g = 0; g < n; ++g) {
    auto& e = groups[g];
    double acc = 0;
    if (kind == "sum" || kind == "mean") {
      for (double v : e) acc += v;
      if (kind == "mean") acc /= e.size();
    } else if (kind == "max") {
      acc = -INFINITY;
      for (double v : e) acc = std::max(acc, v);
    } else if (kind == "min") {
      acc = INFINITY;
      for (double v : e) acc = std::min(acc, v);
    } else if (kind == "prod") {
      acc = 1;
      for (double v : e) acc *= v;
    } else if (kind == "sum_square" || kind == "l2") {
      for (double v : e) acc += v * v;
      if (kind == "l2") acc = std::sqrt(acc);
    } else if (kind == "log_sum_exp") {
      for (double v : e) acc += std::exp(v);
      acc = std::log(acc);
    }
    r.v[g] = acc;
  }
  return r;
}

inline T RefPool(const T& x, bool is_max, Shape k, Shape st, Shape pads, Shape dil, bool cip,
                 Shape out_hw) {
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  int64_t OH = out_hw[0], OW = out_hw[1];
  T r{{N, C, OH, OW}, std::vector<double>(N * C * OH * OW)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = is_max ? -INFINITY : 0;
          int64_t cnt = 0;
          for (int64_t kh = 0; kh < k[0]; ++kh)
            for (int64_t kw = 0; kw < k[1]; ++kw) {
              int64_t ih = oh * st[0] - pads[0] + kh * dil[0];
              int64_t iw = ow * st[1] - pads[1] + kw * dil[1];
              bool in = ih >= 0 && ih < H && iw >= 0 && iw < W;
              bool in_pad = ih >= -pads[0] && ih < H + pads[2] && iw >= -pads[1] && iw < W + pads[3];
              if (cip ? in_pad : in) ++cnt;
              if (!in) continue;
              double v = x.v[((n * C + c) * H + ih) * W + iw];
              acc = is_max ? std::max(acc, v) : acc + v;
            }
          r.v[((n * C + c) * OH + oh) * OW + ow] = is_max ? acc : acc / cnt;
        }
  return r;
}

inline T RefSoftmax(const T& x, int64_t axis, bool log) {
  T r = x;
  int64_t S = x.shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  int64_t outer = x.size() / (S * inner);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < S; ++j) m = std::max(m, x.v[(o * S + j) * inner + in]);
      for (int64_t j = 0; j < S; ++j) s += std::exp(x.v[(o * S + j) * inner + in] - m);
      for (int64_t j = 0; j < S; ++j) {
        double v = x.v[(o * S + j) * inner + in];
        r.v[(o * S + j) * inner + in] = log ? v - m - std::log(s) : std::exp(v - m) / s;
      }
    }
  return r;
}

inline T RefTranspose(const T& x, const Shape& perm) {
  Shape os(perm.size());
  for (size_t d = 0; d < perm.size(); ++d) os[d] = x.shape[perm[d]];
  T r{os, std::vector<double>(x.size())};
  for (int64_t i = 0; i < x.size(); ++i) {
    Shape oi = Unflatten(i, os), ii(perm.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[perm[d]] = oi[d];
    r.v[i] = x.v[Flatten(ii, x.shape)];
  }
  return r;
}

inline T RefSlice(const T& x, const Shape& starts, const Shape& steps, const Shape& os) {
  T r{os, std::vector<double>(Numel(os))};
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape oi = Unflatten(i, os), ii(os.size());
    for (size_t d = 0; d < os.size(); ++d) ii[d] = starts[d] + oi[d] * steps[d];
    r.v[i] = x.v[Flatten(ii, x.shape)];
  }
  return r;
}

inline T RefConcat(const std::vector<const T*>& parts, int64_t axis) {
  Shape os = parts[0]->shape;
  os[axis] = 0;
  for (auto* p : parts) os[axis] += p->shape[axis];
  T r{os, std::vector<double>(Numel(os))};
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape oi = Unflatten(i, os);
    int64_t a = oi[axis];
    for (auto* p : parts) {
      if (a < p->shape[axis]) {
        oi[axis] = a;
        r.v[i] = p->v[Flatten(oi, p->shape)];
        break;
      }
      a -= p->shape[axis];
    }
  }
  return r;
}

inline T RefPad(const T& x, const Shape& pads, const std::string& mode, double value) {
  size_t rk = x.shape.size();
  Shape os(rk);
  for (size_t d = 0; d < rk; ++d) os[d] = x.shape[d] + pads[d] + pads[rk + d];
  T r{os, std::vector<double>(Numel(os))};
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape oi = Unflatten(i, os), ii(rk);
    bool in = true;
    for (size_t d = 0; d < rk; ++d) {
      int64_t s = oi[d] - pads[d], n = x.shape[d];
      if (mode == "reflect") {
        if (s < 0) s = -s;
        if (s >= n) s = 2 * (n - 1) - s;
      } else if (mode == "edge") {
        s = std::min(std::max<int64_t>(s, 0), n - 1);
      } else if (s < 0 || s >= n) {
        in = false;
      }
      ii[d] = s;
    }
    r.v[i] = in ? x.v[Flatten(ii, x.shape)] : value;
  }
  return r;
}

inline T RefGather(const T& data, const T& ind, int64_t axis) {
  Shape os(data.shape.begin(), data.shape.begin() + axis);
  os.insert(os.end(), ind.shape.begin(), ind.shape.end());
  os.insert(os.end(), data.shape.begin() + axis + 1, data.shape.end());
  T r{os, std::vector<double>(Numel(os))};
  int64_t q = static_cast<int64_t>(ind.shape.size());
  for (int64_t i = 0; i < r.size(); ++i) {
    Shape oi = Unflatten(i, os);
    Shape ii(oi.begin() + axis, oi.begin() + axis + q);
    int64_t g = static_cast<int64_t>(ind.v[Flatten(ii, ind.shape)]);
    if (g < 0) g += data.shape[axis];
    Shape di(oi.begin(), oi.begin() + axis);
    di.push_back(g);
    di.insert(di.end(), oi.begin() + axis + q, oi.end());
    r.v[i] = data.v[Flatten(di, data.shape)];
  }
  return r;
}

inline T RefExpand(const T& x, const Shape& os) {
  T r{os, std::vector<double>(Numel(os))};
  for (int64_t i = 0; i < r.size(); ++i) r.v[i] = At(x, Unflatten(i, os));
  return r;
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_TEST_UTIL_H_
