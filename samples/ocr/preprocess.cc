#include "preprocess.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace ocr {

Normalization DetNormalization() {
  return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}};
}
Normalization LineNormalization() { return {{0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}}; }
Normalization UnitNormalization() { return {{0.f, 0.f, 0.f}, {1.f, 1.f, 1.f}}; }

namespace {

// Writes `img` (CV_8UC3, at most width x height) normalised into the CHW
// planes of a zero-filled width x height tensor.
void WritePlanes(const cv::Mat& img, int width, int height, const Normalization& norm,
                 std::vector<float>* out) {
  out->assign(static_cast<size_t>(3) * width * height, 0.f);
  const size_t plane = static_cast<size_t>(width) * height;
  float scale[3], bias[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.f / (255.f * norm.std[c]);
    bias[c] = -norm.mean[c] / norm.std[c];
  }
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* row = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x) {
      for (int c = 0; c < 3; ++c) {
        (*out)[c * plane + static_cast<size_t>(y) * width + x] = row[3 * x + c] * scale[c] + bias[c];
      }
    }
  }
}

}  // namespace

DetGeometry PreprocessDet(const cv::Mat& image, int canvas_w, int canvas_h,
                          const Normalization& norm, std::vector<float>* out) {
  DetGeometry g;
  g.src_w = image.cols;
  g.src_h = image.rows;
  g.canvas_w = canvas_w;
  g.canvas_h = canvas_h;
  double scale = std::min(static_cast<double>(canvas_w) / image.cols,
                          static_cast<double>(canvas_h) / image.rows);
  g.resized_w = std::clamp(static_cast<int>(std::lround(image.cols * scale)), 1, canvas_w);
  g.resized_h = std::clamp(static_cast<int>(std::lround(image.rows * scale)), 1, canvas_h);
  cv::Mat resized;
  if (g.resized_w == image.cols && g.resized_h == image.rows) {
    resized = image;
  } else {
    cv::resize(image, resized, cv::Size(g.resized_w, g.resized_h), 0, 0, cv::INTER_LINEAR);
  }
  WritePlanes(resized, canvas_w, canvas_h, norm, out);
  return g;
}

int PreprocessLine(const cv::Mat& crop, int width, int height, const Normalization& norm,
                   std::vector<float>* out) {
  double ratio = static_cast<double>(crop.cols) / crop.rows;
  int resized_w = static_cast<int>(std::ceil(height * ratio));
  resized_w = std::clamp(resized_w, 1, width);
  cv::Mat resized;
  cv::resize(crop, resized, cv::Size(resized_w, height), 0, 0, cv::INTER_LINEAR);
  WritePlanes(resized, width, height, norm, out);
  return resized_w;
}

}  // namespace ocr
