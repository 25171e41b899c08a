// Tests for MaxPool's Indices output and 3-D pooling (onnx_pool_indices.cc) against
// hand-derived values, through the host interpreter. The ONNX node tests
// (test_maxpool_with_argmax_2d_*) check it on Vulkan.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;

TEST(OnnxPoolIndices, RowAndColumnMajor) {
  // 1x4 row [1, 3, 2, 0], kernel/stride 1x2: maxima 3 (flat 1) and 2 (flat 2).
  NodeModel a("MaxPool", {{kF, {1, 1, 1, 4}, {1, 3, 2, 0}}}, 2, 12);
  a.Ints("kernel_shape", {1, 2}).Ints("strides", {1, 2});
  std::string err;
  auto out = a.Run(&err);
  ASSERT_EQ(out.size(), 2u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{3, 2}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{1, 2}));
  // [[1, 4], [3, 2]], 2x2 kernel: max 4 at (0, 1): row major 1, column
  // major 0 + 1 * 2 = 2. Padding 1 at the start: the window of output (0, 0)
  // covers only x[0][0] = 1 (index 0).
  for (int order : {0, 1}) {
    NodeModel b("MaxPool", {{kF, {1, 1, 2, 2}, {1, 4, 3, 2}}}, 2, 12);
    b.Ints("kernel_shape", {2, 2}).Int("storage_order", order);
    out = b.Run(&err);
    ASSERT_EQ(out.size(), 2u) << err;
    EXPECT_EQ(Values(out[0]), (std::vector<double>{4}));
    EXPECT_EQ(Values(out[1]), (std::vector<double>{order == 0 ? 1.0 : 2.0}));
  }
  NodeModel p("MaxPool", {{kF, {1, 1, 2, 2}, {1, 4, 3, 2}}}, 2, 12);
  p.Ints("kernel_shape", {2, 2}).Ints("pads", {1, 1, 0, 0});
  out = p.Run(&err);
  ASSERT_EQ(out.size(), 2u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{1, 4, 3, 4}));
  EXPECT_EQ(Values(out[1]), (std::vector<double>{0, 1, 2, 1}));
}

TEST(OnnxPool3D, AverageExcludesPaddingUnlessAskedAndMax) {
  // x = [2, 4] along W, kernel 1x1x2, pads 1 each side: windows [pad, 2],
  // [2, 4], [4, pad]. avg (count excludes pads): [2, 3, 4]; with
  // count_include_pad: [1, 3, 2]; max: [2, 4, 4].
  auto run = [](const char* op, int cip) {
    NodeModel m(op, {{kF, {1, 1, 1, 1, 2}, {2, 4}}}, 1, 19);
    m.Ints("kernel_shape", {1, 1, 2}).Ints("pads", {0, 0, 1, 0, 0, 1});
    if (cip) m.Int("count_include_pad", 1);
    std::string err;
    auto out = m.Run(&err);
    EXPECT_EQ(out.size(), 1u) << err;
    return out.empty() ? std::vector<double>{} : Values(out[0]);
  };
  EXPECT_EQ(run("AveragePool", 0), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(run("AveragePool", 1), (std::vector<double>{1, 3, 2}));
  EXPECT_EQ(run("MaxPool", 0), (std::vector<double>{2, 4, 4}));
}

}  // namespace
}  // namespace kiln::onnx_import::testing
