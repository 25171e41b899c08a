// Pass: --elide-async-copies
//
// Removes every `%c = "stream.async.clone"(%s)` that is provably the last use
// of %s: %c is replaced by %s and the clone is erased, so whoever wrote into
// the copy (a tied op made safe by --materialize-copy-on-write) now updates
// %s in place. The decision is analysis::CanReuseStorage
// (compiler/analysis/resource_usage.h), which follows values through branch
// block arguments (cf.br / cf.cond_br), into and out of scf.if /
// scf.index_switch / scf.for / scf.while regions, through captured values and
// loop-carried values, and through aliases (await, slice, call, import/export).
// A clone is removed when both hold:
//  1. %s's storage is owned by the function: a value the function created
//     (clone, alloca, splat, transfer, untied dispatch result, tied results of
//     those), an import with consume = true, a func.func argument marked
//     "consume", or a block argument / region result whose every incoming
//     value is owned, is passed once and is dead after its edge. The key case
//     is a loop-carried value: an scf.for iter_arg whose initial value is not
//     used after the loop and whose next value is the tied result of this
//     trip; its copy is removed and the loop updates in place with no copy per
//     trip.
//  2. nothing observes %s's contents after the clone: no later use in program
//     order, in reachable branch successors, after the enclosing scf op, or in
//     a later loop trip when %s is defined outside the loop (a captured
//     value); it is not stored to a global nor passed to a call. A use in a
//     sibling branch of the same scf.if / index_switch is not "later".
// Otherwise the clone is kept and the pass writes a remark on it
// (PassContext::Remark, `kiln-opt --remarks`, `kiln-compile
// --explain-copies`): "kept copy: <reason>", e.g.
//   kept copy: source is a borrowed import
//   kept copy: source is used later by 'stream.async.dispatch' (loc)
//   kept copy: source is loop-carried and live after the loop (...)
//   kept copy: source is captured by a loop region (...)
//   kept copy: source is a constant / a global load / a function argument
//     (borrowed) / a call result
// A clone whose result is unused is simply erased. The others are visited
// in program order and each decision is taken on the IR as rewritten so far,
// so removing one clone can never make another removal unsafe. A clone whose
// result type differs from its source's (a lifetime change) is removed only
// when no branch, yield or return uses it, since those must keep their
// types; otherwise it is kept with a remark.
//
// One exception to "a global load is not owned": a state update in place.
// A clone of `%g = util.global.load @S` is removed when every other read of
// %g comes before the clone in its block, the clone's result is written only by a chain of tied ops (each
// value of the chain used once, by the next tied op) whose last result is
// stored back with `util.global.store @S`, all in %g's block, and between the
// load and that store nothing else loads or stores @S or calls a function.
// The emitter views %g as the global's buffer, so the tied ops update the
// state in place and the store copies nothing (zero copies per call).
//
// Must not act (each tested): a source used later, a borrowed import, a
// constant, a global load (except the state update above: not when the
// result is stored to another global, read elsewhere, or @S is touched in
// between), a loop-carried value whose initial value stays live after the
// loop, a value captured by a loop and updated in its body.
//
// Preconditions: stream level; normally runs right after
// --materialize-copy-on-write (DESIGN.md "Data flow").
//
// Before:
//   %r = "scf.for"(%lb, %ub, %step, %init) ({
//   ^bb0(%iv: index, %it: !stream.resource<transient>):
//     %c = "stream.async.clone"(%it) {size = 16 : i64} ...
//     %u = "stream.async.dispatch"(%c) {entry = @step, sizes = [16], tied_operands = [0]} ...
//     "scf.yield"(%u) ...
//   }) ...
//   (%init has no use after the loop)
// After:
//   %r = "scf.for"(%lb, %ub, %step, %init) ({
//   ^bb0(%iv: index, %it: !stream.resource<transient>):
//     %u = "stream.async.dispatch"(%it) {entry = @step, sizes = [16], tied_operands = [0]} ...
//     "scf.yield"(%u) ...
//   }) ...
#include <algorithm>
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// A terminator using `v` (its operand types must match a block argument, a
// region result or the function signature), or nullptr.
const ir::Operation* FeedsTypedEdge(const ir::Value* v) {
  for (const ir::Use& u : v->uses()) {
    const ir::Operation* t = u.user;
    if (t->parent_block() && t->parent_block()->terminator() == t) return t;
  }
  return nullptr;
}

// The state-update exception (header comment): true when `clone` copies a
// util.global.load @S whose result is only updated in place by tied ops and
// stored back to @S, with nothing else touching @S in between.
bool IsGlobalStateUpdate(ir::Operation* clone) {
  ir::Value* src = clone->operand(0);
  ir::Operation* load = src->defining_op();
  if (!load || !load->is("util.global.load")) return false;
  const std::string sym = load->str_attr("global");
  ir::Block* block = load->parent_block();
  if (clone->parent_block() != block) return false;
  // Every other read of the loaded value comes before the clone in its block.
  for (const ir::Use& u : src->uses()) {
    if (u.user == clone) continue;
    ir::Operation* anc = u.user;
    while (anc && anc->parent_block() != block) anc = anc->parent_op();
    if (!anc) return false;
    bool before = false;
    for (auto& owned : block->ops()) {
      if (owned.get() == anc) { before = true; break; }
      if (owned.get() == clone) break;
    }
    if (!before) return false;
  }
  ir::Value* v = clone->result(0);
  ir::Operation* store = nullptr;
  for (int depth = 0; depth < 1024 && !store; ++depth) {
    if (v->uses().size() != 1) return false;
    ir::Operation* user = v->uses()[0].user;
    if (user->parent_block() != block) return false;
    if (user->is("util.global.store")) {
      if (user->str_attr("global") != sym) return false;
      store = user;
      break;
    }
    ir::Value* next = nullptr;
    for (unsigned r = 0; r < user->num_results(); ++r) {
      int t = analysis::TiedOperandOfResult(user, r);
      if (t >= 0 && user->operand(static_cast<unsigned>(t)) == v) next = user->result(r);
    }
    if (!next) return false;  // read without being written in place
    v = next;
  }
  if (!store) return false;
  bool between = false;
  for (auto& owned : block->ops()) {
    ir::Operation* op = owned.get();
    if (op == load) {
      between = true;
      continue;
    }
    if (op == store) break;
    if (!between) continue;
    bool touches = false;
    op->Walk([&](ir::Operation* inner) {
      if ((inner->is("util.global.load") || inner->is("util.global.store")) && inner->str_attr("global") == sym)
        touches = true;
      if (inner->is("func.call")) touches = true;
    });
    if (touches) return false;
  }
  return true;
}

class ElideAsyncCopiesPass : public ir::Pass {
 public:
  const char* flag() const override { return "elide-async-copies"; }
  const char* description() const override {
    return "Remove stream.async.clone ops whose source is owned and not used afterwards";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Operation*> clones;
      func->Walk([&](ir::Operation* op) {
        if (op->is("stream.async.clone")) clones.push_back(op);
      });
      // Copies nobody reads go first (latest first, so a clone of a dead
      // clone goes too): a dead copy must not make its source look live to
      // an earlier clone.
      std::vector<ir::Operation*> live;
      for (auto it = clones.rbegin(); it != clones.rend(); ++it) {
        ir::Operation* clone = *it;
        bool dead = true;
        for (ir::Value* r : clone->results()) dead = dead && r->use_empty();
        if (dead) {
          clone->Erase();
        } else {
          live.push_back(clone);
        }
      }
      std::reverse(live.begin(), live.end());  // back to program order
      for (ir::Operation* clone : live) {
        if (clone->num_operands() != 1 || clone->num_results() != 1) {
          ctx.Remark(clone, "kept copy: malformed clone (expects one operand and one result)");
          continue;
        }
        ir::Value* src = clone->operand(0);
        ir::Value* copy = clone->result(0);
        if (src->type() != copy->type() && FeedsTypedEdge(copy)) {
          // Branch / yield / return operand types must match their targets.
          ctx.Remark(clone, "kept copy: the copy changes the type (" + src->type().ToString() +
                                " -> " + copy->type().ToString() + ") and flows into '" +
                                FeedsTypedEdge(copy)->name() + "'");
          continue;
        }
        analysis::Verdict v = analysis::CanReuseStorage(clone, 0);
        if (!v.ok && IsGlobalStateUpdate(clone)) v = analysis::Verdict{true, ""};
        if (!v.ok) {
          ctx.Remark(clone, "kept copy: " + v.reason);
          continue;
        }
        clone->result(0)->ReplaceAllUsesWith(clone->operand(0));
        clone->Erase();
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateElideAsyncCopiesPass() {
  return std::make_unique<ElideAsyncCopiesPass>();
}

}  // namespace kiln::transforms
