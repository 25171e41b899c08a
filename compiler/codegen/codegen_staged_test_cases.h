// Cases for the workgroup-staged schedule (schedule_staged.cc): regions as
// --fuse-workgroup-stages forms them, with ops marked `workgroup_stage`.
//  - PP-OCR cls's largest squeeze-excite block (pool of 200 x 2 x 96, 200 ->
//    50 -> 200 channels): the pool's input read as vec4 texels, 200 pooled
//    values over 64 invocations (4 rounds, the last with 8 live);
//  - the same block with odd sizes and no texels (rows of 15 elements,
//    70 -> 17 -> 70 channels), its excite scale multiplying a [70, 2, 2]
//    operand in the results (a stage value read at a broadcast index);
//  - a matmul chain whose first product is a stage, a classifier's tail
//    (pool, reshape read from the stage, fully connected, softmax), and an
//    L2 normalization whose stage is sqrt of a sum of squares read as texels.
// Checked against codegen_test_util.h's references on the device
// (codegen_vulkan_test) and for their schedule line (codegen_test).
// Included by codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_STAGED_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_STAGED_TEST_CASES_H_

#include <algorithm>
#include <cmath>
#include <string>

namespace kiln::codegen::testing {

template <typename Add>
void AddStagedCases(Add& add) {
  const std::map<std::string, ir::Attribute> stage = {{"workgroup_stage", true}};
  auto with = [](std::map<std::string, ir::Attribute> a, const std::map<std::string, ir::Attribute>& b) {
    a.insert(b.begin(), b.end());
    return a;
  };
  // x -> mean over (H, W) -> conv 1x1 + bias -> relu -> conv 1x1 + bias ->
  // hard_sigmoid [-> * y].
  auto squeeze_excite = [=](std::string name, Shape xs, int64_t squeeze, bool texels, bool scale) {
    return [=] {
      Case c(name);
      const int64_t C = xs[1];
      T x = Random(xs, 700), w1 = Random({squeeze, C, 1, 1}, 701, -0.3, 0.3), b1 = Random({squeeze}, 702),
        w2 = Random({C, squeeze, 1, 1}, 703, -0.5, 0.5), b2 = Random({C}, 704);
      T y = Random({1, C, 2, 2}, 705);
      for (T* t : {&x, &w1, &b1, &w2, &b2}) c.In(*t);
      if (scale) c.In(y);
      T pooled = RefReduce(x, "mean", {2, 3}, true);
      T sq = Map1(RefConv2d(pooled, w1, &b1, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                  [](double v) { return std::max(v, 0.0); });
      T ex = Map1(RefConv2d(sq, w2, &b2, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1),
                  [](double v) { return std::min(std::max(0.2 * v + 0.5, 0.0), 1.0); });
      if (scale) {
        T out = y;
        for (int64_t i = 0; i < out.size(); ++i) out.v[i] = y.v[i] * ex.v[i / 4];
        c.Out(out);
      } else {
        c.Out(ex);
      }
      auto& b = c.Build();
      const std::map<std::string, ir::Attribute> conv = {
          {"strides", Ints({1, 1})}, {"pads", Ints({0, 0, 0, 0})}, {"dilations", Ints({1, 1})}, {"group", 1}};
      auto* p = b.Op("tensor.reduce", {b.arg(0)}, F32(pooled.shape),
                     with({{"kind", ir::Attribute("mean")}, {"axes", Ints({2, 3})}, {"keepdims", true}}, stage));
      auto* q = b.Op("tensor.conv2d", {p, b.arg(1), b.arg(2)}, F32(sq.shape), conv);
      auto* r = b.Op("tensor.relu", {q}, F32(sq.shape), stage);
      auto* e = b.Op("tensor.conv2d", {r, b.arg(3), b.arg(4)}, F32(ex.shape), conv);
      auto* s = b.Op("tensor.hard_sigmoid", {e}, F32(ex.shape), {{"alpha", 0.2}, {"beta", 0.5}});
      c.Return({scale ? b.Op("tensor.mul", {b.arg(5), s}, F32(y.shape)) : s});
      c.schedule = "workgroup-staged";
      c.atol = 2e-5;
      if (texels) c.options.texel_eligible = {true, false, false, false, false};
      return c;
    };
  };
  add(squeeze_excite("staged_squeeze_excite_texels", {1, 200, 2, 96}, 50, true, false));
  add(squeeze_excite("staged_squeeze_excite_odd", {1, 70, 3, 5}, 17, false, true));

  // relu(a @ b + bias) as a stage, then @ c: [6, 24] x [24, 10] x [10, 7].
  add([=] {
    Case c("staged_matmul_chain");
    T a = Random({6, 24}, 710), m = Random({24, 10}, 711, -0.5, 0.5), bias = Random({10}, 712),
      n = Random({10, 7}, 713, -0.5, 0.5);
    for (T* t : {&a, &m, &bias, &n}) c.In(*t);
    T h = RefMatmul(a, m);
    for (int64_t i = 0; i < h.size(); ++i) h.v[i] = std::max(h.v[i] + bias.v[i % 10], 0.0);
    c.Out(RefMatmul(h, n));
    auto& b = c.Build();
    auto* mm = b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32({6, 10}));
    auto* add_b = b.Op("tensor.add", {mm, b.arg(2)}, F32({6, 10}));
    auto* act = b.Op("tensor.relu", {add_b}, F32({6, 10}), stage);
    c.Return({b.Op("tensor.matmul", {act, b.arg(3)}, F32({6, 7}))});
    c.schedule = "workgroup-staged";
    c.atol = 2e-5;
    return c;
  });

  // A classifier's tail: mean over (H, W) of [1, 40, 3, 5] (a stage), a
  // reshape to [1, 40] read from it, @ [40, 3] + bias (a stage), softmax.
  add([=] {
    Case c("staged_classifier_tail");
    T x = Random({1, 40, 3, 5}, 730), w = Random({40, 3}, 731), bias = Random({3}, 732);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T pooled = RefReduce(x, "mean", {2, 3}, true);
    T flat{{1, 40}, pooled.v};
    T logits = RefMatmul(flat, w);
    for (int64_t i = 0; i < 3; ++i) logits.v[i] += bias.v[i];
    c.Out(RefSoftmax(logits, 1, false));
    auto& b = c.Build();
    auto* p = b.Op("tensor.reduce", {b.arg(0)}, F32(pooled.shape),
                   with({{"kind", ir::Attribute("mean")}, {"axes", Ints({2, 3})}, {"keepdims", true}}, stage));
    auto* f = b.Op("tensor.reshape", {p}, F32({1, 40}));
    auto* m = b.Op("tensor.matmul", {f, b.arg(1)}, F32({1, 3}));
    auto* a = b.Op("tensor.add", {m, b.arg(2)}, F32({1, 3}), stage);
    c.Return({b.Op("tensor.softmax", {a}, F32({1, 3}), {{"axis", 1}})});
    c.schedule = "workgroup-staged";
    c.atol = 1e-5;
    return c;
  });

  // x / sqrt(sum(x^2) over rows + 1e-3): [9, 64], the stage [9, 1] from the
  // sum of squares read as texels, then every element divided by it.
  add([=] {
    Case c("staged_l2_normalize_texels");
    T x = Random({9, 64}, 720);
    c.In(x);
    T out = x;
    for (int64_t r = 0; r < 9; ++r) {
      double s = 0;
      for (int64_t k = 0; k < 64; ++k) s += x.v[r * 64 + k] * x.v[r * 64 + k];
      const double d = std::sqrt(s + 1e-3);
      for (int64_t k = 0; k < 64; ++k) out.v[r * 64 + k] = x.v[r * 64 + k] / d;
    }
    c.Out(out);
    auto& b = c.Build();
    auto* ss = b.Op("tensor.reduce", {b.arg(0)}, F32({9, 1}),
                    {{"kind", ir::Attribute("sum_square")}, {"axes", Ints({1})}, {"keepdims", true}});
    auto* eps = b.Op("tensor.constant", {}, F32({}), {{"value", ir::MakeDenseF32({}, {1e-3f})}});
    auto* sum = b.Op("tensor.add", {ss, eps}, F32({9, 1}));
    auto* norm = b.Op("tensor.sqrt", {sum}, F32({9, 1}), stage);
    c.Return({b.Op("tensor.div", {b.arg(0), norm}, F32({9, 64}))});
    c.schedule = "workgroup-staged";
    c.atol = 1e-5;
    c.options.texel_eligible = {true};
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_STAGED_TEST_CASES_H_
