// ONNX control flow (If, Loop, Scan) → structured control flow of
// compiler/ir/ops.h. The lowering rules are listed in onnx_importer.h
// ("Control flow"); this file holds subgraph scoping, host scalars and the
// three handlers.
//
// Example (If on a data-dependent condition, hey_jarvis_v0.1.onnx):
//   %c = "tensor.extract"(%cond) : (tensor<1x1xi1>) -> i1
//   %r = "scf.if"(%c) ({
//     ... the then_branch ops, reading %x and outer weights directly ...
//     "scf.yield"(%p2) : (tensor<1x1xf32>) -> ()
//   }, {
//     "scf.yield"(%p1) : (tensor<1x1xf32>) -> ()
//   }) : (i1) -> tensor<1x1xf32>
// Example (Loop with trip count 5 and a carried y):
//   %lb = "arith.constant"() {value = 0 : i64} : () -> index   (%ub = 5, %step = 1)
//   %r:2 = "scf.for"(%lb, %ub, %step, %i0, %y0) ({
//   ^bb0(%iv: index, %i: tensor<i64>, %y: tensor<1xf32>):
//     ... body ...
//     %i1 = "tensor.add"(%i, %one) : ...
//     "scf.yield"(%i1, %y1) : (tensor<i64>, tensor<1xf32>) -> ()
//   }) : (index, index, index, tensor<i64>, tensor<1xf32>) -> (tensor<i64>, tensor<1xf32>)
#include <algorithm>
#include <set>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {
namespace {

// Names read by the nodes of `g` (and of nested subgraphs) that `g` does not
// define itself (inputs, initializers, node outputs): the captured names.
void FreeNames(const onnx::GraphProto& g, std::set<std::string>* free) {
  std::set<std::string> defined;
  for (const auto& i : g.input()) defined.insert(i.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) free->insert(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& i : n.input()) read(i);
    for (const auto& a : n.attribute()) {
      std::set<std::string> inner;
      if (a.has_g()) FreeNames(a.g(), &inner);
      for (const auto& sg : a.graphs()) FreeNames(sg, &inner);
      for (const auto& name : inner) read(name);
    }
    for (const auto& o : n.output()) defined.insert(o);
  }
  for (const auto& o : g.output()) read(o.name());
}

// True when `name` is read anywhere in `g` (nested subgraphs included; an
// over-approximation when a nested graph shadows it).
bool GraphReads(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& o : g.output())
    if (o.name() == name) return true;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (i == name) return true;
    for (const auto& a : n.attribute()) {
      if (a.has_g() && GraphReads(a.g(), name)) return true;
      for (const auto& sg : a.graphs())
        if (GraphReads(sg, name)) return true;
    }
  }
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------
// Subgraphs and host scalars
// ---------------------------------------------------------------------------
const onnx::GraphProto* Importer::GraphAttr(const char* name) const {
  const onnx::AttributeProto* a = FindAttr(name);
  return a && a->has_g() ? &a->g() : nullptr;
}

Status Importer::ImportSubgraph(const onnx::GraphProto& g, ir::Block* block,
                                const std::vector<Value*>& inputs, std::vector<Value*>* outputs,
                                const std::string& prefix) {
  std::vector<OnnxValue> any_in, any_out;
  for (Value* v : inputs) any_in.push_back(OnnxValue::Tensor(v));
  KILN_RETURN_IF_ERROR(ImportSubgraphAny(g, block, any_in, &any_out, prefix));
  outputs->clear();
  for (size_t i = 0; i < any_out.size(); ++i) {
    if (!any_out[i].is_tensor())
      return Unimpl("subgraph '" + g.name() + "' output '" + g.output(static_cast<int>(i)).name() +
                    "' is a " + any_out[i].Describe() +
                    "; sequence/optional values leave a subgraph only when it is inlined or "
                    "unrolled at import (If condition, Loop trip count and condition known at "
                    "import, e.g. with --constant-input)");
    outputs->push_back(any_out[i].tensor());
  }
  return OkStatus();
}

Status Importer::ImportSubgraphAny(const onnx::GraphProto& g, ir::Block* block,
                                   const std::vector<OnnxValue>& inputs,
                                   std::vector<OnnxValue>* outputs, const std::string& prefix) {
  if (g.input_size() != static_cast<int>(inputs.size()))
    return Invalid("subgraph '" + g.name() + "' has " + std::to_string(g.input_size()) +
                   " inputs, expected " + std::to_string(inputs.size()));
  if (g.sparse_initializer_size() > 0) return Unimpl("sparse initializers are not supported");
  if (depth_ >= kMaxSubgraphDepth) return Unimpl("subgraphs nest too deeply");
  // Everything the scope changes, restored below on every path.
  ir::Block* saved_block = block_;
  std::map<std::string, Value*> saved_values = values_;
  std::map<std::string, OnnxValue> saved_composites = composites_;
  std::map<std::string, const onnx::TensorProto*> saved_inits = initializers_;
  std::map<std::pair<Value*, Shape>, Value*> saved_reshapes = reshapes_;
  const onnx::NodeProto* saved_node = node_;
  std::string saved_loc = loc_, saved_op = op_type_, saved_prefix = loc_prefix_;
  ++depth_;
  block_ = block;
  loc_prefix_ = prefix;
  for (const auto& t : g.initializer()) {
    initializers_[t.name()] = &t;
    values_.erase(t.name());
    composites_.erase(t.name());
  }
  for (int i = 0; i < g.input_size(); ++i) Define(g.input(i).name(), inputs[i]);
  Status st = OkStatus();
  for (int i = 0; i < g.node_size() && st.ok(); ++i) st = ImportNode(g.node(i), i);
  if (st.ok()) {
    node_ = saved_node;
    loc_ = saved_loc;
    op_type_ = saved_op;
    outputs->clear();
    for (const auto& o : g.output()) {
      auto v = LookupAny(o.name());
      if (!v.ok()) {
        st = Invalid("subgraph output '" + o.name() + "' is not produced by any node");
        break;
      }
      outputs->push_back(v.value());
    }
  }
  --depth_;
  block_ = saved_block;
  values_ = std::move(saved_values);
  composites_ = std::move(saved_composites);
  initializers_ = std::move(saved_inits);
  reshapes_ = std::move(saved_reshapes);
  node_ = saved_node;
  loc_ = saved_loc;
  op_type_ = saved_op;
  loc_prefix_ = saved_prefix;
  return st;
}

bool Importer::CapturesAreConstant(const onnx::GraphProto& g) {
  std::set<std::string> free;
  FreeNames(g, &free);
  for (const std::string& name : free) {
    auto it = values_.find(name);
    if (it != values_.end()) {
      if (!GetConst(it->second)) return false;
    } else if (!initializers_.count(name)) {
      return false;  // undefined: the import reports it
    }
  }
  return true;
}

Value* Importer::IndexConst(int64_t v) {
  auto op = ir::Operation::Create("arith.constant", {}, {Type::Index()}, {{"value", v}});
  op->set_loc(loc_);
  return block_->Append(std::move(op))->result(0);
}

Value* Importer::Extract(Value* t) {
  bool is_bool = t->type().dtype == DType::kBool;
  Type rt = is_bool ? Type::I1() : Type::Index();
  ir::Operation* op;
  if (const DenseElements* c = GetConst(t)) {
    int64_t v = 0;
    EvaluateExtract(*c, &v);
    auto o = ir::Operation::Create("arith.constant", {}, {rt}, {{"value", v}});
    op = o.get();
    block_->Append(std::move(o));
  } else {
    auto o = ir::Operation::Create("tensor.extract", {t}, {rt});
    op = o.get();
    block_->Append(std::move(o));
  }
  op->set_loc(loc_);
  return op->result(0);
}

Value* Importer::BoolConst(bool v) {
  return Constant(MakeDenseFromInts(Type::Tensor(DType::kBool, {}), {v ? 1 : 0}));
}

Value* Importer::I64Const(int64_t v) {
  return Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {}), {v}));
}

Value* Importer::SliceAxis(Value* v, int64_t axis, int64_t start, int64_t size) {
  const Shape& s = v->type().shape;
  if (start == 0 && size == s[axis]) return v;
  Shape os = s, starts(s.size(), 0), strides(s.size(), 1);
  os[axis] = size;
  starts[axis] = start;
  return Emit("tensor.slice", {v}, Type::Tensor(v->type().dtype, os),
              {{"starts", starts}, {"strides", strides}});
}

StatusOr<Value*> Importer::InsertStep(Value* acc, Value* y, Value* index, int64_t axis,
                                      int64_t length) {
  Shape ys = y->type().shape;
  Shape ms(ys.size() + 1, 1);
  ms[axis] = length;
  std::vector<int64_t> iota(length);
  for (int64_t i = 0; i < length; ++i) iota[i] = i;
  Value* positions = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, ms), iota));
  KILN_ASSIGN_OR_RETURN(Value* mask, Binary("tensor.equal", positions, Cast(index, DType::kI64)));
  ys.insert(ys.begin() + axis, 1);
  Value* step = Reshape(y, ys);
  return Emit("tensor.select", {mask, step, acc}, acc->type());
}

StatusOr<Value*> Importer::Stack(const std::vector<Value*>& steps, int64_t axis,
                                 const std::string& what) {
  if (steps.empty()) return Unimpl(what + ": no steps to stack");
  Shape s = steps[0]->type().shape;
  s.insert(s.begin() + axis, 1);
  std::vector<Value*> pieces;
  for (Value* v : steps) {
    if (v->type() != steps[0]->type())
      return Unimpl(what + " changes type across steps (" + steps[0]->type().ToString() + " vs " +
                    v->type().ToString() + ")");
    pieces.push_back(Reshape(v, s));
  }
  if (pieces.size() == 1) return pieces[0];
  Shape os = s;
  os[axis] = static_cast<int64_t>(pieces.size());
  return Emit("tensor.concat", pieces, Type::Tensor(steps[0]->type().dtype, os), {{"axis", axis}});
}

std::vector<Value*> Importer::AppendRegionOp(std::unique_ptr<ir::Operation> op) {
  op->set_loc(loc_);
  std::vector<DenseElements> folded;
  bool all_const = true;
  for (Value* v : op->operands()) {
    ir::Operation* d = v->defining_op();
    all_const &= d && (d->is("tensor.constant") || d->is("arith.constant"));
  }
  if (all_const && EvaluateRegionOp(op.get(), &folded, kMaxFoldTrips)) {
    std::vector<Value*> r;
    for (DenseElements& d : folded) r.push_back(Constant(std::move(d)));
    return r;  // `op` (detached) is destroyed here
  }
  return block_->Append(std::move(op))->results();
}

// ---------------------------------------------------------------------------
// If
// ---------------------------------------------------------------------------
Status Importer::IfAny(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,
                       std::vector<OnnxValue>& out) {
  if (in.empty() || !in[0].tensor()) return Invalid("missing required input 0");
  if (!in[0].is_tensor()) return Invalid("If condition must be a bool tensor, it is a " + in[0].Describe());
  Value* cond = in[0].tensor();
  if (cond->type().dtype != DType::kBool) return Invalid("If condition must be bool");
  if (cond->type().num_elements() != 1)
    return Invalid("If condition must have one element, it has shape " + ShapeStr(cond->type().shape));
  const onnx::GraphProto* then_g = GraphAttr("then_branch");
  const onnx::GraphProto* else_g = GraphAttr("else_branch");
  if (!then_g || !else_g) return Invalid("If needs 'then_branch' and 'else_branch' graphs");
  int num = n.output_size();
  if (then_g->output_size() != num || else_g->output_size() != num)
    return Invalid("If branches must produce " + std::to_string(num) + " outputs (then: " +
                   std::to_string(then_g->output_size()) + ", else: " +
                   std::to_string(else_g->output_size()) + ")");
  if (then_g->input_size() != 0 || else_g->input_size() != 0)
    return Invalid("If branches take no inputs");
  if (const DenseElements* c = GetConst(cond)) {
    // Known at import: inline the taken branch (its outputs may be sequences
    // or optionals of any structure).
    bool taken = ReadElementAsInt(*c, 0) != 0;
    std::vector<OnnxValue> res;
    KILN_RETURN_IF_ERROR(ImportSubgraphAny(taken ? *then_g : *else_g, block_, {}, &res,
                                           loc_ + (taken ? "/then/" : "/else/")));
    for (int i = 0; i < num; ++i) out[i] = res[i];
    return OkStatus();
  }
  // Data-dependent: an scf.if with one result per output tensor; a sequence
  // (or optional) output contributes one result per element, so both
  // branches must give the same structure and element types.
  Value* c = Extract(cond);
  auto tmp = ir::Operation::Create("scf.if", {c}, {}, {}, 2);
  std::vector<OnnxValue> branch_out[2];
  std::vector<Value*> flat[2];
  const onnx::GraphProto* graphs[2] = {then_g, else_g};
  for (int r = 0; r < 2; ++r) {
    ir::Block* b = tmp->region(r)->AddBlock();
    KILN_RETURN_IF_ERROR(ImportSubgraphAny(*graphs[r], b, {}, &branch_out[r],
                                           loc_ + (r == 0 ? "/then/" : "/else/")));
    for (const OnnxValue& v : branch_out[r]) flat[r].insert(flat[r].end(), v.elems.begin(), v.elems.end());
    auto y = ir::Operation::Create("scf.yield", flat[r], {});
    y->set_loc(loc_);
    b->Append(std::move(y));
  }
  std::vector<Type> types;
  for (int i = 0; i < num; ++i) {
    const OnnxValue& v0 = branch_out[0][i];
    const OnnxValue& v1 = branch_out[1][i];
    if (v0.is_tensor() && v1.is_tensor()) {
      const Type& t0 = v0.tensor()->type();
      const Type& t1 = v1.tensor()->type();
      if (t0 != t1)
        return Unimpl("If branches produce different types for output " + std::to_string(i) + " ('" +
                      n.output(i) + "'): then " + t0.ToString() + ", else " + t1.ToString() +
                      " (static shapes are required)");
      types.push_back(t0);
      continue;
    }
    bool same = v0.kind == v1.kind && v0.present == v1.present &&
                v0.holds_sequence == v1.holds_sequence && v0.elems.size() == v1.elems.size();
    for (size_t k = 0; same && k < v0.elems.size(); ++k) same = v0.elems[k]->type() == v1.elems[k]->type();
    if (!same)
      return Unimpl("If with a condition known only at run time: the branches give output " +
                    std::to_string(i) + " ('" + n.output(i) + "') different structures (then " +
                    v0.Describe() + ", else " + v1.Describe() +
                    "); a sequence/optional output needs the same length, presence and element "
                    "types in both branches, or a condition fixed at compile time (--constant-input)");
    for (Value* e : v0.elems) types.push_back(e->type());
  }
  auto op = ir::Operation::Create("scf.if", {c}, types, {}, 2);
  for (int r = 0; r < 2; ++r) op->region(r)->TakeBody(*tmp->region(r));
  std::vector<Value*> res = AppendRegionOp(std::move(op));
  size_t pos = 0;
  for (int i = 0; i < num; ++i) {
    OnnxValue v = branch_out[0][i];
    for (Value*& e : v.elems) e = res[pos++];
    out[i] = std::move(v);
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Loop
// ---------------------------------------------------------------------------
Status Importer::Loop(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  const onnx::GraphProto* body = GraphAttr("body");
  if (!body) return Invalid("Loop needs a 'body' graph");
  Value* m = in.size() > 0 ? in[0] : nullptr;
  Value* cond = in.size() > 1 ? in[1] : nullptr;
  std::vector<Value*> inits;
  for (size_t i = 2; i < in.size(); ++i) {
    if (!in[i]) return Invalid("Loop-carried input " + std::to_string(i) + " is missing");
    inits.push_back(in[i]);
  }
  int64_t num_carried = static_cast<int64_t>(inits.size());
  if (body->input_size() != 2 + num_carried)
    return Invalid("Loop body has " + std::to_string(body->input_size()) + " inputs, expected " +
                   std::to_string(2 + num_carried));
  if (body->output_size() < 1 + num_carried)
    return Invalid("Loop body has too few outputs");
  int64_t num_scan = body->output_size() - 1 - num_carried;
  if (n.output_size() > num_carried + num_scan) return Invalid("Loop has too many outputs");
  if (m && (m->type().num_elements() != 1 || IsFloatDType(m->type().dtype) ||
            m->type().dtype == DType::kBool))
    return Invalid("Loop trip count M must be an integer scalar");
  if (cond && (cond->type().num_elements() != 1 || cond->type().dtype != DType::kBool))
    return Invalid("Loop condition must be a bool scalar");
  int64_t trips = -1;  // known trip count bound (M), -1 when unknown
  if (m)
    if (const DenseElements* c = GetConst(m)) trips = std::max<int64_t>(0, ReadElementAsInt(*c, 0));
  int cond_known = -1;  // -1 unknown, 0 false, 1 true
  if (!cond) cond_known = 1;
  else if (const DenseElements* c = GetConst(cond)) cond_known = ReadElementAsInt(*c, 0) != 0;
  // Zero trips: the outputs are the initial values.
  if (cond_known == 0 || trips == 0) {
    if (num_scan > 0) return Unimpl("Loop with zero trips and scan outputs is not supported");
    for (int64_t j = 0; j < num_carried && j < static_cast<int64_t>(out.size()); ++j) out[j] = inits[j];
    return OkStatus();
  }
  bool unrollable = trips >= 0 && trips <= kMaxUnrollTrips;
  bool all_const = (!m || GetConst(m)) && (!cond || GetConst(cond)) && CapturesAreConstant(*body);
  for (Value* v : inits) all_const &= GetConst(v) != nullptr;
  if (unrollable && all_const) return LoopUnroll(*body, trips, cond, inits, num_scan, out);
  if (m && cond_known == 1) {
    bool not_for = false;
    Status st = LoopFor(*body, m, trips, inits, num_scan, out, &not_for);
    if (!st.ok()) {
      if (st.code() == StatusCode::kUnimplemented && unrollable)
        return LoopUnroll(*body, trips, cond, inits, num_scan, out);
      return st;
    }
    if (!not_for) return OkStatus();
  }
  if (num_scan > 0) {
    if (unrollable) return LoopUnroll(*body, trips, cond, inits, num_scan, out);
    return Unimpl("Loop scan outputs need a trip count known at import (at most " +
                  std::to_string(kMaxUnrollTrips) + " with a data-dependent condition)");
  }
  Status st = LoopWhile(*body, m, cond, inits, out);
  if (!st.ok() && st.code() == StatusCode::kUnimplemented && unrollable)
    return LoopUnroll(*body, trips, cond, inits, num_scan, out);
  return st;
}

Status Importer::LoopFor(const onnx::GraphProto& body, Value* m, int64_t trips,
                         const std::vector<Value*>& inits, int64_t num_scan,
                         std::vector<Value*>& out, bool* not_for) {
  if (num_scan > 0 && trips < 0)
    return Unimpl("Loop scan outputs need a trip count known at import");
  if (num_scan > 0 && trips > kMaxCreatedElements)
    return Unimpl("Loop scan outputs over " + std::to_string(trips) + " trips are too large");
  size_t num_carried = inits.size();
  bool counter_used = num_scan > 0 || GraphReads(body, body.input(0).name());
  // Host bounds and the body's constant inputs, in the enclosing block.
  Value* lb = IndexConst(0);
  Value* ub = trips >= 0 ? IndexConst(trips) : Extract(m);
  Value* step = IndexConst(1);
  Value* always = BoolConst(true);
  Value* counter0 = I64Const(0);
  std::vector<Value*> operands = {lb, ub, step};
  if (counter_used) operands.push_back(counter0);
  operands.insert(operands.end(), inits.begin(), inits.end());
  size_t first_carried = counter_used ? 1 : 0;
  auto op = ir::Operation::Create("scf.for", operands,
                                  std::vector<Type>(operands.size() - 3 + num_scan, Type::I1()),
                                  {}, 1);
  ir::Block* bb = op->region(0)->AddBlock();
  bb->AddArgument(Type::Index());
  Value* counter = counter_used ? bb->AddArgument(counter0->type()) : counter0;
  std::vector<Value*> bind = {counter, always};
  for (Value* v : inits) bind.push_back(bb->AddArgument(v->type()));
  std::vector<Value*> outs;
  KILN_RETURN_IF_ERROR(ImportSubgraph(body, bb, bind, &outs, loc_ + "/body/"));
  const DenseElements* c = GetConst(outs[0]);
  if (!c || c->type.num_elements() != 1 || ReadElementAsInt(*c, 0) == 0) {
    *not_for = true;  // the condition may change: scf.while
    return OkStatus();
  }
  for (size_t j = 0; j < num_carried; ++j)
    if (outs[1 + j]->type() != inits[j]->type())
      return Unimpl("Loop-carried value " + std::to_string(j) + " changes type from " +
                    inits[j]->type().ToString() + " to " + outs[1 + j]->type().ToString());
  // Scan accumulators start as zeros (in the enclosing block).
  std::vector<Value*> zeros;
  for (int64_t k = 0; k < num_scan; ++k) {
    Type yt = outs[1 + num_carried + k]->type();
    Shape as = yt.shape;
    as.insert(as.begin(), trips);
    Type at = Type::Tensor(yt.dtype, as);
    if (SafeNumElements(as) < 0 || SafeNumElements(as) > kMaxCreatedElements)
      return Unimpl("Loop scan output " + std::to_string(k) + " is too large");
    zeros.push_back(Constant(MakeDenseFromInts(at, std::vector<int64_t>(at.num_elements(), 0))));
  }
  std::vector<Value*> yields;
  {
    BlockScope scope(&block_, bb);
    if (counter_used) {
      KILN_ASSIGN_OR_RETURN(Value* next, Binary("tensor.add", counter, I64Const(1)));
      yields.push_back(next);
    }
    for (size_t j = 0; j < num_carried; ++j) yields.push_back(outs[1 + j]);
    for (int64_t k = 0; k < num_scan; ++k) {
      Value* acc = bb->AddArgument(zeros[k]->type());
      op->AppendOperand(zeros[k]);
      KILN_ASSIGN_OR_RETURN(Value* next, InsertStep(acc, outs[1 + num_carried + k], counter, 0, trips));
      yields.push_back(next);
    }
    auto y = ir::Operation::Create("scf.yield", yields, {});
    y->set_loc(loc_);
    bb->Append(std::move(y));
  }
  for (unsigned r = 0; r < op->num_results(); ++r) op->result(r)->set_type(yields[r]->type());
  std::vector<Value*> res = AppendRegionOp(std::move(op));
  for (size_t j = 0; j < out.size() && j < num_carried + num_scan; ++j) out[j] = res[first_carried + j];
  return OkStatus();
}

Status Importer::LoopWhile(const onnx::GraphProto& body, Value* m, Value* cond,
                           const std::vector<Value*>& inits, std::vector<Value*>& out) {
  size_t num_carried = inits.size();
  bool counter_used = m || GraphReads(body, body.input(0).name());
  Value* counter0 = I64Const(0);
  Value* cond0 = cond ? Reshape(cond, {}) : BoolConst(true);
  Value* limit = m ? Reshape(Cast(m, DType::kI64), {}) : nullptr;
  std::vector<Value*> operands;
  if (counter_used) operands.push_back(counter0);
  operands.push_back(cond0);
  operands.insert(operands.end(), inits.begin(), inits.end());
  size_t first_carried = operands.size() - num_carried;
  std::vector<Type> types;
  for (Value* v : operands) types.push_back(v->type());
  auto op = ir::Operation::Create("scf.while", operands, types, {}, 2);
  ir::Block* before = op->region(0)->AddBlock();
  ir::Block* after = op->region(1)->AddBlock();
  std::vector<Value*> bargs, aargs;
  for (const Type& t : types) {
    bargs.push_back(before->AddArgument(t));
    aargs.push_back(after->AddArgument(t));
  }
  {
    // before: continue while (counter < M) and cond; forward everything.
    BlockScope scope(&block_, before);
    Value* go = bargs[counter_used ? 1 : 0];
    if (limit) {
      KILN_ASSIGN_OR_RETURN(Value* lt, Binary("tensor.less", bargs[0], limit));
      KILN_ASSIGN_OR_RETURN(go, Binary("tensor.and", lt, go));
    }
    std::vector<Value*> cops = {Extract(go)};
    cops.insert(cops.end(), bargs.begin(), bargs.end());
    auto c = ir::Operation::Create("scf.condition", cops, {});
    c->set_loc(loc_);
    before->Append(std::move(c));
  }
  Value* counter = counter_used ? aargs[0] : counter0;
  std::vector<Value*> bind = {counter, aargs[counter_used ? 1 : 0]};
  for (size_t j = 0; j < num_carried; ++j) bind.push_back(aargs[first_carried + j]);
  std::vector<Value*> outs;
  KILN_RETURN_IF_ERROR(ImportSubgraph(body, after, bind, &outs, loc_ + "/body/"));
  if (outs[0]->type().dtype != DType::kBool || outs[0]->type().num_elements() != 1)
    return Invalid("Loop body condition output must be a bool scalar");
  for (size_t j = 0; j < num_carried; ++j)
    if (outs[1 + j]->type() != inits[j]->type())
      return Unimpl("Loop-carried value " + std::to_string(j) + " changes type from " +
                    inits[j]->type().ToString() + " to " + outs[1 + j]->type().ToString());
  {
    BlockScope scope(&block_, after);
    std::vector<Value*> yields;
    if (counter_used) {
      KILN_ASSIGN_OR_RETURN(Value* next, Binary("tensor.add", counter, I64Const(1)));
      yields.push_back(next);
    }
    yields.push_back(Reshape(outs[0], {}));
    for (size_t j = 0; j < num_carried; ++j) yields.push_back(outs[1 + j]);
    auto y = ir::Operation::Create("scf.yield", yields, {});
    y->set_loc(loc_);
    after->Append(std::move(y));
  }
  std::vector<Value*> res = AppendRegionOp(std::move(op));
  for (size_t j = 0; j < out.size() && j < num_carried; ++j) out[j] = res[first_carried + j];
  return OkStatus();
}

Status Importer::LoopUnroll(const onnx::GraphProto& body, int64_t trips, Value* cond,
                            const std::vector<Value*>& inits, int64_t num_scan,
                            std::vector<Value*>& out) {
  size_t num_carried = inits.size();
  Value* c = cond ? cond : BoolConst(true);
  std::vector<Value*> carried = inits;
  std::vector<std::vector<Value*>> scans(num_scan);
  for (int64_t i = 0; i < trips; ++i) {
    const DenseElements* cc = GetConst(c);
    if (!cc)
      return Unimpl("Loop condition before trip " + std::to_string(i) +
                    " is not known at import; the loop cannot be unrolled");
    if (ReadElementAsInt(*cc, 0) == 0) break;
    std::vector<Value*> bind = {I64Const(i), c};
    bind.insert(bind.end(), carried.begin(), carried.end());
    std::vector<Value*> outs;
    KILN_RETURN_IF_ERROR(
        ImportSubgraph(body, block_, bind, &outs, loc_ + "/trip" + std::to_string(i) + "/"));
    c = outs[0];
    if (c->type().dtype != DType::kBool || c->type().num_elements() != 1)
      return Invalid("Loop body condition output must be a bool scalar");
    for (size_t j = 0; j < num_carried; ++j) carried[j] = outs[1 + j];
    for (int64_t k = 0; k < num_scan; ++k) scans[k].push_back(outs[1 + num_carried + k]);
  }
  for (size_t j = 0; j < out.size() && j < num_carried; ++j) out[j] = carried[j];
  for (int64_t k = 0; k < num_scan; ++k) {
    if (num_carried + k >= out.size()) break;
    if (scans[k].empty()) return Unimpl("Loop with zero trips and scan outputs is not supported");
    KILN_ASSIGN_OR_RETURN(out[num_carried + k],
                          Stack(scans[k], 0, "Loop scan output " + std::to_string(k)));
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------
// Scan
// ---------------------------------------------------------------------------
Status Importer::Scan(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  const onnx::GraphProto* body = GraphAttr("body");
  if (!body) return Invalid("Scan needs a 'body' graph");
  int64_t num_scan_in = AttrInt("num_scan_inputs", -1);
  if (opset_ < 9) {
    // Scan-8: [sequence_lens], states [B, ...], scan inputs [B, L, ...];
    // supported for batch 1 (the batch axis is dropped and put back).
    if (in.empty()) return Invalid("Scan needs inputs");
    std::vector<Value*> rest(in.begin() + 1, in.end());
    if (num_scan_in < 1 || num_scan_in > static_cast<int64_t>(rest.size()))
      return Invalid("Scan num_scan_inputs is out of range");
    int64_t num_states = static_cast<int64_t>(rest.size()) - num_scan_in;
    for (Value* v : rest)
      if (!v || v->type().rank() < 1 || v->type().shape[0] != 1)
        return Unimpl("Scan-8 is supported with batch size 1 only");
    ScanSpec spec;
    spec.in_axes.assign(num_scan_in, 0);
    spec.in_reverse = AttrInts("directions", Shape(num_scan_in, 0));
    if (static_cast<int64_t>(spec.in_reverse.size()) != num_scan_in)
      return Invalid("Scan directions must have num_scan_inputs entries");
    std::vector<Value*> states, xs;
    for (int64_t i = 0; i < static_cast<int64_t>(rest.size()); ++i) {
      const Shape& s = rest[i]->type().shape;
      Value* v = Reshape(rest[i], Shape(s.begin() + 1, s.end()));
      (i < num_states ? states : xs).push_back(v);
    }
    for (Value* x : xs)
      if (x->type().rank() < 1) return Invalid("Scan-8 scan inputs need a sequence axis");
    spec.length = xs[0]->type().shape[0];
    if (in[0]) {
      KILN_ASSIGN_OR_RETURN(Shape lens, ConstInts(in[0], "sequence_lens"));
      for (int64_t l : lens)
        if (l != spec.length) return Unimpl("Scan sequence_lens shorter than the sequence");
    }
    int64_t num_out = body->output_size() - num_states;
    spec.out_axes.assign(std::max<int64_t>(num_out, 0), 0);
    spec.out_reverse.assign(std::max<int64_t>(num_out, 0), 0);
    std::vector<Value*> results;
    KILN_RETURN_IF_ERROR(ScanCore(*body, states, xs, spec, &results));
    for (size_t i = 0; i < out.size() && i < results.size(); ++i) {
      Shape s = results[i]->type().shape;
      s.insert(s.begin(), 1);
      out[i] = Reshape(results[i], s);
    }
    return OkStatus();
  }
  if (num_scan_in < 1 || num_scan_in > static_cast<int64_t>(in.size()))
    return Invalid("Scan num_scan_inputs is out of range");
  for (Value* v : in)
    if (!v) return Invalid("Scan inputs must all be present");
  int64_t num_states = static_cast<int64_t>(in.size()) - num_scan_in;
  std::vector<Value*> states(in.begin(), in.begin() + num_states), xs(in.begin() + num_states, in.end());
  int64_t num_out = body->output_size() - num_states;
  if (num_out < 0) return Invalid("Scan body has too few outputs");
  ScanSpec spec;
  spec.in_axes = AttrInts("scan_input_axes", Shape(num_scan_in, 0));
  spec.in_reverse = AttrInts("scan_input_directions", Shape(num_scan_in, 0));
  spec.out_axes = AttrInts("scan_output_axes", Shape(num_out, 0));
  spec.out_reverse = AttrInts("scan_output_directions", Shape(num_out, 0));
  if (static_cast<int64_t>(spec.in_axes.size()) != num_scan_in ||
      static_cast<int64_t>(spec.in_reverse.size()) != num_scan_in ||
      static_cast<int64_t>(spec.out_axes.size()) != num_out ||
      static_cast<int64_t>(spec.out_reverse.size()) != num_out)
    return Invalid("Scan axes/directions attributes have the wrong length");
  for (int64_t j = 0; j < num_scan_in; ++j) {
    KILN_ASSIGN_OR_RETURN(spec.in_axes[j], NormAxis(spec.in_axes[j], xs[j]->type().rank()));
    int64_t len = xs[j]->type().shape[spec.in_axes[j]];
    if (j == 0) spec.length = len;
    else if (len != spec.length)
      return Invalid("Scan inputs differ in sequence length (" + std::to_string(spec.length) +
                     " vs " + std::to_string(len) + ")");
  }
  std::vector<Value*> results;
  KILN_RETURN_IF_ERROR(ScanCore(*body, states, xs, spec, &results));
  for (size_t i = 0; i < out.size() && i < results.size(); ++i) out[i] = results[i];
  return OkStatus();
}

Status Importer::ScanCore(const onnx::GraphProto& body, const std::vector<Value*>& states,
                          const std::vector<Value*>& xs, const ScanSpec& spec,
                          std::vector<Value*>* results) {
  if (body.input_size() != static_cast<int>(states.size() + xs.size()))
    return Invalid("Scan body has " + std::to_string(body.input_size()) + " inputs, expected " +
                   std::to_string(states.size() + xs.size()));
  bool all_const = CapturesAreConstant(body);
  for (Value* v : states) all_const &= GetConst(v) != nullptr;
  for (Value* v : xs) all_const &= GetConst(v) != nullptr;
  bool unrollable = spec.length <= kMaxUnrollTrips;
  if (spec.length == 0) return Unimpl("Scan over an empty sequence is not supported");
  if (all_const && unrollable) return ScanUnroll(body, states, xs, spec, results);
  Status st = ScanFor(body, states, xs, spec, results);
  if (!st.ok() && st.code() == StatusCode::kUnimplemented && unrollable)
    return ScanUnroll(body, states, xs, spec, results);
  return st;
}

Status Importer::ScanFor(const onnx::GraphProto& body, const std::vector<Value*>& states,
                         const std::vector<Value*>& xs, const ScanSpec& spec,
                         std::vector<Value*>* results) {
  int64_t len = spec.length;
  size_t num_states = states.size();
  Value* last = I64Const(len - 1);
  std::vector<Value*> operands = {IndexConst(0), IndexConst(len), IndexConst(1), I64Const(0)};
  operands.insert(operands.end(), states.begin(), states.end());
  size_t num_out = spec.out_axes.size();
  auto op = ir::Operation::Create("scf.for", operands,
                                  std::vector<Type>(1 + num_states + num_out, Type::I1()), {}, 1);
  ir::Block* bb = op->region(0)->AddBlock();
  bb->AddArgument(Type::Index());
  Value* counter = bb->AddArgument(operands[3]->type());
  std::vector<Value*> bind;
  for (Value* s : states) bind.push_back(bb->AddArgument(s->type()));
  {
    BlockScope scope(&block_, bb);
    Value* reversed = nullptr;
    for (size_t j = 0; j < xs.size(); ++j) {
      Value* idx = counter;
      if (spec.in_reverse[j]) {
        if (!reversed) { KILN_ASSIGN_OR_RETURN(reversed, Binary("tensor.sub", last, counter)); }
        idx = reversed;
      }
      Shape s = xs[j]->type().shape;
      int64_t axis = spec.in_axes[j];
      s.erase(s.begin() + axis);
      bind.push_back(Emit("tensor.gather", {xs[j], idx}, Type::Tensor(xs[j]->type().dtype, s),
                          {{"axis", axis}}));
    }
  }
  std::vector<Value*> outs;
  KILN_RETURN_IF_ERROR(ImportSubgraph(body, bb, bind, &outs, loc_ + "/body/"));
  if (outs.size() != num_states + num_out) return Invalid("Scan body output count mismatch");
  for (size_t j = 0; j < num_states; ++j)
    if (outs[j]->type() != states[j]->type())
      return Unimpl("Scan state " + std::to_string(j) + " changes type from " +
                    states[j]->type().ToString() + " to " + outs[j]->type().ToString());
  std::vector<int64_t> axes(num_out);
  std::vector<Value*> zeros;
  for (size_t k = 0; k < num_out; ++k) {
    Type yt = outs[num_states + k]->type();
    KILN_ASSIGN_OR_RETURN(axes[k], NormAxis(spec.out_axes[k], yt.rank() + 1));
    Shape as = yt.shape;
    as.insert(as.begin() + axes[k], len);
    if (SafeNumElements(as) < 0 || SafeNumElements(as) > kMaxCreatedElements)
      return Unimpl("Scan output " + std::to_string(k) + " is too large");
    Type at = Type::Tensor(yt.dtype, as);
    zeros.push_back(Constant(MakeDenseFromInts(at, std::vector<int64_t>(at.num_elements(), 0))));
  }
  std::vector<Value*> yields;
  {
    BlockScope scope(&block_, bb);
    KILN_ASSIGN_OR_RETURN(Value* next, Binary("tensor.add", counter, I64Const(1)));
    yields.push_back(next);
    for (size_t j = 0; j < num_states; ++j) yields.push_back(outs[j]);
    Value* reversed = nullptr;
    for (size_t k = 0; k < num_out; ++k) {
      Value* acc = bb->AddArgument(zeros[k]->type());
      op->AppendOperand(zeros[k]);
      Value* idx = counter;
      if (spec.out_reverse[k]) {
        if (!reversed) { KILN_ASSIGN_OR_RETURN(reversed, Binary("tensor.sub", last, counter)); }
        idx = reversed;
      }
      KILN_ASSIGN_OR_RETURN(Value* acc_next, InsertStep(acc, outs[num_states + k], idx, axes[k], len));
      yields.push_back(acc_next);
    }
    auto y = ir::Operation::Create("scf.yield", yields, {});
    y->set_loc(loc_);
    bb->Append(std::move(y));
  }
  for (unsigned r = 0; r < op->num_results(); ++r) op->result(r)->set_type(yields[r]->type());
  std::vector<Value*> res = AppendRegionOp(std::move(op));
  results->assign(res.begin() + 1, res.end());
  return OkStatus();
}

Status Importer::ScanUnroll(const onnx::GraphProto& body, const std::vector<Value*>& states,
                            const std::vector<Value*>& xs, const ScanSpec& spec,
                            std::vector<Value*>* results) {
  int64_t len = spec.length;
  size_t num_states = states.size();
  size_t num_out = spec.out_axes.size();
  std::vector<Value*> cur = states;
  std::vector<std::vector<Value*>> steps(num_out, std::vector<Value*>(len, nullptr));
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Value*> bind = cur;
    for (size_t j = 0; j < xs.size(); ++j) {
      int64_t pos = spec.in_reverse[j] ? len - 1 - t : t;
      int64_t axis = spec.in_axes[j];
      Shape s = xs[j]->type().shape;
      s.erase(s.begin() + axis);
      bind.push_back(Reshape(SliceAxis(xs[j], axis, pos, 1), s));
    }
    std::vector<Value*> outs;
    KILN_RETURN_IF_ERROR(
        ImportSubgraph(body, block_, bind, &outs, loc_ + "/step" + std::to_string(t) + "/"));
    if (outs.size() != num_states + num_out) return Invalid("Scan body output count mismatch");
    for (size_t j = 0; j < num_states; ++j) cur[j] = outs[j];
    for (size_t k = 0; k < num_out; ++k)
      steps[k][spec.out_reverse[k] ? len - 1 - t : t] = outs[num_states + k];
  }
  *results = cur;
  for (size_t k = 0; k < num_out; ++k) {
    KILN_ASSIGN_OR_RETURN(int64_t axis,
                          NormAxis(spec.out_axes[k], steps[k][0]->type().rank() + 1));
    KILN_ASSIGN_OR_RETURN(Value* v, Stack(steps[k], axis, "Scan output " + std::to_string(k)));
    results->push_back(v);
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
