// ONNX's own backend node tests (libonnx-testdata), run through the real
// compiler and the Vulkan runtime, compared with each test's output_*.pb.
//
// Which tests run: every test directory whose model uses only ONNX ops the
// importer claims (onnx_import::SupportedOnnxOps()). A claimed test that
// Kiln cannot run must be listed in onnx_node_skips.txt with a reason; a
// listed test that passes is reported so the list shrinks.
// Specialization: Kiln compiles static shapes, so a test whose shapes,
// sequence lengths or optional presence depend on input values is listed in
// onnx_node_specialize.txt (`<test> <input>[,<input>...] <reason>`). The
// harness reads those inputs from the test's own input_N.pb and fixes them at
// compile time, exactly as `kiln-compile --constant-input=NAME=V` (tensors)
// and `--sequence-input=NAME=[shapes]` (sequences/optionals: only the
// structure is fixed; the element values stay runtime arguments NAME.k) do;
// every other input is fed at run time. Every output is still compared with
// output_N.pb. A sequence output `res` of N elements is checked as the
// results named res.0 ... res.<N-1>; an empty optional output as no result
// (compiler/import/onnx/onnx_importer.h). A runtime tensor input whose
// declared shape has dynamic dims is compiled for the data's shape
// (--input-shape).
// Tolerance: |got - want| <= 1e-5 + 1e-3 * |want| (ONNX's backend test uses
// rtol 1e-3; atol is widened from 1e-7 for GPU float math).
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"
#include "tests/e2e/onnx_node_suite.h"

namespace kiln::e2e {
namespace {

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesReference) {
  static const std::map<std::string, std::string> skips = NodeSkips(KILN_SOURCE_DIR);
  static const std::map<std::string, std::set<std::string>> specs = NodeSpecializations(KILN_SOURCE_DIR);
  const std::string& name = GetParam();
  auto skip = skips.find(name);
  auto spec_it = specs.find(name);
  const std::set<std::string> no_spec;
  const std::set<std::string>& spec = spec_it == specs.end() ? no_spec : spec_it->second;

  std::vector<NodeDataSet> sets;
  std::string failure = LoadNodeTest(name, spec, &sets);
  ASSERT_EQ(failure.find("onnx_node_specialize.txt"), std::string::npos) << failure;
  for (NodeDataSet& ds : sets) {
    if (!failure.empty()) break;
    std::vector<HostTensor> outputs;
    std::vector<std::string> got_names;
    std::string error = CompileAndRun(NodeRoot() + "/" + name + "/model.onnx", ds.import, ds.inputs, &outputs,
                                      &got_names);
    if (error.empty() && got_names != ds.expected_names) {
      error = "results [";
      for (const auto& n : got_names) error += n + " ";
      error += "], want [";
      for (const auto& n : ds.expected_names) error += n + " ";
      error += "]";
    }
    if (error.empty() && outputs.size() != ds.expected.size())
      error = "got " + std::to_string(outputs.size()) + " outputs, want " + std::to_string(ds.expected.size());
    for (size_t i = 0; error.empty() && i < ds.expected.size(); ++i) {
      std::string diff = Compare(outputs[i], ds.expected[i], kNodeAtol, kNodeRtol);
      if (!diff.empty()) error = "output " + std::to_string(i) + " (" + ds.expected_names[i] + "): " + diff;
    }
    if (!error.empty()) failure = ds.name + ": " + error;
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
  EXPECT_GT(sets.size(), 0u);
  EXPECT_EQ(failure, "");
  EXPECT_EQ(ValidationMessages(), 0u) << "Vulkan validation messages were reported";
}

// Every node test ONNX ships is accounted for: a test whose op Kiln does not
// claim is not run, so it must be listed in onnx_node_skips.txt with the
// reason; and every listed name is a test that exists.
TEST(OnnxNodeCoverage, EveryTestNotRunIsListed) {
  const std::string root = NodeRoot();
  if (root.empty()) GTEST_SKIP() << "ONNX node test data not installed (libonnx-testdata)";
  const std::map<std::string, std::string> skips = NodeSkips(KILN_SOURCE_DIR);
  const std::vector<std::string> claimed_v = ClaimedNodeTests();
  const std::set<std::string> claimed(claimed_v.begin(), claimed_v.end());
  std::set<std::string> all;
  for (const std::string& name : ListDir(root)) {
    all.insert(name);
    if (!claimed.count(name))
      EXPECT_TRUE(skips.count(name)) << name << " uses an op Kiln does not claim: list it in onnx_node_skips.txt with the reason";
  }
  for (const auto& kv : skips) EXPECT_TRUE(all.count(kv.first)) << kv.first << " is listed but is no node test";
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(ClaimedNodeTests()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

}  // namespace
}  // namespace kiln::e2e
