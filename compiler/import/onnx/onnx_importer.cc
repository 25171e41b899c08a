// ONNX → tensor-level IR. See onnx_importer.h for the contract.
//
// Structure: Importer walks the graph nodes in order (ONNX graphs are
// topologically sorted). Each node handler computes static result types and
// emits ops through Emit(), which folds any op whose operands are all
// constants (const_eval.h). Initializers become tensor.constant lazily, at
// first use. At the end, unused ops (dead constants, folded intermediates) are
// erased, inside regions too. The Importer class is declared in
// onnx_importer_internal.h; If/Loop/Scan (and subgraph scopes) live in
// onnx_control_flow.cc, LSTM in onnx_lstm.cc.
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


int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, s.size()); ++i) p *= s[i];
  return p;
}

// Element count, or -1 when a dim is negative or the count overflows.
int64_t SafeNumElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string ShapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string OnnxDTypeName(int32_t t) {
  const std::string& n = onnx::TensorProto_DataType_Name(t);
  return n.empty() ? "dtype#" + std::to_string(t) : n;
}

// ONNX TensorProto.DataType → DType; kInvalid when unsupported.
DType ConvertDType(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT: return DType::kF32;
    case onnx::TensorProto_DataType_UINT8: return DType::kU8;
    case onnx::TensorProto_DataType_INT8: return DType::kI8;
    case onnx::TensorProto_DataType_INT16: return DType::kI16;
    case onnx::TensorProto_DataType_INT32: return DType::kI32;
    case onnx::TensorProto_DataType_INT64: return DType::kI64;
    case onnx::TensorProto_DataType_BOOL: return DType::kBool;
    case onnx::TensorProto_DataType_FLOAT16: return DType::kF16;
    case onnx::TensorProto_DataType_DOUBLE: return DType::kF64;
    case onnx::TensorProto_DataType_BFLOAT16: return DType::kBF16;
    case onnx::TensorProto_DataType_UINT16: return DType::kU16;
    case onnx::TensorProto_DataType_UINT32: return DType::kU32;
    case onnx::TensorProto_DataType_UINT64: return DType::kU64;
    default: return DType::kInvalid;
  }
}

// Converts a TensorProto (raw_data or typed fields) to DenseElements. `what`
// names the tensor in errors ("initializer 'w'", "node 'n' (Constant)").
StatusOr<DenseElements> TensorToDense(const onnx::TensorProto& t, const std::string& what) {
  DType dt = ConvertDType(t.data_type());
  if (dt == DType::kInvalid)
    return UnimplementedError("%s: unsupported ONNX dtype %s", what.c_str(),
                              OnnxDTypeName(t.data_type()).c_str());
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return UnimplementedError("%s: external tensor data is not supported", what.c_str());
  if (t.has_segment())
    return UnimplementedError("%s: segmented tensors are not supported", what.c_str());
  Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = SafeNumElements(shape);
  if (n < 0 || n > (int64_t{1} << 40))
    return InvalidArgumentError("%s: bad tensor shape %s", what.c_str(), ShapeStr(shape).c_str());
  size_t es = DTypeSize(dt);
  size_t want = static_cast<size_t>(n) * es;
  // Every element must be present in the message, so these checks come before
  // allocating.
  size_t have = t.has_raw_data() ? t.raw_data().size()
                : static_cast<size_t>(std::max({t.float_data_size(), t.double_data_size(),
                                                t.int64_data_size(), t.int32_data_size(),
                                                t.uint64_data_size()})) * es;
  if (have != want && t.has_raw_data())
    return InvalidArgumentError("%s: raw_data has %zu bytes, expected %zu for shape %s %s",
                                what.c_str(), t.raw_data().size(), want,
                                ShapeStr(shape).c_str(), DTypeName(dt));
  if (have < want)
    return InvalidArgumentError("%s: holds fewer values than its shape %s needs", what.c_str(),
                                ShapeStr(shape).c_str());
  std::vector<uint8_t> bytes(want);
  if (t.has_raw_data()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data().data(), bytes.size());
  } else {
    auto check = [&](int count) -> Status {
      if (count != n)
        return InvalidArgumentError("%s: has %d values, expected %lld for shape %s", what.c_str(),
                                    count, static_cast<long long>(n), ShapeStr(shape).c_str());
      return OkStatus();
    };
    uint8_t* o = bytes.data();
    switch (dt) {
      case DType::kF32:
        KILN_RETURN_IF_ERROR(check(t.float_data_size()));
        for (int64_t i = 0; i < n; ++i) { float v = t.float_data(i); std::memcpy(o + 4 * i, &v, 4); }
        break;
      case DType::kF64:
        KILN_RETURN_IF_ERROR(check(t.double_data_size()));
        for (int64_t i = 0; i < n; ++i) { double v = t.double_data(i); std::memcpy(o + 8 * i, &v, 8); }
        break;
      case DType::kI64:
        KILN_RETURN_IF_ERROR(check(t.int64_data_size()));
        for (int64_t i = 0; i < n; ++i) { int64_t v = t.int64_data(i); std::memcpy(o + 8 * i, &v, 8); }
        break;
      case DType::kI32:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) { int32_t v = t.int32_data(i); std::memcpy(o + 4 * i, &v, 4); }
        break;
      case DType::kU32: case DType::kU64:
        KILN_RETURN_IF_ERROR(check(t.uint64_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          uint64_t v = t.uint64_data(i);
          std::memcpy(o + es * i, &v, es);  // little-endian: the low bytes for u32
        }
        break;
      case DType::kI16: case DType::kF16: case DType::kU16: case DType::kBF16:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          uint16_t v = static_cast<uint16_t>(t.int32_data(i));
          std::memcpy(o + 2 * i, &v, 2);
        }
        break;
      case DType::kI8: case DType::kU8: case DType::kBool:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          int32_t v = t.int32_data(i);
          o[i] = dt == DType::kBool ? (v != 0) : static_cast<uint8_t>(v);
        }
        break;
      default:
        return UnimplementedError("%s: unsupported ONNX dtype %s", what.c_str(),
                                  OnnxDTypeName(t.data_type()).c_str());
    }
  }
  DenseElements d;
  d.type = Type::Tensor(dt, shape);
  d.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return d;
}

const DenseElements* GetConst(Value* v) {
  if (!v) return nullptr;
  ir::Operation* op = v->defining_op();
  if (!op || !op->is("tensor.constant")) return nullptr;
  const Attribute* a = op->attr("value");
  return a ? std::get_if<DenseElements>(&a->value) : nullptr;
}

// numpy broadcasting of two shapes; false if incompatible.
bool BroadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) s[i] = da;
    else if (da == 1) s[i] = db;
    else return false;
  }
  *out = s;
  return true;
}

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }


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


// ---------------------------------------------------------------------------
// Constants and identities
// ---------------------------------------------------------------------------
Status Importer::ConstantOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  const std::string what = "node '" + loc_ + "' (Constant)";
  for (const auto& a : n.attribute()) {
    if (a.name() == "value") {
      KILN_ASSIGN_OR_RETURN(DenseElements d, TensorToDense(a.t(), what));
      out[0] = Constant(std::move(d));
    } else if (a.name() == "value_float") {
      out[0] = ScalarConst(DType::kF32, a.f());
    } else if (a.name() == "value_int") {
      out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {}), {a.i()}));
    } else if (a.name() == "value_floats") {
      std::vector<double> v(a.floats().begin(), a.floats().end());
      out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kF32, {int64_t(v.size())}), v));
    } else if (a.name() == "value_ints") {
      Shape v(a.ints().begin(), a.ints().end());
      out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {int64_t(v.size())}), v));
    } else {
      return Unimpl("Constant attribute '" + a.name() + "' is not supported");
    }
  }
  if (!out[0]) return Invalid("Constant has no value");
  return OkStatus();
}

Status Importer::Identity(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  if (op_type_ == "Dropout") {
    // Inference only: training_mode (opset 12 input, or is_test = 0 before
    // opset 7) must be absent or a constant false.
    if (AttrInt("is_test", 1) == 0) return Unimpl("Dropout in training mode is not supported");
    if (in.size() > 2 && in[2]) {
      const DenseElements* t = GetConst(in[2]);
      if (!t || t->type.num_elements() != 1 || ReadElementAsInt(*t, 0) != 0)
        return Unimpl("Dropout in training mode (training_mode not a constant false) is not supported");
    }
  }
  out[0] = in[0];
  if (op_type_ == "Dropout" && out.size() > 1 && !n.output(1).empty()) {
    // Inference: the mask is all true.
    const Shape& s = in[0]->type().shape;
    out[1] = Constant(MakeDenseFromInts(Type::Tensor(DType::kBool, s),
                                        std::vector<int64_t>(Product(s), 1)));
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------
Status Importer::Unary(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  static const std::map<std::string, std::string> kNames = {
      {"Relu", "relu"}, {"Sigmoid", "sigmoid"}, {"Tanh", "tanh"}, {"Exp", "exp"},
      {"Log", "log"}, {"Sqrt", "sqrt"}, {"Neg", "neg"}, {"Abs", "abs"},
      {"Reciprocal", "reciprocal"}, {"Floor", "floor"}, {"Ceil", "ceil"}, {"Round", "round"},
      {"Erf", "erf"}, {"Sin", "sin"}, {"Cos", "cos"}, {"Not", "not"},
      {"LeakyRelu", "leaky_relu"}, {"HardSigmoid", "hard_sigmoid"}, {"HardSwish", "hard_swish"},
      {"Elu", "elu"}, {"Softplus", "softplus"}, {"Tan", "tan"}, {"Asin", "asin"},
      {"Acos", "acos"}, {"Atan", "atan"}, {"Sinh", "sinh"}, {"Cosh", "cosh"}, {"Asinh", "asinh"},
      {"Acosh", "acosh"}, {"Atanh", "atanh"}, {"Sign", "sign"}, {"IsNaN", "isnan"},
      {"IsInf", "isinf"}};
  Attrs attrs;
  if (op_type_ == "LeakyRelu") attrs["alpha"] = AttrFloat("alpha", 0.01);
  if (op_type_ == "Elu") attrs["alpha"] = AttrFloat("alpha", 1.0);
  if (op_type_ == "HardSigmoid") {
    attrs["alpha"] = AttrFloat("alpha", 0.2);
    attrs["beta"] = AttrFloat("beta", 0.5);
  }
  if (op_type_ == "Not" && in[0]->type().dtype != DType::kBool) return Invalid("Not needs a bool input");
  Type rt = in[0]->type();
  if (op_type_ == "IsNaN" || op_type_ == "IsInf") {
    if (rt.dtype != DType::kF32)
      return Unimpl(std::string(op_type_) + " of " + DTypeName(rt.dtype) + " (only f32)");
    rt.dtype = DType::kBool;
  }
  if (op_type_ == "IsInf") {
    attrs["detect_negative"] = AttrInt("detect_negative", 1);
    attrs["detect_positive"] = AttrInt("detect_positive", 1);
  }
  out[0] = Emit("tensor." + kNames.at(op_type_), {in[0]}, rt, std::move(attrs));
  return OkStatus();
}

Status Importer::BinaryOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  static const std::map<std::string, std::string> kNames = {
      {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
      {"Mod", "mod"}, {"Equal", "equal"}, {"Greater", "greater"}, {"Less", "less"},
      {"GreaterOrEqual", "greater_equal"}, {"LessOrEqual", "less_equal"},
      {"And", "and"}, {"Or", "or"}, {"Xor", "xor"}};
  if (opset_ < 7 && HasAttr("broadcast") && AttrInt("broadcast", 0) != 0 && HasAttr("axis"))
    return Unimpl("legacy broadcast with 'axis' (opset < 7) is not supported");
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor." + kNames.at(op_type_), in[0], in[1]));
  return OkStatus();
}

Status Importer::Variadic(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  std::string op = op_type_ == "Max" ? "tensor.max" : op_type_ == "Min" ? "tensor.min" : "tensor.add";
  Value* acc = in[0];
  int count = 1;
  for (size_t i = 1; i < in.size(); ++i) {
    if (!in[i]) continue;
    KILN_ASSIGN_OR_RETURN(acc, Binary(op, acc, in[i]));
    ++count;
  }
  if (op_type_ == "Mean" && count > 1) {
    KILN_ASSIGN_OR_RETURN(acc, Binary("tensor.div", acc, ScalarConst(acc->type().dtype, count)));
  }
  out[0] = acc;
  return OkStatus();
}

Status Importer::Where(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  if (in[0]->type().dtype != DType::kBool) return Invalid("Where condition must be bool");
  if (in[1]->type().dtype != in[2]->type().dtype) return Invalid("Where branches differ in dtype");
  Shape s1, s;
  if (!BroadcastShapes(in[0]->type().shape, in[1]->type().shape, &s1) ||
      !BroadcastShapes(s1, in[2]->type().shape, &s))
    return Invalid("Where operands do not broadcast");
  out[0] = Emit("tensor.select", {in[0], in[1], in[2]}, Type::Tensor(in[1]->type().dtype, s));
  return OkStatus();
}

Status Importer::Clip(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  DType dt = x->type().dtype;
  double lo = -INFINITY, hi = INFINITY;
  if (opset_ < 11) {
    lo = AttrFloat("min", -INFINITY);
    hi = AttrFloat("max", INFINITY);
  } else {
    Value* vmin = in.size() > 1 ? in[1] : nullptr;
    Value* vmax = in.size() > 2 ? in[2] : nullptr;
    for (Value* b : {vmin, vmax})
      if (b && b->type().num_elements() != 1) return Invalid("Clip bounds must be scalars");
    bool all_const = (!vmin || GetConst(vmin)) && (!vmax || GetConst(vmax));
    if (!all_const) {
      // Data-dependent bounds: max(x, min) then min(., max).
      auto irrelevant = [](Value* bound, bool is_min) {
        const DenseElements* c = GetConst(bound);
        if (!c) return false;
        double v = ReadElementAsDouble(*c, 0);
        return std::isinf(v) && (is_min ? v < 0 : v > 0);
      };
      if (vmin && irrelevant(vmin, true)) vmin = nullptr;
      if (vmax && irrelevant(vmax, false)) vmax = nullptr;
      Value* y = x;
      if (vmin) {
        KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.max", y, Reshape(Cast(vmin, dt), {})));
        y = m;
      }
      if (vmax) {
        KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.min", y, Reshape(Cast(vmax, dt), {})));
        y = m;
      }
      out[0] = y;
      return OkStatus();
    }
    if (vmin) lo = ReadElementAsDouble(*GetConst(vmin), 0);
    if (vmax) hi = ReadElementAsDouble(*GetConst(vmax), 0);
  }
  if (std::isinf(lo) && lo < 0 && std::isinf(hi) && hi > 0) {
    out[0] = x;
    return OkStatus();
  }
  out[0] = Emit("tensor.clamp", {x}, x->type(), {{"min", lo}, {"max", hi}});
  return OkStatus();
}

Status Importer::PRelu(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  // relu(x) + slope * min(x, 0)
  Value* pos = Emit("tensor.relu", {x}, x->type());
  KILN_ASSIGN_OR_RETURN(Value* neg, Binary("tensor.min", x, ScalarConst(x->type().dtype, 0)));
  KILN_ASSIGN_OR_RETURN(Value* scaled, Binary("tensor.mul", neg, in[1]));
  if (scaled->type().shape != x->type().shape) return Invalid("PRelu slope does not broadcast to X");
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", pos, scaled));
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Convolution and pooling
// ---------------------------------------------------------------------------
// Resolves strides/dilations/pads (auto_pad) and output sizes for `kernel`
// over `in_spatial`. Pool: applies ceil_mode.
Status Importer::SpatialParams(const Shape& in_spatial, const Shape& kernel, bool pool,
                               Shape* strides, Shape* dilations, Shape* pads, Shape* out_spatial) {
  size_t k = in_spatial.size();
  *strides = AttrInts("strides", Shape(k, 1));
  *dilations = AttrInts("dilations", Shape(k, 1));
  *pads = AttrInts("pads", Shape(2 * k, 0));
  if (strides->size() != k || dilations->size() != k || pads->size() != 2 * k)
    return Invalid("strides/dilations/pads have the wrong length");
  for (size_t i = 0; i < k; ++i)
    if ((*strides)[i] <= 0 || (*dilations)[i] <= 0 || kernel[i] <= 0 || (*strides)[i] > kMaxDim ||
        (*dilations)[i] > kMaxDim || kernel[i] > kMaxDim)
      return Invalid("strides, dilations and kernel sizes must be positive");
  for (int64_t p : *pads)
    if (p < 0 || p > kMaxDim) return Invalid("bad pad " + std::to_string(p));
  std::string auto_pad = AttrStr("auto_pad", "NOTSET");
  bool ceil_mode = pool && AttrInt("ceil_mode", 0) != 0;
  out_spatial->assign(k, 0);
  for (size_t i = 0; i < k; ++i) {
    int64_t eff = (kernel[i] - 1) * (*dilations)[i] + 1;
    int64_t s = (*strides)[i];
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = CeilDiv(in_spatial[i], s);
      int64_t total = std::max<int64_t>(0, (o - 1) * s + eff - in_spatial[i]);
      int64_t small = total / 2, big = total - total / 2;
      (*pads)[i] = auto_pad == "SAME_UPPER" ? small : big;
      (*pads)[i + k] = auto_pad == "SAME_UPPER" ? big : small;
    } else if (auto_pad == "VALID") {
      (*pads)[i] = (*pads)[i + k] = 0;
    } else if (auto_pad != "NOTSET" && !auto_pad.empty()) {
      return Unimpl("auto_pad '" + auto_pad + "' is not supported");
    }
    int64_t num = in_spatial[i] + (*pads)[i] + (*pads)[i + k] - eff;
    if (num < 0)
      return Invalid("kernel (" + std::to_string(eff) + ") larger than padded input (" +
                     std::to_string(in_spatial[i] + (*pads)[i] + (*pads)[i + k]) + ")");
    int64_t o = (ceil_mode ? CeilDiv(num, s) : FloorDiv(num, s)) + 1;
    // The last window must start inside the input or the left padding.
    if (ceil_mode && (o - 1) * s >= in_spatial[i] + (*pads)[i]) --o;
    (*out_spatial)[i] = o;
  }
  return OkStatus();
}

Status Importer::Conv(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* w = in[1];
  Value* b = in.size() > 2 ? in[2] : nullptr;
  const Shape& xs = x->type().shape;
  const Shape& ws = w->type().shape;
  int64_t r = x->type().rank();
  if (r != 3 && r != 4) return Unimpl("Conv with " + std::to_string(r - 2) + " spatial dims is not supported");
  if (w->type().rank() != r) return Invalid("Conv weight rank differs from input rank");
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("Conv on ") + DTypeName(x->type().dtype));
  if (w->type().dtype != x->type().dtype) return Invalid("Conv weight dtype differs from input");
  int64_t group = AttrInt("group", 1);
  if (group <= 0 || ws[0] % group != 0 || ws[1] * group != xs[1])
    return Invalid("Conv channels mismatch: input " + ShapeStr(xs) + ", weight " + ShapeStr(ws) +
                   ", group " + std::to_string(group));
  Shape kernel(ws.begin() + 2, ws.end());
  if (HasAttr("kernel_shape") && AttrInts("kernel_shape") != kernel)
    return Invalid("kernel_shape attribute disagrees with the weight shape");
  Shape in_sp(xs.begin() + 2, xs.end()), strides, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, false, &strides, &dil, &pads, &out_sp));
  if (b) {
    if (b->type().shape != Shape{ws[0]}) return Invalid("Conv bias must be [" + std::to_string(ws[0]) + "]");
    if (b->type().dtype != x->type().dtype) return Invalid("Conv bias dtype differs");
  }
  // A QDQ convolution runs on its integers, exactly (onnx_qdq_conv.cc).
  std::vector<float> sxsw;
  KILN_ASSIGN_OR_RETURN(bool exact_qdq, ExactQdqConvOperands(&x, &w, &b, &sxsw));
  if (r == 3) {  // 1-D: conv2d with H = 1
    x = Reshape(x, {xs[0], xs[1], 1, xs[2]});
    w = Reshape(w, {ws[0], ws[1], 1, ws[2]});
    strides = {1, strides[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
  }
  std::vector<Value*> ops = {x, w};
  if (b) ops.push_back(b);
  Shape os = {xs[0], ws[0], out_sp[0], out_sp[1]};
  Value* y = Emit("tensor.conv2d", ops, Type::Tensor(x->type().dtype, os),
                  {{"strides", strides}, {"pads", pads}, {"dilations", dil}, {"group", group}});
  if (r == 3) y = Reshape(y, {xs[0], ws[0], out_sp[1]});
  if (exact_qdq) {
    Value* acc = y;
    KILN_ASSIGN_OR_RETURN(y, ScaleChannels(acc, sxsw));
    qdq_convs_[y] = QdqConv{acc, sxsw};
  }
  out[0] = y;
  return OkStatus();
}

Status Importer::Pool(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  if (out.size() > 1 && !n.output(1).empty()) return MaxPoolWithIndices(n, in, out);  // onnx_pool_indices.cc
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  if (r == 5) return Pool3D(n, in, out);  // onnx_pool_indices.cc
  if (r != 3 && r != 4) return Unimpl("pooling with " + std::to_string(r - 2) + " spatial dims is not supported");
  Shape kernel = AttrInts("kernel_shape");
  if (static_cast<int64_t>(kernel.size()) != r - 2) return Invalid("kernel_shape must have rank-2 entries");
  Shape in_sp(xs.begin() + 2, xs.end()), strides, dil, pads, out_sp;
  KILN_RETURN_IF_ERROR(SpatialParams(in_sp, kernel, true, &strides, &dil, &pads, &out_sp));
  bool is_max = op_type_ == "MaxPool";
  bool cip = !is_max && AttrInt("count_include_pad", 0) != 0;
  if (r == 3) {
    x = Reshape(x, {xs[0], xs[1], 1, xs[2]});
    kernel = {1, kernel[0]};
    strides = {1, strides[0]};
    dil = {1, dil[0]};
    pads = {0, pads[0], 0, pads[1]};
    out_sp = {1, out_sp[0]};
  }
  Shape os = {xs[0], xs[1], out_sp[0], out_sp[1]};
  Value* y = Emit("tensor.pool2d", {x}, Type::Tensor(x->type().dtype, os),
                  {{"kind", std::string(is_max ? "max" : "avg")},
                   {"kernel", kernel},
                   {"strides", strides},
                   {"pads", pads},
                   {"dilations", dil},
                   {"count_include_pad", cip}});
  if (r == 3) y = Reshape(y, {xs[0], xs[1], out_sp[1]});
  out[0] = y;
  return OkStatus();
}

Status Importer::GlobalPool(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  if (r < 3) return Invalid("global pooling needs rank >= 3");
  Shape axes, os = x->type().shape;
  for (int64_t i = 2; i < r; ++i) { axes.push_back(i); os[i] = 1; }
  out[0] = Emit("tensor.reduce", {x}, Type::Tensor(x->type().dtype, os),
                {{"kind", std::string(op_type_ == "GlobalMaxPool" ? "max" : "mean")},
                 {"axes", axes},
                 {"keepdims", true}});
  return OkStatus();
}

Status Importer::BatchNorm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(5);
  if (AttrInt("training_mode", 0) != 0 || AttrInt("is_test", 1) == 0)
    return Unimpl("BatchNormalization in training mode is not supported");
  if (AttrInt("spatial", 1) == 0)
    return Unimpl("attribute 'spatial' = 0 (per-element statistics, opsets 1-8) is not supported");
  for (size_t i = 1; i < out.size(); ++i)
    if (!n.output(i).empty()) return Unimpl("BatchNormalization training outputs are not supported");
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  if (xs.size() < 2) return Invalid("BatchNormalization input must have rank >= 2");
  if (!IsFloatDType(x->type().dtype)) return Unimpl("BatchNormalization on non-float input");
  int64_t c = xs[1];
  const DenseElements* p[4];
  const char* names[4] = {"scale", "B", "input_mean", "input_var"};
  bool all_const = true;
  for (int i = 0; i < 4; ++i) {
    p[i] = GetConst(in[i + 1]);
    all_const &= p[i] != nullptr;
    if (in[i + 1]->type().num_elements() != c || in[i + 1]->type().dtype != x->type().dtype)
      return Invalid(std::string("BatchNormalization '") + names[i] + "' must have " +
                     std::to_string(c) + " elements of the input's dtype");
  }
  double eps = AttrFloat("epsilon", 1e-5);
  Shape cs = {c};
  for (size_t i = 2; i < xs.size(); ++i) cs.push_back(1);
  if (!all_const) {
    // Parameters computed at run time: (x - mean) / sqrt(var + eps) * scale + B.
    Value* scale = Reshape(in[1], cs);
    Value* bias = Reshape(in[2], cs);
    Value* mean = Reshape(in[3], cs);
    Value* var = Reshape(in[4], cs);
    KILN_ASSIGN_OR_RETURN(Value* ve, Binary("tensor.add", var, ScalarConst(x->type().dtype, eps)));
    Value* sd = Emit("tensor.sqrt", {ve}, ve->type());
    KILN_ASSIGN_OR_RETURN(Value* d, Binary("tensor.sub", x, mean));
    KILN_ASSIGN_OR_RETURN(Value* y, Binary("tensor.div", d, sd));
    KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, scale));
    KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", y, bias));
    return OkStatus();
  }
  std::vector<double> mul(c), add(c);
  for (int64_t i = 0; i < c; ++i) {
    // Round like f32 arithmetic would.
    float scale = static_cast<float>(ReadElementAsDouble(*p[0], i));
    float bias = static_cast<float>(ReadElementAsDouble(*p[1], i));
    float mean = static_cast<float>(ReadElementAsDouble(*p[2], i));
    float var = static_cast<float>(ReadElementAsDouble(*p[3], i));
    double m = static_cast<double>(scale) / std::sqrt(static_cast<double>(var) + eps);
    mul[i] = m;
    add[i] = static_cast<double>(bias) - static_cast<double>(mean) * static_cast<float>(m);
  }
  Value* vm = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, cs), mul));
  Value* va = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, cs), add));
  KILN_ASSIGN_OR_RETURN(Value* y, Binary("tensor.mul", x, vm));
  KILN_ASSIGN_OR_RETURN(out[0], Binary("tensor.add", y, va));
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Reductions, softmax, matmul
// ---------------------------------------------------------------------------
Status Importer::Reduce(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  bool axes_input = (op_type_ == "ReduceSum" && opset_ >= 13) || opset_ >= 18;
  Shape axes;
  if (axes_input) {
    if (in.size() > 1 && in[1]) { KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes")); }
  } else {
    axes = AttrInts("axes");
  }
  bool keepdims = AttrInt("keepdims", 1) != 0;
  if (axes.empty()) {
    if (AttrInt("noop_with_empty_axes", 0) != 0) { out[0] = x; return OkStatus(); }
    for (int64_t i = 0; i < r; ++i) axes.push_back(i);
  }
  for (int64_t& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, r)); }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Shape os;
  for (int64_t i = 0; i < r; ++i) {
    bool red = std::binary_search(axes.begin(), axes.end(), i);
    if (!red) os.push_back(x->type().shape[i]);
    else if (keepdims) os.push_back(1);
  }
  if (axes.empty()) { out[0] = x; return OkStatus(); }  // rank-0 input
  std::string kind;
  if (op_type_ == "ReduceMean") kind = "mean";
  else if (op_type_ == "ReduceMax") kind = "max";
  else if (op_type_ == "ReduceMin") kind = "min";
  else if (op_type_ == "ReduceSum" || op_type_ == "ReduceL1" || op_type_ == "ReduceLogSum") kind = "sum";
  else if (op_type_ == "ReduceProd") kind = "prod";
  else if (op_type_ == "ReduceSumSquare") kind = "sum_square";
  else if (op_type_ == "ReduceL2") kind = "l2";
  else kind = "log_sum_exp";
  if (op_type_ == "ReduceL1") x = Emit("tensor.abs", {x}, x->type());
  Value* y = Emit("tensor.reduce", {x}, Type::Tensor(x->type().dtype, os),
                  {{"kind", kind}, {"axes", axes}, {"keepdims", keepdims}});
  if (op_type_ == "ReduceLogSum") y = Emit("tensor.log", {y}, y->type());
  out[0] = y;
  return OkStatus();
}

Status Importer::Softmax(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  int64_t r = x->type().rank();
  if (r == 0) return Invalid("Softmax of a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", opset_ < 13 ? 1 : -1), r));
  bool log = op_type_ == "LogSoftmax";
  if (opset_ >= 13 || axis == r - 1) {
    out[0] = Emit("tensor.softmax", {x}, x->type(), {{"axis", axis}, {"log", log}});
    return OkStatus();
  }
  // opset < 13: coerce to 2-D [prod(d<axis), prod(d>=axis)], softmax over dim 1.
  Shape s2 = {Product(xs, 0, axis), Product(xs, axis)};
  Value* x2 = Reshape(x, s2);
  Value* y2 = Emit("tensor.softmax", {x2}, x2->type(), {{"axis", int64_t{1}}, {"log", log}});
  out[0] = Reshape(y2, xs);
  return OkStatus();
}

Status Importer::MatMul(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* a = in[0];
  Value* b = in[1];
  if (a->type().dtype != b->type().dtype) return Invalid("MatMul operand dtypes differ");
  int64_t ra = a->type().rank(), rb = b->type().rank();
  if (ra == 0 || rb == 0) return Invalid("MatMul of a scalar");
  if (ra == 1) a = Reshape(a, {1, a->type().shape[0]});
  if (rb == 1) b = Reshape(b, {b->type().shape[0], 1});
  const Shape& as = a->type().shape;
  const Shape& bs = b->type().shape;
  int64_t m = as[as.size() - 2], k = as.back(), k2 = bs[bs.size() - 2], nn = bs.back();
  if (k != k2) return Invalid("MatMul inner dims differ: " + ShapeStr(in[0]->type().shape) + " x " +
                              ShapeStr(in[1]->type().shape));
  Shape batch;
  if (!BroadcastShapes(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2), &batch))
    return Invalid("MatMul batch dims do not broadcast");
  Shape os = batch;
  os.push_back(m);
  os.push_back(nn);
  Value* y = Emit("tensor.matmul", {a, b}, Type::Tensor(a->type().dtype, os));
  Shape fs = batch;
  if (ra != 1) fs.push_back(m);
  if (rb != 1) fs.push_back(nn);
  out[0] = Reshape(y, fs);
  return OkStatus();
}

Status Importer::Gemm(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* a = in[0];
  Value* b = in[1];
  Value* c = in.size() > 2 ? in[2] : nullptr;
  if (a->type().rank() != 2 || b->type().rank() != 2) return Invalid("Gemm operands must be 2-D");
  if (a->type().dtype != b->type().dtype) return Invalid("Gemm operand dtypes differ");
  DType dt = a->type().dtype;
  if (AttrInt("transA", 0)) a = Transpose(a, {1, 0});
  if (AttrInt("transB", 0)) b = Transpose(b, {1, 0});  // folds into a constant B
  double alpha = AttrFloat("alpha", 1.0), beta = AttrFloat("beta", 1.0);
  if (a->type().shape[1] != b->type().shape[0])
    return Invalid("Gemm inner dims differ: " + ShapeStr(a->type().shape) + " x " + ShapeStr(b->type().shape));
  bool alpha_on_b = alpha != 1.0 && GetConst(b);
  if (alpha_on_b) { KILN_ASSIGN_OR_RETURN(b, Binary("tensor.mul", b, ScalarConst(dt, alpha))); }
  Shape os = {a->type().shape[0], b->type().shape[1]};
  Value* y = Emit("tensor.matmul", {a, b}, Type::Tensor(dt, os));
  if (alpha != 1.0 && !alpha_on_b) { KILN_ASSIGN_OR_RETURN(y, Binary("tensor.mul", y, ScalarConst(dt, alpha))); }
  if (c && beta != 0.0) {
    if (beta != 1.0) { KILN_ASSIGN_OR_RETURN(c, Binary("tensor.mul", c, ScalarConst(dt, beta))); }
    KILN_ASSIGN_OR_RETURN(y, Binary("tensor.add", y, c));
    if (y->type().shape != os) return Invalid("Gemm C does not broadcast to " + ShapeStr(os));
  }
  out[0] = y;
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Shape manipulation
// ---------------------------------------------------------------------------
Status Importer::Flatten(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  int64_t axis = AttrInt("axis", 1);
  if (axis < -r || axis > r) return Invalid("Flatten axis out of range");
  if (axis < 0) axis += r;
  out[0] = Reshape(in[0], {Product(xs, 0, axis), Product(xs, axis)});
  return OkStatus();
}

Status Importer::ReshapeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Shape shape;
  if (opset_ < 5) {
    shape = AttrInts("shape");
  } else {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(shape, ConstInts(in[1], "shape"));
  }
  const Shape& xs = in[0]->type().shape;
  bool allowzero = AttrInt("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= xs.size()) return Invalid("Reshape copies dim " + std::to_string(i) + " beyond the input rank");
      shape[i] = xs[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return Invalid("Reshape shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0 || shape[i] > kMaxDim) {
      return Invalid("Reshape shape has a bad dim " + std::to_string(shape[i]));
    } else {
      if (shape[i] != 0 && known > (int64_t{1} << 40) / shape[i])
        return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
      known *= shape[i];
    }
  }
  int64_t total = Product(xs);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
    shape[infer] = total / known;
  } else if (known != total) {
    return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
  }
  out[0] = Reshape(in[0], shape);
  return OkStatus();
}

Status Importer::Unsqueeze(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Shape axes;
  if (opset_ >= 13) {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes"));
  } else {
    axes = AttrInts("axes");
  }
  const Shape& xs = in[0]->type().shape;
  int64_t orank = static_cast<int64_t>(xs.size() + axes.size());
  for (int64_t& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, orank)); }
  std::set<int64_t> as(axes.begin(), axes.end());
  if (as.size() != axes.size()) return Invalid("Unsqueeze axes repeat");
  Shape os;
  size_t j = 0;
  for (int64_t i = 0; i < orank; ++i) os.push_back(as.count(i) ? 1 : xs[j++]);
  out[0] = Reshape(in[0], os);
  return OkStatus();
}

Status Importer::Squeeze(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  Shape axes;
  bool have_axes = false;
  if (opset_ >= 13) {
    if (in.size() > 1 && in[1]) {
      KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes"));
      have_axes = true;
    }
  } else if (HasAttr("axes")) {
    axes = AttrInts("axes");
    have_axes = true;
  }
  std::set<int64_t> as;
  if (have_axes) {
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int64_t na, NormAxis(a, r));
      if (xs[na] != 1) return Invalid("Squeeze axis " + std::to_string(a) + " has size " + std::to_string(xs[na]));
      as.insert(na);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) if (xs[i] == 1) as.insert(i);
  }
  Shape os;
  for (int64_t i = 0; i < r; ++i) if (!as.count(i)) os.push_back(xs[i]);
  out[0] = Reshape(in[0], os);
  return OkStatus();
}

Status Importer::TransposeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                             std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  int64_t r = in[0]->type().rank();
  Shape perm = AttrInts("perm");
  if (perm.empty()) for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) return Invalid("Transpose perm has the wrong length");
  std::vector<bool> seen(r, false);
  bool identity = true;
  for (int64_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return Invalid("Transpose perm is not a permutation");
    seen[perm[i]] = true;
    identity &= perm[i] == i;
  }
  out[0] = identity ? in[0] : Transpose(in[0], perm);
  return OkStatus();
}

Status Importer::Concat(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  int64_t r = in[0]->type().rank();
  if (!HasAttr("axis")) return Invalid("Concat needs 'axis'");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  Shape os = in[0]->type().shape;
  os[axis] = 0;
  std::vector<Value*> ops;
  for (Value* v : in) {
    if (!v) continue;
    const Type& t = v->type();
    if (t.dtype != in[0]->type().dtype) return Invalid("Concat operand dtypes differ");
    if (t.rank() != r) return Invalid("Concat operand ranks differ");
    for (int64_t i = 0; i < r; ++i)
      if (i != axis && t.shape[i] != os[i])
        return Invalid("Concat operand shapes differ: " + ShapeStr(t.shape) + " vs " + ShapeStr(in[0]->type().shape));
    os[axis] += t.shape[axis];
    if (t.shape[axis] > 0) ops.push_back(v);  // empty pieces add nothing
  }
  if (ops.empty()) ops.push_back(in[0]);
  if (ops.size() == 1 && ops[0]->type().shape == os) { out[0] = ops[0]; return OkStatus(); }
  out[0] = Emit("tensor.concat", ops, Type::Tensor(in[0]->type().dtype, os), {{"axis", axis}});
  return OkStatus();
}

Status Importer::Split(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  int64_t dim = xs[axis];
  int64_t parts = static_cast<int64_t>(out.size());
  Shape sizes;
  if (opset_ >= 13 && in.size() > 1 && in[1]) {
    KILN_ASSIGN_OR_RETURN(sizes, ConstInts(in[1], "split"));
  } else if (opset_ < 13 && HasAttr("split")) {
    sizes = AttrInts("split");
  } else {
    if (opset_ >= 18 && HasAttr("num_outputs")) parts = AttrInt("num_outputs", parts);
    if (parts <= 0) return Invalid("Split into zero parts");
    int64_t chunk = CeilDiv(dim, parts);
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    if (opset_ < 18 && dim % parts != 0) return Invalid("Split: dim not divisible into equal parts");
  }
  if (static_cast<int64_t>(sizes.size()) != static_cast<int64_t>(out.size()))
    return Invalid("Split sizes do not match the number of outputs");
  for (int64_t sz : sizes)
    if (sz < 0 || sz > dim) return Invalid("bad Split size " + std::to_string(sz));
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape os = xs, starts(r, 0), strides(r, 1);
    os[axis] = sizes[i];
    starts[axis] = off;
    off += sizes[i];
    if (off > dim) return Invalid("Split sizes exceed the dim");
    out[i] = os == xs ? x : Emit("tensor.slice", {x}, Type::Tensor(x->type().dtype, os),
                                 {{"starts", starts}, {"strides", strides}});
  }
  if (off != dim) return Invalid("Split sizes do not sum to the dim");
  return OkStatus();
}

Status Importer::Slice(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  Shape starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = AttrInts("starts");
    ends = AttrInts("ends");
    axes = AttrInts("axes");
  } else {
    KILN_REQUIRE_INPUTS(3);
    KILN_ASSIGN_OR_RETURN(starts, ConstInts(in[1], "starts"));
    KILN_ASSIGN_OR_RETURN(ends, ConstInts(in[2], "ends"));
    if (in.size() > 3 && in[3]) { KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[3], "axes")); }
    if (in.size() > 4 && in[4]) { KILN_ASSIGN_OR_RETURN(steps, ConstInts(in[4], "steps")); }
  }
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return Invalid("Slice starts/ends/axes/steps lengths differ");
  Shape os = xs, ostarts(r, 0), ostrides(r, 1);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], r));
    if (seen[a]) return Invalid("Slice axes repeat");
    seen[a] = true;
    int64_t d = xs[a], s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) return Invalid("Slice step is 0");
    // Steps beyond the dim select one element either way; clamping keeps the
    // arithmetic below in range.
    st = std::clamp<int64_t>(st, -kMaxDim, kMaxDim);
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t size;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      size = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      size = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    os[a] = size;
    ostarts[a] = size > 0 ? s : 0;
    ostrides[a] = st;
  }
  bool identity = os == xs;
  for (int64_t i = 0; i < r; ++i) identity &= ostarts[i] == 0 && (ostrides[i] == 1 || os[i] <= 1);
  out[0] = identity ? x : Emit("tensor.slice", {x}, Type::Tensor(x->type().dtype, os),
                               {{"starts", ostarts}, {"strides", ostrides}});
  return OkStatus();
}

Status Importer::CastOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  DType to;
  if (op_type_ == "CastLike") {
    KILN_REQUIRE_INPUTS(2);
    to = in[1]->type().dtype;
  } else {
    int64_t t = AttrInt("to", 0);
    to = ConvertDType(static_cast<int32_t>(t));
    if (to == DType::kInvalid)
      return Unimpl("unsupported ONNX dtype " + OnnxDTypeName(static_cast<int32_t>(t)));
  }
  out[0] = Cast(in[0], to);
  return OkStatus();
}

Status Importer::ShapeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  int64_t start = AttrInt("start", 0), end = AttrInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Shape v;
  for (int64_t i = start; i < end; ++i) v.push_back(xs[i]);
  out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {int64_t(v.size())}), v));
  return OkStatus();
}

Status Importer::Size(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {}), {in[0]->type().num_elements()}));
  return OkStatus();
}

Status Importer::Gather(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* ind = in[1];
  int64_t r = x->type().rank();
  if (r == 0) return Invalid("Gather from a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  DType it = ind->type().dtype;
  if (it != DType::kI64 && it != DType::kI32) return Invalid("Gather indices must be int32/int64");
  int64_t dim = x->type().shape[axis];
  if (const DenseElements* c = GetConst(ind)) {  // normalize negative indices, check bounds
    std::vector<int64_t> v(c->type.num_elements());
    bool changed = false;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = ReadElementAsInt(*c, static_cast<int64_t>(i));
      if (v[i] < -dim || v[i] >= dim)
        return Invalid("Gather index " + std::to_string(v[i]) + " out of range for dim " + std::to_string(dim));
      if (v[i] < 0) { v[i] += dim; changed = true; }
    }
    if (changed) ind = Constant(MakeDenseFromInts(c->type, v));
  }
  Shape os(x->type().shape.begin(), x->type().shape.begin() + axis);
  for (int64_t d : ind->type().shape) os.push_back(d);
  for (int64_t i = axis + 1; i < r; ++i) os.push_back(x->type().shape[i]);
  out[0] = Emit("tensor.gather", {x, ind}, Type::Tensor(x->type().dtype, os), {{"axis", axis}});
  return OkStatus();
}

Status Importer::Pad(const onnx::NodeProto& n, const std::vector<Value*>& in,
                     std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  std::string mode = AttrStr("mode", "constant");
  Shape pads;
  double value = 0;
  Value* runtime_value = nullptr;  // constant_value known only at run time
  if (opset_ < 11) {
    pads = AttrInts(opset_ < 2 ? "paddings" : "pads");
    value = AttrFloat("value", 0.0);
  } else {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(pads, ConstInts(in[1], "pads"));
    if (in.size() > 2 && in[2]) {
      if (GetConst(in[2])) {
        KILN_ASSIGN_OR_RETURN(value, ConstScalarValue(in[2], "constant_value"));
      } else {
        if (in[2]->type().num_elements() != 1) return Invalid("input 'constant_value' must be a scalar");
        if (in[2]->type().dtype != x->type().dtype) return Invalid("input 'constant_value' must have the data's dtype");
        runtime_value = Reshape(in[2], {});
      }
    }
    if (in.size() > 3 && in[3]) {
      KILN_ASSIGN_OR_RETURN(Shape axes, ConstInts(in[3], "axes"));
      if (pads.size() != 2 * axes.size()) return Invalid("Pad pads must have 2 * len(axes) entries");
      Shape full(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], r));
        full[a] = pads[i];
        full[a + r] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r) return Invalid("Pad pads must have 2 * rank entries");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return Unimpl("Pad mode '" + mode + "' is not supported");
  Shape os = x->type().shape;
  bool zero = true;
  for (int64_t p : pads)
    if (p < -kMaxDim || p > kMaxDim) return Invalid("bad pad " + std::to_string(p));
  for (int64_t i = 0; i < r; ++i) {
    os[i] += pads[i] + pads[i + r];
    if (os[i] < 0) return Invalid("Pad removes more than the dim");
    zero &= pads[i] == 0 && pads[i + r] == 0;
  }
  if (zero) { out[0] = x; return OkStatus(); }
  out[0] = Emit("tensor.pad", {x}, Type::Tensor(x->type().dtype, os),
                {{"pads", pads}, {"mode", mode}, {"value", value}});
  if (runtime_value && mode == "constant") {
    // A runtime constant_value: select(inside, pad(x, 0), value), where
    // `inside` (the same pad of an all-true tensor) marks the elements taken
    // from x; it folds to a constant for outputs up to kMaxFoldElements.
    Value* all_true = Emit("tensor.expand", {BoolConst(true)}, Type::Tensor(DType::kBool, x->type().shape));
    Value* inside = Emit("tensor.pad", {all_true}, Type::Tensor(DType::kBool, os),
                         {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
    out[0] = Emit("tensor.select", {inside, out[0], runtime_value}, out[0]->type());
  }
  return OkStatus();
}

Status Importer::Expand(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  KILN_ASSIGN_OR_RETURN(Shape shape, ConstInts(in[1], "shape"));
  for (int64_t d : shape)
    if (d < 0 || d > kMaxDim) return Invalid("Expand shape has a bad dim " + std::to_string(d));
  Shape os;
  if (!BroadcastShapes(in[0]->type().shape, shape, &os))
    return Invalid("Expand: " + ShapeStr(in[0]->type().shape) + " does not broadcast to " + ShapeStr(shape));
  if (os == in[0]->type().shape) { out[0] = in[0]; return OkStatus(); }
  out[0] = Emit("tensor.expand", {in[0]}, Type::Tensor(in[0]->type().dtype, os));
  return OkStatus();
}

Status Importer::Tile(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  KILN_ASSIGN_OR_RETURN(Shape reps, ConstInts(in[1], "repeats"));
  if (reps.size() != xs.size()) return Invalid("Tile repeats must have rank entries");
  bool identity = true;
  for (int64_t rp : reps) {
    if (rp < 0 || rp > kMaxDim) return Invalid("bad Tile repeat " + std::to_string(rp));
    identity &= rp == 1;
  }
  if (identity) { out[0] = x; return OkStatus(); }
  // [d0, d1, ...] → [1, d0, 1, d1, ...] → expand [r0, d0, r1, d1, ...] → [r0*d0, r1*d1, ...]
  Shape s1, s2, s3;
  for (size_t i = 0; i < xs.size(); ++i) {
    s1.push_back(1); s1.push_back(xs[i]);
    s2.push_back(reps[i]); s2.push_back(xs[i]);
    s3.push_back(reps[i] * xs[i]);
  }
  Value* e = Emit("tensor.expand", {Reshape(x, s1)}, Type::Tensor(x->type().dtype, s2));
  out[0] = Reshape(e, s3);
  return OkStatus();
}

Status Importer::ConstantOfShape(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                 std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  KILN_ASSIGN_OR_RETURN(Shape shape, ConstInts(in[0], "input"));
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxDim) return Invalid("ConstantOfShape with a bad dim " + std::to_string(d));
    total *= d;
    if (total > kMaxCreatedElements) return Unimpl("ConstantOfShape result is too large");
  }
  DType dt = DType::kF32;
  std::vector<uint8_t> elem(4, 0);
  if (const onnx::AttributeProto* a = FindAttr("value")) {
    KILN_ASSIGN_OR_RETURN(DenseElements v, TensorToDense(a->t(), "node '" + loc_ + "' (ConstantOfShape)"));
    if (v.type.num_elements() != 1) return Invalid("ConstantOfShape value must have one element");
    dt = v.type.dtype;
    elem.assign(v.bytes(), v.bytes() + DTypeSize(dt));
  }
  int64_t count = Product(shape);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * elem.size());
  for (int64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * elem.size(), elem.data(), elem.size());
  DenseElements d;
  d.type = Type::Tensor(dt, shape);
  d.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  out[0] = Constant(std::move(d));
  return OkStatus();
}

Status Importer::Range(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  DType dt = in[0]->type().dtype;
  const DenseElements* c[3];
  for (int i = 0; i < 3; ++i) {
    c[i] = GetConst(in[i]);
    if (!c[i]) return Unimpl("Range inputs must be constants (computable at import)");
    if (c[i]->type.num_elements() != 1) return Invalid("Range inputs must be scalars");
  }
  if (IsFloatDType(dt)) {
    double s = ReadElementAsDouble(*c[0], 0), l = ReadElementAsDouble(*c[1], 0), d = ReadElementAsDouble(*c[2], 0);
    if (d == 0) return Invalid("Range delta is 0");
    double fc = std::ceil((l - s) / d);
    if (!(fc <= static_cast<double>(kMaxCreatedElements))) return Unimpl("Range result is too large");
    int64_t cnt = std::max<int64_t>(0, static_cast<int64_t>(fc));
    std::vector<double> v(cnt);
    for (int64_t i = 0; i < cnt; ++i) v[i] = s + static_cast<double>(i) * d;
    out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {cnt}), v));
  } else {
    int64_t s = ReadElementAsInt(*c[0], 0), l = ReadElementAsInt(*c[1], 0), d = ReadElementAsInt(*c[2], 0);
    if (d == 0) return Invalid("Range delta is 0");
    double span = (static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d);
    if (span > static_cast<double>(kMaxCreatedElements)) return Unimpl("Range result is too large");
    int64_t cnt = d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : (s > l ? (s - l + (-d) - 1) / (-d) : 0);
    std::vector<int64_t> v(cnt);
    for (int64_t i = 0; i < cnt; ++i) v[i] = s + i * d;
    out[0] = Constant(MakeDenseFromInts(Type::Tensor(dt, {cnt}), v));
  }
  return OkStatus();
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
