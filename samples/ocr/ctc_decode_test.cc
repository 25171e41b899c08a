#include "ctc_decode.h"

#include <cstdio>
#include <fstream>

#include <gtest/gtest.h>

namespace ocr {
namespace {

std::string WriteTemp(const std::string& text) {
  std::string path = ::testing::TempDir() + "ocr_keys_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".txt";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(LoadCharacters, BlankThenLinesThenSpace) {
  std::vector<std::string> chars;
  std::string error;
  ASSERT_TRUE(LoadCharacters(WriteTemp("a\r\nb\n\xe4\xb8\xad"), &chars, &error)) << error;
  EXPECT_EQ(chars, (std::vector<std::string>{"", "a", "b", "\xe4\xb8\xad", " "}));
  EXPECT_FALSE(LoadCharacters(WriteTemp(""), &chars, &error));
  EXPECT_NE(error.find("empty"), std::string::npos);
  EXPECT_FALSE(LoadCharacters("/nonexistent/keys.txt", &chars, &error));
}

TEST(CtcGreedyDecode, DropsBlanksAndRepeats) {
  const std::vector<std::string> chars = {"", "a", "b", "c", " "};
  // Arg-max per step: a a _ a ' ' b with those probabilities.
  const int seq[6] = {1, 1, 0, 1, 4, 2};
  const float p[6] = {0.9f, 0.8f, 0.99f, 0.7f, 0.6f, 0.5f};
  std::vector<float> probs(6 * 5, 0.0f);
  for (int t = 0; t < 6; ++t) {
    for (int c = 0; c < 5; ++c) probs[t * 5 + c] = (1 - p[t]) / 8;
    probs[t * 5 + seq[t]] = p[t];
  }
  Decoded d = CtcGreedyDecode(probs.data(), 6, 5, chars);
  EXPECT_EQ(d.text, "aa b");
  EXPECT_FLOAT_EQ(d.confidence, (0.9f + 0.7f + 0.6f + 0.5f) / 4);
}

TEST(CtcGreedyDecode, AllBlankIsEmptyWithZeroConfidence) {
  const std::vector<std::string> chars = {"", "a", " "};
  std::vector<float> probs = {0.9f, 0.05f, 0.05f, 0.8f, 0.1f, 0.1f};
  Decoded d = CtcGreedyDecode(probs.data(), 2, 3, chars);
  EXPECT_EQ(d.text, "");
  EXPECT_EQ(d.confidence, 0.f);
}

}  // namespace
}  // namespace ocr
