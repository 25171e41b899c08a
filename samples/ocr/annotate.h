// --annotate: the source image with each line's box and text drawn on it.
#ifndef KILN_SAMPLES_OCR_ANNOTATE_H_
#define KILN_SAMPLES_OCR_ANNOTATE_H_

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "pipeline.h"

namespace ocr {

// Returns a copy of `image` (CV_8UC3) with every box outlined in red and
// its text above it in blue (OpenCV's Hershey font: characters outside
// printable ASCII are drawn as '?').
cv::Mat Annotate(const cv::Mat& image, const std::vector<TextLine>& lines);

// `text` with every byte sequence outside printable ASCII replaced by '?'
// (one per UTF-8 character).
std::string AsciiOnly(const std::string& text);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_ANNOTATE_H_
