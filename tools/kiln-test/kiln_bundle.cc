// kiln-bundle: makes a kiln-test bundle (tools/kiln-test/bundle.h) on the
// host: compiles each model with the real compiler and writes the module,
// the inputs and the expected outputs next to a manifest.
//
//   kiln-bundle --out=DIR [--onnx-node] [--golden=GDIR ...] [--golden-root=ROOT]
//               [--models=MDIR] [--filter=REGEX] [--source-dir=SRC]
//
// --onnx-node   ONNX's node tests (libonnx-testdata), exactly the set and the
//               specializations of tests/e2e/onnx_node_test.cc
//               (tests/e2e/onnx_node_suite.h): every claimed test, compiled
//               with its onnx_node_specialize.txt inputs fixed; the tests of
//               onnx_node_skips.txt are written as skipped, with their reason.
//               One test per data set: node.<test> (node.<test>.<k> for data
//               set k > 0). Tolerance 1e-5 + 1e-3 |want|.
// --golden=GDIR a directory in the golden format (tests/golden/README.md:
//               model.txt naming a model in MDIR, inputs.txt, input_<i>.npy,
//               output_<i>.npy); any model, in the repository or not. Test
//               golden.<basename>; tolerance 1e-4 + 1e-3 |want|. A model not
//               in MDIR is written as skipped ("model not fetched").
// --golden-root every subdirectory of ROOT holding model.txt and output_0.npy
//               (e.g. tests/golden).
// --models      where model.txt names are found (default SRC/.cache/models).
// --filter      only the tests whose name matches REGEX.
// --source-dir  the Kiln source tree, for the node lists (default: the one
//               this tool was built from).
// Exit status: 0 when every selected test was written, 1 when any failed to
// compile or read (each is reported; the others are still written), 2 usage.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "compiler/tools/compile_driver.h"
#include "tests/e2e/golden_suite.h"
#include "tests/e2e/onnx_node_suite.h"
#include "tools/kiln-test/bundle.h"
#include "tools/npy.h"

namespace {

namespace fs = std::filesystem;
using kiln::e2e::HostTensor;
using kiln::tools::BundleTest;

const char kUsage[] =
    "usage: kiln-bundle --out=DIR [--onnx-node] [--golden=GDIR ...] [--golden-root=ROOT]\n"
    "                   [--models=MDIR] [--filter=REGEX] [--source-dir=SRC]\n";

struct Bundler {
  std::string out;
  std::vector<BundleTest> tests;
  int errors = 0;

  bool WriteBytes(const std::string& path, const void* data, size_t size) {
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    return static_cast<bool>(f);
  }

  bool WriteTensor(const std::string& path, const HostTensor& t, std::string* error) {
    kiln::tools::NpyArray a;
    a.dtype = t.dtype;
    a.shape = t.shape;
    a.data = t.data;
    return kiln::tools::WriteNpy(path, a, error);
  }

  void Fail(const std::string& name, const std::string& what) {
    std::fprintf(stderr, "kiln-bundle: %s: %s\n", name.c_str(), what.c_str());
    ++errors;
  }

  // Compiles `model` with `options` and writes test `name`.
  void Add(const std::string& name, const std::string& model, const kiln::driver::CompileOptions& options,
           const std::vector<HostTensor>& inputs, const std::vector<HostTensor>& expected, double atol,
           double rtol) {
    auto bytes = kiln::driver::CompileOnnxFile(model, options);
    if (!bytes.ok()) return Fail(name, "compile: " + bytes.status().message());
    std::string dir = out + "/" + name;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return Fail(name, "mkdir " + dir + ": " + ec.message());
    if (!WriteBytes(dir + "/module.kiln", bytes.value().data(), bytes.value().size()))
      return Fail(name, "cannot write " + dir + "/module.kiln");
    std::string error;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!WriteTensor(dir + "/input_" + std::to_string(i) + ".npy", inputs[i], &error)) return Fail(name, error);
    for (size_t i = 0; i < expected.size(); ++i)
      if (!WriteTensor(dir + "/expected_" + std::to_string(i) + ".npy", expected[i], &error))
        return Fail(name, error);
    BundleTest t;
    t.name = name;
    t.dir = name;
    t.inputs = static_cast<int>(inputs.size());
    t.outputs = static_cast<int>(expected.size());
    t.atol = atol;
    t.rtol = rtol;
    tests.push_back(t);
  }

  void AddSkipped(const std::string& name, const std::string& reason) {
    BundleTest t;
    t.name = name;
    t.dir = name;
    t.skip = reason.empty() ? "skipped" : reason;
    tests.push_back(t);
  }
};

void AddNodeTests(Bundler* b, const std::string& source_dir, const std::regex* filter) {
  if (kiln::e2e::NodeRoot().empty()) {
    b->Fail("--onnx-node", "libonnx-testdata is not installed");
    return;
  }
  auto skips = kiln::e2e::NodeSkips(source_dir);
  auto specs = kiln::e2e::NodeSpecializations(source_dir);
  if (skips.empty()) b->Fail("--onnx-node", "cannot read " + source_dir + "/tests/e2e/onnx_node_skips.txt");
  for (const std::string& test : kiln::e2e::ClaimedNodeTests()) {
    std::string base = "node." + test;
    if (filter && !std::regex_search(base, *filter)) continue;
    auto skip = skips.find(test);
    if (skip != skips.end()) {
      b->AddSkipped(base, skip->second);
      continue;
    }
    auto spec = specs.find(test);
    std::vector<kiln::e2e::NodeDataSet> sets;
    std::string error = kiln::e2e::LoadNodeTest(test, spec == specs.end() ? std::set<std::string>() : spec->second,
                                                &sets);
    if (!error.empty()) {
      b->Fail(base, error);
      continue;
    }
    // bf16 has no NumPy dtype, and the bundle stores arrays as .npy: such a
    // test runs on the host (OnnxNodeTest) but cannot travel in a bundle.
    bool bf16 = false;
    for (const kiln::e2e::NodeDataSet& set : sets)
      for (const auto* list : {&set.inputs, &set.expected})
        for (const kiln::e2e::HostTensor& t : *list) bf16 = bf16 || t.dtype == KILN_DTYPE_BF16;
    if (bf16) {
      b->AddSkipped(base, "bf16 arrays have no .npy dtype (the bundle format); OnnxNodeTest runs it on the host");
      continue;
    }
    for (size_t k = 0; k < sets.size(); ++k) {
      kiln::driver::CompileOptions options;
      options.import = sets[k].import;
      b->Add(k == 0 ? base : base + "." + std::to_string(k), kiln::e2e::NodeRoot() + "/" + test + "/model.onnx",
             options, sets[k].inputs, sets[k].expected, kiln::e2e::kNodeAtol, kiln::e2e::kNodeRtol);
    }
  }
}

void AddGolden(Bundler* b, const std::string& dir, const std::string& models, const std::regex* filter) {
  std::string name = "golden." + fs::path(dir).filename().string();
  if (filter && !std::regex_search(name, *filter)) return;
  std::string model_file = kiln::e2e::ReadFirstLine(dir + "/model.txt");
  if (model_file.empty()) return b->Fail(name, "no model.txt in " + dir);
  std::string model = models + "/" + model_file;
  if (!std::ifstream(model)) return b->AddSkipped(name, "model not fetched: " + model);
  kiln::driver::CompileOptions options;
  for (const std::string& flag : kiln::e2e::GoldenInputShapes(dir)) {
    kiln::Status s = kiln::onnx_import::ParseInputShapeFlag(flag, &options.import);
    if (!s.ok()) return b->Fail(name, s.message());
  }
  std::vector<HostTensor> inputs, expected;
  std::string error;
  for (int i = 0; std::ifstream(dir + "/input_" + std::to_string(i) + ".npy"); ++i) {
    inputs.emplace_back();
    if (!kiln::e2e::ReadNpyTensor(dir + "/input_" + std::to_string(i) + ".npy", &inputs.back(), &error))
      return b->Fail(name, error);
  }
  for (int i = 0; std::ifstream(dir + "/output_" + std::to_string(i) + ".npy"); ++i) {
    expected.emplace_back();
    if (!kiln::e2e::ReadNpyTensor(dir + "/output_" + std::to_string(i) + ".npy", &expected.back(), &error))
      return b->Fail(name, error);
  }
  if (expected.empty()) return b->Fail(name, "no output_0.npy in " + dir);
  b->Add(name, model, options, inputs, expected, kiln::e2e::kGoldenAtol, kiln::e2e::kGoldenRtol);
}

bool Value(const char* arg, const char* prefix, std::string* out) {
  size_t n = std::strlen(prefix);
  if (std::strncmp(arg, prefix, n) != 0) return false;
  *out = arg + n;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Bundler b;
  bool node = false;
  std::vector<std::string> goldens;
  std::string golden_root, models, filter_text, source_dir = KILN_SOURCE_DIR, v;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (Value(a, "--out=", &b.out)) continue;
    if (std::strcmp(a, "--onnx-node") == 0) { node = true; continue; }
    if (Value(a, "--golden=", &v)) { goldens.push_back(v); continue; }
    if (Value(a, "--golden-root=", &golden_root)) continue;
    if (Value(a, "--models=", &models)) continue;
    if (Value(a, "--filter=", &filter_text)) continue;
    if (Value(a, "--source-dir=", &source_dir)) continue;
    std::fprintf(stderr, "error: unknown argument '%s'\n%s", a, kUsage);
    return 2;
  }
  if (b.out.empty() || (!node && goldens.empty() && golden_root.empty())) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  if (models.empty()) models = source_dir + "/.cache/models";
  std::regex filter;
  if (!filter_text.empty()) {
    try {
      filter = std::regex(filter_text, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "error: --filter: bad regular expression '%s': %s\n", filter_text.c_str(), e.what());
      return 2;
    }
  }
  const std::regex* f = filter_text.empty() ? nullptr : &filter;
  std::error_code ec;
  fs::create_directories(b.out, ec);
  if (ec) {
    std::fprintf(stderr, "error: cannot create %s: %s\n", b.out.c_str(), ec.message().c_str());
    return 2;
  }
  if (node) AddNodeTests(&b, source_dir, f);
  if (!golden_root.empty()) {
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(golden_root, ec))
      if (fs::exists(e.path() / "model.txt") && fs::exists(e.path() / "output_0.npy")) dirs.push_back(e.path());
    if (ec) b.Fail("--golden-root", golden_root + ": " + ec.message());
    std::sort(dirs.begin(), dirs.end());
    goldens.insert(goldens.end(), dirs.begin(), dirs.end());
  }
  for (const std::string& g : goldens) AddGolden(&b, g, models, f);
  std::ofstream manifest(b.out + "/manifest.txt");
  manifest << "# Made by kiln-bundle; format: tools/kiln-test/bundle.h\n" << kiln::tools::FormatManifest(b.tests);
  if (!manifest) {
    std::fprintf(stderr, "error: cannot write %s/manifest.txt\n", b.out.c_str());
    return 2;
  }
  size_t skipped = 0;
  for (const BundleTest& t : b.tests) skipped += !t.skip.empty();
  std::printf("kiln-bundle: %zu tests (%zu skipped) in %s, %d errors\n", b.tests.size(), skipped, b.out.c_str(),
              b.errors);
  return b.errors ? 1 : 0;
}
