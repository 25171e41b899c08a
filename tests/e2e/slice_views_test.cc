// --slice-views through the whole pipeline and the runtime: a contiguous,
// 256-byte-aligned slice becomes a view of its source (no dispatch, no
// copy), and the dispatch that reads it is bound at the view's offset; an
// unaligned contiguous slice (a Split's pieces) is read by its consumers
// inside a coarse, aligned view at an element offset; a strided or N-D slice
// stays a dispatch bound to the minimal subrange it reads, its indices
// rebased. Expected values are derived by hand from the input.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// x: 4 rows of 64; s = rows 1 and 2 (bytes [256, 768) of x); y = s + s.
const char* kRows = R"(
"func.func"() ({
^bb0(%x: tensor<4x64xf32>):
  %s = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<4x64xf32>) -> tensor<2x64xf32>
  %y = "tensor.add"(%s, %s) : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  "func.return"(%y, %s) : (tensor<2x64xf32>, tensor<2x64xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, ContiguousSliceIsAViewOfItsSource) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kRows, false, &report), "");
  EXPECT_EQ(report.dispatches, 1) << "the add only; the slice is a view";
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i) * 0.5f - 7;
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4, 64}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> y = Values(out[0]), rows = Values(out[1]);
  ASSERT_EQ(y.size(), 128u);
  ASSERT_EQ(rows.size(), 128u);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(y[i], 2 * x[64 + i]) << i;
    EXPECT_EQ(rows[i], x[64 + i]) << i;
  }
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// x: 4 rows of 40 (160 bytes each); s = rows 1 and 2, bytes [160, 480),
// not a multiple of 256. The row sums (a reduce: an anchor of its own, so
// the slice stays a dispatch of its own until --slice-views) read s inside
// the view [0, 480) of x, from element 40. All values are multiples of
// 0.25 below 2^10, so every sum is exact in any order.
const char* kUnalignedRows = R"(
"func.func"() ({
^bb0(%x: tensor<4x40xf32>):
  %s = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<4x40xf32>) -> tensor<2x40xf32>
  %y = "tensor.reduce"(%s) {axes = [1], keepdims = true, kind = "sum"} : (tensor<2x40xf32>) -> tensor<2x1xf32>
  "func.return"(%y) : (tensor<2x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, UnalignedSliceIsIndexedInsideACoarseView) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kUnalignedRows, false, &report), "");
  EXPECT_EQ(report.dispatches, 1) << "the reduce only; the slice is read in place";
  std::vector<float> x(160);
  for (int i = 0; i < 160; ++i) x[i] = static_cast<float>(i) * 0.25f - 11;
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4, 40}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    float want = 0;
    for (int k = 0; k < 40; ++k) want += x[(1 + r) * 40 + k];
    EXPECT_EQ(y[r], want) << r;
  }
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Split of t (3 rows of 40, as the ONNX importer emits it: one
// tensor.slice per piece) read by one elementwise dispatch. Piece a is
// fused with the mul (a slice anchor with an epilogue) and reads t through
// the view [0, 160); pieces b and c, at bytes 160 and 320, are views read
// from [0, 320) and [256, 480) at element offsets 40 and 16. Before
// --slice-views took unaligned slices, b and c were copy dispatches: 4
// dispatches, now 2. t = x + x is a transient (an arena slot), so the
// views start from an arena offset.
const char* kSplit = R"(
"func.func"() ({
^bb0(%x: tensor<3x40xf32>):
  %t = "tensor.add"(%x, %x) : (tensor<3x40xf32>, tensor<3x40xf32>) -> tensor<3x40xf32>
  %a = "tensor.slice"(%t) {starts = [0, 0], strides = [1, 1]} : (tensor<3x40xf32>) -> tensor<1x40xf32>
  %b = "tensor.slice"(%t) {starts = [1, 0], strides = [1, 1]} : (tensor<3x40xf32>) -> tensor<1x40xf32>
  %c = "tensor.slice"(%t) {starts = [2, 0], strides = [1, 1]} : (tensor<3x40xf32>) -> tensor<1x40xf32>
  %ab = "tensor.mul"(%a, %b) : (tensor<1x40xf32>, tensor<1x40xf32>) -> tensor<1x40xf32>
  %y = "tensor.sub"(%ab, %c) : (tensor<1x40xf32>, tensor<1x40xf32>) -> tensor<1x40xf32>
  "func.return"(%y) : (tensor<1x40xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, SplitPiecesAreViews) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kSplit, false, &report), "");
  EXPECT_EQ(report.dispatches, 2) << "t = x + x and the fused mul/sub; the three pieces are views";
  std::vector<float> x(120);
  for (int i = 0; i < 120; ++i) x[i] = static_cast<float>(i % 17) * 0.5f - 3;
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({3, 40}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(y[i], (2 * x[i]) * (2 * x[40 + i]) - 2 * x[80 + i]) << i;
  EXPECT_EQ(d.dispatches, 2u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Row sums of two pieces of x (4 rows of 40): rows 2 and 3, at bytes 320
// and 480, each summed by its own dispatch. Both call sites read their
// piece from the view [256, 640) of x, at element offsets 16 and 56; their
// shaders differ only in that constant, so they share one SPIR-V module
// with two specializations (compiler/backend/shader_dedupe.h). (An offset
// equal to another constant of the shader, such as the row length 40,
// would merge into that constant and the shaders would not share.)
const char* kTwoPieces = R"(
"func.func"() ({
^bb0(%x: tensor<4x40xf32>):
  %b = "tensor.slice"(%x) {starts = [2, 0]} : (tensor<4x40xf32>) -> tensor<1x40xf32>
  %c = "tensor.slice"(%x) {starts = [3, 0]} : (tensor<4x40xf32>) -> tensor<1x40xf32>
  %sb = "tensor.reduce"(%b) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x40xf32>) -> tensor<1x1xf32>
  %sc = "tensor.reduce"(%c) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x40xf32>) -> tensor<1x1xf32>
  "func.return"(%sb, %sc) : (tensor<1x1xf32>, tensor<1x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, ElementOffsetsAreSpecializationConstants) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kTwoPieces, false, &report), "");
  EXPECT_EQ(report.dispatches, 2);
  EXPECT_EQ(report.executables, 1);
  EXPECT_EQ(report.entry_points, 2);
  std::vector<float> x(160);
  for (int i = 0; i < 160; ++i) x[i] = static_cast<float>(i) * 0.75f - 20;
  std::vector<HostTensor> out;
  ASSERT_EQ(s.Invoke("main", {F32({4, 40}, x)}, &out), "");
  ASSERT_EQ(out.size(), 2u);
  float want_b = 0, want_c = 0;  // multiples of 0.25 below 2^10: exact in any order
  for (int k = 0; k < 40; ++k) {
    want_b += x[80 + k];
    want_c += x[120 + k];
  }
  EXPECT_EQ(Values(out[0]), std::vector<float>{want_b});
  EXPECT_EQ(Values(out[1]), std::vector<float>{want_c});
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The same pieces negated: each slice is fused with its negation (a slice
// anchor with an elementwise epilogue), so no view replaces it; the second
// dispatch is bound to [256, 480) and its index rebased by -64 elements,
// folded into the slice's start (80 - 64 = 16), so both dispatches still
// share one shader, as they did before the rebasing.
const char* kTwoFusedPieces = R"(
"func.func"() ({
^bb0(%x: tensor<3x40xf32>):
  %b = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<3x40xf32>) -> tensor<1x40xf32>
  %c = "tensor.slice"(%x) {starts = [2, 0]} : (tensor<3x40xf32>) -> tensor<1x40xf32>
  %nb = "tensor.neg"(%b) : (tensor<1x40xf32>) -> tensor<1x40xf32>
  %nc = "tensor.neg"(%c) : (tensor<1x40xf32>) -> tensor<1x40xf32>
  "func.return"(%nb, %nc) : (tensor<1x40xf32>, tensor<1x40xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, RebasedFusedSlicesShareAShader) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kTwoFusedPieces, false, &report), "");
  EXPECT_EQ(report.dispatches, 2);
  EXPECT_EQ(report.executables, 1);
  EXPECT_EQ(report.entry_points, 2);
  std::vector<float> x(120);
  for (int i = 0; i < 120; ++i) x[i] = static_cast<float>(i) * 0.75f - 20;
  std::vector<HostTensor> out;
  ASSERT_EQ(s.Invoke("main", {F32({3, 40}, x)}, &out), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> b = Values(out[0]), c = Values(out[1]);
  ASSERT_EQ(b.size(), 40u);
  ASSERT_EQ(c.size(), 40u);
  for (int i = 0; i < 40; ++i) {
    EXPECT_EQ(b[i], -x[40 + i]) << i;
    EXPECT_EQ(c[i], -x[80 + i]) << i;
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A slice of an unaligned slice, as the importer's Det emits it: row 1 of
// x (byte 8) is read by the second slice inside the view [0, 16) at element
// 2; the second slice (element 1 of the row, byte 12 of that view) becomes
// a view too, read by the reduce at element 3. One dispatch (3 before
// unaligned slices were views). A slice of a slice that ignored the outer
// offset read x[1] instead of x[3] (as test_det_2d showed).
const char* kChain = R"(
"func.func"() ({
^bb0(%x: tensor<2x2xf32>):
  %r = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<2x2xf32>) -> tensor<1x2xf32>
  %c = "tensor.slice"(%r) {starts = [0, 1]} : (tensor<1x2xf32>) -> tensor<1x1xf32>
  %m = "tensor.reduce"(%c) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x1xf32>) -> tensor<1x1xf32>
  "func.return"(%m) : (tensor<1x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, SliceOfAnUnalignedSliceIsTakenAtItsOffset) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kChain, false, &report), "");
  EXPECT_EQ(report.dispatches, 1) << "the reduce only; both slices are views";
  std::vector<HostTensor> out;
  ASSERT_EQ(s.Invoke("main", {F32({2, 2}, {1.5f, -2.0f, 3.25f, 7.0f})}, &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), std::vector<float>{7.0f});
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A 2x16 box at row 3, column 8 of x (8 rows of 64) reads elements 200 to
// 279: the slice dispatch is bound to bytes [768, 1120) of x and indexes it
// from element -192. The second output, every other row from row 5 (rows 5
// and 7), reads bytes [1280, 2048): bound from 1280, indexed from -320.
const char* kBox = R"(
"func.func"() ({
^bb0(%x: tensor<8x64xf32>):
  %b = "tensor.slice"(%x) {starts = [3, 8]} : (tensor<8x64xf32>) -> tensor<2x16xf32>
  %r = "tensor.slice"(%x) {starts = [5, 0], strides = [2, 1]} : (tensor<8x64xf32>) -> tensor<2x64xf32>
  "func.return"(%b, %r) : (tensor<2x16xf32>, tensor<2x64xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, StridedSliceReadsItsMinimalSubrange) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kBox, false, &report), "");
  EXPECT_EQ(report.dispatches, 2);
  std::vector<float> x(512);
  for (int i = 0; i < 512; ++i) x[i] = static_cast<float>(i) - 100;
  std::vector<HostTensor> out;
  ASSERT_EQ(s.Invoke("main", {F32({8, 64}, x)}, &out), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> box = Values(out[0]), rows = Values(out[1]);
  ASSERT_EQ(box.size(), 32u);
  ASSERT_EQ(rows.size(), 128u);
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 16; ++c) EXPECT_EQ(box[r * 16 + c], x[(3 + r) * 64 + 8 + c]) << r << "," << c;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 64; ++c) EXPECT_EQ(rows[r * 64 + c], x[(5 + 2 * r) * 64 + c]) << r << "," << c;
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
