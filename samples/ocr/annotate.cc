#include "annotate.h"

#include <algorithm>

#include <opencv2/imgproc.hpp>

namespace ocr {

std::string AsciiOnly(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else if ((c & 0xC0) != 0x80) {  // first byte of a character (or a control)
      out += '?';
    }
  }
  return out;
}

cv::Mat Annotate(const cv::Mat& image, const std::vector<TextLine>& lines) {
  cv::Mat out = image.clone();
  for (const TextLine& line : lines) {
    std::vector<cv::Point> poly;
    for (const cv::Point2f& p : line.box) poly.emplace_back(cvRound(p.x), cvRound(p.y));
    cv::polylines(out, std::vector<std::vector<cv::Point>>{poly}, true, cv::Scalar(0, 0, 255), 2);
    const double h = std::max(8.0, cv::norm(line.box[0] - line.box[3]));
    const double scale = std::clamp(h / 40.0, 0.4, 1.5);
    cv::Point org(poly[0].x, std::max(12, poly[0].y - 4));
    cv::putText(out, AsciiOnly(line.text), org, cv::FONT_HERSHEY_SIMPLEX, scale,
                cv::Scalar(255, 0, 0), 1, cv::LINE_AA);
  }
  return out;
}

}  // namespace ocr
