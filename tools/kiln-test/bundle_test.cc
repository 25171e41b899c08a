#include "tools/kiln-test/bundle.h"

#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

namespace kiln::tools {
namespace {

NpyArray F32(std::vector<int64_t> shape, std::vector<float> v) {
  NpyArray a;
  a.dtype = KILN_DTYPE_F32;
  a.shape = std::move(shape);
  a.data.resize(v.size() * 4);
  std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

TEST(BundleManifest, RoundTrips) {
  std::vector<BundleTest> tests(2);
  tests[0].name = "node.test_abs";
  tests[0].dir = "node.test_abs";
  tests[0].inputs = 1;
  tests[0].outputs = 1;
  tests[0].atol = 1e-5;
  tests[0].rtol = 1e-3;
  tests[1].name = "golden.x";
  tests[1].dir = "golden.x";
  tests[1].skip = "model not fetched: /a b/c.onnx";
  std::string text = FormatManifest(tests);
  EXPECT_EQ(text.rfind("kiln-test-bundle 1\n", 0), 0u) << text;
  std::vector<BundleTest> back;
  std::string error;
  ASSERT_TRUE(ParseManifest("# comment\n\n" + text, &back, &error)) << error;
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "node.test_abs");
  EXPECT_EQ(back[0].function, "main");
  EXPECT_EQ(back[0].inputs, 1);
  EXPECT_DOUBLE_EQ(back[0].atol, 1e-5);
  EXPECT_DOUBLE_EQ(back[0].rtol, 1e-3);
  EXPECT_EQ(back[0].skip, "");
  EXPECT_EQ(back[1].skip, "model not fetched: /a b/c.onnx");
}

TEST(BundleManifest, RejectsBadInputWithLineNumbers) {
  std::vector<BundleTest> out;
  std::string error;
  EXPECT_FALSE(ParseManifest("", &out, &error));
  EXPECT_NE(error.find("empty manifest"), std::string::npos) << error;
  EXPECT_FALSE(ParseManifest("kiln-test-bundle 2\n", &out, &error));
  EXPECT_NE(error.find("version 2"), std::string::npos) << error;
  EXPECT_FALSE(ParseManifest("kiln-test-bundle 1\ntest a dir=a inputs=1 outputs=1 atol=0\n", &out, &error));
  EXPECT_NE(error.find("manifest.txt:2: a: needs"), std::string::npos) << error;
  EXPECT_FALSE(ParseManifest("kiln-test-bundle 1\ntest a dir=a inputs=x outputs=1 atol=0 rtol=0\n", &out, &error));
  EXPECT_NE(error.find("bad value for inputs"), std::string::npos) << error;
  EXPECT_FALSE(ParseManifest("kiln-test-bundle 1\ntest a dir=../a inputs=1 outputs=1 atol=0 rtol=0\n", &out, &error));
  EXPECT_NE(error.find("relative path inside"), std::string::npos) << error;
  EXPECT_FALSE(ParseManifest("kiln-test-bundle 1\ntest a dir=a colour=red\n", &out, &error));
  EXPECT_NE(error.find("unknown key 'colour'"), std::string::npos) << error;
}

TEST(BundleCompare, ToleranceIsAtolPlusRtolTimesWant) {
  NpyArray want = F32({2}, {1.0f, 100.0f});
  EXPECT_EQ(CompareArrays(F32({2}, {1.0f + 1.5e-5f, 100.09f}), want, 1e-5, 1e-3), "");
  std::string d = CompareArrays(F32({2}, {1.0f, 100.2f}), want, 1e-5, 1e-3);
  EXPECT_NE(d.find("element 1: got 100.19"), std::string::npos) << d;
  d = CompareArrays(F32({2}, {1.0f + 3e-5f, 100.0f}), want, 1e-5, 0);
  EXPECT_NE(d.find("element 0"), std::string::npos) << d;
}

TEST(BundleCompare, NaNInfDtypeAndShape) {
  EXPECT_EQ(CompareArrays(F32({2}, {NAN, INFINITY}), F32({2}, {NAN, INFINITY}), 0, 0), "");
  EXPECT_NE(CompareArrays(F32({2}, {NAN, 1}), F32({2}, {0, 1}), 1, 1), "");
  EXPECT_NE(CompareArrays(F32({2}, {0, 1}), F32({2}, {NAN, 1}), 1, 1), "");
  EXPECT_NE(CompareArrays(F32({2}, {-INFINITY, 1}), F32({2}, {INFINITY, 1}), 1, 1), "");
  EXPECT_NE(CompareArrays(F32({1, 2}, {0, 1}), F32({2}, {0, 1}), 0, 0).find("shape [1,2], want [2]"),
            std::string::npos);
  NpyArray i32;
  i32.dtype = KILN_DTYPE_I32;
  i32.shape = {2};
  i32.data.assign(8, 0);
  EXPECT_NE(CompareArrays(i32, F32({2}, {0, 0}), 0, 0).find("dtype"), std::string::npos);
}

}  // namespace
}  // namespace kiln::tools
