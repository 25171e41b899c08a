#include "hal/profiling/dispatch_timing_device.h"

#include <algorithm>
#include <new>

namespace kiln::hal {

// The command buffer DispatchTimingDevice hands out (see the header).
class TimingCommandBuffer final : public CommandBuffer {
 public:
  TimingCommandBuffer(DispatchTimingDevice* device, Ref<CommandBuffer> inner)
      : device_(Ref<DispatchTimingDevice>::Retain(device)), inner_(std::move(inner)) {}
  ~TimingCommandBuffer() override {
    // Unread timings die with the command buffer; the device forgets it.
    auto& list = device_->submitted_;
    list.erase(std::remove(list.begin(), list.end(), this), list.end());
  }

  CommandBuffer* inner() const { return inner_.get(); }

  Status Dispatch(Executable* executable, uint32_t entry_point, const uint32_t workgroup_count[3],
                  const void* push_constants, uint32_t push_constant_bytes,
                  const BufferBinding* bindings, uint32_t binding_count) override {
    KILN_RETURN_IF_ERROR(ReadPending());  // a replayed buffer being re-recorded
    const size_t slot = records_.size();
    const size_t pool_index = slot / kPairsPerPool;
    const uint32_t query = static_cast<uint32_t>(2 * (slot % kPairsPerPool));
    if (pool_index == pools_.size()) {
      KILN_ASSIGN_OR_RETURN(Ref<QueryPool> pool,
                            device_->inner()->CreateTimestampQueryPool(2 * kPairsPerPool));
      pools_.push_back(std::move(pool));
    }
    QueryPool* pool = pools_[pool_index].get();
    KILN_RETURN_IF_ERROR(inner_->ResetQueries(pool, query, 2));
    KILN_RETURN_IF_ERROR(inner_->WriteTimestamp(pool, query));
    KILN_RETURN_IF_ERROR(inner_->Dispatch(executable, entry_point, workgroup_count, push_constants,
                                          push_constant_bytes, bindings, binding_count));
    KILN_RETURN_IF_ERROR(inner_->WriteTimestamp(pool, query + 1));
    Record r;
    r.executable = Ref<Executable>::Retain(executable);
    r.entry_point = entry_point;
    for (int i = 0; i < 3; ++i) r.workgroup_count[i] = workgroup_count[i];
    records_.push_back(std::move(r));
    return OkStatus();
  }
  Status Barrier(const BufferBarrier* barriers, uint32_t count) override {
    return inner_->Barrier(barriers, count);
  }
  Status ExecutionBarrier() override { return inner_->ExecutionBarrier(); }
  Status HostReadBarrier(const BufferBarrier* barriers, uint32_t count) override {
    return inner_->HostReadBarrier(barriers, count);
  }
  Status CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                    uint64_t target_offset, uint64_t length) override {
    return inner_->CopyBuffer(source, source_offset, target, target_offset, length);
  }
  Status FillBuffer(Buffer* target, uint64_t offset, uint64_t length, uint32_t pattern) override {
    return inner_->FillBuffer(target, offset, length, pattern);
  }
  Status End() override { return inner_->End(); }
  Status Reset() override {
    // Reset is only legal once the last submission completed: read it first.
    Status read = ReadPending();
    Status reset = inner_->Reset();
    records_.clear();
    if (!read.ok()) return read;
    return reset;
  }
  bool Retains(const Buffer* buffer) const override { return inner_->Retains(buffer); }
  Status ResetQueries(QueryPool* pool, uint32_t first, uint32_t count) override {
    return inner_->ResetQueries(pool, first, count);
  }
  Status WriteTimestamp(QueryPool* pool, uint32_t index) override {
    return inner_->WriteTimestamp(pool, index);
  }

  // Called by QueueExecute before submitting: reads the previous
  // submission's timings (it has completed, or the inner submit fails).
  Status NoteSubmit(uint64_t submission) {
    KILN_RETURN_IF_ERROR(ReadPending());
    pending_submission_ = submission;
    return OkStatus();
  }
  void CancelSubmit() { pending_submission_ = 0; }

  // Appends the timings of the last submission to the device (no blocking:
  // kFailedPrecondition when they are not available yet).
  Status ReadPending() {
    if (!pending_submission_) return OkStatus();
    const uint64_t submission = pending_submission_;
    pending_submission_ = 0;
    const DeviceInfo& info = device_->inner()->info();
    for (size_t slot = 0; slot < records_.size(); ++slot) {
      uint64_t ticks[2];
      KILN_RETURN_IF_ERROR(pools_[slot / kPairsPerPool]->ReadTimestamps(
          static_cast<uint32_t>(2 * (slot % kPairsPerPool)), 2, ticks));
      const Record& r = records_[slot];
      DispatchTiming t;
      t.submission = submission;
      t.index = static_cast<uint32_t>(slot);
      t.executable = r.executable;
      t.entry_point = r.entry_point;
      for (int i = 0; i < 3; ++i) t.workgroup_count[i] = r.workgroup_count[i];
      t.ns = TimestampDeltaNs(ticks[0], ticks[1], info.timestamp_valid_bits,
                              info.timestamp_period_ns);
      device_->timings_.push_back(std::move(t));
    }
    return OkStatus();
  }

 private:
  static constexpr size_t kPairsPerPool = 256;
  struct Record {
    Ref<Executable> executable;
    uint32_t entry_point = 0;
    uint32_t workgroup_count[3] = {0, 0, 0};
  };
  // The device outlives its command buffers; its submitted_ list names this
  // one (unretained) until Collect or this destructor.
  Ref<DispatchTimingDevice> device_;
  Ref<CommandBuffer> inner_;
  std::vector<Ref<QueryPool>> pools_;  // kPairsPerPool begin/end pairs each
  std::vector<Record> records_;        // dispatches recorded since the last Reset
  uint64_t pending_submission_ = 0;    // submission whose timings are unread (0: none)
};

StatusOr<Ref<DispatchTimingDevice>> DispatchTimingDevice::Create(Ref<Device> inner) {
  if (!inner) return InvalidArgumentError("DispatchTimingDevice: no device to wrap");
  if (inner->info().timestamp_valid_bits == 0) {
    return UnimplementedError(
        "device '%s' cannot time dispatches: its compute queue has no timestamp queries "
        "(timestampValidBits 0)",
        inner->info().name.c_str());
  }
  // Fails early (and clearly) where the driver cannot create a pool.
  KILN_ASSIGN_OR_RETURN(Ref<QueryPool> probe, inner->CreateTimestampQueryPool(2));
  (void)probe;
  auto* device = new (std::nothrow) DispatchTimingDevice(std::move(inner));
  if (!device) return ResourceExhaustedError("DispatchTimingDevice: out of host memory");
  return Ref<DispatchTimingDevice>::Adopt(device);
}

StatusOr<Ref<Executable>> DispatchTimingDevice::CreateExecutable(
    const uint32_t* spirv, size_t word_count, const HostVector<EntryPointInfo>& entry_points) {
  KILN_ASSIGN_OR_RETURN(Ref<Executable> executable,
                        inner_->CreateExecutable(spirv, word_count, entry_points));
  created_.push_back(CreatedExecutable{spirv, word_count, executable.get()});
  return executable;
}

StatusOr<Ref<CommandBuffer>> DispatchTimingDevice::CreateCommandBuffer() {
  KILN_ASSIGN_OR_RETURN(Ref<CommandBuffer> inner, inner_->CreateCommandBuffer());
  auto* cb = new (std::nothrow) TimingCommandBuffer(this, std::move(inner));
  if (!cb) return ResourceExhaustedError("DispatchTimingDevice: out of host memory");
  return Ref<CommandBuffer>(Ref<TimingCommandBuffer>::Adopt(cb));
}

Status DispatchTimingDevice::QueueExecute(CommandBuffer* command_buffer,
                                          const SemaphorePoint* waits, uint32_t wait_count,
                                          const SemaphorePoint* signals, uint32_t signal_count) {
  if (!command_buffer) {
    return inner_->QueueExecute(nullptr, waits, wait_count, signals, signal_count);
  }
  auto* cb = static_cast<TimingCommandBuffer*>(command_buffer);
  KILN_RETURN_IF_ERROR(cb->NoteSubmit(submissions_ + 1));
  Status status = inner_->QueueExecute(cb->inner(), waits, wait_count, signals, signal_count);
  if (!status.ok()) {
    cb->CancelSubmit();
    return status;
  }
  ++submissions_;
  if (std::find(submitted_.begin(), submitted_.end(), cb) == submitted_.end()) {
    submitted_.push_back(cb);
  }
  return OkStatus();
}

Status DispatchTimingDevice::Collect(std::vector<DispatchTiming>* out) {
  KILN_RETURN_IF_ERROR(inner_->WaitIdle());
  Status status;
  for (TimingCommandBuffer* cb : submitted_) {
    Status s = cb->ReadPending();
    if (status.ok() && !s.ok()) status = s;
  }
  submitted_.clear();
  std::sort(timings_.begin(), timings_.end(), [](const DispatchTiming& a, const DispatchTiming& b) {
    return a.submission != b.submission ? a.submission < b.submission : a.index < b.index;
  });
  for (DispatchTiming& t : timings_) out->push_back(std::move(t));
  timings_.clear();
  return status;
}

}  // namespace kiln::hal
