// DispatchTimingDevice: a hal::Device decorator that times every compute
// dispatch on the GPU with timestamp queries (hal::QueryPool). Profiling
// only (kiln-bench --per-dispatch): the runtime never links it, so the
// normal invoke path pays nothing for it.
//
// Every call is forwarded to the wrapped device. Command buffers it creates
// wrap the inner ones; around each Dispatch they record
//   ResetQueries(pair) ; WriteTimestamp(begin) ; Dispatch ; WriteTimestamp(end)
// into per-command-buffer query pools (created on demand, kept across Reset).
// A timestamp is taken once every earlier command has completed (see
// CommandBuffer::WriteTimestamp), so end - begin is the time the dispatch
// added to the queue: on a GPU that overlaps independent dispatches, the
// part of it not hidden behind earlier work. Ticks become nanoseconds with
// the device's timestamp_period_ns, modulo 2^timestamp_valid_bits.
//
// Results are read back (never blocking) when the work is known complete:
// when a command buffer is Reset or resubmitted after its submission retired,
// and by Collect(), which waits for the device to go idle first. So command
// buffers that are recorded once and replayed are timed on every submission.
//
// Contract: command buffers passed to QueueExecute must come from this
// device's CreateCommandBuffer (they are unwrapped by static cast).
// Threading and ownership: those of hal::Device; the decorator retains the
// wrapped device.
#ifndef KILN_HAL_PROFILING_DISPATCH_TIMING_DEVICE_H_
#define KILN_HAL_PROFILING_DISPATCH_TIMING_DEVICE_H_

#include <cstdint>
#include <vector>

#include "hal/api.h"

namespace kiln::hal {

class TimingCommandBuffer;

// One timed dispatch.
struct DispatchTiming {
  uint64_t submission = 0;     // ordinal of the QueueExecute that ran it (1-based)
  uint32_t index = 0;          // dispatch ordinal inside its command buffer
  Ref<Executable> executable;  // as passed to Dispatch
  uint32_t entry_point = 0;
  uint32_t workgroup_count[3] = {0, 0, 0};
  double ns = 0;               // GPU time, nanoseconds
};

// A created executable and the SPIR-V it was created from (pointer identity:
// the VM passes pointers into the module's FlatBuffer, so a tool can map an
// executable back to the module's executable index and its debug info).
struct CreatedExecutable {
  const uint32_t* spirv = nullptr;  // borrowed; the caller's pointer
  size_t word_count = 0;
  Executable* executable = nullptr;  // borrowed: valid while its creator (the context) holds it
};

class DispatchTimingDevice final : public Device {
 public:
  // Wraps `inner`. Errors: kUnimplemented when `inner` has no timestamp
  // queries (its message says so), and errors of creating a first pool.
  static StatusOr<Ref<DispatchTimingDevice>> Create(Ref<Device> inner);

  Device* inner() const { return inner_.get(); }

  // Waits for the device to go idle, reads every timing not yet read, and
  // moves all timings gathered since the last call into *out (appended),
  // sorted by (submission, index).
  Status Collect(std::vector<DispatchTiming>* out);

  // Every executable created through this device, in creation order.
  const std::vector<CreatedExecutable>& created_executables() const { return created_; }

  // hal::Device: forwarded to the wrapped device.
  const DeviceInfo& info() const override { return inner_->info(); }
  StatusOr<Ref<Buffer>> AllocateBuffer(uint64_t size, MemoryKind kind) override {
    return inner_->AllocateBuffer(size, kind);
  }
  StatusOr<Ref<Buffer>> CreateSubspan(Buffer* parent, uint64_t offset, uint64_t length) override {
    return inner_->CreateSubspan(parent, offset, length);
  }
  StatusOr<Ref<Executable>> CreateExecutable(const uint32_t* spirv, size_t word_count,
                                             const HostVector<EntryPointInfo>& entry_points) override;
  // A timing command buffer wrapping one of the inner device.
  StatusOr<Ref<CommandBuffer>> CreateCommandBuffer() override;
  StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) override {
    return inner_->CreateSemaphore(initial_value);
  }
  Status QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits,
                      uint32_t wait_count, const SemaphorePoint* signals,
                      uint32_t signal_count) override;
  Status WaitIdle(uint64_t timeout_ns = UINT64_MAX) override { return inner_->WaitIdle(timeout_ns); }
  Stats& stats() override { return inner_->stats(); }
  StatusOr<Ref<QueryPool>> CreateTimestampQueryPool(uint32_t count) override {
    return inner_->CreateTimestampQueryPool(count);
  }

 private:
  friend class TimingCommandBuffer;
  explicit DispatchTimingDevice(Ref<Device> inner) : inner_(std::move(inner)) {}

  Ref<Device> inner_;
  uint64_t submissions_ = 0;
  std::vector<DispatchTiming> timings_;        // read, not yet collected
  // Submitted command buffers, not retained (each removes itself when
  // destroyed; it retains this device), whose timings may be unread.
  std::vector<TimingCommandBuffer*> submitted_;
  std::vector<CreatedExecutable> created_;
};

}  // namespace kiln::hal

#endif  // KILN_HAL_PROFILING_DISPATCH_TIMING_DEVICE_H_
