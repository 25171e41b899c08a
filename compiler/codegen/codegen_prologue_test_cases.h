// Cases for elementwise prologues that the fusion pass merges in front of a
// conv2d / matmul (fuse_dispatch_regions.cc): the squeeze-excite multiply by a
// per-channel scale read by a 1x1 conv and by a padded 3x3 conv (padding must
// stay zero, not scale * x at a clamped index), and a prologue on a matmul's
// second operand. Checked against codegen_test_util.h's references.
// Included by codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_PROLOGUE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_PROLOGUE_TEST_CASES_H_

#include <functional>
#include <string>
#include <vector>

namespace kiln::codegen::testing {

template <typename Add>
void AddPrologueCases(Add& add) {
  auto se_conv = [&](std::string name, Shape xs, Shape ws, Shape pads) {
    add([=] {
      Case c(name);
      T x = Random(xs, 400), s = Random({1, xs[1], 1, 1}, 401, 0, 1), w = Random(ws, 402),
        bias = Random({ws[0]}, 403);
      for (T* t : {&x, &s, &w, &bias}) c.In(*t);
      T m = Map2(x, s, [](double p, double q) { return p * q; });
      T r = RefConv2d(m, w, &bias, {1, 1}, pads, {1, 1}, 1);
      // Residual-style epilogue on top: relu.
      r = Map1(r, [](double v) { return v > 0 ? v : 0; });
      c.Out(r);
      auto& b = c.Build();
      auto* mul = b.Op("tensor.mul", {b.arg(0), b.arg(1)}, F32(xs));
      auto* cv = b.Op("tensor.conv2d", {mul, b.arg(2), b.arg(3)}, F32(r.shape),
                      {{"strides", Ints({1, 1})}, {"pads", Ints(pads)}, {"dilations", Ints({1, 1})},
                       {"group", int64_t{1}}});
      c.Return({b.Op("tensor.relu", {cv}, F32(r.shape))});
      c.schedule = "conv-tiled";
      c.atol = 1e-5;
      return c;
    });
  };
  se_conv("prologue_se_mul_conv1x1", {1, 24, 3, 10}, {8, 24, 1, 1}, {0, 0, 0, 0});
  se_conv("prologue_se_mul_conv3x3_pad", {1, 6, 5, 7}, {4, 6, 3, 3}, {1, 1, 1, 1});
  add([] {
    Case c("prologue_matmul_rhs_add_relu");
    T a = Random({5, 12}, 404), bm = Random({12, 7}, 405), sh = Random({7}, 406);
    for (T* t : {&a, &bm, &sh}) c.In(*t);
    T p = Map2(bm, sh, [](double u, double v) { double s = u + v; return s > 0 ? s : 0; });
    c.Out(RefMatmul(a, p));
    auto& b = c.Build();
    auto* ad = b.Op("tensor.add", {b.arg(1), b.arg(2)}, F32({12, 7}));
    auto* rl = b.Op("tensor.relu", {ad}, F32({12, 7}));
    c.Return({b.Op("tensor.matmul", {b.arg(0), rl}, F32({5, 7}))});
    c.schedule = "matmul-tiled";
    c.atol = 1e-5;
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_PROLOGUE_TEST_CASES_H_
