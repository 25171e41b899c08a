// Image -> model input tensors for the three PaddleOCR models.
//
// Sources: PaddleOCR (ppocr/data/imaug/operators.py: DetResizeForTest,
// NormalizeImage, ToCHWImage; tools/infer/predict_cls.py and predict_rec.py:
// resize_norm_img) and @gutenye/ocr-node 1.4.8 (models/ModelBase.ts
// imageToInput), the reference this sample is compared with.
//
// Images are OpenCV 8-bit BGR (CV_8UC3), as cv::imread returns them; tensors
// are float32, NCHW with N = 1, channel 0 = B, 1 = G, 2 = R (PaddleOCR feeds
// its models BGR planes, and so does ocr-node).
#ifndef KILN_SAMPLES_OCR_PREPROCESS_H_
#define KILN_SAMPLES_OCR_PREPROCESS_H_

#include <vector>

#include <opencv2/core.hpp>

namespace ocr {

// Per-channel normalisation: value = (pixel / 255 - mean[c]) / std[c], c in
// B, G, R order.
struct Normalization {
  float mean[3];
  float std[3];
};

// PaddleOCR's det NormalizeImage: ImageNet mean/std applied to the BGR planes
// in that order (mean 0.485 on B, as PaddleOCR does with cv2 images).
Normalization DetNormalization();
// PaddleOCR's cls/rec normalisation: (x / 255 - 0.5) / 0.5, in [-1, 1].
Normalization LineNormalization();
// ocr-node's imageToInput: x / 255, no mean/std (for the det and rec models).
Normalization UnitNormalization();

// Where the image landed in the det canvas: the map's [0, resized_w) x
// [0, resized_h) covers the whole source image of src_w x src_h pixels.
struct DetGeometry {
  int src_w = 0, src_h = 0;
  int resized_w = 0, resized_h = 0;
  int canvas_w = 0, canvas_h = 0;
};

// Det input: `image` resized (bilinear) keeping its aspect ratio to fit a
// canvas_w x canvas_h canvas (scale = min(canvas_w / w, canvas_h / h), so
// small images are enlarged; resized sides are rounded and at least 1 px),
// placed at the top-left corner, normalised, and padded with zeros on the
// right and bottom (zero in normalised units). `out` receives
// 3 * canvas_h * canvas_w floats (CHW). An image of exactly the canvas size
// is copied unscaled. Returns the geometry for DetPostprocess.
DetGeometry PreprocessDet(const cv::Mat& image, int canvas_w, int canvas_h,
                          const Normalization& norm, std::vector<float>* out);

// cls / rec input, PaddleOCR's resize_norm_img: the crop is resized
// (bilinear) to height `height` and width min(width, ceil(height * w / h)),
// normalised, and zero-padded on the right up to `width`. `out` receives
// 3 * height * width floats (CHW). Returns the resized width.
int PreprocessLine(const cv::Mat& crop, int width, int height, const Normalization& norm,
                   std::vector<float>* out);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_PREPROCESS_H_
