// Tests for DFT, STFT and MelWeightMatrix (onnx_signal.cc) against
// hand-derived values, through the host interpreter. The ONNX node tests
// (test_dft*, test_stft*, test_melweightmatrix) check them on Vulkan.
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

TEST(OnnxSignal, DftForwardInverseOnesided) {
  // x = [1, 2, 3, 4]: X = [10, -2 + 2i, -2, -2 - 2i].
  NodeModel f("DFT", {{kF, {1, 4, 1}, {1, 2, 3, 4}}}, 1, 17);
  std::string err;
  auto out = f.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{1, 4, 2}));
  ExpectNear(Values(out[0]), {10, 0, -2, 2, -2, 0, -2, -2});
  // The inverse of X is x (1/N scaling).
  NodeModel inv("DFT", {{kF, {1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2}}}, 1, 17);
  inv.Int("inverse", 1);
  out = inv.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  ExpectNear(Values(out[0]), {1, 0, 2, 0, 3, 0, 4, 0});
  // onesided: N/2 + 1 = 3 bins.
  NodeModel one("DFT", {{kF, {1, 4, 1}, {1, 2, 3, 4}}}, 1, 17);
  one.Int("onesided", 1);
  out = one.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  ExpectNear(Values(out[0]), {10, 0, -2, 2, -2, 0});
}

TEST(OnnxSignal, StftFrames) {
  // signal [1, 2, 3, 4], step 2, length 2: frames [1, 2] and [3, 4]; 2-point
  // DFTs [3, -1] and [7, -1]; onesided keeps 2 bins.
  NodeModel m("STFT", {{kF, {1, 4, 1}, {1, 2, 3, 4}}, {kI64, {}, {2}}, {0, {}, {}}, {kI64, {}, {2}}}, 1, 17, true);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{1, 2, 2, 2}));
  ExpectNear(Values(out[0]), {3, 0, -1, 0, 7, 0, -1, 0});
}

TEST(OnnxSignal, MelWeightMatrixShapeAndRuntimeInputError) {
  // 4 bins over dft_length 16 at 8 kHz, 0..4000 Hz: [16/2 + 1, 4]; every band
  // has a peak of 1.
  NodeModel m("MelWeightMatrix",
              {{kI64, {}, {4}}, {kI64, {}, {16}}, {kI64, {}, {8000}}, {kF, {}, {0}}, {kF, {}, {4000}}}, 1, 17, true);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{9, 4}));
  std::vector<double> v = Values(out[0]);
  for (int b = 0; b < 4; ++b) {
    double peak = 0;
    for (int j = 0; j < 9; ++j) peak = std::max(peak, v[j * 4 + b]);
    EXPECT_EQ(peak, 1.0) << "band " << b;
  }
  NodeModel rt("MelWeightMatrix",
               {{kI64, {}, {4}}, {kI64, {}, {16}}, {kI64, {}, {8000}}, {kF, {}, {0}}, {kF, {}, {4000}}}, 1, 17);
  auto r = rt.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (MelWeightMatrix): input 'num_mel_bins' must be a constant"),
            std::string::npos)
      << r.status().ToString();
}

}  // namespace
}  // namespace kiln::onnx_import::testing
