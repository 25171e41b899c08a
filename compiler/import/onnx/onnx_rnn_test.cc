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

TEST(OnnxRnn, RuntimeSequenceLensMaskStepsHandDerived) {
  // S = 2, B = 2, I = H = 1, W = 1, R = 0.5, no bias; X[t, b] = [[1, 2], [3, 4]];
  // sequence_lens = [1, 2] is a runtime input. Past an entry's length Y is 0
  // and its state is held; the reverse direction starts at len - 1.
  //   forward:  b0: h = tanh(1), then held;  b1: tanh(2), tanh(4 + 0.5 tanh(2))
  //   reverse:  b0: step 1 masked, then tanh(1);  b1: tanh(4), tanh(2 + 0.5 tanh(4))
  constexpr int kI32 = onnx::TensorProto_DataType_INT32;
  for (const char* direction : {"forward", "reverse"}) {
    NodeModel m("RNN", {{kF, {2, 2, 1}, {1, 2, 3, 4}}, {kF, {1, 1, 1}, {1}}, {kF, {1, 1, 1}, {0.5}},
                        {0, {}, {}}, {kI32, {2}, {1, 2}}},
                2);
    m.Int("hidden_size", 1).Str("direction", direction);
    std::string err;
    auto out = m.Run(&err);
    ASSERT_EQ(out.size(), 2u) << err;
    const bool fwd = std::string(direction) == "forward";
    const double b1_first = fwd ? std::tanh(2.0) : std::tanh(4.0);
    const double b1_last = fwd ? std::tanh(4.0 + 0.5 * b1_first) : std::tanh(2.0 + 0.5 * b1_first);
    // Y [S, dirs, B, H]: step 0 then step 1.
    const std::vector<double> y = fwd ? std::vector<double>{std::tanh(1.0), b1_first, 0.0, b1_last}
                                      : std::vector<double>{std::tanh(1.0), b1_last, 0.0, b1_first};
    ASSERT_EQ(Values(out[0]).size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(Values(out[0])[i], y[i], 1e-6) << direction << " Y " << i;
    EXPECT_NEAR(Values(out[1])[0], std::tanh(1.0), 1e-6) << direction;
    EXPECT_NEAR(Values(out[1])[1], b1_last, 1e-6) << direction;
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
