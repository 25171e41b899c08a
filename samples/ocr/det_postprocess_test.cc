#include "det_postprocess.h"

#include <gtest/gtest.h>

namespace ocr {
namespace {

void ExpectQuadNear(const Quad& q, const Quad& want, float tol) {
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(q[i].x, want[i].x, tol) << "corner " << i;
    EXPECT_NEAR(q[i].y, want[i].y, tol) << "corner " << i;
  }
}

TEST(GetMiniBox, AxisAlignedRectangleCornersInOrder) {
  MiniBox b = GetMiniBox({{50, 30}, {10, 20}, {30, 20}, {10, 30}, {50, 20}});
  ExpectQuadNear(b.quad, {{{10, 20}, {50, 20}, {50, 30}, {10, 30}}}, 1e-4f);
  EXPECT_NEAR(b.short_side, 10.f, 1e-4);
}

TEST(BoxScoreFast, MeanOverTheFilledPolygon) {
  cv::Mat prob = cv::Mat::zeros(10, 10, CV_32F);
  prob(cv::Rect(2, 3, 4, 4)).setTo(1.f);  // x 2..5, y 3..6
  EXPECT_FLOAT_EQ(BoxScoreFast(prob, {{{2, 3}, {5, 3}, {5, 6}, {2, 6}}}), 1.f);
  // The whole map: 16 ones in 100 pixels.
  EXPECT_FLOAT_EQ(BoxScoreFast(prob, {{{0, 0}, {9, 0}, {9, 9}, {0, 9}}}), 0.16f);
}

TEST(Unclip, SquareGrowsByAreaTimesRatioOverPerimeter) {
  // 10 x 10: distance = 100 * 1.5 / 40 = 3.75 on every side.
  std::vector<cv::Point2f> out = Unclip({{{0, 0}, {10, 0}, {10, 10}, {0, 10}}}, 1.5f);
  ASSERT_FALSE(out.empty());
  MiniBox b = GetMiniBox(out);
  EXPECT_NEAR(b.short_side, 17.5f, 0.6f);
  EXPECT_NEAR(b.quad[0].x, -3.75f, 0.6f);
  EXPECT_NEAR(b.quad[2].y, 13.75f, 0.6f);
}

TEST(OrderPointsClockwise, FromAnyOrder) {
  Quad q = OrderPointsClockwise({{{50, 30}, {10, 20}, {10, 30}, {50, 20}}});
  ExpectQuadNear(q, {{{10, 20}, {50, 20}, {50, 30}, {10, 30}}}, 0.f);
}

TEST(SortBoxes, TopToBottomThenLeftToRightWithinTenPixels) {
  auto box = [](float x, float y) { return DetBox{{{{x, y}, {x + 5, y}, {x + 5, y + 5}, {x, y + 5}}}, 1.f}; };
  std::vector<DetBox> v = {box(100, 50), box(10, 52), box(10, 10), box(5, 70)};
  SortBoxes(&v);
  EXPECT_EQ(v[0].quad[0], cv::Point2f(10, 10));
  EXPECT_EQ(v[1].quad[0], cv::Point2f(10, 52));  // y 52 vs 50: same line, x first
  EXPECT_EQ(v[2].quad[0], cv::Point2f(100, 50));
  EXPECT_EQ(v[3].quad[0], cv::Point2f(5, 70));
}

// A 20 x 6 block of probability 0.9 at x 4..23, y 8..13 of the map. Contour
// corners (4,8)-(23,13): 19 x 5, area 95, perimeter 48, unclip distance
// 95 * 1.5 / 48 = 2.97 -> about x 1..26, y 5..16 in the map; the image is
// twice the map (64 x 64 source, 32 x 32 resized): x 2..52, y 10..32.
TEST(DetPostprocess, OneBlockScaledToTheSource) {
  cv::Mat prob = cv::Mat::zeros(64, 64, CV_32F);
  prob(cv::Rect(4, 8, 20, 6)).setTo(0.9f);
  prob(cv::Rect(40, 40, 20, 6)).setTo(0.9f);  // in the padding: ignored
  prob(cv::Rect(4, 20, 20, 6)).setTo(0.4f);   // above 0.3 but mean 0.4 < 0.6: dropped
  DetGeometry g;
  g.src_w = 64, g.src_h = 64, g.resized_w = 32, g.resized_h = 32, g.canvas_w = 64, g.canvas_h = 64;
  std::vector<DetBox> boxes = DetPostprocess(prob, g, DetParams{});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_NEAR(boxes[0].score, 0.9f, 1e-5);
  ExpectQuadNear(boxes[0].quad, {{{2, 10}, {52, 10}, {52, 32}, {2, 32}}}, 2.f);
  // Binarised at 0.3 with no score filter, the 0.4 block is kept too.
  DetParams keep_all;
  keep_all.box_thresh = 0.f;
  EXPECT_EQ(DetPostprocess(prob, g, keep_all).size(), 2u);
}

}  // namespace
}  // namespace ocr
