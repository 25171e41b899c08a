#include "det_postprocess.h"

#include <algorithm>
#include <cmath>

#include <clipper.hpp>
#include <opencv2/imgproc.hpp>

namespace ocr {

MiniBox GetMiniBox(const std::vector<cv::Point2f>& points) {
  cv::RotatedRect rect = cv::minAreaRect(points);
  cv::Point2f corners[4];
  rect.points(corners);
  std::array<cv::Point2f, 4> p = {corners[0], corners[1], corners[2], corners[3]};
  std::stable_sort(p.begin(), p.end(),
                   [](const cv::Point2f& a, const cv::Point2f& b) { return a.x < b.x; });
  int i1, i2, i3, i4;
  if (p[1].y > p[0].y) {
    i1 = 0, i4 = 1;
  } else {
    i1 = 1, i4 = 0;
  }
  if (p[3].y > p[2].y) {
    i2 = 2, i3 = 3;
  } else {
    i2 = 3, i3 = 2;
  }
  return {{p[i1], p[i2], p[i3], p[i4]}, std::min(rect.size.width, rect.size.height)};
}

float BoxScoreFast(const cv::Mat& prob, const Quad& quad) {
  const int h = prob.rows, w = prob.cols;
  float minx = quad[0].x, maxx = quad[0].x, miny = quad[0].y, maxy = quad[0].y;
  for (const cv::Point2f& p : quad) {
    minx = std::min(minx, p.x), maxx = std::max(maxx, p.x);
    miny = std::min(miny, p.y), maxy = std::max(maxy, p.y);
  }
  int xmin = std::clamp(static_cast<int>(std::floor(minx)), 0, w - 1);
  int xmax = std::clamp(static_cast<int>(std::ceil(maxx)), 0, w - 1);
  int ymin = std::clamp(static_cast<int>(std::floor(miny)), 0, h - 1);
  int ymax = std::clamp(static_cast<int>(std::ceil(maxy)), 0, h - 1);
  cv::Mat mask = cv::Mat::zeros(ymax - ymin + 1, xmax - xmin + 1, CV_8U);
  std::vector<cv::Point> poly;
  // numpy's astype("int32") truncates toward zero.
  for (const cv::Point2f& p : quad) {
    poly.emplace_back(static_cast<int>(p.x - xmin), static_cast<int>(p.y - ymin));
  }
  cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(1));
  return static_cast<float>(
      cv::mean(prob(cv::Rect(xmin, ymin, xmax - xmin + 1, ymax - ymin + 1)), mask)[0]);
}

std::vector<cv::Point2f> Unclip(const Quad& quad, float ratio) {
  double area = 0, length = 0;
  for (int i = 0; i < 4; ++i) {
    const cv::Point2f& a = quad[i];
    const cv::Point2f& b = quad[(i + 1) % 4];
    area += static_cast<double>(a.x) * b.y - static_cast<double>(b.x) * a.y;
    length += std::hypot(static_cast<double>(a.x) - b.x, static_cast<double>(a.y) - b.y);
  }
  area = std::abs(area) / 2;
  if (length <= 0) return {};
  double distance = area * ratio / length;
  ClipperLib::Path path;
  for (const cv::Point2f& p : quad) path.emplace_back(std::llround(p.x), std::llround(p.y));
  ClipperLib::ClipperOffset offset;
  offset.AddPath(path, ClipperLib::jtRound, ClipperLib::etClosedPolygon);
  ClipperLib::Paths solution;
  offset.Execute(solution, distance);
  if (solution.size() != 1) return {};
  std::vector<cv::Point2f> out;
  for (const ClipperLib::IntPoint& p : solution[0]) {
    out.emplace_back(static_cast<float>(p.X), static_cast<float>(p.Y));
  }
  return out;
}

Quad OrderPointsClockwise(const Quad& pts) {
  int imin = 0, imax = 0;
  for (int i = 1; i < 4; ++i) {
    if (pts[i].x + pts[i].y < pts[imin].x + pts[imin].y) imin = i;
    if (pts[i].x + pts[i].y > pts[imax].x + pts[imax].y) imax = i;
  }
  int rest[2], n = 0;
  for (int i = 0; i < 4; ++i) {
    if (i != imin && i != imax && n < 2) rest[n++] = i;
  }
  if (n < 2) return pts;  // degenerate (all corners equal)
  const cv::Point2f& a = pts[rest[0]];
  const cv::Point2f& b = pts[rest[1]];
  // numpy diff along axis 1: y - x. argmin first on ties.
  bool a_first = (a.y - a.x) <= (b.y - b.x);
  return {pts[imin], a_first ? a : b, pts[imax], a_first ? b : a};
}

void SortBoxes(std::vector<DetBox>* boxes) {
  std::stable_sort(boxes->begin(), boxes->end(), [](const DetBox& a, const DetBox& b) {
    if (a.quad[0].y != b.quad[0].y) return a.quad[0].y < b.quad[0].y;
    return a.quad[0].x < b.quad[0].x;
  });
  auto& v = *boxes;
  for (size_t i = 0; i + 1 < v.size(); ++i) {
    for (size_t j = i + 1; j-- > 0;) {
      if (std::abs(v[j + 1].quad[0].y - v[j].quad[0].y) < 10 && v[j + 1].quad[0].x < v[j].quad[0].x) {
        std::swap(v[j], v[j + 1]);
      } else {
        break;
      }
    }
  }
}

std::vector<DetBox> DetPostprocess(const cv::Mat& prob_canvas, const DetGeometry& g,
                                   const DetParams& params) {
  cv::Mat prob = prob_canvas(cv::Rect(0, 0, g.resized_w, g.resized_h));
  cv::Mat bitmap = prob > params.thresh;  // CV_8U, 255 where text
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(bitmap, contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);
  const size_t n = std::min(contours.size(), static_cast<size_t>(params.max_candidates));
  const float sx = static_cast<float>(g.src_w) / g.resized_w;
  const float sy = static_cast<float>(g.src_h) / g.resized_h;
  std::vector<DetBox> boxes;
  for (size_t i = 0; i < n; ++i) {
    std::vector<cv::Point2f> contour(contours[i].begin(), contours[i].end());
    MiniBox mini = GetMiniBox(contour);
    if (mini.short_side < params.min_size) continue;
    float score = BoxScoreFast(prob, mini.quad);
    if (params.box_thresh > score) continue;
    std::vector<cv::Point2f> expanded = Unclip(mini.quad, params.unclip_ratio);
    if (expanded.empty()) continue;
    MiniBox box = GetMiniBox(expanded);
    if (box.short_side < params.min_size + 2) continue;
    Quad q;
    for (int k = 0; k < 4; ++k) {
      q[k].x = std::clamp(std::round(box.quad[k].x * sx), 0.f, static_cast<float>(g.src_w));
      q[k].y = std::clamp(std::round(box.quad[k].y * sy), 0.f, static_cast<float>(g.src_h));
    }
    q = OrderPointsClockwise(q);
    for (cv::Point2f& p : q) {
      p.x = std::clamp(p.x, 0.f, static_cast<float>(g.src_w - 1));
      p.y = std::clamp(p.y, 0.f, static_cast<float>(g.src_h - 1));
    }
    int rect_w = static_cast<int>(cv::norm(q[0] - q[1]));
    int rect_h = static_cast<int>(cv::norm(q[0] - q[3]));
    if (rect_w <= 3 || rect_h <= 3) continue;
    boxes.push_back({q, score});
  }
  SortBoxes(&boxes);
  return boxes;
}

}  // namespace ocr
