#include "pipeline.h"

#include <chrono>

#include "crop.h"
#include "ctc_decode.h"
#include "npy_write.h"

namespace ocr {

PipelineOptions OcrNodeOptions() {
  PipelineOptions o;
  o.det_norm = UnitNormalization();
  o.rec_norm = UnitNormalization();
  o.det.thresh = 0.03f;
  o.det.box_thresh = 0.f;
  return o;
}

namespace {
double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}
}  // namespace

Pipeline::Pipeline(KilnModel* det, KilnModel* cls, KilnModel* rec,
                   std::vector<std::string> characters, PipelineOptions options)
    : det_(det), cls_(cls), rec_(rec), characters_(std::move(characters)), options_(options) {}

bool Pipeline::RunModel(KilnModel* model, const std::string& name, std::string* error) {
  if (!model->Run(input_, &output_, error)) return false;
  if (options_.dump_dir.empty()) return true;
  const kiln_tensor_signature_t& r = model->result_signature();
  return WriteNpyF32(options_.dump_dir + "/" + name + "_in.npy",
                     {1, 3, model->input_height(), model->input_width()}, input_.data(),
                     input_.size(), error) &&
         WriteNpyF32(options_.dump_dir + "/" + name + "_out.npy",
                     std::vector<int64_t>(r.dims, r.dims + r.rank), output_.data(),
                     output_.size(), error);
}

bool Pipeline::Check(std::string* error) const {
  const int dh = det_->input_height(), dw = det_->input_width();
  if (det_->output_elements() != static_cast<size_t>(dh) * dw) {
    *error = "det model: output " + ShapeString(det_->result_signature()) +
             " is not one map of the input's " + std::to_string(dh) + "x" + std::to_string(dw);
    return false;
  }
  if (cls_ && cls_->output_elements() != 2) {
    *error = "cls model: output " + ShapeString(cls_->result_signature()) +
             " is not 2 class probabilities [P(0), P(180)]";
    return false;
  }
  const kiln_tensor_signature_t& rs = rec_->result_signature();
  if (rs.rank != 3 || rs.dims[0] != 1 || rs.dims[2] != static_cast<int64_t>(characters_.size())) {
    *error = "rec model: output " + ShapeString(rs) + " is not [1,T," +
             std::to_string(characters_.size()) + "] (blank + " +
             std::to_string(characters_.size() - 2) + " dictionary characters + space)";
    return false;
  }
  return true;
}

bool Pipeline::Run(const cv::Mat& image, std::vector<TextLine>* lines, StageTimes* t,
                   std::string* error) {
  using Clock = std::chrono::steady_clock;
  if (!Check(error)) return false;
  *t = StageTimes{};
  lines->clear();
  const auto start = Clock::now();

  // --- detection ---
  auto t0 = Clock::now();
  const int dh = det_->input_height(), dw = det_->input_width();
  DetGeometry geometry = PreprocessDet(image, dw, dh, options_.det_norm, &input_);
  auto t1 = Clock::now();
  if (!RunModel(det_, "det", error)) return false;
  auto t2 = Clock::now();
  cv::Mat prob(dh, dw, CV_32F, output_.data());
  std::vector<DetBox> boxes = DetPostprocess(prob, geometry, options_.det);
  auto t3 = Clock::now();
  t->det_pre = Ms(t0, t1), t->det_model = Ms(t1, t2), t->det_post = Ms(t2, t3);
  t->lines_detected = static_cast<int>(boxes.size());

  // --- crops and direction classification ---
  std::vector<cv::Mat> crops;
  std::vector<bool> turned(boxes.size(), false);
  auto c0 = Clock::now();
  for (const DetBox& b : boxes) crops.push_back(RotateCrop(image, b.quad));
  t->cls_pre += Ms(c0, Clock::now());
  if (cls_) {
    for (size_t i = 0; i < crops.size(); ++i) {
      if (crops[i].empty()) continue;
      auto a = Clock::now();
      PreprocessLine(crops[i], cls_->input_width(), cls_->input_height(), options_.cls_norm,
                     &input_);
      auto b = Clock::now();
      if (!RunModel(cls_, "cls_" + std::to_string(i), error)) return false;
      auto c = Clock::now();
      if (output_[1] > output_[0] && output_[1] > options_.cls_thresh) {
        crops[i] = Rotate180(crops[i]);
        turned[i] = true;
      }
      t->cls_pre += Ms(a, b) + Ms(c, Clock::now());
      t->cls_model += Ms(b, c);
    }
  }

  // --- recognition ---
  const kiln_tensor_signature_t& rs = rec_->result_signature();
  for (size_t i = 0; i < crops.size(); ++i) {
    if (crops[i].empty()) continue;
    auto a = Clock::now();
    PreprocessLine(crops[i], rec_->input_width(), rec_->input_height(), options_.rec_norm,
                   &input_);
    auto b = Clock::now();
    if (!RunModel(rec_, "rec_" + std::to_string(i), error)) return false;
    auto c = Clock::now();
    Decoded d = CtcGreedyDecode(output_.data(), static_cast<int>(rs.dims[1]),
                                static_cast<int>(rs.dims[2]), characters_);
    if (d.confidence >= options_.drop_score) {
      lines->push_back({d.text, d.confidence, boxes[i].quad, turned[i]});
    }
    auto e = Clock::now();
    t->rec_pre += Ms(a, b), t->rec_model += Ms(b, c), t->rec_post += Ms(c, e);
  }
  t->total = Ms(start, Clock::now());
  return true;
}

}  // namespace ocr
