// Linking: a module joins a context (Context::RegisterModule), its imports
// resolve against the native hal module and the exports of modules
// registered before it (Context::ResolveImport), and apps find exported
// functions by name (Context::LookupFunction). See context.h.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "vm/context.h"
#include "vm/tensor_sig.h"
#include "vm/topology_check.h"

namespace kiln::vm {

namespace {

bool SigMatchesType(const format::TensorSig* sig, const TensorType& type) {
  if (static_cast<uint8_t>(sig->dtype()) != static_cast<uint8_t>(type.dtype)) return false;
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  if (rank != type.dims.size()) return false;
  for (size_t i = 0; i < rank; ++i) {
    if (sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i)) != type.dims[i]) return false;
  }
  return true;
}

// "module 'name'" for messages, built without a host allocation (a name
// past 200 bytes is cut).
struct ModuleContext {
  char text[216];
  explicit ModuleContext(std::string_view name) {
    std::snprintf(text, sizeof(text), "module '%.*s'", static_cast<int>(name.size() > 200 ? 200 : name.size()),
                  name.data());
  }
  const char* c_str() const { return text; }
};

// "main(x: tensor<4xf32>, s: tensor<4xf32>) -> (y: tensor<4xf32>)".
std::string ExportString(const FunctionInfo& info) {
  std::string s(info.name);
  s += "(";
  for (uint32_t i = 0; i < info.arg_count; ++i) {
    const format::TensorSig* sig = info.def->args()->Get(i);
    s += (i ? ", " : "") + SigName(sig) + ": " + SigTypeString(sig);
  }
  s += ") -> (";
  for (uint32_t i = 0; i < info.result_count; ++i) {
    const format::TensorSig* sig = info.def->results()->Get(i);
    s += (i ? ", " : "") + SigName(sig) + ": " + SigTypeString(sig);
  }
  return s + ")";
}

// "(tensor<4xf32>) -> (tensor<4xf32>)", or "2 arguments and 1 result" when
// the signature is untyped.
std::string ImportString(const ImportSignature& sig) {
  if (!sig.typed) {
    return std::to_string(sig.fixed_args.size()) + " argument(s) and " +
           std::to_string(sig.results.size()) + " result(s) (signature '" + sig.ToString() + "')";
  }
  std::string s = "(";
  for (size_t i = 0; i < sig.arg_types.size(); ++i) {
    s += (i ? ", " : "") + sig.arg_types[i].TensorString();
  }
  s += ") -> (";
  for (size_t i = 0; i < sig.result_types.size(); ++i) {
    s += (i ? ", " : "") + sig.result_types[i].TensorString();
  }
  return s + ")";
}

bool IsContextImport(HalImport id) {
  return id == HalImport::kBufferViewTakeOrAllocate || id == HalImport::kBufferViewOutputStorage ||
         id == HalImport::kAllocatorAllocateCached || id == HalImport::kBufferViewTakeOrClone;
}

}  // namespace

Status Context::ResolveImport(const Module& module, uint32_t i, ResolvedImport* out) const {
  std::string_view name = module.import_names()[i];  // NUL-terminated (module bytes)
  const ImportSignature& parsed = module.import_signatures()[i];
  std::string_view sig = module.def()->imports()->Get(i)->signature()->string_view();
  ModuleContext ctx(module.name());
  if (const HalImportInfo* native = FindHalImport(name)) {
    if (sig != native->signature) {
      return InvalidArgumentError("%s: import %u '%s': signature '%s' does not match the native '%s'",
                                  ctx.c_str(), i, name.data(), sig.data(), native->signature);
    }
    out->kind = IsContextImport(native->id) ? ResolvedImport::Kind::kContext
                                            : ResolvedImport::Kind::kNative;
    out->native = native->id;
    return OkStatus();
  }
  // "module.function": try every split point (module names may hold dots).
  for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1)) {
    std::string_view mod_name(name.data(), dot);
    std::string_view fn_name(name.data() + dot + 1, name.size() - dot - 1);
    for (uint32_t m = 0; m < modules_.size(); ++m) {
      const Module& other = *modules_[m]->module;
      if (other.name() != mod_name) continue;
      int f = other.FindFunction(fn_name);
      if (f < 0 || !other.function(static_cast<uint32_t>(f)).exported) {
        std::string exports;
        for (uint32_t k = 0; k < other.function_count(); ++k) {
          if (!other.function(k).exported) continue;
          exports += exports.empty() ? "" : ", ";
          exports += other.function(k).name;
        }
        return NotFoundError("%s: import %u '%s': module '%s' exports no function '%.*s' "
                             "(exports: %s)",
                             ctx.c_str(), i, name.data(), other.name().data(),
                             static_cast<int>(fn_name.size()), fn_name.data(),
                             exports.empty() ? "none" : exports.c_str());
      }
      const FunctionInfo& info = other.function(static_cast<uint32_t>(f));
      bool refs_only = parsed.repeated.empty() &&
                       parsed.fixed_args.find('i') == std::string::npos &&
                       parsed.results.find('i') == std::string::npos;
      bool counts = parsed.fixed_args.size() == info.arg_count &&
                    parsed.results.size() == info.result_count;
      bool types = true;
      if (refs_only && counts && parsed.typed) {
        for (uint32_t a = 0; a < info.arg_count; ++a) {
          types = types && SigMatchesType(info.def->args()->Get(a), parsed.arg_types[a]);
        }
        for (uint32_t r = 0; r < info.result_count; ++r) {
          types = types && SigMatchesType(info.def->results()->Get(r), parsed.result_types[r]);
        }
      }
      if (!refs_only || !counts || !types) {
        return FailedPreconditionError(
            "%s: import %u '%s' expects %s, module '%s' exports %s%s", ctx.c_str(), i,
            name.data(), KILN_STATUS_TEXT(ImportString(parsed).c_str()), other.name().data(),
            KILN_STATUS_TEXT(ExportString(info).c_str()),
            refs_only ? "" : " (imports of bytecode functions take and return only tensors: "
                             "ref registers, no repeated group)");
      }
      out->kind = ResolvedImport::Kind::kBytecode;
      out->bytecode = FunctionRef{m, static_cast<uint32_t>(f)};
      return OkStatus();
    }
  }
  if (name.rfind("hal.", 0) == 0 || name.find('.') == std::string::npos) {
    return NotFoundError("%s: unknown import %u '%s' (not a function of the native hal module)",
                         ctx.c_str(), i, name.data());
  }
  std::string registered;
  for (const auto& state : modules_) {
    registered += registered.empty() ? "'" : ", '";
    registered += state->module->name();
    registered += "'";
  }
  return NotFoundError(
      "%s: unknown import %u '%s': neither a function of the native hal module nor an export "
      "of a module registered before it (registered: %s)",
      ctx.c_str(), i, name.data(), registered.empty() ? "none" : registered.c_str());
}

Status Context::RegisterModule(Ref<Module> module) {
  if (!module) return InvalidArgumentError("null module");
  auto state = std::make_unique<ModuleState>();
  const format::Module* def = module->def();
  ModuleContext ctx(module->name());
  for (const auto& earlier : modules_) {
    if (earlier->module->name() == module->name()) {
      return InvalidArgumentError("%s: a module of that name is already registered",
                                  ctx.c_str());
    }
  }

  // 0. The device topology the module was compiled for must hold here
  // (e.g. a module that elided host<->device transfers for unified memory).
  if (hal_.device()) KILN_RETURN_IF_ERROR(CheckModuleTopology(def, hal_.device()->info()));

  // 1. Imports.
  for (uint32_t i = 0; i < module->import_count(); ++i) {
    ResolvedImport r;
    KILN_RETURN_IF_ERROR(ResolveImport(*module, i, &r));
    state->imports.push_back(r);
  }
  // 2. Executables.
  if (auto* exes = def->executables()) {
    bool float16 = false;
    if (hal_.device())
      for (const HostString& f : hal_.device()->info().features)
        float16 |= std::strcmp(f.c_str(), "shaderFloat16") == 0;
    if (exes->size() && !hal_.device()) {
      return FailedPreconditionError("%s: has executables but the context has no device",
                                     ctx.c_str());
    }
    for (flatbuffers::uoffset_t i = 0; i < exes->size(); ++i) {
      const format::Executable* exe = exes->Get(i);
      HostVector<hal::EntryPointInfo> entries;
      for (flatbuffers::uoffset_t e = 0; e < exe->entry_points()->size(); ++e) {
        const format::EntryPoint* ep = exe->entry_points()->Get(e);
        hal::EntryPointInfo info;
        info.name.assign(ep->name()->c_str(), ep->name()->size());
        uint32_t nb = ep->bindings() ? ep->bindings()->size() : 0;
        for (uint32_t b = 0; b < nb; ++b) {
          const format::Binding* binding = ep->bindings()->Get(b);
          if (binding->set() != 0 || binding->binding() != b) {
            return UnimplementedError(
                "%s: executable %u entry point '%s': binding %u is (set %u, binding %u); only "
                "set 0 with bindings 0..n-1 is supported",
                ctx.c_str(), i, info.name.data(), b, binding->set(), binding->binding());
          }
        }
        info.binding_count = nb;
        info.binding_readonly.resize(nb);
        for (uint32_t b = 0; b < nb; ++b) info.binding_readonly[b] = ep->bindings()->Get(b)->readonly();
        if (const auto* kinds = ep->binding_kinds()) {
          if (kinds->size() > nb) {
            return InvalidArgumentError(
                "%s: executable %u entry point '%s': %u binding kinds for %u bindings", ctx.c_str(),
                i, info.name.data(), kinds->size(), nb);
          }
          info.binding_kinds.resize(kinds->size());
          for (uint32_t b = 0; b < kinds->size(); ++b)
            info.binding_kinds[b] = static_cast<hal::BindingKind>(kinds->Get(b));
        }
        info.push_constant_bytes = ep->push_constant_bytes();
#if !defined(KILN_CPU_DRIVER_FMA) || KILN_CPU_DRIVER_FMA
        info.exact_fma = ep->exact_fma();  // only a CPU driver's splice reads it
#endif
        if (ep->workgroup_size()) {
          for (flatbuffers::uoffset_t d = 0; d < ep->workgroup_size()->size() && d < 3; ++d) {
            info.workgroup_size[d] = ep->workgroup_size()->Get(d);
          }
        }
        if (ep->specialization())
          info.specialization.assign(ep->specialization()->begin(), ep->specialization()->end());
        entries.push_back(std::move(info));
      }
      // The f16-arithmetic variant where the device computes in float16_t
      // (compiler/codegen/f16_arithmetic.h); both declare the same entry points.
      const flatbuffers::Vector<uint32_t>* spirv = exe->spirv();
      if (exe->spirv_f16() && exe->spirv_f16()->size() && float16) spirv = exe->spirv_f16();
      auto created = hal_.device()->CreateExecutable(spirv->data(), spirv->size(), entries);
      if (!created.ok()) {
        Status s = created.take_status();
        return s.Annotatef("%s: executable %u", ctx.c_str(), i);
      }
      state->executables.push_back(std::move(created).value());
    }
  }

  // 3. Rodata spans and globals.
  for (uint32_t i = 0; i < module->rodata_count(); ++i) {
    ByteSpan span = module->rodata(i);
    Ref<RodataSpan> rodata = MakeRef<RodataSpan>(Ref<RefObject>::Retain(module.get()), span.data, span.size);
    if (!rodata) return ResourceExhaustedError("%s: out of host memory", ctx.c_str());
    state->rodata.push_back(RefValue::Adopt(RefType::kRodata, std::move(rodata)));
  }
  state->globals.resize(module->global_count());
  state->module = module;
  modules_.push_back(std::move(state));

  // 4. Initializer.
  int init = module->initializer();
  if (init >= 0) {
    uint32_t m = static_cast<uint32_t>(modules_.size() - 1);
    AcquireFrame(0, module->function(init));
    steps_left_ = limits_.step_budget;
    RegList ret;
    Status s = Run(m, static_cast<uint32_t>(init), 0, &ret);
    ClearFrame(0);
    if (!s.ok()) {
      modules_.pop_back();
      return s.Annotatef("%s: initializer", ctx.c_str());
    }
  }
  return OkStatus();
}

StatusOr<FunctionRef> Context::LookupFunction(std::string_view name) const {
  // "module.function".
  for (size_t dot = name.find('.'); dot != std::string_view::npos; dot = name.find('.', dot + 1)) {
    std::string_view mod_name = name.substr(0, dot);
    std::string_view fn_name = name.substr(dot + 1);
    for (uint32_t m = 0; m < modules_.size(); ++m) {
      const Module& mod = *modules_[m]->module;
      if (mod.name() != mod_name) continue;
      int f = mod.FindFunction(fn_name);
      if (f >= 0 && mod.function(static_cast<uint32_t>(f)).exported) {
        return FunctionRef{m, static_cast<uint32_t>(f)};
      }
    }
  }
  std::string names;
  for (uint32_t m = 0; m < modules_.size(); ++m) {
    const Module& mod = *modules_[m]->module;
    for (uint32_t f = 0; f < mod.function_count(); ++f) {
      if (!mod.function(f).exported) continue;
      if (mod.function(f).name == name) return FunctionRef{m, f};
      names += names.empty() ? "" : ", ";
      names += mod.function(f).name;
    }
  }
  return NotFoundError("no exported function '%.*s' (exported: %s)", static_cast<int>(name.size()),
                       name.data(), names.empty() ? "none" : names.c_str());
}

}  // namespace kiln::vm
