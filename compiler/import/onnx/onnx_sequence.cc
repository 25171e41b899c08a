// ONNX sequences and optionals → compile-time structures (no IR of their own).
//
// A sequence value is a list of tensor SSA values, each with its own static
// type (elements of one sequence may differ in shape, e.g. the growing slices
// of test_loop13_seq). An optional is present or absent, and when present
// holds a tensor or a sequence. The ops below only rearrange these lists, so
// every position, index and presence they read must be known at import:
//   SequenceConstruct(x0, x1, ...)      → [x0, x1, ...]         (same dtype)
//   SequenceEmpty {dtype}               → []
//   SequenceInsert(s, t [, pos])        → t inserted at pos (default: the back)
//   SequenceErase(s [, pos])            → s without element pos (default: the last)
//   SequenceAt(s, pos)                  → the element (a tensor)
//   SequenceLength(s)                   → tensor<i64> constant
//   Optional([x]) {type}                → present(x) / absent
//   OptionalHasElement([x])             → tensor<i1> constant (a non-optional x: true)
//   OptionalGetElement(x)               → the value (a non-optional x: x itself)
//   Identity(s)                         → s
//   SequenceMap(s, extra...) {body}     → the body inlined once per element
// pos: a constant integer scalar, negative counts from the back; out of range
// is kInvalidArgument naming the node. A Loop that carries a sequence or an
// optional is unrolled at import (LoopUnrollAny): its trip count and
// condition must be known there (e.g. --constant-input=trip_count=5);
// otherwise kUnimplemented naming the node. If: onnx_control_flow.cc IfAny.
//
// Example (test_loop13_seq with trip_count = 2, cond = true, seq_empty = []):
//   trip 0: SequenceInsert([], Slice(x, [0], [1]))  → [%s0 : tensor<1xf32>]
//   trip 1: SequenceInsert([%s0], Slice(x, [0], [2])) → [%s0, %s1 : tensor<2xf32>]
//   graph output seq_res → results seq_res.0, seq_res.1 (both folded constants).
#include <algorithm>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

std::string OnnxValue::Describe() const {
  auto list = [this]() {
    std::string s = "sequence of " + std::to_string(elems.size()) + " [";
    for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + elems[i]->type().ToString();
    return s + "]";
  };
  switch (kind) {
    case Kind::kTensor: return elems.empty() || !elems[0] ? "absent tensor" : elems[0]->type().ToString();
    case Kind::kSequence: return list();
    case Kind::kOptional:
      if (!present) return "optional(none)";
      return "optional(" + (holds_sequence ? list() : elems[0]->type().ToString()) + ")";
  }
  return "?";
}

const std::map<std::string, Importer::AnyHandler>& Importer::AnyHandlers() {
  static const std::map<std::string, AnyHandler> kHandlers = {
      {"SequenceConstruct", &Importer::SequenceConstruct},
      {"SequenceEmpty", &Importer::SequenceEmpty},
      {"SequenceInsert", &Importer::SequenceInsert},
      {"SequenceErase", &Importer::SequenceErase},
      {"SequenceAt", &Importer::SequenceAt},
      {"SequenceLength", &Importer::SequenceLength},
      {"Optional", &Importer::OptionalOp},
      {"OptionalHasElement", &Importer::OptionalHasElement},
      {"OptionalGetElement", &Importer::OptionalGetElement},
      {"SequenceMap", &Importer::SequenceMap},
      {"Identity", &Importer::IdentityAny},
      {"If", &Importer::IfAny},
      {"Loop", &Importer::LoopAny},
  };
  return kHandlers;
}

StatusOr<const OnnxValue*> Importer::SequenceOperand(const std::vector<OnnxValue>& in, size_t i,
                                                     const char* what) const {
  if (in.size() <= i || (in[i].is_tensor() && !in[i].tensor()))
    return Invalid("missing required input " + std::to_string(i) + " (" + what + ")");
  if (!in[i].is_sequence_like())
    return Invalid(std::string("input ") + std::to_string(i) + " (" + what + ") must be a sequence, it is a " +
                   in[i].Describe());
  return &in[i];
}

namespace {

// A constant integer position in [-len, len + extra) (extra = 1 for an
// insertion point), normalised to [0, len + extra). -1 when out of range.
int64_t NormPosition(int64_t pos, int64_t len, int64_t extra) {
  if (pos < -len || pos >= len + extra) return -1;
  return pos < 0 ? pos + len : pos;
}

OnnxValue MakeSequence(std::vector<Value*> elems, DType dt) {
  OnnxValue s;
  s.kind = OnnxValue::Kind::kSequence;
  s.elems = std::move(elems);
  s.elem_dtype = dt;
  return s;
}

// A sequence value (the content of an optional sequence, or the sequence).
OnnxValue AsSequence(const OnnxValue& v) { return MakeSequence(v.elems, v.elem_dtype); }

}  // namespace

Status Importer::SequenceConstruct(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                                   std::vector<OnnxValue>& out) {
  if (in.empty()) return Invalid("SequenceConstruct needs at least one input");
  std::vector<Value*> elems;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i].is_tensor() || !in[i].tensor())
      return Invalid("input " + std::to_string(i) + " must be a tensor, it is a " + in[i].Describe());
    if (in[i].tensor()->type().dtype != in[0].tensor()->type().dtype)
      return Invalid("SequenceConstruct inputs differ in dtype (" +
                     std::string(DTypeName(in[0].tensor()->type().dtype)) + " vs " +
                     DTypeName(in[i].tensor()->type().dtype) + ")");
    elems.push_back(in[i].tensor());
  }
  out[0] = MakeSequence(std::move(elems), in[0].tensor()->type().dtype);
  return OkStatus();
}

Status Importer::SequenceEmpty(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                               std::vector<OnnxValue>& out) {
  DType dt = ConvertDType(static_cast<int32_t>(AttrInt("dtype", onnx::TensorProto::FLOAT)));
  if (dt == DType::kInvalid)
    return Unimpl("unsupported SequenceEmpty dtype " +
                  OnnxDTypeName(static_cast<int32_t>(AttrInt("dtype", 1))));
  out[0] = MakeSequence({}, dt);
  return OkStatus();
}

Status Importer::SequenceInsert(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                                std::vector<OnnxValue>& out) {
  KILN_ASSIGN_OR_RETURN(const OnnxValue* seq, SequenceOperand(in, 0, "input_sequence"));
  if (in.size() < 2 || !in[1].is_tensor() || !in[1].tensor())
    return Invalid("input 1 (tensor) must be a tensor");
  Value* t = in[1].tensor();
  DType dt = seq->elem_dtype;
  if (!seq->elems.empty()) dt = seq->elems[0]->type().dtype;
  if (dt != DType::kInvalid && t->type().dtype != dt)
    return Invalid("SequenceInsert of a " + std::string(DTypeName(t->type().dtype)) +
                   " tensor into a sequence of " + DTypeName(dt));
  OnnxValue r = AsSequence(*seq);
  r.elem_dtype = t->type().dtype;
  int64_t len = static_cast<int64_t>(r.elems.size());
  int64_t pos = len;
  if (in.size() > 2 && in[2].tensor()) {
    if (!in[2].is_tensor()) return Invalid("input 2 (position) must be a tensor");
    KILN_ASSIGN_OR_RETURN(double p, ConstScalarValue(in[2].tensor(), "position"));
    pos = NormPosition(static_cast<int64_t>(p), len, 1);
    if (pos < 0)
      return Invalid("SequenceInsert position " + std::to_string(static_cast<int64_t>(p)) +
                     " is out of range for a sequence of " + std::to_string(len));
  }
  r.elems.insert(r.elems.begin() + pos, t);
  out[0] = std::move(r);
  return OkStatus();
}

Status Importer::SequenceErase(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                               std::vector<OnnxValue>& out) {
  KILN_ASSIGN_OR_RETURN(const OnnxValue* seq, SequenceOperand(in, 0, "input_sequence"));
  OnnxValue r = AsSequence(*seq);
  int64_t len = static_cast<int64_t>(r.elems.size());
  int64_t pos = len - 1;
  if (in.size() > 1 && in[1].tensor()) {
    if (!in[1].is_tensor()) return Invalid("input 1 (position) must be a tensor");
    KILN_ASSIGN_OR_RETURN(double p, ConstScalarValue(in[1].tensor(), "position"));
    pos = NormPosition(static_cast<int64_t>(p), len, 0);
  }
  if (pos < 0) return Invalid("SequenceErase position is out of range for a sequence of " + std::to_string(len));
  r.elems.erase(r.elems.begin() + pos);
  out[0] = std::move(r);
  return OkStatus();
}

Status Importer::SequenceAt(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                            std::vector<OnnxValue>& out) {
  KILN_ASSIGN_OR_RETURN(const OnnxValue* seq, SequenceOperand(in, 0, "input_sequence"));
  if (in.size() < 2 || !in[1].is_tensor() || !in[1].tensor())
    return Invalid("missing required input 1 (position)");
  KILN_ASSIGN_OR_RETURN(double p, ConstScalarValue(in[1].tensor(), "position"));
  int64_t len = static_cast<int64_t>(seq->elems.size());
  int64_t pos = NormPosition(static_cast<int64_t>(p), len, 0);
  if (pos < 0)
    return Invalid("SequenceAt position " + std::to_string(static_cast<int64_t>(p)) +
                   " is out of range for a sequence of " + std::to_string(len));
  out[0] = OnnxValue::Tensor(seq->elems[pos]);
  return OkStatus();
}

Status Importer::SequenceLength(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                                std::vector<OnnxValue>& out) {
  KILN_ASSIGN_OR_RETURN(const OnnxValue* seq, SequenceOperand(in, 0, "input_sequence"));
  out[0] = OnnxValue::Tensor(I64Const(static_cast<int64_t>(seq->elems.size())));
  return OkStatus();
}

Status Importer::OptionalOp(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                            std::vector<OnnxValue>& out) {
  OnnxValue r;
  r.kind = OnnxValue::Kind::kOptional;
  bool has_input = !in.empty() && !(in[0].is_tensor() && !in[0].tensor());
  if (has_input) {
    const OnnxValue& x = in[0];
    if (x.kind == OnnxValue::Kind::kOptional) return Unimpl("an optional of an optional is not supported");
    r.present = true;
    r.holds_sequence = x.kind == OnnxValue::Kind::kSequence;
    r.elems = x.elems;
    r.elem_dtype = x.is_tensor() ? x.tensor()->type().dtype : x.elem_dtype;
  } else {
    const onnx::AttributeProto* a = FindAttr("type");
    if (!a || !a->has_tp()) return Invalid("Optional without an input needs the 'type' attribute");
    const onnx::TypeProto& tp = a->tp();
    r.present = false;
    r.holds_sequence = tp.has_sequence_type();
    const onnx::TypeProto& et = r.holds_sequence ? tp.sequence_type().elem_type() : tp;
    if (!et.has_tensor_type()) return Unimpl("only optionals of tensors or of sequences of tensors are supported");
    r.elem_dtype = ConvertDType(et.tensor_type().elem_type());
  }
  out[0] = std::move(r);
  return OkStatus();
}

Status Importer::OptionalHasElement(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                                    std::vector<OnnxValue>& out) {
  bool has = false;
  if (!in.empty() && !(in[0].is_tensor() && !in[0].tensor()))
    has = in[0].kind != OnnxValue::Kind::kOptional || in[0].present;
  out[0] = OnnxValue::Tensor(BoolConst(has));
  return OkStatus();
}

Status Importer::OptionalGetElement(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                                    std::vector<OnnxValue>& out) {
  if (in.empty() || (in[0].is_tensor() && !in[0].tensor())) return Invalid("missing required input 0");
  const OnnxValue& x = in[0];
  if (x.kind != OnnxValue::Kind::kOptional) {
    out[0] = x;  // opset 18: a non-optional input is returned as is
    return OkStatus();
  }
  if (!x.present) return Invalid("OptionalGetElement of an empty optional ('" + n.input(0) + "')");
  out[0] = x.holds_sequence ? AsSequence(x) : OnnxValue::Tensor(x.elems[0]);
  return OkStatus();
}

Status Importer::IdentityAny(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                             std::vector<OnnxValue>& out) {
  if (in.empty() || (in[0].is_tensor() && !in[0].tensor())) return Invalid("missing required input 0");
  out[0] = in[0];
  return OkStatus();
}

// SequenceMap(s, extra...): the body is imported once per element i of s
// (inlined at import, like an unrolled loop) with inputs s[i] and, for each
// extra input, its element i (a sequence, of the same length) or the tensor
// itself; output k is the sequence of the body's output k.
Status Importer::SequenceMap(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                             std::vector<OnnxValue>& out) {
  KILN_ASSIGN_OR_RETURN(const OnnxValue* seq, SequenceOperand(in, 0, "input_sequence"));
  const onnx::GraphProto* body = GraphAttr("body");
  if (!body) return Invalid("SequenceMap needs a 'body' graph");
  if (body->input_size() != static_cast<int>(in.size()))
    return Invalid("SequenceMap body has " + std::to_string(body->input_size()) + " inputs, expected " +
                   std::to_string(in.size()));
  if (body->output_size() < n.output_size()) return Invalid("SequenceMap body has too few outputs");
  size_t len = seq->elems.size();
  for (size_t j = 1; j < in.size(); ++j) {
    if (in[j].is_tensor() && !in[j].tensor()) return Invalid("SequenceMap input " + std::to_string(j) + " is missing");
    if (in[j].kind == OnnxValue::Kind::kOptional) return Invalid("SequenceMap inputs must be sequences or tensors");
    if (in[j].is_sequence_like() && in[j].elems.size() != len)
      return Invalid("SequenceMap input " + std::to_string(j) + " has " + std::to_string(in[j].elems.size()) +
                     " elements, input 0 has " + std::to_string(len));
  }
  if (static_cast<int64_t>(len) > kMaxUnrollTrips)
    return Unimpl("SequenceMap over more than " + std::to_string(kMaxUnrollTrips) + " elements");
  std::vector<std::vector<Value*>> results(body->output_size());
  for (size_t i = 0; i < len; ++i) {
    std::vector<OnnxValue> bind = {OnnxValue::Tensor(seq->elems[i])};
    for (size_t j = 1; j < in.size(); ++j)
      bind.push_back(in[j].is_sequence_like() ? OnnxValue::Tensor(in[j].elems[i]) : in[j]);
    std::vector<OnnxValue> outs;
    KILN_RETURN_IF_ERROR(ImportSubgraphAny(*body, block_, bind, &outs, loc_ + "/elem" + std::to_string(i) + "/"));
    for (size_t k = 0; k < outs.size(); ++k) {
      if (!outs[k].is_tensor())
        return Unimpl("SequenceMap body output " + std::to_string(k) + " is a " + outs[k].Describe() +
                      "; only tensors are supported");
      results[k].push_back(outs[k].tensor());
    }
  }
  for (int k = 0; k < n.output_size(); ++k) {
    DType dt = DType::kInvalid;
    if (!results[k].empty()) {
      dt = results[k][0]->type().dtype;
    } else if (body->output(k).type().has_tensor_type()) {
      dt = ConvertDType(body->output(k).type().tensor_type().elem_type());
    }
    out[k] = MakeSequence(results[k], dt);
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Loop carrying sequences / optionals
// ---------------------------------------------------------------------------
namespace {
bool IsCompositeType(const onnx::TypeProto& t) { return t.has_sequence_type() || t.has_optional_type(); }
}  // namespace

Status Importer::LoopAny(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                         std::vector<OnnxValue>& out) {
  const onnx::GraphProto* body = GraphAttr("body");
  bool composite = false;
  for (size_t i = 0; i < in.size(); ++i) composite |= !in[i].is_tensor();
  if (body)
    for (const auto& o : body->output()) composite |= o.has_type() && IsCompositeType(o.type());
  if (!composite) {
    // Tensors only: the strategies of onnx_control_flow.cc (Loop).
    std::vector<Value*> tin;
    for (const OnnxValue& v : in) tin.push_back(v.tensor());
    std::vector<Value*> tout(out.size(), nullptr);
    KILN_RETURN_IF_ERROR(Loop(n, tin, tout));
    for (size_t i = 0; i < out.size(); ++i) out[i] = OnnxValue::Tensor(tout[i]);
    return OkStatus();
  }
  if (!body) return Invalid("Loop needs a 'body' graph");
  for (size_t i = 0; i < in.size() && i < 2; ++i)
    if (!in[i].is_tensor()) return Invalid("Loop input " + std::to_string(i) + " must be a tensor");
  Value* m = in.size() > 0 ? in[0].tensor() : nullptr;
  Value* cond = in.size() > 1 ? in[1].tensor() : nullptr;
  std::vector<OnnxValue> inits;
  for (size_t i = 2; i < in.size(); ++i) {
    if (in[i].is_tensor() && !in[i].tensor())
      return Invalid("Loop-carried input " + std::to_string(i) + " is missing");
    inits.push_back(in[i]);
  }
  int64_t num_carried = static_cast<int64_t>(inits.size());
  if (body->input_size() != 2 + num_carried)
    return Invalid("Loop body has " + std::to_string(body->input_size()) + " inputs, expected " +
                   std::to_string(2 + num_carried));
  if (body->output_size() < 1 + num_carried) return Invalid("Loop body has too few outputs");
  int64_t num_scan = body->output_size() - 1 - num_carried;
  if (n.output_size() > num_carried + num_scan) return Invalid("Loop has too many outputs");
  if (cond && (cond->type().num_elements() != 1 || cond->type().dtype != DType::kBool))
    return Invalid("Loop condition must be a bool scalar");
  const DenseElements* mc = m ? GetConst(m) : nullptr;
  if ((m && !mc) || (cond && !GetConst(cond)) || !m)
    return Unimpl("a Loop that carries a sequence or optional is unrolled at import: its trip "
                  "count M (given: " + std::string(!m ? "absent" : mc ? "constant" : "runtime") +
                  ") and its condition (" + (!cond ? "absent" : GetConst(cond) ? "constant" : "runtime") +
                  ") must be known at import; fix them with --constant-input=NAME=V");
  if (mc->type.num_elements() != 1 || IsFloatDType(mc->type.dtype))
    return Invalid("Loop trip count M must be an integer scalar");
  int64_t trips = std::max<int64_t>(0, ReadElementAsInt(*mc, 0));
  if (trips > kMaxUnrollTrips)
    return Unimpl("a Loop that carries a sequence or optional is unrolled at import; its trip count " +
                  std::to_string(trips) + " exceeds " + std::to_string(kMaxUnrollTrips));
  return LoopUnrollAny(*body, trips, cond, inits, num_scan, out);
}

Status Importer::LoopUnrollAny(const onnx::GraphProto& body, int64_t trips, Value* cond,
                               const std::vector<OnnxValue>& inits, int64_t num_scan,
                               std::vector<OnnxValue>& out) {
  size_t num_carried = inits.size();
  Value* c = cond ? cond : BoolConst(true);
  std::vector<OnnxValue> carried = inits;
  std::vector<std::vector<Value*>> scans(num_scan);
  for (int64_t i = 0; i < trips; ++i) {
    const DenseElements* cc = GetConst(c);
    if (!cc)
      return Unimpl("Loop condition before trip " + std::to_string(i) +
                    " is not known at import; a Loop carrying a sequence or optional cannot be unrolled");
    if (ReadElementAsInt(*cc, 0) == 0) break;
    std::vector<OnnxValue> bind = {OnnxValue::Tensor(I64Const(i)), OnnxValue::Tensor(c)};
    bind.insert(bind.end(), carried.begin(), carried.end());
    std::vector<OnnxValue> outs;
    KILN_RETURN_IF_ERROR(
        ImportSubgraphAny(body, block_, bind, &outs, loc_ + "/trip" + std::to_string(i) + "/"));
    if (!outs[0].is_tensor() || outs[0].tensor()->type().dtype != DType::kBool ||
        outs[0].tensor()->type().num_elements() != 1)
      return Invalid("Loop body condition output must be a bool scalar");
    c = outs[0].tensor();
    for (size_t j = 0; j < num_carried; ++j) carried[j] = outs[1 + j];
    for (int64_t k = 0; k < num_scan; ++k) {
      const OnnxValue& y = outs[1 + num_carried + k];
      if (!y.is_tensor()) return Invalid("Loop scan output " + std::to_string(k) + " must be a tensor");
      scans[k].push_back(y.tensor());
    }
  }
  for (size_t j = 0; j < out.size() && j < num_carried; ++j) out[j] = carried[j];
  for (int64_t k = 0; k < num_scan; ++k) {
    if (num_carried + k >= out.size()) break;
    if (scans[k].empty()) return Unimpl("Loop with zero trips and scan outputs is not supported");
    KILN_ASSIGN_OR_RETURN(Value* v, Stack(scans[k], 0, "Loop scan output " + std::to_string(k)));
    out[num_carried + k] = OnnxValue::Tensor(v);
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
