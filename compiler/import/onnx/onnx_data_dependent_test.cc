// Tests for NonZero, Unique and NonMaxSuppression (onnx_data_dependent.cc),
// evaluated at import on constant inputs, against hand-derived values; and
// the error on runtime inputs. The ONNX node tests (test_nonzero_example,
// test_unique_*, test_nonmaxsuppression_*) run them through the compiler
// with their inputs specialized (tests/e2e/onnx_node_specialize.txt).
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;

std::vector<std::vector<double>> RunConst(NodeModel& m, size_t outputs) {
  std::string err;
  auto out = m.Run(&err);
  EXPECT_EQ(out.size(), outputs) << err;
  std::vector<std::vector<double>> r;
  for (auto& o : out) r.push_back(Values(o));
  return r;
}

TEST(OnnxDataDependent, NonZeroRowMajor) {
  // [[0, 2], [3, 0], [0, 5]]: non-zeros at (0,1), (1,0), (2,1).
  NodeModel m("NonZero", {{kF, {3, 2}, {0, 2, 3, 0, 0, 5}}}, 1, 13, true);
  auto r = RunConst(m, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0], (std::vector<double>{0, 1, 2, 1, 0, 1}));
}

TEST(OnnxDataDependent, UniqueSortedAndFirstOccurrence) {
  // x = [3, 1, 3, 2, 1]: sorted unique [1, 2, 3], first at [1, 3, 0],
  // inverse [2, 0, 2, 1, 0], counts [2, 1, 2]; unsorted: [3, 1, 2].
  NodeModel s("Unique", {{kF, {5}, {3, 1, 3, 2, 1}}}, 4, 13, true);
  auto r = RunConst(s, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(r[1], (std::vector<double>{1, 3, 0}));
  EXPECT_EQ(r[2], (std::vector<double>{2, 0, 2, 1, 0}));
  EXPECT_EQ(r[3], (std::vector<double>{2, 1, 2}));
  NodeModel u("Unique", {{kF, {5}, {3, 1, 3, 2, 1}}}, 4, 13, true);
  u.Int("sorted", 0);
  r = RunConst(u, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (std::vector<double>{3, 1, 2}));
  EXPECT_EQ(r[2], (std::vector<double>{0, 1, 0, 2, 1}));
}

TEST(OnnxDataDependent, UniqueRowsAlongAxis) {
  // rows [1, 2], [0, 5], [1, 2] along axis 0: sorted [[0, 5], [1, 2]].
  NodeModel m("Unique", {{kF, {3, 2}, {1, 2, 0, 5, 1, 2}}}, 4, 13, true);
  m.Int("axis", 0);
  auto r = RunConst(m, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0], (std::vector<double>{0, 5, 1, 2}));
  EXPECT_EQ(r[3], (std::vector<double>{1, 2}));
}

TEST(OnnxDataDependent, NonMaxSuppressionHandDerived) {
  // Three unit boxes [y1, x1, y2, x2]: A at 0, B shifted by 0.5 in x (IoU
  // 0.5 / 1.5 = 1/3 with A), C far away. Scores A 0.9, B 0.8, C 0.7.
  // iou 0.3: B is suppressed by A → (0,0,0), (0,0,2). iou 0.4: all kept in
  // score order. score_threshold 0.75 drops C.
  std::vector<double> boxes = {0, 0, 1, 1, 0, 0.5, 1, 1.5, 5, 5, 6, 6};
  auto run = [&](double iou, double score_th) {
    NodeModel m("NonMaxSuppression",
                {{kF, {1, 3, 4}, boxes}, {kF, {1, 1, 3}, {0.9, 0.8, 0.7}}, {kI64, {1}, {10}}, {kF, {1}, {iou}},
                 {kF, {1}, {score_th}}},
                1, 13, true);
    auto r = RunConst(m, 1);
    return r.empty() ? std::vector<double>{} : r[0];
  };
  EXPECT_EQ(run(0.3, 0.0), (std::vector<double>{0, 0, 0, 0, 0, 2}));
  EXPECT_EQ(run(0.4, 0.0), (std::vector<double>{0, 0, 0, 0, 0, 1, 0, 0, 2}));
  EXPECT_EQ(run(0.4, 0.75), (std::vector<double>{0, 0, 0, 0, 0, 1}));
}

TEST(OnnxDataDependent, RuntimeInputIsAClearError) {
  NodeModel m("NonZero", {{kF, {3}, {0, 1, 0}}}, 1, 13);
  auto r = m.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (NonZero): input 0 ('in0') is a runtime value"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
