// Pass: --schedule-allocation (schedule_allocation.h): the storage plan of
// every function, written into the IR (compiler/analysis/storage_plan.h).
#include "compiler/transforms/schedule_allocation.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/donation.h"
#include "compiler/analysis/liveness.h"
#include "compiler/analysis/resource_usage.h"
#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/global_snapshots.h"
#include "compiler/transforms/passes.h"
#include "compiler/transforms/region_coalescing.h"
#include "compiler/transforms/edge_temporaries.h"
#include "compiler/transforms/transient_planner.h"

namespace kiln::transforms {
namespace {

using analysis::IsLifetimeOp;
using analysis::RootOf;
using analysis::SizeOf;
using analysis::StoragePlan;
using analysis::StorageSlot;
using analysis::TiedValue;
using analysis::ValueStorage;
using ir::OpCode;

// Every transient and binding offset is aligned to this (the largest
// minStorageBufferOffsetAlignment Vulkan permits), so any device can bind it.
constexpr int64_t kArenaAlignment = 256;

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Pre-order walk of `block` and the blocks of nested regions (scf.*).
template <typename F>
void ForEachOp(ir::Block* block, F&& f) {
  for (auto& owned : block->ops()) owned->Walk(f);
}

// Ops the backend writes out whose results need no storage of their own:
// views, ties, constants, imports/exports, call results (the callee's
// storage), global loads that are not snapshots, lifetime ops, terminators
// and host scalars. Together with the allocating ops below this is the set
// of ops the backend supports.
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

// The most bytes live at one step: the sum, at the busiest step, of the
// requests whose [first_use, last_use] holds it.
int64_t LiveBytesPeak(const std::vector<TransientRequest>& reqs) {
  std::map<int, int64_t> delta;
  for (const TransientRequest& r : reqs) {
    delta[r.first_use] += AlignUp(r.size, kArenaAlignment);
    delta[r.last_use + 1] -= AlignUp(r.size, kArenaAlignment);
  }
  int64_t live = 0, peak = 0;
  for (auto& [step, d] : delta) peak = std::max(peak, live += d);
  return peak;
}

class AllocationScheduler {
 public:
  explicit AllocationScheduler(ir::Operation* func) : func_(func) {}
  StatusOr<StoragePlan> Run();

 private:
  int NewStorage(StorageSlot s) {
    plan_.storages.push_back(std::move(s));
    return static_cast<int>(plan_.storages.size() - 1);
  }
  ir::Operation* func_;
  bool multi_block_ = false;
  std::set<ir::Value*> global_snapshots_;
  std::vector<int> arg_ids_;
  StoragePlan plan_;
};

StatusOr<StoragePlan> AllocationScheduler::Run() {
  ir::Block* body = func_->region(0)->block(0);
  multi_block_ = func_->region(0)->num_blocks() > 1;
  // Every op of the function: the entry block, then the other blocks of a
  // body with branches (cf.br / cf.cond_br), each with its nested regions.
  auto walk = [&](auto&& f) {
    for (auto& b : func_->region(0)->blocks()) ForEachOp(b.get(), f);
  };
  // Arguments: the caller's tensors (views).
  for (unsigned i = 0; i < body->num_arguments(); ++i) {
    if (!body->argument(i)->type().is_tensor())
      return UnimplementedError("schedule-allocation: non-tensor function argument %u", i);
    StorageSlot s;
    s.kind = StorageSlot::kArgument;
    s.index = i;
    arg_ids_.push_back(NewStorage(s));
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
  std::map<ir::Value*, ir::Value*> yield_into = FreshValuesYieldedIntoResults(func_, escaping, shares_root);
  // A copy made only to be a loop's initial value (elide-async-copies hoists
  // the copy of a borrowed, constant or still-live initial value out of the
  // loop) is written straight into the loop's carried storage, so entering
  // the loop copies nothing more: scf.for result i, scf.while "before"
  // argument i (or result i when the condition forwards it at its own
  // position), or the argument of a block a branch enters. The carried
  // storage then lives from the copy on (`init_copy_step`).
  std::map<ir::Value*, ir::Operation*> init_copy_of =
      InitialCopiesIntoCarriedStorage(func_, escaping, &yield_into);  // carried storage value -> the copy
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
  // Global loads that need storage of their own (global_snapshots.h).
  global_snapshots_ = GlobalSnapshots(func_);
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
      unsupported = UnimplementedError("schedule-allocation: op '%s' (%s) is not supported by the bytecode emitter yet",
                                       op->name().c_str(), op->loc().c_str());
    }
    ++step;
  });
  KILN_RETURN_IF_ERROR(unsupported);
  for (auto& [root, at] : dealloca_step) {
    if (multi_block_) break;  // block order is not execution order
    auto use = last_real_use.find(root);
    if (use != last_real_use.end() && use->second > at)
      return InternalError("schedule-allocation: the resource defined at %s is used after its stream.resource.dealloca",
                           root->defining_op() ? root->defining_op()->loc().c_str() : "an argument");
  }
  // Block arguments of a body with branches that share their incoming
  // value's storage (region_coalescing.h).
  if (multi_block_) {
    std::set<ir::Value*> excluded = escaping;
    for (auto& [v, into] : yield_into) excluded.insert(v);
    std::map<ir::Value*, ir::Value*> coalesced =
        BlockArgumentsSharingStorage(func_, excluded, [&](ir::Value* r) { return requests.count(r) > 0; });
    for (auto& [a, r] : coalesced) yield_into[a] = r;
  }
  // Arguments of the other blocks of a body with branches: one storage each,
  // written by every branch to the block.
  for (size_t bi = 1; bi < func_->region(0)->blocks().size(); ++bi) {
    ir::Block* b = func_->region(0)->block(static_cast<unsigned>(bi));
    for (ir::Value* a : b->arguments()) {
      if (a->type().kind != ir::TypeKind::kResource) continue;
      if (yield_into.count(a)) continue;  // shares its incoming value's storage
      if (SizeOf(a) <= 0) return InvalidArgumentError("schedule-allocation: block argument %u of block %zu has no known size", a->index(), bi);
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
    transient_values.push_back(v);
    reqs.push_back(it->second);
  }
  TransientPlan arena = PlanTransients(reqs, kArenaAlignment);
  plan_.arena_size = arena.arena_size;
  plan_.live_bytes_peak = LiveBytesPeak(reqs);
  for (size_t i = 0; i < transient_values.size(); ++i) {
    StorageSlot s;
    s.kind = StorageSlot::kArena;
    s.offset = arena.offsets[i];
    s.length = reqs[i].size;
    plan_.values[transient_values[i]] = ValueStorage{NewStorage(s), 0};
  }
  // Consumed imports written in place: the caller's storage when the
  // runtime says this frame owns it, else a counted copy of it, taken at the
  // first write that runs (the backend guards it with a flag), so a write in
  // a branch not taken costs no copy. A loop whose carried storage is the
  // import's (region coalescing) takes it before its first trip, since its
  // trips may write it through edge copies as well as in-place ops.
  std::map<ir::Value*, int> taken;
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is(OpCode::kStreamTensorImport) || !written.count(op->result(0))) continue;
    if (!op->bool_attr("consume"))
      return FailedPreconditionError(
          "schedule-allocation: borrowed argument %u is written in place (run materialize-copy-on-write)",
          op->operand(0)->index());
    StorageSlot s;
    s.kind = StorageSlot::kTaken;
    s.index = op->operand(0)->index();
    taken[op->result(0)] = NewStorage(s);
  }
  for (auto& [v, imp] : shares_root) {
    auto t = taken.find(imp);
    if (t == taken.end()) continue;  // a loop's carried value: nothing to take
    ir::Operation* owner = v->is_block_argument() ? nullptr : v->defining_op();
    if (owner && (owner->is(OpCode::kScfFor) || owner->is(OpCode::kScfWhile))) plan_.take_before[owner].push_back(t->second);
  }

  // Escaping allocations: a consumed import whose last read comes before the
  // result is written donates its storage (take_or_allocate: the runtime
  // falls back to a fresh buffer when the caller still shares it); otherwise
  // the caller's output storage for the one result it backs, or a cached
  // slot reused whenever the app released it.
  std::set<ir::Value*> donors_used;
  // Values passed to a `consume` parameter of a callee are moved there
  // (the caller's register is null afterwards): never donors.
  ForEachOp(body, [&](ir::Operation* op) {
    if (!op->is(OpCode::kFuncCall)) return;
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (analysis::IsConsumedCallOperand(op, i)) donors_used.insert(RootOf(op->operand(i)));
  });
  // Which function result each escaping allocation backs (when exactly one,
  // the caller may have supplied output storage for it).
  std::map<ir::Value*, std::vector<int>> result_of;
  if (ir::Operation* ret = body->terminator(); ret && ret->is(OpCode::kFuncReturn))
    for (unsigned k = 0; k < ret->num_operands(); ++k)
      if (ir::Operation* exp = ret->operand(k)->defining_op())
        if (exp->is(OpCode::kStreamTensorExport)) {
          ir::Value* v = exp->operand(0);
          // An in-place concat (--emplace-allocations) returns the end of a
          // chain of writes tied into its target alloca: the whole target,
          // so the alloca may live in the caller's output storage too.
          ir::Value* root = RootOf(v);
          if (v != root && root->defining_op() && root->defining_op()->is(OpCode::kStreamAsyncAlloca)) {
            ir::Value* w = v;
            while (ir::Operation* def = w->defining_op()) {
              ir::Value* t = analysis::TiedValue(def, w->index());
              if (!t) break;
              w = t;
            }
            if (w == root) v = root;
          }
          if (v == root) result_of[v].push_back(static_cast<int>(k));
        }
  int slot = 1;  // allocation-cache slot 0 is the arena
  std::vector<ir::Operation*> consume_imports;
  if (!multi_block_)  // step order is not execution order
    for (auto& owned : body->ops())
      if (owned->is(OpCode::kStreamTensorImport) && owned->bool_attr("consume")) consume_imports.push_back(owned.get());
  // Result copies a later result of one value shares with the first
  // (--materialize-result-copies' `shared_result`), planned after the rest:
  // their storage names the first result's.
  std::vector<ir::Value*> shared_copies;
  auto shares_result_copy = [&](ir::Value* r) {
    ir::Operation* def = r->is_block_argument() ? nullptr : r->defining_op();
    return def && def->is(OpCode::kStreamAsyncClone) && def->has_attr("shared_result") && result_of[r].size() == 1;
  };
  // The imports that could donate to each escaping value, then one donor
  // each (analysis::MatchDonors: a maximum matching, greedy where that
  // donates to every value). The matching matters for in-place concats written piece by
  // piece (silero_vad --consume=h --consume=c: hn's pieces may go into h or
  // c, cn's only into h, since each of cn's producers reads c's bytes under
  // its piece: hn takes c and cn takes h).
  auto step_of = [&](ir::Operation* op) -> int64_t {
    auto at = init_copy_step.find(op);
    return at == init_copy_step.end() ? -1 : at->second;
  };
  std::map<ir::Value*, std::vector<ir::Operation*>> donors_for;
  for (ir::Value* r : externals) {
    if (shares_result_copy(r)) {
      shared_copies.push_back(r);
      continue;
    }
    const int64_t length = SizeOf(r);
    // A value made inside a loop (one moved into a call's consumed operand
    // on every trip) takes no donor: a donor gives one buffer per call, and
    // the callee may keep or free it after the first trip.
    bool in_loop = false;
    for (ir::Operation* p = r->is_block_argument() ? nullptr : r->defining_op()->parent_op(); p; p = p->parent_op())
      in_loop = in_loop || p->is(OpCode::kScfFor) || p->is(OpCode::kScfWhile);
    if (in_loop) continue;
    // An in-place concat's target (--emplace-allocations) is written piece
    // by piece, each placed producer at its own step: an import read after
    // a piece is written still donates when the read covers other bytes
    // (analysis/donation.h). Any other value is written whole at its
    // definition.
    analysis::ChainWrites pieces = analysis::WritesInto(r, length);
    for (ir::Operation* imp : consume_imports) {
      ir::Value* iv = imp->result(0);
      if (donors_used.count(iv) || written.count(iv) || escaping.count(iv)) continue;
      if (imp->int_attr("size") < length) continue;
      if (pieces.ok) {
        if (analysis::FirstConflict(analysis::ReadsOf(iv, imp->int_attr("size")), pieces.writes, step_of)) continue;
      } else {
        auto last = import_last_use.find(iv);
        if (last != import_last_use.end() && last->second >= def_step[r]) continue;
      }
      donors_for[r].push_back(imp);
    }
  }
  std::map<ir::Value*, ir::Operation*> donor_of;
  {
    std::vector<std::vector<int>> candidates;
    for (ir::Value* r : externals) {
      candidates.emplace_back();
      for (ir::Operation* imp : donors_for[r])
        candidates.back().push_back(static_cast<int>(
            std::find(consume_imports.begin(), consume_imports.end(), imp) - consume_imports.begin()));
    }
    std::vector<int> match = analysis::MatchDonors(candidates);
    for (size_t i = 0; i < externals.size(); ++i)
      if (match[i] >= 0) donor_of[externals[i]] = consume_imports[static_cast<size_t>(match[i])];
  }
  for (ir::Value* r : externals) {
    if (shares_result_copy(r)) continue;
    StorageSlot s;
    s.length = SizeOf(r);
    auto matched = donor_of.find(r);
    ir::Operation* donor = matched == donor_of.end() ? nullptr : matched->second;
    if (donor) {
      donors_used.insert(donor->result(0));
      s.kind = StorageSlot::kDonated;
      s.index = donor->operand(0)->index();
    } else if (result_of[r].size() == 1) {
      s.kind = StorageSlot::kOutput;
      s.index = result_of[r][0];
      s.slot = slot++;
    } else {
      s.kind = StorageSlot::kCached;
      s.slot = slot++;
    }
    plan_.values[r] = ValueStorage{NewStorage(s), 0};
  }
  for (ir::Value* r : shared_copies) {
    StorageSlot s;
    s.kind = StorageSlot::kOutput;
    s.index = result_of[r][0];
    s.slot = slot++;
    s.length = SizeOf(r);
    // The first result's copy, when it is one result's own storage (else a
    // copy of its own, as any result: conservative).
    ir::Operation* ret = body->terminator();
    int64_t k = r->defining_op()->int_attr("shared_result", -1);
    ir::Operation* exp = k >= 0 && k < static_cast<int64_t>(ret->num_operands())
                             ? ret->operand(static_cast<unsigned>(k))->defining_op() : nullptr;
    auto first = exp && exp->is(OpCode::kStreamTensorExport) ? plan_.values.find(exp->operand(0)) : plan_.values.end();
    if (first != plan_.values.end() && first->second.offset == 0) {
      StorageSlot::Kind fk = plan_.storages[static_cast<size_t>(first->second.id)].kind;
      if (fk == StorageSlot::kOutput || fk == StorageSlot::kCached || fk == StorageSlot::kDonated)
        s.first = first->second.id;
    }
    plan_.values[r] = ValueStorage{NewStorage(s), 0};
  }
  // Consumed imports whose storage stays the caller's allocation: a
  // dealloca may drop them (taken or donated storage lives on as a result).
  for (auto& owned : body->ops()) {
    ir::Operation* imp = owned.get();
    if (!imp->is(OpCode::kStreamTensorImport) || !imp->bool_attr("consume")) continue;
    ir::Value* iv = imp->result(0);
    if (taken.count(iv) || donors_used.count(iv) || escaping.count(iv)) continue;
    plan_.droppable.push_back(imp);
  }
  // Values yielded straight into a region result (outer regions first, so a
  // chain of nested yields resolves to the outermost storage).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [v, result] : yield_into) {
      auto it = plan_.values.find(result);
      if (it != plan_.values.end() && !plan_.values.count(v)) {
        plan_.values[v] = it->second;
        changed = true;
      }
    }
  }
  // Module globals this function reads or writes.
  std::map<std::string, int> global_ids;
  walk([&](ir::Operation* op) {
    if (!op->is(OpCode::kUtilGlobalLoad) && !op->is(OpCode::kUtilGlobalStore)) return;
    std::string sym = op->str_attr("global");
    if (global_ids.count(sym)) return;
    StorageSlot s;
    s.kind = StorageSlot::kGlobal;
    s.global = sym;
    global_ids[sym] = NewStorage(s);
  });

  // Everything else views an allocation: imports, constants, tied results,
  // slices, call results, the carried arguments of loops.
  Status view_error;
  int constant_id = -1;
  auto set_from = [&](ir::Value* v, ir::Value* from, ir::Operation* op) {
    auto it = plan_.values.find(from);
    if (it == plan_.values.end()) {
      view_error = InternalError("schedule-allocation: %s (%s) reads a value with no storage", op->name().c_str(),
                                 op->loc().c_str());
      return false;
    }
    plan_.values[v] = it->second;
    return true;
  };
  walk([&](ir::Operation* op) {
    if (!view_error.ok()) return;
    for (ir::Value* r : op->results())
      if (auto it = shares_root.find(r); it != shares_root.end() && !set_from(r, it->second, op)) return;
    if (op->is(OpCode::kStreamTensorImport)) {
      ir::Value* arg = op->operand(0);
      if (!arg->is_block_argument() || arg->parent_block() != body) {
        view_error = InvalidArgumentError("schedule-allocation: stream.tensor.import of a non-argument (%s)",
                                          op->loc().c_str());
        return;
      }
      auto t = taken.find(op->result(0));
      plan_.values[op->result(0)] = ValueStorage{t != taken.end() ? t->second : arg_ids_[arg->index()], 0};
    } else if (op->is(OpCode::kStreamAsyncConstant)) {
      if (constant_id < 0) {
        StorageSlot s;
        s.kind = StorageSlot::kConstant;
        constant_id = NewStorage(s);
      }
      plan_.values[op->result(0)] = ValueStorage{constant_id, 0};
    } else if (op->is(OpCode::kScfFor)) {
      ir::Block* loop_body = op->region(0)->block(0);
      for (ir::Value* r : op->results())
        if (plan_.values.count(r)) plan_.values[loop_body->argument(1 + r->index())] = plan_.values[r];
    } else if (op->is(OpCode::kFuncCall)) {
      for (ir::Value* r : op->results()) {
        if (r->type().kind != ir::TypeKind::kResource) continue;
        StorageSlot s;
        s.kind = StorageSlot::kCallResult;
        plan_.values[r] = ValueStorage{NewStorage(s), 0};
      }
    } else if (op->is(OpCode::kScfWhile)) {
      // "after" argument j and result j share one storage; a "before"
      // argument forwarded at its own position shares it too.
      ir::Block* before = op->region(0)->block(0);
      ir::Block* after = op->region(1)->block(0);
      ir::Operation* cond = before->terminator();
      for (ir::Value* r : op->results()) {
        if (!plan_.values.count(r)) continue;
        unsigned j = r->index();
        if (j < after->num_arguments()) plan_.values[after->argument(j)] = plan_.values[r];
        if (j < before->num_arguments() && cond && 1 + j < cond->num_operands() && cond->operand(1 + j) == before->argument(j))
          plan_.values[before->argument(j)] = plan_.values[r];
      }
    } else if (op->is(OpCode::kUtilGlobalLoad)) {
      if (global_snapshots_.count(op->result(0))) return;  // storage of its own (a request)
      plan_.values[op->result(0)] = ValueStorage{global_ids.at(op->str_attr("global")), 0};
    } else {
      for (ir::Value* r : op->results()) {
        ir::Value* source = analysis::AllocationSource(op, r->index());
        if (!source) continue;
        if (!set_from(r, source, op)) return;
        if (op->is(OpCode::kStreamAsyncSlice)) plan_.values[r].offset += op->int_attr("offset");
      }
    }
  });
  KILN_RETURN_IF_ERROR(view_error);
  PlanEdgeTemporaries(func_, &plan_, &slot);
  return std::move(plan_);
}

class ScheduleAllocationPass : public ir::Pass {
 public:
  const char* flag() const override { return "schedule-allocation"; }
  const char* description() const override {
    return "Decide every resource's storage (arena slots, results, donated and taken arguments, coalesced edges) "
           "and write it into the IR";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    KILN_RETURN_IF_ERROR(SizeGlobalLoads(module));
    for (ir::Operation* func : module.functions()) {
      const std::string name = "function @" + func->str_attr("sym_name");
      StatusOr<StoragePlan> scheduled = ScheduleAllocation(func);
      if (!scheduled.ok()) {
        Status error = scheduled.status();
        return error.Annotate(name);
      }
      const StoragePlan& plan = scheduled.value();
      analysis::WriteStoragePlan(func, plan);
      ctx.Remark(func, "arena " + std::to_string(plan.arena_size) + " bytes, live peak " +
                           std::to_string(plan.live_bytes_peak) + " bytes, " + std::to_string(plan.storages.size()) +
                           " storages");
    }
    return OkStatus();
  }
};

}  // namespace

StatusOr<StoragePlan> ScheduleAllocation(ir::Operation* func) {
  if (!func || !func->is(OpCode::kFuncFunc) || func->num_regions() != 1 || func->region(0)->empty())
    return InvalidArgumentError("schedule-allocation: not a function with a body");
  return AllocationScheduler(func).Run();
}

std::unique_ptr<ir::Pass> CreateScheduleAllocationPass() { return std::make_unique<ScheduleAllocationPass>(); }

}  // namespace kiln::transforms
