// Pass: --elide-timepoints
//
// Removes waits that an earlier wait already covers, so the host (or the
// device) never waits twice for the same work.
//
// Terms: reaching timepoint A implies reaching B when A == B, B comes from
// stream.timepoint.immediate, A is a stream.timepoint.join one of whose
// members implies B, or A is the timepoint of a stream.async.execute one of
// whose awaits implies B (the region starts only after its awaits and
// signals after it finishes: the same source region chain). A timepoint is
// covered at a point of the program when it is immediate, implied by a
// timepoint a stream.timepoint.await before that point already waited on, or
// a join whose members are all covered.
//
// Where an earlier await counts (the covered set flows forward):
//  - earlier in the same block;
//  - before the op holding the region, in any enclosing block (a value
//    awaited before an scf.if need not be awaited in its branches; a
//    timepoint awaited before an scf.for or scf.while is loop invariant and
//    need not be awaited in the body);
//  - in every region of an scf.if / scf.index_switch before it (then and
//    else, every case and the default), and in the "before" region of an
//    scf.while (which runs at least once; it also covers the "after" region).
//  Awaits inside an scf.for body, inside only some branches, or inside an
//  execute region cover nothing after the op. Regions with several blocks
//  start each block from the set of the enclosing point only.
//
// Rewrites:
//  1. stream.timepoint.await on a covered timepoint (immediate included):
//     its results are replaced by its resource operands; the await is erased.
//  2. stream.timepoint.join: members that are immediate, repeated, or implied
//     by another member are dropped; a join left with one member is replaced
//     by it, with none by a new stream.timepoint.immediate.
//  3. stream.async.execute: awaits that are immediate, repeated, covered, or
//     implied by another await are dropped (operand_segments updated).
//  2b. (with rule 2) a join member covered at the join (an earlier await
//     reached it) is dropped too: join(%a, %b) after an await of %a is %b
//     (IREE: joins of already covered timepoints).
//  4. Joins and immediates left without uses by rules 1-3 are erased (dead
//     timepoint ops of the input are left alone).
//  5. An await that is not covered and whose results are read only by
//     stream.async.execute regions (as captures; in the same block or in
//     regions nested in later ops, loop bodies included) is folded into
//     them: each such execute awaits the timepoint itself and captures the
//     await's operands; the await goes. The host no longer waits: the
//     regions wait (IREE: await folded into its consumers; an execute in a
//     loop body awaits the timepoint on every trip, which is reached once,
//     IREE's scfForNoSink / scfWhileNoSink).
//  6. An await that is not covered and whose results are read only inside
//     the regions of one later scf.if / scf.index_switch of the same block
//     is sunk: a copy of the await opens each region that reads them, and
//     the original goes. A branch that does not read them does not wait
//     (IREE: awaits sunk into regions). Not into scf.for / scf.while (a
//     body may run zero times or many: conservative; rule 5 still folds an
//     await read only by execution regions there), not when a result is
//     also read outside that op.
//  Rules 5 and 6 then apply again inside the regions (a sunk await read
//  only by an execute there is folded into it).
// Every await that stays gets a remark saying why it is needed.
//
// Preconditions: stream level (after schedule-execution).
//
// Before:
//   %a = "stream.timepoint.await"(%tp, %r) ...
//   %b = "scf.if"(%c) ({ %x = "stream.timepoint.await"(%tp, %s) ... })
// After:
//   %a = "stream.timepoint.await"(%tp, %r) ...
//   %b = "scf.if"(%c) ({ ... uses %s directly ... })
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using TimepointSet = std::set<ir::Value*>;

bool IsImmediate(ir::Value* tp) {
  return tp->defining_op() && tp->defining_op()->is(ir::OpCode::kStreamTimepointImmediate);
}

unsigned NumExecuteAwaits(ir::Operation* exec) {
  std::vector<int64_t> seg = exec->ints_attr("operand_segments");
  if (seg.size() != 2 || seg[0] < 0 || seg[0] > static_cast<int64_t>(exec->num_operands())) return 0;
  return static_cast<unsigned>(seg[0]);
}

// Reaching `a` implies reaching `b` (rules in the file comment).
bool Implies(ir::Value* a, ir::Value* b, int depth = 0) {
  if (a == b || IsImmediate(b)) return true;
  if (depth > 32) return false;
  ir::Operation* def = a->defining_op();
  if (!def) return false;
  if (def->is(ir::OpCode::kStreamTimepointJoin)) {
    for (ir::Value* m : def->operands())
      if (Implies(m, b, depth + 1)) return true;
  } else if (def->is(ir::OpCode::kStreamAsyncExecute) && a->index() == def->num_results() - 1) {
    unsigned n = NumExecuteAwaits(def);
    for (unsigned i = 0; i < n; ++i)
      if (Implies(def->operand(i), b, depth + 1)) return true;
  }
  return false;
}

bool Covered(ir::Value* tp, const TimepointSet& covered, int depth = 0) {
  if (IsImmediate(tp)) return true;
  for (ir::Value* c : covered)
    if (Implies(c, tp)) return true;
  ir::Operation* def = tp->defining_op();
  if (depth < 32 && def && def->is(ir::OpCode::kStreamTimepointJoin) && def->num_operands() > 0) {
    for (ir::Value* m : def->operands())
      if (!Covered(m, covered, depth + 1)) return false;
    return true;
  }
  return false;
}

// Drops members that are immediate, repeated, (when `covered` is given)
// covered, or implied by another kept member. Order is kept.
std::vector<ir::Value*> Prune(const std::vector<ir::Value*>& tps, const TimepointSet* covered) {
  std::vector<ir::Value*> kept;
  for (ir::Value* tp : tps) {
    if (IsImmediate(tp)) continue;
    if (std::find(kept.begin(), kept.end(), tp) != kept.end()) continue;
    if (covered && Covered(tp, *covered)) continue;
    kept.push_back(tp);
  }
  // Implied by another member (a member never implies a distinct one that
  // implies it back: SSA has no cycles through defining ops).
  for (size_t i = 0; i < kept.size();) {
    bool implied = false;
    for (size_t j = 0; j < kept.size() && !implied; ++j)
      if (j != i && Implies(kept[j], kept[i])) implied = true;
    if (implied) {
      kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
  return kept;
}

class Elider {
 public:
  explicit Elider(ir::PassContext& ctx) : ctx_(ctx) {}

  // Processes `region` entered with `in` covered; returns the set covered at
  // the end of its (single) block, or `in` for empty / multi-block regions.
  TimepointSet ProcessRegion(ir::Region* region, const TimepointSet& in) {
    if (region->empty()) return in;
    TimepointSet out = in;
    for (unsigned i = 0; i < region->num_blocks(); ++i) {
      TimepointSet end = ProcessBlock(region->block(i), in);
      if (i == 0) out = end;
    }
    return region->num_blocks() == 1 ? out : in;
  }

 private:
  TimepointSet ProcessBlock(ir::Block* block, TimepointSet covered) {
    for (auto it = block->ops().begin(); it != block->ops().end();) {
      ir::Operation* op = (it++)->get();
      const ir::OpCode n = op->code();
      if (n == ir::OpCode::kStreamTimepointAwait) {
        ProcessAwait(op, covered);
      } else if (n == ir::OpCode::kStreamTimepointJoin) {
        ProcessJoin(op, covered);
      } else if (n == ir::OpCode::kStreamAsyncExecute) {
        ProcessExecute(op, covered);
        for (unsigned r = 0; r < op->num_regions(); ++r) ProcessRegion(op->region(r), covered);
      } else if (n == ir::OpCode::kScfIf || n == ir::OpCode::kScfIndexSwitch) {
        std::vector<TimepointSet> outs;
        bool all = op->num_regions() > 0;
        for (unsigned r = 0; r < op->num_regions(); ++r) {
          if (op->region(r)->empty()) all = false;
          outs.push_back(ProcessRegion(op->region(r), covered));
        }
        if (all) {
          // Covered after the op: covered at the end of every region.
          for (ir::Value* tp : outs[0]) {
            bool everywhere = true;
            for (size_t r = 1; r < outs.size() && everywhere; ++r) everywhere = Covered(tp, outs[r]);
            if (everywhere) covered.insert(tp);
          }
        }
      } else if (n == ir::OpCode::kScfWhile && op->num_regions() == 2) {
        TimepointSet before = ProcessRegion(op->region(0), covered);
        ProcessRegion(op->region(1), before);
        covered = before;
      } else {
        // scf.for (the body may run zero times), execute bodies, others:
        // the covered set flows in, nothing flows out.
        for (unsigned r = 0; r < op->num_regions(); ++r) ProcessRegion(op->region(r), covered);
      }
    }
    return covered;
  }

  void ProcessAwait(ir::Operation* op, TimepointSet& covered) {
    if (op->num_operands() == 0 || op->num_results() + 1 != op->num_operands()) return;
    ir::Value* tp = op->operand(0);
    if (Covered(tp, covered)) {
      for (unsigned i = 0; i < op->num_results(); ++i) op->result(i)->ReplaceAllUsesWith(op->operand(i + 1));
      op->Erase();
      NoteOrphan(tp);
      return;
    }
    if (FoldIntoExecutes(op) || SinkIntoRegions(op)) return;
    covered.insert(tp);
    ctx_.Remark(op, "await kept: its timepoint is not covered by an earlier await in this block, an "
                    "enclosing region, or every branch of an scf op before it; a result is read "
                    "outside an execution region or a single scf.if / index_switch");
  }

  // Rule 5: every use of every result of `await` is a capture operand of a
  // stream.async.execute (in the await's block or nested in a later op's
  // regions: the await's operands dominate it).
  bool FoldIntoExecutes(ir::Operation* await) {
    std::set<ir::Operation*> executes;
    for (ir::Value* r : await->results())
      for (const ir::Use& u : r->uses()) {
        ir::Operation* e = u.user;
        if (!e->is(ir::OpCode::kStreamAsyncExecute) || u.operand_index < NumExecuteAwaits(e) ||
            e->ints_attr("operand_segments").size() != 2)
          return false;
        executes.insert(e);
      }
    if (executes.empty()) return false;
    ir::Value* tp = await->operand(0);
    for (ir::Operation* e : executes) {
      unsigned n = NumExecuteAwaits(e);
      std::vector<ir::Value*> operands(e->operands().begin(), e->operands().end());
      for (unsigned i = n; i < operands.size(); ++i)
        for (unsigned k = 0; k < await->num_results(); ++k)
          if (operands[i] == await->result(k)) operands[i] = await->operand(k + 1);
      operands.insert(operands.begin() + n, tp);
      e->SetOperands(operands);
      std::vector<int64_t> seg = e->ints_attr("operand_segments");
      seg[0] = static_cast<int64_t>(n + 1);
      e->set_attr("operand_segments", ir::Attribute(seg));
    }
    ctx_.Remark(await, "await folded into the execution region" + std::string(executes.size() > 1 ? "s" : "") +
                           " reading its results: the region waits, not the host");
    await->Erase();
    return true;
  }

  // The region of `op` (an scf.if / index_switch) holding `user`, or nullptr.
  static ir::Region* RegionOf(ir::Operation* user, ir::Operation* op) {
    for (ir::Operation* o = user; o; o = o->parent_op()) {
      ir::Block* b = o->parent_block();
      ir::Region* r = b ? b->parent() : nullptr;
      if (r && r->parent_op() == op) return r;
    }
    return nullptr;
  }

  // Rule 6.
  bool SinkIntoRegions(ir::Operation* await) {
    ir::Operation* target = nullptr;
    std::set<ir::Region*> regions;
    for (ir::Value* r : await->results())
      for (const ir::Use& u : r->uses()) {
        ir::Operation* holder = u.user;
        while (holder && holder->parent_block() != await->parent_block()) holder = holder->parent_op();
        if (!holder || holder == u.user ||
            !(holder->is(ir::OpCode::kScfIf) || holder->is(ir::OpCode::kScfIndexSwitch)))
          return false;  // read in the await's block itself, or in another kind of op
        if (target && holder != target) return false;
        target = holder;
        regions.insert(RegionOf(u.user, holder));
      }
    if (!target) return false;
    for (ir::Region* region : regions)
      if (!region || region->num_blocks() != 1 || region->block(0)->ops().empty()) return false;
    for (ir::Region* region : regions) {
      ir::Builder b = ir::Builder::Before(region->block(0)->ops().front().get());
      b.set_loc(await->loc());
      std::vector<ir::Type> types;
      for (ir::Value* r : await->results()) types.push_back(r->type());
      ir::Operation* copy = b.Create("stream.timepoint.await", await->operands(), types);
      for (unsigned k = 0; k < await->num_results(); ++k) {
        std::vector<std::pair<ir::Operation*, unsigned>> inside;
        for (const ir::Use& u : await->result(k)->uses())
          if (RegionOf(u.user, target) == region) inside.push_back({u.user, u.operand_index});
        for (auto& [user, index] : inside) user->SetOperand(index, copy->result(k));
      }
    }
    ctx_.Remark(await, "await sunk into the " + std::to_string(regions.size()) + " region" +
                           (regions.size() > 1 ? "s" : "") + " of " + analysisDescribe(target) +
                           " reading its results: other branches do not wait");
    await->Erase();
    return true;
  }

  static std::string analysisDescribe(const ir::Operation* op) {
    std::string s = "'" + op->name() + "'";
    if (!op->loc().empty()) s += " (" + op->loc() + ")";
    return s;
  }

  void ProcessJoin(ir::Operation* op, const TimepointSet& covered) {
    std::vector<ir::Value*> kept = Prune(op->operands(), &covered);
    for (ir::Value* m : op->operands()) NoteOrphan(m);
    if (kept.size() == 1) {
      op->result(0)->ReplaceAllUsesWith(kept[0]);
      orphans_.erase(op);
      op->Erase();
    } else if (kept.empty()) {
      ir::Builder b = ir::Builder::Before(op);
      b.set_loc(op->loc());
      ir::Operation* imm = b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()});
      op->result(0)->ReplaceAllUsesWith(imm->result(0));
      orphans_.erase(op);
      op->Erase();
    } else if (kept.size() != op->num_operands()) {
      op->SetOperands(kept);
    }
  }

  void ProcessExecute(ir::Operation* op, const TimepointSet& covered) {
    unsigned n = NumExecuteAwaits(op);
    if (n == 0) return;
    std::vector<ir::Value*> awaits(op->operands().begin(), op->operands().begin() + n);
    std::vector<ir::Value*> kept = Prune(awaits, &covered);
    if (kept.size() == awaits.size()) return;
    for (ir::Value* a : awaits) NoteOrphan(a);
    std::vector<ir::Value*> operands = kept;
    operands.insert(operands.end(), op->operands().begin() + n, op->operands().end());
    op->SetOperands(operands);
    std::vector<int64_t> seg = op->ints_attr("operand_segments");
    seg[0] = static_cast<int64_t>(kept.size());
    op->set_attr("operand_segments", ir::Attribute(seg));
  }


 public:
  // Erases joins and immediates that rules 1-3 left without uses (and the
  // ones feeding only them). Timepoint ops the input left dead stay.
  void EraseOrphans() {
    while (!orphans_.empty()) {
      ir::Operation* def = *orphans_.begin();
      orphans_.erase(orphans_.begin());
      if (!def->result(0)->use_empty()) continue;
      std::vector<ir::Value*> members = def->operands();
      def->Erase();
      for (ir::Value* m : members) NoteOrphan(m);
    }
  }

 private:
  void NoteOrphan(ir::Value* tp) {
    ir::Operation* def = tp->defining_op();
    if (def && (def->is(ir::OpCode::kStreamTimepointJoin) || def->is(ir::OpCode::kStreamTimepointImmediate)))
      orphans_.insert(def);
  }

  ir::PassContext& ctx_;
  std::set<ir::Operation*> orphans_;  // timepoint ops that may have lost their last use
};

class ElideTimepointsPass : public ir::Pass {
 public:
  const char* flag() const override { return "elide-timepoints"; }
  const char* description() const override {
    return "Remove awaits and joins already covered by earlier waits (across scf regions)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    Elider elider(ctx);
    for (ir::Operation* func : module.functions())
      for (unsigned r = 0; r < func->num_regions(); ++r) elider.ProcessRegion(func->region(r), {});
    elider.EraseOrphans();
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateElideTimepointsPass() { return std::make_unique<ElideTimepointsPass>(); }

}  // namespace kiln::transforms
