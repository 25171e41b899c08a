#include "compiler/target/lower_timeline.h"

#include <vector>

namespace kiln::target {

Status LowerTimeline(ir::Operation* func, int* regions, int* awaits) {
  int n_regions = 0, n_awaits = 0;
  std::vector<ir::Operation*> executes, timeline_ops;
  func->Walk([&](ir::Operation* op) {
    if (op->is("stream.async.execute")) executes.push_back(op);
  });
  for (ir::Operation* exec : executes) {
    if (exec->num_regions() != 1 || exec->region(0)->blocks().size() != 1)
      return InvalidArgumentError("emit: stream.async.execute (%s) must have one region with one block",
                                  exec->loc().c_str());
    std::vector<int64_t> seg = exec->ints_attr("operand_segments");
    if (seg.size() != 2 || seg[0] < 0 || seg[1] < 0 || seg[0] + seg[1] != exec->num_operands())
      return InvalidArgumentError("emit: stream.async.execute (%s): bad operand_segments", exec->loc().c_str());
    ir::Block* body = exec->region(0)->block(0);
    if (body->num_arguments() != static_cast<unsigned>(seg[1]))
      return InvalidArgumentError("emit: stream.async.execute (%s): %u block arguments for %lld captures",
                                  exec->loc().c_str(), body->num_arguments(), static_cast<long long>(seg[1]));
    ir::Operation* yield = body->terminator();
    if (!yield || !yield->is("stream.yield") || yield->num_operands() + 1 != exec->num_results())
      return InvalidArgumentError("emit: stream.async.execute (%s): the region must end in stream.yield of %u values",
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
  // Awaits: the resources themselves.
  std::vector<ir::Operation*> await_ops;
  func->Walk([&](ir::Operation* op) {
    if (op->is("stream.timepoint.await")) await_ops.push_back(op);
  });
  for (ir::Operation* a : await_ops) {
    if (a->num_operands() != a->num_results() + 1)
      return InvalidArgumentError("emit: stream.timepoint.await (%s): %u operands for %u results", a->loc().c_str(),
                                  a->num_operands(), a->num_results());
    for (unsigned i = 0; i < a->num_results(); ++i) a->result(i)->ReplaceAllUsesWith(a->operand(i + 1));
    a->Erase();
    ++n_awaits;
  }
  // Deallocas: one queue, recorded in order, so "after %tp" is "after the
  // work recorded before the dealloca"; an immediate timepoint says so (the
  // emitter lowers the dealloca itself, emit_module.cc RecordLifetime).
  std::vector<ir::Operation*> deallocas;
  func->Walk([&](ir::Operation* op) {
    if (op->is("stream.resource.dealloca") && op->num_operands() == 2) deallocas.push_back(op);
  });
  for (ir::Operation* d : deallocas) {
    ir::Operation* def = d->operand(1)->defining_op();
    if (def && def->is("stream.timepoint.immediate")) continue;
    ir::Builder b = ir::Builder::Before(d);
    b.set_loc(d->loc());
    d->SetOperand(1, b.Create("stream.timepoint.immediate", {}, {ir::Type::Timepoint()})->result(0));
  }
  auto only_deallocas = [](ir::Operation* op) {
    for (const ir::Use& u : op->result(0)->uses())
      if (!u.user->is("stream.resource.dealloca")) return false;
    return true;
  };
  // Joins and immediates, once unused (joins may feed joins).
  for (bool changed = true; changed;) {
    changed = false;
    timeline_ops.clear();
    func->Walk([&](ir::Operation* op) {
      if (op->is("stream.timepoint.join") || op->is("stream.timepoint.immediate")) timeline_ops.push_back(op);
    });
    for (ir::Operation* op : timeline_ops) {
      if (!op->result(0)->use_empty()) continue;
      op->Erase();
      changed = true;
    }
  }
  for (ir::Operation* op : timeline_ops) {
    if (op->is("stream.timepoint.immediate") && only_deallocas(op)) continue;
    const ir::Use& u = op->result(0)->uses().front();
    return UnimplementedError("emit: a timepoint (%s) is used by '%s' (%s); only execution regions, awaits and "
                              "joins of one queue are supported",
                              op->loc().c_str(), u.user->name().c_str(), u.user->loc().c_str());
  }
  if (regions) *regions = n_regions;
  if (awaits) *awaits = n_awaits;
  return OkStatus();
}

}  // namespace kiln::target
