// Cases for the conv-transpose-tiled and conv-transpose-upsample register
// blocks that schedule_table.h picks (SelectConvTransposeTile) for 2-D
// tensor.conv_transpose: 2x2 stride-2 upsamplers like PaddleOCR det's (a
// folded batch-norm and relu; one output channel with sigmoid; det's own
// 24 -> 24 block), a 3x3 stride-3 one where the phase block wins, and a
// 3x3 stride-2 "same" upsampler with output_padding whose phases read two
// column taps and one, and whose edge columns read the padding. Checked against codegen_test_util.h's scatter reference
// (RefConvTranspose) on the device (codegen_vulkan_test, validation layers
// on) and for their schedule line (codegen_test). Included by
// codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_CONV_TRANSPOSE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_CONV_TRANSPOSE_TEST_CASES_H_

#include <algorithm>
#include <cmath>
#include <string>

namespace kiln::codegen::testing {

// 2-D tensor.conv_transpose in f32 in ONNX Runtime's order
// (conv_transpose_schedule.h), written as the one-output gather: per output,
// for each tap (kh, kw) in kernel order whose input pixel exists, a dot over
// the group's input channels with one rounding per term (std::fmaf) from
// +0, added to the sum; the bias last. The device matches it bit for bit
// where its fma() is exact (lavapipe: the runtime's exact-FMA splice), so
// cases checked with atol = rtol = 0 fail if a schedule changes the order.
inline T RefConvTransposeF32(const T& x, const T& w, const T* bias, Shape st, Shape pads_begin, Shape dil,
                             int64_t group, Shape out) {
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t Mg = w.shape[1], KH = w.shape[2], KW = w.shape[3], Cg = C / group, M = Mg * group;
  const int64_t OH = out[0], OW = out[1];
  Shape rs = {N, M, OH, OW};
  T r{rs, std::vector<double>(Numel(rs), 0.0)};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          float sum = 0.0f;
          const int64_t g = m / Mg, mg = m % Mg;
          for (int64_t kh = 0; kh < KH; ++kh)
            for (int64_t kw = 0; kw < KW; ++kw) {
              const int64_t uh = oh + pads_begin[0] - kh * dil[0], uw = ow + pads_begin[1] - kw * dil[1];
              if (uh < 0 || uw < 0 || uh % st[0] != 0 || uw % st[1] != 0) continue;
              const int64_t ih = uh / st[0], iw = uw / st[1];
              if (ih >= H || iw >= W) continue;
              float dot = 0.0f;
              for (int64_t c = g * Cg; c < (g + 1) * Cg; ++c)
                dot = std::fmaf(static_cast<float>(x.v[((n * C + c) * H + ih) * W + iw]),
                                static_cast<float>(w.v[((c * Mg + mg) * KH + kh) * KW + kw]), dot);
              sum += dot;
            }
          if (bias) sum += static_cast<float>(bias->v[m]);
          r.v[((n * M + m) * OH + oh) * OW + ow] = sum;
        }
  return r;
}

template <typename Add>
void AddConvTransposeTileCases(Add& add) {
  // 2x2 stride 2, 16 -> 8 channels, 5x7 -> 10x14 (conv-transpose-upsample:
  // 4 channels x 4 input columns, the second tile ragged). Then * scale +
  // shift (per channel, [8, 1, 1]) and relu: det's dispatch_87 chain.
  add([] {
    Case c("conv_transpose_tile_2x2s2_bn_relu");
    T x = Random({1, 16, 5, 7}, 600), w = Random({16, 8, 2, 2}, 601), bias = Random({8}, 602),
      sc = Random({8, 1, 1}, 603), sh = Random({8, 1, 1}, 604);
    for (T* t : {&x, &w, &bias, &sc, &sh}) c.In(*t);
    T ct = RefConvTranspose(x, w, &bias, {2, 2}, {0, 0}, {1, 1}, 1, {10, 14});
    T a = Map({&ct, &sc, &sh}, [](const std::vector<double>& v) { return std::max(0.0, v[0] * v[1] + v[2]); });
    c.Out(a);
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 1}}, "ConvTranspose_0");
    auto* m = b.Op("tensor.mul", {cv, b.arg(3)}, f);
    auto* ad = b.Op("tensor.add", {m, b.arg(4)}, f);
    c.Return({b.Op("tensor.relu", {ad}, f)});
    // 2 channel blocks x 5 input rows x 2 column tiles (7 = 4 + 3: ragged).
    c.schedule = "conv-transpose-upsample: one invocation per 4x4 (channel x input column, 2x2 outputs each) tile (20 invocations)";
    c.atol = 1e-5;
    return c;
  });
  // One output channel (det's last upsampler, then sigmoid), batch 2:
  // conv-transpose-upsample, 1 channel x 4 input columns (4 * 3 * (4 + 4)
  // = 96 loads per image and input channel, tied with 8 columns' 4 * 2 *
  // (8 + 4): the narrower wins).
  add([] {
    Case c("conv_transpose_tile_one_channel_sigmoid");
    T x = Random({2, 8, 4, 10}, 610), w = Random({8, 1, 2, 2}, 611), bias = Random({1}, 612);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T ct = RefConvTranspose(x, w, &bias, {2, 2}, {0, 0}, {1, 1}, 1, {8, 20});
    c.Out(Map1(ct, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }));
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 1}});
    c.Return({b.Op("tensor.sigmoid", {cv}, f)});
    // 2 images x 4 input rows x 3 column tiles (10 = 4 + 4 + 2).
    c.schedule = "conv-transpose-upsample: one invocation per 1x4 (channel x input column, 2x2 outputs each) tile (24 invocations)";
    c.atol = 1e-5;
    return c;
  });
  // det's 24 -> 24 upsampler on 6 of its 24 input rows: both blocks load
  // 5,760 elements per input channel, and the tie goes to
  // conv-transpose-upsample, 2 channels x 8 input columns (the block det
  // runs); bias, scale + shift, relu.
  add([] {
    Case c("conv_transpose_tile_det_2x8");
    T x = Random({1, 24, 6, 40}, 630), w = Random({24, 24, 2, 2}, 631), bias = Random({24, 1, 1}, 632),
      sc = Random({24, 1, 1}, 633), sh = Random({24, 1, 1}, 634);
    for (T* t : {&x, &w, &bias, &sc, &sh}) c.In(*t);
    T ct = RefConvTranspose(x, w, nullptr, {2, 2}, {0, 0}, {1, 1}, 1, {12, 80});
    T a = Map({&ct, &bias, &sc, &sh},
              [](const std::vector<double>& v) { return std::max(0.0, (v[0] + v[1]) * v[2] + v[3]); });
    c.Out(a);
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 1}});
    auto* ad = b.Op("tensor.add", {cv, b.arg(2)}, f);
    auto* m = b.Op("tensor.mul", {ad, b.arg(3)}, f);
    auto* ad2 = b.Op("tensor.add", {m, b.arg(4)}, f);
    c.Return({b.Op("tensor.relu", {ad2}, f)});
    // 12 channel blocks x 6 input rows x 5 column tiles.
    c.schedule = "conv-transpose-upsample: one invocation per 2x8 (channel x input column, 2x2 outputs each) tile (360 invocations)";
    c.atol = 1e-5;
    return c;
  });
  // conv-transpose-upsample with groups (2 groups, 4 -> 8 channels), bias
  // and relu, a ragged last tile (11 input columns, TW = 8): bit-exact
  // against the f32 gather in ORT's order.
  add([] {
    Case c("conv_transpose_tile_upsample_group_exact");
    T x = Random({1, 4, 3, 11}, 650), w = Random({4, 4, 2, 2}, 651), bias = Random({8}, 652);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T ct = RefConvTransposeF32(x, w, &bias, {2, 2}, {0, 0}, {1, 1}, 2, {6, 22});
    c.Out(Map1(ct, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 2}});
    c.Return({b.Op("tensor.relu", {cv}, f)});
    c.schedule = "conv-transpose-upsample";
    c.atol = c.rtol = 0;
    return c;
  });
  // conv-transpose-upsample reading input rows and weights as vec4 texels
  // (the emitter admits every operand): one output channel, 20 input
  // columns in blocks of 8, so the last block reads a texel past its row
  // (clamped at the binding's end for the last row; those outputs are not
  // stored). Bit-exact against the f32 gather in ORT's order.
  add([] {
    Case c("conv_transpose_tile_upsample_texels");
    T x = Random({1, 8, 3, 20}, 660), w = Random({8, 1, 2, 2}, 661), bias = Random({1}, 662);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T ct = RefConvTransposeF32(x, w, &bias, {2, 2}, {0, 0}, {1, 1}, 1, {6, 40});
    c.Out(Map1(ct, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 1}});
    c.Return({b.Op("tensor.relu", {cv}, f)});
    c.options.texel_eligible = {true, true, true};
    c.schedule = "conv-transpose-upsample: one invocation per 1x8 (channel x input column, 2x2 outputs each) "
                 "tile (9 invocations), input as texels, weights as texels";
    c.atol = c.rtol = 0;
    return c;
  });
  // The same with 2 groups of 2 -> 4 channels and batch 2 (texel offsets
  // of the second image, a block of 2 channels' 8 weights starting inside
  // the group's).
  add([] {
    Case c("conv_transpose_tile_upsample_texels_group");
    T x = Random({2, 4, 2, 8}, 670), w = Random({4, 4, 2, 2}, 671), bias = Random({8}, 672);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T ct = RefConvTransposeF32(x, w, &bias, {2, 2}, {0, 0}, {1, 1}, 2, {4, 16});
    c.Out(ct);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, F32(ct.shape),
                   {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                    {"output_padding", Ints({0, 0})}, {"group", 2}})});
    c.options.texel_eligible = {true, true, true};
    c.schedule = "conv-transpose-upsample: one invocation per 2x8 (channel x input column, 2x2 outputs each) "
                 "tile (16 invocations), input as texels, weights as texels";
    c.atol = c.rtol = 0;
    return c;
  });
  // 3x3 stride 3 (stride == kernel) where conv-transpose-tiled loads less
  // (schedule_table.h: 9 outputs per pixel cap upsample at 1x4): 8 channels
  // x 8 columns of one phase, each output one tap, the one-tap path
  // (dots straight into the sums); bias and leaky relu.
  add([] {
    Case c("conv_transpose_tile_3x3s3_phase");
    T x = Random({1, 4, 5, 8}, 640), w = Random({4, 8, 3, 3}, 641), bias = Random({8}, 642);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T ct = RefConvTranspose(x, w, &bias, {3, 3}, {0, 0}, {1, 1}, 1, {15, 24});
    c.Out(Map1(ct, [](double v) { return v < 0 ? 0.1 * v : v; }));
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({3, 3})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"output_padding", Ints({0, 0})}, {"group", 1}});
    c.Return({b.Op("tensor.leaky_relu", {cv}, f, {{"alpha", 0.1}})});
    // 15 rows x 3 phases x 1 tile.
    c.schedule = "conv-transpose-tiled: one invocation per 8x8 (channel x column of one stride phase) tile (45 invocations)";
    c.atol = 1e-5;
    return c;
  });
  // 3x3 stride 2, pads 1, output_padding 1 (the "same" upsampler), 6 -> 4
  // channels, 5x6 -> 10x12, no bias: even columns read tap kw = 1, odd ones
  // kw = 0 and 2; column 11 reads input column 6 (past the input, so 0).
  // Bit-exact against the f32 gather in ORT's order.
  add([] {
    Case c("conv_transpose_tile_3x3s2_same");
    T x = Random({1, 6, 5, 6}, 620), w = Random({6, 4, 3, 3}, 621);
    c.In(x);
    c.In(w);
    // 2*4 + 1 + 3 - 1 - 1 = 10; 2*5 + 1 + 3 - 1 - 1 = 12.
    T ct = RefConvTransposeF32(x, w, nullptr, {2, 2}, {1, 1}, {1, 1}, 1, {10, 12});
    c.Out(ct);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1)}, F32(ct.shape),
                   {{"strides", Ints({2, 2})}, {"pads", Ints({1, 1, 1, 1})}, {"dilations", Ints({1, 1})},
                    {"output_padding", Ints({1, 1})}, {"group", 1}})});
    // 10 rows x 2 phases x 2 tiles (6 columns per phase, TW = 4).
    c.schedule = "conv-transpose-tiled: one invocation per 4x4 (channel x column of one stride phase) tile (40 invocations)";
    c.atol = c.rtol = 0;  // bit-exact: the f32 reference sums in ORT's order
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_CONV_TRANSPOSE_TEST_CASES_H_
