// vm::Context: the modules of one program, linked against the native `hal`
// module, each other and a hal::Device, plus their globals, executables, the
// register storage the interpreter reuses across invocations and the pools
// that make the steady-state invoke path allocation-free.
//
// Registration (RegisterModule), in order:
//   1. every import is resolved by name:
//      - "hal.*" against the native hal module; the signature must match
//        exactly ("module 'm': import 3 'hal.allocator.allocate': signature
//        'i_r' does not match the native 'ii_r'"; unknown names are
//        kNotFound);
//      - "module.function" against the exported functions of the modules
//        registered *before* this one (a module is named by Module::name()).
//        The signature must take and return only ref registers, with the
//        export's argument and result counts, and when it is typed
//        ("r_r:4xf32->4xf32", vm/isa.h) each type must equal the export's
//        TensorSig. A mismatch is kFailedPrecondition: "module 'driver':
//        import 0 'mel.main' expects (tensor<4xf32>) -> (tensor<8xf32>),
//        module 'mel' exports main(x: tensor<4xf32>) -> (y: tensor<4xf32>)".
//        No such module or export is kNotFound. The schema feature bit
//        multi_module may be set by such modules but is not required;
//   2. one hal::Executable per module Executable (SPIR-V + entry points);
//   3. globals start null; the initializer function, if any, runs once.
//
// Invocation: Invoke() checks arity and each argument's dtype and shape
// against the function's TensorSigs (kInvalidArgument "argument 0 'x':
// expected tensor<1x3x48x192xf32>, got tensor<1x3xf32>"), validates output
// storage (below), places the arguments in ref registers 0..N-1 and
// interprets the bytecode. Results are the registers of RET and must be
// buffer views matching the result TensorSigs (kInternal otherwise: a
// compiler bug). Errors raised while running are annotated with the
// location: "main@0x0012 CALL_IMPORT hal.command_buffer.dispatch [conv_3]:
// message".
//
// Calls between modules: CALL_IMPORT of a bytecode import runs the other
// module's function in this context, in the next frame (the same depth limit
// as CALL), with the caller's buffer views passed through (no copy, no host
// round trip). Each argument must be a buffer view matching the callee's
// TensorSig (kInvalidArgument otherwise); results are checked likewise
// (kInternal). An argument whose callee TensorSig is `consume` is *moved*:
// the caller's register reads null after the call (emit a MOV_REF first to
// keep using the value).
//
// Consume. An argument is consumed when the application hands over its
// reference (InvokeArg::consume) or a caller module passes it to a `consume`
// parameter (above). Once all arguments are in place, a consumed view is
// *owned* by the callee's frame when nothing else holds it: the view's only
// reference is the frame register, its buffer is a root allocation, and the
// buffer's only holders are that view, at most this context's
// allocate_cached slot and in-flight command buffers of this context
// (queue-ordered before anything the callee records). An owned argument's storage may be taken by
// hal.buffer_view.take_or_allocate / take_or_clone (update in place, return
// it as a result). Otherwise the argument is treated as borrowed: take_*
// allocates (take_or_clone also copies, one counted copy), so every other
// holder keeps seeing the old bytes.
//
// Output storage. The caller may supply storage for result k (a view, maybe
// a window of a larger buffer). Checks, before anything runs or is consumed:
// dtype equal to the result's and at least the result's byte size
// (kInvalidArgument "output storage for result 0 'y': tensor<2xf32> (8
// bytes) is smaller than tensor<4xf32> (16 bytes)"); no argument overlapping
// it (kFailedPrecondition "argument 1 'x' overlaps the output storage of
// result 0 'y' (bytes [0, 16) and [8, 24) of one allocation)"); no two
// storages overlapping. An argument declared `output_storage` in the
// signature is the storage of its tied_result. Bytecode reads the storage
// with hal.buffer_view.output_storage(k); when result k comes back as a view
// of exactly that storage (same allocation, offset, dtype, shape) it is
// returned as is, otherwise its bytes are copied into the storage (one
// counted copy). Either way `results[k]` is then the storage view itself when
// its shape equals the result's, else a view of the storage's first bytes
// typed as the result.
//
// Steady state: frames, command buffers (vm/hal_module.h), views
// (BlockPool), allocate_cached slots and invoke scratch are reused; once the
// first invocation has grown them, an invocation whose program allocates
// only through allocate_cached / take_or_allocate makes no host or device
// allocation.
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
#include "vm/replay.h"
#include "vm/value.h"

namespace kiln::vm {

// Identifies a function of a registered module.
struct FunctionRef {
  uint32_t module = 0;    // registration order
  uint32_t ordinal = 0;   // index in the module's functions
};

// One argument of Invoke.
struct InvokeArg {
  // Without `consume`: borrowed for the duration of the call. With
  // `consume`: one reference that the call adopts (and releases) in every
  // case, success or failure.
  BufferView* view = nullptr;
  bool consume = false;
};

// Fences of an asynchronous invocation (InvokeEx). A fence is a timepoint
// of a caller-owned timeline semaphore.
struct InvokeFences {
  // Every submission of the invocation waits until it is reached (null
  // semaphore: no wait).
  hal::SemaphorePoint wait;
  // Signalled once all of the invocation's device work is done; required.
  hal::SemaphorePoint signal;
  // Output: whether the signal was submitted (the call got as far as
  // starting; from then on it is signalled even when the call fails).
  bool signal_submitted = false;
};

class Context : public RefObject {
 public:
  // Maximum CALL depth (a deeper call fails with kResourceExhausted).
  static constexpr uint32_t kMaxCallDepth = 128;

  // `device` may be null for modules that never touch the hal (tests).
  static StatusOr<Ref<Context>> Create(Ref<hal::Device> device);

  // Bounds on what an untrusted module may consume (docs/security.md); 0
  // means unlimited. `step_budget`: branches and calls the interpreter runs
  // per invocation and per initializer; past it the call fails with
  // kResourceExhausted ("step budget ... exhausted") and the context stays
  // usable. `device_memory_budget`: bytes this context's modules may hold
  // allocated; an allocation by a module that would exceed it fails with
  // kResourceExhausted (HalModule::AllocateCharged; each context has its
  // own account).
  // `wait_timeout_ns` (UINT64_MAX: none) bounds every host wait of an
  // invocation on the device (HalModule::set_wait_timeout).
  struct Limits {
    uint64_t step_budget = 0;
    uint64_t device_memory_budget = 0;
    uint64_t wait_timeout_ns = UINT64_MAX;
  };
  void set_limits(const Limits& limits) {
    limits_ = limits;
    hal_.set_device_memory_budget(limits.device_memory_budget);
    hal_.set_wait_timeout(limits.wait_timeout_ns);
  }
  const Limits& limits() const { return limits_; }

  // Links `module` into this context (see the header comment). On error the
  // context is unchanged except that a failed initializer leaves the module
  // unregistered.
  Status RegisterModule(Ref<Module> module);

  // Finds an exported function by name: "function" searches modules in
  // registration order (the first match wins); "module.function" looks in
  // the module of that name. kNotFound lists the exported names.
  StatusOr<FunctionRef> LookupFunction(std::string_view name) const;
  const FunctionInfo& function_info(FunctionRef fn) const;
  const Module& module(uint32_t index) const { return *modules_[index]->module; }
  uint32_t module_count() const { return static_cast<uint32_t>(modules_.size()); }
  hal::Device* device() const { return hal_.device(); }

  // Runs `fn` with `args` (one per TensorSig; ownership per InvokeArg) and
  // writes its results into `results[0..result_count)` (each a new reference
  // owned by the caller). `output_storage` is null or has `result_count`
  // entries, each null or caller storage for that result (borrowed; see the
  // header comment). Errors: see the header comment; on error `results` are
  // left null and consumed arguments are released.
  // Cost: the interpretation itself; no host allocation once pools and
  // banks have grown, other than what the program asks for.
  //
  // Timeline: without `fences` the call is synchronous: it returns once the
  // device work is done (one host wait at the end; programs compiled with
  // hal.command_buffer.execute submit without blocking until then). With
  // `fences` it is asynchronous: the device work waits on fences->wait, the
  // call returns as soon as the work is submitted (no host wait unless the
  // program reads device data on the host: execute_and_wait), results are
  // valid once fences->signal is reached, and fences->signal is signalled
  // even when the call fails after submitting work. Either way, finished
  // submissions are retired first (never blocking), freeing buffers released
  // while they were in flight.
  Status InvokeEx(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                Ref<BufferView>* results, size_t result_count,
                BufferView* const* output_storage = nullptr,
                InvokeFences* fences = nullptr);
  // Drops recordings whose arguments nobody else holds (vm/replay.h), then
  // retires finished submissions without blocking (see hal_module.h).
  Status Collect() {
    PruneRecordings();
    return hal_.Retire();
  }
  // Submissions not yet retired (tests).
  size_t in_flight_count() const { return hal_.in_flight_count(); }
  // All arguments borrowed, no output storage.
  Status Invoke(FunctionRef fn, BufferView* const* args, size_t arg_count,
                Ref<BufferView>* results, size_t result_count);

  // Whether a consumed `view` would be owned now (see "Consume"): its only
  // reference is the caller's and its root buffer is held only by it (and at
  // most one allocate_cached slot).
  bool IsExclusive(const BufferView* view) const;

  // The i32 bank of the outermost frame after the last Invoke (tests).
  const HostVector<int32_t>& i32_registers_for_testing() const;
  // Number of allocate_cached slots holding a buffer (tests).
  size_t cached_buffer_count() const { return cache_.size(); }
  size_t command_buffer_pool_size() const { return hal_.command_buffer_pool_size(); }
  // Recorded command buffers kept for replay (vm/replay.h; tests).
  size_t recording_count() const { return recordings_.size(); }

  // Frees what this context keeps between invocations to make the next one
  // allocation-free: call frames and their registers, the argument,
  // ownership and output-storage scratch, the cached allocations
  // (allocate_cached), the HAL module's dispatch scratch and command-buffer
  // pool, and the recorded command buffers (retired queue-ordered, as
  // pruning does). All of it is rebuilt, counted, by the next invocation. The C API
  // calls it after an invocation during which the allocator refused a block:
  // a container's refused block came from malloc instead
  // (base/host_alloc.h), and must not stay. Not during an invocation.
  void DropInvokeScratch();

  // Releases frames and globals before modules and the device. Inline: see
  // ~Module.
  ~Context() override {
    // Queue-ordered frees: wait for the last timepoint, then retire.
    (void)hal_.WaitIdle();
    // Then the device's queue too, before the pipelines, pools and command
    // buffers go: a signalled timepoint says the work is done, not that the
    // driver has let go of it. lavapipe's queue thread (Mesa 22.3) still
    // touched a released context's objects after its timeline value
    // signalled and crashed the next test now and then
    // (discrete.async_invoke_test: 7 of 10 runs under load without this, 0
    // of 10 with it, interleaved). One queue drain per context release.
    if (hal_.device()) (void)hal_.device()->WaitIdle();
    recordings_.clear();
    frames_.clear();
    output_storage_.clear();
    cache_.clear();
    modules_.clear();
    hal_.ClearPools();
  }

 private:
  struct ResolvedImport {
    enum class Kind : uint8_t { kNative, kContext, kBytecode } kind = Kind::kNative;
    HalImport native = HalImport::kCount;  // kNative and kContext
    FunctionRef bytecode;                  // kBytecode
  };
  struct ModuleState {
    KILN_HOST_NEW_DELETE_NEVER_NULL
    Ref<Module> module;
    HostVector<ResolvedImport> imports;
    HostVector<Ref<hal::Executable>> executables;
    HostVector<RefValue> rodata;   // one RodataSpan per segment
    HostVector<RefValue> globals;
  };
  // One allocate_cached slot.
  struct CacheEntry {
    uint32_t module = 0;
    uint32_t function = 0;
    int32_t slot = 0;
    Ref<hal::Buffer> buffer;
  };

  explicit Context(Ref<hal::Device> device) : hal_(std::move(device)) {}

  Status ResolveImport(const Module& module, uint32_t index, ResolvedImport* out) const;

  // Interprets `function` of module `m` in frames_[depth] (already acquired
  // and holding the arguments). On RET, `*ret` is RET's register list; the
  // values stay in the frame for the caller to move out.
  Status Run(uint32_t m, uint32_t function, uint32_t depth, RegList* ret);
  // Returns the frame for `depth`, its banks grown to fit `info` and cleared,
  // with a fresh serial.
  Frame* AcquireFrame(uint32_t depth, const FunctionInfo& info);
  // Releases every ref in frames_[depth] (called when a call returns).
  void ClearFrame(uint32_t depth);
  Status Annotate(Status status, uint32_t m, uint32_t function, uint32_t offset,
                  const DecodedInstruction* inst) const;

  // CALL_IMPORT of another module's export (see "Calls between modules").
  Status CallBytecodeImport(FunctionRef callee, const ImportCall& call, uint32_t depth);
  // --- ABI ownership (vm/abi_ownership.cc) ---
  // The ownership imports (hal_imports.def) for frame `call.frame` running
  // function `function` of module `m`.
  Status CallContextImport(HalImport id, const ImportCall& call, uint32_t m, uint32_t function);
  // Marks argument register `index` of `frame` as owned when it holds an
  // exclusive view (a consumed argument).
  void ClaimConsumed(Frame* frame, uint16_t index);
  // Whether `view`'s storage fits `size` bytes of memory kind `kind` for
  // take_or_allocate / take_or_clone (ownership aside).
  bool Takeable(const BufferView* view, uint64_t size, int32_t kind) const;
  // Binds result k of the top-level call to its output storage (copying
  // into `*cb`, created on demand, when the program did not write there).
  Status FinishOutputStorage(size_t k, const format::TensorSig* sig, Ref<BufferView>* result,
                             Ref<CommandBufferState>* cb);

  // --- The allocation cache (vm/allocation_cache.cc) ---
  bool IsCached(const hal::Buffer* buffer) const;
  // A buffer of at least `size` bytes of `kind` for slot `slot` of
  // `function` in module `m`: a cached one nobody else holds, else a new one
  // (counted) that replaces the slot's oldest when it has two already.
  StatusOr<Ref<hal::Buffer>> AllocateCached(uint32_t m, uint32_t function, int32_t slot,
                                            uint64_t size, hal::MemoryKind kind);

  // --- Recorded command buffers (vm/replay.h; vm/replay.cc) ---
  // References to `buffer` held by recordings' command buffers.
  int32_t RecordingHolders(const hal::Buffer* buffer) const;
  // Drops recordings an argument or output storage of which nobody but
  // this context's recordings and in-flight work holds.
  void PruneRecordings();
  // Replays a recording of `fn` matching this invocation (see replay.h):
  // *replayed tells whether it did; then `results` are set and the
  // invocation is complete (fences signalled as for Run). Otherwise nothing
  // changed and the caller interprets.
  Status TryReplay(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                   Ref<BufferView>* results, size_t result_count, bool any_storage,
                   InvokeFences* fences, bool* replayed);
  // Starts recording the run of `fn` (replayable, top level): keys, stats.
  void BeginRecording(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                      const Frame* frame, size_t result_count);
  // Notes an ownership import of the recorded run (CallContextImport).
  void NoteGuard(HalImport id, const ImportCall& call, const hal::Buffer* result, bool allocated);
  // Ends the recording: keeps it when the run was replayable (`results` are
  // the run's results, before output storage substitution; `copied`: a
  // result needed a copy into its output storage).
  void FinishRecording(bool ok, const InvokeArg* args, size_t arg_count, Frame* frame,
                       const RegList& ret, size_t result_count, bool copied);

  Status StepBudgetExhausted(uint32_t m, uint32_t function, uint32_t offset);
  Limits limits_;
  uint64_t steps_left_ = 0;  // of limits_.step_budget, for the running invocation
  HalModule hal_;
  HostVector<std::unique_ptr<Recording>> recordings_;
  std::unique_ptr<Recording> recording_;  // the run being recorded, if any
  const InvokeArg* recording_args_ = nullptr;
  size_t recording_arg_count_ = 0;
  HalModule::Capture capture_;
  uint64_t replay_clock_ = 0;
  HostVector<uint8_t> scratch_owned_;
  HostVector<std::unique_ptr<ModuleState>> modules_;
  HostVector<std::unique_ptr<Frame>> frames_;  // one per call depth, reused
  uint64_t next_serial_ = 1;
  // Output storage of the running top-level invocation, one per result
  // (typed as the result); empty outside Invoke.
  HostVector<Ref<BufferView>> output_storage_;
  HostVector<CacheEntry> cache_;
  // Invoke scratch, grown on demand (counted) and reused.
  HostVector<InvokeArg> scratch_args_;
  HostVector<uint8_t> scratch_consumed_;
};

}  // namespace kiln::vm

#endif  // KILN_VM_CONTEXT_H_
