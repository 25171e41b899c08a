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

struct HalImportInfo {
  HalImport id;
  const char* name;       // "hal.command_buffer.dispatch"
  const char* signature;  // "rriiii*rii_"
  const char* meaning;
};
const std::vector<HalImportInfo>& AllHalImports();
// nullptr when `name` is not a function of the native hal module.
const HalImportInfo* FindHalImport(std::string_view name);

// The register file of one frame. Banks are sized to a power of two and
// every access is masked, so even a verifier bug cannot index out of bounds.
struct Frame {
  std::vector<int32_t> i32;
  std::vector<RefValue> refs;
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
              const std::vector<Ref<hal::Executable>>& executables);

  // Uploads `size` bytes into a new device-local buffer (allocate_initialized).
  StatusOr<Ref<hal::Buffer>> AllocateInitialized(const uint8_t* data, size_t size);

  // A recording command buffer from the pool, or a new one (2 host
  // allocations, plus pool growth). Released by dropping the reference.
  StatusOr<Ref<CommandBufferState>> AcquireCommandBuffer();
  // Ends, submits, waits, then resets `cb` (it retains nothing afterwards)
  // and marks it submitted.
  Status ExecuteAndWait(CommandBufferState* cb);
  // Required alignment of a binding's absolute offset (bytes; >= 1).
  uint64_t binding_alignment() const;
  size_t command_buffer_pool_size() const { return cb_pool_.size(); }
  // Drops pooled command buffers (and what they retain); context teardown.
  void ClearPools() { cb_pool_.clear(); }

  static constexpr size_t kMaxPooledCommandBuffers = 16;

 private:
  Status RequireDevice() const;
  Status Submit(hal::CommandBuffer* cb);

  Ref<hal::Device> device_;
  std::vector<Ref<CommandBufferState>> cb_pool_;
  Ref<hal::Semaphore> timeline_;
  uint64_t timeline_value_ = 0;
  std::vector<hal::BufferBinding> bindings_;  // scratch, reused across calls
  std::vector<hal::BufferBarrier> barriers_;  // scratch, reused across calls
};

}  // namespace kiln::vm

#endif  // KILN_VM_HAL_MODULE_H_
