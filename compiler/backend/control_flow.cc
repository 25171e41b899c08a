// Recording of control flow: scf.if / scf.index_switch / scf.for / scf.while
// regions and branches between blocks (cf.br / cf.cond_br). Every resource on
// an edge already lives in its destination's storage (the allocated level's
// clones carry the copies); the recorder checks it and moves host values.
#include "compiler/backend/emitter.h"


namespace kiln::backend {

Status FunctionEmitter::RequireInPlace(const Storage& from, const Storage& to, ir::Operation* at,
                                       const char* what) const {
  if (SameStorage(from, to)) return OkStatus();
  return InternalError("emit: %s needs a copy the IR does not have (%s): the allocated level must place it "
                       "(--materialize-edge-copies)",
                       what, at->loc().empty() ? at->name().c_str() : at->loc().c_str());
}

Status FunctionEmitter::RequireEdgeInPlace(ir::Operation* edge, const char* what) const {
  for (const analysis::EdgeCopy& c : analysis::EdgeCopiesOf(edge))
    for (size_t k = 0; k < c.operands.size(); ++k) {
      auto dst = storage_.find(c.destinations[k]);
      if (dst == storage_.end()) continue;  // a host value
      KILN_RETURN_IF_ERROR(RequireInPlace(storage_.at(edge->operand(c.operands[k])), dst->second, edge, what));
    }
  return OkStatus();
}

Status FunctionEmitter::RecordPaths(const std::vector<vm::Label>& labels,
                                    const std::function<Status(unsigned)>& record_path) {
  const PathState before = SaveState();
  for (unsigned k = 0; k < labels.size(); ++k) {
    enc.Bind(labels[k]);
    RestoreState(before);
    KILN_RETURN_IF_ERROR(record_path(k));
  }
  RestoreState(before);
  return OkStatus();
}

Status FunctionEmitter::RecordYieldingRegion(ir::Operation* op, unsigned region, uint16_t cmd) {
  if (op->region(region)->empty()) {
    if (op->num_results() == 0) return OkStatus();
    return InvalidArgumentError("emit: empty %s region (%s)", op->name().c_str(), op->loc().c_str());
  }
  ir::Block* block = op->region(region)->block(0);
  ir::Operation* yield = block->terminator();
  if (yield && !yield->is(OpCode::kScfYield)) yield = nullptr;
  for (auto& owned : block->ops())
    if (owned.get() != yield) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  if (yield) BeginOp(yield);
  for (unsigned i = 0; yield && i < yield->num_operands(); ++i) {
    ir::Value* y = yield->operand(i);
    if (y->type().kind == ir::TypeKind::kResource) {
      KILN_RETURN_IF_ERROR(
          RequireInPlace(storage_.at(y), storage_.at(op->result(i)), yield, "a yield into the region's result"));
    } else {
      auto it = i32_values_.find(y);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.yield operand is not a host value (%s)", op->loc().c_str());
      auto res = i32_values_.find(op->result(i));
      if (res == i32_values_.end()) res = i32_values_.emplace(op->result(i), NewI32()).first;
      enc.MovI32(res->second, it->second);
    }
  }
  return OkStatus();
}

// scf.if on a host i1: each branch records into the same command buffer; its
// yields already live in the scf.if's result storage. Register caches are
// branch-local (RecordPaths).
Status FunctionEmitter::RecordIf(ir::Operation* op, uint16_t cmd) {
  auto cond = i32_values_.find(op->operand(0));
  if (cond == i32_values_.end())
    return UnimplementedError("emit: scf.if condition is not a host value (%s)", op->loc().c_str());
  vm::Label then_label = enc.NewLabel(), else_label = enc.NewLabel(), join = enc.NewLabel();
  enc.CondBr(cond->second, then_label, else_label);
  KILN_RETURN_IF_ERROR(RecordPaths({then_label, else_label}, [&](unsigned r) -> Status {
    KILN_RETURN_IF_ERROR(RecordYieldingRegion(op, r, cmd));
    if (r == 0) enc.Br(join);  // the else branch falls through to the join
    return OkStatus();
  }));
  enc.Bind(join);
  return OkStatus();
}

// scf.for with host (i32) bounds, recorded as a bytecode loop that appends
// each trip's commands to the command buffer. Each loop-carried value has one
// storage for the whole loop, which the init and every yield already live in
// (a tied dispatch on the block argument writes straight into it; otherwise
// --materialize-edge-copies placed a clone there).
Status FunctionEmitter::RecordFor(ir::Operation* op, uint16_t cmd) {
  uint16_t bounds[3];
  for (unsigned i = 0; i < 3; ++i) {
    auto it = i32_values_.find(op->operand(i));
    if (it == i32_values_.end())
      return UnimplementedError("emit: scf.for bound %u is not a host value (%s)", i, op->loc().c_str());
    bounds[i] = it->second;
  }
  ir::Block* loop_body = op->region(0)->block(0);
  for (ir::Value* r : op->results())
    if (storage_.count(r))
      KILN_RETURN_IF_ERROR(
          RequireInPlace(storage_.at(op->operand(3 + r->index())), storage_.at(r), op, "a loop's entry"));
  uint16_t iv = NewI32(), in_range = NewI32();
  enc.MovI32(iv, bounds[0]);
  i32_values_[loop_body->argument(0)] = iv;
  vm::Label header = enc.NewLabel(), trip = enc.NewLabel(), exit = enc.NewLabel();
  const PathState before = SaveState();
  enc.Bind(header);
  enc.CmpLtI32(in_range, iv, bounds[1]);
  enc.CondBr(in_range, trip, exit);
  enc.Bind(trip);
  for (auto& owned : loop_body->ops()) {
    if (owned->is(OpCode::kScfYield)) continue;
    KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  }
  ir::Operation* yield = loop_body->terminator();
  if (yield) BeginOp(yield);
  if (yield) KILN_RETURN_IF_ERROR(RequireEdgeInPlace(yield, "a loop's yield"));
  enc.AddI32(iv, iv, bounds[2]);
  enc.Br(header);
  enc.Bind(exit);
  JoinLoopExit(before);
  return OkStatus();
}

// scf.while, recorded as a bytecode loop:
//   header: <before region>; COND_BR cond, body, exit
//   body:   <after region>; BR header
//   exit:
// (inits, forwarded values and yields already live in the carried and
// result storage).
// One storage per loop-carried value: "before" argument i, result i and
// "after" argument i share it when the condition forwards argument i at
// position i (the usual form), so a tied update in the after region writes
// the carried value in place. Host values
// (index, i1) are carried in i32 registers.
Status FunctionEmitter::RecordWhile(ir::Operation* op, uint16_t cmd) {
  if (op->num_regions() != 2 || op->region(0)->empty() || op->region(1)->empty())
    return InvalidArgumentError("emit: scf.while needs a before and an after region (%s)", op->loc().c_str());
  ir::Block* before = op->region(0)->block(0);
  ir::Block* after = op->region(1)->block(0);
  ir::Operation* cond = before->terminator();
  ir::Operation* yield = after->terminator();
  if (!cond || !cond->is(OpCode::kScfCondition) || cond->num_operands() != 1 + op->num_results() ||
      before->num_arguments() != op->num_operands() || after->num_arguments() != op->num_results() || !yield ||
      !yield->is(OpCode::kScfYield) || yield->num_operands() != before->num_arguments())
    return InvalidArgumentError("emit: malformed scf.while (%s)", op->loc().c_str());
  // Host results: one register each, shared with the after argument.
  for (ir::Value* r : op->results()) {
    if (r->type().kind == ir::TypeKind::kResource) continue;
    uint16_t reg = NewI32();
    i32_values_[r] = reg;
    i32_values_[after->argument(r->index())] = reg;
  }
  std::vector<uint16_t> carried_regs(before->num_arguments(), 0);
  for (ir::Value* a : before->arguments()) {
    ir::Value* init = op->operand(a->index());
    if (a->type().kind == ir::TypeKind::kResource) {
      KILN_RETURN_IF_ERROR(RequireInPlace(storage_.at(init), storage_.at(a), op, "a loop's entry"));
    } else {
      auto it = i32_values_.find(init);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.while init %u is not a host value (%s)", a->index(), op->loc().c_str());
      carried_regs[a->index()] = NewI32();
      enc.MovI32(carried_regs[a->index()], it->second);
      i32_values_[a] = carried_regs[a->index()];
    }
  }
  vm::Label header = enc.NewLabel(), trip = enc.NewLabel(), exit = enc.NewLabel();
  const PathState before_loop = SaveState();
  enc.Bind(header);
  for (auto& owned : before->ops())
    if (owned.get() != cond) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  auto c = i32_values_.find(cond->operand(0));
  if (c == i32_values_.end())
    return UnimplementedError("emit: scf.while condition is not a host value (%s)", op->loc().c_str());
  // Forward: the forwarded values already live in the result storage.
  BeginOp(cond);
  KILN_RETURN_IF_ERROR(RequireEdgeInPlace(cond, "scf.condition's forward"));
  for (ir::Value* r : op->results()) {
    ir::Value* fwd = cond->operand(1 + r->index());
    if (r->type().kind != ir::TypeKind::kResource) {
      auto it = i32_values_.find(fwd);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.condition operand is not a host value (%s)", op->loc().c_str());
      enc.MovI32(i32_values_.at(r), it->second);
    }
  }
  enc.CondBr(c->second, trip, exit);
  enc.Bind(trip);
  for (auto& owned : after->ops())
    if (owned.get() != yield) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  // Next values: already in the carried storage; host values through
  // temporary registers (one parallel move).
  BeginOp(yield);
  KILN_RETURN_IF_ERROR(RequireEdgeInPlace(yield, "a loop's yield"));
  std::vector<std::pair<uint16_t, uint16_t>> moves;  // (temp, carried)
  for (ir::Value* a : before->arguments()) {
    ir::Value* y = yield->operand(a->index());
    if (a->type().kind != ir::TypeKind::kResource) {
      auto it = i32_values_.find(y);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.yield operand is not a host value (%s)", op->loc().c_str());
      uint16_t t = NewI32();
      enc.MovI32(t, it->second);
      moves.push_back({t, carried_regs[a->index()]});
    }
  }
  for (auto& [t, dst] : moves) enc.MovI32(dst, t);
  enc.Br(header);
  enc.Bind(exit);
  JoinLoopExit(before_loop);
  return OkStatus();
}

// scf.index_switch on a host index: a compare-and-branch chain (all case
// constants materialized before the first branch), then each region records
// into the same command buffer as in RecordIf; its yields already live in
// the result storage.
Status FunctionEmitter::RecordSwitch(ir::Operation* op, uint16_t cmd) {
  auto index = i32_values_.find(op->operand(0));
  if (index == i32_values_.end())
    return UnimplementedError("emit: scf.index_switch index is not a host value (%s)", op->loc().c_str());
  std::vector<int64_t> cases = op->ints_attr("cases");
  if (op->num_regions() != cases.size() + 1)
    return InvalidArgumentError("emit: scf.index_switch has %u regions for %zu cases (+ default) (%s)",
                                op->num_regions(), cases.size(), op->loc().c_str());
  std::vector<uint16_t> case_regs;
  for (int64_t c : cases) case_regs.push_back(ConstReg(c));
  std::vector<vm::Label> labels;
  for (unsigned r = 0; r < op->num_regions(); ++r) labels.push_back(enc.NewLabel());
  vm::Label join = enc.NewLabel();
  for (size_t k = 0; k < cases.size(); ++k) {
    uint16_t eq = NewI32();
    vm::Label next = enc.NewLabel();
    enc.CmpEqI32(eq, index->second, case_regs[k]);
    enc.CondBr(eq, labels[k], next);
    enc.Bind(next);
  }
  enc.Br(labels.back());
  KILN_RETURN_IF_ERROR(RecordPaths(labels, [&](unsigned r) -> Status {
    KILN_RETURN_IF_ERROR(RecordYieldingRegion(op, r, cmd));
    enc.Br(join);
    return OkStatus();
  }));
  enc.Bind(join);
  return OkStatus();
}

// A branch's operands `first`..`first + count` into `target`'s arguments:
// resources already live in the arguments' storage (checked); host values
// move through temporary registers, as one parallel move.
Status FunctionEmitter::BranchInto(ir::Operation* edge, ir::Block* target, unsigned first, unsigned count) {
  if (count != target->num_arguments() || first + count > edge->num_operands())
    return InvalidArgumentError("emit: branch passes %u values to a block of %u arguments", count,
                                target->num_arguments());
  std::vector<std::pair<uint16_t, uint16_t>> moves;
  for (unsigned i = 0; i < count; ++i) {
    ir::Value* a = target->argument(i);
    ir::Value* v = edge->operand(first + i);
    if (a->type().kind == ir::TypeKind::kResource) {
      KILN_RETURN_IF_ERROR(RequireInPlace(storage_.at(v), storage_.at(a), edge, "a branch operand"));
    } else {
      auto src = i32_values_.find(v);
      auto dst = i32_values_.find(a);
      if (src == i32_values_.end() || dst == i32_values_.end())
        return UnimplementedError("emit: branch operand %u is not a host value or a resource", i);
      uint16_t t = NewI32();
      enc.MovI32(t, src->second);
      moves.push_back({t, dst->second});
    }
  }
  for (auto& [t, dst] : moves) enc.MovI32(dst, t);
  return OkStatus();
}

}  // namespace kiln::backend
