// ONNX → tensor-level IR. See onnx_importer.h for the contract.
//
// Structure: Importer walks the graph nodes in order (ONNX graphs are
// topologically sorted). Each node handler computes static result types and
// emits ops through Emit(), which folds any op whose operands are all
// constants (const_eval.h). Initializers become tensor.constant lazily, at
// first use. At the end, unused ops (dead constants, folded intermediates) are
// erased, inside regions too. The Importer class is declared in
// onnx_importer_internal.h. This file holds the graph walk, the handler
// table and the public API; the handlers live by op family in
// onnx_elementwise.cc, onnx_conv_pool.cc, onnx_reduce_matmul.cc,
// onnx_shape_ops.cc and the other onnx_*.cc files (If/Loop/Scan and subgraph
// scopes in onnx_control_flow.cc, LSTM in onnx_lstm.cc), the tensor and shape
// helpers in onnx_tensor_util.cc.
#include "compiler/import/onnx/onnx_importer.h"

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h
#include <onnx/checker.h>
#include <onnx/defs/schema.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>

#include "compiler/import/onnx/onnx_importer_internal.h"
#include "compiler/import/onnx/onnx_op_attributes.h"

namespace kiln::onnx_import {
namespace detail {

// ---------------------------------------------------------------------------
// Emission helpers
// ---------------------------------------------------------------------------
Value* Importer::Constant(DenseElements d, const std::string& loc) {
  Type t = d.type;
  auto op = ir::Operation::Create("tensor.constant", {}, {t}, {{"value", std::move(d)}});
  op->set_loc(loc);
  return block_->Append(std::move(op))->result(0);
}

Value* Importer::Emit(const std::string& name, const std::vector<Value*>& operands,
                      const Type& type, Attrs attrs) {
  bool all_const = true;
  std::vector<const DenseElements*> cs;
  for (Value* v : operands) {
    cs.push_back(GetConst(v));
    if (!cs.back()) all_const = false;
  }
  int64_t count = SafeNumElements(type.shape);
  if (fold_ && all_const && count >= 0 && (name == "tensor.reshape" || count <= kMaxFoldElements)) {
    DenseElements folded;
    if (EvaluateOp(name, cs, type, attrs, &folded)) return Constant(std::move(folded));
  }
  auto op = ir::Operation::Create(name, operands, {type}, std::move(attrs));
  op->set_loc(loc_);
  return block_->Append(std::move(op))->result(0);
}

StatusOr<Value*> Importer::Lookup(const std::string& name) {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  auto c = composites_.find(name);
  if (c != composites_.end())
    return Invalid("input '" + name + "' is a " + c->second.Describe() + "; this op takes tensors");
  auto init = initializers_.find(name);
  if (init != initializers_.end()) {
    KILN_ASSIGN_OR_RETURN(DenseElements d, TensorToDense(*init->second, "initializer '" + name + "'"));
    Value* v = Constant(std::move(d), name);
    values_[name] = v;
    return v;
  }
  return Invalid("input '" + name + "' is not defined by any earlier node, input or initializer");
}

StatusOr<OnnxValue> Importer::LookupAny(const std::string& name) {
  auto c = composites_.find(name);
  if (c != composites_.end()) return c->second;
  KILN_ASSIGN_OR_RETURN(Value* v, Lookup(name));
  return OnnxValue::Tensor(v);
}

void Importer::Define(const std::string& name, const OnnxValue& v) {
  if (v.is_tensor()) {
    values_[name] = v.tensor();
    composites_.erase(name);
  } else {
    composites_[name] = v;
    values_.erase(name);
  }
}

StatusOr<Value*> Importer::Binary(const std::string& op, Value* a, Value* b) {
  const Type& ta = a->type();
  const Type& tb = b->type();
  if (ta.dtype != tb.dtype) {
    if (op == "tensor.pow") b = Cast(b, ta.dtype);
    else
      return Invalid(std::string("operand dtypes differ: ") + DTypeName(ta.dtype) + " vs " +
                     DTypeName(tb.dtype));
  }
  Shape s;
  if (!BroadcastShapes(ta.shape, b->type().shape, &s))
    return Invalid("shapes " + ShapeStr(ta.shape) + " and " + ShapeStr(b->type().shape) +
                   " do not broadcast");
  bool cmp = op == "tensor.equal" || op == "tensor.greater" || op == "tensor.less" ||
             op == "tensor.greater_equal" || op == "tensor.less_equal" || op == "tensor.and" ||
             op == "tensor.or" || op == "tensor.xor";
  // x - 0, x * 1, x / 1 are x exactly (for every x, -0 and NaN included)
  // when the constant does not change the shape.
  if ((op == "tensor.sub" || op == "tensor.mul" || op == "tensor.div") && s == ta.shape) {
    if (const DenseElements* c = GetConst(b)) {
      double want = op == "tensor.sub" ? 0.0 : 1.0;
      bool all = c->type.num_elements() > 0;
      for (int64_t i = 0; all && i < c->type.num_elements(); ++i) {
        double v = ReadElementAsDouble(*c, i);
        all = v == want && !std::signbit(v);
      }
      if (all) return a;
    }
  }
  Attrs attrs;
  if (op == "tensor.mod") attrs["fmod"] = AttrInt("fmod", 0);
  return Emit(op, {a, b}, Type::Tensor(cmp ? DType::kBool : ta.dtype, s), std::move(attrs));
}

// ---------------------------------------------------------------------------
// Graph
// ---------------------------------------------------------------------------
// Dead code elimination (all tensor-level and scf ops are pure). Uses only
// come from later ops or from ops nested in later ops, so one backward sweep
// suffices when the regions of an op are swept before the op itself.
void EraseDeadOps(ir::Block* block) {
  std::vector<ir::Operation*> all;
  for (auto& op : block->ops()) all.push_back(op.get());
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    ir::Operation* op = *it;
    if (op->num_results() == 0) continue;  // terminators
    bool used = false;
    for (unsigned r = 0; r < op->num_results(); ++r) used |= !op->result(r)->use_empty();
    if (!used) {
      op->Erase();
      continue;
    }
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks()) EraseDeadOps(b.get());
  }
}

StatusOr<std::unique_ptr<ir::Module>> Importer::Import(const onnx::ModelProto& model) {
  bool have_opset = false;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset_ = o.version();
      have_opset = true;
    }
  }
  if (!have_opset) opset_ = 1;
  const onnx::GraphProto& g = model.graph();
  for (const auto& t : g.initializer()) initializers_[t.name()] = &t;
  if (g.sparse_initializer_size() > 0)
    return UnimplementedError("sparse initializers are not supported");

  auto module = std::make_unique<ir::Module>();
  auto func_op = ir::Operation::Create("func.func", {}, {}, {{"sym_name", std::string("main")}}, 1);
  ir::Operation* func = module->body()->Append(std::move(func_op));
  block_ = func->region(0)->AddBlock();

  // Arguments: graph inputs that are not initializers.
  auto arg_names = std::make_shared<ir::AttrList>();
  for (const auto& input : g.input()) {
    if (initializers_.count(input.name()) && !opts_.constant_inputs.count(input.name())) continue;
    const std::string& name = input.name();
    if (input.type().has_sequence_type() || input.type().has_optional_type()) {
      // Structure fixed at compile time; elements are arguments NAME.k.
      const onnx::TypeProto& ty = input.type();
      bool optional = ty.has_optional_type();
      const onnx::TypeProto& inner = optional ? ty.optional_type().elem_type() : ty;
      bool holds_sequence = inner.has_sequence_type();
      const onnx::TypeProto& et = holds_sequence ? inner.sequence_type().elem_type() : inner;
      if (!et.has_tensor_type())
        return UnimplementedError("input '%s': only sequences/optionals of tensors are supported",
                                  name.c_str());
      auto si = opts_.sequence_inputs.find(name);
      if (si == opts_.sequence_inputs.end())
        return InvalidArgumentError(
            "input '%s' is a%s %s; Kiln fixes its structure at compile time: give it with "
            "--sequence-input=%s=[D0xD1,...] (element shapes), =[] (empty) or =none (empty optional)",
            name.c_str(), optional ? "n" : "", optional ? "optional" : "sequence", name.c_str(),
            name.c_str());
      if (opts_.constant_inputs.count(name))
        return InvalidArgumentError("input '%s': --constant-input takes tensors; use --sequence-input",
                                    name.c_str());
      const ImportOptions::SequenceInput& spec = si->second;
      if (!spec.present && !optional)
        return InvalidArgumentError("input '%s': 'none' is only for optional inputs", name.c_str());
      if (spec.present && optional && !holds_sequence && spec.element_shapes.size() != 1)
        return InvalidArgumentError("input '%s' is an optional tensor: give exactly one shape",
                                    name.c_str());
      DType dt = ConvertDType(et.tensor_type().elem_type());
      if (dt == DType::kInvalid)
        return UnimplementedError("input '%s': unsupported ONNX dtype %s", name.c_str(),
                                  OnnxDTypeName(et.tensor_type().elem_type()).c_str());
      OnnxValue v;
      v.kind = optional ? OnnxValue::Kind::kOptional : OnnxValue::Kind::kSequence;
      v.present = spec.present;
      v.holds_sequence = holds_sequence;
      v.elem_dtype = dt;
      if (spec.present) {
        for (size_t k = 0; k < spec.element_shapes.size(); ++k) {
          const Shape& es = spec.element_shapes[k];
          int64_t count = SafeNumElements(es);
          for (int64_t d : es) if (d > kMaxDim) count = -1;
          if (count < 0 || count > (int64_t{1} << 40))
            return InvalidArgumentError("input '%s': element %zu shape %s is invalid or too large",
                                        name.c_str(), k, ShapeStr(es).c_str());
          const auto& tt = et.tensor_type();
          if (tt.has_shape()) {
            bool ok = tt.shape().dim_size() == static_cast<int>(es.size());
            for (int i = 0; ok && i < tt.shape().dim_size(); ++i)
              if (tt.shape().dim(i).has_dim_value() && tt.shape().dim(i).dim_value() != es[i]) ok = false;
            if (!ok)
              return InvalidArgumentError(
                  "input '%s': element %zu shape %s does not match the model's element shape",
                  name.c_str(), k, ShapeStr(es).c_str());
          }
          v.elems.push_back(block_->AddArgument(Type::Tensor(dt, es)));
          arg_names->push_back(
              Attribute(holds_sequence ? name + "." + std::to_string(k) : name));
        }
      }
      Define(name, v);
      continue;
    }
    if (!input.type().has_tensor_type())
      return UnimplementedError("input '%s': only tensor inputs are supported", name.c_str());
    const auto& tt = input.type().tensor_type();
    DType dt = ConvertDType(tt.elem_type());
    if (dt == DType::kInvalid)
      return UnimplementedError("input '%s': unsupported ONNX dtype %s", name.c_str(),
                                OnnxDTypeName(tt.elem_type()).c_str());
    auto ov = opts_.input_shapes.find(name);
    Shape shape;
    if (ov != opts_.input_shapes.end()) {
      shape = ov->second;
      if (tt.has_shape()) {
        if (tt.shape().dim_size() != static_cast<int>(shape.size()))
          return InvalidArgumentError("input '%s': --input-shape gives rank %zu, the model declares rank %d",
                                      name.c_str(), shape.size(), tt.shape().dim_size());
        for (int i = 0; i < tt.shape().dim_size(); ++i) {
          const auto& d = tt.shape().dim(i);
          if (d.has_dim_value() && d.dim_value() != shape[i])
            return InvalidArgumentError(
                "input '%s': --input-shape gives dim %d = %lld, the model declares %lld",
                name.c_str(), i, static_cast<long long>(shape[i]),
                static_cast<long long>(d.dim_value()));
        }
      }
      for (int64_t d : shape)
        if (d < 0) return InvalidArgumentError("input '%s': negative dim in --input-shape", name.c_str());
    } else {
      if (!tt.has_shape())
        return InvalidArgumentError(
            "input '%s' has no declared shape; give one with --input-shape=%s=D0xD1x...",
            name.c_str(), name.c_str());
      std::string hint;
      int bad = -1;
      std::string bad_name;
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& d = tt.shape().dim(i);
        if (d.has_dim_value() && d.dim_value() >= 0) {
          shape.push_back(d.dim_value());
          hint += (i ? "x" : "") + std::to_string(d.dim_value());
        } else {
          if (bad < 0) { bad = i; bad_name = d.dim_param(); }
          hint += (i ? "x" : "") + std::string("?");
        }
      }
      if (bad >= 0)
        return InvalidArgumentError(
            "input '%s' has a dynamic dim %d%s; give a static shape with --input-shape=%s=%s "
            "(replace each ? with a size)",
            name.c_str(), bad, bad_name.empty() ? "" : (" ('" + bad_name + "')").c_str(),
            name.c_str(), hint.c_str());
    }
    if (shape.size() > kMaxInputRank)
      return InvalidArgumentError("input '%s' has rank %zu; Kiln's runtime takes tensors of rank <= %zu",
                                  name.c_str(), shape.size(), kMaxInputRank);
    int64_t count = SafeNumElements(shape);
    for (int64_t d : shape) if (d > kMaxDim) count = -1;
    if (count < 0 || count > (int64_t{1} << 40))
      return InvalidArgumentError("input '%s': shape %s is too large", name.c_str(), ShapeStr(shape).c_str());
    auto ci = opts_.constant_inputs.find(name);
    if (ci != opts_.constant_inputs.end()) {
      // Fixed at compile time: a constant, not an argument.
      const std::vector<double>& vals = ci->second;
      if (vals.size() != 1 && static_cast<int64_t>(vals.size()) != count)
        return InvalidArgumentError(
            "input '%s': --constant-input gives %zu values, the input has %lld elements",
            name.c_str(), vals.size(), static_cast<long long>(count));
      if (count > kMaxCreatedElements)
        return InvalidArgumentError("input '%s': too large for --constant-input", name.c_str());
      std::vector<double> full(static_cast<size_t>(count), vals.empty() ? 0.0 : vals[0]);
      if (vals.size() != 1) full = vals;
      loc_ = name;
      values_[name] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, shape), full), name);
      continue;
    }
    Value* arg = block_->AddArgument(Type::Tensor(dt, shape));
    values_[name] = arg;
    arg_names->push_back(Attribute(name));
  }
  // The graph's real inputs (not initializers), for messages naming a wrong one.
  auto graph_inputs = [&g]() {
    std::string list;
    for (const auto& input : g.input()) {
      bool initializer = false;
      for (const auto& init : g.initializer()) initializer |= init.name() == input.name();
      if (initializer) continue;
      if (!list.empty()) list += ", ";
      list += "'" + input.name() + "'";
    }
    return list.empty() ? std::string("none") : list;
  };
  for (const auto& kv : opts_.input_shapes) {
    bool found = false;
    for (const auto& input : g.input()) found |= input.name() == kv.first;
    if (!found)
      return InvalidArgumentError(
          "--input-shape names '%s', which is not a graph input (graph inputs: %s)",
          kv.first.c_str(), graph_inputs().c_str());
  }
  for (const auto& kv : opts_.sequence_inputs) {
    bool found = false;
    for (const auto& input : g.input()) found |= input.name() == kv.first;
    if (!found)
      return InvalidArgumentError(
          "--sequence-input names '%s', which is not a graph input (graph inputs: %s)",
          kv.first.c_str(), graph_inputs().c_str());
  }
  for (const auto& kv : opts_.constant_inputs) {
    bool found = false;
    for (const auto& input : g.input()) found |= input.name() == kv.first;
    if (!found)
      return InvalidArgumentError(
          "--constant-input names '%s', which is not a graph input (graph inputs: %s)",
          kv.first.c_str(), graph_inputs().c_str());
  }
  func->set_attr("arg_names", Attribute(arg_names));

  for (int i = 0; i < g.node_size(); ++i) KILN_RETURN_IF_ERROR(ImportNode(g.node(i), i));
  node_ = nullptr;

  // Results.
  std::vector<Value*> results;
  auto result_names = std::make_shared<ir::AttrList>();
  loc_ = "return";
  for (const auto& output : g.output()) {
    auto any = LookupAny(output.name());
    if (!any.ok())
      return InvalidArgumentError("graph output '%s' is not produced by any node",
                                  output.name().c_str());
    if (!any.value().is_tensor()) {
      // A sequence of N elements: results NAME.0 ... NAME.<N-1>; an optional
      // tensor: NAME; an empty optional: no result (onnx_importer.h).
      const OnnxValue& c = any.value();
      bool seq = c.is_sequence_like();
      for (size_t k = 0; k < c.elems.size(); ++k) {
        results.push_back(c.elems[k]);
        result_names->push_back(
            Attribute(seq ? output.name() + "." + std::to_string(k) : output.name()));
      }
      continue;
    }
    Value* val = any.value().tensor();
    // Check against the declared type where it is static.
    if (output.type().has_tensor_type()) {
      const auto& tt = output.type().tensor_type();
      DType dt = ConvertDType(tt.elem_type());
      if (tt.elem_type() != 0 && dt != val->type().dtype)
        return InvalidArgumentError("graph output '%s': imported dtype %s, the model declares %s",
                                    output.name().c_str(), DTypeName(val->type().dtype),
                                    OnnxDTypeName(tt.elem_type()).c_str());
      if (tt.has_shape()) {
        bool ok = tt.shape().dim_size() == val->type().rank();
        for (int i = 0; ok && i < tt.shape().dim_size(); ++i)
          if (tt.shape().dim(i).has_dim_value() &&
              tt.shape().dim(i).dim_value() != val->type().shape[i])
            ok = false;
        if (!ok)
          return InvalidArgumentError(
              "graph output '%s': imported shape %s does not match the model's declared shape",
              output.name().c_str(), ShapeStr(val->type().shape).c_str());
      }
    }
    results.push_back(val);
    result_names->push_back(Attribute(output.name()));
  }
  auto ret = ir::Operation::Create("func.return", results, {});
  ret->set_loc("return");
  block_->Append(std::move(ret));
  func->set_attr("result_names", Attribute(result_names));

  EraseDeadOps(block_);
  return module;
}

Status Importer::ImportNode(const onnx::NodeProto& n, int index) {
  node_ = &n;
  op_type_ = n.op_type();
  loc_ = n.name().empty() ? loc_prefix_ + n.op_type() + "_" + std::to_string(index) : n.name();
  if (++nodes_imported_ > kMaxImportedNodes)
    return Unimpl("the model expands to more than " + std::to_string(kMaxImportedNodes) +
                  " nodes (loops unrolled at import)");
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    return UnimplementedError("unsupported ONNX op '%s' (node '%s', domain '%s')",
                              n.op_type().c_str(), loc_.c_str(), n.domain().c_str());
  // Sequence/optional ops, and If / Loop / Identity (which may carry them).
  const auto& any_handlers = AnyHandlers();
  auto ah = any_handlers.find(n.op_type());
  if (ah != any_handlers.end()) {
    std::vector<OnnxValue> in;
    for (const auto& name : n.input()) {
      if (name.empty()) { in.push_back(OnnxValue::Tensor(nullptr)); continue; }
      KILN_ASSIGN_OR_RETURN(OnnxValue v, LookupAny(name));
      if (v.is_tensor() && !v.tensor()->type().is_tensor())
        return Invalid("input '" + name + "' is not a tensor");
      in.push_back(std::move(v));
    }
    std::vector<OnnxValue> out(std::max(n.output_size(), 1), OnnxValue::Tensor(nullptr));
    KILN_RETURN_IF_ERROR(CheckOnnxNodeAttributes(n, loc_));
    KILN_RETURN_IF_ERROR((this->*(ah->second))(n, in, out));
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty()) continue;
      if (out[i].is_tensor()) {
        if (!out[i].tensor())
          return Unimpl("output " + std::to_string(i) + " ('" + n.output(i) + "') is not supported");
        int64_t count = SafeNumElements(out[i].tensor()->type().shape);
        if (count < 0 || count > (int64_t{1} << 40))
          return Invalid("result shape " + ShapeStr(out[i].tensor()->type().shape) + " is too large");
      }
      Define(n.output(i), out[i]);
    }
    return OkStatus();
  }
  const auto& handlers = Handlers();
  auto h = handlers.find(n.op_type());
  if (h == handlers.end())
    return UnimplementedError("unsupported ONNX op '%s' (node '%s', domain '%s')",
                              n.op_type().c_str(), loc_.c_str(), n.domain().c_str());
  std::vector<Value*> in;
  for (const auto& name : n.input()) {
    if (name.empty()) { in.push_back(nullptr); continue; }
    KILN_ASSIGN_OR_RETURN(Value* v, Lookup(name));
    if (!v->type().is_tensor()) return Invalid("input '" + name + "' is not a tensor");
    in.push_back(v);
  }
  // Handlers write out[0] unconditionally; a node without outputs is legal
  // (if useless), so keep at least one slot.
  std::vector<Value*> out(std::max(n.output_size(), 1), nullptr);
  KILN_RETURN_IF_ERROR(CheckOnnxNodeAttributes(n, loc_));
  KILN_RETURN_IF_ERROR((this->*(h->second))(n, in, out));
  for (int i = 0; i < n.output_size(); ++i) {
    if (n.output(i).empty()) continue;
    if (!out[i])
      return Unimpl("output " + std::to_string(i) + " ('" + n.output(i) + "') is not supported");
    int64_t count = SafeNumElements(out[i]->type().shape);
    if (count < 0 || count > (int64_t{1} << 40))
      return Invalid("result shape " + ShapeStr(out[i]->type().shape) + " is too large");
    Define(n.output(i), OnnxValue::Tensor(out[i]));
  }
  return OkStatus();
}

const std::map<std::string, Importer::Handler>& Importer::Handlers() {
  static const std::map<std::string, Handler> kHandlers = {
      {"Constant", &Importer::ConstantOp},
      {"Identity", &Importer::Identity},
      {"Dropout", &Importer::Identity},
      {"Relu", &Importer::Unary}, {"Sigmoid", &Importer::Unary}, {"Tanh", &Importer::Unary},
      {"Exp", &Importer::Unary}, {"Log", &Importer::Unary}, {"Sqrt", &Importer::Unary},
      {"Neg", &Importer::Unary}, {"Abs", &Importer::Unary}, {"Reciprocal", &Importer::Unary},
      {"Floor", &Importer::Unary}, {"Ceil", &Importer::Unary}, {"Round", &Importer::Unary},
      {"Erf", &Importer::Unary}, {"Sin", &Importer::Unary}, {"Cos", &Importer::Unary},
      {"Not", &Importer::Unary}, {"LeakyRelu", &Importer::Unary},
      {"HardSigmoid", &Importer::Unary}, {"HardSwish", &Importer::Unary},
      {"Elu", &Importer::Unary}, {"Softplus", &Importer::Unary},
      {"Tan", &Importer::Unary}, {"Asin", &Importer::Unary}, {"Acos", &Importer::Unary},
      {"Atan", &Importer::Unary}, {"Sinh", &Importer::Unary}, {"Cosh", &Importer::Unary},
      {"Asinh", &Importer::Unary}, {"Acosh", &Importer::Unary}, {"Atanh", &Importer::Unary},
      {"Sign", &Importer::Unary}, {"IsNaN", &Importer::Unary}, {"IsInf", &Importer::Unary},
      {"Softsign", &Importer::Activation}, {"Selu", &Importer::Activation},
      {"Celu", &Importer::Activation}, {"ThresholdedRelu", &Importer::Activation},
      {"Shrink", &Importer::Activation},
      {"ArgMax", &Importer::ArgReduce}, {"ArgMin", &Importer::ArgReduce},
      {"Hardmax", &Importer::Hardmax}, {"Trilu", &Importer::Trilu},
      {"EyeLike", &Importer::EyeLike}, {"CumSum", &Importer::CumSum},
      {"BitShift", &Importer::BitShift}, {"TfIdfVectorizer", &Importer::TfIdfVectorizer},
      {"GatherElements", &Importer::GatherElements}, {"OneHot", &Importer::OneHot},
      {"ScatterElements", &Importer::Scatter}, {"Scatter", &Importer::Scatter},
      {"ScatterND", &Importer::Scatter}, {"GatherND", &Importer::GatherND},
      {"Compress", &Importer::Compress}, {"TopK", &Importer::TopK}, {"HannWindow", &Importer::Window},
      {"HammingWindow", &Importer::Window}, {"BlackmanWindow", &Importer::Window},
      {"NegativeLogLikelihoodLoss", &Importer::NllLoss},
      {"SoftmaxCrossEntropyLoss", &Importer::SoftmaxCrossEntropyLoss},
      {"DepthToSpace", &Importer::SpaceDepth}, {"SpaceToDepth", &Importer::SpaceDepth},
      {"QuantizeLinear", &Importer::QuantizeLinear}, {"DequantizeLinear", &Importer::DequantizeLinear},
      {"DynamicQuantizeLinear", &Importer::DynamicQuantizeLinear},
      {"MatMulInteger", &Importer::MatMulInteger}, {"ConvInteger", &Importer::ConvInteger},
      {"QLinearMatMul", &Importer::QLinearMatMul}, {"QLinearConv", &Importer::QLinearConv},
      {"NonZero", &Importer::DataDependent}, {"Unique", &Importer::DataDependent},
      {"NonMaxSuppression", &Importer::DataDependent}, {"Einsum", &Importer::Einsum},
      {"DFT", &Importer::DFT}, {"STFT", &Importer::STFT}, {"MelWeightMatrix", &Importer::MelWeightMatrix},
      {"ReverseSequence", &Importer::ReverseSequence}, {"MaxUnpool", &Importer::MaxUnpool}, {"Det", &Importer::Det},
      {"GridSample", &Importer::GridSample}, {"RoiAlign", &Importer::RoiAlign},
      {"Add", &Importer::BinaryOp}, {"Sub", &Importer::BinaryOp}, {"Mul", &Importer::BinaryOp},
      {"Div", &Importer::BinaryOp}, {"Pow", &Importer::BinaryOp}, {"Mod", &Importer::BinaryOp},
      {"Equal", &Importer::BinaryOp}, {"Greater", &Importer::BinaryOp},
      {"Less", &Importer::BinaryOp}, {"GreaterOrEqual", &Importer::BinaryOp},
      {"LessOrEqual", &Importer::BinaryOp}, {"And", &Importer::BinaryOp},
      {"Or", &Importer::BinaryOp}, {"Xor", &Importer::BinaryOp},
      {"Max", &Importer::Variadic}, {"Min", &Importer::Variadic}, {"Sum", &Importer::Variadic},
      {"Mean", &Importer::Variadic},
      {"Where", &Importer::Where},
      {"Clip", &Importer::Clip},
      {"PRelu", &Importer::PRelu},
      {"Conv", &Importer::Conv},
      {"MaxPool", &Importer::Pool}, {"AveragePool", &Importer::Pool},
      {"GlobalAveragePool", &Importer::GlobalPool}, {"GlobalMaxPool", &Importer::GlobalPool},
      {"BatchNormalization", &Importer::BatchNorm},
      {"ReduceMean", &Importer::Reduce}, {"ReduceMax", &Importer::Reduce},
      {"ReduceMin", &Importer::Reduce}, {"ReduceSum", &Importer::Reduce},
      {"ReduceProd", &Importer::Reduce}, {"ReduceSumSquare", &Importer::Reduce},
      {"ReduceL2", &Importer::Reduce}, {"ReduceLogSumExp", &Importer::Reduce},
      {"ReduceL1", &Importer::Reduce}, {"ReduceLogSum", &Importer::Reduce},
      {"Softmax", &Importer::Softmax}, {"LogSoftmax", &Importer::Softmax},
      {"MatMul", &Importer::MatMul},
      {"Gemm", &Importer::Gemm},
      {"Flatten", &Importer::Flatten},
      {"Reshape", &Importer::ReshapeOp},
      {"Unsqueeze", &Importer::Unsqueeze},
      {"Squeeze", &Importer::Squeeze},
      {"Transpose", &Importer::TransposeOp},
      {"Concat", &Importer::Concat},
      {"Split", &Importer::Split},
      {"Slice", &Importer::Slice},
      {"Cast", &Importer::CastOp}, {"CastLike", &Importer::CastOp},
      {"Shape", &Importer::ShapeOp},
      {"Size", &Importer::Size},
      {"Gather", &Importer::Gather},
      {"Pad", &Importer::Pad},
      {"Expand", &Importer::Expand},
      {"Tile", &Importer::Tile},
      {"ConstantOfShape", &Importer::ConstantOfShape},
      {"Range", &Importer::Range},
      {"LayerNormalization", &Importer::LayerNorm},
      {"InstanceNormalization", &Importer::InstanceNorm},
      {"MeanVarianceNormalization", &Importer::MeanVarianceNorm}, {"LRN", &Importer::Lrn},
      {"Scan", &Importer::Scan},
      {"LSTM", &Importer::LSTM}, {"RNN", &Importer::RnnGru}, {"GRU", &Importer::RnnGru},
      {"ConvTranspose", &Importer::ConvTranspose},
      {"Resize", &Importer::Resize}, {"Upsample", &Importer::Resize},
  };
  return kHandlers;
}


}  // namespace detail

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------
StatusOr<std::unique_ptr<ir::Module>> ImportOnnxBytes(const void* data, size_t size,
                                                      const ImportOptions& options) {
  onnx::ModelProto model;
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    return UnimplementedError("ONNX models over 2 GiB are not supported");
  if (!model.ParseFromArray(data, static_cast<int>(size)))
    return DataLossError("failed to parse ONNX model");
  if (!model.has_graph())
    return DataLossError("failed to parse ONNX model: it has no graph");
  // The default domain's opset must be a released one: opsets newer than
  // the newest Kiln knows may change an op's meaning.
  for (const auto& o : model.opset_import())
    if ((o.domain().empty() || o.domain() == "ai.onnx") && (o.version() < 1 || o.version() > detail::kMaxOpset))
      return InvalidArgumentError("the model imports ONNX opset %lld; Kiln knows opsets 1 to %d",
                                  static_cast<long long>(o.version()), detail::kMaxOpset);
  // ONNX's own checker (libonnx's onnx::checker): node, attribute and type
  // well-formedness. Its message names the node.
  // One producer per tensor name in the main graph (SSA), whatever the
  // opset: two nodes writing one tensor, or a node overwriting an input or
  // initializer, would make the import depend on node order.
  {
    std::set<std::string> defined;
    for (const auto& in : model.graph().input()) defined.insert(in.name());
    for (const auto& t : model.graph().initializer()) defined.insert(t.name());
    for (const auto& n : model.graph().node())
      for (const auto& o : n.output())
        if (!o.empty() && !defined.insert(o).second)
          return InvalidArgumentError(
              "node '%s' (%s) writes tensor '%s', which another node, an input or an initializer "
              "already defines (ONNX graphs are in single static assignment form)",
              n.name().c_str(), n.op_type().c_str(), o.c_str());
  }
  // ONNX's checker knows the opsets of this libonnx only: a newer opset's
  // attributes (Resize's antialias at 18) would be "unrecognized", so it
  // runs on models whose default opset it knows. Relaxed only where ONNX
  // Runtime is: a graph output may omit its type or shape (the checker
  // requires both), so a placeholder is put there for the check and taken
  // away after it.
  int model_opset = 1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") model_opset = static_cast<int>(o.version());
  const auto& known = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  auto range = known.find("");
  if (options.onnx_checker && range != known.end() && model_opset <= range->second.second) {
    std::vector<std::pair<int, bool>> filled;  // output index, whole type (else shape only)
    onnx::GraphProto* g = model.mutable_graph();
    for (int i = 0; i < g->output_size(); ++i) {
      onnx::TypeProto* t = g->mutable_output(i)->mutable_type();
      if (t->value_case() == onnx::TypeProto::VALUE_NOT_SET) {
        t->mutable_tensor_type()->set_elem_type(onnx::TensorProto_DataType_FLOAT);
        t->mutable_tensor_type()->mutable_shape();
        filled.push_back({i, true});
      } else if (t->has_tensor_type() && !t->tensor_type().has_shape()) {
        t->mutable_tensor_type()->mutable_shape();
        filled.push_back({i, false});
      }
    }
    std::string rejected;
    try {
      onnx::checker::check_model(model);
    } catch (const std::exception& e) {
      rejected = e.what();
    }
    for (auto [i, whole] : filled) {
      if (whole) g->mutable_output(i)->clear_type();
      else g->mutable_output(i)->mutable_type()->mutable_tensor_type()->clear_shape();
    }
    if (!rejected.empty()) return InvalidArgumentError("ONNX's checker rejects the model: %s", rejected.c_str());
  }
  detail::Importer importer(options);
  return importer.Import(model);
}

StatusOr<std::unique_ptr<ir::Module>> ImportOnnxFile(const std::string& path,
                                                     const ImportOptions& options) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot open ONNX model '%s'", path.c_str());
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return DataLossError("failed to read ONNX model '%s'", path.c_str());
  return ImportOnnxBytes(bytes.data(), bytes.size(), options);
}

std::vector<std::string> SupportedOnnxOps() {
  std::vector<std::string> ops;
  for (const auto& kv : detail::Importer::Handlers()) ops.push_back(kv.first);
  for (const auto& kv : detail::Importer::AnyHandlers()) ops.push_back(kv.first);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

Status ParseConstantInputFlag(const std::string& flag_value, ImportOptions* options) {
  size_t eq = flag_value.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == flag_value.size())
    return InvalidArgumentError("--constant-input '%s': expected NAME=V or NAME=V0,V1,...",
                                flag_value.c_str());
  std::string name = flag_value.substr(0, eq);
  std::vector<double> values;
  std::stringstream ss(flag_value.substr(eq + 1));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok == "true") { values.push_back(1); continue; }
    if (tok == "false") { values.push_back(0); continue; }
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (tok.empty() || end != tok.c_str() + tok.size())
      return InvalidArgumentError("--constant-input '%s': bad value '%s'", flag_value.c_str(),
                                  tok.c_str());
    values.push_back(v);
  }
  if (flag_value.back() == ',')
    return InvalidArgumentError("--constant-input '%s': trailing ','", flag_value.c_str());
  options->constant_inputs[name] = std::move(values);
  return OkStatus();
}

Status ParseSequenceInputFlag(const std::string& flag_value, ImportOptions* options) {
  size_t eq = flag_value.find('=');
  if (eq == std::string::npos || eq == 0)
    return InvalidArgumentError("--sequence-input '%s': expected NAME=[S0,S1,...], NAME=[] or NAME=none",
                                flag_value.c_str());
  std::string name = flag_value.substr(0, eq), rest = flag_value.substr(eq + 1);
  ImportOptions::SequenceInput spec;
  if (rest == "none") {
    spec.present = false;
  } else {
    if (rest.size() < 2 || rest.front() != '[' || rest.back() != ']')
      return InvalidArgumentError("--sequence-input '%s': expected NAME=[S0,S1,...], NAME=[] or NAME=none",
                                  flag_value.c_str());
    std::string body = rest.substr(1, rest.size() - 2);
    if (!body.empty()) {
      if (body.back() == ',')
        return InvalidArgumentError("--sequence-input '%s': trailing ','", flag_value.c_str());
      std::stringstream ss(body);
      std::string elem;
      while (std::getline(ss, elem, ',')) {
        ImportOptions probe;
        Status st = ParseInputShapeFlag("x=" + elem, &probe);
        if (!st.ok() || elem.empty())
          return InvalidArgumentError("--sequence-input '%s': bad element shape '%s'", flag_value.c_str(),
                                      elem.c_str());
        spec.element_shapes.push_back(probe.input_shapes["x"]);
      }
    }
  }
  options->sequence_inputs[name] = std::move(spec);
  return OkStatus();
}

Status ParseInputShapeFlag(const std::string& flag_value, ImportOptions* options) {
  size_t eq = flag_value.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return InvalidArgumentError("--input-shape '%s': expected NAME=D0xD1x...", flag_value.c_str());
  std::string name = flag_value.substr(0, eq), dims = flag_value.substr(eq + 1);
  std::vector<int64_t> shape;
  if (!dims.empty() && dims != "scalar") {
    std::stringstream ss(dims);
    std::string tok;
    while (std::getline(ss, tok, 'x')) {
      if (tok.empty() || tok.find_first_not_of("0123456789") != std::string::npos)
        return InvalidArgumentError("--input-shape '%s': bad dim '%s'", flag_value.c_str(), tok.c_str());
      shape.push_back(std::stoll(tok));
    }
    if (dims.back() == 'x')
      return InvalidArgumentError("--input-shape '%s': trailing 'x'", flag_value.c_str());
  }
  options->input_shapes[name] = shape;
  return OkStatus();
}

}  // namespace kiln::onnx_import
