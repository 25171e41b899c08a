// Dispatches whose shaders differ only in baked shapes share one SPIR-V
// module, each with its own specialization constants
// (compiler/backend/shader_dedupe.h, EntryPoint.specialization). Two
// convolutions of one schedule on different input sizes must compile to one
// executable with two entry points and both must still compute their own
// shape. The reference is a direct convolution in double precision.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/backend/emit_module.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// main(x1: 1x1x4x10, w1: 1x1x2x2, x2: 1x1x6x8, w2: 1x1x2x2) = (conv(x1, w1),
// conv(x2, w2)): both conv-tiled with 4-column tiles and a ragged last tile
// (output widths 9 and 7), different H and W. Sharing needs the baked
// constants to coincide alike in both shaders (shader_dedupe.h): with an
// output width of 5, the width and the 5-element input row of the block
// would be one constant in the first shader and two in the second.
const char* kTwoConvs = R"(
"func.func"() ({
^bb0(%x1: tensor<1x1x4x10xf32>, %w1: tensor<1x1x2x2xf32>, %x2: tensor<1x1x6x8xf32>, %w2: tensor<1x1x2x2xf32>):
  %a = "tensor.conv2d"(%x1, %w1) {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x1x4x10xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x3x9xf32> loc("conv_a")
  %b = "tensor.conv2d"(%x2, %w2) {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x1x6x8xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x5x7xf32> loc("conv_b")
  "func.return"(%a, %b) : (tensor<1x1x3x9xf32>, tensor<1x1x5x7xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

std::vector<float> Ramp(int n, float scale, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = std::sin(scale * static_cast<float>(i) + offset);
  return v;
}

// Valid 2x2 convolution of an h x w image, in double.
std::vector<float> Conv(const std::vector<float>& x, int h, int w, const std::vector<float>& k) {
  std::vector<float> r;
  for (int i = 0; i + 1 < h; ++i)
    for (int j = 0; j + 1 < w; ++j) {
      double s = 0;
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) s += double(x[static_cast<size_t>((i + a) * w + j + b)]) * k[static_cast<size_t>(a * 2 + b)];
      r.push_back(static_cast<float>(s));
    }
  return r;
}

TEST(ShaderSharingTest, TwoShapesOfOneScheduleShareAShaderAndBothRunCorrectly) {
  Session session;
  backend::EmitReport report;
  ASSERT_EQ(session.Load(kTwoConvs, false, &report), "");
  EXPECT_EQ(report.dispatches, 2);
  EXPECT_EQ(report.executables, 1);  // one SPIR-V module
  EXPECT_EQ(report.entry_points, 2);  // specialized twice
  std::vector<float> x1 = Ramp(40, 0.7f, 0.1f), w1 = {0.5f, -1.25f, 2.0f, 0.75f};
  std::vector<float> x2 = Ramp(48, 0.3f, -0.4f), w2 = {-0.3f, 1.5f, 0.25f, -2.0f};
  std::vector<HostTensor> out;
  ASSERT_EQ(session.Invoke("main", {F32({1, 1, 4, 10}, x1), F32({1, 1, 2, 2}, w1), F32({1, 1, 6, 8}, x2),
                                    F32({1, 1, 2, 2}, w2)},
                           &out),
            "");
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Compare(out[0], F32({1, 1, 3, 9}, Conv(x1, 4, 10, w1)), 1e-6, 1e-6), "");
  EXPECT_EQ(Compare(out[1], F32({1, 1, 5, 7}, Conv(x2, 6, 8, w2)), 1e-6, 1e-6), "");
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
