#include "hal/host/host_device.h"

#include <cstring>
#include <new>

#include "hal/command_checks.h"
#include "hal/vulkan/spirv_layout_check.h"

namespace kiln::hal::host {
namespace {

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

class HostDevice;

class HostBuffer final : public Buffer {
 public:
  static StatusOr<Ref<Buffer>> Allocate(HostDevice* device, uint64_t size, MemoryKind kind);
  static StatusOr<Ref<Buffer>> CreateSubspan(HostBuffer* parent, uint64_t offset,
                                             uint64_t length);

  uint64_t size() const override { return size_; }
  MemoryKind memory_kind() const override { return kind_; }
  Buffer* allocation() override { return root_; }
  uint64_t allocation_offset() const override { return offset_; }
  Status Write(uint64_t offset, const void* data, uint64_t length) override {
    if (!InBounds(offset, length)) {
      return OutOfRangeError("Buffer::Write: range [%llu, +%llu) exceeds buffer of %llu bytes",
                             U(offset), U(length), U(size_));
    }
    if (length) std::memcpy(bytes() + offset, data, length);
    return OkStatus();
  }
  Status Read(uint64_t offset, void* data, uint64_t length) override {
    if (!InBounds(offset, length)) {
      return OutOfRangeError("Buffer::Read: range [%llu, +%llu) exceeds buffer of %llu bytes",
                             U(offset), U(length), U(size_));
    }
    if (length) std::memcpy(data, bytes() + offset, length);
    return OkStatus();
  }

  bool InBounds(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }
  uint8_t* bytes() const { return root_->memory_ + offset_; }
  const HostBuffer* root() const { return root_; }
  HostDevice* device() const { return device_; }

  ~HostBuffer() override;

 private:
  HostBuffer() = default;
  HostDevice* device_ = nullptr;  // retained
  HostBuffer* parent_ = nullptr;  // retained (subspans)
  HostBuffer* root_ = this;
  uint8_t* memory_ = nullptr;     // roots: HostAllocate, 64-byte aligned
  uint64_t allocated_bytes_ = 0;  // roots: size rounded to 16
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
  MemoryKind kind_ = MemoryKind::kDeviceLocal;
};

class HostExecutable final : public Executable {
 public:
  HostExecutable(HostDevice* device, const HostVector<EntryPointInfo>& entry_points,
                 HostVector<uint32_t> invocations);
  ~HostExecutable() override;
  uint32_t entry_point_count() const override {
    return static_cast<uint32_t>(entry_points_.size());
  }
  const EntryPointInfo& entry_point(uint32_t ordinal) const override {
    return entry_points_[ordinal];
  }
  uint32_t invocations(uint32_t ordinal) const { return invocations_[ordinal]; }
  HostDevice* device() const { return device_; }

 private:
  HostDevice* device_;  // retained
  HostVector<EntryPointInfo> entry_points_;
  HostVector<uint32_t> invocations_;  // per workgroup, from the SPIR-V
};

class HostSemaphore final : public Semaphore {
 public:
  HostSemaphore(HostDevice* device, uint64_t value);
  ~HostSemaphore() override;
  StatusOr<uint64_t> Query() override { return payload_; }
  Status Signal(uint64_t value) override;
  Status Wait(uint64_t value, uint64_t timeout_ns) override {
    if (payload_ >= value) return OkStatus();
    return DeadlineExceededError(
        "timeout: semaphore value %llu not reached (payload %llu; the host device runs work "
        "when it is submitted, so nothing pending can raise it)",
        U(value), U(payload_));
  }
  Status WaitUnused(uint64_t timeout_ns) override;

  Status CheckSignalValue(uint64_t value) const {
    if (value <= payload_ || value <= scheduled_) {
      return InvalidArgumentError(
          "semaphore signal to %llu does not advance the timeline (payload %llu, largest "
          "scheduled %llu)",
          U(value), U(payload_), U(scheduled_));
    }
    return OkStatus();
  }
  uint64_t payload() const { return payload_; }
  void Raise(uint64_t value) {
    if (value > payload_) payload_ = value;
  }
  void Schedule(uint64_t value) {
    if (value > scheduled_) scheduled_ = value;
  }

 private:
  HostDevice* device_;  // retained
  uint64_t payload_;
  uint64_t scheduled_;  // largest value a host or queue signal was given
};

class HostCommandBuffer final : public CommandBuffer {
 public:
  explicit HostCommandBuffer(HostDevice* device);
  ~HostCommandBuffer() override;

  Status Dispatch(Executable* executable, uint32_t entry_point, const uint32_t workgroup_count[3],
                  const void* push_constants, uint32_t push_constant_bytes,
                  const BufferBinding* bindings, uint32_t binding_count) override;
  Status Barrier(const BufferBarrier* barriers, uint32_t count) override;
  Status ExecutionBarrier() override;
  // Host memory: nothing to make visible; checks and retains as Barrier.
  Status HostReadBarrier(const BufferBarrier* barriers, uint32_t count) override;
  Status CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                    uint64_t target_offset, uint64_t length) override;
  Status FillBuffer(Buffer* target, uint64_t offset, uint64_t length, uint32_t pattern) override;
  Status End() override;
  Status Reset() override;
  bool Retains(const Buffer* buffer) const override {
    for (const Ref<Buffer>& retained : retained_buffers_) {
      if (retained.get() == buffer) return true;
    }
    return false;
  }

  // Runs the recorded copies and fills on host memory, in order.
  void Execute() const;
  Status CheckSubmittable() const {
    if (ended_ == false) {
      return FailedPreconditionError(
          "QueueExecute: command buffer must be End()ed before submission");
    }
    if (queued_) {
      return FailedPreconditionError(
          "QueueExecute: command buffer is still executing its previous submission");
    }
    return OkStatus();
  }
  void set_queued(bool queued) { queued_ = queued; }

 private:
  struct Command {
    HostBuffer* source = nullptr;  // null: a fill
    HostBuffer* target = nullptr;
    uint64_t source_offset = 0;
    uint64_t target_offset = 0;
    uint64_t length = 0;
    uint32_t pattern = 0;
  };
  Status CheckRecording(const char* op) const {
    if (ended_) {
      return FailedPreconditionError("CommandBuffer::%s: command buffer is not recording "
                                     "(End() was called; Reset() it first)",
                                     op);
    }
    return OkStatus();
  }
  Status CheckBuffer(const char* op, Buffer* buffer) const;
  void RetainBuffer(Buffer* buffer);

  HostDevice* device_;  // retained
  bool ended_ = false;
  bool queued_ = false;  // a submission of it waits in the device's queue
  HostVector<Command> commands_;
  HostVector<Ref<Buffer>> retained_buffers_;
  HostVector<Ref<Executable>> retained_executables_;
};

class HostDevice final : public Device {
 public:
  explicit HostDevice(const HostDeviceOptions& options);
  ~HostDevice() override { pending_.clear(); }

  const DeviceInfo& info() const override { return info_; }
  StatusOr<Ref<Buffer>> AllocateBuffer(uint64_t size, MemoryKind kind) override {
    return HostBuffer::Allocate(this, size, kind);
  }
  StatusOr<Ref<Buffer>> CreateSubspan(Buffer* parent, uint64_t offset, uint64_t length) override {
    if (!parent) return InvalidArgumentError("CreateSubspan: parent buffer is null");
    return HostBuffer::CreateSubspan(static_cast<HostBuffer*>(parent), offset, length);
  }
  StatusOr<Ref<Executable>> CreateExecutable(
      const uint32_t* spirv, size_t word_count,
      const HostVector<EntryPointInfo>& entry_points) override;
  StatusOr<Ref<CommandBuffer>> CreateCommandBuffer() override {
    HostCommandBuffer* cb = new (std::nothrow) HostCommandBuffer(this);
    if (!cb) return ResourceExhaustedError("CreateCommandBuffer: out of host memory");
    return Ref<CommandBuffer>::Adopt(cb);
  }
  StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) override {
    HostSemaphore* semaphore = new (std::nothrow) HostSemaphore(this, initial_value);
    if (!semaphore) return ResourceExhaustedError("CreateSemaphore: out of host memory");
    return Ref<Semaphore>::Adopt(semaphore);
  }
  Status QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits,
                      uint32_t wait_count, const SemaphorePoint* signals,
                      uint32_t signal_count) override;
  Status WaitIdle(uint64_t timeout_ns) override {
    if (pending_.empty()) return OkStatus();
    return DeadlineExceededError(
        "timeout: %llu submissions wait on semaphore values no one has signalled",
        U(pending_.size()));
  }
  Stats& stats() override { return stats_; }

  // Runs queued submissions whose waits are reached, in order (after a host
  // signal).
  void Drain();
  // Whether a queued submission waits on or signals `semaphore`; with
  // `signals_only`, only signals.
  bool Uses(const HostSemaphore* semaphore, bool signals_only) const;
  uint64_t max_allocation_bytes() const { return options_.max_allocation_bytes; }

 private:
  struct Point {
    Ref<HostSemaphore> semaphore;
    uint64_t value = 0;
  };
  struct Submission {
    Ref<HostCommandBuffer> command_buffer;  // may be null
    HostVector<Point> waits;
    HostVector<Point> signals;
  };
  static bool Ready(const Submission& submission);
  static void Run(Submission& submission);

  HostDeviceOptions options_;
  DeviceInfo info_;
  Stats stats_;
  HostVector<Submission> pending_;  // in submission order; the first one is blocked
};

// --- HostBuffer ---------------------------------------------------------------

StatusOr<Ref<Buffer>> HostBuffer::Allocate(HostDevice* device, uint64_t size, MemoryKind kind) {
  if (kind != MemoryKind::kDeviceLocal && kind != MemoryKind::kHostVisible) {
    return InvalidArgumentError("AllocateBuffer: unknown MemoryKind %d", static_cast<int>(kind));
  }
  if (size > device->max_allocation_bytes()) {
    return ResourceExhaustedError(
        "AllocateBuffer: %llu bytes exceeds the host device's largest allocation (%llu bytes)",
        U(size), U(device->max_allocation_bytes()));
  }
  const uint64_t rounded = size == 0 ? 16 : (size + 15) & ~uint64_t{15};
  HostBuffer* self = new (std::nothrow) HostBuffer();
  if (!self) return ResourceExhaustedError("AllocateBuffer: out of host memory");
  device->Retain();
  self->device_ = device;
  self->size_ = size;
  self->kind_ = kind;
  Ref<Buffer> ref = Ref<Buffer>::Adopt(self);
  self->memory_ = static_cast<uint8_t*>(HostAllocate(rounded, 64));
  if (!self->memory_) {
    return ResourceExhaustedError("AllocateBuffer: out of host memory (%llu bytes)", U(rounded));
  }
  std::memset(self->memory_, 0, rounded);
  self->allocated_bytes_ = rounded;
  Stats& stats = device->stats();
  stats.device_allocations += 1;
  stats.device_bytes_allocated += rounded;
  stats.device_bytes_live += rounded;
  if (stats.device_bytes_live > stats.device_peak_bytes) {
    stats.device_peak_bytes = stats.device_bytes_live;
  }
  return ref;
}

StatusOr<Ref<Buffer>> HostBuffer::CreateSubspan(HostBuffer* parent, uint64_t offset,
                                                uint64_t length) {
  if (!parent->InBounds(offset, length)) {
    return OutOfRangeError("CreateSubspan: range [%llu, +%llu) exceeds parent buffer of %llu bytes",
                           U(offset), U(length), U(parent->size()));
  }
  HostBuffer* self = new (std::nothrow) HostBuffer();
  if (!self) return ResourceExhaustedError("CreateSubspan: out of host memory");
  parent->device_->Retain();
  parent->Retain();
  self->device_ = parent->device_;
  self->parent_ = parent;
  self->root_ = parent->root_;
  self->offset_ = parent->offset_ + offset;
  self->size_ = length;
  self->kind_ = parent->kind_;
  return Ref<Buffer>::Adopt(self);
}

HostBuffer::~HostBuffer() {
  if (parent_) {
    parent_->Release();
  } else {
    HostFree(memory_);
    if (allocated_bytes_) device_->stats().device_bytes_live -= allocated_bytes_;
  }
  if (device_) device_->Release();
}

// --- HostExecutable -----------------------------------------------------------

HostExecutable::HostExecutable(HostDevice* device, const HostVector<EntryPointInfo>& entry_points,
                               HostVector<uint32_t> invocations)
    : device_(device), entry_points_(entry_points), invocations_(std::move(invocations)) {
  device_->Retain();
}

HostExecutable::~HostExecutable() { device_->Release(); }

// --- HostSemaphore ------------------------------------------------------------

HostSemaphore::HostSemaphore(HostDevice* device, uint64_t value)
    : device_(device), payload_(value), scheduled_(value) {
  device_->Retain();
}

HostSemaphore::~HostSemaphore() { device_->Release(); }

Status HostSemaphore::Signal(uint64_t value) {
  KILN_RETURN_IF_ERROR(CheckSignalValue(value));
  if (device_->Uses(this, /*signals_only=*/true)) {
    return FailedPreconditionError(
        "semaphore host signal to %llu while a queue signal is pending (payload %llu)", U(value),
        U(payload_));
  }
  payload_ = value;
  scheduled_ = value;
  device_->Drain();
  return OkStatus();
}

Status HostSemaphore::WaitUnused(uint64_t timeout_ns) {
  if (!device_->Uses(this, /*signals_only=*/false)) return OkStatus();
  return DeadlineExceededError("timeout: a queued submission still uses the semaphore");
}

// --- HostCommandBuffer --------------------------------------------------------

HostCommandBuffer::HostCommandBuffer(HostDevice* device) : device_(device) { device_->Retain(); }

HostCommandBuffer::~HostCommandBuffer() {
  retained_buffers_.clear();
  retained_executables_.clear();
  device_->Release();
}

Status HostCommandBuffer::CheckBuffer(const char* op, Buffer* buffer) const {
  if (!buffer) return InvalidArgumentError("CommandBuffer::%s: buffer is null", op);
  if (static_cast<HostBuffer*>(buffer)->device() != device_) {
    return InvalidArgumentError("CommandBuffer::%s: buffer belongs to another device", op);
  }
  return OkStatus();
}

void HostCommandBuffer::RetainBuffer(Buffer* buffer) {
  for (size_t i = retained_buffers_.size(); i-- > 0;) {
    if (retained_buffers_[i].get() == buffer) return;
  }
  retained_buffers_.push_back(Ref<Buffer>::Retain(buffer));
}

Status HostCommandBuffer::Dispatch(Executable* executable, uint32_t entry_point,
                                   const uint32_t workgroup_count[3], const void* push_constants,
                                   uint32_t push_constant_bytes, const BufferBinding* bindings,
                                   uint32_t binding_count) {
  KILN_RETURN_IF_ERROR(CheckRecording("Dispatch"));
  if (!executable) return InvalidArgumentError("Dispatch: executable is null");
  HostExecutable* host_executable = static_cast<HostExecutable*>(executable);
  if (host_executable->device() != device_) {
    return InvalidArgumentError("Dispatch: executable belongs to another device");
  }
  if (entry_point >= host_executable->entry_point_count()) {
    return InvalidArgumentError("Dispatch: entry point %u out of range (executable has %u)",
                                entry_point, host_executable->entry_point_count());
  }
  const EntryPointInfo& info = host_executable->entry_point(entry_point);
  const DeviceInfo& limits = device_->info();
  KILN_RETURN_IF_ERROR(CheckDispatch(info, host_executable->invocations(entry_point), limits,
                                     workgroup_count, push_constants, push_constant_bytes,
                                     bindings, binding_count));
  for (uint32_t i = 0; i < binding_count; ++i) {
    KILN_RETURN_IF_ERROR(CheckBuffer("Dispatch", bindings[i].buffer));
    KILN_RETURN_IF_ERROR(CheckBinding(info, i, limits, bindings[i]).status());
  }
  bool retained = false;
  for (const Ref<Executable>& r : retained_executables_) retained |= r.get() == executable;
  if (!retained) retained_executables_.push_back(Ref<Executable>::Retain(executable));
  for (uint32_t i = 0; i < binding_count; ++i) RetainBuffer(bindings[i].buffer);
  ++device_->stats().dispatches;
  return OkStatus();
}

Status HostCommandBuffer::Barrier(const BufferBarrier* barriers, uint32_t count) {
  KILN_RETURN_IF_ERROR(HostReadBarrier(barriers, count));
  if (count) ++device_->stats().barriers;
  return OkStatus();
}

Status HostCommandBuffer::HostReadBarrier(const BufferBarrier* barriers, uint32_t count) {
  KILN_RETURN_IF_ERROR(CheckRecording("Barrier"));
  if (count == 0) return OkStatus();
  if (!barriers) return InvalidArgumentError("Barrier: barriers is null");
  for (uint32_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(CheckBuffer("Barrier", barriers[i].buffer));
    KILN_ASSIGN_OR_RETURN(uint64_t length, CheckBarrierRange(i, *barriers[i].buffer,
                                                             barriers[i].offset,
                                                             barriers[i].length));
    if (length) RetainBuffer(barriers[i].buffer);
  }
  return OkStatus();
}

Status HostCommandBuffer::ExecutionBarrier() {
  KILN_RETURN_IF_ERROR(CheckRecording("ExecutionBarrier"));
  ++device_->stats().barriers;
  return OkStatus();
}

Status HostCommandBuffer::CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                                     uint64_t target_offset, uint64_t length) {
  KILN_RETURN_IF_ERROR(CheckRecording("CopyBuffer"));
  KILN_RETURN_IF_ERROR(CheckBuffer("CopyBuffer", source));
  KILN_RETURN_IF_ERROR(CheckBuffer("CopyBuffer", target));
  HostBuffer* src = static_cast<HostBuffer*>(source);
  HostBuffer* dst = static_cast<HostBuffer*>(target);
  KILN_RETURN_IF_ERROR(CheckCopy(*src, source_offset, *dst, target_offset, length));
  if (length == 0) return OkStatus();
  commands_.push_back(Command{src, dst, source_offset, target_offset, length, 0});
  RetainBuffer(source);
  RetainBuffer(target);
  Stats& stats = device_->stats();
  ++stats.copies;
  stats.copy_bytes += length;
  return OkStatus();
}

Status HostCommandBuffer::FillBuffer(Buffer* target, uint64_t offset, uint64_t length,
                                     uint32_t pattern) {
  KILN_RETURN_IF_ERROR(CheckRecording("FillBuffer"));
  KILN_RETURN_IF_ERROR(CheckBuffer("FillBuffer", target));
  HostBuffer* dst = static_cast<HostBuffer*>(target);
  KILN_RETURN_IF_ERROR(CheckFill(*dst, offset, length));
  if (length == 0) return OkStatus();
  commands_.push_back(Command{nullptr, dst, 0, offset, length, pattern});
  RetainBuffer(target);
  ++device_->stats().fills;
  return OkStatus();
}

Status HostCommandBuffer::End() {
  KILN_RETURN_IF_ERROR(CheckRecording("End"));
  ended_ = true;
  return OkStatus();
}

Status HostCommandBuffer::Reset() {
  if (queued_) {
    return FailedPreconditionError(
        "CommandBuffer::Reset: command buffer is still executing (wait for its signal first)");
  }
  for (Ref<Buffer>& buffer : retained_buffers_) {
    if (buffer->refcount() == 1) ++device_->stats().deferred_frees;
    buffer.reset();
  }
  retained_buffers_.clear();
  retained_executables_.clear();
  commands_.clear();
  ended_ = false;
  return OkStatus();
}

void HostCommandBuffer::Execute() const {
  for (const Command& c : commands_) {
    uint8_t* target = c.target->bytes() + c.target_offset;
    if (c.source) {
      std::memmove(target, c.source->bytes() + c.source_offset, c.length);
    } else {
      for (uint64_t i = 0; i < c.length; i += 4) std::memcpy(target + i, &c.pattern, 4);
    }
  }
}

// --- HostDevice ---------------------------------------------------------------

HostDevice::HostDevice(const HostDeviceOptions& options) : options_(options) {
  info_.name = "host";
  info_.driver = "host";
  info_.unified_memory = true;
  if (options.shader_float16) info_.features.push_back(HostString("shaderFloat16"));
  info_.max_storage_buffer_range = options.max_allocation_bytes;
  info_.min_storage_buffer_offset_alignment = 16;
  info_.max_push_constants_size = 128;
  info_.max_bound_storage_buffers = 64;
  info_.max_bound_texel_buffers = 64;
  info_.min_texel_buffer_offset_alignment = 16;
  info_.max_texel_buffer_elements = 1u << 27;
  info_.max_compute_workgroup_invocations = 1024;
  for (int d = 0; d < 3; ++d) {
    info_.max_compute_workgroup_size[d] = 1024;
    info_.max_compute_workgroup_count[d] = 65535;
  }
}

StatusOr<Ref<Executable>> HostDevice::CreateExecutable(
    const uint32_t* spirv, size_t word_count, const HostVector<EntryPointInfo>& entry_points) {
  if (!spirv) return InvalidArgumentError("CreateExecutable: spirv is null");
  if (entry_points.empty()) return InvalidArgumentError("CreateExecutable: no entry points");
  HostVector<uint32_t> invocations;
  KILN_RETURN_IF_ERROR(vulkan::CheckSpirvLayout(spirv, word_count, entry_points,
                                                vulkan::SpirvLimits(info_), &invocations));
  KILN_RETURN_IF_ERROR(CheckEntryPointLimits(entry_points, info_));
  HostExecutable* executable =
      new (std::nothrow) HostExecutable(this, entry_points, std::move(invocations));
  if (!executable) return ResourceExhaustedError("CreateExecutable: out of host memory");
  return Ref<Executable>::Adopt(executable);
}

bool HostDevice::Ready(const Submission& submission) {
  for (const Point& wait : submission.waits) {
    if (wait.semaphore->payload() < wait.value) return false;
  }
  return true;
}

void HostDevice::Run(Submission& submission) {
  if (submission.command_buffer) {
    submission.command_buffer->Execute();
    submission.command_buffer->set_queued(false);
  }
  for (const Point& signal : submission.signals) signal.semaphore->Raise(signal.value);
}

Status HostDevice::QueueExecute(CommandBuffer* command_buffer, const SemaphorePoint* waits,
                                uint32_t wait_count, const SemaphorePoint* signals,
                                uint32_t signal_count) {
  KILN_RETURN_IF_ERROR(CheckSubmission(waits, wait_count, signals, signal_count));
  HostCommandBuffer* cb = static_cast<HostCommandBuffer*>(command_buffer);
  if (cb) KILN_RETURN_IF_ERROR(cb->CheckSubmittable());
  for (uint32_t i = 0; i < signal_count; ++i) {
    KILN_RETURN_IF_ERROR(
        static_cast<HostSemaphore*>(signals[i].semaphore)->CheckSignalValue(signals[i].value));
  }
  ++stats_.submissions;
  bool ready = pending_.empty();
  for (uint32_t i = 0; ready && i < wait_count; ++i) {
    ready = static_cast<HostSemaphore*>(waits[i].semaphore)->payload() >= waits[i].value;
  }
  if (ready) {  // the common case: run now, no allocation
    if (cb) cb->Execute();
    for (uint32_t i = 0; i < signal_count; ++i) {
      HostSemaphore* semaphore = static_cast<HostSemaphore*>(signals[i].semaphore);
      semaphore->Schedule(signals[i].value);
      semaphore->Raise(signals[i].value);
    }
    return OkStatus();
  }
  Submission submission;
  submission.command_buffer = Ref<HostCommandBuffer>::Retain(cb);
  for (uint32_t i = 0; i < wait_count; ++i) {
    submission.waits.push_back(
        Point{Ref<HostSemaphore>::Retain(static_cast<HostSemaphore*>(waits[i].semaphore)),
              waits[i].value});
  }
  for (uint32_t i = 0; i < signal_count; ++i) {
    HostSemaphore* semaphore = static_cast<HostSemaphore*>(signals[i].semaphore);
    semaphore->Schedule(signals[i].value);
    submission.signals.push_back(Point{Ref<HostSemaphore>::Retain(semaphore), signals[i].value});
  }
  if (cb) cb->set_queued(true);
  pending_.push_back(std::move(submission));
  return OkStatus();
}

void HostDevice::Drain() {
  size_t done = 0;
  while (done < pending_.size() && Ready(pending_[done])) Run(pending_[done++]);
  if (done) pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(done));
}

bool HostDevice::Uses(const HostSemaphore* semaphore, bool signals_only) const {
  for (const Submission& submission : pending_) {
    for (const Point& signal : submission.signals) {
      if (signal.semaphore.get() == semaphore) return true;
    }
    if (signals_only) continue;
    for (const Point& wait : submission.waits) {
      if (wait.semaphore.get() == semaphore) return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<Ref<Device>> CreateHostDevice(const HostDeviceOptions& options) {
  HostDevice* device = new (std::nothrow) HostDevice(options);
  if (!device) return ResourceExhaustedError("CreateHostDevice: out of host memory");
  return Ref<Device>::Adopt(device);
}

}  // namespace kiln::hal::host
