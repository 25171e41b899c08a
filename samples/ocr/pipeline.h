// The PaddleOCR system: detect -> (classify direction) -> recognize, on three
// KilnModels sharing one context.
//
// Source: PaddleOCR tools/infer/predict_system.py (TextSystem.__call__):
// det boxes in reading order, a perspective crop per box, the direction
// classifier turning crops it reads as "180" with score > 0.9, recognition
// with CTC decoding, and lines with confidence < 0.5 dropped.
#ifndef KILN_SAMPLES_OCR_PIPELINE_H_
#define KILN_SAMPLES_OCR_PIPELINE_H_

#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "det_postprocess.h"
#include "kiln_model.h"
#include "preprocess.h"

namespace ocr {

struct PipelineOptions {
  DetParams det;
  Normalization det_norm = DetNormalization();
  Normalization cls_norm = LineNormalization();
  Normalization rec_norm = LineNormalization();
  float cls_thresh = 0.9f;   // turn a crop when P(180) > cls_thresh and P(180) > P(0)
  float drop_score = 0.5f;   // drop lines whose confidence is below
  // When set, every model call writes its input and output there as .npy:
  // det_in/det_out, cls_in_<i>/cls_out_<i>, rec_in_<i>/rec_out_<i> (i: box
  // index in reading order), so they can be replayed through ONNX Runtime.
  std::string dump_dir;
};

// The pre/post-processing of @gutenye/ocr-node 1.4.8 (the reference the
// tests compare with): det and rec inputs x / 255 without mean/std, the map
// binarised at 0.03, no box score filter. It has no direction classifier:
// run without --cls to match it.
PipelineOptions OcrNodeOptions();

struct TextLine {
  std::string text;    // UTF-8
  float confidence;    // CTC mean probability
  Quad box;            // source-image pixels, clockwise from top-left
  bool turned = false; // the classifier turned the crop by 180 degrees
};

// Wall-clock milliseconds per stage of one image. "model" is the invoke
// (write input, run, read output); pre/post are host work.
struct StageTimes {
  double det_pre = 0, det_model = 0, det_post = 0;
  double cls_pre = 0, cls_model = 0;   // cls_pre includes the crops
  double rec_pre = 0, rec_model = 0, rec_post = 0;
  double total = 0;
  int lines_detected = 0;
};

class Pipeline {
 public:
  // `cls` may be null (no direction classification). The models must be
  // initialised; `characters` is LoadCharacters' output and must match the
  // rec model's class count (checked by Run).
  Pipeline(KilnModel* det, KilnModel* cls, KilnModel* rec, std::vector<std::string> characters,
           PipelineOptions options);

  // Checks the models' output shapes against their roles: det one map of
  // its input's H x W, cls 2 probabilities, rec [1, T, characters.size()].
  // Returns false with *error naming the model. Run() checks this first.
  bool Check(std::string* error) const;

  // OCR of `image` (CV_8UC3 BGR). Lines in reading order (PaddleOCR's
  // sorted_boxes). Returns false with *error set on a Kiln or shape error.
  bool Run(const cv::Mat& image, std::vector<TextLine>* lines, StageTimes* times,
           std::string* error);

 private:
  KilnModel* det_;
  KilnModel* cls_;
  KilnModel* rec_;
  std::vector<std::string> characters_;
  PipelineOptions options_;
  // Runs `model` on input_ into output_; dumps both when dump_dir is set.
  bool RunModel(KilnModel* model, const std::string& name, std::string* error);

  std::vector<float> input_, output_;  // reused across calls
};

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_PIPELINE_H_
