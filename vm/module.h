// vm::Module: a loaded, verified Kiln module (schemas/kiln_module.fbs).
//
// Loading is zero-copy: the FlatBuffer is read in place, either from memory
// the caller keeps alive or from a read-only mmap of the file that the module
// owns. Before a Module is returned it has passed, in order:
//   1. framing: size prefix == buffer size - 4, file identifier "KILN";
//   2. the FlatBuffers Verifier (every offset, vector and string in bounds);
//   3. header checks: version == kModuleVersion, no unknown feature bits
//      (known-but-unsupported bits give kUnimplemented);
//   4. table checks: names present, dtypes valid, dims >= 0, rank <= kMaxRank,
//      import signatures parse, initializer in range and takes no arguments,
//      executables have SPIR-V and entry points, debug tables paired;
//   5. the bytecode verifier (VerifyBytecode in vm/isa.h) on every function.
// Any failure is a kDataLoss status naming the function and byte offset where
// relevant, e.g. "module 'm': function 'main': offset 0x0012 (CALL_IMPORT):
// import 9 out of range (module has 3)". No input crashes the loader.
#ifndef KILN_VM_MODULE_H_
#define KILN_VM_MODULE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/ref.h"
#include "base/status.h"
#include "kiln_module_generated.h"
#include "vm/isa.h"

namespace kiln::vm {

constexpr uint32_t kModuleVersion = 1;
// Feature bits this loader knows about (schema enum Features) and the subset
// it supports.
constexpr uint32_t kKnownFeatures = 0x3;
// multi_module (0x2) is supported: imports of other modules' exports
// resolve at registration (vm/context.h); modules need not set the bit.
constexpr uint32_t kSupportedFeatures = 0x2;

// Per-function facts cached at load (pointers into the module bytes).
struct FunctionInfo {
  std::string_view name;  // into the module bytes (NUL-terminated there)
  const format::Function* def = nullptr;
  ByteSpan code;
  uint32_t i32_register_count = 0;
  uint32_t ref_register_count = 0;
  uint32_t arg_count = 0;
  uint32_t result_count = 0;
  bool exported = false;
  // Function.static_commands, checked at load (vm/static_commands.h), and
  // no function of the module other than the initializer stores a global
  // ref: the context may record this function's command buffer once per
  // argument binding set and replay it (vm/replay.h).
  bool replayable = false;
};

class Module : public RefObject {
 public:
  // Loads from `data`, which must stay alive and unchanged for the module's
  // lifetime (zero-copy). If `data` is not 8-byte aligned it is copied once
  // into an owned 64-byte-aligned buffer. For weights to be 64-byte aligned in
  // memory, pass 64-byte-aligned data. Cost: O(size) verification.
  static StatusOr<Ref<Module>> LoadFromMemory(const void* data, size_t size);
  // mmaps `path` read-only; the mapping lives as long as the module.
  // Errors: kNotFound (cannot open), kDataLoss (bad contents).
  static StatusOr<Ref<Module>> LoadFromFile(const char* path);

  const format::Module* def() const { return def_; }
  // The whole buffer (size prefix included); offsets in kiln-dump are into it.
  ByteSpan bytes() const { return bytes_; }
  bool is_mapped() const { return map_base_ != nullptr; }
  // Names are views of the module bytes (FlatBuffers strings, so
  // NUL-terminated: data() is a C string); they live as long as the module.
  std::string_view name() const { return name_; }

  uint32_t function_count() const { return static_cast<uint32_t>(functions_.size()); }
  const FunctionInfo& function(uint32_t i) const { return functions_[i]; }
  // Ordinal of the function named `name`, or -1.
  int FindFunction(std::string_view name) const;
  int initializer() const { return def_->initializer(); }

  uint32_t import_count() const { return static_cast<uint32_t>(import_signatures_.size()); }
  const HostVector<ImportSignature>& import_signatures() const { return import_signatures_; }
  const HostVector<std::string_view>& import_names() const { return import_names_; }
  std::vector<std::string> function_names() const;

  uint32_t rodata_count() const;
  ByteSpan rodata(uint32_t i) const;
  uint32_t global_count() const;

  // Source location recorded for bytecode `offset` of `function` (the entry
  // with the greatest debug offset <= offset), or "" when there is none.
  std::string_view DebugLocation(uint32_t function, uint32_t offset) const;

  // Inline (with no other out-of-line virtual function) so that RTTI-enabled
  // code, e.g. UBSan's vptr checks in tests, gets the typeinfo.
  ~Module() override { ReleaseStorage(); }

 private:
  Module() = default;
  void ReleaseStorage();
  static StatusOr<Ref<Module>> Load(Ref<Module> module);
  Status Verify();

  ByteSpan bytes_;
  void* owned_ = nullptr;       // aligned copy (free())
  void* map_base_ = nullptr;    // mmap base (munmap())
  size_t map_size_ = 0;
  const format::Module* def_ = nullptr;
  std::string_view name_;
  HostVector<FunctionInfo> functions_;
  struct NamedFunction {
    std::string_view name;
    uint32_t index;
    static int Compare(const void* a, const void* b);  // by name, for qsort
  };
  HostVector<NamedFunction> by_name_;  // every function, sorted by name
  HostVector<ImportSignature> import_signatures_;
  HostVector<std::string_view> import_names_;
};

}  // namespace kiln::vm

#endif  // KILN_VM_MODULE_H_
