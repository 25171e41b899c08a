// Copy coalescing at structured control flow: region results and loop-carried
// values that share the storage of the value flowing into them, so the edge
// (a yield, a loop entry) copies nothing. Decided before the arena is planned
// (--schedule-allocation reads the maps these return; region_coalescing.h).
//
// The rules only ever make two values share bytes where the program already
// guarantees that at most one of them is live at a time: the copy passes
// (materialize-copy-on-write, elide-async-copies) have proved every in-place
// update unobserved, so what is left to check here is who else reads the
// shared storage while the region runs and after it.
#include "compiler/transforms/region_coalescing.h"

#include <functional>
#include <map>
#include <set>
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"

namespace kiln::transforms {

using analysis::IsLifetimeOp;
using analysis::RootOf;
using analysis::SizeOf;
using analysis::TiedValue;
using ir::OpCode;
namespace {

// Pre-order walk of every op of `func`: the entry block, then the other
// blocks of a body with branches, each with its nested regions.
template <typename F>
void WalkFunction(ir::Operation* func, F&& f) {
  for (auto& b : func->region(0)->blocks())
    for (auto& owned : b->ops()) owned->Walk(f);
}

// Whether every use of `v` but the yield `y` is a read-only view: a
// stream.async.slice in y's block whose uses are untied dispatch operands
// or lifetime ops (an in-place concat's piece read again through its
// subrange of the target, --emplace-allocations). Such reads run before
// the yield, while `v` already lives in the region result's storage, and
// never write it, so `v` can still be written straight into that storage.
bool OnlyYieldAndViewReads(ir::Value* v, ir::Operation* y) {
  int yields = 0;
  for (const ir::Use& u : v->uses()) {
    if (u.user == y) {
      ++yields;
      continue;
    }
    if (!u.user->is(OpCode::kStreamAsyncSlice) || u.user->parent_block() != y->parent_block()) return false;
    for (const ir::Use& r : u.user->result(0)->uses()) {
      if (IsLifetimeOp(r.user)) continue;
      if (!r.user->is(OpCode::kStreamAsyncDispatch)) return false;
      for (int64_t t : r.user->ints_attr("tied_operands"))
        if (t == static_cast<int64_t>(r.operand_index)) return false;
    }
  }
  return yields == 1;
}


// The op of `body` that is `op` or contains it (nullptr when `op` is not in
// `body`).
ir::Operation* AncestorIn(ir::Block* body, ir::Operation* op) {
  while (op && op->parent_block() != body) op = op->parent_op();
  return op;
}

// The values flowing into resource result `i` of scf op `op`: its initial
// value (loops) or each region's yield operand (branches). Empty when the op
// or the position is not modelled.
std::vector<ir::Value*> IncomingOf(ir::Operation* op, unsigned i) {
  std::vector<ir::Value*> in;
  if (op->is(OpCode::kScfFor)) {
    if (3 + i < op->num_operands()) in.push_back(op->operand(3 + i));
  } else if (op->is(OpCode::kScfWhile)) {
    // Only a "before" argument the condition forwards at its own position
    // shares the result's storage (--schedule-allocation's view walk).
    if (op->num_regions() != 2 || op->region(0)->empty() || i >= op->num_operands()) return {};
    ir::Block* before = op->region(0)->block(0);
    ir::Operation* cond = before->terminator();
    if (i >= before->num_arguments() || !cond || 1 + i >= cond->num_operands() ||
        cond->operand(1 + i) != before->argument(i))
      return {};
    in.push_back(op->operand(i));
  } else if (op->is(OpCode::kScfIf) || op->is(OpCode::kScfIndexSwitch)) {
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      if (op->region(r)->empty()) return {};  // an if without else yields nothing
      ir::Operation* y = op->region(r)->block(0)->terminator();
      if (!y || !y->is(OpCode::kScfYield) || i >= y->num_operands()) return {};
      in.push_back(y->operand(i));
    }
  }
  return in;
}

// The block arguments that share result `r`'s storage (--schedule-allocation's view
// walk): scf.for's carried argument, scf.while's "before" argument (when
// forwarded at its position, checked by IncomingOf) and "after" argument.
std::vector<ir::Value*> CarriedArguments(ir::Operation* op, unsigned i) {
  std::vector<ir::Value*> args;
  if (op->is(OpCode::kScfFor)) {
    ir::Block* b = op->region(0)->block(0);
    if (1 + i < b->num_arguments()) args.push_back(b->argument(1 + i));
  } else if (op->is(OpCode::kScfWhile)) {
    ir::Block* before = op->region(0)->block(0);
    ir::Block* after = op->region(1)->empty() ? nullptr : op->region(1)->block(0);
    args.push_back(before->argument(i));
    if (after && i < after->num_arguments()) args.push_back(after->argument(i));
  }
  return args;
}

// Every resource value of `block` (nested regions included) grouped by the
// storage root it lives in (RootOf: tied updates and slices), for the roots
// `is_root` accepts; a root block argument lives in itself.
std::map<ir::Value*, std::vector<ir::Value*>> FamiliesOf(ir::Block* block,
                                                         const std::function<bool(ir::Value*)>& is_root) {
  std::map<ir::Value*, std::vector<ir::Value*>> family;
  for (ir::Value* a : block->arguments())
    if (is_root(a)) family[a].push_back(a);
  for (auto& owned : block->ops())
    owned->Walk([&](ir::Operation* op) {
      for (ir::Value* r : op->results()) {
        if (r->type().kind != ir::TypeKind::kResource) continue;
        ir::Value* root = RootOf(r);
        if (is_root(root)) family[root].push_back(r);
      }
    });
  return family;
}

// The index of each op of `block` in program order.
std::map<ir::Operation*, size_t> PositionsIn(ir::Block* block) {
  std::map<ir::Operation*, size_t> position;
  for (auto& owned : block->ops()) position.emplace(owned.get(), position.size());
  return position;
}


// The rule of ValuesInConsumedImports / ValuesInCarriedArguments over the
// ops of `block`: roots are the values `is_root` accepts (each also counts
// as living in its own storage). With `allow_fresh`, an scf.if /
// index_switch branch may also yield a fresh value it made, or any value
// that views no root's storage (copied into the shared storage at its
// yield, once the branch has read what it needs).
void ShareRootStorage(ir::Block* block, const std::function<bool(ir::Value*)>& is_root, bool allow_fresh,
                      std::map<ir::Value*, ir::Value*>* shares) {
  std::map<ir::Value*, std::vector<ir::Value*>> family = FamiliesOf(block, is_root);
  const std::map<ir::Operation*, size_t> position = PositionsIn(block);
  std::set<ir::Value*> claimed;  // one region result per root
  for (auto& owned : block->ops()) {
    ir::Operation* op = owned.get();
    const bool loop = op->is(OpCode::kScfFor) || op->is(OpCode::kScfWhile);
    if (!loop && !op->is(OpCode::kScfIf) && !op->is(OpCode::kScfIndexSwitch)) continue;
    for (ir::Value* r : op->results()) {
      if (r->type().kind != ir::TypeKind::kResource) continue;
      std::vector<ir::Value*> in = IncomingOf(op, r->index());
      // Every incoming value is the root itself or an in-place update of it
      // (no slice: the result needs the whole storage), or, with
      // `allow_fresh`, a fresh value its branch made.
      ir::Value* root = nullptr;
      bool all = !in.empty();
      for (size_t k = 0; k < in.size() && all; ++k) {
        ir::Value* c = TiedChainRoot(in[k]);
        if (family.count(c)) {
          if (root && root != c) all = false;
          root = c;
        } else {
          // A value that views no root's storage is copied in at its yield
          // like a fresh one (differential seed 44636: a transfer round trip
          // elided to the consumed import).
          ir::Value* vr = RootOf(in[k]);
          all = allow_fresh && !loop &&
                (FreshRootYielded(in[k], op->region(static_cast<unsigned>(k))->block(0)) ||
                 (!family.count(vr) && !is_root(vr)));
        }
      }
      if (!all || !root || claimed.count(root) || SizeOf(root) != SizeOf(r)) continue;
      // Nothing else reads the root's storage while it holds the result: no
      // use after the op, none by a call (which may take it), and for a loop
      // none inside its body (a capture would see the carried updates); the
      // loop's initial operand is the one use there.
      bool safe = true;
      for (ir::Value* v : family[root]) {
        for (const ir::Use& u : v->uses()) {
          if (IsLifetimeOp(u.user)) continue;
          ir::Operation* top = AncestorIn(block, u.user);
          if (!top || u.user->is(OpCode::kFuncCall)) safe = false;
          else if (top == op) safe = safe && (loop ? u.user == op : true);
          else if (position.at(top) > position.at(op)) safe = false;
        }
      }
      if (!safe) continue;
      claimed.insert(root);
      (*shares)[r] = root;
      if (loop)
        for (ir::Value* a : CarriedArguments(op, r->index())) (*shares)[a] = root;
    }
  }
}

}  // namespace

ir::Value* TiedChainRoot(ir::Value* v) {
  while (ir::Operation* def = v->defining_op()) {
    ir::Value* tied = TiedValue(def, v->index());
    if (!tied) break;
    v = tied;
  }
  return v;
}

std::map<ir::Value*, ir::Value*> ValuesInConsumedImports(ir::Block* body) {
  std::map<ir::Value*, ir::Value*> shares;
  ShareRootStorage(
      body,
      [&](ir::Value* v) {
        ir::Operation* def = v->defining_op();
        return def && def->is(OpCode::kStreamTensorImport) && def->bool_attr("consume") && def->parent_block() == body;
      },
      /*allow_fresh=*/false, &shares);
  return shares;
}

std::map<ir::Value*, ir::Value*> ValuesInCarriedArguments(ir::Block* body) {
  std::map<ir::Value*, ir::Value*> shares;
  for (auto& owned : body->ops())
    owned->Walk([&](ir::Operation* loop) {
      if (!loop->is(OpCode::kScfFor) || loop->num_regions() != 1 || loop->region(0)->empty()) return;
      ir::Block* b = loop->region(0)->block(0);
      ShareRootStorage(
          b,
          [&](ir::Value* v) {
            return v->is_block_argument() && v->parent_block() == b && v->index() > 0 &&
                   v->type().kind == ir::TypeKind::kResource;
          },
          /*allow_fresh=*/true, &shares);
    });
  return shares;
}

ir::Value* FreshRootYielded(ir::Value* v, ir::Block* branch) {
  // Through the in-place updates, each defined in the branch.
  ir::Value* root = v;
  while (ir::Operation* def = root->defining_op()) {
    if (def->parent_block() != branch) return nullptr;
    ir::Value* tied = TiedValue(def, root->index());
    if (!tied) break;
    root = tied;
  }
  ir::Operation* def = root->defining_op();
  if (!def || def->parent_block() != branch) return nullptr;
  if (ir::Traits(def).level != ir::OpLevel::kStream || !ir::AllocatesFresh(*def, root->index())) return nullptr;
  return root;
}

std::map<ir::Value*, ir::Value*> OuterValuesYielded(ir::Block* body, const std::set<ir::Value*>& escaping) {
  std::map<ir::Value*, ir::Value*> into;
  std::map<ir::Value*, std::vector<ir::Value*>> family = FamiliesOf(body, [](ir::Value*) { return true; });
  const std::map<ir::Operation*, size_t> position = PositionsIn(body);
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is(OpCode::kScfIf) && !op->is(OpCode::kScfIndexSwitch)) continue;
    for (ir::Value* r : op->results()) {
      if (r->type().kind != ir::TypeKind::kResource) continue;
      std::vector<ir::Value*> in = IncomingOf(op, r->index());
      // The regions that yield a value from outside the op, in order; the
      // first whose value passes the checks below is written into the
      // result (the others copy at their yields, as they would anyway:
      // differential seed 46092, where elision made a second region yield
      // an outer value and neither was placed).
      std::vector<std::pair<int, ir::Value*>> outer;  // (region, root)
      for (size_t k = 0; k < in.size(); ++k) {
        ir::Value* rv = TiedChainRoot(in[k]);
        ir::Operation* def = rv->defining_op();
        if (!def || AncestorIn(body, def) == op) continue;  // made in a region
        outer.push_back({static_cast<int>(k), rv});
      }
      for (auto [outer_region, root] : outer) {
        // One root yielded by two regions (or twice) stays where it is.
        int times = 0;
        for (auto& o : outer) times += o.second == root;
        ir::Operation* def = root->defining_op();
        if (times > 1 || def->parent_block() != body || ir::Traits(def).level != ir::OpLevel::kStream ||
            !ir::AllocatesFresh(*def, root->index()) || escaping.count(root) || into.count(root) ||
            SizeOf(root) != SizeOf(r))
          continue;
        // Nobody else reads the root's storage once the result may be written
        // into it: no use in another region of the op (its yield is written
        // there), none after the op.
        bool safe = true;
        for (ir::Value* v : family[root])
          for (const ir::Use& u : v->uses()) {
            if (IsLifetimeOp(u.user)) continue;
            ir::Operation* top = AncestorIn(body, u.user);
            if (!top) { safe = false; continue; }
            if (top == op) {
              if (u.user == op) { safe = false; continue; }
              ir::Operation* x = u.user;
              while (x->parent_op() != op) x = x->parent_op();
              // The region holding the use.
              ir::Region* reg = x->parent_block()->parent();
              if (reg != op->region(static_cast<unsigned>(outer_region))) safe = false;
            } else if (position.at(top) > position.at(op)) {
              safe = false;
            }
          }
        if (safe) {
          into[root] = r;
          break;
        }
      }
    }
  }
  return into;
}

std::map<ir::Value*, ir::Value*> BlockArgumentsSharingStorage(ir::Operation* func, const std::set<ir::Value*>& excluded,
                                                              const std::function<bool(ir::Value*)>& has_own_storage) {
  auto full_root = [&](ir::Value* v) {
    while (ir::Operation* def = v->defining_op()) {
      ir::Value* tied = TiedValue(def, v->index());
      if (!tied) break;
      v = tied;
    }
    return v;
  };
  std::map<ir::Value*, ir::Value*> coalesced;  // block argument -> value whose storage it shares
  {
    for (size_t bi = 1; bi < func->region(0)->blocks().size(); ++bi) {
      ir::Block* b = func->region(0)->block(static_cast<unsigned>(bi));
      for (ir::Value* a : b->arguments()) {
        if (a->type().kind != ir::TypeKind::kResource || excluded.count(a)) continue;
        bool modelled = true;
        std::vector<analysis::FlowEdge> in = analysis::IncomingValues(a, &modelled);
        if (!modelled || in.size() != 1) continue;
        ir::Value* v = in[0].value;
        ir::Operation* edge = in[0].edge;
        if (v->type().kind != ir::TypeKind::kResource) continue;
        ir::Value* r = full_root(v);
        ir::Block* rb = r->parent_block();
        bool other_block_arg = r->is_block_argument() && rb && rb->parent() == func->region(0) &&
                               rb != func->region(0)->block(0);
        if (!other_block_arg && !has_own_storage(r)) continue;
        if (r == a || SizeOf(r) != SizeOf(a)) continue;
        int group = analysis::FlowGroup(edge, in[0].operand);
        bool twice = false;
        for (unsigned j = 0; j < edge->num_operands(); ++j)
          if (j != in[0].operand && analysis::FlowGroup(edge, j) == group &&
              edge->operand(j)->type().kind == ir::TypeKind::kResource && RootOf(edge->operand(j)) == RootOf(v))
            twice = true;
        if (twice || analysis::FindLaterObserver(v, edge, edge)) continue;
        // No cycle of shared storage (each chain must end at a real storage).
        ir::Value* end = r;
        for (int d = 0; d < 64 && coalesced.count(end); ++d) end = coalesced.at(end);
        if (end == a) continue;
        coalesced[a] = r;
      }
    }
  }
  return coalesced;
}

std::map<ir::Value*, ir::Value*> FreshValuesYieldedIntoResults(ir::Operation* func,
                                                               const std::set<ir::Value*>& escaping,
                                                               const std::map<ir::Value*, ir::Value*>& shares_root) {
  std::map<ir::Value*, ir::Value*> yield_into;
  WalkFunction(func, [&](ir::Operation* op) {
    if (!op->is(OpCode::kScfIf) && !op->is(OpCode::kScfIndexSwitch)) return;
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      if (op->region(r)->empty()) continue;
      ir::Block* b = op->region(r)->block(0);
      ir::Operation* y = b->terminator();
      if (!y || !y->is(OpCode::kScfYield)) continue;
      for (unsigned i = 0; i < y->num_operands(); ++i) {
        ir::Value* v = y->operand(i);
        // Not into a result that shares a carried value's storage: the branch
        // may read that value while it computes `v` (copied at the yield).
        if (!OnlyYieldAndViewReads(v, y) || shares_root.count(op->result(i))) continue;
        ir::Value* root = FreshRootYielded(v, b);
        if (root && !escaping.count(root) && !yield_into.count(root)) yield_into[root] = op->result(i);
      }
    }
  });
  return yield_into;
}

std::map<ir::Value*, ir::Operation*> InitialCopiesIntoCarriedStorage(ir::Operation* func,
                                                                     const std::set<ir::Value*>& escaping,
                                                                     std::map<ir::Value*, ir::Value*>* yield_into) {
  std::map<ir::Value*, ir::Operation*> init_copy_of;
  WalkFunction(func, [&](ir::Operation* op) {
    if (!op->is(OpCode::kStreamAsyncClone) || op->num_results() != 1) return;
    ir::Value* v = op->result(0);
    if (escaping.count(v) || yield_into->count(v)) return;
    // Its one use besides lifetime ops (a retain: the loop result may be
    // the init when no trip runs; a dealloca after the loop).
    ir::Operation* user = nullptr;
    unsigned k = 0;
    for (const ir::Use& u : v->uses()) {
      if (IsLifetimeOp(u.user)) continue;
      if (user) return;
      user = u.user;
      k = u.operand_index;
    }
    if (!user || user->parent_block() != op->parent_block()) return;
    ir::Value* target = nullptr;
    if (user->is(OpCode::kScfFor) && k >= 3 && k - 3 < user->num_results()) {
      target = user->result(k - 3);
    } else if (user->is(OpCode::kScfWhile) && user->num_regions() == 2 && !user->region(0)->empty()) {
      ir::Block* before = user->region(0)->block(0);
      ir::Operation* cond = before->terminator();
      if (k >= before->num_arguments()) return;
      ir::Value* a = before->argument(k);
      bool forwarded = cond && 1 + k < cond->num_operands() && cond->operand(1 + k) == a && k < user->num_results();
      target = forwarded ? user->result(k) : a;
    } else if (user->is(OpCode::kCfBr) || user->is(OpCode::kCfCondBr)) {
      // Only a branch from a block the target block cannot reach: the
      // target's arguments hold nothing yet (its block has not run), so
      // writing one early clobbers no live value.
      std::vector<ir::Value*> t = analysis::FlowTargets(user, k);
      if (t.size() != 1 || !t[0]->is_block_argument()) return;
      std::set<ir::Block*> seen;
      std::vector<ir::Block*> work = {t[0]->parent_block()};
      while (!work.empty()) {
        ir::Block* b = work.back();
        work.pop_back();
        if (ir::Operation* term = b->terminator())
          for (ir::Block* succ : term->successors())
            if (succ && seen.insert(succ).second) work.push_back(succ);
      }
      if (seen.count(user->parent_block())) return;
      target = t[0];
    }
    if (!target || target->type().kind != ir::TypeKind::kResource || init_copy_of.count(target)) return;
    (*yield_into)[v] = target;
    init_copy_of[target] = op;
  });
  return init_copy_of;
}

}  // namespace kiln::transforms
