// Resize / Upsample cases beyond ONNX 1.12's node tests (Resize-10,
// Upsample-7/9, every nearest_mode and transform on non-integral scales,
// cubic exclude_outside, trilinear, tf_crop_and_resize, opset 18
// half_pixel_symmetric / axes / keep_aspect_ratio_policy / antialias),
// compiled by Kiln, run on Vulkan and compared with ONNX Runtime's outputs in
// tests/golden/resize/<case>/ (scripts/gen_resize_goldens.py: model.onnx,
// input_0.npy, output_0.npy from onnxruntime-node on CPU).
// Tolerance: the node tests' |got - want| <= 1e-5 + 1e-3 * |want|.
#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

std::string Root() { return std::string(KILN_SOURCE_DIR) + "/tests/golden/resize"; }

std::vector<std::string> Cases() {
  std::vector<std::string> out;
  if (DIR* d = opendir(Root().c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class ResizeGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ResizeGoldenTest, MatchesOnnxRuntime) {
  std::string dir = Root() + "/" + GetParam();
  HostTensor x, want;
  std::string error;
  ASSERT_TRUE(ReadNpyTensor(dir + "/input_0.npy", &x, &error)) << error;
  ASSERT_TRUE(ReadNpyTensor(dir + "/output_0.npy", &want, &error)) << error;
  std::vector<HostTensor> got;
  ASSERT_EQ(CompileAndRun(dir + "/model.onnx", {}, {x}, &got), "");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(Compare(got[0], want, 1e-5, 1e-3), "");
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(ResizeGoldenCases, Present) { EXPECT_GE(Cases().size(), 20u) << Root(); }

INSTANTIATE_TEST_SUITE_P(Resize, ResizeGoldenTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace kiln::e2e
