// Tests for ONNX Einsum (onnx_einsum.cc) against hand-derived values, through
// the host interpreter: the matmul path, the broadcast-multiply path (three
// operands), diagonals, implicit output and the ellipsis. The ONNX node tests
// (test_einsum_*, f64) are checked on the host by onnx_importer_test.cc.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;

std::vector<double> Einsum(const std::string& eq, const std::vector<TestTensor>& in, std::vector<int64_t>* shape) {
  NodeModel m("Einsum", in, 1, 12);
  m.Str("equation", eq);
  std::string err;
  auto out = m.Run(&err);
  EXPECT_EQ(out.size(), 1u) << eq << ": " << err;
  if (out.empty()) return {};
  *shape = out[0].type.shape;
  return Values(out[0]);
}

TEST(OnnxEinsum, MatmulTransposedOutput) {
  // A = [[1, 2], [3, 4]], B = [[5, 6], [7, 8]]: A B = [[19, 22], [43, 50]];
  // "ij,jk->ki" is its transpose.
  std::vector<int64_t> s;
  auto y = Einsum("ij,jk->ki", {{kF, {2, 2}, {1, 2, 3, 4}}, {kF, {2, 2}, {5, 6, 7, 8}}}, &s);
  EXPECT_EQ(s, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y, (std::vector<double>{19, 43, 22, 50}));
}

TEST(OnnxEinsum, DiagonalTraceAndImplicitOutput) {
  std::vector<int64_t> s;
  // Trace "ii": implicit output has no letters (i appears twice): 1 + 4.
  EXPECT_EQ(Einsum("ii", {{kF, {2, 2}, {1, 2, 3, 4}}}, &s), (std::vector<double>{5}));
  EXPECT_TRUE(s.empty());
  // Implicit "ji": letters once, alphabetical → output "ij": the transpose.
  EXPECT_EQ(Einsum("ji", {{kF, {2, 3}, {1, 2, 3, 4, 5, 6}}}, &s), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(s, (std::vector<int64_t>{3, 2}));
  // Batched diagonal with an ellipsis.
  EXPECT_EQ(Einsum("...ii->...i", {{kF, {2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}}}, &s), (std::vector<double>{1, 4, 5, 8}));
}

TEST(OnnxEinsum, ThreeOperandsAndSummedLetters) {
  // "i,i,i->": 1*4*7 + 2*5*8 + 3*6*9 = 28 + 80 + 162 = 270.
  std::vector<int64_t> s;
  EXPECT_EQ(Einsum("i,i,i->", {{kF, {3}, {1, 2, 3}}, {kF, {3}, {4, 5, 6}}, {kF, {3}, {7, 8, 9}}}, &s),
            (std::vector<double>{270}));
  // "ij,k->i": the row sums times the sum of k: [3, 7] * 3 = [9, 21].
  EXPECT_EQ(Einsum("ij,k->i", {{kF, {2, 2}, {1, 2, 3, 4}}, {kF, {2}, {1, 2}}}, &s), (std::vector<double>{9, 21}));
}

TEST(OnnxEinsum, BadEquationIsAClearError) {
  NodeModel m("Einsum", {{kF, {2}, {1, 2}}}, 1, 12);
  m.Str("equation", "ij->i");
  auto r = m.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (Einsum): term 'ij' does not match rank 1"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
