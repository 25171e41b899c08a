// Pass: --schedule-execution
//
// Groups async work into stream.async.execute regions (one submission each)
// and makes the host side wait only where a result is used outside the work.
//
// A run is a maximal sequence of consecutive ops of one block that are all
// async work ops (stream.async.dispatch, fill, copy, clone, update, splat,
// transfer) with the same `affinity` attribute (absent = the default device).
// Any other op ends a run (scf ops, calls, globals, imports/exports,
// constants, allocas, slices, awaits, ...), so there is one region per
// straight-line run; runs in nested scf regions are scheduled on their own.
// Each run becomes:
//   %r:N+1 = "stream.async.execute"(%awaits..., %captures...) ({
//   ^bb0(%captures...): <the run> "stream.yield"(%escaping...)
//   }) {affinity = ..., operand_segments = [n_awaits, n_captures]}
//   %a:N = "stream.timepoint.await"(%r#N, %r#0, ..., %r#N-1)
// where %captures are the values the run uses but does not define (in order
// of first use), %escaping the run's results used after it (in program
// order), and the last result the run's timepoint. Every use of an escaping
// value outside the run is rewritten to the await's result (no await when
// nothing escapes). A capture that is the result of a stream.timepoint.await
// (e.g. of an earlier region) is captured before the await and its timepoint
// joins the region's awaits instead: the device waits, not the host; an await
// left without uses is erased.
//
// Not scheduled: the bodies of stream.async.execute, flow.dispatch and
// flow.executable ops. Preconditions: stream level.
//
// Before:
//   %0 = "stream.async.splat"() {pattern = 0 : i64, size = 16 : i64}
//   %1 = "stream.async.dispatch"(%0) {entry = @d, ...}
//   "func.return"(%1)
// After:
//   %0:2 = "stream.async.execute"() ({
//     %s = "stream.async.splat"() ...
//     %d = "stream.async.dispatch"(%s) ...
//     "stream.yield"(%d)
//   }) {operand_segments = [0, 0]} : () -> (!stream.resource<transient>, !stream.timepoint)
//   %1 = "stream.timepoint.await"(%0#1, %0#0)
//   "func.return"(%1)
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// Device work (ops.def kDeviceWork): dispatch, fill, copy, clone, update,
// splat, transfer.
bool IsAsyncWork(const ir::Operation* op) { return ir::Traits(op).has(ir::kDeviceWork); }

bool IsUnscheduledBody(const ir::Operation* op) {
  return op->is(ir::OpCode::kStreamAsyncExecute) || op->is(ir::OpCode::kFlowDispatch) ||
         op->is(ir::OpCode::kFlowExecutable);
}

void Wrap(const std::vector<ir::Operation*>& run) {
  std::set<ir::Operation*> members(run.begin(), run.end());
  ir::Operation* first = run.front();
  ir::Operation* last = run.back();
  ir::Block* block = first->parent_block();

  // Captures, and the awaits they come through.
  std::vector<ir::Value*> awaits, captures;
  std::map<ir::Value*, ir::Value*> capture_of;  // operand value -> captured value
  std::set<ir::Operation*> bypassed;            // awaits a capture now skips
  for (ir::Operation* op : run)
    for (ir::Value* v : op->operands()) {
      if (v->defining_op() && members.count(v->defining_op())) continue;
      if (capture_of.count(v)) continue;
      ir::Value* captured = v;
      ir::Operation* def = v->defining_op();
      if (def && def->is(ir::OpCode::kStreamTimepointAwait) && def->num_operands() == def->num_results() + 1) {
        captured = def->operand(v->index() + 1);
        ir::Value* tp = def->operand(0);
        if (std::find(awaits.begin(), awaits.end(), tp) == awaits.end()) awaits.push_back(tp);
        bypassed.insert(def);
      }
      capture_of[v] = captured;
      if (std::find(captures.begin(), captures.end(), captured) == captures.end()) captures.push_back(captured);
    }

  // Escaping results and their outside uses.
  std::vector<ir::Value*> escaping;
  std::vector<std::vector<ir::Use>> outside_uses;
  for (ir::Operation* op : run)
    for (ir::Value* r : op->results()) {
      std::vector<ir::Use> outside;
      for (const ir::Use& u : r->uses())
        if (!members.count(u.user)) outside.push_back(u);
      if (outside.empty()) continue;
      escaping.push_back(r);
      outside_uses.push_back(outside);
    }

  std::vector<ir::Value*> operands = awaits;
  operands.insert(operands.end(), captures.begin(), captures.end());
  std::vector<ir::Type> result_types;
  for (ir::Value* v : escaping) result_types.push_back(v->type());
  result_types.push_back(ir::Type::Timepoint());
  std::map<std::string, ir::Attribute> attrs;
  attrs["operand_segments"] = ir::Attribute(std::vector<int64_t>{static_cast<int64_t>(awaits.size()),
                                                                  static_cast<int64_t>(captures.size())});
  if (const ir::Attribute* aff = first->attr("affinity")) attrs["affinity"] = *aff;
  ir::Builder b = ir::Builder::Before(first);
  b.set_loc(first->loc());
  ir::Operation* exec = b.Create("stream.async.execute", operands, result_types, attrs, /*num_regions=*/1);
  ir::Block* body = exec->region(0)->AddBlock();
  std::map<ir::Value*, ir::Value*> arg_of;  // captured value -> block argument
  for (ir::Value* c : captures) arg_of[c] = body->AddArgument(c->type());
  for (ir::Operation* op : run) {
    body->Append(block->Remove(op));
    for (unsigned i = 0; i < op->num_operands(); ++i) {
      auto it = capture_of.find(op->operand(i));
      if (it != capture_of.end()) op->SetOperand(i, arg_of.at(it->second));
    }
  }
  ir::Builder::AtEnd(body).Create("stream.yield", escaping, {});

  if (!escaping.empty()) {
    std::vector<ir::Value*> await_operands = {exec->result(exec->num_results() - 1)};
    std::vector<ir::Type> await_types;
    for (unsigned i = 0; i < escaping.size(); ++i) {
      await_operands.push_back(exec->result(i));
      await_types.push_back(escaping[i]->type());
    }
    // Insert right after the execute op.
    auto it = exec->parent_block()->ops().begin();
    while (it->get() != exec) ++it;
    ++it;
    ir::Builder ab = it == exec->parent_block()->ops().end() ? ir::Builder::AtEnd(exec->parent_block())
                                                             : ir::Builder::Before(it->get());
    ab.set_loc(last->loc());
    ir::Operation* await = ab.Create("stream.timepoint.await", await_operands, await_types);
    for (unsigned i = 0; i < escaping.size(); ++i)
      for (const ir::Use& u : outside_uses[i]) u.user->SetOperand(u.operand_index, await->result(i));
  }
  for (ir::Operation* a : bypassed) {
    bool dead = true;
    for (ir::Value* r : a->results()) dead &= r->use_empty();
    if (dead) a->Erase();
  }
}

void ScheduleBlock(ir::Block* block) {
  std::vector<std::vector<ir::Operation*>> runs;
  std::vector<ir::Operation*> current;
  std::string current_affinity;
  std::vector<ir::Operation*> nested;
  for (auto& owned : block->ops()) {
    ir::Operation* op = owned.get();
    if (IsAsyncWork(op)) {
      std::string aff = op->str_attr("affinity");
      if (!current.empty() && aff != current_affinity) {
        runs.push_back(current);
        current.clear();
      }
      current_affinity = aff;
      current.push_back(op);
      continue;
    }
    if (!current.empty()) runs.push_back(current);
    current.clear();
    if (op->num_regions() > 0 && !IsUnscheduledBody(op)) nested.push_back(op);
  }
  if (!current.empty()) runs.push_back(current);
  // Outer runs first, so runs in nested regions see (and bypass) their awaits.
  for (const auto& run : runs) Wrap(run);
  for (ir::Operation* op : nested)
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks()) ScheduleBlock(b.get());
}

class ScheduleExecutionPass : public ir::Pass {
 public:
  const char* flag() const override { return "schedule-execution"; }
  const char* description() const override {
    return "Wrap straight-line runs of async work into stream.async.execute regions with timepoints";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    (void)ctx;
    for (ir::Operation* func : module.functions())
      for (unsigned r = 0; r < func->num_regions(); ++r)
        for (auto& b : func->region(r)->blocks()) ScheduleBlock(b.get());
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateScheduleExecutionPass() { return std::make_unique<ScheduleExecutionPass>(); }

}  // namespace kiln::transforms
