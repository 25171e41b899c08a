// Resource usage analysis (resource_usage.h).
#include "compiler/analysis/resource_usage.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace kiln::analysis {

using ir::OpCode;

namespace {

using ir::Block;
using ir::Operation;
using ir::Region;
using ir::Value;

// Ops whose regions and results this analysis models: those whose results
// are what their regions yield (ops.def ResultStorage::kRegion: scf.if,
// scf.index_switch, scf.for, scf.while, stream.async.execute).
bool IsModelledRegionOp(const Operation* op) { return ir::Traits(op).storage == ir::ResultStorage::kRegion; }

bool IsResourceOrTensor(const Value* v) {
  return v && (v->type().kind == ir::TypeKind::kResource || v->type().is_tensor());
}

// Terminators of the blocks directly inside `op`'s regions.
std::vector<Operation*> RegionTerminators(const Operation* op) {
  std::vector<Operation*> r;
  for (unsigned i = 0; i < op->num_regions(); ++i)
    for (auto& b : op->region(i)->blocks())
      if (Operation* t = b->terminator()) r.push_back(t);
  return r;
}

Block* EntryBlock(const Operation* op, unsigned region) {
  if (region >= op->num_regions() || op->region(region)->empty()) return nullptr;
  return op->region(region)->block(0);
}

Value* ArgOrNull(Block* b, unsigned i) {
  return b && i < b->num_arguments() ? b->argument(i) : nullptr;
}

Value* ResultOrNull(const Operation* op, unsigned i) {
  return op && i < op->num_results() ? op->result(i) : nullptr;
}

// cf.cond_br / stream.async.execute operand_segments, with defaults.
std::vector<int64_t> Segments(const Operation* op) { return op->ints_attr("operand_segments"); }

bool IsAncestorOrSelf(const Operation* ancestor, const Operation* op) {
  for (const Operation* o = op; o; o = o->parent_op())
    if (o == ancestor) return true;
  return false;
}

// True when `op` sits (at any depth) inside region `r`.
bool IsInRegion(const Operation* op, const Region* r) {
  for (const Operation* o = op; o; o = o->parent_op())
    if (o->parent_block() && o->parent_block()->parent() == r) return true;
  return false;
}

// For each op that is a user of `x` or encloses one: the innermost user.
std::unordered_map<const Operation*, Operation*> UsersByAncestor(const Value* x) {
  std::unordered_map<const Operation*, Operation*> m;
  for (const ir::Use& u : x->uses())
    for (const Operation* o = u.user; o; o = o->parent_op()) m.emplace(o, u.user);
  return m;
}

// Blocks of `from`'s region reachable through the successors of `from`'s
// terminator (so `from` itself only when it is on a cycle). Paths do not go
// through `barrier` (the block that defines the value being tracked: entering
// it again re-defines the value). Result in region order.
std::vector<Block*> Reachable(Block* from, Block* barrier) {
  std::unordered_set<Block*> seen;
  std::vector<Block*> work;
  auto push_succs = [&](Block* b) {
    Operation* t = b->terminator();
    if (!t) return;
    for (Block* s : t->successors())
      if (s && s != barrier && seen.insert(s).second) work.push_back(s);
  };
  push_succs(from);
  while (!work.empty()) {
    Block* b = work.back();
    work.pop_back();
    push_succs(b);
  }
  std::vector<Block*> ordered;
  for (auto& b : from->parent()->blocks())
    if (seen.count(b.get())) ordered.push_back(b.get());
  return ordered;
}

bool LeavesRegion(const Block* b) {
  const Operation* t = b->terminator();
  return !t || t->num_successors() == 0;
}

// The first use of `x` that may run after `point` (see "observed after" in
// the header), following `x` alone (no aliases).
Observer LaterUseOf(Value* x, Operation* point) {
  Observer none;
  Block* xb = x->parent_block();
  if (!xb || !xb->parent() || !IsInRegion(point, xb->parent())) return none;
  Region* x_region = xb->parent();
  // A result of an op that encloses `point` gets its contents from that op's
  // terminators: either one that runs after `point` (a use of the value it
  // passes, found by following that value), or one of a sibling region that
  // does not run at all in this execution. Nothing to follow here.
  if (Operation* def = x->defining_op())
    if (def != point && IsAncestorOrSelf(def, point)) return none;
  auto users = UsersByAncestor(x);
  auto user_in = [&](const Operation* op) -> Operation* {
    auto it = users.find(op);
    return it == users.end() ? nullptr : it->second;
  };
  // Uses inside the regions of `point` itself run after it starts.
  for (unsigned r = 0; r < point->num_regions(); ++r)
    for (auto& b : point->region(r)->blocks())
      for (auto& op : b->ops())
        if (Operation* u = user_in(op.get()))
          return Observer{Observer::Kind::kLaterUse, u, nullptr};

  Operation* cur = point;
  while (cur) {
    Block* block = cur->parent_block();
    Region* region = block->parent();
    Block* barrier = region == x_region ? xb : nullptr;
    bool after = false;
    for (auto& op : block->ops()) {
      if (op.get() == cur) {
        after = true;
        continue;
      }
      if (after)
        if (Operation* u = user_in(op.get()))
          return Observer{Observer::Kind::kLaterUse, u, nullptr};
    }
    std::vector<Block*> reach = Reachable(block, barrier);
    for (Block* b : reach)
      for (auto& op : b->ops())
        if (Operation* u = user_in(op.get()))
          return Observer{Observer::Kind::kLaterUse, u, nullptr};
    bool exits = LeavesRegion(block);
    for (Block* b : reach) exits = exits || LeavesRegion(b);
    if (!exits || region == x_region) return none;  // x is not visible outside its region
    Operation* parent = region->parent_op();
    if (!parent || parent->is(OpCode::kFuncFunc)) return none;
    if (IsLoopOp(parent) || !IsModelledRegionOp(parent)) {
      // A later trip runs every op of the loop again; x is defined outside.
      for (unsigned r = 0; r < parent->num_regions(); ++r)
        for (auto& b : parent->region(r)->blocks())
          for (auto& op : b->ops())
            if (Operation* u = user_in(op.get()))
              return Observer{Observer::Kind::kLaterTrip, u, parent};
    }
    cur = parent;
  }
  return none;
}

std::string SymbolOf(const Operation* op, const char* attr) {
  std::string s = op->str_attr(attr);
  return s.empty() ? std::string() : " @" + s;
}

std::string ObserverText(const Observer& o) {
  switch (o.kind) {
    case Observer::Kind::kLaterUse:
      return "used later by " + DescribeOp(o.op);
    case Observer::Kind::kLaterTrip:
      return "used again by " + DescribeOp(o.op) + " in a later trip of " + DescribeOp(o.loop);
    case Observer::Kind::kEscape:
      if (o.op->is(OpCode::kUtilGlobalStore)) return "stored to global" + SymbolOf(o.op, "global");
      return "passed to a call of" + SymbolOf(o.op, "callee");
    case Observer::Kind::kNone:
      break;
  }
  return "";
}

Verdict Ok() { return Verdict{true, ""}; }
Verdict No(std::string reason) { return Verdict{false, std::move(reason)}; }

Verdict Ownership(Value* v, std::unordered_set<Value*>& visiting, int depth);

// Ownership of a flow target: every incoming value is owned, passed once per
// edge and not observed after its edge.
Verdict FlowTargetOwnership(Value* v, std::unordered_set<Value*>& visiting, int depth) {
  bool modelled = true;
  std::vector<FlowEdge> edges = IncomingValues(v, &modelled);
  if (!modelled) {
    Operation* owner = v->is_block_argument() ? v->parent_block()->parent_op() : v->defining_op();
    return No("source flows through " + DescribeOp(owner) + ", which the analysis does not model");
  }
  for (const FlowEdge& e : edges) {
    int group = FlowGroup(e.edge, e.operand);
    int passes = 0;
    for (unsigned j = 0; j < e.edge->num_operands(); ++j)
      if (e.edge->operand(j) == e.value && FlowGroup(e.edge, j) == group) ++passes;
    if (passes > 1)
      return No("source shares its storage with another value: " + DescribeOp(e.edge) +
                " passes the same value twice");
    Observer obs = FindLaterObserver(e.value, e.edge, e.edge);
    if (obs) {
      if (IsLoopOp(e.edge) && e.edge->num_regions() > 0 && v->is_block_argument()) {
        bool inside = IsAncestorOrSelf(e.edge, obs.op) || obs.loop == e.edge;
        if (inside)
          return No(
              "source is loop-carried and its initial value is captured by the loop region (" +
              ObserverText(obs) + ")");
        return No("source is loop-carried and live after the loop (the initial value is " +
                  ObserverText(obs) + ")");
      }
      if (IsLoopOp(e.edge))  // zero-trip result of an scf.for
        return No("source is loop-carried and live after the loop (the initial value is " +
                  ObserverText(obs) + ")");
      return No("source receives a value through " + DescribeOp(e.edge) + " that is " +
                ObserverText(obs));
    }
    Verdict r = Ownership(e.value, visiting, depth + 1);
    if (!r.ok) return r;
  }
  return Ok();
}

Verdict Ownership(Value* v, std::unordered_set<Value*>& visiting, int depth) {
  if (!visiting.insert(v).second) return Ok();  // a cycle adds no new origin
  if (depth > 64) return No("source's origin is too deep to analyse");
  if (v->is_block_argument()) {
    Block* b = v->parent_block();
    Operation* owner = b->parent_op();
    if (owner && owner->is(OpCode::kFuncFunc) && b == owner->region(0)->block(0)) {
      std::vector<std::string> own = owner->strs_attr("arg_ownership");
      if (v->index() < own.size() && own[v->index()] == "consume") return Ok();
      return No("source is a function argument (borrowed)");
    }
    return FlowTargetOwnership(v, visiting, depth);
  }
  Operation* def = v->defining_op();
  const OpCode n = def->code();
  const ir::OpInfo& traits = ir::Traits(def);
  // A new allocation that is never tied (clone, alloca, splat, transfer).
  if (traits.level == ir::OpLevel::kStream && traits.storage == ir::ResultStorage::kFresh &&
      traits.tie == ir::Tie::kNone)
    return Ok();
  if (n == OpCode::kStreamTensorImport)
    return def->bool_attr("consume") ? Ok() : No("source is a borrowed import");
  if (n == OpCode::kStreamAsyncConstant) return No("source is a constant");
  if (n == OpCode::kUtilGlobalLoad) return No("source is a global load" + SymbolOf(def, "global"));
  if (n == OpCode::kFuncCall) {
    // A call result is fresh storage or a consumed operand handed back (the
    // callee copies a borrowed argument it returns), so the caller owns it;
    // but a callee may return one buffer as several results.
    unsigned resources = 0;
    for (Value* r : def->results()) resources += r->type().kind == ir::TypeKind::kResource ? 1 : 0;
    if (resources > 1) return No("source is one of several results of a call" + SymbolOf(def, "callee") +
                                 " (they may be one buffer)");
    return Ok();
  }
  if (n == OpCode::kStreamTimepointAwait) {
    unsigned i = v->index() + 1;
    if (i >= def->num_operands()) return No("source is an await result without an operand");
    return Ownership(def->operand(i), visiting, depth + 1);
  }
  if (n == OpCode::kStreamAsyncSlice) return Ownership(def->operand(0), visiting, depth + 1);
  if (traits.tie != ir::Tie::kNone) {  // dispatch, update, copy, fill
    int tied = TiedOperandOfResult(def, v->index());
    if (tied < 0) return Ok();  // a fresh result
    return Ownership(def->operand(static_cast<unsigned>(tied)), visiting, depth + 1);
  }
  if (IsModelledRegionOp(def)) return FlowTargetOwnership(v, visiting, depth);
  return No("source is produced by " + DescribeOp(def) + " (unknown aliasing)");
}

}  // namespace

// ---------------------------------------------------------------------------
// Op contract
// ---------------------------------------------------------------------------
bool IsResource(const ir::Value* v) { return v && v->type().kind == ir::TypeKind::kResource; }

int TiedOperandOfResult(const ir::Operation* op, unsigned result) { return ir::TiedOperandIndex(*op, result); }

bool IsConsumedCallOperand(const ir::Operation* call, unsigned operand) {
  if (!call->is(OpCode::kFuncCall)) return false;
  const ir::Attribute* a = call->attr("callee");
  const ir::SymbolRef* callee = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  if (!callee) return false;
  const ir::Operation* top = call;
  while (top->parent_op()) top = top->parent_op();
  const ir::Block* module = top->parent_block();
  if (!module) return false;
  for (const auto& o : const_cast<ir::Block*>(module)->ops()) {
    if (!o->is(OpCode::kFuncFunc) || o->str_attr("sym_name") != callee->name) continue;
    std::vector<std::string> own = o->strs_attr("arg_ownership");
    return operand < own.size() && own[operand] == "consume";
  }
  return false;
}

std::vector<unsigned> TiedOperands(const ir::Operation* op) {
  std::set<unsigned> s;
  if (op->is(OpCode::kFuncCall))
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (IsConsumedCallOperand(op, i)) s.insert(i);
  for (unsigned i = 0; i < op->num_results(); ++i) {
    int t = TiedOperandOfResult(op, i);
    if (t >= 0) s.insert(static_cast<unsigned>(t));
  }
  return std::vector<unsigned>(s.begin(), s.end());
}

int64_t ResultSize(const ir::Operation* op, unsigned result) {
  std::vector<int64_t> sizes = op->ints_attr("sizes");
  if (result < sizes.size()) return sizes[result];
  if (op->has_attr("size") && op->num_results() == 1) return op->int_attr("size", -1);
  return -1;
}

// ---------------------------------------------------------------------------
// Value flow
// ---------------------------------------------------------------------------
bool IsLoopOp(const ir::Operation* op) { return op && (op->is(OpCode::kScfFor) || op->is(OpCode::kScfWhile)); }

std::vector<ir::Value*> FlowTargets(const ir::Operation* op, unsigned i) {
  std::vector<Value*> r;
  auto add = [&](Value* v) {
    if (v) r.push_back(v);
  };
  const OpCode n = op->code();
  if (n == OpCode::kCfBr) {
    if (op->num_successors() == 1) add(ArgOrNull(op->successor(0), i));
  } else if (n == OpCode::kCfCondBr) {
    std::vector<int64_t> seg = Segments(op);
    if (i == 0 || seg.size() != 3 || op->num_successors() != 2) return r;
    unsigned j = i - 1;
    if (j < seg[1]) {
      add(ArgOrNull(op->successor(0), j));
    } else {
      add(ArgOrNull(op->successor(1), j - static_cast<unsigned>(seg[1])));
    }
  } else if (n == OpCode::kScfYield) {
    Operation* p = op->parent_op();
    if (!p) return r;
    if (p->is(OpCode::kScfFor)) {
      add(ArgOrNull(EntryBlock(p, 0), i + 1));
      add(ResultOrNull(p, i));
    } else if (p->is(OpCode::kScfWhile)) {
      add(ArgOrNull(EntryBlock(p, 0), i));
    } else if (p->is(OpCode::kScfIf) || p->is(OpCode::kScfIndexSwitch)) {
      add(ResultOrNull(p, i));
    }
  } else if (n == OpCode::kScfCondition) {
    Operation* p = op->parent_op();
    if (!p || !p->is(OpCode::kScfWhile) || i == 0) return r;
    add(ArgOrNull(EntryBlock(p, 1), i - 1));
    add(ResultOrNull(p, i - 1));
  } else if (n == OpCode::kStreamYield) {
    Operation* p = op->parent_op();
    if (p && p->is(OpCode::kStreamAsyncExecute)) add(ResultOrNull(p, i));
  } else if (n == OpCode::kScfFor) {
    if (i < 3) return r;
    add(ArgOrNull(EntryBlock(op, 0), i - 3 + 1));
    add(ResultOrNull(op, i - 3));
  } else if (n == OpCode::kScfWhile) {
    add(ArgOrNull(EntryBlock(op, 0), i));
  } else if (n == OpCode::kStreamAsyncExecute) {
    std::vector<int64_t> seg = Segments(op);
    unsigned awaits = seg.size() == 2 ? static_cast<unsigned>(seg[0]) : 0;
    if (i >= awaits) add(ArgOrNull(EntryBlock(op, 0), i - awaits));
  }
  return r;
}

int FlowGroup(const ir::Operation* op, unsigned i) {
  const OpCode n = op->code();
  if (n == OpCode::kCfBr || n == OpCode::kScfYield || n == OpCode::kStreamYield || n == OpCode::kScfWhile) return 0;
  if (n == OpCode::kCfCondBr) {
    std::vector<int64_t> seg = Segments(op);
    if (i == 0 || seg.size() != 3) return -1;
    return i - 1 < seg[1] ? 0 : 1;
  }
  if (n == OpCode::kScfCondition) return i == 0 ? -1 : 0;
  if (n == OpCode::kScfFor) return i < 3 ? -1 : 0;
  if (n == OpCode::kStreamAsyncExecute) {
    std::vector<int64_t> seg = Segments(op);
    unsigned awaits = seg.size() == 2 ? static_cast<unsigned>(seg[0]) : 0;
    return i < awaits ? -1 : 0;
  }
  return -1;
}

std::vector<FlowEdge> IncomingValues(ir::Value* v, bool* modelled) {
  *modelled = true;
  std::vector<FlowEdge> r;
  std::vector<Operation*> candidates;
  if (v->is_block_argument()) {
    Block* b = v->parent_block();
    Region* region = b->parent();
    Operation* owner = region ? region->parent_op() : nullptr;
    if (region && b != region->block(0)) {
      // A branch target: every branch of the region may pass values here.
      for (auto& blk : region->blocks())
        if (Operation* t = blk->terminator()) candidates.push_back(t);
    } else if (owner && owner->is(OpCode::kFuncFunc)) {
      return r;  // function arguments come from callers: not a flow target
    } else if (owner && IsModelledRegionOp(owner)) {
      candidates = RegionTerminators(owner);
      candidates.push_back(owner);
    } else {
      *modelled = false;
      return r;
    }
  } else {
    Operation* def = v->defining_op();
    if (def->num_regions() == 0) return r;
    if (!IsModelledRegionOp(def)) {
      *modelled = false;
      return r;
    }
    candidates = RegionTerminators(def);
    candidates.push_back(def);
  }
  for (Operation* c : candidates)
    for (unsigned i = 0; i < c->num_operands(); ++i)
      for (Value* t : FlowTargets(c, i))
        if (t == v) r.push_back(FlowEdge{c->operand(i), c, i});
  return r;
}

// ---------------------------------------------------------------------------
// Aliases and observers
// ---------------------------------------------------------------------------
namespace {
// True when `terminator` is the scf.yield of one branch of an scf.if /
// scf.index_switch and `point` sits in another branch of the same op: in one
// execution of the op only one of them runs, so what the terminator passes
// on is not what `point` may have changed. (A later execution of the op, in
// a loop around it, is a later trip: the captured-value rule covers it.)
bool InSiblingBranch(const Operation* terminator, const Operation* point) {
  if (!terminator->is(OpCode::kScfYield)) return false;
  const Operation* op = terminator->parent_op();
  if (!op || !(op->is(OpCode::kScfIf) || op->is(OpCode::kScfIndexSwitch)) || point == op) return false;
  const Operation* a = point;
  while (a && a->parent_op() != op) a = a->parent_op();
  if (!a || !a->parent_block() || !terminator->parent_block()) return false;
  return a->parent_block()->parent() != terminator->parent_block()->parent();
}
}  // namespace

std::vector<ir::Value*> ContentAliases(ir::Value* v, const ir::Operation* skip_flows_at,
                                      const ir::Operation* exclusive_of) {
  std::vector<Value*> out;
  std::unordered_set<Value*> seen;
  auto add = [&](Value* x) {
    if (x && IsResourceOrTensor(x) && seen.insert(x).second) out.push_back(x);
  };
  add(v);
  for (size_t k = 0; k < out.size(); ++k) {
    Value* x = out[k];
    // What x is a view of.
    if (Operation* def = x->defining_op()) {
      const OpCode n = def->code();
      if (n == OpCode::kStreamTimepointAwait) {
        if (x->index() + 1 < def->num_operands()) add(def->operand(x->index() + 1));
      } else if (n == OpCode::kStreamAsyncSlice || n == OpCode::kStreamTensorImport ||
                 n == OpCode::kStreamTensorExport) {
        if (def->num_operands() > 0) add(def->operand(0));
      } else if (n == OpCode::kFuncCall) {
        // A callee may return its consumed argument; everything else it
        // returns is fresh storage (a borrowed argument is copied).
        for (unsigned i = 0; i < def->num_operands(); ++i)
          if (IsConsumedCallOperand(def, i)) add(def->operand(i));
      } else {
        int tied = TiedOperandOfResult(def, x->index());
        if (tied >= 0) add(def->operand(static_cast<unsigned>(tied)));
      }
    }
    // What views x, and where x is passed to.
    for (const ir::Use& u : x->uses()) {
      Operation* user = u.user;
      const OpCode n = user->code();
      if (n == OpCode::kStreamTimepointAwait) {
        if (u.operand_index >= 1) add(ResultOrNull(user, u.operand_index - 1));
      } else if (n == OpCode::kStreamAsyncSlice || n == OpCode::kStreamTensorImport ||
                 n == OpCode::kStreamTensorExport) {
        if (u.operand_index == 0) add(ResultOrNull(user, 0));
      } else if (n == OpCode::kFuncCall) {
        if (IsConsumedCallOperand(user, u.operand_index))
          for (Value* res : user->results()) add(res);
      }
      if (skip_flows_at && user == skip_flows_at && x == v) continue;
      if (exclusive_of && InSiblingBranch(user, exclusive_of)) continue;
      for (Value* t : FlowTargets(user, u.operand_index)) add(t);
    }
  }
  return out;
}

namespace {
// May x name bytes of a module global's buffer? Its storage root, followed
// back through tied ops, slices, awaits and flow edges, is a
// util.global.load (or something the analysis does not model). Otherwise x
// lives in storage the function owns or borrows (an argument, a constant, a
// fresh allocation, a call result), never the global's, and a store of x
// is a copy into the global's buffer (--materialize-edge-copies: "global
// store of a value that does not live in the global").
bool MayViewGlobal(Value* x, std::unordered_set<Value*>& seen) {
  if (!seen.insert(x).second) return false;  // a cycle adds no new root
  if (seen.size() > 256) return true;
  if (x->is_block_argument()) {
    Block* b = x->parent_block();
    Operation* owner = b->parent_op();
    if (owner && owner->is(OpCode::kFuncFunc) && b == owner->region(0)->block(0)) return false;
  } else {
    Operation* def = x->defining_op();
    const OpCode n = def->code();
    if (n == OpCode::kUtilGlobalLoad) return true;
    if (n == OpCode::kStreamTensorImport || n == OpCode::kStreamAsyncConstant) return false;
    if (n == OpCode::kFuncCall) {  // fresh storage, or a consumed operand handed back
      for (unsigned i = 0; i < def->num_operands(); ++i)
        if (IsConsumedCallOperand(def, i) && MayViewGlobal(def->operand(i), seen)) return true;
      return false;
    }
    if (n == OpCode::kStreamTimepointAwait)
      return x->index() + 1 >= def->num_operands() || MayViewGlobal(def->operand(x->index() + 1), seen);
    if (n == OpCode::kStreamAsyncSlice) return MayViewGlobal(def->operand(0), seen);
    const ir::OpInfo& traits = ir::Traits(def);
    if (traits.level == ir::OpLevel::kStream && traits.storage == ir::ResultStorage::kFresh &&
        traits.tie == ir::Tie::kNone)
      return false;
    if (traits.tie != ir::Tie::kNone) {
      int tied = TiedOperandOfResult(def, x->index());
      return tied >= 0 && MayViewGlobal(def->operand(static_cast<unsigned>(tied)), seen);
    }
    if (def->num_regions() == 0) return true;  // unknown aliasing
  }
  bool modelled = true;
  std::vector<FlowEdge> in = IncomingValues(x, &modelled);
  if (!modelled) return true;
  for (const FlowEdge& e : in)
    if (MayViewGlobal(e.value, seen)) return true;
  return false;
}
}  // namespace

Observer FindLaterObserver(ir::Value* v, ir::Operation* point, const ir::Operation* skip_flows_at) {
  std::vector<Value*> aliases = ContentAliases(v, skip_flows_at, point);
  // A store of a value that may live in the global's buffer escapes: later
  // loads of the global view those bytes. Any other store copies the value
  // into the global's buffer where it runs: a read there, like any use
  // (differential seed 44163).
  auto escapes_at_store = [](Value* x) {
    std::unordered_set<Value*> seen;
    return MayViewGlobal(x, seen);
  };
  for (Value* x : aliases)
    for (const ir::Use& u : x->uses())
      if ((u.user->is(OpCode::kUtilGlobalStore) && escapes_at_store(x)) ||
          (u.user->is(OpCode::kFuncCall) && IsConsumedCallOperand(u.user, u.operand_index)))
        return Observer{Observer::Kind::kEscape, u.user, nullptr};
  for (Value* x : aliases)
    if (Observer o = LaterUseOf(x, point)) return o;
  return Observer{};
}

std::string DescribeOp(const ir::Operation* op) {
  if (!op) return "'?'";
  std::string s = "'" + op->name() + "'";
  if (!op->loc().empty()) s += " (" + op->loc() + ")";
  return s;
}

// ---------------------------------------------------------------------------
// Ownership and the shared query
// ---------------------------------------------------------------------------
Verdict StorageOwnership(ir::Value* v) {
  std::unordered_set<Value*> visiting;
  return Ownership(v, visiting, 0);
}

Verdict CanReuseStorage(ir::Operation* user, unsigned operand) {
  Value* v = user->operand(operand);
  if (!IsResource(v)) return No("source is not a resource");
  for (unsigned j = 0; j < user->num_operands(); ++j)
    if (j != operand && user->operand(j) == v) return No("source is also read by the same op");
  // Reasons in order of directness: storage that is never the function's
  // (a borrowed import, constant, ...), then a later observer, then storage
  // that arrives through a branch / region edge whose value is live.
  Verdict own = StorageOwnership(v);
  bool flow_target = v->is_block_argument() || v->defining_op()->num_regions() > 0;
  if (!own.ok && !flow_target) return own;
  Observer obs = FindLaterObserver(v, user);
  if (!obs) return own;
  switch (obs.kind) {
    case Observer::Kind::kLaterTrip:
      return No("source is captured by a loop region (" + ObserverText(obs) + ")");
    case Observer::Kind::kEscape:
      return No("source escapes: " + ObserverText(obs));
    default:
      return No("source is " + ObserverText(obs));
  }
}

}  // namespace kiln::analysis
