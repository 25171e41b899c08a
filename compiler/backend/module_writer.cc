// The module writer: serializes what ModuleEmitter collected (functions,
// initializer, imports, constant pool, executables, globals, topology) into
// a sealed `model.kiln` FlatBuffer, and EmitModule, the public entry point.
#include "compiler/backend/emitter.h"

#include <algorithm>

#include "compiler/analysis/command_sequence.h"
#include "compiler/analysis/topology.h"
#include "schemas/module_integrity.h"
#include "vm/static_commands.h"

namespace kiln::backend {

namespace fb = kiln::format;

namespace {

struct ImportDef { const char* name; const char* signature; };
const ImportDef kHalImports[] = {
#define KILN_HAL_IMPORT(sym, name, sig, meaning) {name, sig},
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
};

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

}  // namespace

Status ModuleEmitter::CollectGlobals(ir::Module& module) {
  for (auto& owned : module.body()->ops()) {
    ir::Operation* op = owned.get();
    if (!op->is(OpCode::kUtilGlobal)) continue;
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
      if (!status.ok() || (!op->is(OpCode::kUtilGlobalLoad) && !op->is(OpCode::kUtilGlobalStore))) return;
      std::string sym = op->str_attr("global");
      const GlobalInfo* g = FindGlobal(sym);
      if (!g) {
        status = InvalidArgumentError("emit: %s names no util.global @%s (%s)", op->name().c_str(), sym.c_str(),
                                      op->loc().c_str());
        return;
      }
      if (op->is(OpCode::kUtilGlobalLoad)) {
        if (op->num_results() != 1 || op->result(0)->type().kind != ir::TypeKind::kResource) {
          status = InvalidArgumentError("emit: util.global.load @%s must give one resource (%s)", sym.c_str(),
                                        op->loc().c_str());
          return;
        }
        // Its `size` came from --schedule-allocation (globals' sizes).
      } else if (op->num_operands() != 1 || op->operand(0)->type().kind != ir::TypeKind::kResource) {
        status = InvalidArgumentError("emit: util.global.store @%s takes one resource (%s)", sym.c_str(),
                                      op->loc().c_str());
      }
    });
  }
  return status;
}

// The backend writes the allocated level: a function that still has the
// stream level's execution regions or timepoint awaits / joins did not run
// through AllocationPipeline() (--lower-timeline).
static Status CheckAllocatedLevel(ir::Operation* func) {
  ir::Operation* found = nullptr;
  func->Walk([&](ir::Operation* op) {
    if (!found && (op->is(OpCode::kStreamAsyncExecute) || op->is(OpCode::kStreamTimepointAwait) ||
                   op->is(OpCode::kStreamTimepointJoin)))
      found = op;
  });
  if (!found) return OkStatus();
  return FailedPreconditionError("emit: function @%s is not at the allocated level: '%s' (%s) is left; run the "
                                 "allocation passes first (--lower-timeline)",
                                 func->str_attr("sym_name").c_str(), found->name().c_str(), found->loc().c_str());
}

StatusOr<std::vector<uint8_t>> ModuleEmitter::Emit(ir::Module& module) {
  flatbuffers::FlatBufferBuilder fbb(1 << 20);
  std::vector<flatbuffers::Offset<fb::Function>> functions;
  KILN_RETURN_IF_ERROR(CollectGlobals(module));

  for (ir::Operation* func : module.functions()) {
    // Whether the command sequence is fixed (replayable): decided on the
    // stream-level function (compiler/analysis/command_sequence.h).
    analysis::CommandSequence commands = analysis::AnalyzeCommandSequence(func);
    // The allocated level: execution regions and timepoints were lowered by
    // the allocation passes (compiler/transforms/pipeline.cc).
    KILN_RETURN_IF_ERROR(CheckAllocatedLevel(func));
    FunctionEmitter fe(*this, module, func);
    KILN_RETURN_IF_ERROR(fe.Emit().Annotate("function @" + func->str_attr("sym_name")));
    if (fe.i32_count > vm::kMaxRegisters || fe.ref_count > vm::kMaxRegisters)
      return ResourceExhaustedError(
          "function @%s needs %u i32 and %u ref registers; the VM allows %u per bank (split the "
          "graph: e.g. fewer results per function)",
          func->str_attr("sym_name").c_str(), fe.i32_count, fe.ref_count, vm::kMaxRegisters);
    KILN_ASSIGN_OR_RETURN(std::vector<uint8_t> code, fe.enc.Finish());
    bool static_commands = commands.is_static;
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
      if (b->terminator() && b->terminator()->is(OpCode::kFuncReturn)) {
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
    std::vector<uint32_t> spirv_f16;
    std::vector<uint32_t> spirv = shaders_.Finish(static_cast<uint32_t>(x), &specializations, &spirv_f16);
    if (options_.codegen.validate_spirv && spirv != c.spirv) {
      Status s = codegen::ValidateSpirv(spirv);
      if (!s.ok()) return s.Annotate("emit: shared shader of '" + c.debug_name + "'");
    }
    if (options_.codegen.validate_spirv && spirv_f16 != c.spirv_f16) {
      Status s = codegen::ValidateSpirv(spirv_f16);
      if (!s.ok()) return s.Annotate("emit: shared f16-arithmetic shader of '" + c.debug_name + "'");
    }
    std::vector<fb::Binding> bindings;
    for (uint32_t i = 0; i < c.binding_count; ++i)
      bindings.emplace_back(0, i, i < c.binding_readonly.size() && c.binding_readonly[i]);
    std::vector<uint32_t> wg(c.workgroup_size, c.workgroup_size + 3);
    std::vector<fb::BindingKind> kinds;  // written only when some binding is not a storage buffer
    for (uint8_t kind : c.binding_kinds) {
      if (kind != 0) {
        for (uint8_t k : c.binding_kinds) kinds.push_back(static_cast<fb::BindingKind>(k));
        break;
      }
    }
    std::vector<flatbuffers::Offset<fb::EntryPoint>> eps;
    for (size_t k = 0; k < e.debug_names.size(); ++k)
      eps.push_back(fb::CreateEntryPointDirect(fbb, c.entry_point.c_str(), e.debug_names[k].c_str(), &bindings,
                                               static_cast<uint32_t>(c.push_constants.size() * 4), &wg,
                                               e.macs[k],
                                               specializations[k].empty() ? nullptr : &specializations[k],
                                               kinds.empty() ? nullptr : &kinds, c.exact_fma));
    report_->entry_points += static_cast<int>(eps.size());
    exes.push_back(fb::CreateExecutable(fbb, fbb.CreateVector(spirv), fbb.CreateVector(eps),
                                        fbb.CreateVectorOfStrings(e.locs),
                                        spirv_f16.empty() ? 0 : fbb.CreateVector(spirv_f16)));
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

StatusOr<std::vector<uint8_t>> EmitModule(ir::Module& module, const EmitOptions& options, EmitReport* report) {
  EmitReport local;
  ModuleEmitter emitter(options, report ? report : &local);
  return emitter.Emit(module);
}

}  // namespace kiln::backend
