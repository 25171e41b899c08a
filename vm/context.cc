#include "vm/context.h"

#include <algorithm>
#include <cstring>

namespace kiln::vm {

namespace {

uint32_t NextPow2(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

std::string SigTypeString(const format::TensorSig* sig) {
  int64_t dims[kMaxRank];
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  for (size_t i = 0; i < rank && i < kMaxRank; ++i) {
    dims[i] = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i));
  }
  return TensorTypeString(static_cast<DType>(sig->dtype()), dims, std::min(rank, kMaxRank));
}

bool ViewMatches(const BufferView* view, const format::TensorSig* sig) {
  if (static_cast<uint8_t>(view->dtype()) != static_cast<uint8_t>(sig->dtype())) return false;
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  if (view->rank() != rank) return false;
  for (size_t i = 0; i < rank; ++i) {
    if (view->dims()[i] != sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i))) {
      return false;
    }
  }
  return true;
}

std::string SigName(const format::TensorSig* sig) {
  return sig->name() ? sig->name()->str() : std::string();
}

}  // namespace

StatusOr<Ref<Context>> Context::Create(Ref<hal::Device> device) {
  Ref<Context> ctx = Ref<Context>::Adopt(new Context(std::move(device)));
  KILN_RETURN_IF_ERROR(ctx->hal_.Initialize());
  return ctx;
}

Status Context::RegisterModule(Ref<Module> module) {
  if (!module) return InvalidArgumentError("null module");
  auto state = std::make_unique<ModuleState>();
  const format::Module* def = module->def();
  std::string ctx = "module '" + module->name() + "'";

  // 1. Imports.
  for (uint32_t i = 0; i < module->import_count(); ++i) {
    const std::string& name = module->import_names()[i];
    std::string sig = def->imports()->Get(i)->signature()->str();
    const HalImportInfo* native = FindHalImport(name);
    if (!native) {
      for (const auto& earlier : modules_) {
        int f = earlier->module->FindFunction(name);
        if (f >= 0 && earlier->module->function(f).exported) {
          return UnimplementedError(
              "%s: import %u '%s' names a function of module '%s'; imports between bytecode "
              "modules are not supported yet",
              ctx.c_str(), i, name.c_str(), earlier->module->name().c_str());
        }
      }
      return NotFoundError("%s: unknown import %u '%s' (not a function of the native hal module)",
                           ctx.c_str(), i, name.c_str());
    }
    if (sig != native->signature) {
      return InvalidArgumentError("%s: import %u '%s': signature '%s' does not match the native '%s'",
                                  ctx.c_str(), i, name.c_str(), sig.c_str(), native->signature);
    }
    ResolvedImport r;
    r.kind = ResolvedImport::Kind::kNative;
    r.native = native->id;
    state->imports.push_back(r);
  }

  // 2. Executables.
  if (auto* exes = def->executables()) {
    if (exes->size() && !hal_.device()) {
      return FailedPreconditionError("%s: has executables but the context has no device",
                                     ctx.c_str());
    }
    for (flatbuffers::uoffset_t i = 0; i < exes->size(); ++i) {
      const format::Executable* exe = exes->Get(i);
      std::vector<hal::EntryPointInfo> entries;
      for (flatbuffers::uoffset_t e = 0; e < exe->entry_points()->size(); ++e) {
        const format::EntryPoint* ep = exe->entry_points()->Get(e);
        hal::EntryPointInfo info;
        info.name = ep->name()->str();
        uint32_t nb = ep->bindings() ? ep->bindings()->size() : 0;
        for (uint32_t b = 0; b < nb; ++b) {
          const format::Binding* binding = ep->bindings()->Get(b);
          if (binding->set() != 0 || binding->binding() != b) {
            return UnimplementedError(
                "%s: executable %u entry point '%s': binding %u is (set %u, binding %u); only "
                "set 0 with bindings 0..n-1 is supported",
                ctx.c_str(), i, info.name.c_str(), b, binding->set(), binding->binding());
          }
        }
        info.binding_count = nb;
        info.push_constant_bytes = ep->push_constant_bytes();
        if (ep->workgroup_size()) {
          for (flatbuffers::uoffset_t d = 0; d < ep->workgroup_size()->size() && d < 3; ++d) {
            info.workgroup_size[d] = ep->workgroup_size()->Get(d);
          }
        }
        entries.push_back(std::move(info));
      }
      auto created = hal_.device()->CreateExecutable(exe->spirv()->data(), exe->spirv()->size(),
                                                     entries);
      if (!created.ok()) {
        Status s = created.take_status();
        return s.Annotate(ctx + ": executable " + std::to_string(i));
      }
      state->executables.push_back(std::move(created).value());
    }
  }

  // 3. Rodata spans and globals.
  for (uint32_t i = 0; i < module->rodata_count(); ++i) {
    ByteSpan span = module->rodata(i);
    state->rodata.push_back(
        RefValue::Adopt(RefType::kRodata, MakeRef<RodataSpan>(Ref<RefObject>::Retain(module.get()), span.data, span.size)));
  }
  state->globals.resize(module->global_count());
  state->module = module;
  modules_.push_back(std::move(state));

  // 4. Initializer.
  int init = module->initializer();
  if (init >= 0) {
    uint32_t m = static_cast<uint32_t>(modules_.size() - 1);
    AcquireFrame(0, module->function(init));
    RegList ret;
    Status s = Run(m, static_cast<uint32_t>(init), 0, &ret);
    ClearFrame(0);
    if (!s.ok()) {
      modules_.pop_back();
      return s.Annotate(ctx + ": initializer");
    }
  }
  return OkStatus();
}

StatusOr<FunctionRef> Context::LookupFunction(std::string_view name) const {
  std::string names;
  for (uint32_t m = 0; m < modules_.size(); ++m) {
    const Module& mod = *modules_[m]->module;
    for (uint32_t f = 0; f < mod.function_count(); ++f) {
      if (!mod.function(f).exported) continue;
      if (mod.function(f).name == name) return FunctionRef{m, f};
      names += (names.empty() ? "" : ", ") + mod.function(f).name;
    }
  }
  return NotFoundError("no exported function '%.*s' (exported: %s)", static_cast<int>(name.size()),
                       name.data(), names.empty() ? "none" : names.c_str());
}

const FunctionInfo& Context::function_info(FunctionRef fn) const {
  return modules_[fn.module]->module->function(fn.ordinal);
}

const std::vector<int32_t>& Context::i32_registers_for_testing() const {
  static const std::vector<int32_t> kEmpty;
  return frames_.empty() ? kEmpty : frames_[0]->i32;
}

Frame* Context::AcquireFrame(uint32_t depth, const FunctionInfo& info) {
  while (frames_.size() <= depth) {
    CountHostAllocation(2);  // the Frame and the frames_ slot
    frames_.push_back(std::make_unique<Frame>());
  }
  Frame* frame = frames_[depth].get();
  uint32_t ni = NextPow2(std::max<uint32_t>(info.i32_register_count, 1));
  uint32_t nr = NextPow2(std::max<uint32_t>(info.ref_register_count, 1));
  if (frame->i32.size() < ni) {
    CountHostAllocation();
    frame->i32.resize(ni);
  }
  if (frame->refs.size() < nr) {
    CountHostAllocation();
    frame->refs.resize(nr);
  }
  frame->i32_mask = static_cast<uint32_t>(frame->i32.size() - 1);
  frame->ref_mask = static_cast<uint32_t>(frame->refs.size() - 1);
  std::fill(frame->i32.begin(), frame->i32.begin() + ni, 0);
  return frame;
}

void Context::ClearFrame(uint32_t depth) {
  if (depth >= frames_.size()) return;
  for (RefValue& r : frames_[depth]->refs) r.reset();
}

Status Context::Invoke(FunctionRef fn, BufferView* const* args, size_t arg_count,
                       Ref<BufferView>* results, size_t result_count) {
  if (fn.module >= modules_.size() || fn.ordinal >= modules_[fn.module]->module->function_count()) {
    return InvalidArgumentError("invalid function reference");
  }
  const FunctionInfo& info = function_info(fn);
  const format::Function* def = info.def;
  if (arg_count != info.arg_count) {
    return InvalidArgumentError("function '%s' expects %u arguments, got %zu", info.name.c_str(),
                                info.arg_count, arg_count);
  }
  if (result_count != info.result_count) {
    return InvalidArgumentError("function '%s' returns %u results, %zu result slots given",
                                info.name.c_str(), info.result_count, result_count);
  }
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (!args[i]) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got null", i,
                                  SigName(sig).c_str(), SigTypeString(sig).c_str());
    }
    if (!ViewMatches(args[i], sig)) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got %s", i, SigName(sig).c_str(),
                                  SigTypeString(sig).c_str(), args[i]->TypeString().c_str());
    }
  }
  // An input must not alias caller-provided output storage.
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (sig->ownership() != format::Ownership::output_storage) continue;
    hal::Buffer* out_alloc = args[i]->buffer()->allocation();
    uint64_t out_begin = args[i]->buffer()->allocation_offset() + args[i]->byte_offset();
    uint64_t out_end = out_begin + args[i]->byte_length();
    for (size_t j = 0; j < arg_count; ++j) {
      if (j == i) continue;
      if (args[j]->buffer()->allocation() != out_alloc) continue;
      uint64_t b = args[j]->buffer()->allocation_offset() + args[j]->byte_offset();
      uint64_t e = b + args[j]->byte_length();
      if (b < out_end && out_begin < e) {
        const format::TensorSig* in = def->args()->Get(static_cast<flatbuffers::uoffset_t>(j));
        return FailedPreconditionError(
            "argument %zu '%s' aliases argument %zu '%s', the output storage of result %d", j,
            SigName(in).c_str(), i, SigName(sig).c_str(), sig->tied_result());
      }
    }
  }

  uint64_t allocations_before = HostAllocationCount();
  Frame* frame = AcquireFrame(0, info);
  for (size_t i = 0; i < arg_count; ++i) {
    frame->R(static_cast<uint16_t>(i)) = RefValue(RefType::kBufferView, args[i]);
  }
  RegList ret;
  Status status = Run(fn.module, fn.ordinal, 0, &ret);
  if (status.ok()) {
    for (size_t i = 0; i < result_count; ++i) {
      RefValue& v = frame->R(ret[i].index);
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (v.type() != RefType::kBufferView) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.c_str(), i, SigName(sig).c_str(),
                               SigTypeString(sig).c_str(), RefTypeName(v.type()));
        break;
      }
      if (!ViewMatches(v.as<BufferView>(), sig)) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.c_str(), i, SigName(sig).c_str(),
                               SigTypeString(sig).c_str(),
                               v.as<BufferView>()->TypeString().c_str());
        break;
      }
      results[i] = Ref<BufferView>::Retain(v.as<BufferView>());
    }
    if (!status.ok()) {
      for (size_t i = 0; i < result_count; ++i) results[i].reset();
    }
  }
  ClearFrame(0);
  if (hal_.device()) {
    hal_.device()->stats().host_allocations_invoke += HostAllocationCount() - allocations_before;
  }
  return status;
}

}  // namespace kiln::vm
