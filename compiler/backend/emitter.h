// Private to compiler/backend: the state shared by the files of the bytecode
// emitter (emit_module.h is the public entry point).
//   ModuleEmitter   one per module: constant pool, executables (shared
//                   shaders), module imports and globals; the module writer
//                   (module_writer.cc) serializes them.
//   FunctionEmitter one per func.func: gives every resource the registers
//                   of its storage in the function's storage plan
//                   (decided by --schedule-allocation; written out by
//                   storage_assignment.cc), then records its ops as
//                   bytecode (function_emitter.cc; control_flow.cc, calls.cc,
//                   abi_ownership.cc, dispatch.cc).
// Storage says where a tensor's bytes live at run time; Range is a byte range
// of one allocation (bindings that may alias, dispatch.cc). Barriers are
// decided by --place-barriers (stream.cmd.barrier ops): the emitter writes
// each out before the command it precedes (WriteBarriers).
#ifndef KILN_COMPILER_BACKEND_EMITTER_H_
#define KILN_COMPILER_BACKEND_EMITTER_H_

#include <climits>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "compiler/analysis/resource_values.h"
#include "compiler/analysis/storage_plan.h"
#include "compiler/backend/emit_module.h"
#include "compiler/backend/shader_dedupe.h"
#include "compiler/codegen/codegen.h"
#include "compiler/ir/ir.h"
#include "vm/isa.h"

namespace kiln::backend {

using vm::Reg;
using ir::OpCode;

// Every binding offset is aligned to this (the largest
// minStorageBufferOffsetAlignment Vulkan permits), so any device can bind it.
constexpr int64_t kBindingAlignment = 256;

inline int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Ordinals of the native hal imports, in vm/hal_imports.def order.
enum HalImport : uint16_t {
#define KILN_HAL_IMPORT(sym, name, sig, meaning) sym,
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
  kHalImportCount
};

// What the backend asks of a resource value (compiler/analysis/resource_values.h).
using analysis::AllocationSource;
using analysis::IsLifetimeOp;
using analysis::RootOf;
using analysis::SizeOf;
using analysis::TiedValue;

// Where a tensor's bytes live at run time.
struct Storage {
  // kVariable: a module global's buffer (util.global; persists across calls).
  enum Kind { kArgument, kConstant, kTransient, kExternal, kVariable } kind = kTransient;
  uint16_t buffer = 0;         // ref register holding the buffer
  int group = 0;               // allocation identity for hazards (registers may alias)
  bool dynamic_offset = false; // offset in an i32 register (argument views)
  uint16_t offset_reg = 0;
  int64_t offset = 0;          // static byte offset
  int64_t length = 0;          // bytes
  // A result copy shared by a group of results of one value (storage_plan.h
  // "output" with `first`): i32 register that is 1 where the copy into this
  // storage must be made, 0 where it is another result's buffer already
  // (0: no such flag, the copy is always made).
  uint16_t copy_flag = 0;
};


inline bool SameStorage(const Storage& a, const Storage& b) {
  return a.group == b.group && a.dynamic_offset == b.dynamic_offset && a.offset == b.offset &&
         (!a.dynamic_offset || a.offset_reg == b.offset_reg);
}

// A byte range touched by a dispatch, for hazard tracking.
struct Range {
  int group;        // allocation identity
  uint16_t buffer;  // register to name in a barrier
  int64_t begin, end;
  bool Overlaps(const Range& o) const { return group == o.group && begin < o.end && o.begin < end; }
};

// One shared shader (compiler/backend/shader_dedupe.h) and its entry points.
struct ExecutableEntry {
  codegen::CompiledDispatch compiled;    // the first dispatch's
  std::vector<std::string> debug_names;  // per entry point
  std::vector<std::string> locs;         // per entry point: its ONNX nodes, joined
  std::vector<uint64_t> macs;            // per entry point: codegen::DispatchMacs (EntryPoint.macs)
};

class FunctionEmitter;

class ModuleEmitter {
 public:
  ModuleEmitter(const EmitOptions& options, EmitReport* report) : options_(options), report_(report) {}

  StatusOr<std::vector<uint8_t>> Emit(ir::Module& module);

  // Constant pool: byte offset of `op`'s data (packed on first request).
  int64_t ConstantOffset(ir::Operation* constant) {
    auto it = constant_offsets_.find(constant);
    if (it != constant_offsets_.end()) return it->second;
    const ir::DenseElements* dense = constant->dense_attr("value");
    int64_t offset = AlignUp(static_cast<int64_t>(pool_.size()), kBindingAlignment);
    pool_.resize(offset);
    pool_.insert(pool_.end(), dense->bytes(), dense->bytes() + dense->data->size());
    // A zero-element constant still names the pool (global 0 must exist).
    if (pool_.empty()) pool_.resize(kBindingAlignment);
    constant_offsets_[constant] = offset;
    return offset;
  }

  // Compiles `dispatch` (sharing shaders that differ only in baked integer
  // constants, shader_dedupe.h); returns the executable ordinal and sets
  // `*entry` to the entry point within it. `aliased_bindings`: this call
  // site's bindings that may overlap a written one
  // (codegen::CodegenOptions::aliased_bindings; empty: none).
  // `element_offsets`: per operand, the call site's
  // codegen::CodegenOptions::operand_element_offsets (empty: none).
  // `result_element_offsets` / `result_strides`: per result, the call
  // site's placement (codegen::CodegenOptions, same names).
  StatusOr<uint16_t> ExecutableFor(ir::Operation* dispatch, const std::vector<bool>& aliased_bindings,
                                   const std::vector<int64_t>& element_offsets,
                                   const std::vector<int64_t>& result_element_offsets,
                                   const std::vector<std::vector<int64_t>>& result_strides,
                                   const std::vector<bool>& texel_eligible, codegen::CompiledDispatch* out,
                                   uint32_t* entry);

  const EmitOptions& options() const { return options_; }
  EmitReport& report() { return *report_; }

  // --- Imports of other modules (multi-module programs) -------------------
  // A `func.func {import = true}` declaration ("module.function") the
  // bytecode calls through CALL_IMPORT. Ordinals follow the native hal
  // imports (which are never renumbered), in order of first use.
  struct ModuleImport {
    ir::Operation* decl = nullptr;
    uint16_t ordinal = 0;
    std::vector<ir::Type> arg_types, result_types;
    std::vector<bool> consume;  // per argument (arg_ownership)
    // A function defined in this module: `ordinal` is its index among the
    // module's functions and the call is a VM CALL (same calling
    // convention and ownership rules as CALL_IMPORT of another module).
    bool local = false;
  };
  // The callee `call` (a func.call) reaches, checked against its declaration
  // or definition: another module's function (an import) or one of this
  // module's functions. Errors (kInvalidArgument): a callee that no
  // func.func declares or defines, operand/result counts that differ.
  StatusOr<const ModuleImport*> ModuleImportFor(ir::Module& module, ir::Operation* call);
  // Module globals (util.global): global ordinal (0 is the constant pool,
  // user globals are 1..N in declaration order) and byte size.
  struct GlobalInfo {
    uint16_t ordinal = 0;
    int64_t size = 0;
  };
  const GlobalInfo* FindGlobal(const std::string& sym) const {
    auto it = globals_.find(sym);
    return it == globals_.end() ? nullptr : &it->second;
  }
  // Collects util.global ops and checks every util.global.load/store names
  // one (each load's byte size, `size`, is --schedule-allocation's).
  Status CollectGlobals(ir::Module& module);

 private:
  std::map<std::string, GlobalInfo> globals_;
  std::vector<std::string> global_order_;
  const EmitOptions& options_;
  EmitReport* report_;
  std::vector<uint8_t> pool_;
  std::map<ir::Operation*, int64_t> constant_offsets_;
  std::vector<ExecutableEntry> executables_;
  ShaderDeduper shaders_;
  std::deque<ModuleImport> module_imports_;  // in ordinal order (stable addresses)
  std::deque<ModuleImport> local_callees_;   // functions of this module called by func.call
  friend class FunctionEmitter;
};

// Emits one func.func (at the stream level) as one bytecode function.
class FunctionEmitter {
 public:
  FunctionEmitter(ModuleEmitter& m, ir::Module& module, ir::Operation* func) : m_(m), module_(module), func_(func) {}

  Status Emit();

  vm::BytecodeEncoder enc;
  // Registers used per bank. Counted wide so an over-long function is an
  // error (Emit checks vm::kMaxRegisters) and never wraps; indices handed
  // out past the limit are never encoded into a module.
  uint32_t i32_count = 0, ref_count = 0;
  std::vector<uint32_t> debug_offsets;
  std::vector<std::string> debug_locations;

 private:
  Status EmitBody();
  uint16_t NewRef() { return static_cast<uint16_t>(ref_count++); }
  uint16_t NewI32() { return static_cast<uint16_t>(i32_count++); }
  uint16_t ConstReg(int64_t v) {
    auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    uint16_t r = NewI32();
    enc.ConstI32(r, static_cast<int32_t>(v));
    consts_[v] = r;
    return r;
  }
  uint16_t OffsetReg(const Storage& s) {
    if (!s.dynamic_offset) return ConstReg(s.offset);
    if (s.offset == 0) return s.offset_reg;
    uint16_t r = NewI32();  // view offset + static subrange offset
    enc.AddI32(r, s.offset_reg, ConstReg(s.offset));
    return r;
  }
  Range RangeOf(const Storage& s) const {
    if (s.dynamic_offset) return Range{s.group, s.buffer, 0, INT64_MAX};  // unknown: whole buffer
    return Range{s.group, s.buffer, s.offset, s.offset + s.length};
  }
  int NewGroup() { return next_group_++; }
  Status AssignStorage(ir::Block* body);
  bool MovableArgument(ir::Operation* call, ir::Value* operand, const ir::Type& type, uint16_t* arg_reg);
  Status Record(ir::Operation* op, uint16_t cmd);
  // Barriers (--place-barriers, compiler/transforms/place_barriers.h): a
  // stream.cmd.barrier op is queued when recorded and written out right
  // before command `command` of the op that follows it. BeginOp starts that
  // op's commands (every op Record sees, and the terminators recorded
  // outside it); WriteBarriers is called before each hazard-tracked command
  // the op records (a dispatch, copy or fill) and writes the barriers
  // placed before it. A barrier left unwritten is an internal error (the
  // pass and the emitter disagree on the command sequence).
  void BeginOp(ir::Operation* op) {
    if (!active_barriers_.empty() && barrier_error_.empty())
      barrier_error_ = "a stream.cmd.barrier before " + barrier_op_->name() + " (" + barrier_op_->loc() +
                       ") precedes no command of it";
    active_barriers_ = std::move(incoming_barriers_);
    incoming_barriers_.clear();
    barrier_op_ = op;
    command_index_ = 0;
  }
  void WriteBarriers(uint16_t cmd);
  // The host barriers (`host = true`) placed before the current op, written
  // right before the submission it makes (a func.return's execute, a
  // stream.async.load's execute_and_wait) as hal.command_buffer.host_barrier.
  void WriteHostBarriers(uint16_t cmd);
  void WriteBarrier(ir::Operation* barrier, uint16_t cmd);  // one barrier op's import call
  std::vector<ir::Operation*> incoming_barriers_;  // recorded since the last BeginOp
  std::vector<ir::Operation*> active_barriers_;    // placed before barrier_op_, not yet written
  ir::Operation* barrier_op_ = nullptr;
  int64_t command_index_ = 0;
  std::string barrier_error_;
  std::vector<Storage> slot_storage_;  // per plan storage id: its registers (barriers name them)
  // Result-copy groups (storage_plan.h "output" with `first`), by the first
  // storage id: the buffer the results without output storage share, and
  // whether one was written already (i32 1/0).
  struct SharedResult {
    uint16_t buffer = 0, offset = 0, valid = 0;
  };
  std::map<int, SharedResult> shared_results_;
  std::map<int, uint16_t> has_output_storage_;  // "output" storage id -> i32: the caller supplied it
  StatusOr<SharedResult*> SharedResultOf(int first, const std::vector<Storage>& slots,
                                         const analysis::StoragePlan& plan);
  Status EmitDispatch(ir::Operation* op, uint16_t cmd);
  // A new ref register holding a buffer view of `s` (buffer, offset) with
  // `type`'s dtype and shape (kBufferViewCreate): how a tensor is handed to a
  // caller (returns) or a callee (call arguments). The caller drops it.
  uint16_t CreateView(const Storage& s, const ir::Type& type);
  void BindingArgs(const Storage& s, std::vector<vm::Reg>* args) {
    args->push_back(Reg::Ref(s.buffer));
    args->push_back(Reg::I32(OffsetReg(s)));
    args->push_back(Reg::I32(ConstReg(s.length)));
  }

  ModuleEmitter& m_;
  ir::Module& module_;
  std::unordered_map<std::string, ir::Operation*> executables_;  // flow.executable by sym_name
  ir::Operation* func_;
  std::map<int64_t, uint16_t> consts_;
  std::map<ir::Value*, Storage> storage_;
  std::map<ir::Value*, uint16_t> i32_values_;  // host scalars (i1, index) in i32 registers
  Status RecordIf(ir::Operation* op, uint16_t cmd);
  Status RecordFor(ir::Operation* op, uint16_t cmd);
  // Multi-module calls (func.call of an import declaration).
  Status RecordCall(ir::Operation* op, uint16_t cmd);
  // Submits the work recorded so far into `cmd` WITHOUT a host wait (not
  // final: its timepoint is what the callee's work is ordered after) and
  // starts a fresh command buffer in the same register. The context's queue
  // runs submissions in order and every command buffer begins with a full
  // barrier, so the callee's submissions, and then the caller's next ones,
  // see everything submitted before them: nothing is pending after it, and
  // the invocation's wait fence covers both modules.
  void SubmitAndRestart(uint16_t cmd) {
    enc.CallImport(HalImport::kCommandBufferExecute, {Reg::Ref(cmd), Reg::I32(ConstReg(0))}, {});
    enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
    unsubmitted_work_ = false;
  }
  // Whether commands may have been recorded into the current command buffer
  // since it was created (WriteBarriers, take_or_clone and every scf op set it): a
  // call in the function's entry block with nothing recorded before it
  // needs no submission of its own (an empty submit is still a queue round trip).
  bool unsubmitted_work_ = false;
  Status RecordWhile(ir::Operation* op, uint16_t cmd);
  // What recording carries along one path of control flow: the register
  // caches (constants and executables made so far). Every path out of a
  // fork starts from the state before the fork.
  struct PathState {
    std::map<int64_t, uint16_t> consts;
    std::map<uint16_t, uint16_t> exes;
  };
  PathState SaveState() const { return {consts_, executable_regs_}; }
  void RestoreState(const PathState& s) {
    consts_ = s.consts;
    executable_regs_ = s.exes;
  }
  // Records the alternative paths out of one fork (the branches of scf.if,
  // the cases of scf.index_switch, the two edges of cf.cond_br): path k is
  // bound at labels[k] and recorded by record_path(k), each from the state
  // before the fork. Afterwards the register caches are those from before
  // the fork (a register first made on one path may never have run).
  Status RecordPaths(const std::vector<vm::Label>& labels, const std::function<Status(unsigned)>& record_path);
  // One region of scf.if / scf.index_switch `op`: records its ops, then
  // copies what its scf.yield yields into `op`'s results (resources into
  // their storage unless the value already lives there, host values into
  // the result's i32 register). An empty region (scf.if without results and
  // without else) records nothing.
  Status RecordYieldingRegion(ir::Operation* op, unsigned region, uint16_t cmd);
  // State at a loop's exit label: the register caches from before the loop
  // (constants or executables first made in its regions may never have run).
  void JoinLoopExit(const PathState& before) { RestoreState(before); }
  Status RecordSwitch(ir::Operation* op, uint16_t cmd);
  Status RecordHostArith(ir::Operation* op);
  // Function bodies of several blocks (cf.br / cf.cond_br): a branch's
  // operands into `target`'s arguments (resources checked in place, host
  // values moved between registers).
  Status BranchInto(ir::Operation* edge, ir::Block* target, unsigned first, unsigned count);
  Status EmitReturn(ir::Operation* ret, uint16_t cmd);
  // Storage of module global `sym` in this function (its buffer register is
  // loaded once in the prologue).
  const Storage& GlobalStorage(const std::string& sym) { return global_storage_.at(sym); }
  std::map<std::string, Storage> global_storage_;
  // A consumed import written in place ("taken" storage of the plan),
  // taken at its first write.
  struct LazyTake {
    uint16_t arg = 0;  // argument (view) register
    Storage storage;   // registers that view the argument until taken
    uint16_t flag = 0; // i32 register: 1 once taken
  };
  std::map<int, LazyTake> lazy_takes_;  // by storage id
  std::map<ir::Value*, int> storage_ids_;  // every resource value's storage id (the plan's)
  // Before an op that writes a taken storage in place (or a loop the plan
  // takes it before): if not taken yet, (buffer, offset) =
  // take_or_clone(cmd, arg) and set the flag.
  void EnsureTaken(ir::Operation* op, uint16_t cmd) {
    for (ir::Value* r : op->results())
      if (ir::Value* t = TiedValue(op, r->index()))
        if (auto id = storage_ids_.find(t); id != storage_ids_.end()) EnsureTakenStorage(id->second, cmd);
    if (auto it = take_before_.find(op); it != take_before_.end())
      for (int id : it->second) EnsureTakenStorage(id, cmd);
  }
  std::map<ir::Operation*, std::vector<int>> take_before_;
  // Takes storage `id` (lazy_takes_) unless it is taken already or is not
  // a taken storage.
  void EnsureTakenStorage(int id, uint16_t cmd) {
    auto it = lazy_takes_.find(id);
    if (it == lazy_takes_.end()) return;
    const LazyTake& lt = it->second;
    vm::Label take = enc.NewLabel(), done = enc.NewLabel();
    enc.CondBr(lt.flag, done, take);
    enc.Bind(take);
    enc.CallImport(HalImport::kBufferViewTakeOrClone, {Reg::Ref(cmd), Reg::Ref(lt.arg)},
                   {Reg::Ref(lt.storage.buffer), Reg::I32(lt.storage.offset_reg)});
    enc.ConstI32(lt.flag, 1);
    enc.Bind(done);
    unsubmitted_work_ = true;  // take_or_clone may have recorded a copy
  }
  // The backend records no copy of its own. Every resource that flows along
  // an edge (a region's yield, a loop's entry and yield, scf.condition's
  // forward, a branch's operand) or into a global (util.global.store) must
  // already live in its destination's storage: --materialize-edge-copies and
  // --materialize-result-copies write the copies the plan implies as IR.
  // Error (kInternal) naming `what` and `at`'s location when it does not.
  Status RequireInPlace(const Storage& from, const Storage& to, ir::Operation* at, const char* what) const;
  // RequireInPlace for each resource operand of `edge` and the value it
  // flows into (analysis::EdgeCopiesOf).
  Status RequireEdgeInPlace(ir::Operation* edge, const char* what) const;
  bool multi_block_ = false;
  // Records a copy of `length` bytes from `from` to `to`, after the barriers
  // placed before it.
  void RecordCopy(uint16_t cmd, const Storage& from, const Storage& to, int64_t length) {
    WriteBarriers(cmd);
    enc.CallImport(HalImport::kCommandBufferCopy,
                   {Reg::Ref(cmd), Reg::Ref(from.buffer), Reg::I32(OffsetReg(from)), Reg::Ref(to.buffer),
                    Reg::I32(OffsetReg(to)), Reg::I32(ConstReg(length))},
                   {});
  }
  Status RecordBlock(ir::Block* block, uint16_t cmd) {
    for (auto& owned : block->ops()) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    return OkStatus();
  }
  // stream.resource.dealloca / release of one of these (consumed imports
  // neither taken nor donated) drops its registers: the runtime frees the
  // buffer once the command buffers that use it retire (queue-ordered).
  // import result -> its argument view register; call result -> kNoView.
  static constexpr uint16_t kNoView = UINT16_MAX;
  std::map<ir::Value*, uint16_t> droppable_;
  Status RecordLifetime(ir::Operation* op);
  std::map<uint16_t, uint16_t> executable_regs_;
  uint16_t pool_reg_ = 0;
  bool pool_loaded_ = false;
  int pool_group_ = -1;
  int next_group_ = 0;
};

// Pre-order walk of `block` and the blocks of nested regions (scf.*).
template <typename F>
void ForEachOp(ir::Block* block, F&& f) {
  for (auto& owned : block->ops()) owned->Walk(f);
}

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_EMITTER_H_
