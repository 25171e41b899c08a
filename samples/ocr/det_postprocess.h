// Text detection post-processing: probability map -> text boxes.
//
// Source: PaddleOCR's DBPostProcess (ppocr/postprocess/db_postprocess.py,
// "Real-time Scene Text Detection with Differentiable Binarization", Liao et
// al., AAAI 2020) with the inference defaults of tools/infer/utility.py
// (det_db_thresh 0.3, det_db_box_thresh 0.6, det_db_unclip_ratio 1.5,
// score_mode "fast", max 1000 candidates, min side 3), then
// TextDetector.filter_tag_det_res and TextSystem's sorted_boxes
// (tools/infer/predict_det.py, predict_system.py). OpenCV does the contours,
// minimum-area rectangles and polygon filling; Clipper (polyclipping) the
// unclip offset.
#ifndef KILN_SAMPLES_OCR_DET_POSTPROCESS_H_
#define KILN_SAMPLES_OCR_DET_POSTPROCESS_H_

#include <array>
#include <vector>

#include <opencv2/core.hpp>

#include "preprocess.h"

namespace ocr {

// Four corners in pixels: top-left, top-right, bottom-right, bottom-left.
using Quad = std::array<cv::Point2f, 4>;

struct DetParams {
  float thresh = 0.3f;         // probability > thresh is text (binarisation)
  float box_thresh = 0.6f;     // drop boxes whose mean probability is below; 0: keep all
  float unclip_ratio = 1.5f;   // offset distance = area * ratio / perimeter
  int max_candidates = 1000;   // contours considered, in findContours order
  int min_size = 3;            // drop boxes whose short side is < min_size (map px)
};

struct DetBox {
  Quad quad;    // source-image pixels, integral values, clockwise from top-left
  float score;  // mean probability inside the box before unclipping
};

// The box PaddleOCR's get_mini_boxes returns: the minimum-area rectangle of
// `points` with its corners ordered top-left, top-right, bottom-right,
// bottom-left (sorted by x; the upper of each x pair first), and its short
// side length.
struct MiniBox {
  Quad quad;
  float short_side;
};
MiniBox GetMiniBox(const std::vector<cv::Point2f>& points);

// Mean of `prob` (CV_32F) over the pixels of `quad` filled as a polygon
// (cv::fillPoly on its bounding box, corners truncated to int):
// PaddleOCR's box_score_fast.
float BoxScoreFast(const cv::Mat& prob, const Quad& quad);

// Expands `quad` by distance = area * ratio / perimeter with Clipper's round
// offset (jtRound, etClosedPolygon; corners rounded to integers first).
// Returns the expanded polygon, or an empty vector when the offset does not
// give exactly one polygon.
std::vector<cv::Point2f> Unclip(const Quad& quad, float ratio);

// PaddleOCR's order_points_clockwise: top-left has the smallest x + y,
// bottom-right the largest; of the other two, top-right has the smaller y - x.
Quad OrderPointsClockwise(const Quad& quad);

// PaddleOCR's sorted_boxes: by top-left (y, x), then boxes whose top-left y
// differ by < 10 px are put left to right (one bubble pass).
void SortBoxes(std::vector<DetBox>* boxes);

// The whole post-processing. `prob` is the det model's map, CV_32F of
// geometry.canvas_h x geometry.canvas_w; only its top-left resized_w x
// resized_h part (the image, not the padding) is searched. Boxes come back in
// source-image pixels (scaled by src / resized, rounded, clipped to the
// image), clockwise from top-left, in reading order; boxes with a side of
// <= 3 px are dropped.
std::vector<DetBox> DetPostprocess(const cv::Mat& prob, const DetGeometry& geometry,
                                   const DetParams& params);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_DET_POSTPROCESS_H_
