// ONNX's backend node tests (libonnx-testdata) as Kiln runs them: which tests
// run, which are skipped (onnx_node_skips.txt), which inputs are fixed at
// compile time (onnx_node_specialize.txt), and each data set's import
// options, run-time inputs and expected outputs. Shared by the e2e test
// (onnx_node_test.cc) and the bundle maker (tools/kiln-test/kiln_bundle.cc),
// so both run exactly the same set the same way.
#ifndef KILN_TESTS_E2E_ONNX_NODE_SUITE_H_
#define KILN_TESTS_E2E_ONNX_NODE_SUITE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/import/onnx/onnx_importer.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {

// The node test data root (/usr/share/libonnx-testdata/data/node or ONNX's
// include tree), "" when libonnx-testdata is not installed.
std::string NodeRoot();

// Entries of `dir`, sorted, without "." and "..".
std::vector<std::string> ListDir(const std::string& dir);

// Tests under NodeRoot() whose every node is an ONNX op the importer claims
// (onnx_import::SupportedOnnxOps(), default domain), sorted by name.
std::vector<std::string> ClaimedNodeTests();

// onnx_node_skips.txt under `source_dir`/tests/e2e: test name -> reason.
std::map<std::string, std::string> NodeSkips(const std::string& source_dir);

// onnx_node_specialize.txt under `source_dir`/tests/e2e: test name -> the
// graph inputs fixed at compile time.
std::map<std::string, std::set<std::string>> NodeSpecializations(const std::string& source_dir);

// One test_data_set_N of a node test, ready to compile and run: the import
// options (--input-shape for declared dynamic dims, --constant-input and
// --sequence-input for the specialized inputs), the run-time arguments in
// order, and the expected results in order (a sequence output `res` of N
// elements is N results named res.0 ... res.<N-1>).
struct NodeDataSet {
  std::string name;  // "test_data_set_0"
  onnx_import::ImportOptions import;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> expected;
  std::vector<std::string> expected_names;
};

// Reads test `name`'s model and every data set, with the inputs in `spec`
// fixed at compile time. Returns "" or an error naming the test and file
// (e.g. a specialized input the model does not have).
std::string LoadNodeTest(const std::string& name, const std::set<std::string>& spec,
                         std::vector<NodeDataSet>* sets);

// The node tests' tolerance: |got - want| <= kNodeAtol + kNodeRtol * |want|
// (ONNX's backend test uses rtol 1e-3; atol is widened from 1e-7 for GPU
// float math).
constexpr double kNodeAtol = 1e-5;
constexpr double kNodeRtol = 1e-3;

}  // namespace kiln::e2e

#endif  // KILN_TESTS_E2E_ONNX_NODE_SUITE_H_
