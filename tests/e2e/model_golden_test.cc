// Real models from npm (scripts/setup.sh fetches them into .cache/models),
// and small generated ones committed beside their goldens (conv_transpose),
// compiled by kiln-compile's pipeline and run on Vulkan, compared with ONNX
// Runtime outputs committed in tests/golden/<dir>/ (scripts/gen_golden.mjs).
// Tolerance (issue #2): 1e-4 absolute, or 1e-3 relative where |value| > 1.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"
#include "tests/e2e/golden_suite.h"

namespace kiln::e2e {
namespace {

struct GoldenCase {
  const char* dir;  // under tests/golden/
};

class ModelGoldenTest : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(ModelGoldenTest, MatchesOnnxRuntime) {
  std::string dir = std::string(KILN_SOURCE_DIR) + "/tests/golden/" + GetParam().dir;
  std::string model = std::string(KILN_SOURCE_DIR) + "/.cache/models/" + ReadFirstLine(dir + "/model.txt");
  // A model small enough to commit lives beside its goldens.
  if (std::ifstream(dir + "/" + ReadFirstLine(dir + "/model.txt"))) model = dir + "/" + ReadFirstLine(dir + "/model.txt");
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh): " << model;
  std::vector<HostTensor> inputs, expected, outputs;
  std::string error;
  for (int i = 0; std::ifstream(dir + "/input_" + std::to_string(i) + ".npy"); ++i) {
    HostTensor t;
    ASSERT_TRUE(ReadNpyTensor(dir + "/input_" + std::to_string(i) + ".npy", &t, &error)) << error;
    inputs.push_back(std::move(t));
  }
  for (int i = 0; std::ifstream(dir + "/output_" + std::to_string(i) + ".npy"); ++i) {
    HostTensor t;
    ASSERT_TRUE(ReadNpyTensor(dir + "/output_" + std::to_string(i) + ".npy", &t, &error)) << error;
    expected.push_back(std::move(t));
  }
  ASSERT_FALSE(expected.empty());
  driver::CompileOptions options;
  for (const std::string& flag : GoldenInputShapes(dir))
    ASSERT_TRUE(onnx_import::ParseInputShapeFlag(flag, &options.import).ok()) << flag;
  backend::EmitReport report;
  StatusOr<std::vector<uint8_t>> bytes = driver::CompileOnnxFile(model, options, &report);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  kiln_device_stats_t invoke{};
  error = RunModule(bytes.value(), inputs, &outputs, &invoke);
  ASSERT_EQ(error, "");
  // The copies made at run time are the copies of the final stream IR: the
  // emitter adds none of its own (one invoke of a straight-line main).
  EXPECT_EQ(invoke.copies, static_cast<uint64_t>(report.ir_copies));
  ASSERT_EQ(outputs.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    // atol 1e-4 where |value| <= 1; 1e-3 relative where |value| > 1.
    std::string diff;
    for (int64_t k = 0; k < expected[i].element_count() && diff.empty(); ++k) {
      double want = expected[i].At(k), got = outputs[i].At(k);
      double tol = std::abs(want) > 1 ? 1e-3 * std::abs(want) : 1e-4;
      if (!(std::abs(got - want) <= tol))
        diff = "element " + std::to_string(k) + ": got " + std::to_string(got) + " want " + std::to_string(want);
    }
    EXPECT_EQ(outputs[i].shape, expected[i].shape);
    EXPECT_EQ(diff, "") << "output " << i;
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGoldenTest,
                         ::testing::Values(GoldenCase{"cls_upright"}, GoldenCase{"cls_rotated"},
                                           GoldenCase{"melspectrogram"}, GoldenCase{"embedding_model"},
                                           GoldenCase{"alexa_v0.1"}, GoldenCase{"hey_mycroft_v0.1"},
                                           GoldenCase{"hey_rhasspy_v0.1"}, GoldenCase{"timer_v0.1"},
                                           GoldenCase{"weather_v0.1"},
                                           // scf.if on a device-computed condition / on the `sr` input:
                                           GoldenCase{"hey_jarvis_v0.1"}, GoldenCase{"silero_vad"},
                                           // PP-OCRv4 det at 96x160 and rec at 48x128 (samples/ocr):
                                           GoldenCase{"det_text"}, GoldenCase{"rec_line"}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           std::string n = info.param.dir;
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

// Generated models committed beside their goldens. conv_transpose:
// PaddleOCR det's upsampling pair, groups, dilations, 1-D.
INSTANTIATE_TEST_SUITE_P(Generated, ModelGoldenTest, ::testing::Values(GoldenCase{"conv_transpose"}),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return std::string(info.param.dir);
                         });

// The classifier's verdicts, not just its numbers: upright text is class 0,
// rotated text is class 180 (hand-checked images rendered by
// scripts/render_text.sh).
TEST(ClsVerdictTest, UprightAndRotated) {
  std::string model = std::string(KILN_SOURCE_DIR) + "/.cache/models/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  const char* dirs[] = {"cls_upright", "cls_rotated"};
  for (int k = 0; k < 2; ++k) {
    HostTensor in;
    std::string error;
    ASSERT_TRUE(ReadNpyTensor(std::string(KILN_SOURCE_DIR) + "/tests/golden/" + dirs[k] + "/input_0.npy", &in,
                              &error));
    std::vector<HostTensor> out;
    ASSERT_EQ(CompileAndRun(model, {"x=1x3x48x192"}, {in}, &out), "");
    ASSERT_EQ(out.size(), 1u);
    int argmax = out[0].At(1) > out[0].At(0) ? 1 : 0;
    EXPECT_EQ(argmax, k) << dirs[k];
  }
}

}  // namespace
}  // namespace kiln::e2e
