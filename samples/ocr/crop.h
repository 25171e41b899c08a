// Cutting text lines out of the source image.
//
// Source: PaddleOCR tools/infer/utility.py get_rotate_crop_image and
// predict_system.py (the 180 degree turn after the direction classifier).
#ifndef KILN_SAMPLES_OCR_CROP_H_
#define KILN_SAMPLES_OCR_CROP_H_

#include <opencv2/core.hpp>

#include "det_postprocess.h"

namespace ocr {

// Perspective crop of `quad` (clockwise from top-left, pixels of `image`):
// width = int(max(|q0 q1|, |q2 q3|)), height = int(max(|q0 q3|, |q1 q2|)),
// cv::warpPerspective with bicubic interpolation and replicated borders. A
// crop at least 1.5 times as tall as wide is turned 90 degrees counter-
// clockwise (numpy.rot90), so vertical text lines come out horizontal.
// `image` is any OpenCV type (CV_8UC3 in the pipeline). Returns an empty Mat
// for a quad narrower or lower than 1 px.
cv::Mat RotateCrop(const cv::Mat& image, const Quad& quad);

// Turns `crop` by 180 degrees (cv::rotate ROTATE_180), as PaddleOCR does when
// the direction classifier says "180" with a score above its threshold.
cv::Mat Rotate180(const cv::Mat& crop);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_CROP_H_
