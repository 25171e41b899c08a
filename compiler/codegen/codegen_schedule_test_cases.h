// Test cases for the register-blocked conv and matmul schedules (conv-gemm,
// conv-direct, depthwise, vec4 matmul-tiled; schedule_table.h), added to
// AllCases() by codegen_test_cases.h. Each case checks its schedule comment
// and compares bit for bit (rtol = atol = 0) with a host reference that
// evaluates the same sequential fused multiply-add chain per output (std::fma
// in float over (c, kh, kw) or k in order, padding taps skipped, then the
// bias), which is the numerics contract of every schedule. The shapes are
// chosen so that every code path runs: partial channel / pixel / column /
// row blocks, channel counts that are not multiples of 4 (scalar instead of
// vec4 loads), width 1, stride 2, dilation, groups, asymmetric padding, a
// batch, bias and broadcasting epilogues.
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_SCHEDULE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_SCHEDULE_TEST_CASES_H_

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/codegen_test_util.h"

namespace kiln::codegen::testing {

// tensor.conv2d as the fused multiply-add chain every conv schedule runs:
// per output, acc = fma(x, w, acc) over (ic, kh, kw) in order, skipping taps
// in the padding, then acc + bias, all in float.
inline T FmaConv2d(const T& x, const T& w, const T* bias, Shape st, Shape pads, Shape dil,
                   int64_t group) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t OH = (H + pads[0] + pads[2] - dil[0] * (KH - 1) - 1) / st[0] + 1;
  const int64_t OW = (W + pads[1] + pads[3] - dil[1] * (KW - 1) - 1) / st[1] + 1;
  const int64_t Og = O / group;
  T r{{N, O, OH, OW}, std::vector<double>(N * O * OH * OW)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float acc = 0.0f;
          for (int64_t ic = 0; ic < Cg; ++ic)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * st[0] - pads[0] + kh * dil[0];
                const int64_t iw = ow * st[1] - pads[1] + kw * dil[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const int64_t c = (o / Og) * Cg + ic;
                acc = std::fma(static_cast<float>(x.v[((n * C + c) * H + ih) * W + iw]),
                               static_cast<float>(w.v[((o * Cg + ic) * KH + kh) * KW + kw]), acc);
              }
          if (bias) acc += static_cast<float>(bias->v[o]);
          r.v[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
  return r;
}

// Adds the schedule cases through `add` (see AllCases()).
inline void AddScheduleCases(const std::function<void(std::function<Case()>)>& add) {
  // One conv + bias + relu case, bit-exact against FmaConv2d.
  struct ConvSpec {
    const char* name;
    Shape x, w;
    Shape st, pads, dil;
    int64_t group;
    bool bias;
    const char* schedule;
  };
  const std::vector<ConvSpec> specs = {
      // conv-gemm: 1x1. 16 channels (w as vec4), 40 pixels (x as vec4), 10
      // outputs (a partial 4-channel block).
      {"sched_conv_gemm_vec4", {1, 16, 5, 8}, {10, 16, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1,
       true, "conv-gemm: one invocation per 4x4"},
      // conv-gemm: 6 channels (scalar w), 15 pixels (scalar x, partial pixel
      // block), a batch of 2, 3 outputs (block of 3).
      {"sched_conv_gemm_scalar", {2, 6, 3, 5}, {3, 6, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1,
       false, "conv-gemm: one invocation per 3x4"},
      // conv-gemm: width 1 and a single pixel.
      {"sched_conv_gemm_one_pixel", {1, 8, 1, 1}, {20, 8, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1},
       1, true, "conv-gemm: one invocation per 4x1"},
      // conv-direct: 3x3, pad 1, 7 columns (a partial 4-column block), 16
      // outputs, 8 input channels.
      {"sched_conv_direct_3x3", {1, 8, 6, 7}, {16, 8, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1,
       true, "conv-direct: one invocation per 4x4"},
      // conv-direct: groups (2 x 4 channels, 3 outputs per group), stride 2,
      // dilation 2, asymmetric pads, a batch.
      {"sched_conv_direct_group_stride_dil", {2, 8, 9, 10}, {6, 4, 3, 2}, {2, 2},
       {2, 1, 0, 2}, {2, 2}, 2, true, "conv-direct: one invocation per 3x4"},
      // conv-direct: width 1 (3x1 kernel), 4 channels (no channel loop).
      {"sched_conv_direct_width1", {1, 4, 5, 1}, {4, 4, 3, 1}, {1, 1}, {1, 0, 1, 0}, {1, 1}, 1,
       false, "conv-direct: one invocation per 4x1"},
      // conv-direct: 1x1 with stride 2 (not a GEMM), 12 channels.
      {"sched_conv_direct_1x1_stride2", {1, 12, 7, 9}, {8, 12, 1, 1}, {2, 2}, {0, 0, 0, 0},
       {1, 1}, 1, true, "conv-direct: one invocation per 4x4"},
      // depthwise: 3x3 pad 1, 11 columns (a partial 8-column block), 5 rows.
      {"sched_depthwise_3x3", {1, 6, 5, 11}, {6, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 6,
       true, "depthwise: one invocation per 1x8"},
      // depthwise: channel multiplier 2, stride 2, dilation 2, asymmetric
      // pads, 5x3 kernel, a batch.
      {"sched_depthwise_mult_stride_dil", {2, 3, 12, 13}, {6, 1, 5, 3}, {2, 2}, {1, 0, 3, 2},
       {2, 2}, 3, true, "depthwise: one invocation per 1x"},
      // depthwise: width 1.
      {"sched_depthwise_width1", {1, 4, 6, 1}, {4, 1, 3, 1}, {1, 1}, {1, 0, 1, 0}, {1, 1}, 4,
       false, "depthwise: one invocation per 1x1"},
      // conv-direct: 3 channels per group, 2 groups, 2 outputs per group.
      {"sched_conv_direct_cg3", {1, 6, 5, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2,
       true, "conv-direct: one invocation per 2x4"},
      // A window wider than kConvMaxUnrolledTaps: conv-tiled stays.
      {"sched_conv_tiled_wide", {1, 4, 2, 40}, {4, 4, 1, 30}, {1, 1}, {0, 2, 0, 2}, {1, 1}, 1,
       true, "conv-tiled"},
  };
  for (size_t i = 0; i < specs.size(); ++i) {
    add([spec = specs[i], i] {
      Case c(spec.name);
      const uint32_t seed = 200 + 10 * static_cast<uint32_t>(i);
      T x = Random(spec.x, seed), w = Random(spec.w, seed + 1), bias = Random({spec.w[0]}, seed + 2);
      c.In(x);
      c.In(w);
      if (spec.bias) c.In(bias);
      T conv = FmaConv2d(x, w, spec.bias ? &bias : nullptr, spec.st, spec.pads, spec.dil,
                         spec.group);
      c.Out(Map1(conv, [](double v) { return std::max(v, 0.0); }));
      auto& b = c.Build();
      auto f = F32(conv.shape);
      std::vector<ir::Value*> operands = {b.arg(0), b.arg(1)};
      if (spec.bias) operands.push_back(b.arg(2));
      auto* cv = b.Op("tensor.conv2d", operands, f,
                      {{"strides", Ints(spec.st)}, {"pads", Ints(spec.pads)},
                       {"dilations", Ints(spec.dil)}, {"group", spec.group}},
                      "Conv_0");
      c.Return({b.Op("tensor.relu", {cv}, f)});
      c.schedule = spec.schedule;
      c.rtol = 0;
      c.atol = 0;
      return c;
    });
  }

  // conv-gemm with a hard-swish epilogue and a per-channel scale operand
  // (the squeeze-excite shape): the epilogue runs per output element.
  add([] {
    Case c("sched_conv_gemm_epilogue");
    T x = Random({1, 8, 4, 4}, 300), w = Random({8, 8, 1, 1}, 301), s = Random({1, 8, 1, 1}, 302);
    for (T* t : {&x, &w, &s}) c.In(*t);
    T conv = FmaConv2d(x, w, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    T m = Map2(conv, s, [](double p, double q) { return static_cast<float>(p * q); });
    c.Out(Map1(m, [](double v) { return v * std::min(6.0, std::max(0.0, v + 3)) / 6; }));
    auto& b = c.Build();
    auto f = F32(conv.shape);
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, f);
    auto* mu = b.Op("tensor.mul", {cv, b.arg(2)}, f);
    c.Return({b.Op("tensor.hard_swish", {mu}, f)});
    c.schedule = "conv-gemm";
    c.atol = 1e-6;
    return c;
  });

  // matmul-tiled with vec4 operands: K = 12 (A as vec4), N = 12 (B as vec4,
  // a partial 8-column tile reading the last aligned vec4), M = 5 (partial
  // 4-row tile), a batch of 2 with B broadcast over it.
  add([] {
    Case c("sched_matmul_vec4");
    const int64_t Bt = 2, M = 5, K = 12, N = 12;
    T a = Random({Bt, M, K}, 310), bm = Random({K, N}, 311);
    T r{{Bt, M, N}, {}};
    for (int64_t t = 0; t < Bt; ++t)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float acc = 0.0f;
          for (int64_t k = 0; k < K; ++k)
            acc = std::fma(static_cast<float>(a.v[(t * M + i) * K + k]),
                           static_cast<float>(bm.v[k * N + j]), acc);
          r.v.push_back(acc);
        }
    c.In(a);
    c.In(bm);
    c.Out(Map1(r, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto* mm = b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape));
    c.Return({b.Op("tensor.relu", {mm}, F32(r.shape))});
    c.schedule = "matmul-tiled: one invocation per 4x8";
    c.rtol = 0;
    c.atol = 0;
    return c;
  });
  // matmul-tiled with scalar operands: K and N not multiples of 4.
  add([] {
    Case c("sched_matmul_scalar");
    const int64_t M = 3, K = 13, N = 10;
    T a = Random({M, K}, 320), bm = Random({K, N}, 321);
    T r{{M, N}, {}};
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k)
          acc = std::fma(static_cast<float>(a.v[i * K + k]), static_cast<float>(bm.v[k * N + j]), acc);
        r.v.push_back(acc);
      }
    c.In(a);
    c.In(bm);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape))});
    c.schedule = "matmul-tiled: one invocation per 3x8";
    c.rtol = 0;
    c.atol = 0;
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_SCHEDULE_TEST_CASES_H_
