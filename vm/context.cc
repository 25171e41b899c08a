#include "vm/context.h"

#include <cstdio>

#include "vm/topology_check.h"

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

uint64_t SigByteSize(const format::TensorSig* sig) {
  uint64_t n = DTypeSize(static_cast<DType>(sig->dtype()));
  if (sig->shape()) {
    for (flatbuffers::uoffset_t i = 0; i < sig->shape()->size(); ++i) {
      n *= static_cast<uint64_t>(sig->shape()->Get(i));
    }
  }
  return n;
}

void SigDims(const format::TensorSig* sig, int64_t* dims, size_t* rank) {
  *rank = sig->shape() ? std::min<size_t>(sig->shape()->size(), kMaxRank) : 0;
  for (size_t i = 0; i < *rank; ++i) {
    dims[i] = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(i));
  }
}

bool IsContextImport(HalImport id) {
  return id == HalImport::kBufferViewTakeOrAllocate || id == HalImport::kBufferViewOutputStorage ||
         id == HalImport::kAllocatorAllocateCached || id == HalImport::kBufferViewTakeOrClone;
}

}  // namespace

StatusOr<Ref<Context>> Context::Create(Ref<hal::Device> device) {
  Ref<Context> ctx = Ref<Context>::Adopt(new Context(std::move(device)));
  if (!ctx) return ResourceExhaustedError("out of host memory for a context");
  KILN_RETURN_IF_ERROR(ctx->hal_.Initialize());
  return ctx;
}

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
            name.data(), ImportString(parsed).c_str(), other.name().data(),
            ExportString(info).c_str(),
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
        info.push_constant_bytes = ep->push_constant_bytes();
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

const FunctionInfo& Context::function_info(FunctionRef fn) const {
  return modules_[fn.module]->module->function(fn.ordinal);
}

const HostVector<int32_t>& Context::i32_registers_for_testing() const {
  static const HostVector<int32_t> kEmpty;
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
  frame->serial = next_serial_++;
  frame->depth = depth;
  return frame;
}

void Context::ClearFrame(uint32_t depth) {
  if (depth >= frames_.size()) return;
  for (RefValue& r : frames_[depth]->refs) r.reset();
}

Status Context::Invoke(FunctionRef fn, BufferView* const* args, size_t arg_count,
                       Ref<BufferView>* results, size_t result_count) {
  if (!args && arg_count) return InvalidArgumentError("null argument array");
  if (scratch_args_.size() < arg_count) {
    CountHostAllocation();
    scratch_args_.resize(arg_count);
  }
  for (size_t i = 0; i < arg_count; ++i) scratch_args_[i] = InvokeArg{args[i], false};
  return InvokeEx(fn, scratch_args_.data(), arg_count, results, result_count, nullptr);
}

bool Context::IsCached(const hal::Buffer* buffer) const {
  for (const CacheEntry& e : cache_) {
    if (e.buffer.get() == buffer) return true;
  }
  return false;
}

bool Context::IsExclusive(const BufferView* view) const {
  if (!view || view->refcount() != 1) return false;
  hal::Buffer* buffer = view->buffer();
  if (buffer->allocation() != buffer) return false;
  // In-flight work of this context holding it is queue-ordered before
  // anything the callee records.
  // Recordings' command buffers likewise (vm/replay.h).
  return buffer->refcount() == 1 + (IsCached(buffer) ? 1 : 0) + hal_.InFlightHolders(buffer) +
                                   RecordingHolders(buffer);
}

void Context::ClaimConsumed(Frame* frame, uint16_t index) {
  RefValue& v = frame->R(index);
  if (v.type() != RefType::kBufferView) return;
  BufferView* view = v.as<BufferView>();
  if (IsExclusive(view)) view->set_owner_serial(frame->serial);
}

StatusOr<Ref<hal::Buffer>> Context::AllocateCached(uint32_t m, uint32_t function, int32_t slot,
                                                   uint64_t size, hal::MemoryKind kind) {
  uint64_t alloc = size ? size : 4;
  // Up to kBuffersPerSlot buffers per slot (double buffering): a streaming
  // result the app hands back as the next call's consumed argument still
  // holds one buffer while this call writes the other, so state that round
  // trips allocates nothing in steady state even when it cannot be updated
  // in place (it ping-pongs between the two).
  constexpr int kBuffersPerSlot = 2;
  CacheEntry* replace = nullptr;
  int buffers = 0;
  for (CacheEntry& e : cache_) {
    if (e.module != m || e.function != function || e.slot != slot) continue;
    ++buffers;
    // Held by nobody but the slot and in-flight work of this context (which
    // every later submission is queue-ordered after): reuse it.
    bool free = e.buffer->refcount() ==
                1 + hal_.InFlightHolders(e.buffer.get()) + RecordingHolders(e.buffer.get());
    if (free && e.buffer->size() >= size && e.buffer->memory_kind() == kind) return e.buffer;
    if (!replace || free) replace = &e;  // prefer replacing one nobody holds (too small)
  }
  CountHostAllocation();
  KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer, hal_.AllocateCharged(alloc, kind));
  if (replace && buffers >= kBuffersPerSlot) {
    replace->buffer = buffer;  // the old one is freed when its last holder lets go
    return buffer;
  }
  if (cache_.size() == cache_.capacity()) CountHostAllocation();
  cache_.push_back(CacheEntry{m, function, slot, buffer});
  return buffer;
}

Status Context::CallContextImport(HalImport id, const ImportCall& call, uint32_t m,
                                  uint32_t function) {
  hal::Device* device = hal_.device();
  if (!device) return FailedPreconditionError("the context has no device");
  Frame* frame = call.frame;
  auto view_arg = [&](size_t i, BufferView** out) -> Status {
    const RefValue& v = call.ArgRef(i);
    if (v.type() != RefType::kBufferView) {
      return InvalidArgumentError("expected a buffer view, got %s", RefTypeName(v.type()));
    }
    *out = v.as<BufferView>();
    return OkStatus();
  };
  // Whether `view`'s storage can be taken by this frame for `size` bytes.
  auto takeable = [&](const BufferView* view, uint64_t size, int32_t kind) {
    return view->owner_serial() == frame->serial && Takeable(view, size, kind);
  };
  // The run being recorded notes what the ownership imports returned.
  const bool note = recording_ && frame->depth == 0;
  switch (id) {
    case HalImport::kBufferViewTakeOrAllocate: {
      BufferView* view = nullptr;
      KILN_RETURN_IF_ERROR(view_arg(0, &view));
      int32_t size = call.ArgI32(1), kind = call.ArgI32(2);
      if (size < 0) return InvalidArgumentError("negative size %d", size);
      if (kind != 0 && kind != 1) return InvalidArgumentError("invalid memory kind %d", kind);
      if (takeable(view, static_cast<uint64_t>(size), kind)) {
        view->set_owner_serial(0);
        int32_t offset = static_cast<int32_t>(view->byte_offset());
        if (note) NoteGuard(id, call, view->buffer(), false);
        RefValue taken(RefType::kBuffer, view->buffer());
        call.SetRef(0, std::move(taken));
        call.SetI32(1, offset);
        return OkStatus();
      }
      CountHostAllocation();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            hal_.AllocateCharged(size ? static_cast<uint64_t>(size) : 4,
                                                 static_cast<hal::MemoryKind>(kind)));
      if (note) NoteGuard(id, call, buffer.get(), true);
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      call.SetI32(1, 0);
      return OkStatus();
    }
    case HalImport::kBufferViewTakeOrClone: {
      const RefValue& cb_ref = call.ArgRef(0);
      if (cb_ref.type() != RefType::kCommandBuffer) {
        return InvalidArgumentError("expected a command buffer, got %s",
                                    RefTypeName(cb_ref.type()));
      }
      CommandBufferState* cb = cb_ref.as<CommandBufferState>();
      if (cb->submitted) return FailedPreconditionError("command buffer was already submitted");
      BufferView* view = nullptr;
      KILN_RETURN_IF_ERROR(view_arg(1, &view));
      uint64_t length = view->byte_length();
      if (length > 0x7FFFFFFF) return OutOfRangeError("view of %llu bytes exceeds i32",
                                                      static_cast<unsigned long long>(length));
      if (takeable(view, length, 0)) {
        view->set_owner_serial(0);
        int32_t offset = static_cast<int32_t>(view->byte_offset());
        if (note) NoteGuard(id, call, view->buffer(), false);
        RefValue taken(RefType::kBuffer, view->buffer());
        call.SetRef(0, std::move(taken));
        call.SetI32(1, offset);
        return OkStatus();
      }
      CountHostAllocation();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            hal_.AllocateCharged(length ? length : 4, view->buffer()->memory_kind()));
      if (note) NoteGuard(id, call, buffer.get(), true);
      if (length) {
        KILN_RETURN_IF_ERROR(cb->command_buffer->CopyBuffer(view->buffer(), view->byte_offset(),
                                                            buffer.get(), 0, length));
      }
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      call.SetI32(1, 0);
      return OkStatus();
    }
    case HalImport::kBufferViewOutputStorage: {
      int32_t k = call.ArgI32(0);
      if (k < 0) return InvalidArgumentError("negative result index %d", k);
      RefValue out;
      if (frame->depth == 0 && static_cast<size_t>(k) < output_storage_.size() &&
          output_storage_[k] &&
          output_storage_[k]->root_offset() % hal_.binding_alignment() == 0) {
        out = RefValue(RefType::kBufferView, output_storage_[k].get());
      }
      call.SetRef(0, std::move(out));
      return OkStatus();
    }
    case HalImport::kAllocatorAllocateCached: {
      int32_t slot = call.ArgI32(0), size = call.ArgI32(1), kind = call.ArgI32(2);
      if (size < 0) return InvalidArgumentError("negative allocation size %d", size);
      if (kind != 0 && kind != 1) return InvalidArgumentError("invalid memory kind %d", kind);
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            AllocateCached(m, function, slot, static_cast<uint64_t>(size),
                                           static_cast<hal::MemoryKind>(kind)));
      if (note) NoteGuard(id, call, buffer.get(), false);
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      return OkStatus();
    }
    default:
      return InternalError("hal import %d is not a context import", static_cast<int>(id));
  }
}

Status Context::CallBytecodeImport(FunctionRef callee, const ImportCall& call, uint32_t depth) {
  if (depth + 1 >= kMaxCallDepth) {
    return ResourceExhaustedError("call depth exceeds %u", kMaxCallDepth);
  }
  const FunctionInfo& info = function_info(callee);
  const format::Function* def = info.def;
  std::string_view module_name = modules_[callee.module]->module->name();  // NUL-terminated
  Frame* frame = call.frame;
  Frame* callee_frame = AcquireFrame(depth + 1, info);
  // Borrowed arguments first, then moves, so a register passed both ways is
  // seen as shared.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < call.args.size(); ++i) {
      bool consume = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i))->ownership() ==
                     format::Ownership::consume;
      if (consume != (pass == 1)) continue;
      RefValue& src = frame->R(call.args[i].index);
      if (consume) {
        callee_frame->R(static_cast<uint16_t>(i)) = std::move(src);
      } else {
        callee_frame->R(static_cast<uint16_t>(i)) = src;
      }
    }
  }
  for (size_t i = 0; i < call.args.size(); ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    const RefValue& v = callee_frame->R(static_cast<uint16_t>(i));
    bool ok = v.type() == RefType::kBufferView && ViewMatches(v.as<BufferView>(), sig);
    if (!ok) {
      Status s = InvalidArgumentError(
          "argument %zu '%s' of '%s.%s': expected %s, got %s", i, SigName(sig).c_str(),
          module_name.data(), info.name.data(), SigTypeString(sig).c_str(),
          v.type() == RefType::kBufferView ? v.as<BufferView>()->TypeString().c_str()
                                           : RefTypeName(v.type()));
      ClearFrame(depth + 1);
      return s;
    }
    if (sig->ownership() == format::Ownership::consume) {
      ClaimConsumed(callee_frame, static_cast<uint16_t>(i));
    }
  }
  RegList ret;
  Status s = Run(callee.module, callee.ordinal, depth + 1, &ret);
  if (s.ok()) {
    for (size_t i = 0; i < call.results.size(); ++i) {
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(i));
      const RefValue& v = callee_frame->R(ret[i].index);
      if (v.type() != RefType::kBufferView || !ViewMatches(v.as<BufferView>(), sig)) {
        s = InternalError("'%s.%s' result %zu '%s': expected %s, got %s", module_name.data(),
                          info.name.data(), i, SigName(sig).c_str(), SigTypeString(sig).c_str(),
                          v.type() == RefType::kBufferView ? v.as<BufferView>()->TypeString().c_str()
                                                           : RefTypeName(v.type()));
        break;
      }
    }
    if (s.ok()) {
      // Copies (not moves): RET may name one register twice.
      for (size_t i = 0; i < call.results.size(); ++i) {
        RefValue v = callee_frame->R(ret[i].index);
        frame->R(call.results[i].index) = std::move(v);
      }
    }
  }
  ClearFrame(depth + 1);
  return s;
}

Status Context::FinishOutputStorage(size_t k, const format::TensorSig* sig,
                                    Ref<BufferView>* result, Ref<CommandBufferState>* cb) {
  const Ref<BufferView>& storage = output_storage_[k];
  if (result->get() != storage.get() && !(*result)->SameStorageAndType(*storage)) {
    if ((*result)->Overlaps(*storage)) {
      return FailedPreconditionError(
          "result %zu '%s' partially overlaps its output storage; cannot copy it there", k,
          SigName(sig).c_str());
    }
    if (!*cb) {
      KILN_ASSIGN_OR_RETURN(*cb, hal_.AcquireCommandBuffer());
    }
    if (storage->byte_length()) {
      KILN_RETURN_IF_ERROR((*cb)->command_buffer->CopyBuffer(
          (*result)->buffer(), (*result)->byte_offset(), storage->buffer(), storage->byte_offset(),
          storage->byte_length()));
    }
  }
  *result = storage;
  return OkStatus();
}

Status Context::InvokeEx(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                       Ref<BufferView>* results, size_t result_count,
                       BufferView* const* output_storage, InvokeFences* fences) {
  // Consumed references are adopted now, so every path releases them.
  struct ConsumeGuard {
    const InvokeArg* args;
    size_t count;
    bool armed = true;
    ~ConsumeGuard() {
      if (!armed) return;
      for (size_t i = 0; i < count; ++i) {
        if (args[i].consume && args[i].view) args[i].view->Release();
      }
    }
  } guard{args, args ? arg_count : 0};
  struct StorageGuard {
    HostVector<Ref<BufferView>>* storage;
    ~StorageGuard() {
      for (Ref<BufferView>& s : *storage) s.reset();
    }
  } storage_guard{&output_storage_};

  if (fn.module >= modules_.size() || fn.ordinal >= modules_[fn.module]->module->function_count()) {
    return InvalidArgumentError("invalid function reference");
  }
  if (!args && arg_count) return InvalidArgumentError("null argument array");
  if (!results && result_count) return InvalidArgumentError("null result array");
  const FunctionInfo& info = function_info(fn);
  const format::Function* def = info.def;
  if (arg_count != info.arg_count) {
    return InvalidArgumentError("function '%s' expects %u arguments, got %zu", info.name.data(),
                                info.arg_count, arg_count);
  }
  if (result_count != info.result_count) {
    return InvalidArgumentError("function '%s' returns %u results, %zu result slots given",
                                info.name.data(), info.result_count, result_count);
  }
  for (size_t i = 0; i < result_count; ++i) results[i].reset();
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (!args[i].view) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got null", i,
                                  SigName(sig).c_str(), SigTypeString(sig).c_str());
    }
    if (!ViewMatches(args[i].view, sig)) {
      return InvalidArgumentError("argument %zu '%s': expected %s, got %s", i,
                                  SigName(sig).c_str(), SigTypeString(sig).c_str(),
                                  args[i].view->TypeString().c_str());
    }
  }

  // Output storage: the caller's, plus arguments declared output_storage.
  uint64_t allocations_before = HostAllocationCount();
  if (output_storage_.size() < result_count) {
    CountHostAllocation();
    output_storage_.resize(result_count);
  }
  if (scratch_consumed_.size() < arg_count) {
    CountHostAllocation();
    scratch_consumed_.resize(arg_count);
  }
  bool any_storage = false;
  for (size_t k = 0; k < result_count; ++k) {
    if (output_storage && output_storage[k]) {
      output_storage_[k] = Ref<BufferView>::Retain(output_storage[k]);
      any_storage = true;
    }
  }
  for (size_t i = 0; i < arg_count; ++i) {
    scratch_consumed_[i] = 0;
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (sig->ownership() != format::Ownership::output_storage) continue;
    size_t k = static_cast<size_t>(sig->tied_result());
    if (output_storage_[k] && output_storage_[k].get() != args[i].view) {
      return InvalidArgumentError(
          "result %zu has output storage both from argument %zu '%s' and from the caller", k, i,
          SigName(sig).c_str());
    }
    output_storage_[k] = Ref<BufferView>::Retain(args[i].view);
    scratch_consumed_[i] = 1;  // marks "is the storage of its tied result"
    any_storage = true;
  }
  if (any_storage) {
    for (size_t k = 0; k < result_count; ++k) {
      BufferView* st = output_storage_[k].get();
      if (!st) continue;
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(k));
      if (static_cast<uint8_t>(st->dtype()) != static_cast<uint8_t>(sig->dtype())) {
        return InvalidArgumentError(
            "output storage for result %zu '%s': %s has dtype %s, the result is %s", k,
            SigName(sig).c_str(), st->TypeString().c_str(), DTypeName(st->dtype()),
            SigTypeString(sig).c_str());
      }
      uint64_t need = SigByteSize(sig);
      if (st->byte_length() < need) {
        return InvalidArgumentError(
            "output storage for result %zu '%s': %s (%llu bytes) is smaller than %s (%llu bytes)",
            k, SigName(sig).c_str(), st->TypeString().c_str(),
            static_cast<unsigned long long>(st->byte_length()), SigTypeString(sig).c_str(),
            static_cast<unsigned long long>(need));
      }
      for (size_t j = 0; j < arg_count; ++j) {
        if (scratch_consumed_[j] && args[j].view == st) continue;  // the declared storage itself
        if (!args[j].view->Overlaps(*st)) continue;
        const format::TensorSig* in = def->args()->Get(static_cast<flatbuffers::uoffset_t>(j));
        return FailedPreconditionError(
            "argument %zu '%s' overlaps the output storage of result %zu '%s' (bytes [%llu, %llu) "
            "and [%llu, %llu) of one allocation)",
            j, SigName(in).c_str(), k, SigName(sig).c_str(),
            static_cast<unsigned long long>(args[j].view->root_offset()),
            static_cast<unsigned long long>(args[j].view->root_offset() +
                                            args[j].view->byte_length()),
            static_cast<unsigned long long>(st->root_offset()),
            static_cast<unsigned long long>(st->root_offset() + st->byte_length()));
      }
      for (size_t k2 = 0; k2 < k; ++k2) {
        if (!output_storage_[k2] || !output_storage_[k2]->Overlaps(*st)) continue;
        const format::TensorSig* other =
            def->results()->Get(static_cast<flatbuffers::uoffset_t>(k2));
        return FailedPreconditionError(
            "the output storage of result %zu '%s' overlaps the output storage of result %zu '%s'",
            k, SigName(sig).c_str(), k2, SigName(other).c_str());
      }
    }
    // Type each storage as its result (a view of its first bytes if needed).
    for (size_t k = 0; k < result_count; ++k) {
      BufferView* st = output_storage_[k].get();
      if (!st) continue;
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(k));
      int64_t dims[kMaxRank];
      size_t rank;
      SigDims(sig, dims, &rank);
      if (st->SameType(static_cast<DType>(sig->dtype()), dims, rank)) continue;
      KILN_ASSIGN_OR_RETURN(output_storage_[k],
                            BufferView::CreateSubview(*st, 0, static_cast<DType>(sig->dtype()),
                                                      dims, rank));
    }
  }

  if (fences && !fences->signal.semaphore) {
    return InvalidArgumentError("asynchronous invocation without a signal fence");
  }
  steps_left_ = limits_.step_budget;
  // The caller's borrowed arguments: no dispatch may bind them writable
  // (HalModule::borrowed). Cleared on every return path.
  struct BorrowedGuard {
    HostVector<hal::BufferBinding>* ranges;
    ~BorrowedGuard() { ranges->clear(); }
  } borrowed_guard{&hal_.borrowed()};
  if (hal_.borrowed().capacity() < arg_count) {
    CountHostAllocation();
    hal_.borrowed().reserve(arg_count);
  }
  for (size_t i = 0; i < arg_count; ++i) {
    const format::TensorSig* sig = def->args()->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (args[i].consume || sig->ownership() != format::Ownership::borrow || !args[i].view->buffer())
      continue;
    hal_.borrowed().push_back(hal::BufferBinding{args[i].view->buffer()->allocation(),
                                                 args[i].view->root_offset(),
                                                 args[i].view->byte_length()});
  }
  // Free what finished since the last call (never blocks).
  PruneRecordings();
  KILN_RETURN_IF_ERROR(hal_.Retire());

  // A recorded command buffer for this binding set: resubmit it (replay.h).
  if (info.replayable && hal_.device()) {
    bool replayed = false;
    Status s = TryReplay(fn, args, arg_count, results, result_count, any_storage, fences,
                         &replayed);
    if (!s.ok() || replayed) {
      if (hal_.device()) {
        hal_.device()->stats().host_allocations_invoke +=
            HostAllocationCount() - allocations_before;
      }
      return s;  // the guard releases consumed arguments
    }
  }

  Frame* frame = AcquireFrame(0, info);
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].consume) {
      frame->R(static_cast<uint16_t>(i)) =
          RefValue::Adopt(RefType::kBufferView, Ref<BufferView>::Adopt(args[i].view));
    } else {
      frame->R(static_cast<uint16_t>(i)) = RefValue(RefType::kBufferView, args[i].view);
    }
  }
  guard.armed = false;
  for (size_t i = 0; i < arg_count; ++i) {
    if (args[i].consume) ClaimConsumed(frame, static_cast<uint16_t>(i));
  }

  // A final execute may carry the signal fence unless the runtime records
  // work after the program (copies into output storage).
  hal_.BeginInvocation(fences ? fences->wait : hal::SemaphorePoint{},
                       fences ? fences->signal : hal::SemaphorePoint{}, !any_storage);
  if (info.replayable && hal_.device()) BeginRecording(fn, args, arg_count, frame, result_count);
  RegList ret;
  Status status = Run(fn.module, fn.ordinal, 0, &ret);
  hal_.set_capture(nullptr);
  if (status.ok()) {
    Ref<CommandBufferState> copy_cb;
    for (size_t i = 0; i < result_count; ++i) {
      RefValue& v = frame->R(ret[i].index);
      const format::TensorSig* sig = def->results()->Get(static_cast<flatbuffers::uoffset_t>(i));
      if (v.type() != RefType::kBufferView) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.data(), i, SigName(sig).c_str(),
                               SigTypeString(sig).c_str(), RefTypeName(v.type()));
        break;
      }
      if (!ViewMatches(v.as<BufferView>(), sig)) {
        status = InternalError("function '%s' result %zu '%s': expected %s, got %s",
                               info.name.data(), i, SigName(sig).c_str(),
                               SigTypeString(sig).c_str(),
                               v.as<BufferView>()->TypeString().c_str());
        break;
      }
      results[i] = Ref<BufferView>::Retain(v.as<BufferView>());
      if (output_storage_[i]) {
        status = FinishOutputStorage(i, sig, &results[i], &copy_cb);
        if (!status.ok()) break;
      }
    }
    if (status.ok() && copy_cb) status = hal_.Execute(copy_cb.get(), /*final=*/false);
    if (recording_) {
      FinishRecording(status.ok(), args, arg_count, frame, ret, result_count, copy_cb.get() != nullptr);
    }
    if (!status.ok()) {
      for (size_t i = 0; i < result_count; ++i) results[i].reset();
    }
  }
  if (recording_) FinishRecording(false, args, arg_count, frame, ret, result_count, false);
  ClearFrame(0);
  // Signal the fence (asynchronous) or wait for the last timepoint.
  Status end = hal_.EndInvocation();
  if (fences) fences->signal_submitted = end.ok();
  if (status.ok() && !end.ok()) {
    status = end;
    for (size_t i = 0; i < result_count; ++i) results[i].reset();
  }
  if (hal_.device()) {
    hal_.device()->stats().host_allocations_invoke += HostAllocationCount() - allocations_before;
  }
  return status;
}

void Context::DropInvokeScratch() {
  // Recordings become ordinary command buffers again: retirement resets them
  // (releasing their buffers, queue-ordered when still in flight).
  for (auto& r : recordings_) r->cb->persistent = false;
  HostVector<std::unique_ptr<Recording>>().swap(recordings_);
  recording_.reset();
  HostVector<std::unique_ptr<Frame>>().swap(frames_);
  HostVector<Ref<BufferView>>().swap(output_storage_);
  HostVector<CacheEntry>().swap(cache_);  // cached transients: allocated again
  HostVector<InvokeArg>().swap(scratch_args_);
  HostVector<uint8_t>().swap(scratch_consumed_);
  HostVector<uint8_t>().swap(scratch_owned_);
  hal_.DropScratch();
}

}  // namespace kiln::vm
