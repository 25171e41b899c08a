// Test helper for the ONNX importer's unit tests: a graph of one node whose
// inputs are all graph inputs, imported and run on the host interpreter
// (const_eval.h InterpretFunction, independent of codegen). Not a public API.
#ifndef KILN_COMPILER_IMPORT_ONNX_ONNX_TEST_MODEL_H_
#define KILN_COMPILER_IMPORT_ONNX_ONNX_TEST_MODEL_H_

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <string>
#include <vector>

#include "compiler/import/onnx/const_eval.h"
#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/verifier.h"

namespace kiln::onnx_import::testing {

// One input value: ONNX dtype, shape, values (as doubles).
struct TestTensor {
  int32_t onnx_dtype;
  std::vector<int64_t> shape;
  std::vector<double> values;
};

// A model with one node `op` named "n" (opset `opset`): its inputs are graph
// inputs in0, in1, ... (or initializers with their values when
// `as_initializers`; a TestTensor with onnx_dtype 0 = an absent optional
// input ""), its outputs out0, out1, ...
class NodeModel {
 public:
  NodeModel(const std::string& op, const std::vector<TestTensor>& inputs, int num_outputs,
            int opset = 21, bool as_initializers = false)
      : inputs_(inputs), as_initializers_(as_initializers) {
    m_.set_ir_version(9);
    m_.add_opset_import()->set_version(opset);
    auto* g = m_.mutable_graph();
    g->set_name("g");
    node_ = g->add_node();
    node_->set_op_type(op);
    node_->set_name("n");
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].onnx_dtype == 0) {
        node_->add_input("");
        continue;
      }
      std::string name = "in" + std::to_string(i);
      node_->add_input(name);
      if (as_initializers) {
        auto* t = g->add_initializer();
        t->set_name(name);
        t->set_data_type(inputs[i].onnx_dtype);
        for (int64_t d : inputs[i].shape) t->add_dims(d);
        for (double v : inputs[i].values) {
          if (inputs[i].onnx_dtype == onnx::TensorProto_DataType_FLOAT) t->add_float_data(static_cast<float>(v));
          else if (inputs[i].onnx_dtype == onnx::TensorProto_DataType_INT64) t->add_int64_data(static_cast<int64_t>(v));
          else t->add_int32_data(static_cast<int32_t>(v));
        }
        continue;
      }
      auto* in = g->add_input();
      in->set_name(name);
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(inputs[i].onnx_dtype);
      auto* sh = tt->mutable_shape();
      for (int64_t d : inputs[i].shape) sh->add_dim()->set_dim_value(d);
    }
    for (int i = 0; i < num_outputs; ++i) {
      node_->add_output("out" + std::to_string(i));
      g->add_output()->set_name("out" + std::to_string(i));
    }
  }
  NodeModel& Int(const std::string& name, int64_t v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
    return *this;
  }
  NodeModel& Float(const std::string& name, float v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
    return *this;
  }
  NodeModel& Floats(const std::string& name, const std::vector<float>& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_FLOATS);
    for (float x : v) a->add_floats(x);
    return *this;
  }
  NodeModel& Ints(const std::string& name, const std::vector<int64_t>& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  NodeModel& Str(const std::string& name, const std::string& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
    return *this;
  }
  NodeModel& Strs(const std::string& name, const std::vector<std::string>& v) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRINGS);
    for (const auto& s : v) a->add_strings(s);
    return *this;
  }
  StatusOr<std::unique_ptr<ir::Module>> Import() const {
    std::string bytes = m_.SerializeAsString();
    ImportOptions o;
    o.onnx_checker = false;  // hand-built: no graph output types
    return ImportOnnxBytes(bytes.data(), bytes.size(), o);
  }
  // Imports, verifies and interprets; the outputs' values (empty on error,
  // with *error set).
  std::vector<ir::DenseElements> Run(std::string* error) const {
    auto r = Import();
    if (!r.ok()) {
      *error = r.status().ToString();
      return {};
    }
    Status v = ir::Verify(*r.value());
    if (!v.ok()) {
      *error = v.ToString();
      return {};
    }
    std::vector<ir::DenseElements> args;
    for (const TestTensor& t : inputs_) {
      if (t.onnx_dtype == 0 || as_initializers_) continue;
      args.push_back(MakeDenseFromDoubles(ir::Type::Tensor(ConvertOnnxDType(t.onnx_dtype), t.shape), t.values));
    }
    auto out = InterpretFunction(r.value()->functions()[0], args);
    if (!out.ok()) {
      *error = out.status().ToString();
      return {};
    }
    return out.value();
  }

 private:
  static DType ConvertOnnxDType(int32_t t) {
    switch (t) {
      case onnx::TensorProto_DataType_FLOAT: return DType::kF32;
      case onnx::TensorProto_DataType_UINT8: return DType::kU8;
      case onnx::TensorProto_DataType_INT8: return DType::kI8;
      case onnx::TensorProto_DataType_INT32: return DType::kI32;
      case onnx::TensorProto_DataType_INT64: return DType::kI64;
      case onnx::TensorProto_DataType_BOOL: return DType::kBool;
      default: return DType::kInvalid;
    }
  }
  onnx::ModelProto m_;
  onnx::NodeProto* node_;
  std::vector<TestTensor> inputs_;
  bool as_initializers_;
};

inline std::vector<double> Values(const ir::DenseElements& d) {
  std::vector<double> r;
  for (int64_t i = 0; i < d.type.num_elements(); ++i) r.push_back(ReadElementAsDouble(d, i));
  return r;
}

}  // namespace kiln::onnx_import::testing

#endif  // KILN_COMPILER_IMPORT_ONNX_ONNX_TEST_MODEL_H_
