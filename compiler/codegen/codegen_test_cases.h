// The dispatches exercised by codegen_test.cc (compile + validate) and
// codegen_vulkan_test.cc (run on the Vulkan device, compare with the naive
// references of codegen_test_util.h). Each case builds one flow.dispatch with
// the IR Builder, its inputs and the expected results.
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_TEST_CASES_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/codegen_test_util.h"

namespace kiln::codegen::testing {

struct Case {
  explicit Case(std::string n) : name(std::move(n)) {}
  std::string name;
  std::vector<T> inputs;
  std::vector<DType> input_dtypes;
  std::vector<T> expected;
  std::vector<DType> result_dtypes;
  // The f16-arithmetic variant's results (CompiledDispatch::spirv_f16),
  // where they differ from `expected`; empty: the same.
  std::vector<T> expected_f16;
  CodegenOptions options;
  double rtol = 1e-5, atol = 1e-6;
  std::string schedule;  // expected prefix of the "// schedule:" comment
  std::shared_ptr<DispatchBuilder> builder;
  ir::Operation* dispatch = nullptr;

  void In(const T& t, DType dt = DType::kF32) {
    inputs.push_back(t);
    input_dtypes.push_back(dt);
  }
  void Out(const T& t, DType dt = DType::kF32) {
    expected.push_back(t);
    result_dtypes.push_back(dt);
  }
  DispatchBuilder& Build() {
    std::vector<ir::Type> in, out;
    for (size_t i = 0; i < inputs.size(); ++i) in.push_back(ir::Type::Tensor(input_dtypes[i], inputs[i].shape));
    for (size_t i = 0; i < expected.size(); ++i)
      out.push_back(ir::Type::Tensor(result_dtypes[i], expected[i].shape));
    builder = std::make_shared<DispatchBuilder>(in, out, "dispatch_" + name);
    return *builder;
  }
  void Return(const std::vector<ir::Value*>& v) { dispatch = builder->Return(v); }
};

inline double Sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace kiln::codegen::testing

#include "compiler/codegen/codegen_prologue_test_cases.h"
#include "compiler/codegen/codegen_reduce_test_cases.h"
#include "compiler/codegen/codegen_dtype_test_cases.h"
#include "compiler/codegen/codegen_conv_tile_test_cases.h"
#include "compiler/codegen/codegen_conv_transpose_test_cases.h"
#include "compiler/codegen/codegen_matmul_tile_test_cases.h"
#include "compiler/codegen/codegen_staged_test_cases.h"

namespace kiln::codegen::testing {

inline std::vector<std::function<Case()>> AllCases() {
  std::vector<std::function<Case()>> cases;
  auto add = [&](std::function<Case()> f) { cases.push_back(std::move(f)); };

  // --- elementwise chain with scalar / per-channel / trailing broadcasts -----
  add([] {
    Case c("ew_chain");
    T x = Random({2, 3, 4, 5}, 1), ch = Random({3, 1, 1}, 2), s = Random({}, 3),
      y = Random({5}, 4, -0.5, 0.5), e = Random({4, 5}, 5, 0.5, 2);
    for (T* t : {&x, &ch, &s, &y, &e}) c.In(*t);
    T a = Map2(x, ch, [](double p, double q) { return float(p * q); });
    T bb = Map2(a, s, [](double p, double q) { return float(p + q); });
    T l = Map1(bb, [](double v) { return v < 0 ? v * 0.1 : v; });
    T h = Map1(l, [](double v) { return std::min(1.0, std::max(0.0, 0.2 * v + 0.5)); });
    T k = Map1(bb, [](double v) { return std::min(1.5, std::max(-1.0, v)); });
    T m = Map2(k, y, [](double p, double q) { return std::max(p, q); });
    T sg = Map1(m, Sigmoid);
    T p = Map2(sg, e, [](double u, double v) { return std::pow(u, v); });
    T d = Map2(p, sg, [](double u, double v) { return u / v; });
    T q = Map1(d, [](double v) { return std::sqrt(v); });
    T lg = Map2(q, h, [](double u, double v) { return std::log(u + v); });
    T r = Map1(lg, [](double v) { return std::max(v, 0.0); });
    c.Out(r);
    auto& b = c.Build();
    auto f = F32({2, 3, 4, 5});
    auto* va = b.Op("tensor.mul", {b.arg(0), b.arg(1)}, f);
    auto* vb = b.Op("tensor.add", {va, b.arg(2)}, f);
    auto* vl = b.Op("tensor.leaky_relu", {vb}, f, {{"alpha", 0.1}});
    auto* vh = b.Op("tensor.hard_sigmoid", {vl}, f, {{"alpha", 0.2}, {"beta", 0.5}});
    auto* vk = b.Op("tensor.clamp", {vb}, f, {{"min", -1.0}, {"max", 1.5}});
    auto* vm = b.Op("tensor.max", {vk, b.arg(3)}, f);
    auto* vs = b.Op("tensor.sigmoid", {vm}, f);
    auto* vp = b.Op("tensor.pow", {vs, b.arg(4)}, f);
    auto* vd = b.Op("tensor.div", {vp, vs}, f);
    auto* vq = b.Op("tensor.sqrt", {vd}, f);
    auto* vqh = b.Op("tensor.add", {vq, vh}, f);
    auto* vg = b.Op("tensor.log", {vqh}, f);
    auto* vr = b.Op("tensor.relu", {vg}, f);
    c.Return({vr});
    c.schedule = "pointwise";
    c.atol = 2e-6;
    return c;
  });

  // --- unary zoo, several results of one shape ---------------------------------
  add([] {
    Case c("unary_zoo");
    T x = Random({3, 37}, 6, -4, 4);
    c.In(x);
    c.Out(Map1(x, [](double v) { return std::tanh(v); }));
    c.Out(Map1(x, [](double v) { return std::erf(v); }));
    c.Out(Map1(x, [](double v) { return v > 0 ? v : 0.7 * std::expm1(v); }));
    c.Out(Map1(x, [](double v) { return std::log1p(std::exp(v)); }));
    c.Out(Map1(x, [](double v) { return v * std::min(1.0, std::max(0.0, v / 6 + 0.5)); }));
    c.Out(Map1(x, [](double v) { return std::nearbyint(v * 2) + std::floor(v) - std::ceil(v); }));
    c.Out(Map1(x, [](double v) { return float(std::sin(v)) * float(std::cos(v)) + 1 / v; }));
    c.Out(Map1(x, [](double v) { return -std::abs(v) + std::exp(v / 4); }));
    auto& b = c.Build();
    auto f = F32({3, 37});
    ir::Value* x0 = b.arg(0);
    auto* r0 = b.Op("tensor.tanh", {x0}, f);
    auto* r1 = b.Op("tensor.erf", {x0}, f);
    auto* r2 = b.Op("tensor.elu", {x0}, f, {{"alpha", 0.7}});
    auto* r3 = b.Op("tensor.softplus", {x0}, f);
    auto* r4 = b.Op("tensor.hard_swish", {x0}, f);
    auto* two = b.Op("tensor.constant", {}, F32({}), {{"value", ir::MakeDenseF32({}, {2.0f})}});
    auto* x2 = b.Op("tensor.mul", {x0, two}, f);
    auto* rd = b.Op("tensor.round", {x2}, f);
    auto* fl = b.Op("tensor.floor", {x0}, f);
    auto* ce = b.Op("tensor.ceil", {x0}, f);
    auto* r5 = b.Op("tensor.sub", {b.Op("tensor.add", {rd, fl}, f), ce}, f);
    auto* sc = b.Op("tensor.mul", {b.Op("tensor.sin", {x0}, f), b.Op("tensor.cos", {x0}, f)}, f);
    auto* r6 = b.Op("tensor.add", {sc, b.Op("tensor.reciprocal", {x0}, f)}, f);
    auto* quarter = b.Op("tensor.constant", {}, F32({}), {{"value", ir::MakeDenseF32({}, {4.0f})}});
    auto* ex = b.Op("tensor.exp", {b.Op("tensor.div", {x0, quarter}, f)}, f);
    auto* r7 = b.Op("tensor.add", {b.Op("tensor.neg", {b.Op("tensor.abs", {x0}, f)}, f), ex}, f);
    c.Return({r0, r1, r2, r3, r4, r5, r6, r7});
    c.atol = 2e-6;
    return c;
  });

  // --- conv2d: group 2, stride/pad/dilation, bias, epilogue --------------------
  add([] {
    Case c("conv_group_epilogue");
    T x = Random({1, 4, 9, 9}, 7), w = Random({6, 2, 3, 3}, 8), bias = Random({6}, 9),
      b2 = Random({6, 1, 1}, 10), m = Random({1, 6, 1, 1}, 11, -0.5, 0.5);
    for (T* t : {&x, &w, &bias, &b2, &m}) c.In(*t);
    T conv = RefConv2d(x, w, &bias, {2, 1}, {1, 2, 0, 1}, {1, 2}, 2);
    T a = Map2(conv, b2, [](double p, double q) { return p + q; });
    T l = Map1(a, [](double v) { return v < 0 ? 0.2 * v : v; });
    c.Out(Map2(l, m, [](double p, double q) { return std::max(p, q); }));
    auto& b = c.Build();
    auto f = F32(conv.shape);
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 1})}, {"pads", Ints({1, 2, 0, 1})},
                     {"dilations", Ints({1, 2})}, {"group", 2}}, "Conv_0");
    auto* ad = b.Op("tensor.add", {cv, b.arg(3)}, f);
    auto* lr = b.Op("tensor.leaky_relu", {ad}, f, {{"alpha", 0.2}});
    c.Return({b.Op("tensor.max", {lr, b.arg(4)}, f)});
    c.schedule = "conv-tiled: one invocation per 1x8";
    return c;
  });

  // --- conv2d + hard-swish style DAG epilogue ---------------------------------
  add([] {
    Case c("conv_hardswish");
    T x = Random({2, 3, 8, 8}, 12), w = Random({4, 3, 3, 3}, 13), sc = Random({4, 1, 1}, 14),
      bi = Random({4, 1, 1}, 15), three = T{{}, {3.0}};
    for (T* t : {&x, &w, &sc, &bi, &three}) c.In(*t);
    T conv = RefConv2d(x, w, nullptr, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
    T a = Map({&conv, &sc, &bi}, [](const std::vector<double>& v) { return v[0] * v[1] + v[2]; });
    c.Out(Map1(a, [](double v) { return v * std::min(6.0, std::max(0.0, v + 3)); }));
    auto& b = c.Build();
    auto f = F32(conv.shape);
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, f,
                    {{"strides", Ints({1, 1})}, {"pads", Ints({1, 1, 1, 1})},
                     {"dilations", Ints({1, 1})}, {"group", 1}});
    auto* m = b.Op("tensor.mul", {cv, b.arg(2)}, f);
    auto* a2 = b.Op("tensor.add", {m, b.arg(3)}, f);
    auto* t3 = b.Op("tensor.add", {a2, b.arg(4)}, f);
    auto* cl = b.Op("tensor.clamp", {t3}, f, {{"min", 0.0}, {"max", 6.0}});
    c.Return({b.Op("tensor.mul", {a2, cl}, f)});
    c.schedule = "conv-tiled: one invocation per 4x8";
    c.atol = 1e-5;
    return c;
  });

  // --- depthwise conv2d ---------------------------------------------------------
  add([] {
    Case c("conv_depthwise");
    T x = Random({1, 8, 7, 7}, 16), w = Random({8, 1, 3, 3}, 17), bias = Random({8}, 18);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    T conv = RefConv2d(x, w, &bias, {2, 2}, {1, 1, 1, 1}, {1, 1}, 8);
    c.Out(Map1(conv, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto f = F32(conv.shape);
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({2, 2})}, {"pads", Ints({1, 1, 1, 1})},
                     {"dilations", Ints({1, 1})}, {"group", 8}});
    c.Return({b.Op("tensor.relu", {cv}, f)});
    return c;
  });

  // --- conv_transpose: group 2, strides with dilations that share a factor
  // (s=3,d=2: taps k = 2t mod 3, step 3; s=6,d=4: gcd 2, step 3), pads,
  // output_padding, bias, epilogue --------------------------------------------
  add([] {
    Case c("conv_transpose_group_epilogue");
    T x = Random({2, 4, 5, 6}, 40), w = Random({4, 3, 3, 4}, 41), bias = Random({6}, 42);
    for (T* t : {&x, &w, &bias}) c.In(*t);
    // H: 3*4 + 1 + (2*2+1) - 1 - 0 = 17; W: 6*5 + 2 + (3*4+1) - 2 - 3 = 40.
    T ct = RefConvTransposeF32(x, w, &bias, {3, 6}, {1, 2}, {2, 4}, 2, {17, 40});
    c.Out(Map1(ct, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto f = F32(ct.shape);
    auto* cv = b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1), b.arg(2)}, f,
                    {{"strides", Ints({3, 6})}, {"pads", Ints({1, 2, 0, 3})}, {"dilations", Ints({2, 4})},
                     {"output_padding", Ints({1, 2})}, {"group", 2}}, "ConvTranspose_0");
    c.Return({b.Op("tensor.relu", {cv}, f)});
    // 2 images x 6 channels x 17 rows x 6 phases x 2 tiles of 4 (7 columns
    // per phase).
    c.schedule = "conv-transpose-tiled: one invocation per 1x4 (channel x column of one stride phase) tile (2448 invocations)";
    // Bit-exact: the f32 reference sums in ORT's order (the one-output
    // gather), which the phase block keeps.
    c.atol = c.rtol = 0;
    return c;
  });

  // --- conv_transpose 1-D, stride 1, dilation 3, no bias -------------------------
  add([] {
    Case c("conv_transpose_1d");
    T x = Random({1, 3, 7}, 43), w = Random({3, 2, 5}, 44);
    c.In(x);
    c.In(w);
    // 1*6 + 0 + (4*3+1) - 2 - 1 = 16.
    T ct = RefConvTranspose(x, w, nullptr, {1}, {2}, {3}, 1, {16});
    c.Out(ct);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1)}, F32(ct.shape),
                   {{"strides", Ints({1})}, {"pads", Ints({2, 1})}, {"dilations", Ints({3})},
                    {"output_padding", Ints({0})}, {"group", 1}})});
    c.schedule = "pointwise";
    return c;
  });

  // --- 1x1 conv (no attributes: defaults) ---------------------------------------
  add([] {
    Case c("conv_1x1");
    T x = Random({1, 16, 5, 5}, 19), w = Random({8, 16, 1, 1}, 20);
    c.In(x);
    c.In(w);
    T conv = RefConv2d(x, w, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    c.Out(conv);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, F32(conv.shape))});
    c.atol = 2e-6;
    return c;
  });

  // --- conv2d whose epilogue broadcasts beyond the conv shape: pointwise ---------
  add([] {
    Case c("conv_pointwise_fallback");
    T x = Random({1, 3, 6, 6}, 64), w = Random({4, 3, 3, 3}, 65), y = Random({2, 4, 4, 4}, 66);
    for (T* t : {&x, &w, &y}) c.In(*t);
    T conv = RefConv2d(x, w, nullptr, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
    c.Out(Map2(conv, y, [](double p, double q) { return p * q; }));
    auto& b = c.Build();
    auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, F32(conv.shape));
    c.Return({b.Op("tensor.mul", {cv, b.arg(2)}, F32({2, 4, 4, 4}))});
    c.schedule = "pointwise";
    c.atol = 2e-6;
    return c;
  });

  // --- 1-D conv (H = 1) with a wide kernel: no input-row cache -----------------
  add([] {
    Case c("conv1d_wide_kernel");
    T x = Random({1, 2, 1, 40}, 67), w = Random({3, 2, 1, 20}, 68);
    c.In(x);
    c.In(w);
    T conv = RefConv2d(x, w, nullptr, {1, 2}, {0, 3, 0, 3}, {1, 1}, 1);
    c.Out(conv);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, F32(conv.shape),
                   {{"strides", Ints({1, 2})}, {"pads", Ints({0, 3, 0, 3})}})});
    c.schedule = "conv-tiled";
    c.atol = 1e-5;
    return c;
  });

  // --- matmul: batched with broadcast batch dims --------------------------------
  add([] {
    Case c("matmul_batched_broadcast");
    T a = Random({2, 1, 3, 5}, 21), bm = Random({4, 5, 6}, 22);
    c.In(a);
    c.In(bm);
    T r = RefMatmul(a, bm);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape))});
    c.schedule = "matmul-tiled: one invocation per 3x4";
    return c;
  });

  // --- matmul with few outputs and a long K: split-K, with epilogue -------------
  add([] {
    Case c("matmul_splitk");
    T a = Random({1, 300}, 69), bm = Random({300, 7}, 70), bias = Random({7}, 71);
    for (T* t : {&a, &bm, &bias}) c.In(*t);
    T r = Map2(RefMatmul(a, bm), bias, [](double p, double q) { return std::max(p + q, 0.0); });
    c.Out(r);
    auto& b = c.Build();
    auto* mm = b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape));
    auto* ad = b.Op("tensor.add", {mm, b.arg(2)}, F32(r.shape));
    c.Return({b.Op("tensor.relu", {ad}, F32(r.shape))});
    c.schedule = "matmul-splitk";
    c.atol = 2e-5;
    return c;
  });

  // --- matmul 2-D + bias epilogue -----------------------------------------------
  add([] {
    Case c("matmul_bias");
    T a = Random({7, 33}, 23), bm = Random({33, 5}, 24), bias = Random({5}, 25);
    for (T* t : {&a, &bm, &bias}) c.In(*t);
    T r = Map2(RefMatmul(a, bm), bias, [](double p, double q) { return p + q; });
    c.Out(r);
    auto& b = c.Build();
    auto* mm = b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32(r.shape));
    c.Return({b.Op("tensor.add", {mm, b.arg(2)}, F32(r.shape))});
    c.schedule = "matmul-tiled: one invocation per 4x4";
    c.atol = 1e-5;
    return c;
  });

  // --- reduce: several axes, keepdims, small extents (pointwise loop) ----------
  auto reduce_case = [&](std::string name, Shape shape, std::string kind, std::vector<int64_t> axes,
                         bool keep, std::string schedule, double lo = -2, double hi = 2) {
    add([=] {
      Case c(name);
      T x = Random(shape, 26 + static_cast<uint32_t>(axes.size()), lo, hi);
      c.In(x);
      T r = RefReduce(x, kind, axes.empty() ? [&] {
        std::vector<int64_t> all;
        for (size_t d = 0; d < shape.size(); ++d) all.push_back(static_cast<int64_t>(d));
        return all;
      }() : axes, keep);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.reduce", {b.arg(0)}, F32(r.shape),
                     {{"kind", ir::Attribute(kind)}, {"axes", Ints(axes)}, {"keepdims", keep}})});
      c.schedule = schedule;
      c.atol = 1e-5 * std::sqrt(static_cast<double>(x.size()));
      return c;
    });
  };
  reduce_case("reduce_mean_axes13", {2, 3, 4, 5}, "mean", {1, 3}, true, "pointwise");
  reduce_case("reduce_sum_axis0_nokeep", {3, 4, 5}, "sum", {0}, false, "pointwise");
  reduce_case("reduce_max_all", {3, 50, 40}, "max", {0, 1, 2}, false, "reduce-group");
  reduce_case("reduce_min_all_empty_axes", {6, 7}, "min", {}, true, "pointwise");
  reduce_case("reduce_sum_group", {4, 3, 300}, "sum", {2}, false, "reduce-group");
  reduce_case("reduce_mean_group_middle", {3, 200, 2}, "mean", {1}, true, "reduce-group");
  reduce_case("reduce_lse_group", {5, 200}, "log_sum_exp", {1}, false, "reduce-group");
  reduce_case("reduce_lse_small", {5, 7}, "log_sum_exp", {0}, true, "pointwise");
  reduce_case("reduce_l2", {4, 9}, "l2", {1}, false, "pointwise");
  reduce_case("reduce_sum_square", {4, 9}, "sum_square", {0, 1}, true, "pointwise");
  reduce_case("reduce_prod", {4, 6}, "prod", {1}, false, "pointwise", 0.5, 1.5);

  // --- reduce-group with an epilogue -------------------------------------------
  add([] {
    Case c("reduce_group_epilogue");
    T x = Random({2, 512}, 40), s = T{{}, {0.25}};
    c.In(x);
    c.In(s);
    T r = Map2(RefReduce(x, "max", {1}, true), s, [](double p, double q) { return p * q; });
    c.Out(r);
    auto& b = c.Build();
    auto* rd = b.Op("tensor.reduce", {b.arg(0)}, F32({2, 1}),
                    {{"kind", ir::Attribute("max")}, {"axes", Ints({1})}, {"keepdims", true}});
    c.Return({b.Op("tensor.mul", {rd, b.arg(1)}, F32({2, 1}))});
    c.schedule = "reduce-group";
    return c;
  });

  // --- integer reduce (i64) -----------------------------------------------------
  add([] {
    Case c("reduce_sum_i64");
    T x{{3, 4}, {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, 1000000000000}};
    c.In(x, DType::kI64);
    T r = RefReduce(x, "sum", {1}, false);
    c.Out(r, DType::kI64);
    auto& b = c.Build();
    c.Return({b.Op("tensor.reduce", {b.arg(0)}, I64({3}),
                   {{"kind", ir::Attribute("sum")}, {"axes", Ints({1})}, {"keepdims", false}})});
    c.rtol = 0;
    c.atol = 0;
    return c;
  });

  // --- cumsum (f32, i32): every direction along an inner and an outer axis --------
  auto cumsum_case = [&](std::string name, int64_t axis, bool excl, bool rev, DType dt) {
    add([=] {
      Case c(name);
      const Shape xs = {3, 5};
      T x = dt == DType::kF32 ? Random(xs, 61) : T{xs, {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, 12, -13, 14, 15}};
      c.In(x, dt);
      T r{xs, std::vector<double>(15, 0.0)};
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          const int64_t pos = axis == 0 ? i : j, n = axis == 0 ? 3 : 5;
          double acc = 0;
          for (int64_t t = 0; t < n; ++t) {
            bool in = rev ? (excl ? t > pos : t >= pos) : (excl ? t < pos : t <= pos);
            if (in) acc += x.v[static_cast<size_t>(axis == 0 ? t * 5 + j : i * 5 + t)];
          }
          r.v[static_cast<size_t>(i * 5 + j)] = acc;
        }
      c.Out(r, dt);
      auto& b = c.Build();
      c.Return({b.Op("tensor.cumsum", {b.arg(0)}, ir::Type::Tensor(dt, xs),
                     {{"axis", axis}, {"exclusive", excl}, {"reverse", rev}})});
      return c;
    });
  };
  cumsum_case("cumsum_axis1", 1, false, false, DType::kF32);
  cumsum_case("cumsum_axis0_exclusive", 0, true, false, DType::kF32);
  cumsum_case("cumsum_axis1_reverse", 1, false, true, DType::kF32);
  cumsum_case("cumsum_axis0_reverse_exclusive_i32", 0, true, true, DType::kI32);

  // --- arg_reduce: first and last index of the extreme, ties included ----------
  auto arg_case = [&](std::string name, std::string kind, int64_t axis, bool keep, bool last) {
    add([=] {
      Case c(name);
      // Ties on purpose: 2 appears twice in row 0, -1 twice in column 2.
      T x{{3, 4}, {2, 0, 2, -5, 7, 7, -1, 3, 1, 9, -1, 9}};
      c.In(x);
      Shape os = axis == 0 ? Shape{4} : Shape{3};
      if (keep) os = axis == 0 ? Shape{1, 4} : Shape{3, 1};
      T r{os, {}};
      const int64_t outer = axis == 0 ? 4 : 3, n = axis == 0 ? 3 : 4;
      for (int64_t o = 0; o < outer; ++o) {
        int64_t best = 0;
        for (int64_t t = 1; t < n; ++t) {
          double v = x.v[static_cast<size_t>(axis == 0 ? t * 4 + o : o * 4 + t)];
          double bv = x.v[static_cast<size_t>(axis == 0 ? best * 4 + o : o * 4 + best)];
          bool better = kind == "max" ? (v > bv || (last && v == bv)) : (v < bv || (last && v == bv));
          if (better) best = t;
        }
        r.v.push_back(static_cast<double>(best));
      }
      c.Out(r, DType::kI64);
      auto& b = c.Build();
      c.Return({b.Op("tensor.arg_reduce", {b.arg(0)}, I64(os),
                     {{"kind", ir::Attribute(kind)}, {"axis", axis}, {"keepdims", keep},
                      {"select_last_index", last}})});
      c.rtol = 0;
      c.atol = 0;
      return c;
    });
  };
  arg_case("argmax_axis1_first", "max", 1, false, false);
  arg_case("argmax_axis1_last_keep", "max", 1, true, true);
  arg_case("argmin_axis0_first_keep", "min", 0, true, false);
  arg_case("argmin_axis0_last", "min", 0, false, true);

  // --- pooling ------------------------------------------------------------------
  auto pool_case = [&](std::string name, Shape xs, bool is_max, Shape k, Shape st, Shape pads,
                       Shape dil, bool cip, Shape out_hw) {
    add([=] {
      Case c(name);
      T x = Random(xs, 41);
      c.In(x);
      T r = RefPool(x, is_max, k, st, pads, dil, cip, out_hw);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.pool2d", {b.arg(0)}, F32(r.shape),
                     {{"kind", ir::Attribute(is_max ? "max" : "avg")}, {"kernel", Ints(k)},
                      {"strides", Ints(st)}, {"pads", Ints(pads)}, {"dilations", Ints(dil)},
                      {"count_include_pad", cip}})});
      return c;
    });
  };
  pool_case("maxpool_pad", {1, 3, 7, 7}, true, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, {4, 4});
  pool_case("maxpool_dilated", {1, 2, 9, 9}, true, {2, 3}, {1, 2}, {0, 1, 1, 0}, {2, 2}, false, {8, 4});
  pool_case("avgpool_include_pad", {1, 3, 7, 7}, false, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, {4, 4});
  pool_case("avgpool_exclude_pad", {1, 3, 7, 7}, false, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false, {4, 4});
  // ceil_mode: the last window runs past the (unpadded) input.
  pool_case("avgpool_ceil_include_pad", {1, 2, 6, 6}, false, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true, {3, 3});
  pool_case("avgpool_ceil_exclude_pad", {1, 2, 6, 6}, false, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false, {3, 3});

  // --- softmax ------------------------------------------------------------------
  auto softmax_case = [&](std::string name, Shape xs, int64_t axis, bool log, std::string sched) {
    add([=] {
      Case c(name);
      T x = Random(xs, 42, -5, 5);
      c.In(x);
      T r = RefSoftmax(x, axis, log);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.softmax", {b.arg(0)}, F32(xs), {{"axis", axis}, {"log", log}})});
      c.schedule = sched;
      c.atol = 1e-6;
      return c;
    });
  };
  softmax_case("softmax_rows", {3, 10}, 1, false, "softmax-rows: one invocation");
  softmax_case("softmax_inner_axis", {2, 5, 3}, 1, false, "softmax-rows: one invocation");
  softmax_case("softmax_group", {2, 300}, 1, false, "softmax-rows: 32 lanes");
  softmax_case("logsoftmax_group", {4, 200}, 1, true, "softmax-rows: 16 lanes");
  softmax_case("logsoftmax_small", {4, 6}, 0, true, "softmax-rows: one invocation");
  add([] {
    Case c("softmax_epilogue_other_shape");  // result shape != softmax shape: pointwise
    T x = Random({2, 6}, 43), y = Random({3, 2, 6}, 44);
    c.In(x);
    c.In(y);
    T sm = RefSoftmax(x, 1, false);
    c.Out(Map2(sm, y, [](double p, double q) { return p * q; }));
    auto& b = c.Build();
    auto* s = b.Op("tensor.softmax", {b.arg(0)}, F32({2, 6}), {{"axis", 1}});
    c.Return({b.Op("tensor.mul", {s, b.arg(1)}, F32({3, 2, 6}))});
    c.schedule = "pointwise";
    return c;
  });
  add([] {
    Case c("softmax_group_epilogue");
    T x = Random({3, 130}, 45), sc = Random({3, 1}, 46);
    c.In(x);
    c.In(sc);
    T sm = RefSoftmax(x, 1, false);
    c.Out(Map2(sm, sc, [](double p, double q) { return p * q; }));
    auto& b = c.Build();
    auto* s = b.Op("tensor.softmax", {b.arg(0)}, F32({3, 130}), {{"axis", 1}});
    c.Return({b.Op("tensor.mul", {s, b.arg(1)}, F32({3, 130}))});
    c.schedule = "softmax-rows: 16 lanes";
    return c;
  });

  // --- data movement ------------------------------------------------------------
  add([] {
    Case c("transpose_epilogue");
    T x = Random({2, 3, 4}, 47), y = Random({4, 1, 3}, 48);
    c.In(x);
    c.In(y);
    T t = RefTranspose(x, {2, 0, 1});
    c.Out(Map2(t, y, [](double p, double q) { return p + q; }));
    auto& b = c.Build();
    auto* tr = b.Op("tensor.transpose", {b.arg(0)}, F32(t.shape), {{"perm", Ints({2, 0, 1})}});
    c.Return({b.Op("tensor.add", {tr, b.arg(1)}, F32(t.shape))});
    return c;
  });
  add([] {
    Case c("slice_negative_stride");
    T x = Random({6, 8}, 49);
    c.In(x);
    T r = RefSlice(x, {5, 1}, {-2, 3}, {3, 3});
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.slice", {b.arg(0)}, F32({3, 3}),
                   {{"starts", Ints({5, 1})}, {"strides", Ints({-2, 3})}})});
    return c;
  });
  add([] {
    Case c("concat_axis1");
    T a = Random({2, 3, 4}, 50), bb = Random({2, 1, 4}, 51), cc = Random({2, 2, 4}, 52);
    for (T* t : {&a, &bb, &cc}) c.In(*t);
    T r = RefConcat({&a, &bb, &cc}, 1);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.concat", {b.arg(0), b.arg(1), b.arg(2)}, F32(r.shape), {{"axis", 1}})});
    return c;
  });
  auto pad_case = [&](std::string name, Shape xs, Shape pads, std::string mode, double value) {
    add([=] {
      Case c(name);
      T x = Random(xs, 53);
      c.In(x);
      T r = RefPad(x, pads, mode, value);
      c.Out(r);
      auto& b = c.Build();
      c.Return({b.Op("tensor.pad", {b.arg(0)}, F32(r.shape),
                     {{"pads", Ints(pads)}, {"mode", ir::Attribute(mode)}, {"value", value}})});
      return c;
    });
  };
  pad_case("pad_constant", {2, 3}, {1, 2, 0, 1}, "constant", 0.5);
  pad_case("pad_constant_crop", {1, 2, 5, 4}, {0, 0, -1, 2, 0, 1, 1, -1}, "constant", -1.0);
  pad_case("pad_reflect", {3, 4}, {2, 1, 1, 3}, "reflect", 0);
  pad_case("pad_edge", {3, 4}, {2, 1, 1, 3}, "edge", 0);
  add([] {
    Case c("gather_i64_axis0");
    T data = Random({5, 4}, 54), ind{{2, 3}, {0, 4, -1, 2, -5, 1}};
    c.In(data);
    c.In(ind, DType::kI64);
    T r = RefGather(data, ind, 0);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.gather", {b.arg(0), b.arg(1)}, F32(r.shape), {{"axis", 0}})});
    return c;
  });
  add([] {
    Case c("gather_i32_axis1");
    T data = Random({2, 6, 3}, 55), ind{{4}, {5, 0, -2, 3}};
    c.In(data);
    c.In(ind, DType::kI32);
    T r = RefGather(data, ind, 1);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.gather", {b.arg(0), b.arg(1)}, F32(r.shape), {{"axis", 1}})});
    return c;
  });
  // tensor.resize: arbitrary per-axis taps (indices, weights, -1 rows that
  // take extrapolation_value), checked against a naive weighted gather.
  auto resize_case = [&](const std::string& name, Shape xs, Shape ys, Shape taps, bool weighted,
                         DType dt, uint32_t seed) {
    add([=] {
      Case c(name);
      T x = Random(xs, seed, -4, 4);
      if (dt != DType::kF32)
        for (double& v : x.v) v = std::round(v * 1000);
      const double ext = -7.5;
      std::vector<int64_t> off(xs.size(), 0);
      int64_t total = 0;
      for (size_t d = 0; d < xs.size(); ++d) off[d] = total, total += taps[d] * ys[d];
      T index{{total}, {}}, weight = Random({total}, seed + 1, -1, 1);
      T pick = Random({total}, seed + 2, 0, 1);
      for (size_t d = 0; d < xs.size(); ++d)
        for (int64_t o = 0; o < ys[d] * taps[d]; ++o)
          index.v.push_back(std::min<double>(std::floor(pick.v[off[d] + o] * xs[d]), xs[d] - 1));
      // Output coordinate 1 of the first resized axis is extrapolated.
      for (size_t d = 0; d < xs.size(); ++d)
        if (taps[d] > 0) {
          for (int64_t t = 0; t < taps[d]; ++t) index.v[off[d] + taps[d] + t] = -1;
          break;
        }
      T y{ys, std::vector<double>(Numel(ys), 0)};
      Shape xst = StridesOf(xs);
      for (int64_t e = 0; e < Numel(ys); ++e) {
        Shape o(ys.size());
        for (int64_t d = static_cast<int64_t>(ys.size()) - 1, r = e; d >= 0; --d) o[d] = r % ys[d], r /= ys[d];
        bool outside = false;
        for (size_t d = 0; d < ys.size(); ++d)
          outside |= taps[d] > 0 && index.v[off[d] + o[d] * taps[d]] < 0;
        if (outside) { y.v[e] = dt == DType::kF32 ? ext : std::trunc(ext); continue; }
        Shape k(ys.size(), 0);
        double acc = 0;
        for (bool more = true; more;) {
          double w = 1;
          int64_t src = 0;
          for (size_t d = 0; d < ys.size(); ++d) {
            if (taps[d] == 0) { src += o[d] * xst[d]; continue; }
            int64_t at = off[d] + o[d] * taps[d] + k[d];
            src += static_cast<int64_t>(index.v[at]) * xst[d];
            if (weighted) w *= weight.v[at];
          }
          acc += w * x.v[src];
          more = false;
          for (size_t d = 0; d < ys.size() && !more; ++d)
            if (taps[d] > 0) { if (++k[d] < taps[d]) more = true; else k[d] = 0; }
        }
        y.v[e] = acc;
      }
      c.In(x, dt);
      c.In(index, DType::kI32);
      if (weighted) c.In(weight);
      c.Out(y, dt);
      auto& b = c.Build();
      std::vector<ir::Value*> ops = {b.arg(0), b.arg(1)};
      if (weighted) ops.push_back(b.arg(2));
      c.Return({b.Op("tensor.resize", ops, ir::Type::Tensor(dt, ys),
                     {{"taps", Ints(taps)}, {"extrapolation_value", ext}})});
      c.atol = 1e-5;
      return c;
    });
  };
  resize_case("resize_bilinear_like", {2, 3, 4, 5}, {2, 3, 6, 3}, {0, 0, 2, 2}, true, DType::kF32, 57);
  resize_case("resize_cubic_like_3d", {3, 5, 6}, {4, 2, 7}, {4, 1, 4}, true, DType::kF32, 60);
  resize_case("resize_wide_taps", {2, 9}, {2, 3}, {0, 20}, true, DType::kF32, 63);
  resize_case("resize_gather_i32", {3, 4, 2}, {5, 4, 3}, {1, 0, 1}, false, DType::kI32, 66);
  add([] {
    Case c("expand");
    T x = Random({3, 1}, 56);
    c.In(x);
    T r = RefExpand(x, {2, 3, 4});
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.expand", {b.arg(0)}, F32({2, 3, 4}))});
    return c;
  });

  // --- bool / u8 / multi-result -------------------------------------------------
  add([] {
    Case c("compare_select_bool");
    T x = Random({4, 5}, 57), y = Random({5}, 58);
    T cond{{4, 5}, {}};
    for (int i = 0; i < 20; ++i) cond.v.push_back((i * 7) % 3 == 0);
    c.In(x);
    c.In(y);
    c.In(cond, DType::kBool);
    T gt = Map2(x, y, [](double p, double q) { return p > q ? 1.0 : 0.0; });
    T sel = Map({&cond, &x, &y}, [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; });
    T nb = Map2(gt, cond, [](double p, double q) { return (p != 0) != (q != 0) ? 1.0 : 0.0; });
    T u8 = Map1(x, [](double v) { return static_cast<double>(static_cast<uint32_t>(std::abs(v) * 50)); });
    c.Out(gt, DType::kBool);
    c.Out(sel);
    c.Out(nb, DType::kBool);
    c.Out(u8, DType::kU8);
    auto& b = c.Build();
    auto* g = b.Op("tensor.greater", {b.arg(0), b.arg(1)}, Bool({4, 5}));
    auto* s = b.Op("tensor.select", {b.arg(2), b.arg(0), b.arg(1)}, F32({4, 5}));
    auto* xo = b.Op("tensor.xor", {g, b.arg(2)}, Bool({4, 5}));
    auto* fifty = b.Op("tensor.constant", {}, F32({}), {{"value", ir::MakeDenseF32({}, {50.0f})}});
    auto* sc = b.Op("tensor.mul", {b.Op("tensor.abs", {b.arg(0)}, F32({4, 5})), fifty}, F32({4, 5}));
    auto* u = b.Op("tensor.cast", {sc}, U8({4, 5}));
    c.Return({g, s, xo, u});
    return c;
  });
  add([] {
    Case c("multi_result_shapes");
    T x = Random({4, 5}, 59), y = Random({5}, 60);
    c.In(x);
    c.In(y);
    c.Out(Map2(x, y, [](double p, double q) { return p - q; }));
    c.Out(Map1(y, [](double v) { return std::max(v, 0.0); }));
    auto& b = c.Build();
    auto* s = b.Op("tensor.sub", {b.arg(0), b.arg(1)}, F32({4, 5}));
    auto* r = b.Op("tensor.relu", {b.arg(1)}, F32({5}));
    c.Return({s, r});
    return c;
  });
  add([] {
    Case c("int_arith_mod");
    T a{{6}, {7, -7, 7, -7, 9, 0}}, m{{6}, {3, 3, -3, -3, 4, 5}};
    c.In(a, DType::kI32);
    c.In(m, DType::kI32);
    c.Out(T{{6}, {1, 2, -2, -1, 1, 0}}, DType::kI32);        // mod (fmod=0): sign of divisor
    c.Out(T{{6}, {1, -1, 1, -1, 1, 0}}, DType::kI32);        // fmod=1
    c.Out(T{{6}, {2, -2, -2, 2, 2, 0}}, DType::kI64);        // div (trunc) cast to i64
    auto& b = c.Build();
    auto* md = b.Op("tensor.mod", {b.arg(0), b.arg(1)}, I32({6}));
    auto* fm = b.Op("tensor.mod", {b.arg(0), b.arg(1)}, I32({6}), {{"fmod", 1}});
    auto* dv = b.Op("tensor.cast", {b.Op("tensor.div", {b.arg(0), b.arg(1)}, I32({6}))}, I64({6}));
    c.Return({md, fm, dv});
    c.rtol = 0;
    c.atol = 0;
    return c;
  });

  // --- reshape and constants inside a dispatch ---------------------------------
  add([] {
    Case c("reshape_const_inside");
    T x = Random({6, 4}, 61), y = Random({2, 3, 4}, 62);
    c.In(x);
    c.In(y);
    std::vector<float> k = {1, -2, 3, 0.5f};
    T kt{{4}, {1, -2, 3, 0.5}};
    T xr{{2, 3, 4}, x.v};
    c.Out(Map({&xr, &y, &kt}, [](const std::vector<double>& v) { return (v[0] + v[1]) * v[2]; }));
    auto& b = c.Build();
    auto* r = b.Op("tensor.reshape", {b.arg(0)}, F32({2, 3, 4}));
    auto* kc = b.Op("tensor.constant", {}, F32({4}), {{"value", ir::MakeDenseF32({4}, k)}});
    auto* s = b.Op("tensor.add", {r, b.arg(1)}, F32({2, 3, 4}));
    c.Return({b.Op("tensor.mul", {s, kc}, F32({2, 3, 4}))});
    return c;
  });

  // --- grid folding into y --------------------------------------------------------
  add([] {
    Case c("grid_fold");
    T x = Random({100003}, 63);
    c.In(x);
    c.Out(Map1(x, [](double v) { return v * 2; }));
    auto& b = c.Build();
    c.Return({b.Op("tensor.add", {b.arg(0), b.arg(0)}, F32({100003}))});
    c.options.max_workgroup_count = 100;
    return c;
  });
  // --- f32 dot products accumulate with a multiply-add rounded once ----------
  // (GLSL fma(); exact on lavapipe through the runtime,
  // hal/vulkan/exact_fma_splice.h). The reference is the sequential
  // fused multiply-add chain of CPU GEMM kernels (std::fma in float, k in
  // order), and results must equal it bit for bit; a product and a sum rounded
  // separately (what lavapipe makes of GLSL fma()) misses by some ulps.
  // Row 0 of the matmul is built so that the two differ by far: its dot
  // product is -(1 + 2^-11) * 1 + (1 + 2^-12)^2 = 2^-24 exactly, which a
  // rounded product (1 + 2^-11) turns into 0.
  add([] {
    Case c("matmul_exact_fma");
    const int64_t M = 4, K = 255, N = 8;  // K < kSplitKMinDepth: matmul-tiled, k in order
    T a = Random({M, K}, 91), bm = Random({K, N}, 92);
    for (int64_t k = 0; k < K; ++k) a.v[k] = 0.0;
    a.v[0] = -(1.0 + std::ldexp(1.0, -11));
    a.v[1] = 1.0 + std::ldexp(1.0, -12);
    bm.v[0] = 1.0;
    bm.v[N] = 1.0 + std::ldexp(1.0, -12);
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
    c.schedule = "matmul-tiled";
    c.rtol = 0;
    c.atol = 0;
    return c;
  });
  // The STFT-like conv of silero_vad (one input channel, a 256-tap window at
  // stride 64): conv-tiled, bit-exact against the fused chain over kw.
  add([] {
    Case c("conv_exact_fma");
    const int64_t O = 6, KW = 256, S = 64, W = 704, OW = (W - KW) / S + 1;
    T x = Random({1, 1, 1, W}, 93), w = Random({O, 1, 1, KW}, 94);
    T r{{1, O, 1, OW}, {}};
    for (int64_t o = 0; o < O; ++o)
      for (int64_t ow = 0; ow < OW; ++ow) {
        float acc = 0.0f;
        for (int64_t k = 0; k < KW; ++k)
          acc = std::fma(static_cast<float>(x.v[ow * S + k]), static_cast<float>(w.v[o * KW + k]), acc);
        r.v.push_back(acc);
      }
    c.In(x);
    c.In(w);
    c.Out(r);
    auto& b = c.Build();
    c.Return({b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, F32(r.shape), {{"strides", Ints({1, S})}})});
    c.schedule = "conv-tiled";
    c.rtol = 0;
    c.atol = 0;
    return c;
  });
  // Hard cases for an emulation: every second term of a K = 2 dot product
  // (acc = fma(c, 1, 0) = c, then fma(alpha, beta, c)) has its exact value at
  // or next to a midpoint between two floats, where rounding the sum in a
  // wider format first and then to f32 (double rounding) can go wrong. Rows
  // 0..127: c is the f32 nearest to m - alpha * beta0, m a midpoint next to
  // alpha * beta0; rows 128..255: alpha * beta1 is often a midpoint itself
  // (odd operands of 12 and 13 significant bits) and c is tiny. The
  // reference is std::fma in float; MidpointCasesDefeatDoubleRounding
  // (codegen_test.cc) checks that RN32(RN64(alpha * beta + c)) misses some.
  add([] {
    Case c("matmul_exact_fma_midpoints");
    const int64_t M = 256, K = 2, N = 2;
    T a{{M, K}, {}}, bm{{K, N}, {1.0, 1.0, 0.0, 0.0}};
    MidpointFmaCases(M / 2, &a, &bm);
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
    c.schedule = "matmul-tiled";
    // One ulp: the runtime's default body on lavapipe (f64, no midpoint fix)
    // misses some of these by one ulp; codegen_vulkan_test's
    // ExactFmaSpliceTest.MidpointCasesOnTheDevice checks each body bit for bit.
    c.rtol = std::ldexp(1.0, -23);
    c.atol = 0;
    return c;
  });

  AddReduceCases(add);
  AddPrologueCases(add);
  AddDTypeCases(add);
  AddConvTileCases(add);
  AddMatmulTileCases(add);
  AddConvTransposeTileCases(add);
  AddStagedCases(add);
  return cases;
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_TEST_CASES_H_
