// Cases for the matmul-tiled register blocks that schedule_table.h picks
// (SelectMatmulTile) with A's rows and B's rows read as vec4 texels: a
// 16 x 4 block with A as texels over a ragged, odd N (PP-OCRv4 rec's
// classifier shape, scaled down), an 8 x 8 block with both as texels over
// ragged M and N (the last column block's second texel clamped) and a
// broadcast A, and shapes that admit neither. Checked against
// codegen_test_util.h's RefMatmul on the device (codegen_vulkan_test) and
// for their schedule line (codegen_test). Included by codegen_test_cases.h
// (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_MATMUL_TILE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_MATMUL_TILE_TEST_CASES_H_

#include <string>
#include <vector>

namespace kiln::codegen::testing {

template <typename Add>
void AddMatmulTileCases(Add& add) {
  auto tiled = [&](std::string name, Shape as, Shape bs, std::vector<bool> eligible, std::string schedule) {
    add([=] {
      Case c(name);
      T a = Random(as, 530), bm = Random(bs, 531);
      c.In(a);
      c.In(bm);
      T r = RefMatmul(a, bm);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape))});
      c.schedule = schedule;
      c.atol = 1e-5;
      // Each admitted operand is bound at offset 0 for exactly its bytes,
      // a multiple of 16.
      c.options.texel_eligible = eligible;
      return c;
    });
  };
  // K = 12: three texels of A per row; N = 1021: the last block's columns
  // 1020-1023 clamp to column 1020 and only it is stored.
  tiled("matmul_tile_texels_a", {16, 12}, {12, 1021}, {true, false},
        "matmul-tiled: one invocation per 16x4 tile (256 invocations), A as texels");
  // A [1, 100, 8] broadcast over B's batch of 2; M = 100 = 12 * 8 + 4 and
  // N = 76 = 9 * 8 + 4: the last block's rows clamp to row 99 and its
  // second B texel to texel 18.
  tiled("matmul_tile_texels_ab", {1, 100, 8}, {2, 8, 76}, {true, true},
        "matmul-tiled: one invocation per 8x8 tile (260 invocations), A as texels, B as texels");
  // Admitted by the emitter, not by the shapes: K = 6 and N = 30 are not
  // whole texels.
  tiled("matmul_tile_texels_not_admitted", {64, 6}, {6, 30}, {true, true},
        "matmul-tiled: one invocation per 2x4 tile (256 invocations)");
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_MATMUL_TILE_TEST_CASES_H_
