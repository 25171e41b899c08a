// Pass: --resource-lifetime
//
// Compile-time resource lifetime (DESIGN.md "Dealloca", issue 4 item 1). At
// the stream level, after copy elision, every resource the function owns is
// either freed by a queue-ordered `stream.resource.dealloca(%root, %tp)` right
// after its last use, or, when it escapes, handed to the runtime's refcount
// with `stream.resource.retain`.
//
// Roots (storage the function owns and must free):
//  - untied results of stream.async.dispatch, and the results of
//    stream.async.clone / alloca / splat / transfer (transients);
//  - stream.tensor.import with consume = true and func.func resource arguments
//    marked "consume" in arg_ownership (the callee owns them);
//  - func.call results (fresh external storage the callee hands the caller);
//  - a *merged root*: a result of scf.if / scf.index_switch /
//    stream.async.execute that receives, on every region, a root defined in
//    that region and handed over through its yield (the region roots are then
//    freed through the merged value, never inside their region).
// Never freed: borrowed imports, other function arguments, constants, global
// loads.
//
// Storage aliases of a root (followed forward from it): tied results
// (dispatch tied_operands, update/copy/fill target), stream.async.slice
// results, stream.timepoint.await results, and every flow target
// (analysis::FlowTargets: branch/yield/loop init/execute capture and yield).
//
// Escapes: an alias used by stream.tensor.export, func.return,
// util.global.store or passed to a `consume` parameter of func.call (a
// borrowed call operand is an ordinary read). A slice alias that escapes keeps its parent
// alive: the root (the parent) is what is retained.
//
// Placement rules (root defined in block B; "touching" op = one that uses or
// defines an alias, or encloses such an op; inserted stream.resource.* ops
// never count):
//  1. L = the last op of B after the root's definition that touches it.
//     No L: free right after the definition (at B's start for an argument).
//  2. L is scf.if / scf.index_switch and none of its results is an alias:
//     apply rule 1 recursively in every region, so each branch frees the
//     root where it is last used there, and a branch that never uses it
//     frees it on entry (an empty else region of a result-less scf.if gets a
//     block). Deallocas are always unconditional: no runtime decision left.
//  3. L is scf.for / scf.while (root defined outside): free after the loop.
//     A root defined inside a loop body and not carried is freed inside the
//     body, after its last use there (each trip).
//  4. Otherwise free right after L. The timepoint is the one of that last
//     use: L's timepoint result when L is stream.async.execute, the awaited
//     timepoint when L is stream.timepoint.await, else a new
//     `stream.timepoint.immediate` (the runtime orders the dealloca on the
//     queue after the work already submitted, i.e. after that last use).
//  5. L is the yield of an scf.if / index_switch / execute region: the root
//     is handed over to that op's result (see merged roots). Any other
//     terminator (cf branches, a loop yield: loop-carried storage) is not
//     decided at compile time: nothing is emitted and a remark says why.
//  Escaping roots get no dealloca. Before each escaping use, one
//  `stream.resource.retain(%root)` per escaping operand (for a slice or a
//  tied result that escapes, the root is the parent that stays alive): the
//  receiver takes a runtime reference. Escapes after the root was handed
//  over (rule 5) belong to the merged root. The function's own (compile-time) ownership then ends at the
//  local last use (rules 1-4, placed the same way as a dealloca): when an
//  escape runs on every path (not nested in scf.if / index_switch / a loop
//  relative to the root's block) nothing more is emitted; when every escape
//  is conditional, `stream.resource.release(%root)` is emitted there. Release
//  means "the function drops its ownership": if no escape retained the
//  resource on this path it is freed after its last queued use, otherwise
//  the escaped references keep it alive.
//
// Remarks (kiln-opt --remarks): "lifetime not decided at compile time: ..."
// for each root left to the runtime.
//
// Preconditions: stream level, after --elide-async-copies (and, normally,
// before --schedule-execution, though execute regions are handled). In the
// default pipeline after the elision passes. The emitter
// (compiler/backend/) lowers the result: a dealloca ends a
// transient's lifetime in the arena plan (and a use after it is an emitter
// error); a dealloca or release of a consumed argument that keeps the
// caller's allocation drops its registers, so the runtime frees it once the
// command buffers that use it retire; retain needs nothing (the escaping use
// takes its own reference).
#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::Block;
using ir::Operation;
using ir::Region;
using ir::Value;

bool IsLifetimeOp(const Operation* op) { return ir::Traits(op).has(ir::kLifetime); }

// A use that hands the storage to someone else: an export/return, a global
// store, or a `consume` parameter of a call (ownership moves to the callee).
// A borrowed call operand is only read by the callee: an ordinary use.
bool IsEscapeUse(const Operation* op, unsigned operand) {
  return op->is(ir::OpCode::kStreamTensorExport) || op->is(ir::OpCode::kFuncReturn) ||
         op->is(ir::OpCode::kUtilGlobalStore) || analysis::IsConsumedCallOperand(op, operand);
}

bool IsConditionalOp(const Operation* op) {
  return op->is(ir::OpCode::kScfIf) || op->is(ir::OpCode::kScfIndexSwitch) || analysis::IsLoopOp(op);
}

bool IsMergeOp(const Operation* op) {
  return op->is(ir::OpCode::kScfIf) || op->is(ir::OpCode::kScfIndexSwitch) ||
         op->is(ir::OpCode::kStreamAsyncExecute);
}

// A value the function creates or is handed ownership of (see header).
bool IsFreshRoot(Value* v) {
  if (!analysis::IsResource(v)) return false;
  if (v->is_block_argument()) {
    Block* b = v->parent_block();
    Operation* owner = b->parent_op();
    if (!owner || !owner->is(ir::OpCode::kFuncFunc) || b != owner->region(0)->block(0)) return false;
    std::vector<std::string> own = owner->strs_attr("arg_ownership");
    return v->index() < own.size() && own[v->index()] == "consume";
  }
  Operation* def = v->defining_op();
  // A new allocation: clone, alloca, splat, transfer, an untied dispatch
  // result (ops.def ResultStorage::kFresh at the stream level, untied).
  if (ir::Traits(def).level == ir::OpLevel::kStream && ir::AllocatesFresh(*def, v->index())) return true;
  if (def->is(ir::OpCode::kStreamTensorImport)) return def->bool_attr("consume");
  if (def->is(ir::OpCode::kFuncCall)) return true;  // the callee's result: the caller holds it
  return false;
}

// Values sharing the root's storage, followed forward (root first).
std::vector<Value*> StorageAliases(Value* root) {
  std::vector<Value*> out{root};
  std::unordered_set<Value*> seen{root};
  auto add = [&](Value* x) {
    if (x && analysis::IsResource(x) && seen.insert(x).second) out.push_back(x);
  };
  for (size_t k = 0; k < out.size(); ++k) {
    Value* x = out[k];
    for (const ir::Use& u : x->uses()) {
      Operation* user = u.user;
      if (user->is(ir::OpCode::kStreamTimepointAwait)) {
        if (u.operand_index >= 1 && u.operand_index - 1 < user->num_results())
          add(user->result(u.operand_index - 1));
      } else if (user->is(ir::OpCode::kStreamAsyncSlice)) {
        if (u.operand_index == 0 && user->num_results() > 0) add(user->result(0));
      }
      for (unsigned i = 0; i < user->num_results(); ++i)
        if (analysis::TiedOperandOfResult(user, i) == static_cast<int>(u.operand_index))
          add(user->result(i));
      for (Value* t : analysis::FlowTargets(user, u.operand_index)) add(t);
    }
  }
  return out;
}

bool IsAncestorOrSelf(const Operation* ancestor, const Operation* op) {
  for (const Operation* o = op; o; o = o->parent_op())
    if (o == ancestor) return true;
  return false;
}

// Is `op` inside block `b` (directly or nested)?
bool IsWithinBlock(const Operation* op, const Block* b) {
  for (const Operation* o = op; o; o = o->parent_op())
    if (o->parent_block() == b) return true;
  return false;
}

struct Lifetime {
  Value* root = nullptr;
  Block* block = nullptr;        // where the root is defined
  Operation* def = nullptr;      // its defining op (nullptr for an argument)
  std::vector<Value*> aliases;
  std::unordered_set<Value*> alias_set;
  std::unordered_set<const Operation*> touching;
};

Lifetime Analyze(Value* root) {
  Lifetime lt;
  lt.root = root;
  lt.def = root->defining_op();
  lt.block = root->parent_block();
  lt.aliases = StorageAliases(root);
  lt.alias_set.insert(lt.aliases.begin(), lt.aliases.end());
  for (Value* x : lt.aliases) {
    for (const ir::Use& u : x->uses()) {
      if (IsLifetimeOp(u.user)) continue;
      for (const Operation* o = u.user; o; o = o->parent_op()) lt.touching.insert(o);
    }
    if (Operation* d = x->defining_op())
      for (const Operation* o = d; o; o = o->parent_op()) lt.touching.insert(o);
  }
  return lt;
}

// Where one dealloca / release goes.
struct Placement {
  Block* block = nullptr;
  Operation* after = nullptr;  // nullptr: at the start of `block`
  Region* empty_region = nullptr;  // set: create the region's block first
  Value* timepoint = nullptr;  // nullptr: a new stream.timepoint.immediate
};

// Pre-order position of every op of a function before any lifetime op is
// inserted; within one block it is the block order. Inserted ops have none
// (they touch no other root).
using OpOrder = std::unordered_map<const Operation*, int64_t>;

struct PlanResult {
  bool ok = false;
  Operation* handover = nullptr;  // the yield the root leaves its region through
  std::string why;
};

// Rules 1-5 of the header for block `b`; `def` is the root's defining op when
// it lives in `b` (only ops after it are looked at).
PlanResult Plan(Block* b, Operation* def, const Lifetime& lt, const OpOrder& order,
                std::vector<Placement>* out) {
  PlanResult r;
  // The last touching op of `b` after `def`: a maximum over the touching set,
  // not a walk of the block (a block with N roots would cost O(N^2)).
  Operation* last = nullptr;
  int64_t after = def ? order.at(def) : -1, last_pos = -1;
  for (const Operation* t : lt.touching) {
    if (t->parent_block() != b) continue;
    auto it = order.find(t);
    if (it == order.end() || it->second <= after || it->second <= last_pos) continue;
    last_pos = it->second;
    last = const_cast<Operation*>(t);
  }
  if (!last) {
    out->push_back(Placement{b, def, nullptr, nullptr});
    r.ok = true;
    return r;
  }
  if (last->is(ir::OpCode::kFuncReturn)) {  // an escape: end local ownership before it
    out->push_back(Placement{b, last->prev_op(), nullptr, nullptr});
    r.ok = true;
    return r;
  }
  if (last == b->terminator() && last->num_regions() == 0) {
    Operation* parent = last->parent_op();
    if ((last->is(ir::OpCode::kScfYield) || last->is(ir::OpCode::kStreamYield)) && parent && IsMergeOp(parent)) {
      r.handover = last;
      r.why = "handed over to the result of " + analysis::DescribeOp(parent);
      return r;
    }
    if (last->is(ir::OpCode::kScfYield) || last->is(ir::OpCode::kScfCondition))
      r.why = "loop-carried through " + analysis::DescribeOp(parent);
    else
      r.why = "flows through " + analysis::DescribeOp(last) + " (unstructured control flow)";
    return r;
  }
  if (last->is(ir::OpCode::kScfIf) || last->is(ir::OpCode::kScfIndexSwitch)) {
    bool result_alias = false;
    for (Value* res : last->results()) result_alias = result_alias || lt.alias_set.count(res);
    if (!result_alias) {
      for (unsigned i = 0; i < last->num_regions(); ++i) {
        Region* region = last->region(i);
        if (region->empty()) {
          if (last->num_results() != 0) {
            r.why = "an empty region of " + analysis::DescribeOp(last);
            return r;
          }
          out->push_back(Placement{nullptr, nullptr, region, nullptr});
          continue;
        }
        if (region->num_blocks() != 1) {
          r.why = "a multi-block region of " + analysis::DescribeOp(last);
          return r;
        }
        PlanResult sub = Plan(region->block(0), nullptr, lt, order, out);
        if (!sub.ok) return sub;
      }
      r.ok = true;
      return r;
    }
  }
  Value* tp = nullptr;
  if (last->is(ir::OpCode::kStreamAsyncExecute) && last->num_results() > 0)
    tp = last->result(last->num_results() - 1);
  else if (last->is(ir::OpCode::kStreamTimepointAwait) && last->num_operands() > 0)
    tp = last->operand(0);
  out->push_back(Placement{b, last, nullptr, tp});
  r.ok = true;
  return r;
}

void Apply(const Placement& p, Value* root, bool release) {
  Block* blk = p.block;
  Operation* before = nullptr;
  if (p.empty_region) {
    if (p.empty_region->empty()) {
      blk = p.empty_region->AddBlock();
      blk->Append(Operation::Create("scf.yield", {}, {}));
    }
    blk = p.empty_region->block(0);
    before = blk->ops().front().get();
  } else if (!p.after) {
    before = blk->ops().empty() ? nullptr : blk->ops().front().get();
  } else {
    before = p.after->next_op();
  }
  ir::Builder b = before ? ir::Builder::Before(before) : ir::Builder::AtEnd(blk);
  if (release) {
    b.Create("stream.resource.release", {root}, {});
    return;
  }
  Value* tp = p.timepoint;
  if (!tp) tp = b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()})->result(0);
  b.Create("stream.resource.dealloca", {root, tp}, {});
}

// May `x` (an alias of lt.root) hold other storage than the root's on some
// path: it, or an alias it derives from, is a flow target with an incoming
// value that is not an alias (e.g. an scf.if whose other branch yields another
// buffer, a loop whose body carries a fresh buffer).
bool IsMerged(Value* x, const Lifetime& lt) {
  std::vector<Value*> work{x};
  std::unordered_set<Value*> seen{x};
  while (!work.empty()) {
    Value* v = work.back();
    work.pop_back();
    if (v == lt.root) continue;
    bool modelled = true;
    std::vector<analysis::FlowEdge> in;
    if (v->is_block_argument() || v->defining_op()->num_regions() > 0)
      in = analysis::IncomingValues(v, &modelled);
    if (!modelled) return true;
    for (const analysis::FlowEdge& e : in) {
      if (!lt.alias_set.count(e.value)) return true;
      if (seen.insert(e.value).second) work.push_back(e.value);
    }
    if (Operation* d = v->defining_op()) {  // views and tied results: their source
      std::vector<Value*> srcs;
      if (d->is(ir::OpCode::kStreamTimepointAwait) && v->index() + 1 < d->num_operands())
        srcs.push_back(d->operand(v->index() + 1));
      if (d->is(ir::OpCode::kStreamAsyncSlice) && d->num_operands() > 0) srcs.push_back(d->operand(0));
      int tied = analysis::TiedOperandOfResult(d, v->index());
      if (tied >= 0) srcs.push_back(d->operand(static_cast<unsigned>(tied)));
      for (Value* s : srcs)
        if (lt.alias_set.count(s) && seen.insert(s).second) work.push_back(s);
    }
  }
  return false;
}

class ResourceLifetimePass : public ir::Pass {
 public:
  const char* flag() const override { return "resource-lifetime"; }
  const char* description() const override {
    return "Queue-ordered dealloca at the last use of owned transients; retain/release where "
           "resources escape";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (Operation* func : module.functions()) {
      if (func->num_regions() == 0 || func->region(0)->empty()) continue;
      retained_.clear();
      handed_.clear();
      std::vector<Value*> roots;
      std::vector<Operation*> merge_ops;
      order_.clear();
      func->Walk([&](Operation* op) { order_.emplace(op, static_cast<int64_t>(order_.size())); });
      for (Value* a : func->region(0)->block(0)->arguments())
        if (IsFreshRoot(a)) roots.push_back(a);
      func->Walk([&](Operation* op) {
        if (op == func) return;
        for (Value* v : op->results())
          if (IsFreshRoot(v)) roots.push_back(v);
        if (IsMergeOp(op)) merge_ops.push_back(op);
      });
      for (Value* root : roots) Process(root, ctx);
      // Merged roots, innermost first (Walk is pre-order).
      for (auto it = merge_ops.rbegin(); it != merge_ops.rend(); ++it) {
        Operation* op = *it;
        for (unsigned i = 0; i < op->num_results(); ++i) {
          Value* res = op->result(i);
          if (!analysis::IsResource(res)) continue;
          bool any = false, all = op->num_regions() > 0;
          for (unsigned k = 0; k < op->num_regions(); ++k) {
            Region* region = op->region(k);
            Operation* y = region->empty() ? nullptr : region->block(0)->terminator();
            bool h = y && handed_.count({y, i});
            any = any || h;
            all = all && h;
          }
          if (all) {
            Process(res, ctx);
          } else if (any) {
            ctx.Remark(op, "lifetime not decided at compile time: result #" + std::to_string(i) +
                               " merges a transient with storage the function does not own");
          }
        }
      }
    }
    return OkStatus();
  }

 private:
  void Process(Value* root, ir::PassContext& ctx) {
    Lifetime lt = Analyze(root);
    Operation* where = root->defining_op() ? root->defining_op() : root->parent_block()->parent_op();
    // Loop-carried storage: an alias is an argument or result of a loop that
    // encloses the root's definition.
    for (Value* x : lt.aliases) {
      Operation* loop = x->is_block_argument() ? x->parent_block()->parent_op() : x->defining_op();
      if (x != root && analysis::IsLoopOp(loop) && IsAncestorOrSelf(loop, where) && loop != where) {
        ctx.Remark(where, "lifetime not decided at compile time: loop-carried through " +
                              analysis::DescribeOp(loop));
        return;
      }
    }
    // Escapes in the root's scope (an alias used after it left its block
    // through a yield is the merged root's business).
    struct Escape { Operation* op; unsigned operand; Value* value; };
    std::vector<Escape> escapes;
    bool unconditional = false;
    for (Value* x : lt.aliases) {
      for (const ir::Use& u : x->uses()) {
        Operation* e = u.user;
        if (!IsEscapeUse(e, u.operand_index) || !IsWithinBlock(e, lt.block)) continue;
        escapes.push_back(Escape{e, u.operand_index, x});
        bool cond = false;
        for (const Operation* o = e; o->parent_block() != lt.block;) {
          o = o->parent_op();
          cond = cond || IsConditionalOp(o);
        }
        unconditional = unconditional || !cond;
      }
    }
    for (const Escape& e : escapes)
      if (IsMerged(e.value, lt)) {
        ctx.Remark(where, "lifetime not decided at compile time: escapes through " +
                              analysis::DescribeOp(e.op) +
                              " as a value merged with other storage (a branch or loop result)");
        return;
      }
    std::vector<Placement> placements;
    PlanResult r = Plan(lt.block, lt.def, lt, order_, &placements);
    for (const Escape& e : escapes)
      if (retained_.insert({e.op, e.operand}).second)
        ir::Builder::Before(e.op).Create("stream.resource.retain", {root}, {});
    if (!escapes.empty() && unconditional) return;
    if (!r.ok) {
      if (r.handover && escapes.empty()) {
        for (unsigned j = 0; j < r.handover->num_operands(); ++j)
          if (lt.alias_set.count(r.handover->operand(j))) handed_.insert({r.handover, j});
        return;
      }
      ctx.Remark(where, "lifetime not decided at compile time: " + r.why);
      return;
    }
    for (const Placement& p : placements) Apply(p, root, /*release=*/!escapes.empty());
  }

  OpOrder order_;
  std::set<std::pair<const Operation*, unsigned>> retained_;  // (escape op, operand)
  std::set<std::pair<const Operation*, unsigned>> handed_;    // (yield, operand)
};

}  // namespace

std::unique_ptr<ir::Pass> CreateResourceLifetimePass() {
  return std::make_unique<ResourceLifetimePass>();
}

}  // namespace kiln::transforms
