// kiln-ocr: PaddleOCR (PP-OCRv4 det + mobile v2.0 direction cls + PP-OCRv4
// rec) on a Kiln device, written against the public C API only.
//
//   kiln-ocr --det=D.kiln [--cls=C.kiln] --rec=R.kiln --keys=ppocr_keys_v1.txt
//            IMAGE [IMAGE ...] [--annotate=OUT.png] [--device=SUBSTRING]
//            [--preset=paddle|ocr-node] [--stats] [--dump=DIR]
//
// stdout: one line per text line, in reading order:
//   TEXT<TAB>CONFIDENCE<TAB>x0,y0 x1,y1 x2,y2 x3,y3
// (corners clockwise from top-left, source pixels); with several images, a
// line "# IMAGE" precedes each image's lines.
// stderr: the device, each stage's wall time per image, with --stats the
// device counters of each image (kiln_device_stats).
// Exit status: 0 on success, 1 on any error (message on stderr), 2 on usage.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <opencv2/imgcodecs.hpp>

#include "annotate.h"
#include "ctc_decode.h"
#include "kiln/kiln.h"
#include "kiln_model.h"
#include "pipeline.h"

namespace {

constexpr const char* kUsage =
    "usage: kiln-ocr --det=D.kiln [--cls=C.kiln] --rec=R.kiln --keys=ppocr_keys_v1.txt\n"
    "                IMAGE [IMAGE ...] [--annotate=OUT.png] [--device=SUBSTRING]\n"
    "                [--preset=paddle|ocr-node] [--stats] [--dump=DIR]\n"
    "  D.kiln: ch_PP-OCRv4_det_infer.onnx compiled for x=1x3xHxW (H, W multiples of 32)\n"
    "  C.kiln: ch_ppocr_mobile_v2.0_cls_infer.onnx for x=1x3x48x192 (optional)\n"
    "  R.kiln: ch_PP-OCRv4_rec_infer.onnx for x=1x3x48x320\n"
    "  --preset=ocr-node: @gutenye/ocr-node's pre/post-processing (for comparisons)\n"
    "  --annotate: write the (last) image with boxes and text drawn\n"
    "  --stats: device counters per image on stderr\n"
    "  --dump: write each model's input and output tensors to DIR (.npy; last image)\n";

struct Args {
  std::string det, cls, rec, keys, annotate, device, dump, preset = "paddle";
  bool stats = false;
  std::vector<std::string> images;
};

bool Flag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

void PrintStats(const char* label, const kiln_device_stats_t& s) {
  std::fprintf(stderr,
               "stats %s: device_allocations %llu device_bytes_allocated %llu peak_bytes %llu "
               "dispatches %llu copies %llu transfers %llu submissions %llu "
               "host_allocations_invoke %llu\n",
               label, (unsigned long long)s.device_allocations,
               (unsigned long long)s.device_bytes_allocated,
               (unsigned long long)s.device_peak_bytes, (unsigned long long)s.dispatches,
               (unsigned long long)s.copies, (unsigned long long)s.transfers,
               (unsigned long long)s.submissions, (unsigned long long)s.host_allocations_invoke);
}

// Owns the C API handles; released in reverse order.
struct Runtime {
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  std::vector<kiln_module_t> modules;
  kiln_context_t context = nullptr;
  ~Runtime() {
    kiln_context_release(context);
    for (kiln_module_t m : modules) kiln_module_release(m);
    kiln_device_release(device);
    kiln_instance_release(instance);
  }
};

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    std::string v;
    if (Flag(a, "--det", &args.det) || Flag(a, "--cls", &args.cls) ||
        Flag(a, "--rec", &args.rec) || Flag(a, "--keys", &args.keys) ||
        Flag(a, "--annotate", &args.annotate) || Flag(a, "--device", &args.device) ||
        Flag(a, "--preset", &args.preset) || Flag(a, "--dump", &args.dump)) {
      continue;
    }
    if (std::strcmp(a, "--stats") == 0) {
      args.stats = true;
    } else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a[0] == '-' && a[1] == '-') {
      std::fprintf(stderr, "error: unknown option %s\n%s", a, kUsage);
      return 2;
    } else {
      args.images.push_back(a);
    }
  }
  if (args.det.empty() || args.rec.empty() || args.keys.empty() || args.images.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  ocr::PipelineOptions options;
  if (args.preset == "ocr-node") {
    options = ocr::OcrNodeOptions();
  } else if (args.preset != "paddle") {
    std::fprintf(stderr, "error: --preset=%s: expected paddle or ocr-node\n", args.preset.c_str());
    return 2;
  }
  options.dump_dir = args.dump;

  std::string error;
  std::vector<std::string> characters;
  if (!ocr::LoadCharacters(args.keys, &characters, &error)) return Fail(error);

  using Clock = std::chrono::steady_clock;
  auto setup_start = Clock::now();
  Runtime rt;
  if (!ocr::StatusOk(kiln_instance_create(&rt.instance), "creating the instance", &error) ||
      !ocr::StatusOk(kiln_device_create(rt.instance, "vulkan",
                                        args.device.empty() ? nullptr : args.device.c_str(), -1,
                                        &rt.device),
                     "creating the Vulkan device", &error)) {
    return Fail(error);
  }
  std::fprintf(stderr, "device: %s\n", kiln_device_name(rt.device));
  std::vector<std::pair<std::string, std::string>> files = {{"det", args.det}, {"rec", args.rec}};
  if (!args.cls.empty()) files.insert(files.begin() + 1, {"cls", args.cls});
  for (const auto& [role, path] : files) {
    kiln_module_t m = nullptr;
    if (!ocr::StatusOk(kiln_module_load_from_file(rt.instance, path.c_str(), &m),
                       "loading the " + role + " module " + path, &error)) {
      return Fail(error);
    }
    rt.modules.push_back(m);
  }
  // All modules in one context (their names must differ: kiln-compile
  // names a module after its ONNX file unless --module-name is given).
  if (!ocr::StatusOk(kiln_context_create(rt.device, rt.modules.data(), rt.modules.size(),
                                         &rt.context),
                     "creating the context", &error)) {
    return Fail(error);
  }
  ocr::KilnModel det, cls, rec;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& role = files[i].first;
    ocr::KilnModel* model = role == "det" ? &det : role == "cls" ? &cls : &rec;
    if (!model->Init(rt.device, rt.context, kiln_module_name(rt.modules[i]), role, &error)) {
      return Fail(error);
    }
  }
  std::fprintf(stderr, "setup: %.1f ms (det input 1x3x%dx%d, rec input 1x3x%dx%d%s)\n",
               std::chrono::duration<double, std::milli>(Clock::now() - setup_start).count(),
               det.input_height(), det.input_width(), rec.input_height(), rec.input_width(),
               args.cls.empty() ? ", no cls" : "");

  ocr::Pipeline pipeline(&det, args.cls.empty() ? nullptr : &cls, &rec, characters, options);
  if (!pipeline.Check(&error)) return Fail(error);
  for (size_t k = 0; k < args.images.size(); ++k) {
    const std::string& path = args.images[k];
    cv::Mat image = cv::imread(path, cv::IMREAD_COLOR);
    if (image.empty()) return Fail("cannot read the image " + path);
    if (args.stats) kiln_device_stats_reset(rt.device);
    std::vector<ocr::TextLine> lines;
    ocr::StageTimes t;
    if (!pipeline.Run(image, &lines, &t, &error)) return Fail(path + ": " + error);
    if (args.images.size() > 1) std::printf("# %s\n", path.c_str());
    for (const ocr::TextLine& line : lines) {
      std::printf("%s\t%.4f\t", line.text.c_str(), line.confidence);
      for (int c = 0; c < 4; ++c) {
        std::printf(c ? " %d,%d" : "%d,%d", static_cast<int>(line.box[c].x),
                    static_cast<int>(line.box[c].y));
      }
      std::printf("\n");
    }
    std::fflush(stdout);
    std::fprintf(stderr,
                 "time %s (%dx%d, %d boxes, %zu lines): det %.1f ms (pre %.1f, model %.1f, post "
                 "%.1f) | cls %.1f ms (crop+pre %.1f, model %.1f) | rec %.1f ms (pre %.1f, model "
                 "%.1f, decode %.1f) | total %.1f ms\n",
                 path.c_str(), image.cols, image.rows, t.lines_detected, lines.size(),
                 t.det_pre + t.det_model + t.det_post, t.det_pre, t.det_model, t.det_post,
                 t.cls_pre + t.cls_model, t.cls_pre, t.cls_model,
                 t.rec_pre + t.rec_model + t.rec_post, t.rec_pre, t.rec_model, t.rec_post,
                 t.total);
    if (args.stats) {
      kiln_device_stats_t s;
      if (!ocr::StatusOk(kiln_device_stats(rt.device, &s), "reading the device stats", &error)) {
        return Fail(error);
      }
      PrintStats(path.c_str(), s);
    }
    if (!args.annotate.empty() && k + 1 == args.images.size()) {
      if (!cv::imwrite(args.annotate, ocr::Annotate(image, lines))) {
        return Fail("cannot write " + args.annotate);
      }
    }
  }
  return 0;
}
