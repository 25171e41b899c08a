#include "tests/e2e/onnx_node_suite.h"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h
#include <onnx/onnx-data.pb.h>  // SequenceProto, OptionalProto

namespace kiln::e2e {
namespace {

const char* kNodeDirs[] = {"/usr/share/libonnx-testdata/data/node", "/usr/include/onnx/backend/test/data/node"};

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

bool ReadModel(const std::string& path, onnx::ModelProto* model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  return model->ParseFromString(ss.str());
}

// ONNX's test data stores bfloat16 tensors as UINT16 TensorProtos holding the
// bits (numpy has no bfloat16): tags them bf16 where the graph declares bf16.
void RetagBf16(const onnx::TypeProto& declared, NodeValue* v) {
  if (!declared.has_tensor_type() ||
      declared.tensor_type().elem_type() != onnx::TensorProto::BFLOAT16)
    return;
  for (HostTensor& t : v->tensors)
    if (t.dtype == KILN_DTYPE_U16) t.dtype = KILN_DTYPE_BF16;
}

// Reads one data set `dir`/`set` of a model with `graph_inputs` (the
// non-initializer inputs, input_N.pb's order).
std::string LoadDataSet(const std::string& dir, const std::string& set, const onnx::ModelProto& model,
                        const std::vector<const onnx::ValueInfoProto*>& graph_inputs,
                        const std::set<std::string>& spec, NodeDataSet* out) {
  out->name = set;
  std::string error;
  for (size_t i = 0; i < graph_inputs.size() && error.empty(); ++i) {
    std::string p = dir + "/" + set + "/input_" + std::to_string(i) + ".pb";
    if (!std::ifstream(p)) break;  // optional trailing inputs left out
    const onnx::ValueInfoProto& gi = *graph_inputs[i];
    NodeValue v;
    if (!ReadNodeValue(p, gi.type(), &v, &error)) break;
    RetagBf16(gi.type(), &v);
    bool fixed = spec.count(gi.name()) != 0;
    if (gi.type().has_tensor_type()) {
      if (!fixed) {
        // A declared dynamic dim: the data's shape (--input-shape).
        const auto& tt = gi.type().tensor_type();
        bool dynamic = !tt.has_shape();
        for (int d = 0; !dynamic && d < tt.shape().dim_size(); ++d)
          dynamic = !tt.shape().dim(d).has_dim_value();
        if (dynamic) out->import.input_shapes[gi.name()] = v.tensors[0].shape;
        out->inputs.push_back(std::move(v.tensors[0]));
        continue;
      }
      // --constant-input=NAME=V0,V1,... (with its shape, for declared dynamic dims).
      const HostTensor& t = v.tensors[0];
      std::vector<double> values;
      for (int64_t k = 0; k < t.element_count(); ++k) values.push_back(t.At(k));
      out->import.constant_inputs[gi.name()] = values;
      out->import.input_shapes[gi.name()] = t.shape;
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
      out->inputs.push_back(std::move(t));
    }
    out->import.sequence_inputs[gi.name()] = si;
  }
  for (int i = 0; error.empty() && i < model.graph().output_size(); ++i) {
    const onnx::ValueInfoProto& go = model.graph().output(i);
    std::string p = dir + "/" + set + "/output_" + std::to_string(i) + ".pb";
    if (!std::ifstream(p)) break;
    NodeValue v;
    if (!ReadNodeValue(p, go.type(), &v, &error)) break;
    RetagBf16(go.type(), &v);
    for (size_t k = 0; k < v.tensors.size(); ++k) {
      out->expected_names.push_back(v.is_sequence ? go.name() + "." + std::to_string(k) : go.name());
      out->expected.push_back(std::move(v.tensors[k]));
    }
  }
  return error;
}

std::string TrimLeft(const std::string& s) {
  size_t p = s.find_first_not_of(" \t");
  return p == std::string::npos ? "" : s.substr(p);
}

}  // namespace

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

std::vector<std::string> ClaimedNodeTests() {
  std::vector<std::string> tests;
  std::string root = NodeRoot();
  if (root.empty()) return tests;
  std::vector<std::string> ops = onnx_import::SupportedOnnxOps();
  std::set<std::string> supported(ops.begin(), ops.end());
  for (const std::string& name : ListDir(root)) {
    onnx::ModelProto model;
    if (!ReadModel(root + "/" + name + "/model.onnx", &model)) continue;
    bool all = model.graph().node_size() > 0;
    for (const auto& node : model.graph().node())
      all &= (node.domain().empty() || node.domain() == "ai.onnx") && supported.count(node.op_type()) != 0;
    if (all) tests.push_back(name);
  }
  return tests;
}

std::map<std::string, std::string> NodeSkips(const std::string& source_dir) {
  std::map<std::string, std::string> skips;
  std::ifstream in(source_dir + "/tests/e2e/onnx_node_skips.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name, reason;
    ls >> name;
    std::getline(ls, reason);
    skips[name] = TrimLeft(reason);
  }
  return skips;
}

std::map<std::string, std::set<std::string>> NodeSpecializations(const std::string& source_dir) {
  std::map<std::string, std::set<std::string>> out;
  std::ifstream in(source_dir + "/tests/e2e/onnx_node_specialize.txt");
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

std::string LoadNodeTest(const std::string& name, const std::set<std::string>& spec,
                         std::vector<NodeDataSet>* sets) {
  std::string dir = NodeRoot() + "/" + name;
  onnx::ModelProto model;
  if (!ReadModel(dir + "/model.onnx", &model)) return "cannot read " + dir + "/model.onnx";
  std::vector<const onnx::ValueInfoProto*> graph_inputs;
  std::set<std::string> inits;
  for (const auto& t : model.graph().initializer()) inits.insert(t.name());
  for (const auto& i : model.graph().input())
    if (!inits.count(i.name())) graph_inputs.push_back(&i);
  for (const std::string& s : spec) {
    bool found = false;
    for (auto* i : graph_inputs) found |= i->name() == s;
    if (!found) return "onnx_node_specialize.txt lists '" + s + "', which is not an input of " + name;
  }
  for (const std::string& set : ListDir(dir)) {
    if (set.rfind("test_data_set_", 0) != 0) continue;
    NodeDataSet ds;
    std::string error = LoadDataSet(dir, set, model, graph_inputs, spec, &ds);
    if (!error.empty()) return set + ": " + error;
    sets->push_back(std::move(ds));
  }
  return "";
}

}  // namespace kiln::e2e
