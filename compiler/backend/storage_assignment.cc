// FunctionEmitter::AssignStorage: where every resource of a function lives
// (arguments, constant pool, arena slots, result storage, globals, views),
// and the register prologue that makes them.
#include "compiler/backend/emitter.h"

#include <algorithm>
#include <functional>

#include "compiler/analysis/liveness.h"
#include "compiler/analysis/resource_usage.h"
#include "compiler/backend/transient_planner.h"

namespace kiln::backend {
namespace {

// Ops the emitter lowers whose results need no storage of their own: views,
// ties, constants, imports/exports, call results (the callee's storage),
// global loads that are not snapshots, lifetime ops, terminators and host
// scalars. Together with the allocating ops of AssignStorage this is the set
// of ops the emitter supports.
bool EmittedWithoutStorage(OpCode code) {
  switch (code) {
    case OpCode::kStreamTensorImport:
    case OpCode::kStreamAsyncConstant:
    case OpCode::kStreamTensorExport:
    case OpCode::kStreamAsyncUpdate:
    case OpCode::kStreamAsyncCopy:
    case OpCode::kStreamAsyncFill:
    case OpCode::kStreamAsyncSlice:
    case OpCode::kStreamAsyncLoad:
    case OpCode::kStreamTimepointImmediate:
    case OpCode::kStreamResourceDealloca:
    case OpCode::kStreamResourceRetain:
    case OpCode::kStreamResourceRelease:
    case OpCode::kFuncReturn:
    case OpCode::kFuncCall:
    case OpCode::kScfYield:
    case OpCode::kScfCondition:
    case OpCode::kCfBr:
    case OpCode::kCfCondBr:
    case OpCode::kUtilGlobalLoad:
    case OpCode::kUtilGlobalStore:
    case OpCode::kArithConstant:
    case OpCode::kArithAddi:
    case OpCode::kArithSubi:
    case OpCode::kArithMuli:
    case OpCode::kArithCmpi:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status FunctionEmitter::AssignStorage(ir::Block* body, uint16_t cmd) {
  // Every op of the function: the entry block, then the other blocks of a
  // body with branches (cf.br / cf.cond_br), each with its nested regions.
  auto walk = [&](auto&& f) {
    for (auto& b : func_->region(0)->blocks()) ForEachOp(b.get(), f);
  };
  // Arguments: views from the caller, in ref registers 0..N-1.
  std::vector<Storage> args(body->num_arguments());
  for (unsigned i = 0; i < body->num_arguments(); ++i) {
    ir::Value* arg = body->argument(i);
    if (!arg->type().is_tensor()) return UnimplementedError("emit: non-tensor function argument %u", i);
    Storage& s = args[i];
    s.kind = Storage::kArgument;
    s.buffer = NewRef();
    s.dynamic_offset = true;
    s.offset_reg = NewI32();
    s.length = arg->type().byte_size();
    s.group = NewGroup();
    enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(static_cast<uint16_t>(i))}, {Reg::Ref(s.buffer)});
    enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(static_cast<uint16_t>(i))}, {Reg::I32(s.offset_reg)});
  }

  // Escaping roots: allocations that back a function result.
  std::set<ir::Value*> escaping;
  walk([&](ir::Operation* op) {
    if (op->is(OpCode::kStreamTensorExport)) escaping.insert(RootOf(op->operand(0)));
  });
  // A func.call result may be one of the call's consumed operands (a callee
  // may return its consumed argument; a borrowed one it returns is copied
  // by its EmitReturn): those operands' roots live as long as the results
  // (see the lifetime walk below), so a later transient never reuses their
  // arena slot under a result.
  std::map<ir::Value*, std::vector<ir::Value*>> call_operand_roots;  // call result -> operand roots
  walk([&](ir::Operation* op) {
    if (!op->is(OpCode::kFuncCall)) return;
    for (ir::Value* r : op->results())
      for (unsigned i = 0; i < op->num_operands(); ++i)
        if (op->operand(i)->type().kind == ir::TypeKind::kResource && analysis::IsConsumedCallOperand(op, i))
          call_operand_roots[r].push_back(RootOf(op->operand(i)));
    // A consumed operand is moved: the callee owns its storage from here on
    // (it may return it, keep it, or free it), so it is never an arena slot.
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (op->operand(i)->type().kind == ir::TypeKind::kResource && analysis::IsConsumedCallOperand(op, i))
        escaping.insert(RootOf(op->operand(i)));
  });


  // Roots written in place (tied results), and the last step that reads
  // each import: a consumed import may donate its storage to a later result.
  std::set<ir::Value*> written;
  std::map<ir::Value*, int> import_last_use;
  {
    int st = 0;
    walk([&](ir::Operation* op) {
      for (ir::Value* r : op->results())
        if (ir::Value* t = TiedValue(op, r->index())) written.insert(RootOf(t));
      for (ir::Value* operand : op->operands()) {
        ir::Value* root = RootOf(operand);
        if (root->defining_op() && root->defining_op()->is(OpCode::kStreamTensorImport) && !op->is(OpCode::kStreamTensorExport) &&
            !IsLifetimeOp(op))
          import_last_use[root] = st;
      }
      ++st;
    });
  }
  std::map<ir::Value*, int> def_step;

  // Lifetimes of fresh allocations, in op steps.
  // Program order, so planning is deterministic (pointer order is not).
  std::map<ir::Value*, TransientRequest> requests;
  std::vector<ir::Value*> request_order;
  std::vector<ir::Value*> externals;
  // Steps and region extents (analysis/liveness.h; no value tracked here):
  // a value defined before a loop and used in its body must survive every
  // trip, so such a use counts at the loop's end (UseStep).
  const analysis::Liveness steps(func_, [](ir::Value*) -> ir::Value* { return nullptr; });
  // Region results and loop-carried values that live in the storage of a
  // consumed import or of an enclosing loop's carried value
  // (region_coalescing.cc). An import counts as written (taken lazily at
  // the first write through any of them).
  std::map<ir::Value*, ir::Value*> shares_root;
  if (!multi_block_) {
    shares_root = ValuesInConsumedImports(body);
    for (auto& [v, root] : ValuesInCarriedArguments(body)) shares_root.emplace(v, root);
  }
  for (auto& [v, root] : shares_root)
    if (!root->is_block_argument()) written.insert(root);
  // A fresh value a branch creates only to yield it, directly or through
  // in-place updates in the branch (a clone the branch then mutates), is
  // written straight into the scf.if's (or scf.index_switch's) result
  // storage: no copy at the yield (region_coalescing.cc).
  std::map<ir::Value*, ir::Value*> yield_into;
  walk([&](ir::Operation* op) {
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
        if (v->uses().size() != 1 || shares_root.count(op->result(i))) continue;
        ir::Value* root = FreshRootYielded(v, b);
        if (root && !escaping.count(root) && !yield_into.count(root)) yield_into[root] = op->result(i);
      }
    }
  });
  // A copy made only to be a loop's initial value (elide-async-copies hoists
  // the copy of a borrowed, constant or still-live initial value out of the
  // loop) is written straight into the loop's carried storage, so entering
  // the loop copies nothing more: scf.for result i, scf.while "before"
  // argument i (or result i when the condition forwards it at its own
  // position), or the argument of a block a branch enters. The carried
  // storage then lives from the copy on (`init_copy_step`).
  std::map<ir::Value*, ir::Operation*> init_copy_of;  // carried storage value -> the copy
  walk([&](ir::Operation* op) {
    if (!op->is(OpCode::kStreamAsyncClone) || op->num_results() != 1) return;
    ir::Value* v = op->result(0);
    if (escaping.count(v) || yield_into.count(v)) return;
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
    yield_into[v] = target;
    init_copy_of[target] = op;
  });
  // A fresh value made before an scf.if that one branch yields (and nothing
  // reads after it) is written into the if's result storage from its
  // definition on, like a loop's initial copy (region_coalescing.cc).
  if (!multi_block_)
    for (auto& [v, result] : OuterValuesYielded(body, escaping))
      if (!yield_into.count(v) && !init_copy_of.count(result)) {
        yield_into[v] = result;
        init_copy_of[result] = v->defining_op();
      }
  std::map<ir::Operation*, int> init_copy_step;  // op -> its step (the early writers above)
  // A util.global.load is a view of the global's buffer unless the global is
  // stored to while the loaded value (or a value tied to it or sliced from
  // it) may still be read: every store of the global (and every func.call,
  // whose callee may store it) must follow the load in its block, and every
  // read of the loaded value must come before the first of those (or be
  // that store). Otherwise the load copies the global into storage of its
  // own (a snapshot).
  {
    std::map<ir::Value*, std::vector<ir::Value*>> family;  // root -> values viewing it
    std::map<std::string, std::vector<ir::Operation*>> stores;
    std::vector<ir::Operation*> calls;
    walk([&](ir::Operation* op) {
      for (ir::Value* r : op->results())
        if (r->type().kind == ir::TypeKind::kResource) family[RootOf(r)].push_back(r);
      if (op->is(OpCode::kUtilGlobalStore)) stores[op->str_attr("global")].push_back(op);
      if (op->is(OpCode::kFuncCall)) calls.push_back(op);  // the callee may store any global
    });
    auto position_in = [](ir::Block* b, ir::Operation* op, ir::Operation** anc) -> int {
      while (op && op->parent_block() != b) op = op->parent_op();
      if (!op) return -1;
      *anc = op;
      int i = 0;
      for (auto& o : b->ops()) {
        if (o.get() == op) return i;
        ++i;
      }
      return -1;
    };
    walk([&](ir::Operation* op) {
      if (!op->is(OpCode::kUtilGlobalLoad)) return;
      std::vector<ir::Operation*> writers = calls;
      auto st = stores.find(op->str_attr("global"));
      if (st != stores.end()) writers.insert(writers.end(), st->second.begin(), st->second.end());
      if (writers.empty()) return;
      ir::Block* b = op->parent_block();
      ir::Operation* anc = nullptr;
      int load_pos = position_in(b, op, &anc), first = INT_MAX;
      bool snapshot = false;
      for (ir::Operation* store : writers) {
        int p = position_in(b, store, &anc);
        if (p < 0 || p <= load_pos) snapshot = true;
        first = std::min(first, p);
      }
      for (ir::Value* v : family[op->result(0)])
        for (const ir::Use& u : v->uses()) {
          int p = position_in(b, u.user, &anc);
          if (p < 0 || p > first || (p == first && !(u.user == anc && u.user->is(OpCode::kUtilGlobalStore))))
            snapshot = true;
        }
      if (snapshot) global_snapshots_.insert(op->result(0));
    });
  }
  int step = 0;
  Status unsupported;
  // A transient's lifetime ends at its stream.resource.dealloca (the last one
  // when each branch frees it); the uses the emitter sees must all come
  // before it, or the lifetime pass and the planner disagree.
  std::map<ir::Value*, int> dealloca_step, last_real_use;
  std::map<ir::Value*, ir::Operation*> dealloca_of;
  // A use of a call result is a use of every call operand root it may alias
  // (transitively: a call result passed to another call).
  std::function<void(ir::Operation*, ir::Value*, int, int)> extend_call_operands =
      [&](ir::Operation* op, ir::Value* root, int at_step, int depth) {
        auto c = call_operand_roots.find(root);
        if (c == call_operand_roots.end() || depth > 16) return;
        for (ir::Value* o : c->second) {
          auto rq = requests.find(o);
          if (rq != requests.end())
            rq->second.last_use = std::max(rq->second.last_use, steps.UseStep(op, rq->second.first_use));
          extend_call_operands(op, o, at_step, depth + 1);
        }
      };
  walk([&](ir::Operation* op) {
    for (ir::Value* operand : op->operands()) {
      if (operand->type().kind != ir::TypeKind::kResource) continue;
      ir::Value* root = RootOf(operand);
      if (!IsLifetimeOp(op)) extend_call_operands(op, root, step, 0);
      auto it = requests.find(root);
      if (it == requests.end()) continue;
      int at = steps.UseStep(op, it->second.first_use);
      it->second.last_use = std::max(it->second.last_use, at);
      if (op->is(OpCode::kStreamResourceDealloca)) {
        dealloca_step[root] = std::max(dealloca_step[root], at);
        dealloca_of[root] = op;
      } else if (!IsLifetimeOp(op)) {
        last_real_use[root] = std::max(last_real_use[root], at);
      }
    }
    const OpCode n = op->code();
    init_copy_step[op] = step;
    // Results with storage of their own (ops.def): new allocations at the
    // stream level (dispatch, clone, transfer, alloca, splat; tied results
    // are skipped below), the results of host control flow (scf.if, for,
    // index_switch, while) and global snapshots.
    const ir::OpInfo& traits = ir::Traits(op);
    if ((traits.level == ir::OpLevel::kStream && traits.storage == ir::ResultStorage::kFresh) ||
        (traits.level == ir::OpLevel::kControl && traits.storage == ir::ResultStorage::kRegion) ||
        (n == OpCode::kUtilGlobalLoad && global_snapshots_.count(op->result(0)))) {
      // scf.if results are allocations the branches write their yields into;
      // they live from the scf.if (before its branches' steps) to their last use.
      for (ir::Value* r : op->results()) {
        if (r->type().kind != ir::TypeKind::kResource || TiedValue(op, r->index()) || yield_into.count(r) ||
            shares_root.count(r))
          continue;
        if (escaping.count(r)) externals.push_back(r);
        // Loop-carried storage lives through every trip of its loop.
        // Region results are written by the regions' yields: they live at
        // least to the end of the regions (loops: through every trip).
        int last = op->num_regions() > 0 ? steps.RegionEnd(op) : step;
        requests[r] = TransientRequest{SizeOf(r), step, last};
        request_order.push_back(r);
        def_step[r] = step;
      }
      // scf.while: a "before" argument gets the storage of the result it is
      // forwarded to at the same position (the usual loop-carried value);
      // any other carried argument gets storage of its own.
      if (n == OpCode::kScfWhile) {
        ir::Block* before = op->region(0)->block(0);
        ir::Operation* cond = before->terminator();
        for (ir::Value* a : before->arguments()) {
          if (a->type().kind != ir::TypeKind::kResource) continue;
          unsigned i = a->index();
          if (cond && 1 + i < cond->num_operands() && cond->operand(1 + i) == a && i < op->num_results()) continue;
          requests[a] = TransientRequest{SizeOf(a), step, steps.RegionEnd(op)};
          request_order.push_back(a);
          def_step[a] = step;
        }
      }
    } else if (EmittedWithoutStorage(n)) {
      // No new allocation (a call's results are the callee's storage).
    } else if (unsupported.ok()) {
      unsupported = UnimplementedError("emit: op '%s' (%s) is not supported by the bytecode emitter yet",
                                       op->name().c_str(), op->loc().c_str());
    }
    ++step;
  });
  KILN_RETURN_IF_ERROR(unsupported);
  for (auto& [root, at] : dealloca_step) {
    if (multi_block_) break;  // block order is not execution order
    auto use = last_real_use.find(root);
    if (use != last_real_use.end() && use->second > at)
      return InternalError("emit: the resource defined at %s is used after its stream.resource.dealloca",
                           root->defining_op() ? root->defining_op()->loc().c_str() : "an argument");
  }
  // Block arguments that share their incoming value's storage (copy
  // coalescing): an argument A reached by exactly one edge, passing a value v
  // that lives in the whole storage of R (v is R, or an in-place update of R:
  // no slice), where R is another block's argument or a value with storage of
  // its own, takes R's storage when nothing observes v after the edge except
  // through A (analysis::FindLaterObserver), the edge passes nothing else
  // living in R to the same block, the sizes match and A does not escape.
  // The branch then copies nothing: a loop whose body block forwards the
  // header's carried value and branches back with its in-place update copies
  // nothing per trip. Safe because A's block has one predecessor edge: once
  // R's block runs again (the only way R's storage is written by an edge),
  // A is no longer live (A's uses are dominated by A's block, and R's block
  // is not), and every other write into R's storage is an in-place update
  // the elision pass proved unobserved, which FindLaterObserver covers.
  auto full_root = [&](ir::Value* v) {
    while (ir::Operation* def = v->defining_op()) {
      ir::Value* tied = TiedValue(def, v->index());
      if (!tied) break;
      v = tied;
    }
    return v;
  };
  std::map<ir::Value*, ir::Value*> coalesced;  // block argument -> value whose storage it shares
  if (multi_block_) {
    for (size_t bi = 1; bi < func_->region(0)->blocks().size(); ++bi) {
      ir::Block* b = func_->region(0)->block(static_cast<unsigned>(bi));
      for (ir::Value* a : b->arguments()) {
        if (a->type().kind != ir::TypeKind::kResource || escaping.count(a) || yield_into.count(a)) continue;
        bool modelled = true;
        std::vector<analysis::FlowEdge> in = analysis::IncomingValues(a, &modelled);
        if (!modelled || in.size() != 1) continue;
        ir::Value* v = in[0].value;
        ir::Operation* edge = in[0].edge;
        if (v->type().kind != ir::TypeKind::kResource) continue;
        ir::Value* r = full_root(v);
        ir::Block* rb = r->parent_block();
        bool other_block_arg = r->is_block_argument() && rb && rb->parent() == func_->region(0) &&
                               rb != func_->region(0)->block(0);
        if (!other_block_arg && !requests.count(r)) continue;
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
    for (auto& [a, r] : coalesced) yield_into[a] = r;
  }
  // Arguments of the other blocks of a body with branches: one storage each,
  // written by every branch to the block.
  for (size_t bi = 1; bi < func_->region(0)->blocks().size(); ++bi) {
    ir::Block* b = func_->region(0)->block(static_cast<unsigned>(bi));
    for (ir::Value* a : b->arguments()) {
      if (a->type().kind != ir::TypeKind::kResource) continue;
      if (coalesced.count(a)) continue;  // shares its incoming value's storage
      if (SizeOf(a) <= 0) return InvalidArgumentError("emit: block argument %u of block %zu has no known size", a->index(), bi);
      if (escaping.count(a)) externals.push_back(a);
      requests[a] = TransientRequest{SizeOf(a), 0, step};
      request_order.push_back(a);
      def_step[a] = 0;
    }
  }
  for (auto& [target, copy] : init_copy_of) {
    auto rq = requests.find(target);
    auto at = init_copy_step.find(copy);
    if (rq == requests.end() || at == init_copy_step.end()) continue;
    rq->second.first_use = std::min(rq->second.first_use, at->second);
    // Written from the copy on: a consumed import read until then must not
    // donate its storage to it (take_or_allocate, below).
    auto ds = def_step.find(target);
    if (ds != def_step.end()) ds->second = std::min(ds->second, at->second);
  }
  // With branches between blocks, program order is not execution order (a
  // branch may go back), so each transient's interval comes from liveness
  // over the block graph instead (analysis/liveness.h): the hull, in step
  // order, of every point where its storage may hold a live value (its
  // definitions and incoming edges, its uses, the blocks it is live into /
  // out of; a value live across a back edge is then live in every block of
  // the cycle, so its hull covers the loop). Values sharing a storage (tied
  // results, slices, coalesced block arguments, copies written straight
  // into a carried storage) count for their storage's request. Two
  // transients share arena bytes only when their hulls do not overlap, so
  // they are never live at once. A function with calls keeps whole-function
  // lifetimes (a call result may alias its operands' storage, which this
  // liveness does not follow).
  bool has_calls = false;
  walk([&](ir::Operation* op) { has_calls = has_calls || op->is(OpCode::kFuncCall); });
  if (multi_block_ && has_calls) {
    for (auto& [v, r] : requests) {
      r.first_use = 0;
      r.last_use = step;
    }
  } else if (multi_block_) {
    ir::Region* fr = func_->region(0);
    auto plan_root = [&](ir::Value* v) {
      v = RootOf(v);
      for (int d = 0; d < 64; ++d) {
        auto it = yield_into.find(v);
        if (it == yield_into.end()) break;
        v = RootOf(it->second);
      }
      return v;
    };
    const analysis::Liveness live(func_, [&](ir::Value* v) -> ir::Value* {
      if (v->type().kind != ir::TypeKind::kResource) return nullptr;
      ir::Value* r = plan_root(v);
      return requests.count(r) ? r : nullptr;
    });
    for (auto& [v, r] : requests) {
      std::optional<analysis::Liveness::Interval> h = live.Hull(v);
      if (!h) continue;  // never touched: keep its own interval
      // Values other than this body's block arguments keep the interval
      // computed above too (region results live through their regions, a
      // copy written straight into carried storage from the copy on).
      bool body_arg = v->is_block_argument() && v->parent_block()->parent() == fr;
      r.first_use = body_arg ? h->first : std::min(r.first_use, h->first);
      r.last_use = body_arg ? h->last : std::max(r.last_use, h->last);
    }
  }
  for (ir::Value* v : externals) requests.erase(v);

  std::vector<ir::Value*> transient_values;
  std::vector<TransientRequest> reqs;
  for (ir::Value* v : request_order) {
    auto it = requests.find(v);
    if (it == requests.end()) continue;  // external
    const TransientRequest& r = it->second;
    transient_values.push_back(v);
    reqs.push_back(r);
    m_.report().unplanned_transient_bytes += AlignUp(r.size, kBindingAlignment);
  }
  TransientPlan plan = PlanTransients(reqs, kBindingAlignment);
  m_.report().arena_bytes = std::max(m_.report().arena_bytes, plan.arena_size);
  if (plan.arena_size > 0) {
    // Slot 0 of the context's cache: the same arena on every call.
    uint16_t arena = NewRef();
    int arena_group = NewGroup();
    enc.CallImport(HalImport::kAllocatorAllocateCached,
                   {Reg::I32(ConstReg(0)), Reg::I32(ConstReg(plan.arena_size)), Reg::I32(ConstReg(0))},
                   {Reg::Ref(arena)});
    for (size_t i = 0; i < transient_values.size(); ++i) {
      Storage s;
      s.kind = Storage::kTransient;
      s.group = arena_group;
      s.buffer = arena;
      s.offset = plan.offsets[i];
      s.length = reqs[i].size;
      storage_[transient_values[i]] = s;
    }
  }
  // Consumed imports written in place: take the caller's storage when the
  // runtime says this frame owns it, else work on a counted copy of it. The
  // take happens at the first write that runs (EnsureTaken, guarded by a
  // flag register), not in the prologue: a write in a branch that is not
  // taken then costs no copy. Until then the storage registers view the
  // argument itself (same bytes).
  std::map<ir::Value*, Storage> taken;
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is(OpCode::kStreamTensorImport) || !written.count(op->result(0))) continue;
    if (!op->bool_attr("consume"))
      return FailedPreconditionError("emit: borrowed argument %u is written in place (run materialize-copy-on-write)",
                                     op->operand(0)->index());
    const Storage& a = args[op->operand(0)->index()];
    Storage s = a;
    s.buffer = NewRef();
    s.offset_reg = NewI32();
    enc.MovRef(s.buffer, a.buffer);
    enc.MovI32(s.offset_reg, a.offset_reg);
    LazyTake t;
    t.arg = static_cast<uint16_t>(op->operand(0)->index());
    t.storage = s;
    t.flag = NewI32();
    enc.ConstI32(t.flag, 0);  // not from ConstReg: the register changes
    lazy_takes_[op->result(0)] = t;
    taken[op->result(0)] = s;
  }
  for (auto& [v, imp] : shares_root) {
    if (!lazy_takes_.count(imp)) continue;  // a loop's carried value: nothing to take
    lazy_takes_[v] = lazy_takes_.at(imp);
    ir::Operation* owner = v->is_block_argument() ? nullptr : v->defining_op();
    if (owner && (owner->is(OpCode::kScfFor) || owner->is(OpCode::kScfWhile))) take_before_[owner].push_back(imp);
  }

  // Escaping allocations: a consumed import whose last read comes before the
  // result is written donates its storage (take_or_allocate: the runtime
  // falls back to a fresh buffer when the caller still shares it); otherwise
  // a per-result cache slot that is reused whenever the app released it.
  std::set<ir::Value*> donors_used;
  // Imports passed to a `consume` parameter of another module's function
  // are moved there (the caller's register is null afterwards): never donors.
  KILN_ASSIGN_OR_RETURN(std::set<ir::Value*> moved, MovedIntoCalls(body));
  donors_used.insert(moved.begin(), moved.end());
  // Which function result each escaping allocation backs (when exactly one,
  // the caller may have supplied output storage for it).
  std::map<ir::Value*, std::vector<int>> result_of;
  if (ir::Operation* ret = body->terminator(); ret && ret->is(OpCode::kFuncReturn))
    for (unsigned k = 0; k < ret->num_operands(); ++k)
      if (ir::Operation* exp = ret->operand(k)->defining_op())
        if (exp->is(OpCode::kStreamTensorExport) && exp->operand(0) == RootOf(exp->operand(0)))
          result_of[exp->operand(0)].push_back(static_cast<int>(k));
  int slot = 1;
  // The consumed imports, in body order, collected once (a function with N
  // results and M ops would otherwise cost O(N * M) string compares).
  std::vector<ir::Operation*> consume_imports;
  if (!multi_block_)  // step order is not execution order
    for (auto& owned : body->ops())
      if (owned->is(OpCode::kStreamTensorImport) && owned->bool_attr("consume"))
        consume_imports.push_back(owned.get());
  for (ir::Value* r : externals) {
    Storage s;
    s.kind = Storage::kExternal;
    s.length = SizeOf(r);
    ir::Operation* donor = nullptr;
    // A value made inside a loop (one moved into a call's consumed operand
    // on every trip) takes no donor: a donor gives one buffer per call, and
    // the callee may keep or free it after the first trip.
    bool in_loop = false;
    for (ir::Operation* p = r->is_block_argument() ? nullptr : r->defining_op()->parent_op(); p; p = p->parent_op())
      in_loop = in_loop || p->is(OpCode::kScfFor) || p->is(OpCode::kScfWhile);
    for (ir::Operation* imp : in_loop ? std::vector<ir::Operation*>{} : consume_imports) {
      ir::Value* iv = imp->result(0);
      if (donors_used.count(iv) || written.count(iv) || escaping.count(iv)) continue;
      if (imp->int_attr("size") < s.length) continue;
      auto last = import_last_use.find(iv);
      if (last != import_last_use.end() && last->second >= def_step[r]) continue;
      donor = imp;
      break;
    }
    s.buffer = NewRef();
    if (donor) {
      donors_used.insert(donor->result(0));
      const Storage& a = args[donor->operand(0)->index()];
      s.group = a.group;  // may be the caller's bytes: hazards against its reads
      s.dynamic_offset = true;
      s.offset_reg = NewI32();
      enc.CallImport(HalImport::kBufferViewTakeOrAllocate,
                     {Reg::Ref(static_cast<uint16_t>(donor->operand(0)->index())), Reg::I32(ConstReg(s.length)),
                      Reg::I32(ConstReg(1))},
                     {Reg::Ref(s.buffer), Reg::I32(s.offset_reg)});
    } else if (result_of[r].size() == 1) {
      // Caller output storage for result k when supplied (written in place,
      // returned as the caller's own tensor), else a cached buffer:
      //   view = output_storage(k); if (view) {buf, off} = view else {cached, 0}
      s.group = NewGroup();
      s.dynamic_offset = true;
      s.offset_reg = NewI32();
      uint16_t k = ConstReg(result_of[r][0]), slot_reg = ConstReg(slot++);
      uint16_t size_reg = ConstReg(AlignUp(s.length, 16)), kind_reg = ConstReg(1), zero = ConstReg(0);
      uint16_t view = NewRef(), has_view = NewI32();
      vm::Label use = enc.NewLabel(), fresh = enc.NewLabel(), join = enc.NewLabel();
      enc.CallImport(HalImport::kBufferViewOutputStorage, {Reg::I32(k)}, {Reg::Ref(view)});
      enc.CmpNzRef(has_view, view);
      enc.CondBr(has_view, use, fresh);
      enc.Bind(use);
      enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(view)}, {Reg::Ref(s.buffer)});
      enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(view)}, {Reg::I32(s.offset_reg)});
      enc.Br(join);
      enc.Bind(fresh);
      enc.CallImport(HalImport::kAllocatorAllocateCached, {Reg::I32(slot_reg), Reg::I32(size_reg), Reg::I32(kind_reg)},
                     {Reg::Ref(s.buffer)});
      enc.MovI32(s.offset_reg, zero);
      enc.Bind(join);
      enc.ConstRefZero(view);  // drop the extra reference to the caller's view
    } else {
      s.group = NewGroup();
      enc.CallImport(HalImport::kAllocatorAllocateCached,
                     {Reg::I32(ConstReg(slot++)), Reg::I32(ConstReg(AlignUp(s.length, 16))), Reg::I32(ConstReg(1))},
                     {Reg::Ref(s.buffer)});
    }
    storage_[r] = s;
  }

  // Consumed imports whose storage stays the caller's allocation: a
  // dealloca may drop them (taken or donated storage lives on as a result).
  for (auto& owned : body->ops()) {
    ir::Operation* imp = owned.get();
    if (!imp->is(OpCode::kStreamTensorImport) || !imp->bool_attr("consume")) continue;
    ir::Value* iv = imp->result(0);
    if (taken.count(iv) || donors_used.count(iv) || escaping.count(iv)) continue;
    droppable_[iv] = static_cast<uint16_t>(imp->operand(0)->index());
  }

  // Values yielded straight into an scf.if result (outer ifs first, so a
  // chain of nested yields resolves to the outermost storage).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [v, result] : yield_into) {
      auto it = storage_.find(result);
      if (it != storage_.end() && !storage_.count(v)) {
        storage_[v] = it->second;
        changed = true;
      }
    }
  }

  // Module globals this function reads or writes: one register each, loaded
  // in the prologue (the buffers live for the whole context).
  walk([&](ir::Operation* op) {
    if (!op->is(OpCode::kUtilGlobalLoad) && !op->is(OpCode::kUtilGlobalStore)) return;
    std::string sym = op->str_attr("global");
    if (global_storage_.count(sym)) return;
    const ModuleEmitter::GlobalInfo* g = m_.FindGlobal(sym);
    if (!g) return;  // checked by CollectGlobals
    Storage s;
    s.kind = Storage::kVariable;
    s.buffer = NewRef();
    s.group = NewGroup();
    s.length = g->size;
    enc.GlobalLoadRef(s.buffer, g->ordinal);
    global_storage_[sym] = s;
  });

  // Everything else views an allocation: imports, constants, tied results, slices.
  Status view_error;
  walk([&](ir::Operation* op) {
    if (!view_error.ok()) return;
    for (ir::Value* r : op->results())
      if (auto it = shares_root.find(r); it != shares_root.end()) storage_[r] = storage_.at(it->second);
    if (op->is(OpCode::kStreamTensorImport)) {
      ir::Value* arg = op->operand(0);
      if (!arg->is_block_argument()) {
        view_error = InvalidArgumentError("emit: stream.tensor.import of a non-argument");
        return;
      }
      auto t = taken.find(op->result(0));
      storage_[op->result(0)] = t != taken.end() ? t->second : args[arg->index()];
    } else if (op->is(OpCode::kStreamAsyncConstant)) {
      if (!pool_loaded_) {
        pool_reg_ = NewRef();
        pool_group_ = NewGroup();
        enc.GlobalLoadRef(pool_reg_, 0);
        pool_loaded_ = true;
      }
      Storage s;
      s.kind = Storage::kConstant;
      s.group = pool_group_;
      s.buffer = pool_reg_;
      s.offset = m_.ConstantOffset(op);
      s.length = op->int_attr("size");
      storage_[op->result(0)] = s;
    } else if (op->is(OpCode::kScfFor)) {
      ir::Block* loop_body = op->region(0)->block(0);
      for (ir::Value* r : op->results())
        if (storage_.count(r)) storage_[loop_body->argument(1 + r->index())] = storage_[r];
    } else if (op->is(OpCode::kFuncCall)) {
      // The callee's result views: (buffer, offset) registers set by RecordCall.
      for (ir::Value* r : op->results()) {
        Storage s;
        s.kind = Storage::kExternal;
        s.buffer = NewRef();
        s.group = NewGroup();
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        s.length = SizeOf(r);
        storage_[r] = s;
        droppable_[r] = kNoView;  // the caller owns it: its dealloca drops the buffer register
      }
    } else if (op->is(OpCode::kScfWhile)) {
      // "after" argument j and result j share one storage; a "before"
      // argument forwarded at its own position shares it too.
      ir::Block* before = op->region(0)->block(0);
      ir::Block* after = op->region(1)->block(0);
      ir::Operation* cond = before->terminator();
      for (ir::Value* r : op->results()) {
        if (!storage_.count(r)) continue;
        unsigned j = r->index();
        if (j < after->num_arguments()) storage_[after->argument(j)] = storage_[r];
        if (j < before->num_arguments() && cond && 1 + j < cond->num_operands() &&
            cond->operand(1 + j) == before->argument(j))
          storage_[before->argument(j)] = storage_[r];
      }
    } else if (op->is(OpCode::kUtilGlobalLoad)) {
      if (global_snapshots_.count(op->result(0))) return;  // storage of its own (a request)
      storage_[op->result(0)] = global_storage_.at(op->str_attr("global"));
    } else {
      for (ir::Value* r : op->results()) {
        ir::Value* tied = AllocationSource(op, r->index());
        if (!tied) continue;
        auto it = storage_.find(tied);
        if (it == storage_.end()) {
          view_error = InternalError("emit: tied operand of %s has no storage", op->loc().c_str());
          return;
        }
        Storage s = it->second;
        if (op->is(OpCode::kStreamAsyncSlice)) {
          s.offset += op->int_attr("offset");
          s.length = op->int_attr("length");
        }
        storage_[r] = s;
      }
    }
  });
  KILN_RETURN_IF_ERROR(view_error);

  // Edges that copy several values at once (loop yields, scf.while's
  // forwarded values, branch operands) are parallel copies: a value that
  // lives in another destination of the same edge (carried values yielded
  // at swapped positions, a slice of a carried value) would be overwritten
  // before it is read. Each such value gets a temporary (a cached buffer,
  // reused across calls) and is copied there first.
  Status edge_error;
  walk([&](ir::Operation* op) {
    if (!edge_error.ok()) return;
    for (const EdgeGroup& g : EdgeGroupsOf(op)) {
      for (size_t i = 0; i < g.operands.size(); ++i) {
        auto src = storage_.find(op->operand(g.operands[i]));
        if (src == storage_.end() || !g.dsts[i]) continue;
        bool conflict = false;
        for (size_t j = 0; j < g.operands.size(); ++j) {
          if (!g.dsts[j]) continue;
          const Storage& d = *g.dsts[j];
          bool overlaps = RangeOf(src->second).Overlaps(RangeOf(d));
          if (j != i ? overlaps : (overlaps && !SameStorage(src->second, d))) conflict = true;
        }
        if (!conflict) continue;
        Storage t;
        t.kind = Storage::kTransient;
        t.buffer = NewRef();
        t.group = NewGroup();
        t.length = g.dsts[i]->length;
        enc.CallImport(HalImport::kAllocatorAllocateCached,
                       {Reg::I32(ConstReg(slot++)), Reg::I32(ConstReg(AlignUp(t.length, 16))), Reg::I32(ConstReg(0))},
                       {Reg::Ref(t.buffer)});
        edge_temps_[{op, g.operands[i]}] = t;
      }
    }
  });
  return edge_error;
}

}  // namespace kiln::backend
