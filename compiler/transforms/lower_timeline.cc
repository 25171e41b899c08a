#include "compiler/transforms/lower_timeline.h"

#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {

using ir::OpCode;

namespace {

bool IsTimepoint(const ir::Value* v) { return v->type().kind == ir::TypeKind::kTimepoint; }

// An immediate timepoint standing for `v` (a timepoint block argument or
// result that is about to be erased): on one queue it is reached when the
// work recorded before it is, which is what `v` stood for.
void ReplaceWithImmediate(ir::Value* v, ir::Builder b) {
  if (v->use_empty()) return;
  ir::Operation* now = b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()});
  v->ReplaceAllUsesWith(now->result(0));
}
ir::Builder AtBlockStart(ir::Block* b) {
  return b->empty() ? ir::Builder::AtEnd(b) : ir::Builder::Before(b->ops().front().get());
}
ir::Builder AfterOp(ir::Operation* op) {
  ir::Block* b = op->parent_block();
  for (auto it = b->ops().begin(); it != b->ops().end(); ++it)
    if (it->get() == op) {
      ++it;
      return it == b->ops().end() ? ir::Builder::AtEnd(b) : ir::Builder::Before(it->get());
    }
  return ir::Builder::AtEnd(b);
}

// Removes the timepoints carried through region and branch control flow
// (scf.if / index_switch / for / while results, yields and region
// arguments; cf.br / cf.cond_br block arguments): each becomes an immediate
// timepoint where it was used. Returns how many were removed.
int StripControlFlowTimepoints(ir::Operation* func) {
  int removed = 0;
  std::vector<ir::Operation*> ops;
  func->Walk([&](ir::Operation* op) { ops.push_back(op); });
  auto yields_of = [](ir::Operation* op) {
    std::vector<ir::Operation*> ys;
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks())
        if (ir::Operation* t = b->terminator(); t && t->parent_op() == op && (t->is(OpCode::kScfYield)))
          ys.push_back(t);
    return ys;
  };
  for (ir::Operation* op : ops) {
    const OpCode n = op->code();
    if (n == OpCode::kScfIf || n == OpCode::kScfIndexSwitch) {
      for (unsigned k = op->num_results(); k-- > 0;) {
        if (!IsTimepoint(op->result(k))) continue;
        ReplaceWithImmediate(op->result(k), AfterOp(op));
        for (ir::Operation* y : yields_of(op))
          if (k < y->num_operands()) y->EraseOperand(k);
        op->EraseResult(k);
        ++removed;
      }
    } else if (n == OpCode::kScfFor && op->num_regions() == 1 && !op->region(0)->empty()) {
      ir::Block* body = op->region(0)->block(0);
      ir::Operation* y = body->terminator();
      for (unsigned k = op->num_results(); k-- > 0;) {
        if (!IsTimepoint(op->result(k)) || k + 1 >= body->num_arguments() || 3 + k >= op->num_operands()) continue;
        ReplaceWithImmediate(op->result(k), AfterOp(op));
        ReplaceWithImmediate(body->argument(k + 1), AtBlockStart(body));
        if (y && y->is(OpCode::kScfYield) && k < y->num_operands()) y->EraseOperand(k);
        body->EraseArgument(k + 1);
        op->EraseOperand(3 + k);
        op->EraseResult(k);
        ++removed;
      }
    } else if (n == OpCode::kScfWhile && op->num_regions() == 2 && !op->region(0)->empty() &&
               !op->region(1)->empty()) {
      ir::Block* before = op->region(0)->block(0);
      ir::Block* after = op->region(1)->block(0);
      ir::Operation* cond = before->terminator();
      ir::Operation* y = after->terminator();
      // Forwarded values: scf.condition operand 1 + j, result j, after arg j.
      for (unsigned j = op->num_results(); j-- > 0;) {
        if (!IsTimepoint(op->result(j))) continue;
        ReplaceWithImmediate(op->result(j), AfterOp(op));
        if (j < after->num_arguments()) {
          ReplaceWithImmediate(after->argument(j), AtBlockStart(after));
          after->EraseArgument(j);
        }
        if (cond && cond->is(OpCode::kScfCondition) && 1 + j < cond->num_operands()) cond->EraseOperand(1 + j);
        op->EraseResult(j);
        ++removed;
      }
      // Carried values: init k, before arg k, after-region yield operand k.
      for (unsigned k = before->num_arguments(); k-- > 0;) {
        if (!IsTimepoint(before->argument(k))) continue;
        ReplaceWithImmediate(before->argument(k), AtBlockStart(before));
        before->EraseArgument(k);
        if (k < op->num_operands()) op->EraseOperand(k);
        if (y && y->is(OpCode::kScfYield) && k < y->num_operands()) y->EraseOperand(k);
        ++removed;
      }
    }
  }
  // Branches: a timepoint block argument of a block other than the entry.
  ir::Region* body = func->region(0);
  for (auto& blk : body->blocks()) {
    if (blk.get() == body->block(0)) continue;
    for (unsigned k = blk->num_arguments(); k-- > 0;) {
      if (!IsTimepoint(blk->argument(k))) continue;
      ReplaceWithImmediate(blk->argument(k), AtBlockStart(blk.get()));
      for (auto& pred : body->blocks()) {
        ir::Operation* t = pred->terminator();
        if (!t) continue;
        if (t->is(OpCode::kCfBr) && t->num_successors() == 1 && t->successor(0) == blk.get()) {
          if (k < t->num_operands()) t->EraseOperand(k);
        } else if (t->is(OpCode::kCfCondBr) && t->num_successors() == 2) {
          std::vector<int64_t> seg = t->ints_attr("operand_segments");
          if (seg.size() != 3) continue;
          // The false successor first: erasing keeps the true segment's indices.
          for (int s = 1; s >= 0; --s) {
            if (t->successor(static_cast<unsigned>(s)) != blk.get()) continue;
            unsigned at = 1 + (s == 1 ? static_cast<unsigned>(seg[1]) : 0) + k;
            if (at < t->num_operands()) {
              t->EraseOperand(at);
              --seg[1 + s];
            }
          }
          t->set_attr("operand_segments", ir::Attribute(seg));
        }
      }
      blk->EraseArgument(k);
      ++removed;
    }
  }
  return removed;
}

}  // namespace

Status LowerTimeline(ir::Operation* func, int* regions, int* awaits) {
  int n_regions = 0, n_awaits = 0;
  std::vector<ir::Operation*> executes, timeline_ops;
  func->Walk([&](ir::Operation* op) {
    if (op->is(OpCode::kStreamAsyncExecute)) executes.push_back(op);
  });
  for (ir::Operation* exec : executes) {
    if (exec->num_regions() != 1 || exec->region(0)->blocks().size() != 1)
      return InvalidArgumentError("lower-timeline: stream.async.execute (%s) must have one region with one block",
                                  exec->loc().c_str());
    std::vector<int64_t> seg = exec->ints_attr("operand_segments");
    if (seg.size() != 2 || seg[0] < 0 || seg[1] < 0 || seg[0] + seg[1] != exec->num_operands())
      return InvalidArgumentError("lower-timeline: stream.async.execute (%s): bad operand_segments", exec->loc().c_str());
    ir::Block* body = exec->region(0)->block(0);
    if (body->num_arguments() != static_cast<unsigned>(seg[1]))
      return InvalidArgumentError("lower-timeline: stream.async.execute (%s): %u block arguments for %lld captures",
                                  exec->loc().c_str(), body->num_arguments(), static_cast<long long>(seg[1]));
    ir::Operation* yield = body->terminator();
    if (!yield || !yield->is(OpCode::kStreamYield) || yield->num_operands() + 1 != exec->num_results())
      return InvalidArgumentError("lower-timeline: stream.async.execute (%s): the region must end in stream.yield of %u values",
                                  exec->loc().c_str(), exec->num_results() - 1);
    // Captures are the operands themselves.
    for (unsigned i = 0; i < body->num_arguments(); ++i)
      body->argument(i)->ReplaceAllUsesWith(exec->operand(static_cast<unsigned>(seg[0]) + i));
    // Results alias what the region yields.
    for (unsigned i = 0; i + 1 < exec->num_results(); ++i) exec->result(i)->ReplaceAllUsesWith(yield->operand(i));
    // The region's timepoint: reached in queue order, like an immediate one.
    ir::Value* tp = exec->result(exec->num_results() - 1);
    if (!tp->use_empty()) {
      ir::Builder b = ir::Builder::Before(exec);
      b.set_loc(exec->loc());
      ir::Operation* now = b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()});
      tp->ReplaceAllUsesWith(now->result(0));
    }
    yield->Erase();
    while (!body->empty()) body->ops().front()->MoveBefore(exec);
    exec->Erase();
    ++n_regions;
  }
  // Timepoints carried through control flow: immediates where they are used.
  StripControlFlowTimepoints(func);
  // Awaits: the resources themselves.
  std::vector<ir::Operation*> await_ops;
  func->Walk([&](ir::Operation* op) {
    if (op->is(OpCode::kStreamTimepointAwait)) await_ops.push_back(op);
  });
  for (ir::Operation* a : await_ops) {
    if (a->num_operands() != a->num_results() + 1)
      return InvalidArgumentError("lower-timeline: stream.timepoint.await (%s): %u operands for %u results", a->loc().c_str(),
                                  a->num_operands(), a->num_results());
    for (unsigned i = 0; i < a->num_results(); ++i) a->result(i)->ReplaceAllUsesWith(a->operand(i + 1));
    a->Erase();
    ++n_awaits;
  }
  // Deallocas: one queue, recorded in order, so "after %tp" is "after the
  // work recorded before the dealloca"; an immediate timepoint says so (the
  // emitter lowers the dealloca itself, function_emitter.cc RecordLifetime).
  std::vector<ir::Operation*> deallocas;
  func->Walk([&](ir::Operation* op) {
    if (op->is(OpCode::kStreamResourceDealloca) && op->num_operands() == 2) deallocas.push_back(op);
  });
  for (ir::Operation* d : deallocas) {
    ir::Operation* def = d->operand(1)->defining_op();
    if (def && def->is(OpCode::kStreamTimepointImmediate)) continue;
    ir::Builder b = ir::Builder::Before(d);
    b.set_loc(d->loc());
    d->SetOperand(1, b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()})->result(0));
  }
  auto only_deallocas = [](ir::Operation* op) {
    for (const ir::Use& u : op->result(0)->uses())
      if (!u.user->is(OpCode::kStreamResourceDealloca)) return false;
    return true;
  };
  // Joins and immediates, once unused (joins may feed joins).
  for (bool changed = true; changed;) {
    changed = false;
    timeline_ops.clear();
    func->Walk([&](ir::Operation* op) {
      if (op->is(OpCode::kStreamTimepointJoin) || op->is(OpCode::kStreamTimepointImmediate)) timeline_ops.push_back(op);
    });
    for (ir::Operation* op : timeline_ops) {
      if (!op->result(0)->use_empty()) continue;
      op->Erase();
      changed = true;
    }
  }
  for (ir::Operation* op : timeline_ops) {
    if (op->is(OpCode::kStreamTimepointImmediate) && only_deallocas(op)) continue;
    const ir::Use& u = op->result(0)->uses().front();
    return UnimplementedError("lower-timeline: a timepoint (%s) is used by '%s' (%s); only execution regions, awaits and "
                              "joins of one queue are supported",
                              op->loc().c_str(), u.user->name().c_str(), u.user->loc().c_str());
  }
  if (regions) *regions = n_regions;
  if (awaits) *awaits = n_awaits;
  return OkStatus();
}

namespace {

class LowerTimelinePass : public ir::Pass {
 public:
  const char* flag() const override { return "lower-timeline"; }
  const char* description() const override {
    return "Record execution regions in place and drop timepoints (one in-order queue)";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      int regions = 0, awaits = 0;
      KILN_RETURN_IF_ERROR(LowerTimeline(func, &regions, &awaits).Annotate("function @" + func->str_attr("sym_name")));
      if (regions + awaits > 0)
        ctx.Remark(func, "lowered " + std::to_string(regions) + " execution regions and " + std::to_string(awaits) +
                             " awaits");
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateLowerTimelinePass() { return std::make_unique<LowerTimelinePass>(); }

}  // namespace kiln::transforms
