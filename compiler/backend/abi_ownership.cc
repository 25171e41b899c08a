// ABI ownership at run time: the end of a function's ownership of a consumed
// argument or call result (stream.resource.dealloca / release), and the
// results it returns (func.return).
#include "compiler/backend/emitter.h"

#include <algorithm>

namespace kiln::backend {

// stream.resource.dealloca(%r, %tp) / release(%r): the end of this
// function's ownership of %r, right after its last use (queue order: the
// command buffer recorded so far retains what it uses until it retires).
//  - a transient in the arena: nothing to emit; the dealloca ended its
//    lifetime in the transient plan (--schedule-allocation);
//  - a consumed import that kept the caller's allocation, or the result of
//    a call into another module (droppable_): drop the argument view and
//    buffer registers, so the runtime frees the buffer (or hands it back to
//    the callee's allocate_cached slot) when the last command buffer using
//    it retires instead of when the function returns.
//    Nothing after the dealloca touches the allocation (--place-barriers
//    drops its pending ranges: no later barrier names it).
// stream.resource.retain(%r): the escaping use takes its own reference
// (a register, a global, a result view), so there is nothing to emit.
Status FunctionEmitter::RecordLifetime(ir::Operation* op) {
  EmitReport& report = m_.report();
  (op->is(OpCode::kStreamResourceRetain) ? report.retains
   : op->is(OpCode::kStreamResourceRelease) ? report.releases : report.deallocas)++;
  // Several blocks: block order is not execution order, so a drop placed by
  // program position could run before a use in a later-executed block; keep
  // the registers (freed at return, as without the pass).
  if (op->is(OpCode::kStreamResourceRetain) || multi_block_) return OkStatus();
  auto it = droppable_.find(RootOf(op->operand(0)));
  if (it == droppable_.end()) return OkStatus();
  const Storage& s = storage_.at(it->first);
  enc.ConstRefZero(s.buffer);
  if (it->second != kNoView) enc.ConstRefZero(it->second);
  report.dropped_registers++;
  return OkStatus();
}

// func.return: the command buffer is submitted without blocking and each
// result is returned as a view. A result must be storage the caller owns;
// one still living in the constant pool, a global or a borrowed argument is
// an error (--materialize-result-copies clones it first).
Status FunctionEmitter::EmitReturn(ir::Operation* ret, uint16_t cmd) {
  BeginOp(ret);
  std::vector<std::pair<ir::Type, Storage>> results;
  for (ir::Value* v : ret->operands()) {
    ir::Operation* exp = v->defining_op();
    if (!exp || !exp->is(OpCode::kStreamTensorExport))
      return InvalidArgumentError("emit: function result is not a stream.tensor.export");
    Storage s = storage_.at(exp->operand(0));
    ir::Operation* root = RootOf(exp->operand(0))->defining_op();
    bool borrowed = s.kind == Storage::kArgument && root && root->is(OpCode::kStreamTensorImport) &&
                    !root->bool_attr("consume");
    if (s.kind == Storage::kConstant || s.kind == Storage::kVariable || borrowed)
      return InvalidArgumentError(
          "emit: a result lives in the constant pool, a global or a borrowed argument (%s); "
          "--materialize-result-copies clones it into storage the caller owns",
          exp->loc().c_str());
    results.push_back({v->type(), s});
  }
  // Submit without blocking; "final" (1): the invocation's signal fence rides
  // on this submission (kiln_invoke_async), a synchronous invoke waits once.
  WriteHostBarriers(cmd);  // what the host reads once it has waited
  enc.CallImport(HalImport::kCommandBufferExecute, {Reg::Ref(cmd), Reg::I32(ConstReg(1))}, {});
  std::vector<Reg> ret_regs;
  for (auto& [t, s] : results) ret_regs.push_back(Reg::Ref(CreateView(s, t)));
  enc.Ret(ret_regs);
  return OkStatus();
}

uint16_t FunctionEmitter::CreateView(const Storage& s, const ir::Type& t) {
  std::vector<Reg> vargs = {Reg::Ref(s.buffer), Reg::I32(OffsetReg(s)),
                            Reg::I32(ConstReg(static_cast<int64_t>(t.dtype))), Reg::I32(ConstReg(t.rank()))};
  for (int64_t d : t.shape) vargs.push_back(Reg::I32(ConstReg(d)));
  uint16_t view = NewRef();
  enc.CallImport(HalImport::kBufferViewCreate, vargs, {Reg::Ref(view)});
  return view;
}

}  // namespace kiln::backend
