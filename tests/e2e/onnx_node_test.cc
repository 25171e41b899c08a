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
#include <onnx/onnx-data.pb.h>  // SequenceProto, OptionalProto
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

// onnx_node_specialize.txt: test name → the graph inputs fixed at compile time.
std::map<std::string, std::set<std::string>> Specializations() {
  std::map<std::string, std::set<std::string>> out;
  std::ifstream in(KILN_SOURCE_DIR "/tests/e2e/onnx_node_specialize.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, inputs;
    ls >> name >> inputs;
    std::stringstream is(inputs);
    std::string input;
    while (std::getline(is, input, ',')) out[name].insert(input);
  }
  return out;
}

// One ONNX value of a test's data set: a tensor, a sequence or an optional
// (read with the model's declared type), as the list of its tensors.
struct NodeValue {
  bool present = true;         // optional: holds a value
  bool is_sequence = false;    // sequence (or optional sequence)
  std::vector<HostTensor> tensors;
};

bool ReadNodeValue(const std::string& path, const onnx::TypeProto& type, NodeValue* out,
                   std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) { *error = "cannot open " + path; return false; }
  std::stringstream ss;
  ss << in.rdbuf();
  auto add = [&](const onnx::TensorProto& t) {
    HostTensor h;
    if (!DecodeTensorProto(t.SerializeAsString(), path, &h, error)) return false;
    out->tensors.push_back(std::move(h));
    return true;
  };
  auto add_seq = [&](const onnx::SequenceProto& s) {
    out->is_sequence = true;
    if (s.elem_type() != onnx::SequenceProto::TENSOR && s.tensor_values_size() == 0) return true;
    if (s.elem_type() != onnx::SequenceProto::TENSOR) {
      *error = "only sequences of tensors are supported: " + path;
      return false;
    }
    for (const auto& t : s.tensor_values())
      if (!add(t)) return false;
    return true;
  };
  if (type.has_sequence_type()) {
    onnx::SequenceProto s;
    if (!s.ParseFromString(ss.str())) { *error = "bad SequenceProto " + path; return false; }
    return add_seq(s);
  }
  if (type.has_optional_type()) {
    onnx::OptionalProto o;
    if (!o.ParseFromString(ss.str())) { *error = "bad OptionalProto " + path; return false; }
    if (o.has_tensor_value()) return add(o.tensor_value());
    if (o.has_sequence_value()) return add_seq(o.sequence_value());
    out->present = false;
    out->is_sequence = type.optional_type().elem_type().has_sequence_type();
    return true;
  }
  HostTensor t;
  if (!DecodeTensorProto(ss.str(), path, &t, error)) return false;
  out->tensors.push_back(std::move(t));
  return true;
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
  static const std::map<std::string, std::set<std::string>> specs = Specializations();
  const std::string& name = GetParam();
  std::string dir = NodeRoot() + "/" + name;
  auto skip = skips.find(name);
  auto spec_it = specs.find(name);
  const std::set<std::string> no_spec;
  const std::set<std::string>& spec = spec_it == specs.end() ? no_spec : spec_it->second;

  onnx::ModelProto model;
  {
    std::ifstream in(dir + "/model.onnx", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    ASSERT_TRUE(model.ParseFromString(ss.str())) << dir;
  }
  // The graph inputs that are not initializers, in order: input_N.pb's order.
  std::vector<const onnx::ValueInfoProto*> graph_inputs;
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  for (const auto& i : model.graph().input())
    if (!inits.count(i.name())) graph_inputs.push_back(&i);
  for (const std::string& s : spec) {
    bool found = false;
    for (auto* i : graph_inputs) found |= i->name() == s;
    ASSERT_TRUE(found) << "onnx_node_specialize.txt lists '" << s << "', which is not an input of " << name;
  }

  std::string failure;
  int data_sets = 0;
  for (const std::string& set : ListDir(dir)) {
    if (set.rfind("test_data_set_", 0) != 0) continue;
    ++data_sets;
    std::vector<HostTensor> inputs, outputs;
    std::vector<std::string> want_names, got_names;
    std::vector<HostTensor> expected;
    onnx_import::ImportOptions import;
    std::string error;
    for (size_t i = 0; i < graph_inputs.size() && error.empty(); ++i) {
      std::string p = dir + "/" + set + "/input_" + std::to_string(i) + ".pb";
      if (!std::ifstream(p)) break;  // optional trailing inputs left out
      const onnx::ValueInfoProto& gi = *graph_inputs[i];
      NodeValue v;
      if (!ReadNodeValue(p, gi.type(), &v, &error)) break;
      bool fixed = spec.count(gi.name()) != 0;
      if (gi.type().has_tensor_type()) {
        if (!fixed) {
          // A declared dynamic dim: the data's shape (--input-shape).
          const auto& tt = gi.type().tensor_type();
          bool dynamic = !tt.has_shape();
          for (int d = 0; !dynamic && d < tt.shape().dim_size(); ++d)
            dynamic = !tt.shape().dim(d).has_dim_value();
          if (dynamic) import.input_shapes[gi.name()] = v.tensors[0].shape;
          inputs.push_back(std::move(v.tensors[0]));
          continue;
        }
        // --constant-input=NAME=V0,V1,... (with its shape, for declared dynamic dims).
        const HostTensor& t = v.tensors[0];
        std::vector<double> values;
        for (int64_t k = 0; k < t.element_count(); ++k) values.push_back(t.At(k));
        import.constant_inputs[gi.name()] = values;
        import.input_shapes[gi.name()] = t.shape;
        continue;
      }
      if (!fixed) {
        error = "input '" + gi.name() + "' is a sequence/optional: list it in onnx_node_specialize.txt";
        break;
      }
      // --sequence-input: the structure is fixed, the elements stay arguments.
      onnx_import::ImportOptions::SequenceInput si;
      si.present = v.present;
      for (HostTensor& t : v.tensors) {
        si.element_shapes.push_back(t.shape);
        inputs.push_back(std::move(t));
      }
      import.sequence_inputs[gi.name()] = si;
    }
    for (int i = 0; error.empty() && i < model.graph().output_size(); ++i) {
      const onnx::ValueInfoProto& go = model.graph().output(i);
      std::string p = dir + "/" + set + "/output_" + std::to_string(i) + ".pb";
      if (!std::ifstream(p)) break;
      NodeValue v;
      if (!ReadNodeValue(p, go.type(), &v, &error)) break;
      for (size_t k = 0; k < v.tensors.size(); ++k) {
        want_names.push_back(v.is_sequence ? go.name() + "." + std::to_string(k) : go.name());
        expected.push_back(std::move(v.tensors[k]));
      }
    }
    if (error.empty()) error = CompileAndRun(dir + "/model.onnx", import, inputs, &outputs, &got_names);
    if (error.empty() && got_names != want_names) {
      error = "results [";
      for (const auto& n : got_names) error += n + " ";
      error += "], want [";
      for (const auto& n : want_names) error += n + " ";
      error += "]";
    }
    if (error.empty() && outputs.size() != expected.size())
      error = "got " + std::to_string(outputs.size()) + " outputs, want " + std::to_string(expected.size());
    for (size_t i = 0; error.empty() && i < expected.size(); ++i) {
      std::string diff = Compare(outputs[i], expected[i], 1e-5, 1e-3);
      if (!diff.empty()) error = "output " + std::to_string(i) + " (" + want_names[i] + "): " + diff;
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
