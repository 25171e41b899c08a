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
// not a multiple of 256: the add reads s inside the view [0, 480) of x,
// from element 40.
const char* kUnalignedRows = R"(
"func.func"() ({
^bb0(%x: tensor<4x40xf32>):
  %s = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<4x40xf32>) -> tensor<2x40xf32>
  %y = "tensor.add"(%s, %s) : (tensor<2x40xf32>, tensor<2x40xf32>) -> tensor<2x40xf32>
  "func.return"(%y) : (tensor<2x40xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, UnalignedSliceIsIndexedInsideACoarseView) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kUnalignedRows, false, &report), "");
  EXPECT_EQ(report.dispatches, 1) << "the add only; the slice is read in place";
  std::vector<float> x(160);
  for (int i = 0; i < 160; ++i) x[i] = static_cast<float>(i) * 0.25f - 11;
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4, 40}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 80u);
  for (int i = 0; i < 80; ++i) EXPECT_EQ(y[i], 2 * x[40 + i]) << i;
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Split of x (3 rows of 40, as the ONNX importer emits it: one tensor.slice
// per piece) read by one elementwise dispatch: the pieces start at bytes 0,
// 160 and 320; the dispatch reads them from the views [0, 160), [0, 320)
// and [256, 480) at element offsets 0, 40 and 16. Before --slice-views took
// unaligned slices, this was 3 dispatches (the aligned piece was a view).
// The source is a transient (t = x * 2, an arena slot) so the views start
// from an arena offset.
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
