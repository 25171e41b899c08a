// Tests for GridSample (onnx_grid_sample.cc) and RoiAlign
// (onnx_roi_align.cc) against hand-derived values, through the host
// interpreter. The ONNX node tests (test_gridsample*, test_roialign*) check
// them on Vulkan.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;

std::vector<double> Sample(const std::string& mode, const std::string& pad, int align, const std::vector<double>& g) {
  // X = [[1, 2], [3, 4]]; grid points (x, y) in g.
  NodeModel m("GridSample", {{kF, {1, 1, 2, 2}, {1, 2, 3, 4}}, {kF, {1, 1, static_cast<int64_t>(g.size() / 2), 2}, g}},
              1, 16);
  m.Str("mode", mode).Str("padding_mode", pad).Int("align_corners", align);
  std::string err;
  auto out = m.Run(&err);
  EXPECT_EQ(out.size(), 1u) << err;
  return out.empty() ? std::vector<double>{} : Values(out[0]);
}

TEST(OnnxGridSample, BilinearNearestAndPadding) {
  // align_corners: -1 → pixel 0, 1 → pixel 1; the centre averages all four.
  EXPECT_EQ(Sample("bilinear", "zeros", 1, {0, 0, -1, -1, 1, 1}), (std::vector<double>{2.5, 1, 4}));
  // nearest: x = 0.2 → 0.6 → pixel 1; y = -1 → row 0: X[0][1] = 2.
  EXPECT_EQ(Sample("nearest", "zeros", 1, {0.2, -1}), (std::vector<double>{2}));
  // x = 3 → pixel 2 (outside): zeros gives 0, border clamps to column 1.
  EXPECT_EQ(Sample("bilinear", "zeros", 1, {3, -1}), (std::vector<double>{0}));
  EXPECT_EQ(Sample("bilinear", "border", 1, {3, -1}), (std::vector<double>{2}));
  // reflection: x = 3 → 2 reflects about [0, 1] to 0: X[0][0] = 1.
  EXPECT_EQ(Sample("bilinear", "reflection", 1, {3, -1}), (std::vector<double>{1}));
}

TEST(OnnxGridSample, BicubicReproducesAConstantImage) {
  // The cubic convolution weights sum to 1, so a constant image samples to
  // the constant anywhere inside (border padding).
  NodeModel m("GridSample", {{kF, {1, 1, 3, 3}, std::vector<double>(9, 7.0)}, {kF, {1, 1, 2, 2}, {0.1, -0.3, 0.7, 0.5}}},
              1, 16);
  m.Str("mode", "bicubic").Str("padding_mode", "border");
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  for (double v : Values(out[0])) EXPECT_NEAR(v, 7.0, 1e-5);
}

TEST(OnnxRoiAlign, HalfPixelAndOutputHalfPixel) {
  // X = [[1, 2], [3, 4]], roi (0, 0, 1, 1), 1x1 output, 1 sample.
  // half_pixel: start -0.5, size 1 → the sample at (0, 0): 1.
  // output_half_pixel: start 0 → the sample at (0.5, 0.5): 2.5.
  for (auto [ctm, want] : {std::pair<std::string, double>{"half_pixel", 1.0}, {"output_half_pixel", 2.5}}) {
    NodeModel m("RoiAlign", {{kF, {1, 1, 2, 2}, {1, 2, 3, 4}}, {kF, {1, 4}, {0, 0, 1, 1}}, {kI64, {1}, {0}}}, 1, 16);
    m.Str("coordinate_transformation_mode", ctm).Int("output_height", 1).Int("output_width", 1).Int("sampling_ratio", 1);
    std::string err;
    auto out = m.Run(&err);
    ASSERT_EQ(out.size(), 1u) << err;
    EXPECT_NEAR(Values(out[0])[0], want, 1e-6) << ctm;
  }
  NodeModel a("RoiAlign", {{kF, {1, 1, 2, 2}, {1, 2, 3, 4}}, {kF, {1, 4}, {0, 0, 1, 1}}, {kI64, {1}, {0}}}, 1, 16);
  auto r = a.Import();  // sampling_ratio 0 (adaptive)
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (RoiAlign): sampling_ratio 0"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
