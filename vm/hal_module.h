// The native `hal` module: every function of vm/hal_imports.def, implemented
// on hal/api.h. Bytecode reaches these through CALL_IMPORT; the context
// resolves each module import by name and exact signature at registration.
//
// Buffer operands: wherever a signature takes a buffer (`r` in buffer
// position: view.create, subspan, dispatch/barrier bindings, copy, fill) the
// register may hold a hal buffer or a buffer view; a view stands for its
// buffer with offsets relative to the view's first byte.
// Sizes and offsets are i32 bytes and must be >= 0 (kInvalidArgument);
// ranges are bounds-checked against the buffer (kOutOfRange).
//
// Timeline: every submission signals the next value of one per-context
// timeline semaphore (its timepoint). hal.command_buffer.execute submits
// without blocking and keeps the command buffer (and so every buffer it
// uses) in a preallocated in-flight list until its timepoint is reached;
// Retire() polls the timeline (never blocks) and resets what finished, which
// frees buffers released meanwhile (queue-ordered frees). An invocation
// brackets its work with BeginInvocation / EndInvocation, which apply the
// caller's wait fence to every submission and signal the caller's signal
// fence (asynchronous) or wait once for the last timepoint (synchronous).
//
// Steady state: command buffers come from a per-context pool (a pooled
// CommandBufferState that no register, global or caller still holds is
// reset and handed out again), and execute_and_wait resets the hal command
// buffer as soon as its work is done, so it stops retaining the buffers it
// used (they can be freed, reused or taken as soon as their last holder lets
// go). The ownership imports (take_or_allocate, take_or_clone,
// output_storage, allocate_cached) need per-invocation state and are
// implemented by vm::Context, not here.
#ifndef KILN_VM_HAL_MODULE_H_
#define KILN_VM_HAL_MODULE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "hal/api.h"
#include "vm/isa.h"
#include "vm/value.h"

namespace kiln::vm {

enum class HalImport : uint16_t {
#define KILN_HAL_IMPORT(symbol, name, signature, meaning) symbol,
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
  kCount,
};

// Compact (no pointers: no relocations, read-only data); the prose meaning
// is HalImportMeaning, which only tools link.
struct HalImportInfo {
  HalImport id;
  char name[40];       // "hal.command_buffer.dispatch"
  char signature[16];  // "rriiii*rii_"
};
// The import's meaning from hal_imports.def ("" for an unknown id).
const char* HalImportMeaning(HalImport id);
// nullptr when `name` is not a function of the native hal module.
const HalImportInfo* FindHalImport(std::string_view name);

// The register file of one frame. Banks are sized to a power of two and
// every access is masked, so even a verifier bug cannot index out of bounds.
struct Frame {
  KILN_HOST_NEW_DELETE_NEVER_NULL
  HostVector<int32_t> i32;
  HostVector<RefValue> refs;
  uint32_t i32_mask = 0;
  uint32_t ref_mask = 0;
  // Unique per activation (never reused within a context): a BufferView
  // whose owner_serial equals it is owned by this activation (consume).
  uint64_t serial = 0;
  uint32_t depth = 0;
  int32_t& I(uint16_t index) { return i32[index & i32_mask]; }
  RefValue& R(uint16_t index) { return refs[index & ref_mask]; }
};

// One CALL_IMPORT: the caller's frame and the argument/result register lists
// (already checked against the import signature by the verifier).
struct ImportCall {
  Frame* frame;
  RegList args;
  RegList results;
  int32_t ArgI32(size_t i) const { return frame->I(args[i].index); }
  const RefValue& ArgRef(size_t i) const { return frame->R(args[i].index); }
  void SetI32(size_t i, int32_t v) const { frame->I(results[i].index) = v; }
  void SetRef(size_t i, RefValue v) const { frame->R(results[i].index) = std::move(v); }
};

// Per-context native module state. Not thread-safe (one invoke at a time).
class HalModule {
 public:
  // `device` may be null: every import then fails with kFailedPrecondition.
  explicit HalModule(Ref<hal::Device> device) : device_(std::move(device)) {}
  // Creates the per-context timeline semaphore.
  Status Initialize();

  hal::Device* device() const { return device_.get(); }

  // Runs import `id`. `executables` are the calling module's executables
  // (hal.executable.lookup). Errors carry no location; the interpreter adds
  // function name, offset and import name.
  Status Call(HalImport id, const ImportCall& call,
              const HostVector<Ref<hal::Executable>>& executables);

  // Uploads `size` bytes into a new device-local buffer (allocate_initialized).
  StatusOr<Ref<hal::Buffer>> AllocateInitialized(const uint8_t* data, size_t size);

  // A recording command buffer from the pool, or a new one (2 host
  // allocations, plus pool growth). Released by dropping the reference.
  StatusOr<Ref<CommandBufferState>> AcquireCommandBuffer();
  // Ends, submits, waits, then resets `cb` (it retains nothing afterwards)
  // and marks it submitted. One host wait (stats host_waits). When the wait
  // times out (set_wait_timeout), `cb` stays in the in-flight list, retaining
  // what it uses, until Retire sees it finish.
  Status ExecuteAndWait(CommandBufferState* cb);
  // Ends and submits `cb` without blocking (hal.command_buffer.execute);
  // `cb` stays in the in-flight list until its timepoint is reached. `final`
  // (top-level frame only) attaches the invocation's signal fence when the
  // invocation allows it (BeginInvocation). A persistent `cb` (a
  // recording's) is already ended and is submitted as it is (a replay).
  Status Execute(CommandBufferState* cb, bool final);

  // Starts an invocation. `wait` (semaphore may be null: none) is waited on
  // by every submission until EndInvocation; `signal` (null semaphore:
  // synchronous) is signalled once all of the invocation's device work is
  // done. `attach_signal`: a final execute may carry the signal (false when
  // the runtime itself records work after the program, e.g. output copies).
  void BeginInvocation(hal::SemaphorePoint wait, hal::SemaphorePoint signal, bool attach_signal);
  // Ends the invocation: asynchronous, submits an empty batch signalling the
  // fence unless a final execute carried it (never blocks); synchronous,
  // waits once for the last timepoint (one host wait, none when nothing is
  // pending). Then retires what finished. Also called on error paths so an
  // asynchronous caller's fence is still signalled.
  Status EndInvocation();
  // Polls the timeline and resets finished in-flight command buffers (never
  // blocks). Cost: one semaphore query when anything is in flight.
  Status Retire();
  // Blocks until every submission of this context has completed, then
  // retires them (context release).
  Status WaitIdle();
  size_t in_flight_count() const { return in_flight_.size(); }

  // The byte ranges of the caller's borrowed arguments for the invocation
  // in progress (set by Context::InvokeEx, cleared when it returns). A
  // dispatch that binds any of them at a binding its entry point does not
  // declare read-only is refused (kInvalidArgument): a module may read what
  // the caller lends it, never write it (docs/security.md).
  HostVector<hal::BufferBinding>& borrowed() { return borrowed_; }

  // Bounds every blocking wait of an invocation on the context's timeline
  // (the synchronous end of an invocation, execute_and_wait, staged
  // readback) to `ns` nanoseconds (UINT64_MAX: no limit; the default). Past
  // it the call fails with kDeadlineExceeded; the submitted
  // work stays queued, parked in the in-flight list, and runs once whatever
  // it is queued behind (e.g. an unsignalled wait fence) is done.
  void set_wait_timeout(uint64_t ns) { wait_timeout_ns_ = ns; }
  uint64_t wait_timeout() const { return wait_timeout_ns_; }

  // 0: unlimited. Otherwise an allocation by one of this context's modules
  // that would take the context's live bytes (its allocations not yet
  // freed, wherever they went: results the app holds count too) past it
  // fails with kResourceExhausted. Other contexts on the device have their
  // own budgets.
  void set_device_memory_budget(uint64_t bytes);
  // Every allocation a module makes (hal.allocator.*, buffer_view.take_or_*,
  // cached slots, initializer uploads): checks the budget, allocates
  // `size` bytes of `kind`, and charges them to the context's account.
  // Errors: kResourceExhausted past the budget, the device's allocation
  // errors.
  StatusOr<Ref<hal::Buffer>> AllocateCharged(uint64_t size, hal::MemoryKind kind);
  // Bytes live on the context's account (0 without a budget).
  uint64_t charged_bytes() const { return account_ ? account_->live.load() : 0; }
  // References to `buffer` held by in-flight command buffers (one per
  // command buffer whose commands use it): holders that are queue-ordered
  // before any later submission of this context.
  int32_t InFlightHolders(const hal::Buffer* buffer) const;
  // The context timeline and the value of its last submission (the
  // timepoint a callee's work is ordered after).
  hal::Semaphore* timeline() const { return timeline_.get(); }
  uint64_t timeline_value() const { return timeline_value_; }
  // Required alignment of a binding's absolute offset (bytes; >= 1).
  uint64_t binding_alignment() const;
  size_t command_buffer_pool_size() const { return cb_pool_.size(); }

  // --- Recorded command buffers (vm/replay.h) ---
  // While set, every Execute notes its command buffer and timepoint here
  // (the recording run of a replayable function; `single` turns false at a
  // second submission).
  struct Capture {
    CommandBufferState* cb = nullptr;
    uint64_t value = 0;
    bool single = true;
  };
  void set_capture(Capture* capture) { capture_ = capture; }
  // Marks `cb` persistent (kept by a recording: retirement no longer resets
  // it) and takes it out of the pool.
  void Persist(CommandBufferState* cb);
  // Whether the timepoint `value` may not have been reached yet (polls the
  // timeline once when it is not known reached; never blocks).
  bool Pending(uint64_t value);
  // Stats of the device (null device: none).
  hal::Stats* stats() { return device_ ? &device_->stats() : nullptr; }
  // Drops pooled command buffers (and what they retain); context teardown.
  void ClearPools() { cb_pool_.clear(); }
  // Frees the dispatch and barrier scratch and the command-buffer pool
  // (command buffers still in flight stay alive until retired): all of it
  // grows again on the next invocation. Between invocations only.
  void DropScratch() {
    HostVector<Ref<CommandBufferState>>().swap(cb_pool_);
    HostVector<hal::BufferBinding>().swap(bindings_);
    HostVector<hal::BufferBinding>().swap(borrowed_);
    HostVector<hal::BufferBarrier>().swap(barriers_);
  }

  static constexpr size_t kMaxPooledCommandBuffers = 16;

 private:
  Status RequireDevice() const;
  // Ends and submits `cb` (null: an empty batch) waiting on the invocation's
  // wait fence (queue order orders it after earlier submissions); signals the next timepoint
  // and `extra_signal` when non-null. Never blocks.
  // `ended`: the command buffer was ended before (a recording's, resubmitted).
  Status Submit(hal::CommandBuffer* cb, const hal::SemaphorePoint* extra_signal = nullptr,
                bool ended = false);
  // Blocks (one host wait) until the timeline reaches `value`, at most the
  // wait timeout.
  Status WaitTimeline(uint64_t value);
  // Appends `cb` at `value` to the in-flight list (retiring first when full).
  Status Park(CommandBufferState* cb, uint64_t value);

  Ref<hal::Device> device_;
  HostVector<Ref<CommandBufferState>> cb_pool_;
  Ref<hal::Semaphore> timeline_;
  Ref<hal::Buffer> readback_;  // host-visible, 4 bytes: hal.buffer.load of unmapped memory
  uint64_t timeline_value_ = 0;   // value of the last submission
  uint64_t completed_value_ = 0;  // largest value known reached
  struct InFlight {
    Ref<CommandBufferState> cb;
    uint64_t value = 0;  // its timepoint
  };
  HostVector<InFlight> in_flight_;  // preallocated (kInFlightCapacity)
  static constexpr size_t kInFlightCapacity = 64;
  hal::SemaphorePoint invocation_wait_{};
  hal::SemaphorePoint invocation_signal_{};
  bool attach_signal_ = false;
  bool signal_attached_ = false;
  Capture* capture_ = nullptr;
  HostVector<hal::BufferBinding> bindings_;  // scratch, reused across calls
  uint64_t memory_budget_ = 0;
  Ref<hal::MemoryAccount> account_;  // with a budget only
  uint64_t wait_timeout_ns_ = UINT64_MAX;
  HostVector<hal::BufferBinding> borrowed_;  // (root allocation, absolute offset, length)
  HostVector<hal::BufferBarrier> barriers_;  // scratch, reused across calls
};

}  // namespace kiln::vm

#endif  // KILN_VM_HAL_MODULE_H_
