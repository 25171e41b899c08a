#include "compiler/target/emit_module.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <climits>
#include <set>
#include <unordered_map>

#include "base/dtype.h"
#include "compiler/analysis/command_sequence.h"
#include "compiler/analysis/resource_usage.h"
#include "compiler/analysis/topology.h"
#include "compiler/codegen/dispatch_macs.h"
#include "compiler/target/lower_timeline.h"
#include "compiler/target/shader_dedupe.h"
#include "compiler/target/transient_planner.h"
#include "schemas/module_integrity.h"
#include "vm/isa.h"
#include "vm/static_commands.h"

namespace kiln::target {
namespace {

namespace fb = kiln::format;
using vm::Reg;

// Every binding offset is aligned to this (the largest
// minStorageBufferOffsetAlignment Vulkan permits), so any device can bind it.
constexpr int64_t kBindingAlignment = 256;

int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

// Ordinals of the native hal imports, in vm/hal_imports.def order.
enum HalImport : uint16_t {
#define KILN_HAL_IMPORT(sym, name, sig, meaning) sym,
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
  kHalImportCount
};
struct ImportDef { const char* name; const char* signature; };
const ImportDef kHalImports[] = {
#define KILN_HAL_IMPORT(sym, name, sig, meaning) {name, sig},
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
};

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
};

bool SameStorage(const Storage& a, const Storage& b) {
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

// One shared shader (compiler/target/shader_dedupe.h) and its entry points.
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
  // `*entry` to the entry point within it.
  StatusOr<uint16_t> ExecutableFor(ir::Operation* dispatch, codegen::CompiledDispatch* out,
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
  // Collects util.global ops, checks every util.global.load/store names one,
  // and records each load's byte size on it (`size`).
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

// Types listed in an import declaration's `arg_types` / `result_types`.
std::vector<ir::Type> DeclTypes(ir::Operation* decl, const char* name) {
  std::vector<ir::Type> out;
  if (const ir::AttrList* l = decl->list_attr(name))
    for (const ir::Attribute& a : *l)
      if (const ir::Type* t = std::get_if<ir::Type>(&a.value)) out.push_back(*t);
  return out;
}

StatusOr<const ModuleEmitter::ModuleImport*> ModuleEmitter::ModuleImportFor(ir::Module& module,
                                                                           ir::Operation* call) {
  const ir::Attribute* a = call->attr("callee");
  const ir::SymbolRef* callee = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  if (!callee) return InvalidArgumentError("emit: func.call without a callee (%s)", call->loc().c_str());
  for (const ModuleImport& m : module_imports_)
    if (m.decl->str_attr("sym_name") == callee->name) return &m;
  for (const ModuleImport& m : local_callees_)
    if (m.decl->str_attr("sym_name") == callee->name) return &m;
  ir::Operation* decl = module.LookupFunction(callee->name);
  if (!decl)
    return InvalidArgumentError(
        "emit: func.call @%s (%s): no function of that name; declare another module's function with "
        "func.func {import = true, sym_name = \"module.function\", arg_types = [...], result_types = [...]}",
        callee->name.c_str(), call->loc().c_str());
  if (!decl->bool_attr("import")) {
    // A function of this module: its signature is its entry block's
    // arguments and its (first) func.return's operands.
    ModuleImport m;
    m.decl = decl;
    m.local = true;
    std::vector<ir::Operation*> defs = module.functions();
    m.ordinal = static_cast<uint16_t>(std::find(defs.begin(), defs.end(), decl) - defs.begin());
    ir::Block* entry = decl->region(0)->block(0);
    for (ir::Value* a : entry->arguments()) m.arg_types.push_back(a->type());
    for (auto& b : decl->region(0)->blocks())
      if (b->terminator() && b->terminator()->is("func.return")) {
        for (ir::Value* r : b->terminator()->operands()) m.result_types.push_back(r->type());
        break;
      }
    std::vector<std::string> own = decl->strs_attr("arg_ownership");
    for (size_t i = 0; i < m.arg_types.size(); ++i) m.consume.push_back(i < own.size() && own[i] == "consume");
    for (const ir::Type& t : m.arg_types)
      if (!t.is_tensor())
        return UnimplementedError("emit: func.call @%s (%s): the callee takes a non-tensor argument",
                                  callee->name.c_str(), call->loc().c_str());
    if (call->num_operands() != m.arg_types.size() || call->num_results() != m.result_types.size())
      return InvalidArgumentError("emit: func.call @%s (%s): %u operands and %u results, the function has %zu and %zu",
                                  callee->name.c_str(), call->loc().c_str(), call->num_operands(),
                                  call->num_results(), m.arg_types.size(), m.result_types.size());
    local_callees_.push_back(std::move(m));
    return &local_callees_.back();
  }
  ModuleImport m;
  m.decl = decl;
  m.arg_types = DeclTypes(decl, "arg_types");
  m.result_types = DeclTypes(decl, "result_types");
  std::vector<std::string> own = decl->strs_attr("arg_ownership");
  for (size_t i = 0; i < m.arg_types.size(); ++i) m.consume.push_back(i < own.size() && own[i] == "consume");
  if (call->num_operands() != m.arg_types.size() || call->num_results() != m.result_types.size())
    return InvalidArgumentError("emit: func.call @%s (%s): signature mismatch: the declaration takes %zu arguments "
                                "and returns %zu results, the call passes %u and expects %u",
                                callee->name.c_str(), call->loc().c_str(), m.arg_types.size(),
                                m.result_types.size(), call->num_operands(), call->num_results());
  for (const ir::Type& t : m.arg_types)
    if (!t.is_tensor()) return InvalidArgumentError("emit: import @%s: argument type %s is not a tensor", callee->name.c_str(), t.ToString().c_str());
  for (const ir::Type& t : m.result_types)
    if (!t.is_tensor()) return InvalidArgumentError("emit: import @%s: result type %s is not a tensor", callee->name.c_str(), t.ToString().c_str());
  if (kHalImportCount + module_imports_.size() >= 0xffff)
    return ResourceExhaustedError("emit: too many imports");
  m.ordinal = static_cast<uint16_t>(kHalImportCount + module_imports_.size());
  module_imports_.push_back(std::move(m));
  return &module_imports_.back();
}

// The typed calling-convention signature of a module import:
// "rr_r:1x76x32x1xf32,...->1x1x1x96xf32" (vm/isa.h ImportSignature).
std::string ModuleImportSignature(const ModuleEmitter::ModuleImport& m) {
  vm::ImportSignature sig;
  sig.fixed_args.assign(m.arg_types.size(), 'r');
  sig.results.assign(m.result_types.size(), 'r');
  sig.typed = true;
  for (const ir::Type& t : m.arg_types) sig.arg_types.push_back(vm::TensorType{t.dtype, {t.shape.begin(), t.shape.end()}});
  for (const ir::Type& t : m.result_types) sig.result_types.push_back(vm::TensorType{t.dtype, {t.shape.begin(), t.shape.end()}});
  return sig.ToString();
}

StatusOr<uint16_t> ModuleEmitter::ExecutableFor(ir::Operation* dispatch,
                                                codegen::CompiledDispatch* out, uint32_t* entry) {
  KILN_ASSIGN_OR_RETURN(codegen::CompiledDispatch compiled,
                        codegen::CompileDispatch(dispatch, options_.codegen));
  if (options_.glsl_dump) *options_.glsl_dump << "// ---- " << compiled.debug_name << "\n" << compiled.glsl << "\n";
  report_->dispatches++;
  std::string locs;
  if (const ir::Attribute* a = dispatch->attr("locs")) {
    if (auto* list = std::get_if<std::shared_ptr<ir::AttrList>>(&a->value))
      for (const ir::Attribute& l : **list)
        if (auto* s = std::get_if<std::string>(&l.value)) locs += (locs.empty() ? "" : ", ") + *s;
  }
  // A dispatch with an f16-arithmetic variant shares its executable only
  // with dispatches whose variant is the same word for word (so nothing in
  // the group is specialized, and the variant serves every member as is).
  std::vector<uint32_t> key = compiled.push_constants;
  if (!compiled.spirv_f16.empty()) {
    key.push_back(0xF16F16u);
    key.insert(key.end(), compiled.spirv_f16.begin(), compiled.spirv_f16.end());
  }
  ShaderDeduper::Placement p = shaders_.Add(compiled.spirv, key);
  if (p.shader == executables_.size()) executables_.push_back({compiled, {}, {}, {}});
  ExecutableEntry& e = executables_[p.shader];
  if (p.entry == e.debug_names.size()) {
    e.debug_names.push_back(compiled.debug_name);
    e.locs.push_back(locs);
    e.macs.push_back(codegen::DispatchMacs(dispatch));
  }
  *out = std::move(compiled);
  *entry = p.entry;
  return static_cast<uint16_t>(p.shader);
}

Status ModuleEmitter::CollectGlobals(ir::Module& module) {
  for (auto& owned : module.body()->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is("util.global")) continue;
    std::string sym = op->str_attr("sym_name");
    int64_t size = op->int_attr("size", -1);
    if (sym.empty()) return InvalidArgumentError("emit: util.global without sym_name (%s)", op->loc().c_str());
    if (size <= 0)
      return InvalidArgumentError("emit: util.global @%s needs a positive byte `size` attribute (%s)", sym.c_str(),
                                  op->loc().c_str());
    if (globals_.count(sym)) return InvalidArgumentError("emit: util.global @%s declared twice", sym.c_str());
    if (global_order_.size() >= 0xFFFE) return InvalidArgumentError("emit: too many util.global ops");
    globals_[sym] = GlobalInfo{static_cast<uint16_t>(1 + global_order_.size()), size};
    global_order_.push_back(sym);
  }
  Status status;
  for (ir::Operation* func : module.functions()) {
    func->Walk([&](ir::Operation* op) {
      if (!status.ok() || (!op->is("util.global.load") && !op->is("util.global.store"))) return;
      std::string sym = op->str_attr("global");
      const GlobalInfo* g = FindGlobal(sym);
      if (!g) {
        status = InvalidArgumentError("emit: %s names no util.global @%s (%s)", op->name().c_str(), sym.c_str(),
                                      op->loc().c_str());
        return;
      }
      if (op->is("util.global.load")) {
        if (op->num_results() != 1 || op->result(0)->type().kind != ir::TypeKind::kResource) {
          status = InvalidArgumentError("emit: util.global.load @%s must give one resource (%s)", sym.c_str(),
                                        op->loc().c_str());
          return;
        }
        op->set_attr("size", ir::Attribute(g->size));
      } else if (op->num_operands() != 1 || op->operand(0)->type().kind != ir::TypeKind::kResource) {
        status = InvalidArgumentError("emit: util.global.store @%s takes one resource (%s)", sym.c_str(),
                                      op->loc().c_str());
      }
    });
  }
  return status;
}

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
  // A result is returned through a buffer allocated per invoke (a copy of a
  // borrowed argument, a constant or a global): the command sequence binds a
  // fresh buffer every time, so it cannot be replayed (static_commands).
  bool per_invoke_allocation = false;
  std::vector<uint32_t> debug_offsets;
  std::vector<std::string> debug_locations;

 private:
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
  Status AssignStorage(ir::Block* body, uint16_t cmd);
  // Roots of the values passed to `consume` parameters of imports in `body`.
  StatusOr<std::set<ir::Value*>> MovedIntoCalls(ir::Block* body);
  bool MovableArgument(ir::Operation* call, ir::Value* operand, const ir::Type& type, uint16_t* arg_reg);
  Status Record(ir::Operation* op, uint16_t cmd);
  // Records a barrier first when `reads`/`writes` conflict with work recorded
  // since the last barrier.
  void Sync(uint16_t cmd, const std::vector<Range>& reads, const std::vector<Range>& writes);
  Status EmitDispatch(ir::Operation* op, uint16_t cmd);
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
    pending_reads_.clear();  // the host wait ordered everything before it
    pending_writes_.clear();
    unsubmitted_work_ = false;
  }
  // Whether commands may have been recorded into the current command buffer
  // since it was created (Sync, take_or_clone and every scf op set it): a
  // call in the function's entry block with nothing recorded before it
  // needs no submission of its own (an empty submit is still a queue round trip).
  bool unsubmitted_work_ = false;
  Status RecordWhile(ir::Operation* op, uint16_t cmd);
  // State at a loop's exit label: the register caches from before the loop
  // (constants or executables first made in its regions may never have run)
  // and, pending, every range the loop touches plus what was pending on the
  // edge into the exit (a zero-trip loop reaches it straight from the header).
  void JoinLoopExit(const std::map<int64_t, uint16_t>& consts, const std::map<uint16_t, uint16_t>& exes,
                    const std::vector<Range>& loop_ranges, const std::vector<Range>& exit_writes,
                    const std::vector<Range>& exit_reads) {
    consts_ = consts;
    executable_regs_ = exes;
    pending_writes_.insert(pending_writes_.end(), loop_ranges.begin(), loop_ranges.end());
    pending_reads_.insert(pending_reads_.end(), loop_ranges.begin(), loop_ranges.end());
    pending_writes_.insert(pending_writes_.end(), exit_writes.begin(), exit_writes.end());
    pending_reads_.insert(pending_reads_.end(), exit_reads.begin(), exit_reads.end());
  }
  Status RecordSwitch(ir::Operation* op, uint16_t cmd);
  Status RecordHostArith(ir::Operation* op);
  // Function bodies of several blocks (cf.br / cf.cond_br): copies a
  // branch's operands into `target`'s argument storage / registers.
  Status BranchInto(ir::Operation* edge, ir::Block* target, unsigned first, unsigned count, uint16_t cmd);
  Status EmitReturn(ir::Operation* ret, uint16_t cmd);
  // Storage of module global `sym` in this function (its buffer register is
  // loaded once in the prologue).
  const Storage& GlobalStorage(const std::string& sym) { return global_storage_.at(sym); }
  // Byte ranges of every storage an op in `blocks` touches (not the pool).
  std::vector<Range> TouchedRanges(const std::vector<ir::Block*>& blocks);
  std::map<std::string, Storage> global_storage_;
  // A consumed import written in place, taken at its first write.
  struct LazyTake {
    uint16_t arg = 0;  // argument (view) register
    Storage storage;   // registers that view the argument until taken
    uint16_t flag = 0; // i32 register: 1 once taken
  };
  std::map<ir::Value*, LazyTake> lazy_takes_;
  // Before an op that writes a consumed import in place: if not taken yet,
  // (buffer, offset) = take_or_clone(cmd, arg) and set the flag.
  void EnsureTaken(ir::Operation* op, uint16_t cmd) {
    for (ir::Value* r : op->results()) {
      ir::Value* t = TiedOperandOf(op, r->index());
      if (!t) continue;
      auto it = lazy_takes_.find(RootOfValue(t));
      if (it == lazy_takes_.end()) continue;
      const LazyTake& lt = it->second;
      vm::Label take = enc.NewLabel(), done = enc.NewLabel();
      enc.CondBr(lt.flag, done, take);
      enc.Bind(take);
      enc.CallImport(HalImport::kBufferViewTakeOrClone, {Reg::Ref(cmd), Reg::Ref(lt.arg)},
                     {Reg::Ref(lt.storage.buffer), Reg::I32(lt.storage.offset_reg)});
      enc.ConstI32(lt.flag, 1);
      enc.Bind(done);
      unsubmitted_work_ = true;  // take_or_clone may have recorded a copy
      pending_writes_.push_back(RangeOf(lt.storage));  // a possible copy: order the write after it
    }
  }
  static ir::Value* TiedOperandOf(ir::Operation* op, unsigned index);
  // One parallel copy of an edge: operand indices of `op` and the storage
  // each is copied into (nullptr: a host value).
  struct EdgeGroup {
    std::vector<unsigned> operands;
    std::vector<const Storage*> dsts;
  };
  std::vector<EdgeGroup> EdgeGroupsOf(ir::Operation* op);
  // Copies the edge's operands into `dsts` as one parallel copy (through
  // the temporaries planned for conflicting operands).
  void CopyEdge(uint16_t cmd, ir::Operation* edge, const std::vector<unsigned>& operands,
                const std::vector<const Storage*>& dsts);
  std::map<std::pair<ir::Operation*, unsigned>, Storage> edge_temps_;
  static ir::Value* RootOfValue(ir::Value* v);
  // util.global.load results that need their own copy of the global (the
  // global is stored to while the loaded value is still read).
  std::set<ir::Value*> global_snapshots_;
  bool multi_block_ = false;
  void CopyInto(uint16_t cmd, const Storage& from, const Storage& to) {
    if (from.group == to.group && from.dynamic_offset == to.dynamic_offset && from.offset == to.offset &&
        (!from.dynamic_offset || from.offset_reg == to.offset_reg))
      return;  // already there
    Sync(cmd, {RangeOf(from)}, {RangeOf(to)});
    enc.CallImport(HalImport::kCommandBufferCopy,
                   {Reg::Ref(cmd), Reg::Ref(from.buffer), Reg::I32(OffsetReg(from)), Reg::Ref(to.buffer),
                    Reg::I32(OffsetReg(to)), Reg::I32(ConstReg(to.length))},
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
  std::vector<Range> pending_reads_, pending_writes_;
  uint16_t pool_reg_ = 0;
  bool pool_loaded_ = false;
  int pool_group_ = -1;
  int next_group_ = 0;
};

// Operand whose storage result `index` of `op` reuses (tied), or nullptr.
ir::Value* TiedOperand(ir::Operation* op, unsigned index) {
  if (op->is("stream.async.dispatch")) {
    std::vector<int64_t> tied = op->ints_attr("tied_operands");
    if (index < tied.size() && tied[index] >= 0 && tied[index] < op->num_operands())
      return op->operand(static_cast<unsigned>(tied[index]));
    return nullptr;
  }
  if (op->is("stream.async.update") || op->is("stream.async.copy") || op->is("stream.async.fill"))
    return op->operand(0);
  if (op->is("stream.async.slice")) return op->operand(0);  // a view (offset applied separately)
  return nullptr;
}

// The value whose allocation `v` lives in (through tied results and slices).
ir::Value* RootOf(ir::Value* v) {
  while (ir::Operation* def = v->defining_op()) {
    ir::Value* tied = TiedOperand(def, v->index());
    if (!tied) break;
    v = tied;
  }
  return v;
}

// Ops placed by --resource-lifetime (compiler/transforms/resource_lifetime.cc).
bool IsLifetimeOp(ir::Operation* op) {
  return op->is("stream.resource.dealloca") || op->is("stream.resource.retain") || op->is("stream.resource.release");
}
ir::Value* FunctionEmitter::TiedOperandOf(ir::Operation* op, unsigned index) {
  return op->is("stream.async.slice") ? nullptr : TiedOperand(op, index);
}
ir::Value* FunctionEmitter::RootOfValue(ir::Value* v) { return RootOf(v); }

// Pre-order walk of `block` and the blocks of nested regions (scf.*).
template <typename F>
void ForEachOp(ir::Block* block, F&& f) {
  for (auto& owned : block->ops()) {
    f(owned.get());
    for (unsigned r = 0; r < owned->num_regions(); ++r)
      for (auto& b : owned->region(r)->blocks()) ForEachOp(b.get(), f);
  }
}

int64_t SizeOf(ir::Value* v, int depth = 0);

// Byte size of a block argument: the loop-carried value's init (scf.for,
// scf.while "before"), the forwarded value (scf.while "after"), or an
// incoming branch operand (a successor block of a function body).
int64_t BlockArgumentSize(ir::Value* v, int depth) {
  ir::Block* b = v->parent_block();
  ir::Operation* owner = b && b->parent() ? b->parent()->parent_op() : nullptr;
  if (!owner || depth > 32) return 0;
  unsigned i = v->index();
  if (owner->is("scf.for")) return i >= 1 && 3 + i - 1 < owner->num_operands() ? SizeOf(owner->operand(3 + i - 1), depth + 1) : 0;
  if (owner->is("scf.while")) {
    if (b == owner->region(0)->block(0)) return i < owner->num_operands() ? SizeOf(owner->operand(i), depth + 1) : 0;
    return i < owner->num_results() ? SizeOf(owner->result(i), depth + 1) : 0;
  }
  if (owner->is("func.func")) {
    for (auto& blk : owner->region(0)->blocks()) {
      ir::Operation* t = blk->terminator();
      if (!t) continue;
      // The first incoming edge whose size is known (a back edge may lead
      // around a cycle of block arguments).
      int64_t size = 0;
      if (t->is("cf.br") && t->num_successors() == 1 && t->successor(0) == b && i < t->num_operands())
        size = SizeOf(t->operand(i), depth + 1);
      if (t->is("cf.cond_br") && t->num_successors() == 2) {
        std::vector<int64_t> seg = t->ints_attr("operand_segments");
        if (seg.size() != 3) continue;
        if (t->successor(0) == b && i < static_cast<unsigned>(seg[1])) size = SizeOf(t->operand(1 + i), depth + 1);
        if (!size && t->successor(1) == b && i < static_cast<unsigned>(seg[2]))
          size = SizeOf(t->operand(static_cast<unsigned>(1 + seg[1]) + i), depth + 1);
      }
      if (size > 0) return size;
    }
  }
  return 0;
}

// Byte size of a resource value.
int64_t SizeOf(ir::Value* v, int depth) {
  ir::Operation* def = v->defining_op();
  if (!def) return v->is_block_argument() ? BlockArgumentSize(v, depth) : 0;
  if (depth > 32) return 0;
  if (def->is("scf.index_switch")) {  // what the case regions yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y && v->index() < y->num_operands() ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is("scf.while")) {  // what the condition forwards
    ir::Operation* c = def->region(0)->block(0)->terminator();
    return c && 1 + v->index() < c->num_operands() ? SizeOf(c->operand(1 + v->index()), depth + 1) : 0;
  }
  if (def->is("stream.async.dispatch")) return def->ints_attr("sizes").at(v->index());
  if (def->is("scf.if")) {  // what the branches yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is("stream.async.slice")) return def->int_attr("length");
  if (def->is("scf.for")) return SizeOf(def->operand(3 + v->index()), depth + 1);  // the init
  if (def->is("func.call")) {  // sizes: [result bytes] (convert-to-stream)
    std::vector<int64_t> sizes = def->ints_attr("sizes");
    return v->index() < sizes.size() ? sizes[v->index()] : 0;
  }
  return def->int_attr("size");
}

Status FunctionEmitter::AssignStorage(ir::Block* body, uint16_t cmd) {
  // Every op of the function: the entry block, then the other blocks of a
  // body with branches (cf.br / cf.cond_br), each with its nested regions.
  auto walk = [&](auto&& f) {
    for (auto& b : func_->region(0)->blocks()) ForEachOp(b.get(), f);
  };
  // Arguments: views from the caller, in ref registers 0..N-1.
  std::vector<Storage> args(body->num_arguments());
  for (unsigned i = 0; i < body->num_arguments(); ++i) {
    ir::Value* arg = body->argument(i);
    if (!arg->type().is_tensor()) return UnimplementedError("emit: non-tensor function argument %u", i);
    Storage& s = args[i];
    s.kind = Storage::kArgument;
    s.buffer = NewRef();
    s.dynamic_offset = true;
    s.offset_reg = NewI32();
    s.length = arg->type().byte_size();
    s.group = NewGroup();
    enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(static_cast<uint16_t>(i))}, {Reg::Ref(s.buffer)});
    enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(static_cast<uint16_t>(i))}, {Reg::I32(s.offset_reg)});
  }

  // Escaping roots: allocations that back a function result.
  std::set<ir::Value*> escaping;
  walk([&](ir::Operation* op) {
    if (op->is("stream.tensor.export")) escaping.insert(RootOf(op->operand(0)));
  });
  // A func.call result may be one of the call's consumed operands (a callee
  // may return its consumed argument; a borrowed one it returns is copied
  // by its EmitReturn): those operands' roots live as long as the results
  // (see the lifetime walk below), so a later transient never reuses their
  // arena slot under a result.
  std::map<ir::Value*, std::vector<ir::Value*>> call_operand_roots;  // call result -> operand roots
  walk([&](ir::Operation* op) {
    if (!op->is("func.call")) return;
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
      if (!op->is("stream.async.slice"))
        for (ir::Value* r : op->results())
          if (ir::Value* t = TiedOperand(op, r->index())) written.insert(RootOf(t));
      for (ir::Value* operand : op->operands()) {
        ir::Value* root = RootOf(operand);
        if (root->defining_op() && root->defining_op()->is("stream.tensor.import") && !op->is("stream.tensor.export") &&
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
  // Step extents of each scf.for: a value defined before a loop and used
  // in its body must survive every trip, so such a use counts at the loop's end.
  std::map<ir::Operation*, int> loop_begin, loop_end;
  {
    int st = 0;
    std::vector<std::pair<ir::Operation*, size_t>> open;
    walk([&](ir::Operation* op) {
      if (op->num_regions() > 0) loop_begin[op] = st;  // every region op (scf.*): its step extent
      ++st;
    });
    for (auto& [loop, begin] : loop_begin) {
      int count = 0;
      for (unsigned r = 0; r < loop->num_regions(); ++r)
        for (auto& b : loop->region(r)->blocks()) ForEachOp(b.get(), [&](ir::Operation*) { ++count; });
      loop_end[loop] = begin + count;
    }
  }
  auto use_step = [&](ir::Operation* user, int st, int def) {
    for (ir::Operation* p = user->parent_op(); p && !p->is("func.func"); p = p->parent_op())
      if ((p->is("scf.for") || p->is("scf.while")) && def < loop_begin.at(p)) st = std::max(st, loop_end.at(p));
    return st;
  };
  // A fresh value a branch creates only to yield it is written straight into
  // the scf.if's (or scf.index_switch's) result storage (no copy at the yield).
  std::map<ir::Value*, ir::Value*> yield_into;
  walk([&](ir::Operation* op) {
    if (!op->is("scf.if") && !op->is("scf.index_switch")) return;
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      if (op->region(r)->empty()) continue;
      ir::Block* b = op->region(r)->block(0);
      ir::Operation* y = b->terminator();
      if (!y || !y->is("scf.yield")) continue;
      for (unsigned i = 0; i < y->num_operands(); ++i) {
        ir::Value* v = y->operand(i);
        ir::Operation* def = v->defining_op();
        if (!def || def->parent_block() != b || v->uses().size() != 1 || escaping.count(v)) continue;
        bool fresh = (def->is("stream.async.dispatch") && !TiedOperand(def, v->index())) ||
                     def->is("stream.async.clone") || def->is("stream.async.splat") || def->is("stream.async.alloca");
        if (fresh && !yield_into.count(v)) yield_into[v] = op->result(i);
      }
    }
  });
  // A copy made only to be a loop's initial value (elide-async-copies hoists
  // the copy of a borrowed, constant or still-live initial value out of the
  // loop) is written straight into the loop's carried storage, so entering
  // the loop copies nothing more: scf.for result i, scf.while "before"
  // argument i (or result i when the condition forwards it at its own
  // position), or the argument of a block a branch enters. The carried
  // storage then lives from the copy on (`init_copy_step`).
  std::map<ir::Value*, ir::Operation*> init_copy_of;  // carried storage value -> the copy
  walk([&](ir::Operation* op) {
    if (!op->is("stream.async.clone") || op->num_results() != 1) return;
    ir::Value* v = op->result(0);
    if (escaping.count(v) || yield_into.count(v)) return;
    // Its one use besides lifetime ops (a retain: the loop result may be
    // the init when no trip runs; a dealloca after the loop).
    ir::Operation* user = nullptr;
    unsigned k = 0;
    for (const ir::Use& u : v->uses()) {
      if (IsLifetimeOp(u.user)) continue;
      if (user) return;
      user = u.user;
      k = u.operand_index;
    }
    if (!user || user->parent_block() != op->parent_block()) return;
    ir::Value* target = nullptr;
    if (user->is("scf.for") && k >= 3 && k - 3 < user->num_results()) {
      target = user->result(k - 3);
    } else if (user->is("scf.while") && user->num_regions() == 2 && !user->region(0)->empty()) {
      ir::Block* before = user->region(0)->block(0);
      ir::Operation* cond = before->terminator();
      if (k >= before->num_arguments()) return;
      ir::Value* a = before->argument(k);
      bool forwarded = cond && 1 + k < cond->num_operands() && cond->operand(1 + k) == a && k < user->num_results();
      target = forwarded ? user->result(k) : a;
    } else if (user->is("cf.br") || user->is("cf.cond_br")) {
      // Only a branch from a block the target block cannot reach: the
      // target's arguments hold nothing yet (its block has not run), so
      // writing one early clobbers no live value.
      std::vector<ir::Value*> t = analysis::FlowTargets(user, k);
      if (t.size() != 1 || !t[0]->is_block_argument()) return;
      std::set<ir::Block*> seen;
      std::vector<ir::Block*> work = {t[0]->parent_block()};
      while (!work.empty()) {
        ir::Block* b = work.back();
        work.pop_back();
        if (ir::Operation* term = b->terminator())
          for (ir::Block* succ : term->successors())
            if (succ && seen.insert(succ).second) work.push_back(succ);
      }
      if (seen.count(user->parent_block())) return;
      target = t[0];
    }
    if (!target || target->type().kind != ir::TypeKind::kResource || init_copy_of.count(target)) return;
    yield_into[v] = target;
    init_copy_of[target] = op;
  });
  std::map<ir::Operation*, int> init_copy_step;
  // A util.global.load is a view of the global's buffer unless the global is
  // stored to while the loaded value (or a value tied to it or sliced from
  // it) may still be read: every store of the global (and every func.call,
  // whose callee may store it) must follow the load in its block, and every
  // read of the loaded value must come before the first of those (or be
  // that store). Otherwise the load copies the global into storage of its
  // own (a snapshot).
  {
    std::map<ir::Value*, std::vector<ir::Value*>> family;  // root -> values viewing it
    std::map<std::string, std::vector<ir::Operation*>> stores;
    std::vector<ir::Operation*> calls;
    walk([&](ir::Operation* op) {
      for (ir::Value* r : op->results())
        if (r->type().kind == ir::TypeKind::kResource) family[RootOf(r)].push_back(r);
      if (op->is("util.global.store")) stores[op->str_attr("global")].push_back(op);
      if (op->is("func.call")) calls.push_back(op);  // the callee may store any global
    });
    auto position_in = [](ir::Block* b, ir::Operation* op, ir::Operation** anc) -> int {
      while (op && op->parent_block() != b) op = op->parent_op();
      if (!op) return -1;
      *anc = op;
      int i = 0;
      for (auto& o : b->ops()) {
        if (o.get() == op) return i;
        ++i;
      }
      return -1;
    };
    walk([&](ir::Operation* op) {
      if (!op->is("util.global.load")) return;
      std::vector<ir::Operation*> writers = calls;
      auto st = stores.find(op->str_attr("global"));
      if (st != stores.end()) writers.insert(writers.end(), st->second.begin(), st->second.end());
      if (writers.empty()) return;
      ir::Block* b = op->parent_block();
      ir::Operation* anc = nullptr;
      int load_pos = position_in(b, op, &anc), first = INT_MAX;
      bool snapshot = false;
      for (ir::Operation* store : writers) {
        int p = position_in(b, store, &anc);
        if (p < 0 || p <= load_pos) snapshot = true;
        first = std::min(first, p);
      }
      for (ir::Value* v : family[op->result(0)])
        for (const ir::Use& u : v->uses()) {
          int p = position_in(b, u.user, &anc);
          if (p < 0 || p > first || (p == first && !(u.user == anc && u.user->is("util.global.store"))))
            snapshot = true;
        }
      if (snapshot) global_snapshots_.insert(op->result(0));
    });
  }
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
            rq->second.last_use = std::max(rq->second.last_use, use_step(op, at_step, rq->second.first_use));
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
      int at = use_step(op, step, it->second.first_use);
      it->second.last_use = std::max(it->second.last_use, at);
      if (op->is("stream.resource.dealloca")) {
        dealloca_step[root] = std::max(dealloca_step[root], at);
        dealloca_of[root] = op;
      } else if (!IsLifetimeOp(op)) {
        last_real_use[root] = std::max(last_real_use[root], at);
      }
    }
    const std::string& n = op->name();
    if (n == "stream.async.clone") init_copy_step[op] = step;
    if (n == "stream.async.dispatch" || n == "stream.async.clone" || n == "stream.async.transfer" ||
        n == "stream.async.alloca" || n == "stream.async.splat" || n == "scf.if" || n == "scf.for" ||
        n == "scf.index_switch" || n == "scf.while" ||
        (n == "util.global.load" && global_snapshots_.count(op->result(0)))) {
      // scf.if results are allocations the branches write their yields into;
      // they live from the scf.if (before its branches' steps) to their last use.
      for (ir::Value* r : op->results()) {
        if (r->type().kind != ir::TypeKind::kResource || TiedOperand(op, r->index()) || yield_into.count(r)) continue;
        if (escaping.count(r)) externals.push_back(r);
        // Loop-carried storage lives through every trip of its loop.
        // Region results are written by the regions' yields: they live at
        // least to the end of the regions (loops: through every trip).
        int last = op->num_regions() > 0 ? loop_end.at(op) : step;
        requests[r] = TransientRequest{SizeOf(r), step, last};
        request_order.push_back(r);
        def_step[r] = step;
      }
      // scf.while: a "before" argument gets the storage of the result it is
      // forwarded to at the same position (the usual loop-carried value);
      // any other carried argument gets storage of its own.
      if (n == "scf.while") {
        ir::Block* before = op->region(0)->block(0);
        ir::Operation* cond = before->terminator();
        for (ir::Value* a : before->arguments()) {
          if (a->type().kind != ir::TypeKind::kResource) continue;
          unsigned i = a->index();
          if (cond && 1 + i < cond->num_operands() && cond->operand(1 + i) == a && i < op->num_results()) continue;
          requests[a] = TransientRequest{SizeOf(a), step, loop_end.at(op)};
          request_order.push_back(a);
          def_step[a] = step;
        }
      }
    } else if (n == "stream.tensor.import" || n == "stream.async.constant" || n == "stream.tensor.export" ||
               n == "stream.async.update" || n == "stream.async.copy" || n == "stream.async.fill" ||
               n == "stream.async.slice" || n == "func.return" || n == "scf.yield" || n == "stream.async.load" ||
               n == "arith.constant" || IsLifetimeOp(op) || n == "stream.timepoint.immediate" ||
               n == "func.call" || n == "scf.condition" || n == "util.global.load" ||
               n == "util.global.store" || n == "cf.br" || n == "cf.cond_br" || n == "arith.addi" ||
               n == "arith.subi" || n == "arith.muli" || n == "arith.cmpi") {
      // No new allocation (a call's results are the callee's storage).
      // No new allocation.
    } else if (unsupported.ok()) {
      unsupported = UnimplementedError("emit: op '%s' (%s) is not supported by the bytecode emitter yet",
                                       n.c_str(), op->loc().c_str());
    }
    ++step;
  });
  KILN_RETURN_IF_ERROR(unsupported);
  for (auto& [root, at] : dealloca_step) {
    if (multi_block_) break;  // block order is not execution order
    auto use = last_real_use.find(root);
    if (use != last_real_use.end() && use->second > at)
      return InternalError("emit: the resource defined at %s is used after its stream.resource.dealloca",
                           root->defining_op() ? root->defining_op()->loc().c_str() : "an argument");
  }
  // Block arguments that share their incoming value's storage (copy
  // coalescing): an argument A reached by exactly one edge, passing a value v
  // that lives in the whole storage of R (v is R, or an in-place update of R:
  // no slice), where R is another block's argument or a value with storage of
  // its own, takes R's storage when nothing observes v after the edge except
  // through A (analysis::FindLaterObserver), the edge passes nothing else
  // living in R to the same block, the sizes match and A does not escape.
  // The branch then copies nothing: a loop whose body block forwards the
  // header's carried value and branches back with its in-place update copies
  // nothing per trip. Safe because A's block has one predecessor edge: once
  // R's block runs again (the only way R's storage is written by an edge),
  // A is no longer live (A's uses are dominated by A's block, and R's block
  // is not), and every other write into R's storage is an in-place update
  // the elision pass proved unobserved, which FindLaterObserver covers.
  auto full_root = [&](ir::Value* v) {
    while (ir::Operation* def = v->defining_op()) {
      ir::Value* tied = TiedOperandOf(def, v->index());
      if (!tied) break;
      v = tied;
    }
    return v;
  };
  std::map<ir::Value*, ir::Value*> coalesced;  // block argument -> value whose storage it shares
  if (multi_block_) {
    for (size_t bi = 1; bi < func_->region(0)->blocks().size(); ++bi) {
      ir::Block* b = func_->region(0)->block(static_cast<unsigned>(bi));
      for (ir::Value* a : b->arguments()) {
        if (a->type().kind != ir::TypeKind::kResource || escaping.count(a) || yield_into.count(a)) continue;
        bool modelled = true;
        std::vector<analysis::FlowEdge> in = analysis::IncomingValues(a, &modelled);
        if (!modelled || in.size() != 1) continue;
        ir::Value* v = in[0].value;
        ir::Operation* edge = in[0].edge;
        if (v->type().kind != ir::TypeKind::kResource) continue;
        ir::Value* r = full_root(v);
        ir::Block* rb = r->parent_block();
        bool other_block_arg = r->is_block_argument() && rb && rb->parent() == func_->region(0) &&
                               rb != func_->region(0)->block(0);
        if (!other_block_arg && !requests.count(r)) continue;
        if (r == a || SizeOf(r) != SizeOf(a)) continue;
        int group = analysis::FlowGroup(edge, in[0].operand);
        bool twice = false;
        for (unsigned j = 0; j < edge->num_operands(); ++j)
          if (j != in[0].operand && analysis::FlowGroup(edge, j) == group &&
              edge->operand(j)->type().kind == ir::TypeKind::kResource && RootOf(edge->operand(j)) == RootOf(v))
            twice = true;
        if (twice || analysis::FindLaterObserver(v, edge, edge)) continue;
        // No cycle of shared storage (each chain must end at a real storage).
        ir::Value* end = r;
        for (int d = 0; d < 64 && coalesced.count(end); ++d) end = coalesced.at(end);
        if (end == a) continue;
        coalesced[a] = r;
      }
    }
    for (auto& [a, r] : coalesced) yield_into[a] = r;
  }
  // Arguments of the other blocks of a body with branches: one storage each,
  // written by every branch to the block.
  for (size_t bi = 1; bi < func_->region(0)->blocks().size(); ++bi) {
    ir::Block* b = func_->region(0)->block(static_cast<unsigned>(bi));
    for (ir::Value* a : b->arguments()) {
      if (a->type().kind != ir::TypeKind::kResource) continue;
      if (coalesced.count(a)) continue;  // shares its incoming value's storage
      if (SizeOf(a) <= 0) return InvalidArgumentError("emit: block argument %u of block %zu has no known size", a->index(), bi);
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
  // over the block graph instead: the hull, in step order, of every point
  // where its storage may hold a live value: its definitions (results, and
  // a block argument's incoming edges: the predecessor's terminator writes
  // it), its uses (scf loops: a use inside a loop counts at the loop's end,
  // as in one block), and the first / last step of every block it is live
  // into / out of (backward dataflow to a fixpoint; a value live across a
  // back edge is then live in every block of the cycle, so its hull covers
  // the loop). Values sharing a storage (tied results, slices, coalesced
  // block arguments, copies written straight into a carried storage) count
  // for their storage's request. Two transients share arena bytes only when
  // their hulls do not overlap, so they are never live at once. A function
  // with calls keeps whole-function lifetimes (a call result may alias its
  // operands' storage, which this liveness does not follow).
  bool has_calls = false;
  walk([&](ir::Operation* op) { has_calls = has_calls || op->is("func.call"); });
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
    std::map<ir::Block*, std::pair<int, int>> block_steps;  // first, last (the terminator)
    std::map<ir::Block*, std::set<ir::Value*>> uses_in, defs_in, live_in, live_out;
    std::map<ir::Value*, std::pair<int, int>> hull;  // request -> [first, last]
    // Values other than this body's block arguments start from the interval
    // computed above (region results live through their regions, a copy
    // written straight into carried storage from the copy on).
    for (auto& [v, r] : requests) {
      bool body_arg = v->is_block_argument() && v->parent_block()->parent() == fr;
      if (!body_arg) hull[v] = {r.first_use, r.last_use};
    }
    auto touch = [&](ir::Value* r, int at) {
      if (!requests.count(r)) return;
      auto h = hull.find(r);
      if (h == hull.end()) {
        hull[r] = {at, at};
      } else {
        h->second.first = std::min(h->second.first, at);
        h->second.second = std::max(h->second.second, at);
      }
    };
    int st = 0;
    for (auto& bp : fr->blocks()) {
      ir::Block* b = bp.get();
      int first = st;
      for (ir::Value* a : b->arguments())
        if (a->type().kind == ir::TypeKind::kResource) defs_in[b].insert(plan_root(a));
      ForEachOp(b, [&](ir::Operation* op) {
        for (ir::Value* o : op->operands()) {
          if (o->type().kind != ir::TypeKind::kResource) continue;
          ir::Value* r = plan_root(o);
          if (!requests.count(r)) continue;
          if (!defs_in[b].count(r)) uses_in[b].insert(r);
          touch(r, use_step(op, st, requests.at(r).first_use));
        }
        for (ir::Value* res : op->results()) {
          if (res->type().kind != ir::TypeKind::kResource) continue;
          ir::Value* r = plan_root(res);
          defs_in[b].insert(r);
          touch(r, st);
        }
        ++st;
      });
      block_steps[b] = {first, st - 1};
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = fr->blocks().rbegin(); it != fr->blocks().rend(); ++it) {
        ir::Block* b = it->get();
        std::set<ir::Value*> out;
        if (ir::Operation* t = b->terminator())
          for (ir::Block* succ : t->successors())
            if (succ) out.insert(live_in[succ].begin(), live_in[succ].end());
        std::set<ir::Value*> in = uses_in[b];
        for (ir::Value* r : out)
          if (!defs_in[b].count(r)) in.insert(r);
        if (out != live_out[b] || in != live_in[b]) {
          live_out[b] = std::move(out);
          live_in[b] = std::move(in);
          changed = true;
        }
      }
    }
    for (auto& bp : fr->blocks()) {
      ir::Block* b = bp.get();
      for (ir::Value* r : live_in[b]) touch(r, block_steps[b].first);
      for (ir::Value* r : live_out[b]) touch(r, block_steps[b].second);
      // A block argument is written by each branch to it, at the
      // predecessor's terminator.
      if (ir::Operation* t = b->terminator())
        for (ir::Block* succ : t->successors())
          if (succ)
            for (ir::Value* a : succ->arguments())
              if (a->type().kind == ir::TypeKind::kResource) touch(plan_root(a), block_steps[b].second);
    }
    for (auto& [v, r] : requests) {
      auto h = hull.find(v);
      if (h == hull.end()) continue;  // never touched: keep its own interval
      r.first_use = h->second.first;
      r.last_use = h->second.second;
    }
  }
  for (ir::Value* v : externals) requests.erase(v);

  std::vector<ir::Value*> transient_values;
  std::vector<TransientRequest> reqs;
  for (ir::Value* v : request_order) {
    auto it = requests.find(v);
    if (it == requests.end()) continue;  // external
    const TransientRequest& r = it->second;
    transient_values.push_back(v);
    reqs.push_back(r);
    m_.report().unplanned_transient_bytes += AlignUp(r.size, kBindingAlignment);
  }
  TransientPlan plan = PlanTransients(reqs, kBindingAlignment);
  m_.report().arena_bytes = std::max(m_.report().arena_bytes, plan.arena_size);
  if (plan.arena_size > 0) {
    // Slot 0 of the context's cache: the same arena on every call.
    uint16_t arena = NewRef();
    int arena_group = NewGroup();
    enc.CallImport(HalImport::kAllocatorAllocateCached,
                   {Reg::I32(ConstReg(0)), Reg::I32(ConstReg(plan.arena_size)), Reg::I32(ConstReg(0))},
                   {Reg::Ref(arena)});
    for (size_t i = 0; i < transient_values.size(); ++i) {
      Storage s;
      s.kind = Storage::kTransient;
      s.group = arena_group;
      s.buffer = arena;
      s.offset = plan.offsets[i];
      s.length = reqs[i].size;
      storage_[transient_values[i]] = s;
    }
  }
  // Consumed imports written in place: take the caller's storage when the
  // runtime says this frame owns it, else work on a counted copy of it. The
  // take happens at the first write that runs (EnsureTaken, guarded by a
  // flag register), not in the prologue: a write in a branch that is not
  // taken then costs no copy. Until then the storage registers view the
  // argument itself (same bytes).
  std::map<ir::Value*, Storage> taken;
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is("stream.tensor.import") || !written.count(op->result(0))) continue;
    if (!op->bool_attr("consume"))
      return FailedPreconditionError("emit: borrowed argument %u is written in place (run materialize-copy-on-write)",
                                     op->operand(0)->index());
    const Storage& a = args[op->operand(0)->index()];
    Storage s = a;
    s.buffer = NewRef();
    s.offset_reg = NewI32();
    enc.MovRef(s.buffer, a.buffer);
    enc.MovI32(s.offset_reg, a.offset_reg);
    LazyTake t;
    t.arg = static_cast<uint16_t>(op->operand(0)->index());
    t.storage = s;
    t.flag = NewI32();
    enc.ConstI32(t.flag, 0);  // not from ConstReg: the register changes
    lazy_takes_[op->result(0)] = t;
    taken[op->result(0)] = s;
  }

  // Escaping allocations: a consumed import whose last read comes before the
  // result is written donates its storage (take_or_allocate: the runtime
  // falls back to a fresh buffer when the caller still shares it); otherwise
  // a per-result cache slot that is reused whenever the app released it.
  std::set<ir::Value*> donors_used;
  // Imports passed to a `consume` parameter of another module's function
  // are moved there (the caller's register is null afterwards): never donors.
  KILN_ASSIGN_OR_RETURN(std::set<ir::Value*> moved, MovedIntoCalls(body));
  donors_used.insert(moved.begin(), moved.end());
  // Which function result each escaping allocation backs (when exactly one,
  // the caller may have supplied output storage for it).
  std::map<ir::Value*, std::vector<int>> result_of;
  if (ir::Operation* ret = body->terminator(); ret && ret->is("func.return"))
    for (unsigned k = 0; k < ret->num_operands(); ++k)
      if (ir::Operation* exp = ret->operand(k)->defining_op())
        if (exp->is("stream.tensor.export") && exp->operand(0) == RootOf(exp->operand(0)))
          result_of[exp->operand(0)].push_back(static_cast<int>(k));
  int slot = 1;
  // The consumed imports, in body order, collected once (a function with N
  // results and M ops would otherwise cost O(N * M) string compares).
  std::vector<ir::Operation*> consume_imports;
  if (!multi_block_)  // step order is not execution order
    for (auto& owned : body->ops())
      if (owned->is("stream.tensor.import") && owned->bool_attr("consume"))
        consume_imports.push_back(owned.get());
  for (ir::Value* r : externals) {
    Storage s;
    s.kind = Storage::kExternal;
    s.length = SizeOf(r);
    ir::Operation* donor = nullptr;
    for (ir::Operation* imp : consume_imports) {
      ir::Value* iv = imp->result(0);
      if (donors_used.count(iv) || written.count(iv) || escaping.count(iv)) continue;
      if (imp->int_attr("size") < s.length) continue;
      auto last = import_last_use.find(iv);
      if (last != import_last_use.end() && last->second >= def_step[r]) continue;
      donor = imp;
      break;
    }
    s.buffer = NewRef();
    if (donor) {
      donors_used.insert(donor->result(0));
      const Storage& a = args[donor->operand(0)->index()];
      s.group = a.group;  // may be the caller's bytes: hazards against its reads
      s.dynamic_offset = true;
      s.offset_reg = NewI32();
      enc.CallImport(HalImport::kBufferViewTakeOrAllocate,
                     {Reg::Ref(static_cast<uint16_t>(donor->operand(0)->index())), Reg::I32(ConstReg(s.length)),
                      Reg::I32(ConstReg(1))},
                     {Reg::Ref(s.buffer), Reg::I32(s.offset_reg)});
    } else if (result_of[r].size() == 1) {
      // Caller output storage for result k when supplied (written in place,
      // returned as the caller's own tensor), else a cached buffer:
      //   view = output_storage(k); if (view) {buf, off} = view else {cached, 0}
      s.group = NewGroup();
      s.dynamic_offset = true;
      s.offset_reg = NewI32();
      uint16_t k = ConstReg(result_of[r][0]), slot_reg = ConstReg(slot++);
      uint16_t size_reg = ConstReg(AlignUp(s.length, 16)), kind_reg = ConstReg(1), zero = ConstReg(0);
      uint16_t view = NewRef(), has_view = NewI32();
      vm::Label use = enc.NewLabel(), fresh = enc.NewLabel(), join = enc.NewLabel();
      enc.CallImport(HalImport::kBufferViewOutputStorage, {Reg::I32(k)}, {Reg::Ref(view)});
      enc.CmpNzRef(has_view, view);
      enc.CondBr(has_view, use, fresh);
      enc.Bind(use);
      enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(view)}, {Reg::Ref(s.buffer)});
      enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(view)}, {Reg::I32(s.offset_reg)});
      enc.Br(join);
      enc.Bind(fresh);
      enc.CallImport(HalImport::kAllocatorAllocateCached, {Reg::I32(slot_reg), Reg::I32(size_reg), Reg::I32(kind_reg)},
                     {Reg::Ref(s.buffer)});
      enc.MovI32(s.offset_reg, zero);
      enc.Bind(join);
      enc.ConstRefZero(view);  // drop the extra reference to the caller's view
    } else {
      s.group = NewGroup();
      enc.CallImport(HalImport::kAllocatorAllocateCached,
                     {Reg::I32(ConstReg(slot++)), Reg::I32(ConstReg(AlignUp(s.length, 16))), Reg::I32(ConstReg(1))},
                     {Reg::Ref(s.buffer)});
    }
    storage_[r] = s;
  }

  // Consumed imports whose storage stays the caller's allocation: a
  // dealloca may drop them (taken or donated storage lives on as a result).
  for (auto& owned : body->ops()) {
    ir::Operation* imp = owned.get();
    if (!imp->is("stream.tensor.import") || !imp->bool_attr("consume")) continue;
    ir::Value* iv = imp->result(0);
    if (taken.count(iv) || donors_used.count(iv) || escaping.count(iv)) continue;
    droppable_[iv] = static_cast<uint16_t>(imp->operand(0)->index());
  }

  // Values yielded straight into an scf.if result (outer ifs first, so a
  // chain of nested yields resolves to the outermost storage).
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [v, result] : yield_into) {
      auto it = storage_.find(result);
      if (it != storage_.end() && !storage_.count(v)) {
        storage_[v] = it->second;
        changed = true;
      }
    }
  }

  // Module globals this function reads or writes: one register each, loaded
  // in the prologue (the buffers live for the whole context).
  walk([&](ir::Operation* op) {
    if (!op->is("util.global.load") && !op->is("util.global.store")) return;
    std::string sym = op->str_attr("global");
    if (global_storage_.count(sym)) return;
    const ModuleEmitter::GlobalInfo* g = m_.FindGlobal(sym);
    if (!g) return;  // checked by CollectGlobals
    Storage s;
    s.kind = Storage::kVariable;
    s.buffer = NewRef();
    s.group = NewGroup();
    s.length = g->size;
    enc.GlobalLoadRef(s.buffer, g->ordinal);
    global_storage_[sym] = s;
  });

  // Everything else views an allocation: imports, constants, tied results, slices.
  Status view_error;
  walk([&](ir::Operation* op) {
    if (!view_error.ok()) return;
    if (op->is("stream.tensor.import")) {
      ir::Value* arg = op->operand(0);
      if (!arg->is_block_argument()) {
        view_error = InvalidArgumentError("emit: stream.tensor.import of a non-argument");
        return;
      }
      auto t = taken.find(op->result(0));
      storage_[op->result(0)] = t != taken.end() ? t->second : args[arg->index()];
    } else if (op->is("stream.async.constant")) {
      if (!pool_loaded_) {
        pool_reg_ = NewRef();
        pool_group_ = NewGroup();
        enc.GlobalLoadRef(pool_reg_, 0);
        pool_loaded_ = true;
      }
      Storage s;
      s.kind = Storage::kConstant;
      s.group = pool_group_;
      s.buffer = pool_reg_;
      s.offset = m_.ConstantOffset(op);
      s.length = op->int_attr("size");
      storage_[op->result(0)] = s;
    } else if (op->is("scf.for")) {
      ir::Block* loop_body = op->region(0)->block(0);
      for (ir::Value* r : op->results())
        if (storage_.count(r)) storage_[loop_body->argument(1 + r->index())] = storage_[r];
    } else if (op->is("func.call")) {
      // The callee's result views: (buffer, offset) registers set by RecordCall.
      for (ir::Value* r : op->results()) {
        Storage s;
        s.kind = Storage::kExternal;
        s.buffer = NewRef();
        s.group = NewGroup();
        s.dynamic_offset = true;
        s.offset_reg = NewI32();
        s.length = SizeOf(r);
        storage_[r] = s;
        droppable_[r] = kNoView;  // the caller owns it: its dealloca drops the buffer register
      }
    } else if (op->is("scf.while")) {
      // "after" argument j and result j share one storage; a "before"
      // argument forwarded at its own position shares it too.
      ir::Block* before = op->region(0)->block(0);
      ir::Block* after = op->region(1)->block(0);
      ir::Operation* cond = before->terminator();
      for (ir::Value* r : op->results()) {
        if (!storage_.count(r)) continue;
        unsigned j = r->index();
        if (j < after->num_arguments()) storage_[after->argument(j)] = storage_[r];
        if (j < before->num_arguments() && cond && 1 + j < cond->num_operands() &&
            cond->operand(1 + j) == before->argument(j))
          storage_[before->argument(j)] = storage_[r];
      }
    } else if (op->is("util.global.load")) {
      if (global_snapshots_.count(op->result(0))) return;  // storage of its own (a request)
      storage_[op->result(0)] = global_storage_.at(op->str_attr("global"));
    } else {
      for (ir::Value* r : op->results()) {
        ir::Value* tied = TiedOperand(op, r->index());
        if (!tied) continue;
        auto it = storage_.find(tied);
        if (it == storage_.end()) {
          view_error = InternalError("emit: tied operand of %s has no storage", op->loc().c_str());
          return;
        }
        Storage s = it->second;
        if (op->is("stream.async.slice")) {
          s.offset += op->int_attr("offset");
          s.length = op->int_attr("length");
        }
        storage_[r] = s;
      }
    }
  });
  KILN_RETURN_IF_ERROR(view_error);

  // Edges that copy several values at once (loop yields, scf.while's
  // forwarded values, branch operands) are parallel copies: a value that
  // lives in another destination of the same edge (carried values yielded
  // at swapped positions, a slice of a carried value) would be overwritten
  // before it is read. Each such value gets a temporary (a cached buffer,
  // reused across calls) and is copied there first.
  Status edge_error;
  walk([&](ir::Operation* op) {
    if (!edge_error.ok()) return;
    for (const EdgeGroup& g : EdgeGroupsOf(op)) {
      for (size_t i = 0; i < g.operands.size(); ++i) {
        auto src = storage_.find(op->operand(g.operands[i]));
        if (src == storage_.end() || !g.dsts[i]) continue;
        bool conflict = false;
        for (size_t j = 0; j < g.operands.size(); ++j) {
          if (!g.dsts[j]) continue;
          const Storage& d = *g.dsts[j];
          bool overlaps = RangeOf(src->second).Overlaps(RangeOf(d));
          if (j != i ? overlaps : (overlaps && !SameStorage(src->second, d))) conflict = true;
        }
        if (!conflict) continue;
        Storage t;
        t.kind = Storage::kTransient;
        t.buffer = NewRef();
        t.group = NewGroup();
        t.length = g.dsts[i]->length;
        enc.CallImport(HalImport::kAllocatorAllocateCached,
                       {Reg::I32(ConstReg(slot++)), Reg::I32(ConstReg(AlignUp(t.length, 16))), Reg::I32(ConstReg(0))},
                       {Reg::Ref(t.buffer)});
        edge_temps_[{op, g.operands[i]}] = t;
      }
    }
  });
  return edge_error;
}

std::vector<FunctionEmitter::EdgeGroup> FunctionEmitter::EdgeGroupsOf(ir::Operation* op) {
  std::vector<EdgeGroup> groups;
  auto storage_of = [&](ir::Value* v) -> const Storage* {
    auto it = storage_.find(v);
    return it == storage_.end() ? nullptr : &it->second;
  };
  auto block_group = [&](ir::Block* target, unsigned first, unsigned count) {
    EdgeGroup g;
    for (unsigned i = 0; i < count && i < target->num_arguments(); ++i) {
      g.operands.push_back(first + i);
      g.dsts.push_back(storage_of(target->argument(i)));
    }
    groups.push_back(g);
  };
  ir::Operation* parent = op->parent_block() && op->parent_block()->parent()
                              ? op->parent_block()->parent()->parent_op()
                              : nullptr;
  if (op->is("scf.yield") && parent && parent->is("scf.for")) {
    EdgeGroup g;
    for (unsigned i = 0; i < op->num_operands(); ++i) {
      g.operands.push_back(i);
      g.dsts.push_back(storage_of(parent->region(0)->block(0)->argument(1 + i)));
    }
    groups.push_back(g);
  } else if (op->is("scf.yield") && parent && parent->is("scf.while") &&
             op->parent_block() == parent->region(1)->block(0)) {
    block_group(parent->region(0)->block(0), 0, op->num_operands());
  } else if (op->is("scf.condition") && parent && parent->is("scf.while")) {
    EdgeGroup g;
    for (unsigned i = 1; i < op->num_operands() && i - 1 < parent->num_results(); ++i) {
      g.operands.push_back(i);
      g.dsts.push_back(storage_of(parent->result(i - 1)));
    }
    groups.push_back(g);
  } else if (op->is("cf.br") && op->num_successors() == 1) {
    block_group(op->successor(0), 0, op->num_operands());
  } else if (op->is("cf.cond_br") && op->num_successors() == 2) {
    std::vector<int64_t> seg = op->ints_attr("operand_segments");
    if (seg.size() == 3) {
      block_group(op->successor(0), 1, static_cast<unsigned>(seg[1]));
      block_group(op->successor(1), static_cast<unsigned>(1 + seg[1]), static_cast<unsigned>(seg[2]));
    }
  }
  return groups;
}

void FunctionEmitter::CopyEdge(uint16_t cmd, ir::Operation* edge, const std::vector<unsigned>& operands,
                               const std::vector<const Storage*>& dsts) {
  for (unsigned i : operands) {
    auto t = edge_temps_.find({edge, i});
    if (t != edge_temps_.end()) CopyInto(cmd, storage_.at(edge->operand(i)), t->second);
  }
  for (size_t k = 0; k < operands.size(); ++k) {
    if (!dsts[k]) continue;
    auto t = edge_temps_.find({edge, operands[k]});
    CopyInto(cmd, t != edge_temps_.end() ? t->second : storage_.at(edge->operand(operands[k])), *dsts[k]);
  }
}

void FunctionEmitter::Sync(uint16_t cmd, const std::vector<Range>& reads, const std::vector<Range>& writes) {
  unsubmitted_work_ = true;  // the caller records a command next
  bool hazard = false;
  std::vector<Range> barrier_ranges;
  for (const Range& w : pending_writes_) {
    for (const Range& r : reads) hazard |= w.Overlaps(r);
    for (const Range& x : writes) hazard |= w.Overlaps(x);
  }
  for (const Range& r : pending_reads_)
    for (const Range& x : writes)
      if (r.Overlaps(x)) { hazard = true; barrier_ranges.push_back(r); }
  if (hazard) {
    std::vector<Reg> bargs = {Reg::Ref(cmd)};
    for (const Range& w : pending_writes_) barrier_ranges.push_back(w);
    // One entry per distinct range (paths joined at a branch or loop exit
    // may each have left the same access pending).
    std::vector<Range> distinct;
    for (const Range& r : barrier_ranges) {
      bool seen = false;
      for (const Range& d : distinct)
        seen |= d.group == r.group && d.buffer == r.buffer && d.begin == r.begin && d.end == r.end;
      if (!seen) distinct.push_back(r);
    }
    barrier_ranges.swap(distinct);
    for (const Range& r : barrier_ranges) {
      bargs.push_back(Reg::Ref(r.buffer));
      bargs.push_back(Reg::I32(ConstReg(r.begin)));
      bargs.push_back(Reg::I32(ConstReg(r.end == INT64_MAX ? 0 : r.end - r.begin)));  // 0: to the end
    }
    enc.CallImport(HalImport::kCommandBufferBarrier, bargs, {});
    pending_reads_.clear();
    pending_writes_.clear();
  }
  for (const Range& r : reads) if (r.group != pool_group_) pending_reads_.push_back(r);  // the pool is never written
  pending_writes_.insert(pending_writes_.end(), writes.begin(), writes.end());
}

Status FunctionEmitter::EmitDispatch(ir::Operation* op, uint16_t cmd) {
  const ir::Attribute* entry_attr = op->attr("entry");
  const ir::SymbolRef* entry = entry_attr ? std::get_if<ir::SymbolRef>(&entry_attr->value) : nullptr;
  ir::Operation* body = nullptr;
  if (executables_.empty())  // indexed once: a lookup per dispatch, not a module walk
    for (auto& top : module_.body()->ops())
      if (top->is("flow.executable")) executables_.emplace(top->str_attr("sym_name"), top.get());
  auto found = entry ? executables_.find(entry->name) : executables_.end();
  if (found != executables_.end() && !found->second->region(0)->block(0)->empty())
    body = found->second->region(0)->block(0)->ops().front().get();
  if (!body) return InvalidArgumentError("emit: dispatch %s names no flow.executable", op->loc().c_str());

  codegen::CompiledDispatch compiled;
  uint32_t entry_point = 0;
  KILN_ASSIGN_OR_RETURN(uint16_t exe, m_.ExecutableFor(body, &compiled, &entry_point));
  std::vector<Range> reads, writes;
  std::vector<Reg> args = {Reg::Ref(cmd), Reg::Ref(0), Reg::I32(ConstReg(static_cast<int32_t>(entry_point))),
                           Reg::I32(ConstReg(compiled.workgroup_count[0])),
                           Reg::I32(ConstReg(compiled.workgroup_count[1])),
                           Reg::I32(ConstReg(compiled.workgroup_count[2]))};
  for (ir::Value* v : op->operands()) {
    const Storage& s = storage_.at(v);
    BindingArgs(s, &args);
    reads.push_back(RangeOf(s));
  }
  for (ir::Value* v : op->results()) {
    const Storage& s = storage_.at(v);
    BindingArgs(s, &args);
    writes.push_back(RangeOf(s));
  }
  Sync(cmd, reads, writes);

  auto it = executable_regs_.find(exe);
  uint16_t exe_reg;
  if (it == executable_regs_.end()) {
    exe_reg = NewRef();
    enc.CallImport(HalImport::kExecutableLookup, {Reg::I32(ConstReg(exe))}, {Reg::Ref(exe_reg)});
    executable_regs_[exe] = exe_reg;
  } else {
    exe_reg = it->second;
  }
  args[1] = Reg::Ref(exe_reg);
  if (!compiled.push_constants.empty()) {
    std::vector<Reg> pargs = {Reg::Ref(cmd)};
    for (uint32_t w : compiled.push_constants) pargs.push_back(Reg::I32(ConstReg(static_cast<int32_t>(w))));
    enc.CallImport(HalImport::kCommandBufferPushConstants, pargs, {});
  }
  debug_offsets.push_back(enc.offset());
  debug_locations.push_back(compiled.debug_name + " @ " + op->loc());
  enc.CallImport(HalImport::kCommandBufferDispatch, args, {});
  return OkStatus();
}

Status FunctionEmitter::Record(ir::Operation* op, uint16_t cmd) {
  auto copy = [&](const Storage& src, const Storage& dst, int64_t length) {
    Sync(cmd, {RangeOf(src)}, {RangeOf(dst)});
    enc.CallImport(HalImport::kCommandBufferCopy,
                   {Reg::Ref(cmd), Reg::Ref(src.buffer), Reg::I32(OffsetReg(src)), Reg::Ref(dst.buffer),
                    Reg::I32(OffsetReg(dst)), Reg::I32(ConstReg(length))},
                   {});
  };
  auto fill = [&](const Storage& dst, int64_t offset, int64_t length, int64_t pattern) {
    Storage t = dst;
    t.offset += offset;
    t.length = length;
    Sync(cmd, {}, {RangeOf(t)});
    enc.CallImport(HalImport::kCommandBufferFill,
                   {Reg::Ref(cmd), Reg::Ref(t.buffer), Reg::I32(OffsetReg(t)), Reg::I32(ConstReg(length)),
                    Reg::I32(ConstReg(static_cast<int32_t>(pattern)))},
                   {});
  };
  const std::string& n = op->name();
  if (IsLifetimeOp(op)) return RecordLifetime(op);
  if (n == "stream.timepoint.immediate") return OkStatus();  // one queue: recording order is queue order
  if (n == "stream.async.dispatch" || n == "stream.async.update" || n == "stream.async.copy" ||
      n == "stream.async.fill")
    EnsureTaken(op, cmd);
  if (n == "stream.async.dispatch") return EmitDispatch(op, cmd);
  if (n == "scf.if" || n == "scf.for" || n == "scf.while" || n == "scf.index_switch") {
    Status s = n == "scf.if"    ? RecordIf(op, cmd)
               : n == "scf.for" ? RecordFor(op, cmd)
               : n == "scf.while" ? RecordWhile(op, cmd)
                                  : RecordSwitch(op, cmd);
    unsubmitted_work_ = true;  // conservatively, for calls after the region
    return s;
  }
  if (n == "func.call") return RecordCall(op, cmd);
  if (n == "arith.addi" || n == "arith.subi" || n == "arith.muli" || n == "arith.cmpi") return RecordHostArith(op);
  if (n == "util.global.load") {
    // A snapshot copies the global into the value's own storage; a view
    // records nothing.
    if (global_snapshots_.count(op->result(0)))
      CopyInto(cmd, GlobalStorage(op->str_attr("global")), storage_.at(op->result(0)));
    return OkStatus();
  }
  if (n == "util.global.store") {
    // Copy into the global's buffer unless the value already lives there (a
    // state updated in place by tied ops on a loaded global: no copy).
    CopyInto(cmd, storage_.at(op->operand(0)), GlobalStorage(op->str_attr("global")));
    return OkStatus();
  }
  if (n == "arith.constant") {
    uint16_t r = NewI32();
    enc.ConstI32(r, static_cast<int32_t>(op->int_attr("value")));
    i32_values_[op->result(0)] = r;
    return OkStatus();
  }
  if (n == "stream.async.load") {
    // A device value the host branches on: submit what is recorded, wait,
    // read it, and continue in a fresh command buffer (same register).
    const Storage& src = storage_.at(op->operand(0));
    int64_t width = static_cast<int64_t>(DTypeSize(ParseDType(op->str_attr("dtype"))));
    // i64 host values (sizes, sample rates) are read through their low 32 bits
    // (little-endian), which holds every value an i32 register can carry.
    if (width == 8 && op->str_attr("dtype") == "i64") width = 4;
    if (width != 1 && width != 2 && width != 4)
      return UnimplementedError("emit: stream.async.load of %s (%s)", op->str_attr("dtype").c_str(), op->loc().c_str());
    enc.CallImport(HalImport::kCommandBufferExecuteAndWait, {Reg::Ref(cmd)}, {});
    enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
    pending_reads_.clear();  // the host wait ordered everything before it
    pending_writes_.clear();
    uint16_t r = NewI32();
    Storage at = src;
    at.offset += op->int_attr("offset");
    enc.CallImport(HalImport::kBufferLoad, {Reg::Ref(at.buffer), Reg::I32(OffsetReg(at)), Reg::I32(ConstReg(width))},
                   {Reg::I32(r)});
    i32_values_[op->result(0)] = r;
    return OkStatus();
  }
  if (n == "stream.async.clone" || n == "stream.async.transfer") {
    copy(storage_.at(op->operand(0)), storage_.at(op->result(0)), op->int_attr("size"));
  } else if (n == "stream.async.update") {
    Storage dst = storage_.at(op->result(0));
    dst.offset += op->int_attr("offset");
    dst.length = op->int_attr("length");
    copy(storage_.at(op->operand(1)), dst, op->int_attr("length"));
  } else if (n == "stream.async.copy") {
    Storage src = storage_.at(op->operand(1)), dst = storage_.at(op->result(0));
    src.offset += op->int_attr("src_offset");
    dst.offset += op->int_attr("dst_offset");
    src.length = dst.length = op->int_attr("length");
    copy(src, dst, op->int_attr("length"));
  } else if (n == "stream.async.splat") {
    fill(storage_.at(op->result(0)), 0, op->int_attr("size"), op->int_attr("pattern"));
  } else if (n == "stream.async.fill") {
    fill(storage_.at(op->result(0)), op->int_attr("offset"), op->int_attr("length"), op->int_attr("pattern"));
  }
  return OkStatus();
}

// stream.resource.dealloca(%r, %tp) / release(%r): the end of this
// function's ownership of %r, right after its last use (queue order: the
// command buffer recorded so far retains what it uses until it retires).
//  - a transient in the arena: nothing to emit; the dealloca ended its
//    lifetime in the transient plan (AssignStorage);
//  - a consumed import that kept the caller's allocation, or the result of
//    a call into another module (droppable_): drop the argument view and
//    buffer registers, so the runtime frees the buffer (or hands it back to
//    the callee's allocate_cached slot) when the last command buffer using
//    it retires instead of when the function returns.
//    Nothing after the dealloca touches the allocation, so its pending
//    hazard ranges are dropped too (a later barrier must not name it).
// stream.resource.retain(%r): the escaping use takes its own reference
// (a register, a global, a result view), so there is nothing to emit.
Status FunctionEmitter::RecordLifetime(ir::Operation* op) {
  EmitReport& report = m_.report();
  (op->is("stream.resource.retain") ? report.retains
   : op->is("stream.resource.release") ? report.releases : report.deallocas)++;
  // Several blocks: block order is not execution order, so a drop placed by
  // program position could run before a use in a later-executed block; keep
  // the registers (freed at return, as without the pass).
  if (op->is("stream.resource.retain") || multi_block_) return OkStatus();
  auto it = droppable_.find(RootOf(op->operand(0)));
  if (it == droppable_.end()) return OkStatus();
  const Storage& s = storage_.at(it->first);
  auto same_group = [&](const Range& r) { return r.group == s.group; };
  pending_reads_.erase(std::remove_if(pending_reads_.begin(), pending_reads_.end(), same_group), pending_reads_.end());
  pending_writes_.erase(std::remove_if(pending_writes_.begin(), pending_writes_.end(), same_group),
                        pending_writes_.end());
  enc.ConstRefZero(s.buffer);
  if (it->second != kNoView) enc.ConstRefZero(it->second);
  report.dropped_registers++;
  return OkStatus();
}

// scf.if on a host i1: each branch records into the same command buffer and
// copies its yields into the scf.if's result storage (unless the yielded
// value already lives there). Register caches and pending hazards are
// branch-local: both branches start from the state before the scf.if and
// the join continues from the union of what each left pending.
Status FunctionEmitter::RecordIf(ir::Operation* op, uint16_t cmd) {
  auto cond = i32_values_.find(op->operand(0));
  if (cond == i32_values_.end())
    return UnimplementedError("emit: scf.if condition is not a host value (%s)", op->loc().c_str());
  vm::Label then_label = enc.NewLabel(), else_label = enc.NewLabel(), join = enc.NewLabel();
  enc.CondBr(cond->second, then_label, else_label);
  const auto consts = consts_;
  const auto exes = executable_regs_;
  const auto reads = pending_reads_, writes = pending_writes_;
  std::vector<Range> after_reads, after_writes;
  for (unsigned r = 0; r < 2; ++r) {
    enc.Bind(r == 0 ? then_label : else_label);
    consts_ = consts;
    executable_regs_ = exes;
    pending_reads_ = reads;
    pending_writes_ = writes;
    ir::Block* block = op->region(r)->block(0);
    for (auto& owned : block->ops()) {
      if (owned->is("scf.yield")) continue;
      KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    }
    ir::Operation* yield = block->terminator();
    for (unsigned i = 0; yield && i < yield->num_operands(); ++i)
      CopyInto(cmd, storage_.at(yield->operand(i)), storage_.at(op->result(i)));
    if (r == 0) enc.Br(join);
    after_reads.insert(after_reads.end(), pending_reads_.begin(), pending_reads_.end());
    after_writes.insert(after_writes.end(), pending_writes_.begin(), pending_writes_.end());
  }
  enc.Bind(join);
  consts_ = consts;
  executable_regs_ = exes;
  pending_reads_ = after_reads;
  pending_writes_ = after_writes;
  return OkStatus();
}

// scf.for with host (i32) bounds, recorded as a bytecode loop that appends
// each trip's commands to the command buffer. Each loop-carried value has one
// storage for the whole loop: the init is copied in once (unless it already
// lives there) and a yield is copied back only when the body did not update
// the carried value in place (a tied dispatch on the block argument writes
// straight into it: no copy per trip). Hazards: the body starts each trip as
// if everything it touches were pending, so trip k+1 is ordered after trip k.
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
    if (storage_.count(r)) CopyInto(cmd, storage_.at(op->operand(3 + r->index())), storage_.at(r));
  // Everything the body reads or writes, as pending at the top of each trip.
  std::vector<Range> body_ranges;
  ForEachOp(loop_body, [&](ir::Operation* inner) {
    for (ir::Value* v : inner->results()) {
      auto it = storage_.find(v);
      if (it != storage_.end() && it->second.kind != Storage::kConstant) body_ranges.push_back(RangeOf(it->second));
    }
    for (ir::Value* v : inner->operands()) {
      auto it = storage_.find(v);
      if (it != storage_.end() && it->second.kind != Storage::kConstant) body_ranges.push_back(RangeOf(it->second));
    }
  });
  for (ir::Value* a : loop_body->arguments()) {
    auto it = storage_.find(a);
    if (it != storage_.end()) body_ranges.push_back(RangeOf(it->second));
  }
  uint16_t iv = NewI32(), in_range = NewI32();
  enc.MovI32(iv, bounds[0]);
  i32_values_[loop_body->argument(0)] = iv;
  vm::Label header = enc.NewLabel(), trip = enc.NewLabel(), exit = enc.NewLabel();
  const auto consts = consts_;
  const auto exes = executable_regs_;
  enc.Bind(header);
  enc.CmpLtI32(in_range, iv, bounds[1]);
  enc.CondBr(in_range, trip, exit);
  enc.Bind(trip);
  pending_writes_.insert(pending_writes_.end(), body_ranges.begin(), body_ranges.end());
  pending_reads_.insert(pending_reads_.end(), body_ranges.begin(), body_ranges.end());
  // A zero-trip loop reaches the exit in this state: keep it for the join.
  const auto header_reads = pending_reads_, header_writes = pending_writes_;
  for (auto& owned : loop_body->ops()) {
    if (owned->is("scf.yield")) continue;
    KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  }
  ir::Operation* yield = loop_body->terminator();
  if (yield)
    for (const EdgeGroup& g : EdgeGroupsOf(yield)) CopyEdge(cmd, yield, g.operands, g.dsts);
  enc.AddI32(iv, iv, bounds[2]);
  enc.Br(header);
  enc.Bind(exit);
  JoinLoopExit(consts, exes, body_ranges, header_writes, header_reads);
  return OkStatus();
}

StatusOr<std::set<ir::Value*>> FunctionEmitter::MovedIntoCalls(ir::Block* body) {
  std::set<ir::Value*> moved;
  Status status;
  ForEachOp(body, [&](ir::Operation* op) {
    if (!status.ok() || !op->is("func.call")) return;
    auto imp = m_.ModuleImportFor(module_, op);
    if (!imp.ok()) {
      status = imp.status();
      return;
    }
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (imp.value()->consume[i]) moved.insert(RootOf(op->operand(i)));
  });
  KILN_RETURN_IF_ERROR(status);
  return moved;
}

// True when `operand` of `call` (in the function's entry block) is this
// function's own consumed argument, imported and passed on whole and
// unchanged: the stream.tensor.import (consume = true) of an argument typed
// exactly as the callee's parameter `type`, with no in-place write of it
// (copy-on-write and elision have proven no later read: the call moves it).
// Sets *arg_reg to the argument's view register.
bool FunctionEmitter::MovableArgument(ir::Operation* call, ir::Value* operand, const ir::Type& type,
                                      uint16_t* arg_reg) {
  ir::Operation* def = operand->defining_op();
  if (call->parent_op() != func_ || !def || !def->is("stream.tensor.import") || !def->bool_attr("consume"))
    return false;
  ir::Value* arg = def->operand(0);
  if (!arg->is_block_argument() || !(arg->type() == type)) return false;
  auto it = storage_.find(operand);
  if (it == storage_.end() || it->second.kind != Storage::kArgument || it->second.offset != 0) return false;
  for (const ir::Use& u : operand->uses()) {
    if (u.user == call) continue;
    for (ir::Value* r : u.user->results())
      if (TiedOperand(u.user, r->index()) == operand) return false;  // written in place (taken storage)
  }
  *arg_reg = static_cast<uint16_t>(arg->index());
  return true;
}

// func.call of another module's function (CALL_IMPORT of "module.function")
// or of a function of this module (CALL of its ordinal; same convention):
//   1. submit the work recorded so far without a host wait (the callee's
//      submissions are queue-ordered after it);
//   2. one hal.buffer_view.create per operand, typed as the callee's argument
//      (the callee checks dtype/shape at the call; views share the storage:
//      no copy);
//   3. CALL_IMPORT / CALL; the callee runs in the next frame and has
//      submitted its own work when it returns;
//   4. each result view's (buffer, offset) becomes the result's storage (an
//      external allocation the caller now holds), and the views are dropped.
// A `consume` parameter receives the caller's own consumed argument view
// when the operand is that argument, whole (MovableArgument: ownership
// passes on, no copy); otherwise a view the caller made for the call, which
// the callee owns only when nothing else holds the buffer (vm/context.h),
// else it works on a copy.
Status FunctionEmitter::RecordCall(ir::Operation* op, uint16_t cmd) {
  KILN_ASSIGN_OR_RETURN(const ModuleEmitter::ModuleImport* imp_ptr, m_.ModuleImportFor(module_, op));
  const ModuleEmitter::ModuleImport imp = *imp_ptr;  // module_imports_ may grow later
  const std::string callee = imp.decl->str_attr("sym_name");
  for (unsigned i = 0; i < op->num_operands(); ++i) {
    auto it = storage_.find(op->operand(i));
    if (it == storage_.end())
      return InternalError("emit: operand %u of the call of @%s (%s) has no storage", i, callee.c_str(),
                           op->loc().c_str());
    if (it->second.length != imp.arg_types[i].byte_size())
      return InvalidArgumentError("emit: func.call @%s (%s): operand %u has %lld bytes, the declared argument %s has %lld",
                                  callee.c_str(), op->loc().c_str(), i, static_cast<long long>(it->second.length),
                                  imp.arg_types[i].ToString().c_str(),
                                  static_cast<long long>(imp.arg_types[i].byte_size()));
  }
  for (unsigned k = 0; k < op->num_results(); ++k)
    if (SizeOf(op->result(k)) != imp.result_types[k].byte_size())
      return InvalidArgumentError("emit: func.call @%s (%s): result %u is sized %lld bytes, the declared result %s has %lld",
                                  callee.c_str(), op->loc().c_str(), k, static_cast<long long>(SizeOf(op->result(k))),
                                  imp.result_types[k].ToString().c_str(),
                                  static_cast<long long>(imp.result_types[k].byte_size()));
  // Submit what the callee may read. Nested in an scf region, always (a
  // branch or a later trip may have recorded work the compile-time order
  // does not show); in the entry block, only when something was recorded.
  if (op->parent_op() != func_ || unsubmitted_work_) SubmitAndRestart(cmd);
  std::vector<Reg> args, results;
  for (unsigned i = 0; i < op->num_operands(); ++i) {
    const Storage& s = storage_.at(op->operand(i));
    const ir::Type& t = imp.arg_types[i];
    if (uint16_t arg_reg; imp.consume[i] && MovableArgument(op, op->operand(i), t, &arg_reg)) {
      // Move: hand the caller's own consumed argument view to the callee
      // (CALL_IMPORT nulls the register) after dropping the extra buffer
      // reference, so the callee owns the storage when the caller did.
      enc.ConstRefZero(s.buffer);
      args.push_back(Reg::Ref(arg_reg));
      continue;
    }
    std::vector<Reg> vargs = {Reg::Ref(s.buffer), Reg::I32(OffsetReg(s)),
                              Reg::I32(ConstReg(static_cast<int64_t>(t.dtype))), Reg::I32(ConstReg(t.rank()))};
    for (int64_t d : t.shape) vargs.push_back(Reg::I32(ConstReg(d)));
    uint16_t view = NewRef();
    enc.CallImport(HalImport::kBufferViewCreate, vargs, {Reg::Ref(view)});
    args.push_back(Reg::Ref(view));
  }
  for (unsigned k = 0; k < op->num_results(); ++k) results.push_back(Reg::Ref(NewRef()));
  debug_offsets.push_back(enc.offset());
  debug_locations.push_back("call @" + callee + " @ " + op->loc());
  if (imp.local)
    enc.Call(imp.ordinal, args, results);  // this module's function
  else
    enc.CallImport(imp.ordinal, args, results);
  for (const Reg& a : args) enc.ConstRefZero(a.index);  // drop the operand views
  for (unsigned k = 0; k < op->num_results(); ++k) {
    const Storage& s = storage_.at(op->result(k));
    enc.CallImport(HalImport::kBufferViewBuffer, {results[k]}, {Reg::Ref(s.buffer)});
    enc.CallImport(HalImport::kBufferViewOffset, {results[k]}, {Reg::I32(s.offset_reg)});
    enc.ConstRefZero(results[k].index);
  }
  return OkStatus();
}

std::vector<Range> FunctionEmitter::TouchedRanges(const std::vector<ir::Block*>& blocks) {
  std::vector<Range> ranges;
  auto add = [&](ir::Value* v) {
    auto it = storage_.find(v);
    if (it != storage_.end() && it->second.kind != Storage::kConstant) ranges.push_back(RangeOf(it->second));
  };
  for (ir::Block* b : blocks) {
    for (ir::Value* a : b->arguments()) add(a);
    ForEachOp(b, [&](ir::Operation* inner) {
      for (ir::Value* v : inner->results()) add(v);
      for (ir::Value* v : inner->operands()) add(v);
      if (inner->is("util.global.load") || inner->is("util.global.store")) {
        auto g = global_storage_.find(inner->str_attr("global"));
        if (g != global_storage_.end()) ranges.push_back(RangeOf(g->second));
      }
      for (unsigned r = 0; r < inner->num_regions(); ++r)
        for (auto& nb : inner->region(r)->blocks())
          for (ir::Value* a : nb->arguments()) add(a);
    });
  }
  return ranges;
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
  const std::string& n = op->name();
  if (n == "arith.addi") {
    enc.AddI32(r, a->second, b->second);
  } else if (n == "arith.subi") {
    enc.SubI32(r, a->second, b->second);
  } else if (n == "arith.muli") {
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


// scf.while, recorded as a bytecode loop:
//   (copy each init into its carried storage)
//   header: <before region>; copy forwarded values into the result storage;
//           COND_BR cond, body, exit
//   body:   <after region>; copy yields into the carried storage; BR header
//   exit:
// One storage per loop-carried value: "before" argument i, result i and
// "after" argument i share it when the condition forwards argument i at
// position i (the usual form), so a tied update in the after region writes
// the carried value in place and its yield copies nothing. Host values
// (index, i1) are carried in i32 registers. Hazards: as scf.for, everything
// the regions touch is pending at the top of each trip (trip k+1 is ordered
// after trip k) and after the loop.
Status FunctionEmitter::RecordWhile(ir::Operation* op, uint16_t cmd) {
  if (op->num_regions() != 2 || op->region(0)->empty() || op->region(1)->empty())
    return InvalidArgumentError("emit: scf.while needs a before and an after region (%s)", op->loc().c_str());
  ir::Block* before = op->region(0)->block(0);
  ir::Block* after = op->region(1)->block(0);
  ir::Operation* cond = before->terminator();
  ir::Operation* yield = after->terminator();
  if (!cond || !cond->is("scf.condition") || cond->num_operands() != 1 + op->num_results() ||
      before->num_arguments() != op->num_operands() || after->num_arguments() != op->num_results() || !yield ||
      !yield->is("scf.yield") || yield->num_operands() != before->num_arguments())
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
      CopyInto(cmd, storage_.at(init), storage_.at(a));
    } else {
      auto it = i32_values_.find(init);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.while init %u is not a host value (%s)", a->index(), op->loc().c_str());
      carried_regs[a->index()] = NewI32();
      enc.MovI32(carried_regs[a->index()], it->second);
      i32_values_[a] = carried_regs[a->index()];
    }
  }
  std::vector<Range> body_ranges = TouchedRanges({before, after});
  vm::Label header = enc.NewLabel(), trip = enc.NewLabel(), exit = enc.NewLabel();
  const auto consts = consts_;
  const auto exes = executable_regs_;
  enc.Bind(header);
  pending_writes_.insert(pending_writes_.end(), body_ranges.begin(), body_ranges.end());
  pending_reads_.insert(pending_reads_.end(), body_ranges.begin(), body_ranges.end());
  for (auto& owned : before->ops())
    if (owned.get() != cond) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  auto c = i32_values_.find(cond->operand(0));
  if (c == i32_values_.end())
    return UnimplementedError("emit: scf.while condition is not a host value (%s)", op->loc().c_str());
  // Forward: copy into result storage (nothing in the usual form), as one
  // parallel copy.
  for (const EdgeGroup& g : EdgeGroupsOf(cond)) CopyEdge(cmd, cond, g.operands, g.dsts);
  for (ir::Value* r : op->results()) {
    ir::Value* fwd = cond->operand(1 + r->index());
    if (r->type().kind != ir::TypeKind::kResource) {
      auto it = i32_values_.find(fwd);
      if (it == i32_values_.end())
        return UnimplementedError("emit: scf.condition operand is not a host value (%s)", op->loc().c_str());
      enc.MovI32(i32_values_.at(r), it->second);
    }
  }
  // The exit is reached from here (the after region may never run): keep
  // this state for the join.
  const auto exit_reads = pending_reads_, exit_writes = pending_writes_;
  enc.CondBr(c->second, trip, exit);
  enc.Bind(trip);
  for (auto& owned : after->ops())
    if (owned.get() != yield) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
  // Next values into the carried storage (one parallel copy) / registers.
  for (const EdgeGroup& g : EdgeGroupsOf(yield)) CopyEdge(cmd, yield, g.operands, g.dsts);
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
  JoinLoopExit(consts, exes, body_ranges, exit_writes, exit_reads);
  return OkStatus();
}

// scf.index_switch on a host index: a compare-and-branch chain (all case
// constants materialized before the first branch), then each region records
// into the same command buffer as in RecordIf and copies its yields into the
// result storage unless the yielded value already lives there (a fresh value
// a region creates only to yield it is written straight into it).
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
  const auto consts = consts_;
  const auto exes = executable_regs_;
  const auto reads = pending_reads_, writes = pending_writes_;
  std::vector<Range> after_reads, after_writes;
  for (unsigned r = 0; r < op->num_regions(); ++r) {
    enc.Bind(labels[r]);
    consts_ = consts;
    executable_regs_ = exes;
    pending_reads_ = reads;
    pending_writes_ = writes;
    if (op->region(r)->empty()) return InvalidArgumentError("emit: empty scf.index_switch region (%s)", op->loc().c_str());
    ir::Block* block = op->region(r)->block(0);
    ir::Operation* yield = block->terminator();
    for (auto& owned : block->ops())
      if (owned.get() != yield || !yield->is("scf.yield")) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    for (unsigned i = 0; yield && yield->is("scf.yield") && i < yield->num_operands(); ++i) {
      ir::Value* y = yield->operand(i);
      if (y->type().kind == ir::TypeKind::kResource) {
        CopyInto(cmd, storage_.at(y), storage_.at(op->result(i)));
      } else {
        auto it = i32_values_.find(y);
        if (it == i32_values_.end())
          return UnimplementedError("emit: scf.yield operand is not a host value (%s)", op->loc().c_str());
        auto res = i32_values_.find(op->result(i));
        if (res == i32_values_.end()) res = i32_values_.emplace(op->result(i), NewI32()).first;
        enc.MovI32(res->second, it->second);
      }
    }
    enc.Br(join);
    after_reads.insert(after_reads.end(), pending_reads_.begin(), pending_reads_.end());
    after_writes.insert(after_writes.end(), pending_writes_.begin(), pending_writes_.end());
  }
  enc.Bind(join);
  consts_ = consts;
  executable_regs_ = exes;
  pending_reads_ = after_reads;
  pending_writes_ = after_writes;
  return OkStatus();
}

// Copies a branch's operands `first`..`first + count` into the storage
// (resources) or registers (host values) of `target`'s arguments, as one
// parallel copy: a copy is skipped when the value already lives there, and an
// operand living in another argument's storage goes through its temporary
// (planned in AssignStorage). Host values go through temporary registers.
Status FunctionEmitter::BranchInto(ir::Operation* edge, ir::Block* target, unsigned first, unsigned count,
                                   uint16_t cmd) {
  if (count != target->num_arguments() || first + count > edge->num_operands())
    return InvalidArgumentError("emit: branch passes %u values to a block of %u arguments", count,
                                target->num_arguments());
  EdgeGroup g;
  std::vector<std::pair<uint16_t, uint16_t>> moves;
  for (unsigned i = 0; i < count; ++i) {
    ir::Value* a = target->argument(i);
    ir::Value* v = edge->operand(first + i);
    if (a->type().kind == ir::TypeKind::kResource) {
      g.operands.push_back(first + i);
      g.dsts.push_back(&storage_.at(a));
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
  CopyEdge(cmd, edge, g.operands, g.dsts);
  for (auto& [t, dst] : moves) enc.MovI32(dst, t);
  return OkStatus();
}

// func.return: results backed by the constant pool, a module global or a
// borrowed argument get their own copy (the pool is shared and immutable; a
// global changes on the next call; a borrowed argument is the caller's
// storage, and a result must be fresh storage the caller owns: a caller in
// another module plans its call results apart from its own operands), then
// the command buffer is submitted without blocking and each result is
// returned as a view.
Status FunctionEmitter::EmitReturn(ir::Operation* ret, uint16_t cmd) {
  std::vector<std::pair<ir::Type, Storage>> results;
  for (ir::Value* v : ret->operands()) {
    ir::Operation* exp = v->defining_op();
    if (!exp || !exp->is("stream.tensor.export"))
      return InvalidArgumentError("emit: function result is not a stream.tensor.export");
    Storage s = storage_.at(exp->operand(0));
    ir::Operation* root = RootOf(exp->operand(0))->defining_op();
    bool borrowed = s.kind == Storage::kArgument && root && root->is("stream.tensor.import") &&
                    !root->bool_attr("consume");
    if (s.kind == Storage::kConstant || s.kind == Storage::kVariable || borrowed) {
      Storage copy;
      copy.kind = Storage::kExternal;
      copy.buffer = NewRef();
      copy.group = NewGroup();
      copy.length = s.length;
      per_invoke_allocation = true;
      enc.CallImport(HalImport::kAllocatorAllocate,
                     {Reg::I32(ConstReg(AlignUp(s.length, 16))), Reg::I32(ConstReg(1))}, {Reg::Ref(copy.buffer)});
      Sync(cmd, {RangeOf(s)}, {RangeOf(copy)});
      enc.CallImport(HalImport::kCommandBufferCopy,
                     {Reg::Ref(cmd), Reg::Ref(s.buffer), Reg::I32(OffsetReg(s)), Reg::Ref(copy.buffer),
                      Reg::I32(ConstReg(0)), Reg::I32(ConstReg(s.length))},
                     {});
      s = copy;
    }
    results.push_back({v->type(), s});
  }
  // Submit without blocking; "final" (1): the invocation's signal fence rides
  // on this submission (kiln_invoke_async), a synchronous invoke waits once.
  enc.CallImport(HalImport::kCommandBufferExecute, {Reg::Ref(cmd), Reg::I32(ConstReg(1))}, {});
  std::vector<Reg> ret_regs;
  for (auto& [t, s] : results) {
    std::vector<Reg> vargs = {Reg::Ref(s.buffer), Reg::I32(OffsetReg(s)),
                              Reg::I32(ConstReg(static_cast<int64_t>(t.dtype))), Reg::I32(ConstReg(t.rank()))};
    for (int64_t d : t.shape) vargs.push_back(Reg::I32(ConstReg(d)));
    uint16_t view = NewRef();
    enc.CallImport(HalImport::kBufferViewCreate, vargs, {Reg::Ref(view)});
    ret_regs.push_back(Reg::Ref(view));
  }
  enc.Ret(ret_regs);
  return OkStatus();
}

Status FunctionEmitter::Emit() {
  ir::Region* region = func_->region(0);
  ir::Block* body = region->block(0);
  multi_block_ = region->num_blocks() > 1;
  ir::Operation* ret = body->terminator();
  if (!multi_block_ && (!ret || !ret->is("func.return")))
    return InvalidArgumentError("emit: function without func.return");
  for (auto& b : region->blocks()) {
    ir::Operation* t = b->terminator();
    if (!t || !(t->is("func.return") || t->is("cf.br") || t->is("cf.cond_br")))
      return InvalidArgumentError("emit: a block of the function does not end in func.return, cf.br or cf.cond_br");
  }
  // Arguments occupy ref registers 0..N-1; the command buffer comes next.
  ref_count = body->num_arguments();
  uint16_t cmd = NewRef();
  enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
  KILN_RETURN_IF_ERROR(AssignStorage(body, cmd));
  if (!multi_block_) {
    for (auto& owned : body->ops()) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    return EmitReturn(ret, cmd);
  }

  // A body of several blocks (cf.br / cf.cond_br): each block gets a label
  // and each host block argument (i1, index) an i32 register. A block other
  // than the entry may be reached from anywhere, so it starts with every
  // storage of the function pending (the first conflicting command gets a
  // barrier) and with only the constants and executables the entry block
  // made before its terminator (the entry dominates every block).
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
  const std::vector<Range> everything = TouchedRanges(all);
  std::map<int64_t, uint16_t> entry_consts;
  std::map<uint16_t, uint16_t> entry_exes;
  for (ir::Block* b : all) {
    enc.Bind(labels[index[b]]);
    if (b != body) {
      consts_ = entry_consts;
      executable_regs_ = entry_exes;
      pending_reads_ = everything;
      pending_writes_ = everything;
    }
    ir::Operation* t = b->terminator();
    for (auto& owned : b->ops())
      if (owned.get() != t) KILN_RETURN_IF_ERROR(Record(owned.get(), cmd));
    if (b == body) {
      entry_consts = consts_;
      entry_exes = executable_regs_;
    }
    const auto consts = consts_;
    const auto exes = executable_regs_;
    if (t->is("func.return")) {
      KILN_RETURN_IF_ERROR(EmitReturn(t, cmd));
    } else if (t->is("cf.br")) {
      if (t->num_successors() != 1) return InvalidArgumentError("emit: cf.br needs one successor");
      KILN_RETURN_IF_ERROR(BranchInto(t, t->successor(0), 0, t->num_operands(), cmd));
      enc.Br(labels[index.at(t->successor(0))]);
    } else {
      std::vector<int64_t> seg = t->ints_attr("operand_segments");
      if (t->num_successors() != 2 || seg.size() != 3 || seg[0] != 1 ||
          1 + seg[1] + seg[2] != static_cast<int64_t>(t->num_operands()))
        return InvalidArgumentError("emit: malformed cf.cond_br (%s)", t->loc().c_str());
      auto c = i32_values_.find(t->operand(0));
      if (c == i32_values_.end())
        return UnimplementedError("emit: cf.cond_br condition is not a host value (%s)", t->loc().c_str());
      vm::Label edges[2] = {enc.NewLabel(), enc.NewLabel()};
      enc.CondBr(c->second, edges[0], edges[1]);
      const auto reads = pending_reads_, writes = pending_writes_;
      for (unsigned k = 0; k < 2; ++k) {
        enc.Bind(edges[k]);
        consts_ = consts;
        executable_regs_ = exes;
        pending_reads_ = reads;
        pending_writes_ = writes;
        unsigned first = k == 0 ? 1u : static_cast<unsigned>(1 + seg[1]);
        unsigned count = static_cast<unsigned>(seg[1 + k]);
        KILN_RETURN_IF_ERROR(BranchInto(t, t->successor(k), first, count, cmd));
        enc.Br(labels[index.at(t->successor(k))]);
      }
    }
  }
  return OkStatus();
}

std::vector<std::string> StringList(ir::Operation* op, const char* name) {
  std::vector<std::string> out;
  if (const ir::Attribute* a = op->attr(name))
    if (auto* list = std::get_if<std::shared_ptr<ir::AttrList>>(&a->value))
      for (const ir::Attribute& e : **list)
        if (auto* s = std::get_if<std::string>(&e.value)) out.push_back(*s);
  return out;
}

flatbuffers::Offset<fb::TensorSig> MakeSig(flatbuffers::FlatBufferBuilder& fbb, const std::string& name,
                                           const ir::Type& t, fb::Ownership ownership) {
  auto n = fbb.CreateString(name);
  auto shape = fbb.CreateVector(t.shape);
  fb::TensorSigBuilder b(fbb);
  b.add_name(n);
  b.add_dtype(static_cast<fb::DType>(t.dtype));
  b.add_shape(shape);
  b.add_ownership(ownership);
  return b.Finish();
}

StatusOr<std::vector<uint8_t>> ModuleEmitter::Emit(ir::Module& module) {
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  std::vector<flatbuffers::Offset<fb::Function>> functions;
  KILN_RETURN_IF_ERROR(CollectGlobals(module));

  for (ir::Operation* func : module.functions()) {
    // Whether the command sequence is fixed (replayable): decided on the
    // stream-level function (compiler/analysis/command_sequence.h).
    analysis::CommandSequence commands = analysis::AnalyzeCommandSequence(func);
    // Execution regions and timepoints: recorded in queue order.
    KILN_RETURN_IF_ERROR(LowerTimeline(func).Annotate("function @" + func->str_attr("sym_name")));
    FunctionEmitter fe(*this, module, func);
    KILN_RETURN_IF_ERROR(fe.Emit().Annotate("function @" + func->str_attr("sym_name")));
    if (fe.i32_count > vm::kMaxRegisters || fe.ref_count > vm::kMaxRegisters)
      return ResourceExhaustedError(
          "function @%s needs %u i32 and %u ref registers; the VM allows %u per bank (split the "
          "graph: e.g. fewer results per function)",
          func->str_attr("sym_name").c_str(), fe.i32_count, fe.ref_count, vm::kMaxRegisters);
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> code, fe.enc.Finish());
    bool static_commands = commands.is_static && !fe.per_invoke_allocation;
    if (static_commands) {
      // The loader checks the claim (vm/static_commands.h); a mismatch here
      // is an emitter bug, never a module the runtime would refuse.
      std::vector<std::string> import_names;
      for (const ImportDef& d : kHalImports) import_names.push_back(d.name);
      for (const ModuleImport& m : module_imports_) import_names.push_back(m.decl->str_attr("sym_name"));
      std::vector<std::string_view> names(import_names.begin(), import_names.end());
      Status check = vm::CheckStaticCommands(vm::ByteSpan(code.data(), code.size()), names.data(), names.size());
      if (!check.ok())
        return InternalError("emit: function @%s: analysed static but its bytecode is not: %s",
                             func->str_attr("sym_name").c_str(), check.message().c_str());
    }
    ir::Block* body = func->region(0)->block(0);
    std::vector<std::string> arg_names = StringList(func, "arg_names");
    std::vector<std::string> result_names = StringList(func, "result_names");
    std::vector<std::string> ownership = StringList(func, "arg_ownership");
    std::vector<flatbuffers::Offset<fb::TensorSig>> args, results;
    for (unsigned i = 0; i < body->num_arguments(); ++i) {
      fb::Ownership own = (i < ownership.size() && ownership[i] == "consume") ? fb::Ownership::consume
                                                                               : fb::Ownership::borrow;
      args.push_back(MakeSig(fbb, i < arg_names.size() ? arg_names[i] : "arg" + std::to_string(i),
                             body->argument(i)->type(), own));
    }
    ir::Operation* ret = body->terminator();
    for (auto& b : func->region(0)->blocks())  // a body with branches: its (first) func.return
      if (b->terminator() && b->terminator()->is("func.return")) {
        ret = b->terminator();
        break;
      }
    for (unsigned i = 0; i < ret->num_operands(); ++i)
      results.push_back(MakeSig(fbb, i < result_names.size() ? result_names[i] : "result" + std::to_string(i),
                                ret->operand(i)->type(), fb::Ownership::borrow));
    auto name = fbb.CreateString(func->str_attr("sym_name"));
    auto args_v = fbb.CreateVector(args);
    auto results_v = fbb.CreateVector(results);
    auto code_v = fbb.CreateVector(code);
    auto dbg_off = fbb.CreateVector(fe.debug_offsets);
    auto dbg_loc = fbb.CreateVectorOfStrings(fe.debug_locations);
    fb::FunctionBuilder b(fbb);
    b.add_name(name);
    b.add_exported(true);
    b.add_args(args_v);
    b.add_results(results_v);
    b.add_i32_register_count(static_cast<uint16_t>(std::max<uint32_t>(fe.i32_count, 1)));
    b.add_ref_register_count(static_cast<uint16_t>(std::max<uint32_t>(fe.ref_count, 1)));
    b.add_bytecode(code_v);
    b.add_debug_offsets(dbg_off);
    b.add_debug_locations(dbg_loc);
    b.add_static_commands(static_commands);
    functions.push_back(b.Finish());
  }

  // Initializer, run once per context: upload the constant pool into global
  // 0; allocate each util.global (global 1..N) as a host-visible buffer of
  // its size (rounded up to 16 bytes) and fill it with zeros. The buffers
  // live as long as the context (variable lifetime): a store copies into
  // them, a load views them.
  int initializer = -1;
  if (!pool_.empty() || !global_order_.empty()) {
    vm::BytecodeEncoder enc;
    uint16_t i32s = 0;
    if (!pool_.empty()) {
      enc.Rodata(0, 0);
      enc.CallImport(HalImport::kAllocatorAllocateInitialized, {Reg::Ref(0)}, {Reg::Ref(1)});
      enc.GlobalStoreRef(1, 0);
    }
    if (!global_order_.empty()) {
      const uint16_t cmd = 2, buf = 3, zero = i32s++, kind = i32s++;
      enc.ConstI32(zero, 0);
      enc.ConstI32(kind, 1);
      enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
      for (const std::string& sym : global_order_) {
        const GlobalInfo& g = globals_.at(sym);
        uint16_t size = i32s++;
        enc.ConstI32(size, static_cast<int32_t>(AlignUp(g.size, 16)));
        enc.CallImport(HalImport::kAllocatorAllocate, {Reg::I32(size), Reg::I32(kind)}, {Reg::Ref(buf)});
        enc.CallImport(HalImport::kCommandBufferFill,
                       {Reg::Ref(cmd), Reg::Ref(buf), Reg::I32(zero), Reg::I32(size), Reg::I32(zero)}, {});
        enc.GlobalStoreRef(buf, g.ordinal);
      }
      enc.CallImport(HalImport::kCommandBufferExecuteAndWait, {Reg::Ref(cmd)}, {});
      enc.ConstRefZero(buf);
    }
    enc.Ret({});
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> code, enc.Finish());
    auto name = fbb.CreateString("__init");
    auto code_v = fbb.CreateVector(code);
    fb::FunctionBuilder b(fbb);
    b.add_name(name);
    b.add_exported(false);
    b.add_i32_register_count(std::max<uint16_t>(i32s, 1));
    b.add_ref_register_count(4);
    b.add_bytecode(code_v);
    initializer = static_cast<int>(functions.size());
    functions.push_back(b.Finish());
  }
  report_->constant_bytes = static_cast<int64_t>(pool_.size());
  report_->executables = static_cast<int>(executables_.size());

  std::vector<flatbuffers::Offset<fb::Import>> imports;
  for (const ImportDef& d : kHalImports)
    imports.push_back(fb::CreateImportDirect(fbb, d.name, d.signature));
  // Imports of other modules, after the native ones (ordinals kHalImportCount..).
  for (const ModuleImport& m : module_imports_)
    imports.push_back(fb::CreateImportDirect(fbb, m.decl->str_attr("sym_name").c_str(),
                                             ModuleImportSignature(m).c_str()));

  std::vector<flatbuffers::Offset<fb::RodataSegment>> rodata;
  if (!pool_.empty()) {
    pool_.resize(AlignUp(static_cast<int64_t>(pool_.size()), 16));
    auto name = fbb.CreateString("constant_pool");
    fbb.ForceVectorAlignment(pool_.size(), sizeof(uint8_t), 64);
    auto data = fbb.CreateVector(pool_);
    rodata.push_back(fb::CreateRodataSegment(fbb, name, data));
  }

  std::vector<flatbuffers::Offset<fb::Executable>> exes;
  report_->entry_points = 0;
  for (size_t x = 0; x < executables_.size(); ++x) {
    const ExecutableEntry& e = executables_[x];
    const codegen::CompiledDispatch& c = e.compiled;
    std::vector<std::vector<uint32_t>> specializations;
    std::vector<uint32_t> spirv = shaders_.Finish(static_cast<uint32_t>(x), &specializations);
    if (options_.codegen.validate_spirv && spirv != c.spirv) {
      Status s = codegen::ValidateSpirv(spirv);
      if (!s.ok()) return s.Annotate("emit: shared shader of '" + c.debug_name + "'");
    }
    std::vector<fb::Binding> bindings;
    for (uint32_t i = 0; i < c.binding_count; ++i)
      bindings.emplace_back(0, i, i < c.binding_readonly.size() && c.binding_readonly[i]);
    std::vector<uint32_t> wg(c.workgroup_size, c.workgroup_size + 3);
    std::vector<flatbuffers::Offset<fb::EntryPoint>> eps;
    for (size_t k = 0; k < e.debug_names.size(); ++k)
      eps.push_back(fb::CreateEntryPointDirect(fbb, c.entry_point.c_str(), e.debug_names[k].c_str(), &bindings,
                                               static_cast<uint32_t>(c.push_constants.size() * 4), &wg,
                                               e.macs[k],
                                               specializations[k].empty() ? nullptr : &specializations[k]));
    report_->entry_points += static_cast<int>(eps.size());
    exes.push_back(fb::CreateExecutable(fbb, fbb.CreateVector(spirv), fbb.CreateVector(eps),
                                        fbb.CreateVectorOfStrings(e.locs),
                                        c.spirv_f16.empty() ? 0 : fbb.CreateVector(c.spirv_f16)));
  }
  std::vector<flatbuffers::Offset<fb::Global>> globals;
  // Global 0 is the constant pool (null when there are no constants).
  if (!pool_.empty() || !global_order_.empty()) globals.push_back(fb::CreateGlobalDirect(fbb, "constant_pool", true));
  for (const std::string& sym : global_order_) globals.push_back(fb::CreateGlobalDirect(fbb, sym.c_str(), true));

  flatbuffers::Offset<fb::Topology> topology = 0;
  if (auto t = analysis::GetModuleTopology(module); t.ok()) topology = analysis::SerializeTopology(fbb, t.value());
  // integrity starts non-default so FlatBuffers stores it; sealed below.
  auto root = fb::CreateModuleDirect(fbb, options_.module_name.c_str(), 1, static_cast<fb::Features>(0), &imports,
                                     &functions, &rodata, &exes, &globals, initializer, /*integrity=*/1, topology);
  fbb.FinishSizePrefixed(root, fb::ModuleIdentifier());
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (!fb::SealModule(&out)) return InternalError("emit: integrity field missing");
  return out;
}

}  // namespace

StatusOr<std::vector<uint8_t>> EmitModule(ir::Module& module, const EmitOptions& options, EmitReport* report) {
  EmitReport local;
  ModuleEmitter emitter(options, report ? report : &local);
  return emitter.Emit(module);
}

}  // namespace kiln::target
