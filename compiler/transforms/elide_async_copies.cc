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
//   kept copy: removing it would only move the copy to the yield into the
//     region's result (RemovalMovesCopyToYield: a consumed import's copy,
//     updated in place and yielded by an scf.if / index_switch whose result
//     would not live in the import's storage, as --schedule-allocation's
//     coalescing rule says on a trial removal: another region yields another
//     value, the op is nested in another region, the function has branches
//     between blocks, or the import is read after the op)
// Hoisting the copy of a loop's initial value. A clone of a loop-carried
// value (an scf.for iter_arg, an scf.while "before" argument or the "after"
// argument it forwards, the argument of a block a cf back edge reaches, or
// a block argument forwarding one of those) that cannot go only because of
// the loop's initial value (a borrowed import, a constant, a global load, a
// value still read after the loop) would copy on every trip. The pass then
// tries a copy of the initial value on the loop's entry edge instead: a new
// `stream.async.clone` right before the scf.for / scf.while (its init
// operand) or before the branch entering the cf loop. If the analysis then
// lets the in-body clone go (the loop owns its carried value), the in-body
// clone is removed: one copy in total instead of one per trip. Levels are
// tried outermost first (nested loops carrying the value down copy it once,
// before the outer loop). The trial is checked with the same query as any
// other clone and undone when it does not help, so the in-body copy stays
// when the carried value is read after the tied op in the same trip, or the
// yield may pass back a value the loop does not own (a captured value, a
// borrowed import, the init itself). The hoisted copy's remark gives the
// original reason and says it is the copy of a loop's initial value; a
// later run of the pass (the pipeline runs it twice, --explain-copies a
// third time) keeps it with the same remark and adds nothing: the hoisted
// copy's source is exactly what made the in-body copy necessary.
//
// A clone whose result is unused is simply erased. The others are visited
// in program order and each decision is taken on the IR as rewritten so far,
// so removing one clone can never make another removal unsafe. A clone whose
// result type differs from its source's (a lifetime change) is removed only
// when no branch, yield or return uses it, since those must keep their
// types; otherwise it is kept with a remark.
//
// One exception to "a global load is not owned": a state update in place.
// A clone of `%g = util.global.load @S` is removed when nothing observes %g
// after the clone (analysis::FindLaterObserver: %g and every content alias of
// it, i.e. slices, awaits, values it flows into, captures in regions; a view
// read after the update would see the new state), the clone's result is
// written only by a chain of tied ops (each
// value of the chain used once, by the next tied op) whose last result is
// stored back with `util.global.store @S`, all in %g's block, and between the
// load and that store nothing else loads or stores @S or calls a function.
// The emitter views %g as the global's buffer, so the tied ops update the
// state in place and the store copies nothing (zero copies per call).
//
// A read-only copy goes too, even when its source is still used or is not
// the function's: when neither the copy nor its source is ever written in
// place after it holds its contents (no tied use of any content alias of
// either, other than the writes that produced the source; not a global's
// value, not stored to a global), sharing one buffer cannot be observed
// (IREE's rule for immutable clones). E.g. a clone of a borrowed import
// read by two dispatches, or two clones of one splat. Only a copy of the
// same type (a lifetime change stays: its result may feed an edge whose
// types must match, such as a loop's init).
//
// A copy that would stay (and is not a loop's initial value, hoisted
// instead) and whose source is a stream.async.constant whose bytes
// repeat one 32-bit pattern becomes a stream.async.splat of that pattern
// (the constant written straight into the mutable storage: a fill, no copy;
// IREE's clones of splat constants). Other constants keep their copy (an
// upload from the constant pool costs what the copy does).
//
// A copy written in place by a one-result dispatch that also reads the
// copy's source (or a full-size view of it) through another operand goes
// when the dispatch body is elementwise at one index and nothing else
// observes the source afterwards (IREE's dispatch_aliased_buffer; the rule
// and its must-not-act cases are in aliased_dispatch_read.h).
//
// Must not act (each tested): a source used later, a borrowed import, a
// constant, a global load (except the state update above: not when the
// result is stored to another global, read elsewhere, or @S is touched in
// between), a value captured by a loop and updated in its body. Hoisted
// rather than removed (each tested): a loop-carried value whose initial
// value stays live after the loop or is borrowed (scf.for, scf.while, cf
// loops, nested loops); not hoisted: a carried value read after the tied op
// in the same trip, a yield passing a captured value.
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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/resource_values.h"
#include "compiler/analysis/resource_usage.h"
#include "compiler/transforms/aliased_dispatch_read.h"
#include "compiler/transforms/region_coalescing.h"
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
  if (!load || !load->is(ir::OpCode::kUtilGlobalLoad)) return false;
  const std::string sym = load->str_attr("global");
  ir::Block* block = load->parent_block();
  if (clone->parent_block() != block) return false;
  // Nothing reads the loaded contents after the clone: no later use of %g or
  // of any of its content aliases (slices, awaits, block arguments and region
  // results it flows into, values captured by regions), and %g does not
  // escape (stored elsewhere, passed to a call). After the rewrite the tied
  // chain writes the global's buffer, which every such alias views.
  if (analysis::FindLaterObserver(src, clone)) return false;
  ir::Value* v = clone->result(0);
  ir::Operation* store = nullptr;
  for (int depth = 0; depth < 1024 && !store; ++depth) {
    if (v->uses().size() != 1) return false;
    ir::Operation* user = v->uses()[0].user;
    if (user->parent_block() != block) return false;
    if (user->is(ir::OpCode::kUtilGlobalStore)) {
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
      if ((inner->is(ir::OpCode::kUtilGlobalLoad) || inner->is(ir::OpCode::kUtilGlobalStore)) &&
          inner->str_attr("global") == sym)
        touches = true;
      if (inner->is(ir::OpCode::kFuncCall)) touches = true;
    });
    if (touches) return false;
  }
  return true;
}

// Whether removing `clone` would only move its copy to a region's yield,
// and make the runtime take a consumed argument as well: its source is a
// consumed import, the copy is written in place by a chain of tied ops (each
// value used once, by the next) in the clone's block that ends in that
// block's scf.yield of an scf.if / scf.index_switch, and the op's result
// would not live in the import's storage once the clone is gone. That is
// asked of the rule --schedule-allocation applies (region_coalescing.h
// ValuesInConsumedImports), on the IR with the clone's one use rewritten to
// its source and restored after: it shares the import's storage only with a
// result of an scf op of the import's own block (not one nested in another
// region), in a function of one block, whose every region yields the import
// or an in-place update of it, and when nothing reads the import after the
// op. Kept, the clone is a fresh value the region yields, written straight
// into the result's storage (FreshRootYielded): one copy, no take. Removed,
// the chain updates the import in place (a take, which copies when the
// caller still shares the buffer) and the yield copies it into the result:
// the same copy plus, possibly, another (differential seeds 30115: another
// region yields another value; 31547: the scf.if is nested in another
// one). On true, *why says why the result cannot share the storage.
// The source may also be the result of a loop whose carried storage is the
// import's (ValuesInConsumedImports: the loop takes the import before its
// first trip), e.g. a zero-trip scf.while over it: the same holds of it
// (differential seed 43190).
bool RemovalMovesCopyToYield(ir::Operation* clone, std::string* why) {
  ir::Value* src = clone->operand(0);
  ir::Operation* imp = src->is_block_argument() ? nullptr : src->defining_op();
  ir::Value* import_value = src;  // the consumed import whose storage src lives in
  if (imp && (imp->is(ir::OpCode::kScfWhile) || imp->is(ir::OpCode::kScfFor)) && imp->parent_block()) {
    std::map<ir::Value*, ir::Value*> carried = ValuesInConsumedImports(imp->parent_block());
    auto it = carried.find(src);
    if (it == carried.end()) return false;
    import_value = it->second;
    imp = import_value->is_block_argument() ? nullptr : import_value->defining_op();
  }
  if (!imp || !imp->is(ir::OpCode::kStreamTensorImport) || !imp->bool_attr("consume")) return false;
  ir::Block* block = clone->parent_block();
  ir::Value* v = clone->result(0);
  ir::Operation* region_op = nullptr;
  unsigned position = 0;  // of the yielded value, in the yield and in region_op's results
  for (int guard = 0; guard < 1 << 16 && !region_op; ++guard) {
    if (v->uses().size() != 1) return false;
    const ir::Use& use = v->uses().front();
    if (use.user->parent_block() != block) return false;
    if (use.user->is(ir::OpCode::kScfYield)) {
      ir::Operation* op = block->parent() ? block->parent()->parent_op() : nullptr;
      if (!op || !(op->is(ir::OpCode::kScfIf) || op->is(ir::OpCode::kScfIndexSwitch)) ||
          use.operand_index >= op->num_results())
        return false;
      region_op = op;
      position = use.operand_index;
      break;
    }
    ir::Value* next = nullptr;
    for (unsigned i = 0; i < use.user->num_results() && !next; ++i)
      if (analysis::TiedValue(use.user, i) == v) next = use.user->result(i);
    if (!next) return false;
    v = next;
  }
  if (!region_op) return false;
  // --schedule-allocation asks ValuesInConsumedImports of the function body
  // only, and coalesces no region result in a function with branches
  // between blocks (schedule_allocation.cc).
  ir::Block* body = imp->parent_block();
  ir::Region* func_region = body->parent();
  ir::Operation* func = func_region ? func_region->parent_op() : nullptr;
  const bool in_body = func && func->is(ir::OpCode::kFuncFunc);
  const bool multi_block = !func_region || func_region->num_blocks() != 1;
  bool shares = false;
  if (in_body && !multi_block) {
    // Trial: the clone's one use reads the source instead, as after removal.
    const ir::Use use = clone->result(0)->uses().front();
    use.user->SetOperand(use.operand_index, src);
    std::map<ir::Value*, ir::Value*> in_imports = ValuesInConsumedImports(body);
    use.user->SetOperand(use.operand_index, clone->result(0));
    auto it = in_imports.find(region_op->result(position));
    shares = it != in_imports.end() && it->second == import_value;
  }
  if (shares) return false;
  // The reason, for the remark.
  bool other_value = false;
  for (unsigned r = 0; r < region_op->num_regions(); ++r) {
    if (region_op->region(r)->empty() || region_op->region(r)->block(0) == block) continue;
    ir::Operation* y = region_op->region(r)->block(0)->terminator();
    ir::Value* root = y && position < y->num_operands() ? analysis::RootOf(y->operand(position)) : nullptr;
    if (root && root != src && root != import_value) other_value = true;
  }
  const std::string op_name = region_op->name();
  if (other_value) {
    *why = "another region yields another value";
  } else if (multi_block) {
    *why = "the function has branches between blocks";
  } else if (!in_body) {
    *why = "the consumed argument is imported inside a region";
  } else if (region_op->parent_block() != body) {
    *why = "the " + op_name + " is nested in another region";
  } else if (src != import_value) {
    *why = "the value is the result of a loop carried in the consumed argument's storage";
  } else {
    *why = "the consumed argument is read after the " + op_name + " or by a call";
  }
  return true;
}

// The read-only rule (header comment): true when nothing ever writes the
// storage `v` may share in place after `v` holds its contents: no content
// alias of v (analysis::ContentAliases: slices, awaits, values it flows
// into, the tied operands behind it, consumed call operands) is the tied
// operand of an op, except the writes that produced v itself (the tied
// chain, through slices and awaits, v's contents come from), and none is
// stored to a global or is a global's value (a later store overwrites a
// global's buffer without a tied op).
bool NeverWrittenAfterDefinition(ir::Value* v) {
  std::set<const ir::Operation*> producers;  // the writes v's contents come from
  for (ir::Value* x = v; x;) {
    ir::Operation* def = x->defining_op();
    if (!def) break;
    ir::Value* next = nullptr;
    if (def->is(ir::OpCode::kStreamAsyncSlice)) {
      next = def->operand(0);
    } else if (def->is(ir::OpCode::kStreamTimepointAwait)) {
      if (x->index() + 1 < def->num_operands()) next = def->operand(x->index() + 1);
    } else {
      int t = analysis::TiedOperandOfResult(def, x->index());
      if (t >= 0) {
        producers.insert(def);
        next = def->operand(static_cast<unsigned>(t));
      }
    }
    x = next;
  }
  for (ir::Value* a : analysis::ContentAliases(v)) {
    if (ir::Operation* def = a->defining_op(); def && def->is(ir::OpCode::kUtilGlobalLoad)) return false;
    for (const ir::Use& u : a->uses()) {
      if (u.user->is(ir::OpCode::kUtilGlobalStore)) return false;
      if (producers.count(u.user)) continue;
      for (unsigned t : analysis::TiedOperands(u.user))
        if (t == u.operand_index) return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------
// Hoisting the copy of a loop's initial value (header comment, "Hoisting").
// ---------------------------------------------------------------------------

// One edge that passes a loop's initial value in: operand `operand` of `op`
// (the scf.for / scf.while op itself, or a cf.br / cf.cond_br entering a
// loop built from blocks).
struct EntryEdge {
  ir::Operation* op = nullptr;
  unsigned operand = 0;
};

// Blocks of `from`'s region reachable through successors (`from` itself
// only when it is on a cycle).
std::set<ir::Block*> ReachableFrom(ir::Block* from) {
  std::set<ir::Block*> seen;
  std::vector<ir::Block*> work = {from};
  while (!work.empty()) {
    ir::Block* b = work.back();
    work.pop_back();
    ir::Operation* t = b->terminator();
    if (!t) continue;
    for (ir::Block* s : t->successors())
      if (s && seen.insert(s).second) work.push_back(s);
  }
  return seen;
}

// One step outwards from the loop-carried value `a` (a block argument):
//  - an scf.for iter_arg / scf.while "before" argument: *entries = the loop's
//    init operand, returns true (a loop level);
//  - an argument of a block of a multi-block region that some back edge
//    reaches (its block is reachable from itself): *entries = the branch
//    operands passing a value in from outside the cycle, returns true;
//  - otherwise false. *next is where the chain continues: the single value
//    entering (the init of a loop level, or the one incoming value of an
//    scf.while "after" argument or a block argument with one incoming edge),
//    nullptr when the chain stops.
bool LoopLevel(ir::Value* a, std::vector<EntryEdge>* entries, ir::Value** next) {
  entries->clear();
  *next = nullptr;
  if (!a->is_block_argument()) return false;
  ir::Block* b = a->parent_block();
  ir::Region* region = b->parent();
  if (!region) return false;
  ir::Operation* owner = region->parent_op();
  if (b == region->block(0)) {
    if (!owner) return false;
    if (owner->is(ir::OpCode::kScfFor) && owner->num_regions() == 1 && a->index() >= 1 &&
        3 + a->index() - 1 < owner->num_operands()) {
      entries->push_back(EntryEdge{owner, 3 + a->index() - 1});
    } else if (owner->is(ir::OpCode::kScfWhile) && owner->num_regions() == 2 && region == owner->region(0) &&
               a->index() < owner->num_operands()) {
      entries->push_back(EntryEdge{owner, a->index()});
    } else if (owner->is(ir::OpCode::kScfWhile) && owner->num_regions() == 2 && region == owner->region(1)) {
      // An "after" argument: the value scf.condition forwards.
      bool modelled = true;
      std::vector<analysis::FlowEdge> in = analysis::IncomingValues(a, &modelled);
      if (modelled && in.size() == 1) *next = in[0].value;
      return false;
    } else {
      return false;
    }
    *next = owner->operand((*entries)[0].operand);
    return true;
  }
  // A block of a multi-block region (cf.br / cf.cond_br).
  bool modelled = true;
  std::vector<analysis::FlowEdge> in = analysis::IncomingValues(a, &modelled);
  if (!modelled || in.empty()) return false;
  std::set<ir::Block*> reach = ReachableFrom(b);
  bool back_edge = false;
  for (const analysis::FlowEdge& e : in) {
    if (reach.count(e.edge->parent_block())) {
      back_edge = true;
    } else {
      entries->push_back(EntryEdge{e.edge, e.operand});
    }
  }
  if (!back_edge || entries->empty()) {
    entries->clear();
    if (in.size() == 1) *next = in[0].value;
    return false;
  }
  if (entries->size() == 1) *next = (*entries)[0].op->operand((*entries)[0].operand);
  return true;
}

// A loop a copy feeds as its initial value, for remarks: the scf op, or the
// branch entering a loop built from blocks; nullptr when `clone` is not
// such a copy.
const ir::Operation* FeedsLoopEntry(ir::Operation* clone) {
  // The one use of the copy, besides lifetime ops, through the execution
  // regions and awaits --schedule-execution wraps it in (when the pass runs
  // again on the final program, --explain-copies).
  ir::Value* r = clone->result(0);
  const ir::Use* use = nullptr;
  for (int depth = 0; depth < 8; ++depth) {
    use = nullptr;
    for (const ir::Use& u : r->uses()) {
      if (ir::Traits(u.user).has(ir::kLifetime)) continue;  // retain, release, dealloca
      if (use) return nullptr;
      use = &u;
    }
    if (!use) return nullptr;
    ir::Operation* user = use->user;
    ir::Operation* parent = user->parent_op();
    if (user->is(ir::OpCode::kStreamYield) && parent && parent->is(ir::OpCode::kStreamAsyncExecute) &&
        use->operand_index < parent->num_results()) {
      r = parent->result(use->operand_index);
    } else if (user->is(ir::OpCode::kStreamTimepointAwait) && use->operand_index >= 1 &&
               use->operand_index - 1 < user->num_results()) {
      r = user->result(use->operand_index - 1);
    } else {
      break;
    }
  }
  if (!use) return nullptr;
  const ir::Use& u = *use;
  for (ir::Value* t : analysis::FlowTargets(u.user, u.operand_index)) {
    if (!t->is_block_argument()) continue;
    std::vector<EntryEdge> entries;
    ir::Value* next = nullptr;
    if (!LoopLevel(t, &entries, &next)) continue;
    for (const EntryEdge& e : entries)
      if (e.op == u.user && e.operand == u.operand_index) return u.user;
  }
  return nullptr;
}

std::string HoistedNote(const ir::Operation* entry) {
  return "; it copies the initial value of a loop once, before " + analysis::DescribeOp(entry) +
         ", so the loop updates its carried value in place (no copy per trip)";
}

// `clone` copies a loop-carried value and cannot go (the analysis said
// why). Tries, from the outermost enclosing loop level inwards, to copy the
// loop's initial value once on its entry edges instead: the loop then owns
// its carried value. Commits (the in-body copy goes, the new copies get a
// remark) only when the analysis then lets the in-body copy go; otherwise
// undoes the trial and returns false. The trial is checked with the same
// query as every other copy, so a carried value read after the tied op in
// the same trip, or a yield passing a value the loop does not own, keeps the
// copy in the body.
bool TryHoistLoopInitCopy(ir::Operation* clone, const std::string& reason, ir::PassContext& ctx) {
  std::vector<std::vector<EntryEdge>> levels;
  ir::Value* a = clone->operand(0);
  for (int depth = 0; a && depth < 16; ++depth) {
    std::vector<EntryEdge> entries;
    ir::Value* next = nullptr;
    if (LoopLevel(a, &entries, &next)) levels.push_back(entries);
    a = next;
  }
  int64_t size = clone->int_attr("size", -1);
  if (levels.empty() || size < 0) return false;
  for (auto level = levels.rbegin(); level != levels.rend(); ++level) {
    // Trial: one copy per entry edge, right before the op passing it.
    std::vector<std::pair<EntryEdge, ir::Value*>> undo;
    std::vector<ir::Operation*> copies;
    for (const EntryEdge& e : *level) {
      ir::Value* init = e.op->operand(e.operand);
      if (!analysis::IsResource(init)) break;
      ir::Builder b = ir::Builder::Before(e.op);
      b.set_loc(clone->loc());
      std::map<std::string, ir::Attribute> attrs = {{"size", ir::Attribute(size)}};
      if (const ir::Attribute* aff = clone->attr("affinity")) attrs["affinity"] = *aff;
      ir::Operation* copy = b.Create("stream.async.clone", {init}, {init->type()}, std::move(attrs));
      e.op->SetOperand(e.operand, copy->result(0));
      undo.push_back({e, init});
      copies.push_back(copy);
    }
    bool ok = undo.size() == level->size() && analysis::CanReuseStorage(clone, 0).ok;
    if (ok) {
      clone->result(0)->ReplaceAllUsesWith(clone->operand(0));
      clone->Erase();
      for (size_t i = 0; i < copies.size(); ++i)
        ctx.Remark(copies[i], "kept copy: " + reason + HoistedNote(undo[i].first.op));
      return true;
    }
    for (auto& [e, init] : undo) e.op->SetOperand(e.operand, init);
    for (ir::Operation* c : copies) c->Erase();
  }
  return false;
}

// The 32-bit pattern every 4 bytes of `constant` (a stream.async.constant)
// repeat, when they do and the constant is a whole number of words.
bool SplatPattern(const ir::Operation* constant, int64_t size, uint32_t* pattern) {
  const ir::DenseElements* d = constant->dense_attr("value");
  if (!d || !d->data || size <= 0 || size % 4 != 0 || static_cast<int64_t>(d->data->size()) != size) return false;
  const uint8_t* b = d->bytes();
  for (int64_t i = 4; i < size; ++i)
    if (b[i] != b[i % 4]) return false;
  *pattern = static_cast<uint32_t>(b[0]) | static_cast<uint32_t>(b[1]) << 8 | static_cast<uint32_t>(b[2]) << 16 |
             static_cast<uint32_t>(b[3]) << 24;
  return true;
}

// A copy that stays and whose source is a constant repeating one 32-bit
// pattern is written as a splat of that pattern instead (a fill, no copy
// from the constant pool): the constant is materialised straight into the
// mutable storage.
bool MaterializeSplatConstantCopy(ir::Operation* clone, ir::PassContext& ctx) {
  ir::Operation* def = clone->operand(0)->defining_op();
  int64_t size = clone->int_attr("size", -1);
  uint32_t pattern = 0;
  if (!def || !def->is(ir::OpCode::kStreamAsyncConstant) || !SplatPattern(def, size, &pattern)) return false;
  ir::Builder b = ir::Builder::Before(clone);
  b.set_loc(clone->loc());
  std::map<std::string, ir::Attribute> attrs = {{"size", ir::Attribute(size)},
                                                {"pattern", ir::Attribute(static_cast<int64_t>(pattern))}};
  if (const ir::Attribute* aff = clone->attr("affinity")) attrs["affinity"] = *aff;
  ir::Operation* splat = b.Create("stream.async.splat", {}, {clone->result(0)->type()}, std::move(attrs));
  ctx.Remark(clone, "copy of a constant written as a splat: its bytes repeat one 32-bit pattern (a fill, no copy)");
  clone->result(0)->ReplaceAllUsesWith(splat->result(0));
  clone->Erase();
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
        if (op->is(ir::OpCode::kStreamAsyncClone)) clones.push_back(op);
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
        analysis::Verdict v = AliasedDispatchReadVerdict(clone, analysis::CanReuseStorage(clone, 0));
        // Allowed, but no gain: the copy would only move to a yield.
        if (std::string why; v.ok && RemovalMovesCopyToYield(clone, &why)) {
          ctx.Remark(clone, "kept copy: removing it would only move the copy to the yield into the region's result (" +
                                why + ") and make the runtime take the consumed argument");
          continue;
        }
        if (!v.ok && IsGlobalStateUpdate(clone)) v = analysis::Verdict{true, ""};
        if (!v.ok && src->type() == copy->type() && NeverWrittenAfterDefinition(src) &&
            NeverWrittenAfterDefinition(copy))
          v = analysis::Verdict{true, ""};  // a read-only copy of a value nobody writes
        if (!v.ok) {
          if (TryHoistLoopInitCopy(clone, v.reason, ctx)) continue;
          if (MaterializeSplatConstantCopy(clone, ctx)) continue;
          const ir::Operation* entry = FeedsLoopEntry(clone);
          ctx.Remark(clone, "kept copy: " + v.reason + (entry ? HoistedNote(entry) : std::string()));
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
