// vm::Context: the modules of one program, linked against the native `hal`
// module and a hal::Device, plus their globals, executables and the register
// storage the interpreter reuses across invocations.
//
// Registration (RegisterModule), in order:
//   1. every import is resolved by name against the native hal module and
//      its signature must match exactly ("module 'm': import 3
//      'hal.allocator.allocate': signature 'i_r' does not match the native
//      'ii_r'"; unknown names are kNotFound). Imports of exports of modules
//      registered earlier are reserved (schema feature bit multi_module) and
//      resolve to kUnimplemented for now;
//   2. one hal::Executable per module Executable (SPIR-V + entry points);
//   3. globals start null; the initializer function, if any, runs once.
//
// Invocation: Invoke() checks arity and each argument's dtype and shape
// against the function's TensorSigs (kInvalidArgument "argument 0 'x':
// expected tensor<1x3x48x192xf32>, got tensor<1x3xf32>"), rejects an input
// that aliases an output_storage argument (kFailedPrecondition), places the
// arguments in ref registers 0..N-1 and interprets the bytecode. Results are
// the registers of RET and must be buffer views matching the result
// TensorSigs (kInternal otherwise: a compiler bug).
// Errors raised while running are annotated with the location:
// "main@0x0012 CALL_IMPORT hal.command_buffer.dispatch [conv_3]: message".
//
// Threading: one Invoke at a time per context. Host allocations on the invoke
// path are counted into device stats().host_allocations_invoke.
#ifndef KILN_VM_CONTEXT_H_
#define KILN_VM_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/ref.h"
#include "base/status.h"
#include "hal/api.h"
#include "vm/hal_module.h"
#include "vm/module.h"
#include "vm/value.h"

namespace kiln::vm {

// Identifies a function of a registered module.
struct FunctionRef {
  uint32_t module = 0;    // registration order
  uint32_t ordinal = 0;   // index in the module's functions
};

class Context : public RefObject {
 public:
  // Maximum CALL depth (a deeper call fails with kResourceExhausted).
  static constexpr uint32_t kMaxCallDepth = 128;

  // `device` may be null for modules that never touch the hal (tests).
  static StatusOr<Ref<Context>> Create(Ref<hal::Device> device);

  // Links `module` into this context (see the header comment). On error the
  // context is unchanged except that a failed initializer leaves the module
  // unregistered.
  Status RegisterModule(Ref<Module> module);

  // Finds an exported function by name, searching modules in registration
  // order. kNotFound lists the exported names.
  StatusOr<FunctionRef> LookupFunction(std::string_view name) const;
  const FunctionInfo& function_info(FunctionRef fn) const;
  const Module& module(uint32_t index) const { return *modules_[index]->module; }
  uint32_t module_count() const { return static_cast<uint32_t>(modules_.size()); }
  hal::Device* device() const { return hal_.device(); }

  // Runs `fn` with `args` (borrowed, one per TensorSig) and writes its
  // results into `results[0..result_count)` (each a new reference owned by
  // the caller). Cost: the interpretation itself; no host allocation once the
  // register banks have grown, other than what the program asks for.
  Status Invoke(FunctionRef fn, BufferView* const* args, size_t arg_count,
                Ref<BufferView>* results, size_t result_count);

  // The i32 bank of the outermost frame after the last Invoke (tests).
  const std::vector<int32_t>& i32_registers_for_testing() const;

  // Releases frames and globals before modules and the device. Inline: see
  // ~Module.
  ~Context() override {
    frames_.clear();
    modules_.clear();
  }

 private:
  struct ResolvedImport {
    enum class Kind : uint8_t { kNative, kBytecode } kind = Kind::kNative;
    HalImport native = HalImport::kCount;
    FunctionRef bytecode;  // reserved for multi_module
  };
  struct ModuleState {
    Ref<Module> module;
    std::vector<ResolvedImport> imports;
    std::vector<Ref<hal::Executable>> executables;
    std::vector<RefValue> rodata;   // one RodataSpan per segment
    std::vector<RefValue> globals;
  };

  explicit Context(Ref<hal::Device> device) : hal_(std::move(device)) {}

  // Interprets `function` of module `m` in frames_[depth] (already acquired
  // and holding the arguments). On RET, `*ret` is RET's register list; the
  // values stay in the frame for the caller to move out.
  Status Run(uint32_t m, uint32_t function, uint32_t depth, RegList* ret);
  // Returns the frame for `depth`, its banks grown to fit `info` and cleared.
  Frame* AcquireFrame(uint32_t depth, const FunctionInfo& info);
  // Releases every ref in frames_[depth] (called when a call returns).
  void ClearFrame(uint32_t depth);
  Status Annotate(Status status, uint32_t m, uint32_t function, uint32_t offset,
                  const DecodedInstruction* inst) const;

  HalModule hal_;
  std::vector<std::unique_ptr<ModuleState>> modules_;
  std::vector<std::unique_ptr<Frame>> frames_;  // one per call depth, reused
};

}  // namespace kiln::vm

#endif  // KILN_VM_CONTEXT_H_
