#include "vm/module.h"

#include "vm/static_commands.h"

#include "schemas/module_integrity.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "base/dtype.h"
#include "vm/value.h"

namespace kiln::vm {

namespace {

// Bound on EntryPoint.specialization (untrusted input): the compiler emits
// one value per shape constant that differs between dispatches sharing a
// shader, a few dozen at most.
constexpr uint32_t kMaxSpecializationConstants = 4096;

// A FlatBuffers string as a view ("" when absent); NUL-terminated.
std::string_view Str(const flatbuffers::String* s) {
  return s ? std::string_view(s->c_str(), s->size()) : std::string_view("");
}

Status CheckTensorSig(const format::TensorSig* sig, const char* what, size_t i) {
  if (!sig) return DataLossError("%s %zu: missing", what, i);
  auto dtype = static_cast<DType>(sig->dtype());
  if (DTypeSize(dtype) == 0) {
    return DataLossError("%s %zu '%s': invalid dtype %d", what, i, Str(sig->name()).data(),
                         static_cast<int>(sig->dtype()));
  }
  size_t rank = sig->shape() ? sig->shape()->size() : 0;
  // The FlatBuffers verifier checks only the 4-byte alignment of a vector's
  // length; 8-byte elements must be 8-byte aligned to be read safely.
  if (rank && reinterpret_cast<uintptr_t>(sig->shape()->data()) % 8 != 0) {
    return DataLossError("%s %zu: misaligned shape vector", what, i);
  }
  if (rank > kMaxRank) {
    return DataLossError("%s %zu '%s': rank %zu exceeds the maximum %zu", what, i,
                         Str(sig->name()).data(), rank, kMaxRank);
  }
  uint64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = sig->shape()->Get(static_cast<flatbuffers::uoffset_t>(d));
    if (dim < 0 || dim > (int64_t{1} << 40)) {
      return DataLossError("%s %zu '%s': invalid dim %lld", what, i, Str(sig->name()).data(),
                           static_cast<long long>(dim));
    }
    if (dim != 0 && count > (uint64_t{1} << 48) / static_cast<uint64_t>(dim)) {
      return DataLossError("%s %zu '%s': shape is too large", what, i, Str(sig->name()).data());
    }
    count *= static_cast<uint64_t>(dim);
  }
  uint8_t own = static_cast<uint8_t>(sig->ownership());
  if (own > static_cast<uint8_t>(format::Ownership::output_storage)) {
    return DataLossError("%s %zu '%s': invalid ownership %u", what, i, Str(sig->name()).data(),
                         own);
  }
  return OkStatus();
}

}  // namespace

void Module::ReleaseStorage() {
  if (map_base_) munmap(map_base_, map_size_);
  if (owned_) HostFree(owned_);
  map_base_ = nullptr;
  owned_ = nullptr;
}

StatusOr<Ref<Module>> Module::LoadFromMemory(const void* data, size_t size) {
  if (!data && size) return InvalidArgumentError("module data is null");
  Ref<Module> module = Ref<Module>::Adopt(new Module());
  if (!module) return ResourceExhaustedError("out of host memory for a module");
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
    size_t alloc = (size + 63) / 64 * 64;
    void* copy = HostAllocate(alloc ? alloc : 64, 64);
    if (!copy) return ResourceExhaustedError("out of memory copying a %zu-byte module", size);
    std::memcpy(copy, data, size);
    module->owned_ = copy;
    data = copy;
  }
  module->bytes_ = ByteSpan(static_cast<const uint8_t*>(data), size);
  return Load(std::move(module));
}

StatusOr<Ref<Module>> Module::LoadFromFile(const char* path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFoundError("cannot open module '%s': %s", path, std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return NotFoundError("cannot stat module '%s': %s", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return InvalidArgumentError("module '%s' is not a regular file", path);
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return DataLossError("module '%s' is empty", path);
  }
  void* base = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd);
  if (base == MAP_FAILED) {
    return ResourceExhaustedError("cannot mmap module '%s': %s", path, std::strerror(e));
  }
  Ref<Module> module = Ref<Module>::Adopt(new Module());
  if (!module) return ResourceExhaustedError("out of host memory for a module");
  module->map_base_ = base;
  module->map_size_ = size;
  module->bytes_ = ByteSpan(static_cast<const uint8_t*>(base), size);
  auto loaded = Load(std::move(module));
  if (!loaded.ok()) {
    Status s = loaded.take_status();
    s.Annotate(path);
    return s;
  }
  return loaded;
}

StatusOr<Ref<Module>> Module::Load(Ref<Module> module) {
  Status s = module->Verify();
  if (!s.ok()) return s;
  return module;
}

Status Module::Verify() {
  const uint8_t* data = bytes_.data;
  size_t size = bytes_.size;
  // 1. Framing.
  if (size < 12) {
    return DataLossError("not a Kiln module: %zu bytes is too small", size);
  }
  if (std::memcmp(data + 8, "KILN", 4) != 0) {
    char id[5] = {};
    for (int i = 0; i < 4; ++i) {
      char c = static_cast<char>(data[8 + i]);
      id[i] = (c >= 32 && c < 127) ? c : '?';
    }
    return DataLossError("not a Kiln module: file identifier '%s', expected 'KILN'", id);
  }
  uint32_t prefix = static_cast<uint32_t>(data[0]) | (static_cast<uint32_t>(data[1]) << 8) |
                    (static_cast<uint32_t>(data[2]) << 16) |
                    (static_cast<uint32_t>(data[3]) << 24);
  if (static_cast<uint64_t>(prefix) + 4 != size) {
    return DataLossError(
        "truncated or corrupt module: size prefix says %llu bytes, buffer has %zu",
        static_cast<unsigned long long>(prefix) + 4, size);
  }
  if (size > 0x7FFFFFF0u) return DataLossError("module larger than 2 GiB");
  // 2. FlatBuffers verifier.
  flatbuffers::Verifier::Options opts;
  opts.max_depth = 16;
  flatbuffers::Verifier verifier(data, size, opts);
  if (!format::VerifySizePrefixedModuleBuffer(verifier)) {
    return DataLossError("module failed FlatBuffers verification (corrupt or truncated)");
  }
  def_ = format::GetSizePrefixedModule(data);
  // 2b. Integrity: the FNV-1a hash sealed by the compiler (see the schema).
  {
    const uint8_t* field = format::IntegrityField(data);
    if (!field) return DataLossError("module has no integrity hash (corrupt, or not written by kiln-compile)");
    uint64_t stored;
    std::memcpy(&stored, field, sizeof(stored));
    uint64_t actual = format::ComputeIntegrity(data, size, field);
    if (stored != actual) {
      return DataLossError("module integrity check failed (hash %016llx, expected %016llx): the file is corrupt",
                           static_cast<unsigned long long>(actual), static_cast<unsigned long long>(stored));
    }
  }
  name_ = Str(def_->name());
  auto err = [&](Status st) {
    return st.Annotatef("module '%.*s'", static_cast<int>(name_.size()), name_.data());
  };

  // 3. Header.
  if (def_->version() != kModuleVersion) {
    return err(DataLossError("unsupported module version %u (this runtime reads version %u)",
                             def_->version(), kModuleVersion));
  }
  uint32_t features = static_cast<uint32_t>(def_->features());
  if (features & ~kKnownFeatures) {
    return err(DataLossError("unknown feature bits 0x%x", features & ~kKnownFeatures));
  }
  if (features & ~kSupportedFeatures) {
    Status st = UnimplementedError("module uses unsupported features 0x%x (%s)",
                                   features & ~kSupportedFeatures,
                                   (features & 1) ? "async_exports" : "multi_module");
    return err(std::move(st));
  }

  // 4. Tables.
  if (auto* imports = def_->imports()) {
    for (flatbuffers::uoffset_t i = 0; i < imports->size(); ++i) {
      const format::Import* imp = imports->Get(i);
      if (!imp || !imp->name() || !imp->signature()) {
        return err(DataLossError("import %u: missing name or signature", i));
      }
      auto sig = ImportSignature::Parse(imp->signature()->string_view());
      if (!sig.ok()) {
        return err(DataLossError("import %u '%s': %s", i, imp->name()->c_str(),
                                 sig.status().message().c_str()));
      }
      import_names_.push_back(Str(imp->name()));
      import_signatures_.push_back(std::move(sig).value());
    }
  }
  uint32_t rodata_n = rodata_count();
  for (uint32_t i = 0; i < rodata_n; ++i) {
    const format::RodataSegment* seg = def_->rodata()->Get(i);
    if (!seg) return err(DataLossError("rodata segment %u: missing", i));
  }
  FunctionLimits limits;
  HostVector<uint8_t>& global_is_ref = limits.global_is_ref;
  if (auto* globals = def_->globals()) {
    for (flatbuffers::uoffset_t i = 0; i < globals->size(); ++i) {
      if (!globals->Get(i)) return err(DataLossError("global %u: missing", i));
      global_is_ref.push_back(globals->Get(i)->is_ref());
    }
  }
  if (auto* exes = def_->executables()) {
    for (flatbuffers::uoffset_t i = 0; i < exes->size(); ++i) {
      const format::Executable* exe = exes->Get(i);
      if (!exe || !exe->spirv() || exe->spirv()->size() == 0) {
        return err(DataLossError("executable %u: missing SPIR-V", i));
      }
      if (!exe->entry_points() || exe->entry_points()->size() == 0) {
        return err(DataLossError("executable %u: no entry points", i));
      }
      for (flatbuffers::uoffset_t e = 0; e < exe->entry_points()->size(); ++e) {
        const format::EntryPoint* ep = exe->entry_points()->Get(e);
        if (!ep || !ep->name()) {
          return err(DataLossError("executable %u entry point %u: missing name", i, e));
        }
        if (ep->workgroup_size() && ep->workgroup_size()->size() > 3) {
          return err(DataLossError("executable %u entry point %u: workgroup_size has %u dims",
                                   i, e, ep->workgroup_size()->size()));
        }
        if (ep->specialization() && ep->specialization()->size() > kMaxSpecializationConstants) {
          return err(DataLossError("executable %u entry point %u: %u specialization constants (at most %u)",
                                   i, e, ep->specialization()->size(), kMaxSpecializationConstants));
        }
        if (ep->push_constant_bytes() > CommandBufferState::kMaxPushConstantWords * 4 ||
            ep->push_constant_bytes() % 4 != 0) {
          return err(DataLossError(
              "executable %u entry point %u: push_constant_bytes %u (must be a multiple of 4, "
              "at most %u)",
              i, e, ep->push_constant_bytes(), CommandBufferState::kMaxPushConstantWords * 4));
        }
      }
    }
  }
  auto* fns = def_->functions();
  uint32_t fn_count = fns ? fns->size() : 0;
  functions_.reserve(fn_count);
  for (uint32_t i = 0; i < fn_count; ++i) {
    const format::Function* f = fns->Get(i);
    if (!f || !f->name() || f->name()->size() == 0) {
      return err(DataLossError("function %u: missing name", i));
    }
    FunctionInfo info;
    info.name = Str(f->name());
    info.def = f;
    info.exported = f->exported();
    info.i32_register_count = f->i32_register_count();
    info.ref_register_count = f->ref_register_count();
    info.arg_count = f->args() ? f->args()->size() : 0;
    info.result_count = f->results() ? f->results()->size() : 0;
    if (f->bytecode()) info.code = ByteSpan(f->bytecode()->data(), f->bytecode()->size());
    auto fctx = [&](Status st) {
      return st.Annotatef("function '%.*s'", static_cast<int>(info.name.size()), info.name.data());
    };
    for (uint32_t a = 0; a < info.arg_count; ++a) {
      Status st = CheckTensorSig(f->args()->Get(a), "argument", a);
      if (!st.ok()) return err(fctx(std::move(st)));
      const format::TensorSig* sig = f->args()->Get(a);
      if (sig->ownership() == format::Ownership::output_storage &&
          (sig->tied_result() < 0 || static_cast<uint32_t>(sig->tied_result()) >=
                                         (f->results() ? f->results()->size() : 0))) {
        return err(fctx(DataLossError("argument %u: output_storage tied_result %d out of range", a,
                                 sig->tied_result())));
      }
    }
    for (uint32_t r = 0; r < info.result_count; ++r) {
      Status st = CheckTensorSig(f->results()->Get(r), "result", r);
      if (!st.ok()) return err(fctx(std::move(st)));
    }
    if (info.arg_count > info.ref_register_count) {
      return err(fctx(DataLossError("%u arguments but only %u ref registers", info.arg_count,
                               info.ref_register_count)));
    }
    size_t dbg_off = f->debug_offsets() ? f->debug_offsets()->size() : 0;
    size_t dbg_loc = f->debug_locations() ? f->debug_locations()->size() : 0;
    if (dbg_off != dbg_loc) {
      return err(fctx(DataLossError("%zu debug offsets but %zu debug locations", dbg_off, dbg_loc)));
    }
    for (size_t d = 0; d < dbg_loc; ++d) {
      if (!f->debug_locations()->Get(static_cast<flatbuffers::uoffset_t>(d))) {
        return err(fctx(DataLossError("debug location %zu missing", d)));
      }
    }
    functions_.push_back(std::move(info));
  }
  // Names sorted once (libc's qsort: no template code in the runtime): the
  // duplicate check is O(n log n) and FindFunction a binary search, so a
  // module of 100,000 functions loads in well under a second.
  by_name_.resize(functions_.size());
  for (uint32_t i = 0; i < by_name_.size(); ++i) by_name_[i] = NamedFunction{functions_[i].name, i};
  if (!by_name_.empty())
    qsort(by_name_.data(), by_name_.size(), sizeof(NamedFunction), &NamedFunction::Compare);
  for (size_t k = 1; k < by_name_.size(); ++k) {
    if (by_name_[k - 1].name == by_name_[k].name) {
      return err(DataLossError("duplicate function name '%s'", by_name_[k].name.data()));
    }
  }
  int init = def_->initializer();
  if (init < -1 || init >= static_cast<int>(fn_count)) {
    return err(DataLossError("initializer %d out of range (module has %u functions)", init,
                             fn_count));
  }
  if (init >= 0 && (functions_[init].arg_count || functions_[init].result_count)) {
    return err(DataLossError("initializer '%s' must take no arguments and return nothing",
                             functions_[init].name.data()));
  }

  // 5. Bytecode.
  limits.rodata_count = rodata_n;
  limits.imports = &import_signatures_;
  for (const FunctionInfo& f : functions_) limits.functions.push_back({f.arg_count, f.result_count});
  for (const FunctionInfo& f : functions_) {
    limits.i32_register_count = f.i32_register_count;
    limits.ref_register_count = f.ref_register_count;
    limits.result_count = f.result_count;
    Status st = VerifyBytecode(f.code, limits);
    if (!st.ok()) {
      return err(st.Annotatef("function '%.*s'", static_cast<int>(f.name.size()), f.name.data()));
    }
  }
  // 6. Static command sequences (replay): the compiler's claim, checked.
  bool global_stores = false;
  for (uint32_t i = 0; i < functions_.size(); ++i) {
    if (static_cast<int>(i) != init && StoresGlobalRef(functions_[i].code)) global_stores = true;
  }
  for (FunctionInfo& f : functions_) {
    if (!f.def->static_commands()) continue;
    Status st = CheckStaticCommands(f.code, import_names_.data(), import_names_.size());
    if (!st.ok()) {
      return err(st.Annotatef("function '%.*s'", static_cast<int>(f.name.size()), f.name.data()));
    }
    f.replayable = !global_stores;
  }
  return OkStatus();
}

int Module::FindFunction(std::string_view name) const {
  size_t lo = 0, hi = by_name_.size();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (by_name_[mid].name < name) lo = mid + 1;
    else hi = mid;
  }
  if (lo == by_name_.size() || by_name_[lo].name != name) return -1;
  return static_cast<int>(by_name_[lo].index);
}

int Module::NamedFunction::Compare(const void* a, const void* b) {
  int c = static_cast<const NamedFunction*>(a)->name.compare(static_cast<const NamedFunction*>(b)->name);
  return c < 0 ? -1 : c > 0;
}

std::vector<std::string> Module::function_names() const {
  std::vector<std::string> names;
  for (const FunctionInfo& f : functions_) names.emplace_back(f.name);
  return names;
}

uint32_t Module::rodata_count() const { return def_->rodata() ? def_->rodata()->size() : 0; }

ByteSpan Module::rodata(uint32_t i) const {
  const format::RodataSegment* seg = def_->rodata()->Get(i);
  if (!seg->data()) return ByteSpan();
  return ByteSpan(seg->data()->data(), seg->data()->size());
}

uint32_t Module::global_count() const { return def_->globals() ? def_->globals()->size() : 0; }

std::string_view Module::DebugLocation(uint32_t function, uint32_t offset) const {
  if (function >= functions_.size()) return {};
  const format::Function* f = functions_[function].def;
  if (!f->debug_offsets() || !f->debug_locations()) return {};
  int best = -1;
  uint32_t best_offset = 0;
  for (flatbuffers::uoffset_t i = 0; i < f->debug_offsets()->size(); ++i) {
    uint32_t o = f->debug_offsets()->Get(i);
    if (o <= offset && (best < 0 || o >= best_offset)) {
      best = static_cast<int>(i);
      best_offset = o;
    }
  }
  if (best < 0) return {};
  return f->debug_locations()->Get(static_cast<flatbuffers::uoffset_t>(best))->string_view();
}

}  // namespace kiln::vm
