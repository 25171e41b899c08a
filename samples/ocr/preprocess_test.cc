#include "preprocess.h"

#include <gtest/gtest.h>

namespace ocr {
namespace {

// A constant image stays constant under bilinear resizing, so every value is
// the hand-computed normalisation of its pixel.
TEST(PreprocessDet, NormalisesBgrPlanesAndPadsRightAndBottom) {
  cv::Mat image(1, 2, CV_8UC3, cv::Scalar(255, 0, 128));  // B, G, R
  std::vector<float> out;
  DetGeometry g = PreprocessDet(image, 4, 4, DetNormalization(), &out);
  // scale = min(4/2, 4/1) = 2 -> 4 x 2 at the top of a 4 x 4 canvas.
  EXPECT_EQ(g.resized_w, 4);
  EXPECT_EQ(g.resized_h, 2);
  EXPECT_EQ(g.src_w, 2);
  EXPECT_EQ(g.src_h, 1);
  ASSERT_EQ(out.size(), 3u * 16);
  const float b = (1.0f - 0.485f) / 0.229f;         // 2.24891
  const float gr = (0.0f - 0.456f) / 0.224f;        // -2.03571
  const float r = (128 / 255.0f - 0.406f) / 0.225f; // 0.42649
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      const bool inside = y < 2;
      EXPECT_NEAR(out[0 * 16 + y * 4 + x], inside ? b : 0.f, 1e-5) << y << "," << x;
      EXPECT_NEAR(out[1 * 16 + y * 4 + x], inside ? gr : 0.f, 1e-5);
      EXPECT_NEAR(out[2 * 16 + y * 4 + x], inside ? r : 0.f, 1e-5);
    }
  }
}

TEST(PreprocessDet, CanvasSizedImageIsCopiedUnscaled) {
  cv::Mat image(2, 3, CV_8UC3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x) image.at<cv::Vec3b>(y, x) = cv::Vec3b(10 * x + y, 0, 0);
  std::vector<float> out;
  DetGeometry g = PreprocessDet(image, 3, 2, UnitNormalization(), &out);
  EXPECT_EQ(g.resized_w, 3);
  EXPECT_EQ(g.resized_h, 2);
  EXPECT_FLOAT_EQ(out[1 * 3 + 2], 21 / 255.0f);  // B plane, y=1, x=2
  EXPECT_FLOAT_EQ(out[6 + 0], 0.f);              // G plane
}

TEST(PreprocessLine, ResizesToHeightAndPadsRight) {
  cv::Mat crop(10, 20, CV_8UC3, cv::Scalar(255, 255, 0));
  std::vector<float> out;
  // ratio 2 -> width ceil(48 * 2) = 96 of 192.
  EXPECT_EQ(PreprocessLine(crop, 192, 48, LineNormalization(), &out), 96);
  ASSERT_EQ(out.size(), 3u * 48 * 192);
  EXPECT_FLOAT_EQ(out[0], 1.f);               // B: (1 - 0.5) / 0.5
  EXPECT_FLOAT_EQ(out[95], 1.f);
  EXPECT_FLOAT_EQ(out[96], 0.f);              // padding
  EXPECT_FLOAT_EQ(out[2 * 48 * 192 + 5], -1.f);  // R: (0 - 0.5) / 0.5
}

TEST(PreprocessLine, WideCropIsSqueezedToTheWidth) {
  cv::Mat crop(10, 1000, CV_8UC3, cv::Scalar(0, 0, 0));
  std::vector<float> out;
  EXPECT_EQ(PreprocessLine(crop, 320, 48, LineNormalization(), &out), 320);
  // ratio 0.35 -> ceil(16.8) = 17.
  cv::Mat tall(40, 14, CV_8UC3, cv::Scalar(0, 0, 0));
  EXPECT_EQ(PreprocessLine(tall, 320, 48, LineNormalization(), &out), 17);
}

}  // namespace
}  // namespace ocr
