#include "crop.h"

#include <gtest/gtest.h>

namespace ocr {
namespace {

// Channel 0 holds x, channel 1 holds y: a crop's pixels say where they came
// from. Bicubic sampling at integer positions returns the exact values.
cv::Mat Coordinates() {
  cv::Mat m(50, 100, CV_8UC3);
  for (int y = 0; y < 50; ++y)
    for (int x = 0; x < 100; ++x) m.at<cv::Vec3b>(y, x) = cv::Vec3b(x, y, 7);
  return m;
}

TEST(RotateCrop, AxisAlignedBoxIsATranslation) {
  cv::Mat crop = RotateCrop(Coordinates(), {{{10, 5}, {40, 5}, {40, 15}, {10, 15}}});
  ASSERT_EQ(crop.cols, 30);
  ASSERT_EQ(crop.rows, 10);
  EXPECT_EQ(crop.at<cv::Vec3b>(0, 0), cv::Vec3b(10, 5, 7));
  EXPECT_EQ(crop.at<cv::Vec3b>(9, 29), cv::Vec3b(39, 14, 7));
}

TEST(RotateCrop, TallCropIsTurnedCounterClockwise) {
  // 10 wide, 40 tall: ratio 4 >= 1.5 -> numpy.rot90: out[i][j] = crop[j][9 - i].
  cv::Mat crop = RotateCrop(Coordinates(), {{{10, 5}, {20, 5}, {20, 45}, {10, 45}}});
  ASSERT_EQ(crop.cols, 40);
  ASSERT_EQ(crop.rows, 10);
  EXPECT_EQ(crop.at<cv::Vec3b>(0, 0), cv::Vec3b(19, 5, 7));
  EXPECT_EQ(crop.at<cv::Vec3b>(9, 0), cv::Vec3b(10, 5, 7));
  EXPECT_EQ(crop.at<cv::Vec3b>(0, 39), cv::Vec3b(19, 44, 7));
}

TEST(RotateCrop, DegenerateBoxGivesAnEmptyCrop) {
  EXPECT_TRUE(RotateCrop(Coordinates(), {{{10, 5}, {10, 5}, {10, 5}, {10, 5}}}).empty());
}

TEST(Rotate180, TurnsBothAxes) {
  cv::Mat crop = RotateCrop(Coordinates(), {{{10, 5}, {40, 5}, {40, 15}, {10, 15}}});
  cv::Mat turned = Rotate180(crop);
  EXPECT_EQ(turned.at<cv::Vec3b>(0, 0), cv::Vec3b(39, 14, 7));
  EXPECT_EQ(turned.at<cv::Vec3b>(9, 29), cv::Vec3b(10, 5, 7));
}

}  // namespace
}  // namespace ocr
