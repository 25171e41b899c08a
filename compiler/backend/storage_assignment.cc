// FunctionEmitter::AssignStorage: writes out the function's storage plan
// (compiler/analysis/storage_plan.h, decided by --schedule-allocation) as
// the register prologue: argument views, the arena, lazily taken and
// donated arguments, output and cached buffers, globals, the constant pool,
// call results and parallel-copy temporaries. It decides nothing: every
// value's Storage is its plan storage's registers plus the plan's offset.
#include "compiler/backend/emitter.h"

namespace kiln::backend {

// The registers of the result-copy group whose first storage is `first`
// (storage_plan.h "output" with `first`), made at its first member: the
// first storage is the buffer the results without output storage share,
// unless it is the caller's output storage for its own result.
StatusOr<FunctionEmitter::SharedResult*> FunctionEmitter::SharedResultOf(int first, const std::vector<Storage>& slots,
                                                                        const analysis::StoragePlan& plan) {
  using Slot = analysis::StorageSlot;
  auto it = shared_results_.find(first);
  if (it != shared_results_.end()) return &it->second;
  const Slot& f = plan.storages[static_cast<size_t>(first)];
  if (f.kind != Slot::kOutput && f.kind != Slot::kCached && f.kind != Slot::kDonated)
    return InvalidArgumentError("emit: a shared result copy names storage %d (%s), which backs no result", first,
                                analysis::StorageKindName(f.kind));
  const Storage& fs = slots[static_cast<size_t>(first)];
  SharedResult g;
  g.buffer = NewRef();
  g.offset = NewI32();
  g.valid = NewI32();
  enc.MovRef(g.buffer, fs.buffer);
  enc.MovI32(g.offset, fs.dynamic_offset ? fs.offset_reg : ConstReg(0));
  enc.ConstI32(g.valid, 1);
  auto has = has_output_storage_.find(first);
  if (has != has_output_storage_.end()) {  // the caller's storage: no member may share it
    vm::Label caller = enc.NewLabel(), join = enc.NewLabel();
    enc.CondBr(has->second, caller, join);
    enc.Bind(caller);
    enc.ConstI32(g.valid, 0);
    enc.Bind(join);
  }
  return &shared_results_.emplace(first, g).first->second;
}

Status FunctionEmitter::AssignStorage(ir::Block* body) {
  KILN_ASSIGN_OR_RETURN(analysis::StoragePlan plan, analysis::ReadStoragePlan(func_));
  using Slot = analysis::StorageSlot;
  std::vector<Storage> slots(plan.storages.size());
  std::map<int64_t, const Storage*> args;  // argument index -> its view's storage
  uint16_t arena = 0;
  int arena_group = -1;
  EmitReport& report = m_.report();
  report.arena_bytes = std::max(report.arena_bytes, plan.arena_size);
  report.live_bytes_peak = std::max(report.live_bytes_peak, plan.live_bytes_peak);
  for (size_t id = 0; id < plan.storages.size(); ++id) {
    const Slot& p = plan.storages[id];
    Storage& s = slots[id];
    s.length = p.length;
    if ((p.kind == Slot::kArgument || p.kind == Slot::kTaken || p.kind == Slot::kDonated) &&
        (p.index >= body->num_arguments() || (p.kind != Slot::kArgument && !args.count(p.index))))
      return InvalidArgumentError("emit: storage %zu (%s) names argument %lld, which is not planned", id,
                                  analysis::StorageKindName(p.kind), static_cast<long long>(p.index));
    switch (p.kind) {
      case Slot::kArgument: {  // the caller's view, in ref register `index`
        ir::Value* arg = body->argument(static_cast<unsigned>(p.index));
        s.kind = Storage::kArgument;
        s.buffer = NewRef();
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        s.length = arg->type().byte_size();
        s.group = NewGroup();
        enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(static_cast<uint16_t>(p.index))}, {Reg::Ref(s.buffer)});
        enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(static_cast<uint16_t>(p.index))},
                       {Reg::I32(s.offset_reg)});
        args[p.index] = &s;
        break;
      }
      case Slot::kArena:
        report.unplanned_transient_bytes += AlignUp(p.length, kBindingAlignment);
        if (plan.arena_size <= 0) break;
        if (arena_group < 0) {  // slot 0 of the context's cache: the same arena on every call
          arena = NewRef();
          arena_group = NewGroup();
          enc.CallImport(HalImport::kAllocatorAllocateCached,
                         {Reg::I32(ConstReg(0)), Reg::I32(ConstReg(plan.arena_size)), Reg::I32(ConstReg(0))},
                         {Reg::Ref(arena)});
        }
        s.kind = Storage::kTransient;
        s.group = arena_group;
        s.buffer = arena;
        s.offset = p.offset;
        break;
      case Slot::kTaken: {
        // Until taken, the registers view the argument itself (same bytes).
        const Storage& a = *args.at(p.index);
        s = a;
        s.buffer = NewRef();
        s.offset_reg = NewI32();
        enc.MovRef(s.buffer, a.buffer);
        enc.MovI32(s.offset_reg, a.offset_reg);
        LazyTake t;
        t.arg = static_cast<uint16_t>(p.index);
        t.storage = s;
        t.flag = NewI32();
        enc.ConstI32(t.flag, 0);  // not from ConstReg: the register changes
        lazy_takes_[static_cast<int>(id)] = t;
        break;
      }
      case Slot::kDonated: {
        s.kind = Storage::kExternal;
        s.buffer = NewRef();
        s.group = args.at(p.index)->group;  // may be the caller's bytes: hazards against its reads
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        enc.CallImport(HalImport::kBufferViewTakeOrAllocate,
                       {Reg::Ref(static_cast<uint16_t>(p.index)), Reg::I32(ConstReg(p.length)), Reg::I32(ConstReg(1))},
                       {Reg::Ref(s.buffer), Reg::I32(s.offset_reg)});
        break;
      }
      case Slot::kOutput: {
        // Caller output storage for result k when supplied (written in place,
        // returned as the caller's own tensor), else a cached buffer:
        //   view = output_storage(k); if (view) {buf, off} = view else {cached, 0}
        s.kind = Storage::kExternal;
        s.buffer = NewRef();
        s.group = NewGroup();
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        // A member of a result-copy group (`first`), without output storage:
        // the buffer the group's results share when one is written already
        // (copy_flag 0: its copy is skipped), else a cached buffer that
        // becomes the shared one:
        //   ... else if (group.valid) {buf, off} = group, flag = 0
        //            else {buf, off} = group = {cached, 0}, valid = 1, flag = 1
        uint16_t k = ConstReg(p.index), slot_reg = ConstReg(p.slot);
        uint16_t size_reg = ConstReg(AlignUp(p.length, 16)), kind_reg = ConstReg(1), zero = ConstReg(0);
        uint16_t view = NewRef(), has_view = NewI32();
        SharedResult* group = nullptr;
        if (p.first >= 0) {
          if (p.first >= static_cast<int64_t>(id))
            return InvalidArgumentError("emit: storage %zu shares a result copy with a later storage %lld", id,
                                        static_cast<long long>(p.first));
          KILN_ASSIGN_OR_RETURN(group, SharedResultOf(static_cast<int>(p.first), slots, plan));
          s.copy_flag = NewI32();
        }
        vm::Label use = enc.NewLabel(), fresh = enc.NewLabel(), join = enc.NewLabel();
        enc.CallImport(HalImport::kBufferViewOutputStorage, {Reg::I32(k)}, {Reg::Ref(view)});
        enc.CmpNzRef(has_view, view);
        enc.CondBr(has_view, use, fresh);
        enc.Bind(use);
        enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(view)}, {Reg::Ref(s.buffer)});
        enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(view)}, {Reg::I32(s.offset_reg)});
        if (group) enc.ConstI32(s.copy_flag, 1);
        enc.Br(join);
        enc.Bind(fresh);
        if (group) {
          vm::Label share = enc.NewLabel(), own = enc.NewLabel();
          enc.CondBr(group->valid, share, own);
          enc.Bind(share);
          enc.MovRef(s.buffer, group->buffer);
          enc.MovI32(s.offset_reg, group->offset);
          enc.ConstI32(s.copy_flag, 0);
          enc.Br(join);
          enc.Bind(own);
        }
        enc.CallImport(HalImport::kAllocatorAllocateCached, {Reg::I32(slot_reg), Reg::I32(size_reg), Reg::I32(kind_reg)},
                       {Reg::Ref(s.buffer)});
        enc.MovI32(s.offset_reg, zero);
        if (group) {
          enc.ConstI32(s.copy_flag, 1);
          enc.MovRef(group->buffer, s.buffer);
          enc.MovI32(group->offset, s.offset_reg);
          enc.ConstI32(group->valid, 1);
        }
        enc.Bind(join);
        enc.ConstRefZero(view);  // drop the extra reference to the caller's view
        has_output_storage_[static_cast<int>(id)] = has_view;
        break;
      }
      case Slot::kCached:
      case Slot::kTemporary:
        // A cached buffer of the context (kind 1: a result's; 0: a transient's).
        s.kind = p.kind == Slot::kCached ? Storage::kExternal : Storage::kTransient;
        s.buffer = NewRef();
        s.group = NewGroup();
        enc.CallImport(HalImport::kAllocatorAllocateCached,
                       {Reg::I32(ConstReg(p.slot)), Reg::I32(ConstReg(AlignUp(p.length, 16))),
                        Reg::I32(ConstReg(p.kind == Slot::kCached ? 1 : 0))},
                       {Reg::Ref(s.buffer)});
        break;
      case Slot::kGlobal: {
        // One register per global, loaded in the prologue (the buffers live
        // for the whole context).
        const ModuleEmitter::GlobalInfo* g = m_.FindGlobal(p.global);
        if (!g) return InvalidArgumentError("emit: storage %zu names no util.global @%s", id, p.global.c_str());
        s.kind = Storage::kVariable;
        s.buffer = NewRef();
        s.group = NewGroup();
        s.length = g->size;
        enc.GlobalLoadRef(s.buffer, g->ordinal);
        global_storage_[p.global] = s;
        break;
      }
      case Slot::kConstant:
        if (!pool_loaded_) {
          pool_reg_ = NewRef();
          pool_group_ = NewGroup();
          enc.GlobalLoadRef(pool_reg_, 0);
          pool_loaded_ = true;
        }
        s.kind = Storage::kConstant;
        s.group = pool_group_;
        s.buffer = pool_reg_;
        break;
      case Slot::kCallResult:
        // The callee's result view: (buffer, offset) registers set by RecordCall.
        s.kind = Storage::kExternal;
        s.buffer = NewRef();
        s.group = NewGroup();
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        break;
    }
  }

  // Every resource value: its storage's registers, `offset` bytes in.
  // Constants are packed into the pool in program order (deterministic).
  Status status;
  for (auto& b : func_->region(0)->blocks())
    ForEachOp(b.get(), [&](ir::Operation* op) {
      if (op->is(OpCode::kStreamAsyncConstant)) m_.ConstantOffset(op);
    });
  for (auto& [v, vs] : plan.values) {
    const Slot& p = plan.storages[static_cast<size_t>(vs.id)];
    Storage s = slots[static_cast<size_t>(vs.id)];
    s.offset += vs.offset;
    if (p.kind == Slot::kConstant) {
      ir::Operation* constant = RootOf(v)->defining_op();
      if (!constant || !constant->is(OpCode::kStreamAsyncConstant)) {
        status = InvalidArgumentError("emit: a value in the constant pool is not a stream.async.constant's");
        break;
      }
      s.offset += m_.ConstantOffset(constant);
    }
    if (int64_t size = SizeOf(v); size > 0) s.length = size;
    storage_[v] = s;
    storage_ids_[v] = vs.id;
    ir::Operation* def = v->defining_op();
    if (def && def->is(OpCode::kUtilGlobalLoad) && p.kind != Slot::kGlobal) {
      status = InvalidArgumentError(
          "emit: util.global.load @%s is not placed in its global (a snapshot is a clone after the load: "
          "--materialize-edge-copies)",
          def->str_attr("global").c_str());
      break;
    }
    // The caller owns a call result: its dealloca drops the buffer register.
    if (def && def->is(OpCode::kFuncCall) && p.kind == Slot::kCallResult) droppable_[v] = kNoView;
  }
  KILN_RETURN_IF_ERROR(status);
  for (ir::Operation* imp : plan.droppable)
    droppable_[imp->result(0)] = static_cast<uint16_t>(imp->operand(0)->index());
  for (auto& [loop, ids] : plan.take_before) take_before_[loop] = ids;
  slot_storage_ = slots;
  // Parallel-copy temporaries are copies: --materialize-edge-copies writes
  // them as clones and drops them from the plan.
  for (auto& [edge, temps] : plan.edge_temps)
    if (!temps.empty())
      return InternalError("emit: %s (%s) still has parallel-copy temporaries in its storage plan "
                           "(--materialize-edge-copies writes them as clones)",
                           edge->name().c_str(), edge->loc().c_str());
  return OkStatus();
}

}  // namespace kiln::backend
