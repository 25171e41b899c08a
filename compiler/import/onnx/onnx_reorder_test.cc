// Tests for ReverseSequence, MaxUnpool and Det (onnx_reorder.cc) against
// hand-derived values, through the host interpreter.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;

TEST(OnnxReorder, ReverseSequenceRuntimeLengths) {
  // time_axis 0, batch_axis 1: column 0 (0, 2, 4) reversed over 2 steps →
  // (2, 0, 4); column 1 (1, 3, 5) over 3 → (5, 3, 1).
  NodeModel m("ReverseSequence", {{kF, {3, 2}, {0, 1, 2, 3, 4, 5}}, {kI64, {2}, {2, 3}}}, 1, 13);
  m.Int("time_axis", 0).Int("batch_axis", 1);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{2, 5, 0, 3, 4, 1}));
}

TEST(OnnxReorder, MaxUnpoolInferredAndPaddedShape) {
  // X [5, 6] at flat indices 1 and 2; kernel/stride 1x2 → [1, 1, 1, 4].
  NodeModel m("MaxUnpool", {{kF, {1, 1, 1, 2}, {5, 6}}, {kI64, {1, 1, 1, 2}, {1, 2}}}, 1, 11);
  m.Ints("kernel_shape", {1, 2}).Ints("strides", {1, 2});
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 5, 6, 0}));
  // output_shape [1, 1, 2, 5]: the inferred 1x4 padded at the ends.
  NodeModel p("MaxUnpool", {{kF, {1, 1, 1, 2}, {5, 6}}, {kI64, {1, 1, 1, 2}, {1, 2}}, {kI64, {4}, {1, 1, 2, 5}}}, 1,
              11, true);
  p.Ints("kernel_shape", {1, 2}).Ints("strides", {1, 2});
  out = p.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 5, 6, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(OnnxReorder, DetTwoAndThree) {
  std::string err;
  // [[1, 2], [3, 4]] → -2; [[2, 0, 1], [1, 3, 2], [1, 1, 2]] → 2*4 - 0 + 1*(1 - 3) = 6.
  NodeModel a("Det", {{kF, {2, 2}, {1, 2, 3, 4}}}, 1, 11);
  auto out = a.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-2}));
  NodeModel b("Det", {{kF, {1, 3, 3}, {2, 0, 1, 1, 3, 2, 1, 1, 2}}}, 1, 11);
  out = b.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{6}));
  NodeModel big("Det", {{kF, {5, 5}, std::vector<double>(25, 1.0)}}, 1, 11);
  auto r = big.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (Det): Det of 5x5"), std::string::npos) << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
