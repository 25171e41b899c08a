// FunctionEmitter::Emit and Record: one func.func as one bytecode function,
// op by op (control flow, calls, dispatches and ABI ownership have files of
// their own).
#include "compiler/backend/emitter.h"

#include "base/dtype.h"

namespace kiln::backend {

Status FunctionEmitter::Emit() {
  KILN_RETURN_IF_ERROR(EmitBody());
  if (barrier_error_.empty() && (!incoming_barriers_.empty() || !active_barriers_.empty()))
    barrier_error_ = "a stream.cmd.barrier precedes no command";
  if (!barrier_error_.empty())
    return InternalError("emit: @%s: %s (--place-barriers and the emitter disagree on the commands)",
                         func_->str_attr("sym_name").c_str(), barrier_error_.c_str());
  return OkStatus();
}

Status FunctionEmitter::EmitBody() {
  ir::Region* region = func_->region(0);
  ir::Block* body = region->block(0);
  multi_block_ = region->num_blocks() > 1;
  ir::Operation* ret = body->terminator();
  if (!multi_block_ && (!ret || !ret->is(OpCode::kFuncReturn)))
    return InvalidArgumentError("emit: function without func.return");
  for (auto& b : region->blocks()) {
    ir::Operation* t = b->terminator();
    if (!t || !(t->is(OpCode::kFuncReturn) || t->is(OpCode::kCfBr) || t->is(OpCode::kCfCondBr)))
      return InvalidArgumentError("emit: a block of the function does not end in func.return, cf.br or cf.cond_br");
  }
  // Arguments occupy ref registers 0..N-1; the command buffer comes next.
  ref_count = body->num_arguments();
  uint16_t cmd = NewRef();
  enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
  KILN_RETURN_IF_ERROR(AssignStorage(body));
  if (!multi_block_) {
    for (auto& owned : body->ops())
      if (owned.get() != ret) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    return EmitReturn(ret, cmd);
  }

  // A body of several blocks (cf.br / cf.cond_br): each block gets a label
  // and each host block argument (i1, index) an i32 register. A block other
  // than the entry may be reached from anywhere, so it starts with only the
  // constants and executables the entry block made before its terminator
  // (the entry dominates every block).
  std::vector<vm::Label> labels;
  std::map<ir::Block*, size_t> index;
  std::vector<ir::Block*> all;
  for (auto& b : region->blocks()) {
    index[b.get()] = labels.size();
    labels.push_back(enc.NewLabel());
    all.push_back(b.get());
    if (b.get() == body) continue;
    for (ir::Value* a : b->arguments())
      if (a->type().kind != ir::TypeKind::kResource) i32_values_[a] = NewI32();
  }
  PathState block_entry;  // what a block other than the entry starts from
  for (ir::Block* b : all) {
    enc.Bind(labels[index[b]]);
    if (b != body) RestoreState(block_entry);
    ir::Operation* t = b->terminator();
    for (auto& owned : b->ops())
      if (owned.get() != t) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    if (b == body) {
      block_entry.consts = consts_;
      block_entry.exes = executable_regs_;
    }
    if (!t->is(OpCode::kFuncReturn)) BeginOp(t);  // EmitReturn begins its own
    if (t->is(OpCode::kFuncReturn)) {
      KILN_RETURN_IF_ERROR(EmitReturn(t, cmd));
    } else if (t->is(OpCode::kCfBr)) {
      if (t->num_successors() != 1) return InvalidArgumentError("emit: cf.br needs one successor");
      KILN_RETURN_IF_ERROR(BranchInto(t, t->successor(0), 0, t->num_operands()));
      enc.Br(labels[index.at(t->successor(0))]);
    } else {
      std::vector<int64_t> seg = t->ints_attr("operand_segments");
      if (t->num_successors() != 2 || seg.size() != 3 || seg[0] != 1 ||
          1 + seg[1] + seg[2] != static_cast<int64_t>(t->num_operands()))
        return InvalidArgumentError("emit: malformed cf.cond_br (%s)", t->loc().c_str());
      auto c = i32_values_.find(t->operand(0));
      if (c == i32_values_.end())
        return UnimplementedError("emit: cf.cond_br condition is not a host value (%s)", t->loc().c_str());
      std::vector<vm::Label> edges = {enc.NewLabel(), enc.NewLabel()};
      enc.CondBr(c->second, edges[0], edges[1]);
      KILN_RETURN_IF_ERROR(RecordPaths(edges, [&](unsigned k) -> Status {
        unsigned first = k == 0 ? 1u : static_cast<unsigned>(1 + seg[1]);
        unsigned count = static_cast<unsigned>(seg[1 + k]);
        KILN_RETURN_IF_ERROR(BranchInto(t, t->successor(k), first, count));
        enc.Br(labels[index.at(t->successor(k))]);
        return OkStatus();
      }));
    }
  }
  return OkStatus();
}

Status FunctionEmitter::Record(ir::Operation* op, uint16_t cmd) {
  auto fill = [&](const Storage& dst, int64_t offset, int64_t length, int64_t pattern) {
    Storage t = dst;
    t.offset += offset;
    t.length = length;
    WriteBarriers(cmd);
    enc.CallImport(HalImport::kCommandBufferFill,
                   {Reg::Ref(cmd), Reg::Ref(t.buffer), Reg::I32(OffsetReg(t)), Reg::I32(ConstReg(length)),
                    Reg::I32(ConstReg(static_cast<int32_t>(pattern)))},
                   {});
  };
  const OpCode n = op->code();
  if (analysis::IsBarrier(op)) {  // written before the next op's command
    incoming_barriers_.push_back(op);
    return OkStatus();
  }
  BeginOp(op);
  if (IsLifetimeOp(op)) return RecordLifetime(op);
  if (n == OpCode::kStreamTimepointImmediate) return OkStatus();  // one queue: recording order is queue order
  // Writes in place (ops.def Tie), or a loop over a consumed import's storage.
  if (ir::Traits(op).tie != ir::Tie::kNone || take_before_.count(op)) EnsureTaken(op, cmd);
  if (n == OpCode::kStreamAsyncDispatch) return EmitDispatch(op, cmd);
  if (n == OpCode::kScfIf || n == OpCode::kScfFor || n == OpCode::kScfWhile || n == OpCode::kScfIndexSwitch) {
    Status s = n == OpCode::kScfIf    ? RecordIf(op, cmd)
               : n == OpCode::kScfFor ? RecordFor(op, cmd)
               : n == OpCode::kScfWhile ? RecordWhile(op, cmd)
                                  : RecordSwitch(op, cmd);
    unsubmitted_work_ = true;  // conservatively, for calls after the region
    return s;
  }
  if (n == OpCode::kFuncCall) return RecordCall(op, cmd);
  if (ir::Traits(op).has(ir::kHostArith)) return RecordHostArith(op);
  if (n == OpCode::kUtilGlobalLoad) return OkStatus();  // a view of the global (snapshots are clones)
  if (n == OpCode::kUtilGlobalStore) {
    // The stored value lives in the global's buffer (a state updated in
    // place by tied ops on a loaded global, or the clone
    // --materialize-edge-copies placed there): nothing to record.
    return RequireInPlace(storage_.at(op->operand(0)), GlobalStorage(op->str_attr("global")), op,
                          "a global store");
  }
  if (n == OpCode::kArithConstant) {
    uint16_t r = NewI32();
    enc.ConstI32(r, static_cast<int32_t>(op->int_attr("value")));
    i32_values_[op->result(0)] = r;
    return OkStatus();
  }
  if (n == OpCode::kStreamAsyncLoad) {
    // A device value the host branches on: submit what is recorded, wait,
    // read it, and continue in a fresh command buffer (same register).
    const Storage& src = storage_.at(op->operand(0));
    int64_t width = static_cast<int64_t>(DTypeSize(ParseDType(op->str_attr("dtype"))));
    // i64 host values (sizes, sample rates) are read through their low 32 bits
    // (little-endian), which holds every value an i32 register can carry.
    if (width == 8 && op->str_attr("dtype") == "i64") width = 4;
    if (width != 1 && width != 2 && width != 4)
      return UnimplementedError("emit: stream.async.load of %s (%s)", op->str_attr("dtype").c_str(), op->loc().c_str());
    WriteHostBarriers(cmd);  // the loaded bytes
    enc.CallImport(HalImport::kCommandBufferExecuteAndWait, {Reg::Ref(cmd)}, {});
    enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
    uint16_t r = NewI32();
    Storage at = src;
    at.offset += op->int_attr("offset");
    enc.CallImport(HalImport::kBufferLoad, {Reg::Ref(at.buffer), Reg::I32(OffsetReg(at)), Reg::I32(ConstReg(width))},
                   {Reg::I32(r)});
    i32_values_[op->result(0)] = r;
    return OkStatus();
  }
  if (n == OpCode::kStreamAsyncClone || n == OpCode::kStreamAsyncTransfer || n == OpCode::kStreamAsyncUpdate ||
      n == OpCode::kStreamAsyncCopy)
    ++m_.report().ir_copies;
  if (n == OpCode::kStreamAsyncClone && storage_.at(op->result(0)).copy_flag) {
    // A result copy shared by a group of results (storage_plan.h "output"
    // with `first`): made only where its storage is not the buffer an
    // earlier result's copy wrote. Barriers are written either way (they
    // may order later commands too), and every register is set before the
    // branch.
    const Storage& from = storage_.at(op->operand(0));
    const Storage& to = storage_.at(op->result(0));
    WriteBarriers(cmd);
    std::vector<Reg> args = {Reg::Ref(cmd),          Reg::Ref(from.buffer), Reg::I32(OffsetReg(from)),
                             Reg::Ref(to.buffer),    Reg::I32(OffsetReg(to)),
                             Reg::I32(ConstReg(op->int_attr("size")))};
    vm::Label copy = enc.NewLabel(), done = enc.NewLabel();
    enc.CondBr(to.copy_flag, copy, done);
    enc.Bind(copy);
    enc.CallImport(HalImport::kCommandBufferCopy, args, {});
    enc.Bind(done);
    --m_.report().ir_copies;
    ++m_.report().output_storage_copies;
  } else if (n == OpCode::kStreamAsyncClone || n == OpCode::kStreamAsyncTransfer) {
    RecordCopy(cmd, storage_.at(op->operand(0)), storage_.at(op->result(0)), op->int_attr("size"));
  } else if (n == OpCode::kStreamAsyncUpdate) {
    if (op->attr("strides"))  // only --emplace-allocations' placement can do a strided update
      return InternalError("emit: strided stream.async.update at %s was not placed", op->loc().c_str());
    Storage dst = storage_.at(op->result(0));
    dst.offset += op->int_attr("offset");
    dst.length = op->int_attr("length");
    RecordCopy(cmd, storage_.at(op->operand(1)), dst, op->int_attr("length"));
  } else if (n == OpCode::kStreamAsyncCopy) {
    Storage src = storage_.at(op->operand(1)), dst = storage_.at(op->result(0));
    src.offset += op->int_attr("src_offset");
    dst.offset += op->int_attr("dst_offset");
    src.length = dst.length = op->int_attr("length");
    RecordCopy(cmd, src, dst, op->int_attr("length"));
  } else if (n == OpCode::kStreamAsyncSplat) {
    fill(storage_.at(op->result(0)), 0, op->int_attr("size"), op->int_attr("pattern"));
  } else if (n == OpCode::kStreamAsyncFill) {
    fill(storage_.at(op->result(0)), op->int_attr("offset"), op->int_attr("length"), op->int_attr("pattern"));
  }
  return OkStatus();
}

// Host index arithmetic (i32 registers): arith.addi / subi / muli, and
// arith.cmpi {predicate = "eq"|"ne"|"slt"|"sle"|"sgt"|"sge"} -> i1.
Status FunctionEmitter::RecordHostArith(ir::Operation* op) {
  if (op->num_operands() != 2 || op->num_results() != 1)
    return InvalidArgumentError("emit: %s expects two operands and one result (%s)", op->name().c_str(),
                                op->loc().c_str());
  auto a = i32_values_.find(op->operand(0)), b = i32_values_.find(op->operand(1));
  if (a == i32_values_.end() || b == i32_values_.end())
    return UnimplementedError("emit: %s operand is not a host value (%s)", op->name().c_str(), op->loc().c_str());
  uint16_t r = NewI32();
  const OpCode n = op->code();
  if (n == OpCode::kArithAddi) {
    enc.AddI32(r, a->second, b->second);
  } else if (n == OpCode::kArithSubi) {
    enc.SubI32(r, a->second, b->second);
  } else if (n == OpCode::kArithMuli) {
    enc.MulI32(r, a->second, b->second);
  } else {
    std::string pred = op->str_attr("predicate");
    uint16_t t = NewI32();
    if (pred == "eq") {
      enc.CmpEqI32(r, a->second, b->second);
    } else if (pred == "ne") {
      enc.CmpEqI32(t, a->second, b->second);
      enc.SubI32(r, ConstReg(1), t);
    } else if (pred == "slt") {
      enc.CmpLtI32(r, a->second, b->second);
    } else if (pred == "sgt") {
      enc.CmpLtI32(r, b->second, a->second);
    } else if (pred == "sle") {
      enc.CmpLtI32(t, b->second, a->second);
      enc.SubI32(r, ConstReg(1), t);
    } else if (pred == "sge") {
      enc.CmpLtI32(t, a->second, b->second);
      enc.SubI32(r, ConstReg(1), t);
    } else {
      return InvalidArgumentError("emit: arith.cmpi predicate '%s' (eq, ne, slt, sle, sgt, sge) (%s)", pred.c_str(),
                                  op->loc().c_str());
    }
  }
  i32_values_[op->result(0)] = r;
  return OkStatus();
}

}  // namespace kiln::backend
