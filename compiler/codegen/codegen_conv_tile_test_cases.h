// Cases for the conv-tiled register blocks that schedule_table.h picks
// (SelectConvTile): an 8 x 8 block (8 output channels x 8 columns) over a
// ragged last column tile, and a depthwise 1 x 16 block, padded, over a
// ragged width; both with bias and an epilogue. Checked against
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
                   std::string schedule) {
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
      return c;
    });
  };
  // 1x1, 16 -> 24 channels, width 21 = 2 * 8 + 5: three 8-channel blocks,
  // column tiles 0-7, 8-15, 16-20 (ragged).
  tiled("conv_tile_8x8", {2, 16, 3, 21}, {24, 16, 1, 1}, 1, {0, 0, 0, 0}, {1, 1},
        "conv-tiled: one invocation per 8x8 (channel x column) tile (54 invocations)");
  // Depthwise 3x3, padded, width 37 = 2 * 16 + 5.
  tiled("conv_tile_depthwise_1x16", {1, 4, 6, 37}, {4, 1, 3, 3}, 4, {1, 1, 1, 1}, {1, 1},
        "conv-tiled: one invocation per 1x16 (channel x column) tile (72 invocations)");
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_CONV_TILE_TEST_CASES_H_
