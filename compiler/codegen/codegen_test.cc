// Codegen unit tests: every case of codegen_test_cases.h compiles to SPIR-V
// that passes the SPIRV-Tools validator (CompileDispatch validates), with the
// expected schedule, bindings and grid; plus the error paths.
#include "compiler/codegen/codegen.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "compiler/codegen/codegen_test_cases.h"
#include "compiler/codegen/schedule_table.h"

namespace kiln::codegen {
namespace {

using testing::AllCases;
using testing::Case;
using testing::DispatchBuilder;
using testing::F32;

class CodegenCaseTest : public ::testing::TestWithParam<int> {};

TEST_P(CodegenCaseTest, CompilesAndValidates) {
  Case c = AllCases()[GetParam()]();
  SCOPED_TRACE(c.name);
  auto r = CompileDispatch(c.dispatch, c.options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const CompiledDispatch& cd = r.value();
  if (std::getenv("KILN_DUMP_GLSL")) std::printf("%s\n", cd.glsl.c_str());
  EXPECT_EQ(cd.debug_name, "dispatch_" + c.name);
  EXPECT_FALSE(cd.spirv.empty());
  EXPECT_EQ(cd.spirv[0], 0x07230203u);  // SPIR-V magic
  EXPECT_TRUE(ValidateSpirv(cd.spirv).ok());
  EXPECT_EQ(cd.binding_count, c.inputs.size() + c.expected.size());
  ASSERT_EQ(cd.binding_readonly.size(), cd.binding_count);
  for (size_t i = 0; i < cd.binding_count; ++i) EXPECT_EQ(cd.binding_readonly[i], i < c.inputs.size());
  EXPECT_EQ(cd.workgroup_size[0], 64u);
  EXPECT_LE(cd.workgroup_count[0], c.options.max_workgroup_count);
  EXPECT_LE(cd.workgroup_count[1], c.options.max_workgroup_count);
  EXPECT_TRUE(cd.push_constants.empty());
  if (!c.schedule.empty()) {
    EXPECT_NE(cd.glsl.find("// schedule: " + c.schedule), std::string::npos) << cd.glsl;
  }
  // Without the optimizer the raw glslang output validates too.
  CodegenOptions raw = c.options;
  raw.optimize_spirv = false;
  auto r2 = CompileDispatch(c.dispatch, raw);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_EQ(r2.value().glsl, cd.glsl);
}

std::string CaseName(const ::testing::TestParamInfo<int>& info) {
  return AllCases()[info.param]().name;
}

INSTANTIATE_TEST_SUITE_P(AllCases, CodegenCaseTest,
                         ::testing::Range(0, static_cast<int>(AllCases().size())), CaseName);

// The conv register block of schedule_table.h, by hand: loads per block and
// reduction step are R + TO * KW (R = (TW - 1) * stride + (KW - 1) *
// dilation + 1), over ceil(OW / TW) blocks per row.
TEST(CodegenTest, ConvTileTable) {
  using detail::SelectConvTile;
  auto tile = [](std::vector<int64_t> out, std::vector<int64_t> w, int64_t group, int64_t stride = 1,
                 int64_t dil = 1) {
    detail::ConvTile t = SelectConvTile(out, w, group, stride, dil);
    return std::to_string(t.channels) + "x" + std::to_string(t.columns);
  };
  // cls's 1x1 conv 32 -> 200 on 2x96: TO = 8 (200 = 8 * 25); TW = 8:
  // 12 blocks * (8 + 8) = 192 loads, against 24 * (4 + 8) = 288 for TW = 4.
  EXPECT_EQ(tile({1, 200, 2, 96}, {200, 32, 1, 1}, 1), "8x8");
  // 12 columns: TW = 8 leaves 4 idle (2 * 16 = 32) but still beats TW = 4
  // (3 * 12 = 36).
  EXPECT_EQ(tile({1, 64, 6, 12}, {64, 32, 1, 1}, 1), "8x8");
  // Width 3: the widest power of two <= 3 is 2 (2 * (2 + 8) = 20 against
  // 3 * (1 + 8) = 27).
  EXPECT_EQ(tile({1, 64, 1, 3}, {64, 32, 1, 1}, 1), "8x2");
  // Squeeze-excite 1x1 on a 1x1 image: one column.
  EXPECT_EQ(tile({1, 50, 1, 1}, {50, 200, 1, 1}, 1), "2x1");
  // Depthwise 3x3 (one channel per group): the row grows to 16 columns
  // (6 * (18 + 3) = 126 against 12 * (10 + 3) = 156 for 8).
  EXPECT_EQ(tile({1, 64, 24, 96}, {64, 1, 3, 3}, 64), "1x16");
  // Stride 2: R = 2 * TW + 1, so 16 columns would keep 33 > 32 inputs:
  // TW = 8 (6 * (17 + 3) = 120 against 12 * (9 + 3) = 144 for 4).
  EXPECT_EQ(tile({1, 64, 12, 48}, {64, 1, 3, 3}, 64, 2), "1x8");
  // A long kernel row: R = TW + 19 <= 32 caps TW at 8 (3 channels: TO = 1).
  EXPECT_EQ(tile({1, 3, 1, 40}, {3, 2, 1, 20}, 1, 1), "1x8");
  // Groups: TO divides the channels per group (6 / 2 = 3 -> 1).
  EXPECT_EQ(tile({1, 6, 5, 8}, {6, 2, 3, 3}, 2), "1x8");
  // TO * TW <= 64 and TW <= 8 with several channels.
  EXPECT_EQ(tile({1, 16, 4, 64}, {16, 16, 3, 3}, 1), "8x8");
}

// The matmul register block of schedule_table.h, by hand: per k a block
// reads TM elements of A and TN of B, 16 each as floats and 1 each as a
// quarter of a texel, over ceil(M / TM) * ceil(N / TN) blocks, leaving at
// least 256 invocations.
TEST(CodegenTest, MatmulTileTable) {
  auto tile = [](int64_t batch, int64_t M, int64_t N, int64_t K, bool a, bool b) {
    detail::MatmulTile t = detail::SelectMatmulTile(batch, M, N, K, a, b);
    return std::to_string(t.rows) + "x" + std::to_string(t.columns) + (t.a_texels ? " A" : "") +
           (t.b_texels ? " B" : "");
  };
  // rec's classifier, 16 x 6625, K = 120, B over the texel limit: 1657
  // blocks * (16 + 4 * 16) = 132,560 against 829 * 2 * (8 + 8 * 16) =
  // 225,488 for 8 x 8.
  EXPECT_EQ(tile(1, 16, 6625, 120, true, false), "16x4 A");
  // rec's 16 x 360 projections, both texels: 8 x 8 leaves 90 invocations,
  // 8 x 4 and 4 x 8 180; 4 x 4: 360 * (4 + 4) = 2,880 against 2 x 8's
  // 360 * (2 + 8) = 3,600.
  EXPECT_EQ(tile(1, 16, 360, 120, true, true), "4x4 A B");
  // Without texels the square block wins: 8 x 8 over 1024 x 1024 is 16,384
  // blocks * 256 = 4.2 M against 16 x 4's 16,384 * 320.
  EXPECT_EQ(tile(1, 1024, 1024, 64, false, false), "8x8");
  // K % 4 != 0: A is not read as texels; N % 4 != 0: nor is B.
  EXPECT_EQ(tile(1, 1024, 1024, 66, true, false), "8x8");
  EXPECT_EQ(tile(1, 1024, 1022, 64, false, true), "8x8");
  // Too small for 256 invocations with any block: the 4 x 4 default, or
  // the matrix itself when smaller, reading no texels.
  EXPECT_EQ(tile(1, 7, 5, 33, false, false), "4x4");
  EXPECT_EQ(tile(2, 3, 6, 5, false, false), "3x4");
  EXPECT_EQ(tile(1, 1, 2, 200, true, true), "1x2");
}

// The conv_transpose register blocks of schedule_table.h, by hand. Loads
// over the output, per input channel: conv-transpose-tiled (one stride
// phase) M/TO * OH * P * ceil(J / TW) * (TW + TO), P = min(s_w, OW) phases
// of J = ceil(OW / s_w) columns; conv-transpose-upsample (stride ==
// kernel) M/TO * H * ceil(W / TW) * (TW + TO * KH * KW).
TEST(CodegenTest, ConvTransposeTileTable) {
  using detail::ConvTransposeSchedule;
  auto tile = [](std::vector<int64_t> in, std::vector<int64_t> w, std::vector<int64_t> out,
                 std::vector<int64_t> strides, std::vector<int64_t> pads = {0, 0, 0, 0},
                 std::vector<int64_t> output_padding = {0, 0}) {
    detail::ConvTransposeShape c;
    c.spatial = static_cast<int>(in.size()) - 2;
    c.input = in;
    c.weights = w;
    c.out = out;
    c.strides = strides;
    c.dilations.assign(strides.size(), 1);
    c.pads = pads;
    c.output_padding = output_padding;
    ConvTransposeSchedule s = detail::SelectConvTransposeTile(c);
    if (s.kind == ConvTransposeSchedule::kPointwise) return std::string("pointwise");
    return std::string(s.kind == ConvTransposeSchedule::kPhase ? "phase " : "upsample ") +
           std::to_string(s.tile.channels) + "x" + std::to_string(s.tile.columns);
  };
  // det's 24 -> 24, 2x2 stride 2, 24x40 -> 48x80: phase 8x8 loads 3 * 48 *
  // 2 * 5 * 16 = 23,040; upsample's best, 2x8, 12 * 24 * 5 * (8 + 8) =
  // 23,040 too: the tie goes to upsample.
  EXPECT_EQ(tile({1, 24, 24, 40}, {24, 24, 2, 2}, {1, 24, 48, 80}, {2, 2}), "upsample 2x8");
  // 3x3 stride 3, 8 channels, 8 input columns: 9 outputs per pixel leave
  // upsample at most 1x4 (7 * 9 > 64 > 4 * 9), 8 * 5 * 2 * (4 + 9) = 1,040
  // loads, against phase 8x8's 15 * 3 * 1 * 16 = 720.
  EXPECT_EQ(tile({1, 4, 5, 8}, {4, 8, 3, 3}, {1, 8, 15, 24}, {3, 3}), "phase 8x8");
  // det's 24 -> 1 onto 96x160: upsample 1x16, 48 * 5 * (16 + 4) = 4,800,
  // against phase 1x16's 96 * 2 * 5 * 17 = 16,320.
  EXPECT_EQ(tile({1, 24, 48, 80}, {24, 1, 2, 2}, {1, 1, 96, 160}, {2, 2}), "upsample 1x16");
  // 16 -> 8 channels, 5x7 -> 10x14: upsample 4x4 (2 * 5 * 2 * (4 + 16) =
  // 400) beats phase 8x4 (10 * 2 * 2 * 12 = 480).
  EXPECT_EQ(tile({1, 16, 5, 7}, {16, 8, 2, 2}, {1, 8, 10, 14}, {2, 2}), "upsample 4x4");
  // Pads or output_padding: every output no longer reads exactly one
  // pixel, so phase only. 3x3 stride 2, 6 columns per phase: 4x4 (10 * 2 *
  // 2 * 8 = 320 against 360 for 4x2).
  EXPECT_EQ(tile({1, 6, 5, 6}, {6, 4, 3, 3}, {1, 4, 10, 12}, {2, 2}, {1, 1, 1, 1}, {1, 1}), "phase 4x4");
  EXPECT_EQ(tile({1, 8, 4, 4}, {8, 1, 2, 2}, {1, 1, 9, 9}, {2, 2}, {0, 0, 0, 0}, {1, 1}), "phase 1x2");
  // 3 output channels per group: TO = 1, a block never straddles two
  // groups; width 40 at stride 6 is 7 columns per phase: TW = 4.
  EXPECT_EQ(tile({2, 4, 5, 6}, {4, 3, 3, 4}, {2, 6, 17, 40}, {3, 6}, {1, 2, 0, 3}, {1, 2}), "phase 1x4");
  // A 16x16 kernel at stride 16: 256 outputs per pixel exceed the 64
  // accumulators, so phase (3 columns per phase: TW = 2).
  EXPECT_EQ(tile({1, 4, 3, 3}, {4, 2, 16, 16}, {1, 2, 48, 48}, {16, 16}), "phase 2x2");
  // 1-D and 3-D stay pointwise.
  EXPECT_EQ(tile({1, 3, 7}, {3, 2, 5}, {1, 2, 16}, {1}, {2, 1}, {0}), "pointwise");
  EXPECT_EQ(tile({1, 3, 2, 2, 2}, {3, 2, 2, 2, 2}, {1, 2, 4, 4, 4}, {2, 2, 2}, {0, 0, 0, 0, 0, 0}, {0, 0, 0}),
            "pointwise");
}

// A conv register block is in the module once: its TO x TW accumulators
// are an array and its loops are [[unroll]] loops that the driver unrolls.
// CodegenOptions::unroll_in_module (kiln-compile --unroll-in-module) makes
// spirv-opt unroll them instead. Counted in the SPIR-V: the GLSL.std.450 Fma
// instructions of conv_tile_8x8 (1x1 kernel, an 8 x 8 block: 64 per input
// channel once unrolled; the input-channel loop is never unrolled).
TEST(CodegenTest, ConvBlockIsInTheModuleOnce) {
  int found = -1;
  for (size_t i = 0; i < AllCases().size(); ++i)
    if (AllCases()[i]().name == "conv_tile_8x8") found = static_cast<int>(i);
  ASSERT_GE(found, 0);
  Case c = AllCases()[found]();
  auto fmas = [](const std::vector<uint32_t>& spirv) {
    int n = 0;
    for (size_t i = 5; i < spirv.size();) {
      const uint32_t count = spirv[i] >> 16, opcode = spirv[i] & 0xffff;
      if (count == 0) return -1;
      if (opcode == 12 /* OpExtInst */ && count > 4 && spirv[i + 4] == 50 /* Fma */) ++n;
      i += count;
    }
    return n;
  };
  auto rolled = CompileDispatch(c.dispatch, c.options);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  CodegenOptions o = c.options;
  o.unroll_in_module = true;
  auto unrolled = CompileDispatch(c.dispatch, o);
  ASSERT_TRUE(unrolled.ok()) << unrolled.status().ToString();
  EXPECT_EQ(fmas(rolled.value().spirv), 1);
  EXPECT_EQ(fmas(unrolled.value().spirv), 64);
  EXPECT_LT(rolled.value().spirv.size() * 2, unrolled.value().spirv.size());
}

TEST(CodegenTest, GlslCarriesOpNamesAndLocs) {
  Case c = AllCases()[2]();
  ASSERT_EQ(c.name, "conv_group_epilogue");
  auto r = CompileDispatch(c.dispatch, c.options);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& g = r.value().glsl;
  EXPECT_NE(g.find("tensor.conv2d [Conv_0]"), std::string::npos) << g;
  EXPECT_NE(g.find("tensor.leaky_relu"), std::string::npos);
  EXPECT_NE(g.find("binding = 5"), std::string::npos);  // 5 operands + 1 result
  EXPECT_EQ(g.find("binding = 6"), std::string::npos);
}

// Bindings are `restrict` unless the call site says they alias a written
// one (CodegenOptions::aliased_bindings): here operand 0 and the result,
// an in-place dispatch, while operand 1 stays restrict. The f16 variant
// and the SPIR-V validate either way.
TEST(CodegenTest, AliasedBindingsAreNotRestrict) {
  auto t = ir::Type::Tensor(DType::kF32, {4});
  DispatchBuilder b({t, t}, {t});
  auto* v = b.Op("tensor.add", {b.arg(0), b.arg(1)}, t, {}, "Add_0");
  ir::Operation* d = b.Return({v});
  auto plain = CompileDispatch(d, {});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::string& g = plain.value().glsl;
  EXPECT_NE(g.find("binding = 0, std430) restrict readonly buffer Arg0"), std::string::npos) << g;
  EXPECT_NE(g.find("binding = 2, std430) restrict writeonly buffer Res0"), std::string::npos) << g;
  CodegenOptions aliased;
  aliased.aliased_bindings = {true, false, true};
  auto r = CompileDispatch(d, aliased);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& a = r.value().glsl;
  EXPECT_NE(a.find("binding = 0, std430) readonly buffer Arg0"), std::string::npos) << a;
  EXPECT_NE(a.find("binding = 1, std430) restrict readonly buffer Arg1"), std::string::npos) << a;
  EXPECT_NE(a.find("binding = 2, std430) writeonly buffer Res0"), std::string::npos) << a;
  EXPECT_NE(r.value().spirv, plain.value().spirv);  // not shared with the restrict shader
  EXPECT_EQ(r.value().binding_readonly, plain.value().binding_readonly);
}

// operand_element_offsets: a constant added to every index read from a
// binding (slice-views' coarse views). Where the index begins with a
// slice's constant start (a row: a Split piece), the offset is folded into
// it, so the rebased shader has the structure of the unrebased one (and
// can share SPIR-V); elsewhere it is one more term.
TEST(CodegenTest, ElementOffsetsShiftEveryRead) {
  auto x = ir::Type::Tensor(DType::kF32, {4, 64});
  auto y = ir::Type::Tensor(DType::kF32, {2, 64});
  DispatchBuilder b({x, y}, {y});
  auto* s = b.Op("tensor.slice", {b.arg(0)}, y, {{"starts", std::vector<int64_t>{2, 0}}}, "Slice_0");
  auto* v = b.Op("tensor.add", {s, b.arg(1)}, y, {}, "Add_0");
  ir::Operation* d = b.Return({v});
  CodegenOptions rebased;
  rebased.operand_element_offsets = {-64, 5};  // x bound from row 1; y at element 5 of its binding
  auto r = CompileDispatch(d, rebased);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& g = r.value().glsl;
  EXPECT_NE(g.find("in0[((-64) + ((s3 * 64) + i1))]"), std::string::npos) << g;
  EXPECT_NE(g.find("in1[(5 + gi)]"), std::string::npos) << g;

  // A row (a Split piece): the index is "(128 + i)", a constant start.
  auto flat = ir::Type::Tensor(DType::kF32, {4, 64});
  auto piece = ir::Type::Tensor(DType::kF32, {1, 64});
  DispatchBuilder b1({flat}, {piece});
  auto* s1 = b1.Op("tensor.slice", {b1.arg(0)}, piece, {{"starts", std::vector<int64_t>{2, 0}}}, "Slice_1");
  auto* n1 = b1.Op("tensor.neg", {s1}, piece, {}, "Neg_1");
  ir::Operation* d1 = b1.Return({n1});
  auto plain = CompileDispatch(d1, {});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  CodegenOptions from_64;
  from_64.operand_element_offsets = {-64};
  auto folded = CompileDispatch(d1, from_64);
  ASSERT_TRUE(folded.ok()) << folded.status().ToString();
  EXPECT_NE(plain.value().glsl.find("in0[(128 + "), std::string::npos) << plain.value().glsl;
  EXPECT_NE(folded.value().glsl.find("in0[(64 + "), std::string::npos) << folded.value().glsl;
  EXPECT_EQ(folded.value().glsl.find("-64"), std::string::npos) << folded.value().glsl;
}

// result_element_offsets: a constant added to every index written to a
// result binding (--emplace-allocations: a producer placed into an
// unaligned subrange of its concat's target), in the elementwise schedule
// and in an anchor's (matmul) stores alike; 0 leaves the index as is.
TEST(CodegenTest, ResultElementOffsetsShiftEveryWrite) {
  auto t = ir::Type::Tensor(DType::kF32, {1, 20});
  DispatchBuilder b({t}, {t});
  auto* n = b.Op("tensor.neg", {b.arg(0)}, t, {}, "Neg_0");
  ir::Operation* d = b.Return({n});
  CodegenOptions placed;
  placed.result_element_offsets = {20};
  auto r = CompileDispatch(d, placed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r.value().glsl.find("out0[(gi) + 20] = "), std::string::npos) << r.value().glsl;
  auto plain = CompileDispatch(d, {});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_NE(plain.value().glsl.find("out0[gi] = "), std::string::npos) << plain.value().glsl;

  auto a = ir::Type::Tensor(DType::kF32, {8, 16});
  auto w = ir::Type::Tensor(DType::kF32, {16, 8});
  auto y = ir::Type::Tensor(DType::kF32, {8, 8});
  DispatchBuilder m({a, w}, {y});
  auto* mm = m.Op("tensor.matmul", {m.arg(0), m.arg(1)}, y, {}, "MatMul_0");
  ir::Operation* md = m.Return({mm});
  CodegenOptions at7;
  at7.result_element_offsets = {7};
  auto mr = CompileDispatch(md, at7);
  ASSERT_TRUE(mr.ok()) << mr.status().ToString();
  const std::string& g = mr.value().glsl;
  size_t stores = 0, shifted = 0;
  for (size_t at = g.find("out0["); at != std::string::npos; at = g.find("out0[", at + 1)) {
    if (g.compare(at, 7, "out0[];") == 0) continue;  // the declaration
    ++stores;
    size_t end = g.find("] = ", at);
    shifted += end != std::string::npos && g.compare(end - 4, 4, " + 7") == 0;
  }
  EXPECT_GT(stores, 0u) << g;
  EXPECT_EQ(shifted, stores) << g;
}

// result_strides: element (i0, ..., ik) of the result is written at the
// element offset plus sum(i_d * strides[d]) (--fuse-pad's strided
// placement: a [2,3] result into the interior of a [4,5] target padded by
// 1 on both dimensions, strides [5, 1], offset 6); a stride list of the
// wrong rank is an error, not a row-major write.
TEST(CodegenTest, ResultStridesMapEveryWrite) {
  auto t = ir::Type::Tensor(DType::kF32, {2, 3});
  DispatchBuilder b({t}, {t});
  auto* n = b.Op("tensor.neg", {b.arg(0)}, t, {}, "Neg_0");
  ir::Operation* d = b.Return({n});
  CodegenOptions placed;
  placed.result_element_offsets = {6};
  placed.result_strides = {{5, 1}};
  auto r = CompileDispatch(d, placed);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string& g = r.value().glsl;
  size_t at = g.find("out0[(");
  ASSERT_NE(at, std::string::npos) << g;
  const std::string store = g.substr(at, g.find(" = ", at) - at);
  EXPECT_NE(store.find("* 5"), std::string::npos) << store;
  EXPECT_NE(store.find(") + 6]"), std::string::npos) << store;
  EXPECT_EQ(store.find("gi"), std::string::npos) << "not the row-major flat index: " << store;
  CodegenOptions wrong;
  wrong.result_strides = {{5}};
  EXPECT_FALSE(CompileDispatch(d, wrong).ok());
}

// f32 dot products: GLSL fma() for every term (no emulation in the module:
// the runtime makes fma() exact on drivers that split it,
// hal/vulkan/exact_fma_splice.h); the results are checked bit for bit on the
// device by codegen_vulkan_test.
TEST(CodegenTest, DotProductsAccumulateWithFma) {
  int seen = 0;
  for (auto& f : AllCases()) {
    Case c = f();
    if (c.name != "matmul_exact_fma" && c.name != "conv_exact_fma" &&
        c.name != "matmul_exact_fma_midpoints")
      continue;
    ++seen;
    auto r = CompileDispatch(c.dispatch, c.options);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    const std::string& g = r.value().glsl;
    EXPECT_NE(g.find(" = fma("), std::string::npos) << g;
    EXPECT_EQ(g.find(" += "), std::string::npos) << g;
    EXPECT_EQ(g.find("precise"), std::string::npos) << g;
  }
  EXPECT_EQ(seen, 3);
}

// matmul_exact_fma_midpoints can fail: its second terms are cases where a
// sum rounded in f64 and then to f32 differs from the once-rounded fma
// (what an emulation without the midpoint fix of hal/vulkan/exact_fma_splice.h
// would give), and where a product and a sum rounded separately differ.
TEST(CodegenTest, MidpointCasesDefeatDoubleRounding) {
  const int64_t M = 256;
  testing::T a{{M, 2}, {}}, bm{{2, 2}, {1.0, 1.0, 0.0, 0.0}};
  testing::MidpointFmaCases(M / 2, &a, &bm);
  int double_rounding_misses = 0, split_misses = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < 2; ++j) {
      const float c = static_cast<float>(a.v[2 * i]), x = static_cast<float>(a.v[2 * i + 1]),
                  y = static_cast<float>(bm.v[2 + j]);
      const float once = std::fma(x, y, c);
      volatile float product = x * y;  // rounded to f32 (no contraction)
      double_rounding_misses += static_cast<float>(static_cast<double>(x) * y + c) != once;
      split_misses += static_cast<float>(product + c) != once;
    }
  EXPECT_GE(double_rounding_misses, 5);
  EXPECT_GE(split_misses, 50);
}

TEST(CodegenTest, GridFoldsIntoY) {
  for (auto& f : AllCases()) {
    Case c = f();
    if (c.name != "grid_fold") continue;
    auto r = CompileDispatch(c.dispatch, c.options);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // 100003 elements / 64 = 1563 workgroups; max 100 per dimension.
    EXPECT_GT(r.value().workgroup_count[1], 1u);
    EXPECT_GE(uint64_t{r.value().workgroup_count[0]} * r.value().workgroup_count[1], 1563u);
    EXPECT_NE(r.value().glsl.find("gl_WorkGroupID.y"), std::string::npos);
  }
}

TEST(CodegenTest, FeatureFlags) {
  for (auto& f : AllCases()) {
    Case c = f();
    auto r = CompileDispatch(c.dispatch, c.options);
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.status().ToString();
    bool i64 = false, b8 = false, b16 = false, f64 = false;
    for (auto d : c.input_dtypes) {
      i64 |= d == DType::kI64 || d == DType::kU64;
      b8 |= d == DType::kBool || d == DType::kU8 || d == DType::kI8;
      b16 |= DTypeSize(d) == 2;
      f64 |= d == DType::kF64;
    }
    for (auto d : c.result_dtypes) {
      i64 |= d == DType::kI64 || d == DType::kU64;
      b8 |= d == DType::kBool || d == DType::kU8 || d == DType::kI8;
      b16 |= DTypeSize(d) == 2;
      f64 |= d == DType::kF64;
    }
    EXPECT_EQ(r.value().requires_int64, i64) << c.name;
    EXPECT_EQ(r.value().requires_8bit_storage, b8) << c.name;
    EXPECT_EQ(r.value().requires_16bit_storage, b16) << c.name;
    EXPECT_EQ(r.value().requires_float64, f64) << c.name;
  }
}

TEST(CodegenTest, UnsupportedOpIsUnimplemented) {
  DispatchBuilder b({F32({4})}, {F32({4})});
  auto* v = b.Op("tensor.fancy", {b.arg(0)}, F32({4}), {}, "Fancy_7");
  auto r = CompileDispatch(b.Return({v}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("codegen: unsupported op 'tensor.fancy'"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("Fancy_7"), std::string::npos);
}

TEST(CodegenTest, UnsupportedDTypeIsUnimplemented) {
  // GLSL has no double exp(): a transcendental op on f64 is refused.
  auto f64 = ir::Type::Tensor(DType::kF64, {4});
  DispatchBuilder b({f64}, {f64});
  auto* v = b.Op("tensor.exp", {b.arg(0)}, f64, {}, "Exp_1");
  auto r = CompileDispatch(b.Return({v}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("tensor.exp"), std::string::npos);
  EXPECT_NE(r.status().message().find("f64"), std::string::npos);
}

TEST(CodegenTest, SixteenBitStorageIsDeclared) {
  // f16 storage computes in f32: 16-bit storage only (no Float16 arithmetic).
  auto f16 = ir::Type::Tensor(DType::kF16, {4});
  DispatchBuilder b({f16}, {f16});
  auto* v = b.Op("tensor.relu", {b.arg(0)}, f16, {}, "Relu_1");
  auto r = CompileDispatch(b.Return({v}), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r.value().requires_16bit_storage);
  EXPECT_FALSE(r.value().requires_float64);
  EXPECT_NE(r.value().glsl.find("float16_t in0[]"), std::string::npos) << r.value().glsl;
  EXPECT_NE(r.value().glsl.find("float(in0["), std::string::npos) << r.value().glsl;
  EXPECT_EQ(r.value().glsl.find("arithmetic_types_float16"), std::string::npos) << r.value().glsl;
}

TEST(CodegenTest, FloatOnlyOpOnIntegersIsUnimplemented) {
  DispatchBuilder b({testing::I32({4})}, {testing::I32({4})});
  auto* v = b.Op("tensor.exp", {b.arg(0)}, testing::I32({4}), {}, "Exp_2");
  auto r = CompileDispatch(b.Return({v}), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
}

TEST(CodegenTest, NotADispatchIsInvalidArgument) {
  DispatchBuilder b({F32({4})}, {F32({4})});
  auto* v = b.Op("tensor.relu", {b.arg(0)}, F32({4}));
  b.Return({v});
  auto r = CompileDispatch(v->defining_op(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

TEST(CodegenTest, GlslErrorIsInternalWithLog) {
  auto r = CompileGlslToSpirv("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { oops; }\n",
                              "broken");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_NE(r.status().message().find("broken"), std::string::npos);
  EXPECT_NE(r.status().message().find("oops"), std::string::npos) << r.status().message();
}

TEST(CodegenTest, InvalidSpirvIsInternal) {
  auto r = CompileGlslToSpirv("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n", "ok");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ValidateSpirv(r.value()).ok());
  std::vector<uint32_t> bad = r.value();
  bad.resize(bad.size() - 3);  // truncate mid-instruction
  Status s = ValidateSpirv(bad);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_FALSE(ValidateSpirv({0x07230203u, 0, 0}).ok());
}

}  // namespace
}  // namespace kiln::codegen
