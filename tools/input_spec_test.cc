// ParseInput (the --input syntax of kiln-run and kiln-bench) on literal
// specs, checked against hand-derived bytes.
#include "tools/input_spec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::tools {
namespace {

template <typename T>
std::vector<T> Values(const NpyArray& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

TEST(InputSpecTest, ListsAreRowMajor) {
  NpyArray a;
  std::string error;
  ASSERT_TRUE(ParseInput("2x2xf32=1,2.5,-3,4", &a, &error)) << error;
  EXPECT_EQ(a.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(Values<float>(a), (std::vector<float>{1, 2.5f, -3, 4}));
  ASSERT_TRUE(ParseInput("3xi64=-1,0,9223372036854775807", &a, &error)) << error;
  EXPECT_EQ(Values<int64_t>(a), (std::vector<int64_t>{-1, 0, INT64_MAX}));
}

// One value fills every element, for each element width (the splat copies
// the first element's bytes).
TEST(InputSpecTest, OneValueSplatsToEveryElement) {
  NpyArray a;
  std::string error;
  ASSERT_TRUE(ParseInput("7xi64=-2", &a, &error)) << error;
  EXPECT_EQ(Values<int64_t>(a), std::vector<int64_t>(7, -2));
  ASSERT_TRUE(ParseInput("3x5xf16=1.5", &a, &error)) << error;
  EXPECT_EQ(Values<uint16_t>(a), std::vector<uint16_t>(15, 0x3e00));  // binary16 1.5
  ASSERT_TRUE(ParseInput("5xu8=255", &a, &error)) << error;
  EXPECT_EQ(a.data, std::vector<uint8_t>(5, 255));
  ASSERT_TRUE(ParseInput("1000003xi16=-3", &a, &error)) << error;
  ASSERT_EQ(a.data.size(), 2000006u);
  std::vector<int16_t> v = Values<int16_t>(a);
  EXPECT_EQ(v.front(), -3);
  EXPECT_EQ(v.back(), -3);
  EXPECT_EQ(std::count(v.begin(), v.end(), int16_t{-3}), 1000003);
  ASSERT_TRUE(ParseInput("0x4xf32=5", &a, &error)) << error;
  EXPECT_TRUE(a.data.empty());
}

TEST(InputSpecTest, BadSpecsSayWhy) {
  NpyArray a;
  std::string error;
  EXPECT_FALSE(ParseInput("3xi8=300", &a, &error));
  EXPECT_NE(error.find("out of range"), std::string::npos) << error;
  EXPECT_FALSE(ParseInput("2x2xf32=1,2,3", &a, &error));
  EXPECT_NE(error.find("4 elements, 3 values"), std::string::npos) << error;
  EXPECT_FALSE(ParseInput("68719476736xf32=0", &a, &error));
  EXPECT_NE(error.find("limit"), std::string::npos) << error;
  EXPECT_FALSE(ParseInput("2xf32=abc", &a, &error));
  EXPECT_NE(error.find("bad f32 value 'abc'"), std::string::npos) << error;
}

}  // namespace
}  // namespace kiln::tools
