// Cases for the conv-tiled register blocks that schedule_table.h picks
// (SelectConvTile): an 8 x 8 block (8 output channels x 8 columns) over a
// ragged last column tile, and a depthwise 1 x 16 block, padded, over a
// ragged width; both with bias and an epilogue. Then the same blocks with
// their input rows and 1x1 weights read as vec4 texels
// (SelectConvTexels): ragged, grouped, padded and strided. Checked against
// codegen_test_util.h's direct-convolution reference on the device
// (codegen_vulkan_test) and for their schedule line (codegen_test).
// Included by codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_CONV_TILE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_CONV_TILE_TEST_CASES_H_

#include <algorithm>
#include <string>

namespace kiln::codegen::testing {

template <typename Add>
void AddConvTileCases(Add& add) {
  auto tiled = [&](std::string name, Shape xs, Shape ws, int64_t group, Shape pads, Shape strides,
                   std::string schedule, bool texels = false) {
    add([=] {
      Case c(name);
      T x = Random(xs, 500), w = Random(ws, 501), bias = Random({ws[0]}, 502);
      for (T* t : {&x, &w, &bias}) c.In(*t);
      T conv = RefConv2d(x, w, &bias, strides, pads, {1, 1}, group);
      c.Out(Map1(conv, [](double v) { return std::max(v, 0.0); }));
      auto& b = c.Build();
      auto f = F32(conv.shape);
      auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1), b.arg(2)}, f,
                      {{"strides", Ints(strides)}, {"pads", Ints(pads)}, {"dilations", Ints({1, 1})},
                       {"group", group}});
      c.Return({b.Op("tensor.relu", {cv}, f)});
      c.schedule = schedule;
      c.atol = 1e-5;
      // The emitter admits every operand as a texel buffer (each is bound
      // at offset 0 for exactly its bytes, a multiple of 16).
      if (texels) c.options.texel_eligible = {true, true, true};
      return c;
    });
  };
  // 1x1, 16 -> 24 channels on 3 x 21: positions flattened
  // (ConvFlattensPositions), 63 = 7 * 8 + 7: three 8-channel blocks of 8
  // position blocks, the last ragged.
  tiled("conv_tile_8x8", {2, 16, 3, 21}, {24, 16, 1, 1}, 1, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x position) tile (48 invocations)");
  // Depthwise 3x3, padded, width 37 = 2 * 16 + 5.
  tiled("conv_tile_depthwise_1x16", {1, 4, 6, 37}, {4, 1, 3, 3}, 4, {1, 1, 1, 1}, {1, 1},
        "conv-tiled: one invocation per 1x16 (channel x column) tile (72 invocations)");
  // Texel operands (schedule_table.h SelectConvTexels). 1x1 over 3 x 20 =
  // 60 positions = 7 * 8 + 4: the last block's row runs past the channel
  // into the next (masked) and, on the last channel, past the tensor
  // (clamped); weights as texels of 4 input channels.
  tiled("conv_tile_texels_1x1", {2, 16, 3, 20}, {24, 16, 1, 1}, 1, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x position) tile (48 invocations), input as "
        "texels, weights as texels", true);
  // Grouped 1x1 (8 input channels per group: two weight texels per row),
  // 2 x 12 = 24 positions.
  tiled("conv_tile_texels_grouped", {1, 16, 2, 12}, {16, 8, 1, 1}, 2, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x position) tile (6 invocations), input as "
        "texels, weights as texels", true);
  // 3x3 padded: the row starts 3 elements into its first texel (and before
  // the tensor at the first row); 8 input channels: the kernels of input
  // channels q = 0..3 of each group of 4 start 0, 1, 2, 3 floats into
  // their first texel, the last output channel's last kernel in the
  // tensor's last texel.
  tiled("conv_tile_texels_3x3_pad", {1, 8, 5, 20}, {16, 8, 3, 3}, 1, {1, 1, 1, 1}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x column) tile (30 invocations), input as "
        "texels, weight kernels as texels", true);
  // 3 input channels (an image stem): not whole groups of 4, so each weight
  // row (3 floats at 9 * (o * 3 + ic) + 3 * kh) starts at every lead 0-3
  // somewhere and is picked at run time.
  tiled("conv_tile_texels_3x3_stem", {1, 3, 5, 20}, {16, 3, 3, 3}, 1, {1, 1, 1, 1}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x column) tile (30 invocations), input as "
        "texels, weight rows as texels", true);
  // A 2x2 kernel, 4 input channels, grouped (2 groups of 4 -> 4): every
  // kernel is one whole texel.
  tiled("conv_tile_texels_2x2_grouped", {1, 8, 5, 16}, {8, 4, 2, 2}, 2, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 4x8 (channel x column) tile (16 invocations), input as "
        "texels, weight kernels as texels", true);
  // Depthwise 3x3, padded, 1 x 16 blocks over width 36: weight rows of one
  // channel, the last ones in the tensor's last texel.
  tiled("conv_tile_texels_depthwise", {1, 8, 6, 36}, {8, 1, 3, 3}, 8, {1, 1, 1, 1}, {1, 1},
        "conv-tiled: one invocation per 1x16 (channel x column) tile (144 invocations), input as "
        "texels, weight rows as texels", true);
  // Stride 2, padded, odd height: rows of 2 * TW - 1 + 3 elements.
  tiled("conv_tile_texels_3x3_s2", {1, 4, 9, 24}, {8, 4, 3, 3}, 1, {1, 1, 1, 1}, {2, 2},
        "conv-tiled: one invocation per 8x8 (channel x column) tile (10 invocations), input as "
        "texels, weight kernels as texels", true);
  // A squeeze-excite prologue, x * scale[c], padded 3x3: the block fetches
  // x's operand as texels and applies the per-channel scale (loaded once
  // per row) to each element; columns in the padding stay zero.
  add([] {
    Case c("conv_tile_texels_prologue");
    const Shape xs = {1, 8, 4, 16}, ws = {8, 8, 3, 3};
    T x = Random(xs, 510), scale = Random({1, 8, 1, 1}, 511), w = Random(ws, 512);
    for (T* t : {&x, &scale, &w}) c.In(*t);
    T xscaled = Map2(x, scale, [](double a, double b) {
      return static_cast<double>(static_cast<float>(a) * static_cast<float>(b));
    });
    T conv = RefConv2d(xscaled, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
    c.Out(conv);
    auto& b = c.Build();
    auto* m = b.Op("tensor.mul", {b.arg(0), b.arg(1)}, F32(xs));
    c.Return({b.Op("tensor.conv2d", {m, b.arg(2)}, F32(conv.shape),
                   {{"strides", Ints({1, 1})}, {"pads", Ints({1, 1, 1, 1})}, {"dilations", Ints({1, 1})},
                    {"group", int64_t{1}}})});
    c.schedule =
        "conv-tiled: one invocation per 8x8 (channel x column) tile (8 invocations), input as texels, "
        "weight kernels as texels";
    c.atol = 1e-5;
    c.options.texel_eligible = {true, true, true};
    return c;
  });
  // Not admitted by the shapes: 3 x 18 = 54 positions are not whole texels
  // per channel.
  tiled("conv_tile_texels_not_whole_rows", {1, 8, 3, 18}, {8, 8, 1, 1}, 1, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x position) tile (7 invocations), weights as "
        "texels", true);
  // Flattened positions with an epilogue operand that broadcasts along the
  // rows (r[h], shape [1, 1, 3, 1]) and one along the columns (q[w], [1, 1,
  // 1, 12]): each needs the real (h, w) of a position, 36 = 4 * 8 + 4.
  add([] {
    Case c("conv_tile_positions_broadcast");
    const Shape xs = {1, 8, 3, 12}, ws = {16, 8, 1, 1};
    T x = Random(xs, 520), w = Random(ws, 521), r = Random({1, 1, 3, 1}, 522), q = Random({1, 1, 1, 12}, 523);
    for (T* t : {&x, &w, &r, &q}) c.In(*t);
    T conv = RefConv2d(x, w, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    T sum = Map2(conv, r, [](double a, double b) {
      return static_cast<double>(static_cast<float>(a) + static_cast<float>(b));
    });
    c.Out(Map2(sum, q, [](double a, double b) { return static_cast<double>(static_cast<float>(a) * static_cast<float>(b)); }));
    auto& b = c.Build();
    auto f = F32(conv.shape);
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, f,
                    {{"strides", Ints({1, 1})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})},
                     {"group", int64_t{1}}});
    auto* ad = b.Op("tensor.add", {cv, b.arg(2)}, f);
    c.Return({b.Op("tensor.mul", {ad, b.arg(3)}, f)});
    c.schedule = "conv-tiled: one invocation per 8x8 (channel x position) tile (10 invocations)";
    c.atol = 1e-5;
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_CONV_TILE_TEST_CASES_H_
