// ONNX's own backend node tests (libonnx-testdata), run through the real
// compiler and the Vulkan runtime, compared with each test's output_*.pb.
//
// Which tests run: every test directory whose model uses only ONNX ops the
// importer claims (onnx_import::SupportedOnnxOps()). A claimed test that
// Kiln cannot run must be listed in onnx_node_skips.txt with a reason; a
// listed test that passes is reported so the list shrinks.
// Tolerance: |got - want| <= 1e-5 + 1e-3 * |want| (ONNX's backend test uses
// rtol 1e-3; atol is widened from 1e-7 for GPU float math).
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_importer.h"
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

const char* kNodeDirs[] = {"/usr/share/libonnx-testdata/data/node", "/usr/include/onnx/backend/test/data/node"};

std::string NodeRoot() {
  for (const char* d : kNodeDirs) {
    std::ifstream probe(std::string(d) + "/test_abs/model.onnx");
    if (probe) return d;
  }
  return "";
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> Skips() {
  std::map<std::string, std::string> skips;
  std::ifstream in(KILN_SOURCE_DIR "/tests/e2e/onnx_node_skips.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, reason;
    ls >> name;
    std::getline(ls, reason);
    skips[name] = reason.substr(reason.find_first_not_of(" \t") == std::string::npos ? 0 : reason.find_first_not_of(" \t"));
  }
  return skips;
}

// Tests whose every node is a claimed op (default domain).
std::vector<std::string> ClaimedTests() {
  std::vector<std::string> tests;
  std::string root = NodeRoot();
  if (root.empty()) return tests;
  std::vector<std::string> ops = onnx_import::SupportedOnnxOps();
  std::set<std::string> supported(ops.begin(), ops.end());
  for (const std::string& name : ListDir(root)) {
    std::ifstream in(root + "/" + name + "/model.onnx", std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    onnx::ModelProto model;
    if (!model.ParseFromString(ss.str())) continue;
    bool all = model.graph().node_size() > 0;
    for (const auto& node : model.graph().node())
      all &= (node.domain().empty() || node.domain() == "ai.onnx") && supported.count(node.op_type()) != 0;
    if (all) tests.push_back(name);
  }
  return tests;
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesReference) {
  static const std::map<std::string, std::string> skips = Skips();
  const std::string& name = GetParam();
  std::string dir = NodeRoot() + "/" + name;
  auto skip = skips.find(name);

  std::string failure;
  int data_sets = 0;
  for (const std::string& set : ListDir(dir)) {
    if (set.rfind("test_data_set_", 0) != 0) continue;
    ++data_sets;
    std::vector<HostTensor> inputs, expected, outputs;
    std::string error;
    for (int i = 0;; ++i) {
      std::string p = dir + "/" + set + "/input_" + std::to_string(i) + ".pb";
      if (!std::ifstream(p)) break;
      HostTensor t;
      if (!ReadTensorProto(p, &t, &error)) break;
      inputs.push_back(std::move(t));
    }
    for (int i = 0; error.empty(); ++i) {
      std::string p = dir + "/" + set + "/output_" + std::to_string(i) + ".pb";
      if (!std::ifstream(p)) break;
      HostTensor t;
      if (!ReadTensorProto(p, &t, &error)) break;
      expected.push_back(std::move(t));
    }
    if (error.empty()) error = CompileAndRun(dir + "/model.onnx", {}, inputs, &outputs);
    if (error.empty() && outputs.size() != expected.size())
      error = "got " + std::to_string(outputs.size()) + " outputs, want " + std::to_string(expected.size());
    for (size_t i = 0; error.empty() && i < expected.size(); ++i) {
      std::string diff = Compare(outputs[i], expected[i], 1e-5, 1e-3);
      if (!diff.empty()) error = "output " + std::to_string(i) + ": " + diff;
    }
    if (!error.empty()) {
      failure = set + ": " + error;
      break;
    }
  }
  if (skip != skips.end()) {
    if (failure.empty()) {
      ADD_FAILURE() << name << " is listed in onnx_node_skips.txt (" << skip->second
                    << ") but now passes: remove it from the list";
    } else {
      GTEST_SKIP() << "listed: " << skip->second << " [" << failure << "]";
    }
    return;
  }
  EXPECT_GT(data_sets, 0);
  EXPECT_EQ(failure, "");
  EXPECT_EQ(ValidationMessages(), 0u) << "Vulkan validation messages were reported";
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(ClaimedTests()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

}  // namespace
}  // namespace kiln::e2e
