// Tests for ONNX RNN and GRU (onnx_rnn.cc) against hand-derived values,
// through the host interpreter. The ONNX node tests (test_simple_rnn_*,
// test_rnn_seq_length, test_gru_*) check them on Vulkan.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;

TEST(OnnxRnn, RnnTwoStepsHandDerived) {
  // I = H = 1, W = 1, R = 0.5, B = (Wb 0.25, Rb -0.25): h1 = tanh(1),
  // h2 = tanh(2 + 0.5 h1). Y = [h1, h2], Y_h = h2.
  NodeModel m("RNN", {{kF, {2, 1, 1}, {1, 2}}, {kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {0.5}}, {kF, {1, 2}, {0.25, -0.25}}},
              2);
  m.Int("hidden_size", 1);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 2u) << err;
  const double h1 = std::tanh(1.0), h2 = std::tanh(2.0 + 0.5 * h1);
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{2, 1, 1, 1}));
  EXPECT_NEAR(Values(out[0])[0], h1, 1e-6);
  EXPECT_NEAR(Values(out[0])[1], h2, 1e-6);
  EXPECT_NEAR(Values(out[1])[0], h2, 1e-6);
}

TEST(OnnxRnn, GruTwoStepsHandDerived) {
  // I = H = 1; W = [z 0, r 0, h 1], R = [0, 0, 1], no bias: z = r = 0.5,
  // h~ = tanh(x + (r H) * 1), H = (1 - z) h~ + z H = 0.5 h~ + 0.5 H.
  //   H1 = 0.5 tanh(1), H2 = 0.5 tanh(2 + 0.5 H1) + 0.5 H1.
  // With linear_before_reset the reset applies after R: the same here
  // (r * (H * 1) = (r * H) * 1), so both give these values.
  for (int lbr : {0, 1}) {
    NodeModel m("GRU", {{kF, {2, 1, 1}, {1, 2}}, {kF, {1, 3, 1}, {0, 0, 1}}, {kF, {1, 3, 1}, {0, 0, 1}}}, 2);
    m.Int("hidden_size", 1).Int("linear_before_reset", lbr);
    std::string err;
    auto out = m.Run(&err);
    ASSERT_EQ(out.size(), 2u) << err;
    const double h1 = 0.5 * std::tanh(1.0), h2 = 0.5 * std::tanh(2.0 + 0.5 * h1) + 0.5 * h1;
    EXPECT_NEAR(Values(out[1])[0], h2, 1e-6) << "linear_before_reset " << lbr;
    EXPECT_NEAR(Values(out[0])[0], h1, 1e-6);
  }
}

TEST(OnnxRnn, UnsupportedActivationIsAClearError) {
  NodeModel m("RNN", {{kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {1}}}, 2);
  m.Int("hidden_size", 1).Strs("activations", {"Affine"});
  auto r = m.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (RNN): activation 'Affine'"), std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
