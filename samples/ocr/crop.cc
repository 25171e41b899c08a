#include "crop.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>

namespace ocr {

cv::Mat RotateCrop(const cv::Mat& image, const Quad& q) {
  const int w = static_cast<int>(std::max(cv::norm(q[0] - q[1]), cv::norm(q[2] - q[3])));
  const int h = static_cast<int>(std::max(cv::norm(q[0] - q[3]), cv::norm(q[1] - q[2])));
  if (w < 1 || h < 1) return cv::Mat();
  const cv::Point2f src[4] = {q[0], q[1], q[2], q[3]};
  const cv::Point2f dst[4] = {{0.f, 0.f},
                              {static_cast<float>(w), 0.f},
                              {static_cast<float>(w), static_cast<float>(h)},
                              {0.f, static_cast<float>(h)}};
  cv::Mat m = cv::getPerspectiveTransform(src, dst);
  cv::Mat crop;
  cv::warpPerspective(image, crop, m, cv::Size(w, h), cv::INTER_CUBIC, cv::BORDER_REPLICATE);
  if (static_cast<double>(crop.rows) / crop.cols >= 1.5) {
    cv::Mat turned;
    cv::rotate(crop, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
    return turned;
  }
  return crop;
}

cv::Mat Rotate180(const cv::Mat& crop) {
  cv::Mat out;
  cv::rotate(crop, out, cv::ROTATE_180);
  return out;
}

}  // namespace ocr
