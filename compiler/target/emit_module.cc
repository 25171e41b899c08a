#include "compiler/target/emit_module.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "compiler/target/transient_planner.h"
#include "schemas/module_integrity.h"
#include "vm/isa.h"

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
  enum Kind { kArgument, kConstant, kTransient, kExternal } kind = kTransient;
  uint16_t buffer = 0;         // ref register holding the buffer
  bool dynamic_offset = false; // offset in an i32 register (argument views)
  uint16_t offset_reg = 0;
  int64_t offset = 0;          // static byte offset
  int64_t length = 0;          // bytes
};

// A byte range touched by a dispatch, for hazard tracking.
struct Range {
  uint16_t buffer;
  int64_t begin, end;
  bool Overlaps(const Range& o) const { return buffer == o.buffer && begin < o.end && o.begin < end; }
};

struct ExecutableEntry {
  codegen::CompiledDispatch compiled;
  std::vector<std::string> locs;
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
    constant_offsets_[constant] = offset;
    return offset;
  }

  // Compiles `dispatch` (de-duplicating identical shaders); returns the
  // executable ordinal.
  StatusOr<uint16_t> ExecutableFor(ir::Operation* dispatch, codegen::CompiledDispatch* out);

  const EmitOptions& options() const { return options_; }
  EmitReport& report() { return *report_; }

 private:
  const EmitOptions& options_;
  EmitReport* report_;
  std::vector<uint8_t> pool_;
  std::map<ir::Operation*, int64_t> constant_offsets_;
  std::vector<ExecutableEntry> executables_;
  friend class FunctionEmitter;
};

StatusOr<uint16_t> ModuleEmitter::ExecutableFor(ir::Operation* dispatch,
                                                codegen::CompiledDispatch* out) {
  KILN_ASSIGN_OR_RETURN(codegen::CompiledDispatch compiled,
                        codegen::CompileDispatch(dispatch, options_.codegen));
  if (options_.glsl_dump) *options_.glsl_dump << "// ---- " << compiled.debug_name << "\n" << compiled.glsl << "\n";
  report_->dispatches++;
  std::vector<std::string> locs;
  if (const ir::Attribute* a = dispatch->attr("locs")) {
    if (auto* list = std::get_if<std::shared_ptr<ir::AttrList>>(&a->value))
      for (const ir::Attribute& l : **list)
        if (auto* s = std::get_if<std::string>(&l.value)) locs.push_back(*s);
  }
  for (size_t i = 0; i < executables_.size(); ++i) {
    const auto& e = executables_[i].compiled;
    if (e.spirv == compiled.spirv && e.push_constants == compiled.push_constants) {
      *out = compiled;
      return static_cast<uint16_t>(i);
    }
  }
  *out = compiled;
  executables_.push_back({std::move(compiled), std::move(locs)});
  return static_cast<uint16_t>(executables_.size() - 1);
}

// Emits one func.func as one bytecode function.
class FunctionEmitter {
 public:
  FunctionEmitter(ModuleEmitter& m, ir::Operation* func) : m_(m), func_(func) {}

  Status Emit();

  vm::BytecodeEncoder enc;
  uint16_t i32_count = 0, ref_count = 0;
  std::vector<uint32_t> debug_offsets;
  std::vector<std::string> debug_locations;

 private:
  uint16_t NewRef() { return ref_count++; }
  uint16_t NewI32() { return i32_count++; }
  uint16_t ConstReg(int64_t v) {
    auto it = consts_.find(v);
    if (it != consts_.end()) return it->second;
    uint16_t r = NewI32();
    enc.ConstI32(r, static_cast<int32_t>(v));
    consts_[v] = r;
    return r;
  }
  uint16_t OffsetReg(const Storage& s) { return s.dynamic_offset ? s.offset_reg : ConstReg(s.offset); }
  Status AssignStorage(ir::Block* body);
  Status EmitDispatch(ir::Operation* dispatch, uint16_t cmd);

  ModuleEmitter& m_;
  ir::Operation* func_;
  std::map<int64_t, uint16_t> consts_;
  std::map<ir::Value*, Storage> storage_;
  std::map<uint16_t, uint16_t> executable_regs_;
  std::vector<Range> pending_reads_, pending_writes_;
  uint16_t pool_reg_ = 0;
  bool pool_loaded_ = false;
};

// The value whose allocation `v` views (through reshapes).
ir::Value* RootOf(ir::Value* v) {
  while (v->defining_op() && v->defining_op()->is("tensor.reshape")) v = v->defining_op()->operand(0);
  return v;
}

Status FunctionEmitter::AssignStorage(ir::Block* body) {
  // Arguments: views from the caller, in ref registers 0..N-1.
  ref_count = static_cast<uint16_t>(body->num_arguments());
  for (unsigned i = 0; i < body->num_arguments(); ++i) {
    ir::Value* arg = body->argument(i);
    if (!arg->type().is_tensor()) return UnimplementedError("emit: non-tensor function argument %u", i);
    uint16_t view = static_cast<uint16_t>(i);
    Storage s;
    s.kind = Storage::kArgument;
    s.buffer = NewRef();
    s.dynamic_offset = true;
    s.offset_reg = NewI32();
    s.length = arg->type().byte_size();
    enc.CallImport(HalImport::kBufferViewBuffer, {Reg::Ref(view)}, {Reg::Ref(s.buffer)});
    enc.CallImport(HalImport::kBufferViewOffset, {Reg::Ref(view)}, {Reg::I32(s.offset_reg)});
    storage_[arg] = s;
  }

  // Escaping roots: dispatch results that are (views of) function results.
  ir::Operation* ret = body->terminator();
  std::set<ir::Value*> escaping;
  for (ir::Value* v : ret->operands()) escaping.insert(RootOf(v));

  // Lifetimes of transient dispatch results, in dispatch steps.
  std::vector<ir::Operation*> dispatches;
  std::map<ir::Value*, TransientRequest> requests;
  std::map<ir::Operation*, int> step_of;
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (op->is("flow.dispatch")) {
      int step = static_cast<int>(dispatches.size());
      step_of[op] = step;
      dispatches.push_back(op);
      for (ir::Value* operand : op->operands()) {
        auto it = requests.find(RootOf(operand));
        if (it != requests.end()) it->second.last_use = step;
      }
      for (ir::Value* r : op->results())
        if (!escaping.count(r)) requests[r] = TransientRequest{r->type().byte_size(), step, step};
    } else if (op->is("tensor.constant") || op->is("tensor.reshape") || op->is("func.return")) {
      continue;
    } else {
      return UnimplementedError("emit: op '%s' (%s) was not formed into a dispatch",
                                op->name().c_str(), op->loc().c_str());
    }
  }
  std::vector<ir::Value*> transient_values;
  std::vector<TransientRequest> reqs;
  for (auto& [v, r] : requests) {
    transient_values.push_back(v);
    reqs.push_back(r);
    m_.report().unplanned_transient_bytes += AlignUp(r.size, kBindingAlignment);
  }
  TransientPlan plan = PlanTransients(reqs, kBindingAlignment);
  m_.report().arena_bytes = std::max(m_.report().arena_bytes, plan.arena_size);
  if (plan.arena_size > 0) {
    uint16_t arena = NewRef();
    enc.CallImport(HalImport::kAllocatorAllocate, {Reg::I32(ConstReg(plan.arena_size)), Reg::I32(ConstReg(0))},
                   {Reg::Ref(arena)});
    for (size_t i = 0; i < transient_values.size(); ++i) {
      Storage s;
      s.kind = Storage::kTransient;
      s.buffer = arena;
      s.offset = plan.offsets[i];
      s.length = reqs[i].size;
      storage_[transient_values[i]] = s;
    }
  }
  // External (escaping) dispatch results: one host-visible buffer each.
  for (ir::Operation* d : dispatches)
    for (ir::Value* r : d->results()) {
      if (!escaping.count(r)) continue;
      Storage s;
      s.kind = Storage::kExternal;
      s.buffer = NewRef();
      s.length = r->type().byte_size();
      enc.CallImport(HalImport::kAllocatorAllocate,
                     {Reg::I32(ConstReg(AlignUp(s.length, 16))), Reg::I32(ConstReg(1))}, {Reg::Ref(s.buffer)});
      storage_[r] = s;
    }
  // Constants and reshapes.
  for (auto& owned : body->ops()) {
    ir::Operation* op = owned.get();
    if (op->is("tensor.constant")) {
      if (op->result(0)->use_empty()) continue;
      if (!pool_loaded_) {
        pool_reg_ = NewRef();
        enc.GlobalLoadRef(pool_reg_, 0);
        pool_loaded_ = true;
      }
      Storage s;
      s.kind = Storage::kConstant;
      s.buffer = pool_reg_;
      s.offset = m_.ConstantOffset(op);
      s.length = op->result(0)->type().byte_size();
      storage_[op->result(0)] = s;
    } else if (op->is("tensor.reshape")) {
      auto it = storage_.find(op->operand(0));
      if (it == storage_.end()) return InternalError("emit: reshape of an unplaced value (%s)", op->loc().c_str());
      storage_[op->result(0)] = it->second;
    }
  }
  return OkStatus();
}

Status FunctionEmitter::EmitDispatch(ir::Operation* dispatch, uint16_t cmd) {
  codegen::CompiledDispatch compiled;
  KILN_ASSIGN_OR_RETURN(uint16_t exe, m_.ExecutableFor(dispatch, &compiled));
  std::vector<Range> reads, writes;
  std::vector<Reg> args = {Reg::Ref(cmd), Reg::Ref(0), Reg::I32(ConstReg(0)),
                           Reg::I32(ConstReg(compiled.workgroup_count[0])),
                           Reg::I32(ConstReg(compiled.workgroup_count[1])),
                           Reg::I32(ConstReg(compiled.workgroup_count[2]))};
  auto bind = [&](ir::Value* v, bool write) -> Status {
    auto it = storage_.find(v);
    if (it == storage_.end()) return InternalError("emit: operand of %s has no storage", dispatch->loc().c_str());
    const Storage& s = it->second;
    args.push_back(Reg::Ref(s.buffer));
    args.push_back(Reg::I32(OffsetReg(s)));
    args.push_back(Reg::I32(ConstReg(s.length)));
    if (s.kind == Storage::kTransient || s.kind == Storage::kExternal)
      (write ? writes : reads).push_back(Range{s.buffer, s.offset, s.offset + s.length});
    return OkStatus();
  };
  for (ir::Value* v : dispatch->operands()) KILN_RETURN_IF_ERROR(bind(v, false));
  for (ir::Value* v : dispatch->results()) KILN_RETURN_IF_ERROR(bind(v, true));

  // Hazards against work recorded since the last barrier.
  bool hazard = false;
  std::vector<Range> barrier_ranges;
  for (const Range& w : pending_writes_)
    for (const Range& r : reads) hazard |= w.Overlaps(r);
  for (const Range& w : pending_writes_)
    for (const Range& x : writes) hazard |= w.Overlaps(x);
  for (const Range& r : pending_reads_)
    for (const Range& x : writes)
      if (r.Overlaps(x)) { hazard = true; barrier_ranges.push_back(r); }
  if (hazard) {
    std::vector<Reg> bargs = {Reg::Ref(cmd)};
    for (const Range& w : pending_writes_) barrier_ranges.push_back(w);
    for (const Range& r : barrier_ranges) {
      bargs.push_back(Reg::Ref(r.buffer));
      bargs.push_back(Reg::I32(ConstReg(r.begin)));
      bargs.push_back(Reg::I32(ConstReg(r.end - r.begin)));
    }
    enc.CallImport(HalImport::kCommandBufferBarrier, bargs, {});
    pending_reads_.clear();
    pending_writes_.clear();
  }
  pending_reads_.insert(pending_reads_.end(), reads.begin(), reads.end());
  pending_writes_.insert(pending_writes_.end(), writes.begin(), writes.end());

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
  debug_locations.push_back(compiled.debug_name + " @ " + dispatch->loc());
  enc.CallImport(HalImport::kCommandBufferDispatch, args, {});
  return OkStatus();
}

Status FunctionEmitter::Emit() {
  ir::Block* body = func_->region(0)->block(0);
  ir::Operation* ret = body->terminator();
  if (!ret || !ret->is("func.return")) return InvalidArgumentError("emit: function without func.return");
  KILN_RETURN_IF_ERROR(AssignStorage(body));

  uint16_t cmd = NewRef();
  enc.CallImport(HalImport::kCommandBufferCreate, {}, {Reg::Ref(cmd)});
  for (auto& owned : body->ops())
    if (owned->is("flow.dispatch")) KILN_RETURN_IF_ERROR(EmitDispatch(owned.get(), cmd));

  // Results that are constants need their own copy (the pool is immutable).
  std::vector<std::pair<ir::Value*, Storage>> results;
  for (ir::Value* v : ret->operands()) {
    Storage s = storage_.at(RootOf(v));
    if (s.kind == Storage::kConstant) {
      Storage copy;
      copy.kind = Storage::kExternal;
      copy.buffer = NewRef();
      copy.length = s.length;
      enc.CallImport(HalImport::kAllocatorAllocate,
                     {Reg::I32(ConstReg(AlignUp(s.length, 16))), Reg::I32(ConstReg(1))}, {Reg::Ref(copy.buffer)});
      enc.CallImport(HalImport::kCommandBufferCopy,
                     {Reg::Ref(cmd), Reg::Ref(s.buffer), Reg::I32(ConstReg(s.offset)), Reg::Ref(copy.buffer),
                      Reg::I32(ConstReg(0)), Reg::I32(ConstReg(s.length))},
                     {});
      s = copy;
    }
    results.push_back({v, s});
  }
  enc.CallImport(HalImport::kCommandBufferExecuteAndWait, {Reg::Ref(cmd)}, {});
  std::vector<Reg> ret_regs;
  for (auto& [v, s] : results) {
    const ir::Type& t = v->type();
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

  for (ir::Operation* func : module.functions()) {
    FunctionEmitter fe(*this, func);
    KILN_RETURN_IF_ERROR(fe.Emit().Annotate("function @" + func->str_attr("sym_name")));
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> code, fe.enc.Finish());
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
    b.add_i32_register_count(std::max<uint16_t>(fe.i32_count, 1));
    b.add_ref_register_count(std::max<uint16_t>(fe.ref_count, 1));
    b.add_bytecode(code_v);
    b.add_debug_offsets(dbg_off);
    b.add_debug_locations(dbg_loc);
    functions.push_back(b.Finish());
  }

  // Initializer: upload the constant pool once per context into global 0.
  int initializer = -1;
  if (!pool_.empty()) {
    vm::BytecodeEncoder enc;
    enc.Rodata(0, 0);
    enc.CallImport(HalImport::kAllocatorAllocateInitialized, {Reg::Ref(0)}, {Reg::Ref(1)});
    enc.GlobalStoreRef(1, 0);
    enc.Ret({});
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> code, enc.Finish());
    auto name = fbb.CreateString("__init");
    auto code_v = fbb.CreateVector(code);
    fb::FunctionBuilder b(fbb);
    b.add_name(name);
    b.add_exported(false);
    b.add_i32_register_count(1);
    b.add_ref_register_count(2);
    b.add_bytecode(code_v);
    initializer = static_cast<int>(functions.size());
    functions.push_back(b.Finish());
  }
  report_->constant_bytes = static_cast<int64_t>(pool_.size());
  report_->executables = static_cast<int>(executables_.size());

  std::vector<flatbuffers::Offset<fb::Import>> imports;
  for (const ImportDef& d : kHalImports)
    imports.push_back(fb::CreateImportDirect(fbb, d.name, d.signature));

  std::vector<flatbuffers::Offset<fb::RodataSegment>> rodata;
  if (!pool_.empty()) {
    pool_.resize(AlignUp(static_cast<int64_t>(pool_.size()), 16));
    auto name = fbb.CreateString("constant_pool");
    fbb.ForceVectorAlignment(pool_.size(), sizeof(uint8_t), 64);
    auto data = fbb.CreateVector(pool_);
    rodata.push_back(fb::CreateRodataSegment(fbb, name, data));
  }

  std::vector<flatbuffers::Offset<fb::Executable>> exes;
  for (const ExecutableEntry& e : executables_) {
    const codegen::CompiledDispatch& c = e.compiled;
    std::vector<fb::Binding> bindings;
    for (uint32_t i = 0; i < c.binding_count; ++i)
      bindings.emplace_back(0, i, i < c.binding_readonly.size() && c.binding_readonly[i]);
    std::vector<uint32_t> wg(c.workgroup_size, c.workgroup_size + 3);
    auto ep = fb::CreateEntryPointDirect(fbb, c.entry_point.c_str(), c.debug_name.c_str(), &bindings,
                                         static_cast<uint32_t>(c.push_constants.size() * 4), &wg);
    std::vector<flatbuffers::Offset<fb::EntryPoint>> eps = {ep};
    std::string joined;
    for (const std::string& l : e.locs) joined += (joined.empty() ? "" : ", ") + l;
    std::vector<std::string> locs = {joined};
    exes.push_back(fb::CreateExecutable(fbb, fbb.CreateVector(c.spirv), fbb.CreateVector(eps),
                                        fbb.CreateVectorOfStrings(locs)));
  }
  std::vector<flatbuffers::Offset<fb::Global>> globals;
  if (!pool_.empty()) globals.push_back(fb::CreateGlobalDirect(fbb, "constant_pool", true));

  // integrity starts non-default so FlatBuffers stores it; sealed below.
  auto root = fb::CreateModuleDirect(fbb, options_.module_name.c_str(), 1, static_cast<fb::Features>(0), &imports,
                                     &functions, &rodata, &exes, &globals, initializer, /*integrity=*/1);
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
