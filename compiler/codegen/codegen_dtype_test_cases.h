// Cases for the storage dtypes whose compute type differs (generator.h
// ComputeType): f16 and bf16 (stored 16-bit, computed in f32, rounded once at
// the store or at an in-region cast), i16/u16 (widened to 32 bits), u32, u64
// and f64 (64-bit compute), and tensor.shift_left/right (ONNX BitShift)
// wrapping to the dtype's width. Expected values are derived by hand (see
// each comment); the Vulkan test compares them exactly (atol = rtol = 0)
// except where noted. Included by codegen_test_cases.h (AllCases).
#ifndef KILN_COMPILER_CODEGEN_CODEGEN_DTYPE_TEST_CASES_H_
#define KILN_COMPILER_CODEGEN_CODEGEN_DTYPE_TEST_CASES_H_

#include <string>
#include <vector>

namespace kiln::codegen::testing {

template <typename Add>
void AddDTypeCases(Add& add) {
  auto type = [](DType dt, Shape s) { return ir::Type::Tensor(dt, std::move(s)); };
  // f16 x * y + x, rounded once to f16 at the store. Every product and sum is
  // exact in f32; the f16 results (11 significant bits):
  //   1.5 * 2 + 1.5 = 4.5; 1000 * 1 + 1000 = 2000; 0.5 * 0.25 + 0.5 = 0.625;
  //   683 * 2 + 683 = 2049, halfway between the f16s 2048 and 2050 -> 2048
  //   (even); 3 * -2 + 3 = -3; 65504 * 1 + 65504 is past the largest f16 -> inf.
  add([=] {
    Case c("f16_mul_add");
    T x{{6}, {1.5, 1000, 0.5, 683, 3, 65504}};
    T y{{6}, {2, 1, 0.25, 2, -2, 1}};
    c.In(x, DType::kF16);
    c.In(y, DType::kF16);
    c.Out(T{{6}, {4.5, 2000, 0.625, 2048, -3, INFINITY}}, DType::kF16);
    auto& b = c.Build();
    auto* m = b.Op("tensor.mul", {b.arg(0), b.arg(1)}, type(DType::kF16, {6}));
    auto* s = b.Op("tensor.add", {m, b.arg(0)}, type(DType::kF16, {6}));
    c.Return({s});
    c.atol = c.rtol = 0;
    return c;
  });
  // f16 (a + b) - a: the f16-arithmetic variant rounds after each op, the
  // f32 one only at the store (compiler/codegen/f16_arithmetic.h). (llvmpipe
  // evaluates float16_t at f32 precision: there both give `expected`.)
  //   2048 + 1 = 2049, halfway between the f16s 2048 and 2050 -> 2048 (even),
  //     - 2048 = 0; in f32: 1.
  //   1 + 2048 -> 2048, - 1 = 2047 (exact: f16 spacing is 1 below 2048); in
  //     f32: 2048.
  //   65504 + 65504 is past the largest f16 -> inf, - 65504 = inf; in f32:
  //     65504.
  //   0.5 + 0.25 - 0.5 = 0.25 in both (exact).
  add([=] {
    Case c("f16_add_sub_rounds_per_op");
    T a{{4}, {2048, 1, 65504, 0.5}};
    T b{{4}, {1, 2048, 65504, 0.25}};
    c.In(a, DType::kF16);
    c.In(b, DType::kF16);
    c.Out(T{{4}, {1, 2048, 65504, 0.25}}, DType::kF16);
    c.expected_f16 = {T{{4}, {0, 2047, INFINITY, 0.25}}};
    auto& bld = c.Build();
    auto* s = bld.Op("tensor.add", {bld.arg(0), bld.arg(1)}, type(DType::kF16, {4}));
    auto* d = bld.Op("tensor.sub", {s, bld.arg(0)}, type(DType::kF16, {4}));
    c.Return({d});
    c.atol = c.rtol = 0;
    return c;
  });
  // f32 -> f16 inside the region -> f32 out: the cast rounds as f16 storage
  // would. 0.1 -> 0.0999755859375 (the nearest f16, 1638 / 2^14);
  // 1/3 -> 0.333251953125 (2730 / 2^13); 70000 -> inf; 2^-25 (half the
  // smallest subnormal 2^-24) ties to even -> 0; 3 * 2^-25 -> 2^-23.
  add([=] {
    Case c("f16_cast_roundtrip_in_region");
    T x{{5}, {0.1f, 1.0f / 3.0f, 70000, 0x1p-25, 3 * 0x1p-25}};
    c.In(x);
    c.Out(T{{5}, {0.0999755859375, 0.333251953125, INFINITY, 0, 0x1p-23}});
    auto& b = c.Build();
    auto* h = b.Op("tensor.cast", {b.arg(0)}, type(DType::kF16, {5}));
    auto* f = b.Op("tensor.cast", {h}, F32({5}));
    c.Return({f});
    c.atol = c.rtol = 0;
    return c;
  });
  // bf16: f32 in, bf16 out (top 16 bits, round to nearest even):
  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> 1 (even); 1 + 3 * 2^-8 ->
  // 1 + 2^-6 (tie, to even); 3.14159274 -> 3.140625; -0.1 -> -0.10009765625.
  add([=] {
    Case c("bf16_store_rounds_to_nearest_even");
    T x{{4}, {1 + 0x1p-8, 1 + 3 * 0x1p-8, 3.14159274, -0.1f}};
    c.In(x);
    c.Out(T{{4}, {1, 1 + 0x1p-6, 3.140625, -0.10009765625}}, DType::kBF16);
    auto& b = c.Build();
    c.Return({b.Op("tensor.cast", {b.arg(0)}, type(DType::kBF16, {4}))});
    c.atol = c.rtol = 0;
    return c;
  });
  // bf16 in, f32 arithmetic out: 1.5 + 2.5 = 4, 256 + 1 = 257 (exact in f32).
  add([=] {
    Case c("bf16_load_add_f32");
    c.In(T{{2}, {1.5, 256}}, DType::kBF16);
    c.In(T{{2}, {2.5, 1}});
    c.Out(T{{2}, {4, 257}});
    auto& b = c.Build();
    auto* xf = b.Op("tensor.cast", {b.arg(0)}, F32({2}));
    c.Return({b.Op("tensor.add", {xf, b.arg(1)}, F32({2}))});
    c.atol = c.rtol = 0;
    return c;
  });
  // i16 max and wrap: max(-300, 7) = 7, max(32767, 1) = 32767; 32767 + 1 wraps
  // to -32768 at the store.
  add([=] {
    Case c("i16_max_add_wraps");
    c.In(T{{3}, {-300, 32767, -5}}, DType::kI16);
    c.In(T{{3}, {7, 1, -6}}, DType::kI16);
    c.Out(T{{3}, {7, 32767, -5}}, DType::kI16);
    c.Out(T{{3}, {-293, -32768, -11}}, DType::kI16);
    auto& b = c.Build();
    auto* mx = b.Op("tensor.max", {b.arg(0), b.arg(1)}, type(DType::kI16, {3}));
    auto* ad = b.Op("tensor.add", {b.arg(0), b.arg(1)}, type(DType::kI16, {3}));
    c.Return({mx, ad});
    c.atol = c.rtol = 0;
    return c;
  });
  // i8 and u8 max pooling in the integer compute type (ONNX MaxPool on int8 /
  // uint8), kernel 2x2, stride 2, pads 1 at the top and left. x (3x3) =
  //   -5    3 -128
  //  127   -1    0
  //    2   -7   -3
  // windows (rows, cols): (-1..0, -1..0) -> x00 = -5 (the padding is no
  // value, not 0); (-1..0, 1..2) -> max(3, -128) = 3; (1..2, -1..0) -> 127;
  // (1..2, 1..2) -> max(-1, 0, -7, -3) = 0. u8: the same x + 128.
  for (DType dt : {DType::kI8, DType::kU8}) {
    add([=] {
      const double o = dt == DType::kU8 ? 128 : 0;
      Case c(dt == DType::kU8 ? "u8_maxpool_padded" : "i8_maxpool_padded");
      c.In(T{{1, 1, 3, 3}, {-5 + o, 3 + o, -128 + o, 127 + o, -1 + o, 0 + o, 2 + o, -7 + o, -3 + o}}, dt);
      c.Out(T{{1, 1, 2, 2}, {-5 + o, 3 + o, 127 + o, 0 + o}}, dt);
      auto& b = c.Build();
      c.Return({b.Op("tensor.pool2d", {b.arg(0)}, type(dt, {1, 1, 2, 2}),
                     {{"kind", ir::Attribute("max")}, {"kernel", Ints({2, 2})}, {"strides", Ints({2, 2})},
                      {"pads", Ints({1, 1, 0, 0})}, {"dilations", Ints({1, 1})}})});
      c.atol = c.rtol = 0;
      return c;
    });
  }
  // u16 / u32: unsigned compare and modulo above the signed range:
  // min(65535, 2) = 2; 4000000000 mod 7 = 4000000000 - 7 * 571428571 = 3.
  add([=] {
    Case c("u16_min_u32_mod");
    c.In(T{{2}, {65535, 9}}, DType::kU16);
    c.In(T{{2}, {2, 40000}}, DType::kU16);
    c.In(T{{2}, {4000000000.0, 4294967295.0}}, DType::kU32);
    c.In(T{{2}, {7, 10}}, DType::kU32);
    c.Out(T{{2}, {2, 9}}, DType::kU16);
    c.Out(T{{2}, {3, 5}}, DType::kU32);
    auto& b = c.Build();
    auto* mn = b.Op("tensor.min", {b.arg(0), b.arg(1)}, type(DType::kU16, {2}));
    auto* md = b.Op("tensor.mod", {b.arg(2), b.arg(3)}, type(DType::kU32, {2}));
    c.Return({mn, md});
    c.atol = c.rtol = 0;
    return c;
  });
  // u64 above 2^32: (2^40 + 5) mod 2^33 = 5; max(2^50, 3) = 2^50.
  add([=] {
    Case c("u64_mod_max");
    c.In(T{{2}, {0x1p40 + 5, 3}}, DType::kU64);
    c.In(T{{2}, {0x1p33, 0x1p50}}, DType::kU64);
    c.Out(T{{2}, {5, 3}}, DType::kU64);
    c.Out(T{{2}, {0x1p40 + 5, 0x1p50}}, DType::kU64);
    auto& b = c.Build();
    auto* md = b.Op("tensor.mod", {b.arg(0), b.arg(1)}, type(DType::kU64, {2}));
    auto* mx = b.Op("tensor.max", {b.arg(0), b.arg(1)}, type(DType::kU64, {2}));
    c.Return({md, mx});
    c.atol = c.rtol = 0;
    return c;
  });
  // f64 keeps what f32 loses: 1 + 2^-40 - 1 = 2^-40 (f32: 0).
  add([=] {
    Case c("f64_add_sub");
    c.In(T{{2}, {1, 1e300}}, DType::kF64);
    c.In(T{{2}, {0x1p-40, 1e300}}, DType::kF64);
    c.Out(T{{2}, {0x1p-40, 1e300}}, DType::kF64);
    auto& b = c.Build();
    auto* s = b.Op("tensor.add", {b.arg(0), b.arg(1)}, type(DType::kF64, {2}));
    c.Return({b.Op("tensor.sub", {s, b.arg(0)}, type(DType::kF64, {2}))});
    c.atol = c.rtol = 0;
    return c;
  });
  // BitShift on u8 wraps to 8 bits: 200 << 1 = 400 mod 256 = 144; 1 << 8 = 0
  // (a shift of the width gives 0); 255 >> 3 = 31; 128 >> 7 = 1.
  add([=] {
    Case c("shift_u8_wraps");
    c.In(T{{2}, {200, 1}}, DType::kU8);
    c.In(T{{2}, {1, 8}}, DType::kU8);
    c.In(T{{2}, {255, 128}}, DType::kU8);
    c.In(T{{2}, {3, 7}}, DType::kU8);
    c.Out(T{{2}, {144, 0}}, DType::kU8);
    c.Out(T{{2}, {31, 1}}, DType::kU8);
    auto& b = c.Build();
    auto* l = b.Op("tensor.shift_left", {b.arg(0), b.arg(1)}, U8({2}));
    auto* r = b.Op("tensor.shift_right", {b.arg(2), b.arg(3)}, U8({2}));
    c.Return({l, r});
    c.atol = c.rtol = 0;
    return c;
  });
  // u64 shifts past 32 bits: 1 << 40 = 2^40; 2^50 >> 45 = 32; x >> 64 = 0.
  add([=] {
    Case c("shift_u64");
    c.In(T{{3}, {1, 0x1p50, 7}}, DType::kU64);
    c.In(T{{3}, {40, 45, 64}}, DType::kU64);
    c.Out(T{{3}, {0x1p40, 0x1p5, 0}}, DType::kU64);
    auto& b = c.Build();
    auto* l = b.Op("tensor.shift_left", {b.arg(0), b.arg(1)}, type(DType::kU64, {3}));
    auto* r = b.Op("tensor.shift_right", {b.arg(0), b.arg(1)}, type(DType::kU64, {3}));
    auto* sel = b.Op("tensor.max", {l, r}, type(DType::kU64, {3}));
    c.Return({sel});
    c.atol = c.rtol = 0;
    return c;
  });
}

}  // namespace kiln::codegen::testing

#endif  // KILN_COMPILER_CODEGEN_CODEGEN_DTYPE_TEST_CASES_H_
