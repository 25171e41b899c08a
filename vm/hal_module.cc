#include "vm/hal_module.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "vm/staged_copy.h"

namespace kiln::vm {

namespace {
constexpr HalImportInfo kHalImports[] = {
#define KILN_HAL_IMPORT(symbol, name, signature, meaning) {HalImport::symbol, name, signature},
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
};
}  // namespace

const HalImportInfo* FindHalImport(std::string_view name) {
  for (const HalImportInfo& info : kHalImports) {
    if (name == info.name) return &info;
  }
  return nullptr;
}

const char* HalImportMeaning(HalImport id) {
  switch (id) {
#define KILN_HAL_IMPORT(symbol, name, signature, meaning) \
  case HalImport::symbol:                                 \
    return meaning;
#include "vm/hal_imports.def"
#undef KILN_HAL_IMPORT
    case HalImport::kCount:
      break;
  }
  return "";
}

namespace {

// A buffer operand resolved to (hal buffer, base offset, visible size).
struct BufferArg {
  hal::Buffer* buffer = nullptr;
  uint64_t base = 0;
  uint64_t size = 0;
};

Status ResolveBuffer(const RefValue& v, const char* what, BufferArg* out) {
  switch (v.type()) {
    case RefType::kBuffer: {
      auto* b = v.as<hal::Buffer>();
      *out = BufferArg{b, 0, b->size()};
      return OkStatus();
    }
    case RefType::kBufferView: {
      auto* view = v.as<BufferView>();
      *out = BufferArg{view->buffer(), view->byte_offset(), view->byte_length()};
      return OkStatus();
    }
    default:
      return InvalidArgumentError("%s: expected a buffer or buffer view, got %s", what,
                                  RefTypeName(v.type()));
  }
}

// Checks 0 <= offset, 0 <= length, offset + length <= arg.size.
Status CheckRange(const BufferArg& arg, int32_t offset, int32_t length, const char* what) {
  if (offset < 0 || length < 0) {
    return InvalidArgumentError("%s: negative offset %d or length %d", what, offset, length);
  }
  if (static_cast<uint64_t>(offset) + static_cast<uint64_t>(length) > arg.size) {
    return OutOfRangeError("%s: range [%d, %lld) exceeds the buffer's %llu bytes", what, offset,
                           static_cast<long long>(offset) + length,
                           static_cast<unsigned long long>(arg.size));
  }
  return OkStatus();
}

Status GetCommandBuffer(const RefValue& v, CommandBufferState** out) {
  if (v.type() != RefType::kCommandBuffer) {
    return InvalidArgumentError("expected a command buffer, got %s", RefTypeName(v.type()));
  }
  *out = v.as<CommandBufferState>();
  if ((*out)->submitted) {
    return FailedPreconditionError("command buffer was already submitted");
  }
  return OkStatus();
}

}  // namespace

Status HalModule::Initialize() {
  if (!device_) return OkStatus();
  KILN_ASSIGN_OR_RETURN(timeline_, device_->CreateSemaphore(0));
  in_flight_.reserve(kInFlightCapacity);
  return OkStatus();
}

Status HalModule::RequireDevice() const {
  if (!device_) return FailedPreconditionError("the context has no device");
  return OkStatus();
}

Status HalModule::Submit(hal::CommandBuffer* cb, const hal::SemaphorePoint* extra_signal,
                         bool ended) {
  if (cb && !ended) KILN_RETURN_IF_ERROR(cb->End());
  hal::SemaphorePoint waits[1];
  uint32_t wait_count = 0;
  if (invocation_wait_.semaphore) waits[wait_count++] = invocation_wait_;
  // No wait on the previous timepoint: submissions of a context go to one
  // queue in order, and every command buffer begins with a full barrier
  // (vulkan_command_buffer.h), so each submission is already ordered after
  // everything submitted before it (a callee's work after its caller's
  // flush); an empty signal batch's signal covers all earlier submissions.
  // (A batch waiting on and signalling the same timeline semaphore also made
  // lavapipe 22.3 leak under LSan.)
  hal::SemaphorePoint signals[2] = {{timeline_.get(), timeline_value_ + 1}, {}};
  uint32_t signal_count = 1;
  if (extra_signal) signals[signal_count++] = *extra_signal;
  KILN_RETURN_IF_ERROR(device_->QueueExecute(cb, waits, wait_count, signals, signal_count));
  ++timeline_value_;
  return OkStatus();
}

Status HalModule::WaitTimeline(uint64_t value) {
  ++device_->stats().host_waits;
  Status s = timeline_->Wait(value, wait_timeout_ns_);
  if (!s.ok()) {
    if (wait_timeout_ns_ == UINT64_MAX || s.code() != StatusCode::kDeadlineExceeded) return s;
    return DeadlineExceededError(
        "timeout: the context's device work did not finish within its wait timeout of %llu ns "
        "(queued behind a wait fence not signalled yet?); it stays queued",
        static_cast<unsigned long long>(wait_timeout_ns_));
  }
  completed_value_ = std::max(completed_value_, value);
  return OkStatus();
}

Status HalModule::Park(CommandBufferState* cb, uint64_t value) {
  if (in_flight_.size() == in_flight_.capacity()) {
    KILN_RETURN_IF_ERROR(Retire());
    if (in_flight_.size() == in_flight_.capacity()) CountHostAllocation();
  }
  in_flight_.push_back(InFlight{Ref<CommandBufferState>::Retain(cb), value});
  return OkStatus();
}

Status HalModule::Execute(CommandBufferState* cb, bool final) {
  cb->submitted = true;
  const hal::SemaphorePoint* signal = nullptr;
  if (final && attach_signal_ && !signal_attached_ && invocation_signal_.semaphore) {
    signal = &invocation_signal_;
  }
  // A persistent (recorded) command buffer is already ended: resubmitted.
  KILN_RETURN_IF_ERROR(Submit(cb->command_buffer.get(), signal, cb->persistent));
  if (signal) signal_attached_ = true;
  KILN_RETURN_IF_ERROR(Park(cb, timeline_value_));
  if (capture_) {
    if (capture_->cb) capture_->single = false;  // a second submission: not replayable
    capture_->cb = cb;
    capture_->value = timeline_value_;
  }
  return OkStatus();
}

void HalModule::Persist(CommandBufferState* cb) {
  cb->persistent = true;
  for (size_t i = 0; i < cb_pool_.size(); ++i) {
    if (cb_pool_[i].get() != cb) continue;
    cb_pool_.erase(cb_pool_.begin() + static_cast<std::ptrdiff_t>(i));
    break;
  }
}

bool HalModule::Pending(uint64_t value) {
  if (value <= completed_value_) return false;
  StatusOr<uint64_t> reached = timeline_->Query();
  if (reached.ok()) completed_value_ = std::max(completed_value_, reached.value());
  return value > completed_value_;
}

void HalModule::BeginInvocation(hal::SemaphorePoint wait, hal::SemaphorePoint signal,
                                bool attach_signal) {
  invocation_wait_ = wait;
  invocation_signal_ = signal;
  attach_signal_ = attach_signal;
  signal_attached_ = false;
}

Status HalModule::EndInvocation() {
  Status status;
  if (device_) {
    if (invocation_signal_.semaphore) {
      if (!signal_attached_) {
        // No final execute carried the signal: an empty batch after all of
        // the invocation's work (it waits on the wait fence too, so the
        // signal never overtakes it even when nothing was submitted).
        status = Submit(nullptr, &invocation_signal_);
      }
    } else if (timeline_value_ > completed_value_) {
      status = WaitTimeline(timeline_value_);
    }
  }
  invocation_wait_ = {};
  invocation_signal_ = {};
  attach_signal_ = signal_attached_ = false;
  if (!status.ok()) return status;
  return Retire();
}

Status HalModule::Retire() {
  if (in_flight_.empty()) return OkStatus();
  if (completed_value_ < in_flight_.back().value) {
    KILN_ASSIGN_OR_RETURN(uint64_t reached, timeline_->Query());
    completed_value_ = std::max(completed_value_, reached);
  }
  size_t kept = 0;
  Status status;
  for (size_t i = 0; i < in_flight_.size(); ++i) {
    InFlight& f = in_flight_[i];
    if (f.value <= completed_value_ && status.ok()) {
      // Drops the command buffer's retention of the buffers it used (a
      // recording's keeps them: it is submitted again on replay).
      if (!f.cb->persistent) {
        status = f.cb->command_buffer->Reset();
        if (status.ok()) f.cb->reset = true;
      }
      f.cb.reset();
      continue;
    }
    if (kept != i) in_flight_[kept] = std::move(f);
    ++kept;
  }
  in_flight_.resize(kept);
  return status;
}

int32_t HalModule::InFlightHolders(const hal::Buffer* buffer) const {
  int32_t n = 0;
  for (const InFlight& f : in_flight_) {
    // Recordings' command buffers are counted once, by their recording.
    if (!f.cb->persistent) n += f.cb->command_buffer->Retains(buffer) ? 1 : 0;
  }
  return n;
}

Status HalModule::WaitIdle() {
  if (!device_ || !timeline_) return OkStatus();
  if (timeline_value_ > completed_value_) {
    KILN_RETURN_IF_ERROR(timeline_->Wait(timeline_value_, UINT64_MAX));
    completed_value_ = timeline_value_;
  }
  return Retire();
}

void HalModule::set_device_memory_budget(uint64_t bytes) {
  memory_budget_ = bytes;
  if (bytes && !account_) account_ = MakeRef<hal::MemoryAccount>();
}

StatusOr<Ref<hal::Buffer>> HalModule::AllocateCharged(uint64_t size, hal::MemoryKind kind) {
  KILN_RETURN_IF_ERROR(RequireDevice());
  if (memory_budget_ && account_) {
    uint64_t live = account_->live.load();
    if (live + size > memory_budget_) {
      return ResourceExhaustedError(
          "device memory budget of %llu bytes exceeded: %llu live, %llu more requested",
          static_cast<unsigned long long>(memory_budget_), static_cast<unsigned long long>(live),
          static_cast<unsigned long long>(size));
    }
  }
  KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer, device_->AllocateBuffer(size, kind));
  if (account_) buffer->Charge(account_, size);
  return buffer;
}

StatusOr<Ref<hal::Buffer>> HalModule::AllocateInitialized(const uint8_t* data, size_t size) {
  KILN_RETURN_IF_ERROR(RequireDevice());
  uint64_t alloc_size = size ? size : 4;
  CountHostAllocation();
  KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                        AllocateCharged(alloc_size, hal::MemoryKind::kDeviceLocal));
  device_->stats().transfers++;
  if (size == 0) return buffer;
  if (device_->info().unified_memory) {
    // Device-local memory is host visible: write directly, no staging copy.
    KILN_RETURN_IF_ERROR(buffer->Write(0, data, size));
    return buffer;
  }
  CountHostAllocation();  // the staging buffer
  KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> staging,
                        device_->AllocateBuffer(alloc_size, hal::MemoryKind::kHostVisible));
  KILN_RETURN_IF_ERROR(staging->Write(0, data, size));
  // A pooled command buffer (AcquireCommandBuffer counts any it creates).
  KILN_ASSIGN_OR_RETURN(Ref<CommandBufferState> cb, AcquireCommandBuffer());
  KILN_RETURN_IF_ERROR(cb->command_buffer->CopyBuffer(staging.get(), 0, buffer.get(), 0, size));
  // The host cannot map `buffer` (it reads it through a staged copy): no
  // host-read barrier.
  KILN_RETURN_IF_ERROR(cb->command_buffer->HostReadBarrier(nullptr, 0));
  KILN_RETURN_IF_ERROR(ExecuteAndWait(cb.get()));
  return buffer;
}

uint64_t HalModule::binding_alignment() const {
  if (!device_) return 1;
  uint64_t a = device_->info().min_storage_buffer_offset_alignment;
  return a ? a : 1;
}

StatusOr<Ref<CommandBufferState>> HalModule::AcquireCommandBuffer() {
  KILN_RETURN_IF_ERROR(RequireDevice());
  for (size_t i = 0; i < cb_pool_.size(); ++i) {
    Ref<CommandBufferState>& state = cb_pool_[i];
    if (state->refcount() != 1) continue;  // someone still holds it
    if (!state->reset) {
      // Dropped mid-recording (an error path): make it recordable again.
      Status s = state->command_buffer->Reset();
      if (!s.ok()) {
        cb_pool_.erase(cb_pool_.begin() + static_cast<std::ptrdiff_t>(i));
        --i;
        continue;
      }
    }
    state->reset = false;
    state->submitted = false;
    state->push_constant_words = 0;
    return state;
  }
  CountHostAllocation(2);  // hal object + VM state
  KILN_ASSIGN_OR_RETURN(Ref<hal::CommandBuffer> cb, device_->CreateCommandBuffer());
  Ref<CommandBufferState> state = MakeRef<CommandBufferState>(std::move(cb));
  if (!state) return ResourceExhaustedError("out of host memory for a command buffer");
  state->reset = false;
  if (cb_pool_.size() < kMaxPooledCommandBuffers) {
    if (cb_pool_.size() == cb_pool_.capacity()) CountHostAllocation();
    cb_pool_.push_back(state);
  }
  return state;
}

Status HalModule::ExecuteAndWait(CommandBufferState* cb) {
  cb->submitted = true;
  KILN_RETURN_IF_ERROR(Submit(cb->command_buffer.get()));
  // In flight until the wait returns: a timed-out wait leaves it there,
  // retaining what it uses, for a later Retire.
  KILN_RETURN_IF_ERROR(Park(cb, timeline_value_));
  KILN_RETURN_IF_ERROR(WaitTimeline(timeline_value_));
  // The work is done, and everything submitted before it: retiring resets
  // the command buffer, so results and consumed buffers are held only by
  // their views.
  return Retire();
}

Status HalModule::Call(HalImport id, const ImportCall& call,
                       const HostVector<Ref<hal::Executable>>& executables) {
  KILN_RETURN_IF_ERROR(RequireDevice());
  switch (id) {
    case HalImport::kBufferViewBuffer: {
      const RefValue& v = call.ArgRef(0);
      if (v.type() != RefType::kBufferView) {
        return InvalidArgumentError("expected a buffer view, got %s", RefTypeName(v.type()));
      }
      call.SetRef(0, RefValue(RefType::kBuffer, v.as<BufferView>()->buffer()));
      return OkStatus();
    }
    case HalImport::kBufferViewOffset: {
      const RefValue& v = call.ArgRef(0);
      if (v.type() != RefType::kBufferView) {
        return InvalidArgumentError("expected a buffer view, got %s", RefTypeName(v.type()));
      }
      uint64_t offset = v.as<BufferView>()->byte_offset();
      if (offset > 0x7FFFFFFF) return OutOfRangeError("view offset %llu exceeds i32",
                                                      static_cast<unsigned long long>(offset));
      call.SetI32(0, static_cast<int32_t>(offset));
      return OkStatus();
    }
    case HalImport::kBufferViewCreate: {
      BufferArg buf;
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(0), "buffer", &buf));
      int32_t offset = call.ArgI32(1);
      int32_t dtype = call.ArgI32(2);
      int32_t rank = call.ArgI32(3);
      size_t dims_given = call.args.size() - 4;
      if (rank < 0 || static_cast<size_t>(rank) != dims_given) {
        return InvalidArgumentError("rank %d but %zu dims given", rank, dims_given);
      }
      if (dims_given > kMaxRank) {
        return InvalidArgumentError("rank %zu exceeds the maximum %zu", dims_given, kMaxRank);
      }
      if (dtype <= 0 || dtype > 255 || DTypeSize(static_cast<DType>(dtype)) == 0) {
        return InvalidArgumentError("invalid dtype %d", dtype);
      }
      if (offset < 0) return InvalidArgumentError("negative offset %d", offset);
      if (static_cast<uint64_t>(offset) > buf.size) {
        return OutOfRangeError("offset %d exceeds the buffer's %llu bytes", offset,
                               static_cast<unsigned long long>(buf.size));
      }
      int64_t dims[kMaxRank];
      for (size_t i = 0; i < dims_given; ++i) dims[i] = call.ArgI32(4 + i);
      // The view must fit in the visible range of the operand.
      Ref<hal::Buffer> buffer = Ref<hal::Buffer>::Retain(buf.buffer);
      KILN_ASSIGN_OR_RETURN(Ref<BufferView> view,
                            BufferView::Create(buffer, buf.base + offset, static_cast<DType>(dtype),
                                               dims, dims_given));
      if (static_cast<uint64_t>(offset) + view->byte_length() > buf.size) {
        return OutOfRangeError("view %s at offset %d exceeds the operand's %llu bytes",
                               KILN_STATUS_TEXT(view->TypeString().c_str()), offset,
                               static_cast<unsigned long long>(buf.size));
      }
      call.SetRef(0, RefValue::Adopt(RefType::kBufferView, std::move(view)));
      return OkStatus();
    }
    case HalImport::kAllocatorAllocate: {
      int32_t size = call.ArgI32(0);
      int32_t kind = call.ArgI32(1);
      if (size < 0) return InvalidArgumentError("negative allocation size %d", size);
      if (kind != 0 && kind != 1) return InvalidArgumentError("invalid memory kind %d", kind);
      CountHostAllocation();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            AllocateCharged(size ? static_cast<uint64_t>(size) : 4,
                                            static_cast<hal::MemoryKind>(kind)));
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      return OkStatus();
    }
    case HalImport::kAllocatorAllocateInitialized: {
      const RefValue& v = call.ArgRef(0);
      if (v.type() != RefType::kRodata) {
        return InvalidArgumentError("expected a rodata span, got %s", RefTypeName(v.type()));
      }
      auto* span = v.as<RodataSpan>();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer, AllocateInitialized(span->data(), span->size()));
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      return OkStatus();
    }
    case HalImport::kExecutableLookup: {
      int32_t index = call.ArgI32(0);
      if (index < 0 || static_cast<size_t>(index) >= executables.size()) {
        return OutOfRangeError("executable %d out of range (module has %zu)", index,
                               executables.size());
      }
      call.SetRef(0, RefValue(RefType::kExecutable, executables[index].get()));
      return OkStatus();
    }
    case HalImport::kCommandBufferCreate: {
      KILN_ASSIGN_OR_RETURN(Ref<CommandBufferState> state, AcquireCommandBuffer());
      // Compiled code declares what the host reads (host_barrier): nothing
      // else needs a device -> host barrier.
      KILN_RETURN_IF_ERROR(state->command_buffer->HostReadBarrier(nullptr, 0));
      call.SetRef(0, RefValue::Adopt(RefType::kCommandBuffer, std::move(state)));
      return OkStatus();
    }
    case HalImport::kCommandBufferPushConstants: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      size_t words = call.args.size() - 1;
      if (words > CommandBufferState::kMaxPushConstantWords) {
        return InvalidArgumentError("%zu push-constant words exceed the maximum %u", words,
                                    CommandBufferState::kMaxPushConstantWords);
      }
      for (size_t i = 0; i < words; ++i) {
        cb->push_constants[i] = static_cast<uint32_t>(call.ArgI32(1 + i));
      }
      cb->push_constant_words = static_cast<uint32_t>(words);
      return OkStatus();
    }
    case HalImport::kCommandBufferDispatch: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      const RefValue& exe_ref = call.ArgRef(1);
      if (exe_ref.type() != RefType::kExecutable) {
        return InvalidArgumentError("expected an executable, got %s", RefTypeName(exe_ref.type()));
      }
      auto* exe = exe_ref.as<hal::Executable>();
      int32_t entry = call.ArgI32(2);
      if (entry < 0 || static_cast<uint32_t>(entry) >= exe->entry_point_count()) {
        return OutOfRangeError("entry point %d out of range (executable has %u)", entry,
                               exe->entry_point_count());
      }
      const hal::EntryPointInfo& info = exe->entry_point(static_cast<uint32_t>(entry));
      uint32_t groups[3];
      for (int i = 0; i < 3; ++i) {
        int32_t g = call.ArgI32(3 + i);
        if (g < 0) return InvalidArgumentError("negative workgroup count %d", g);
        groups[i] = static_cast<uint32_t>(g);
      }
      size_t binding_count = (call.args.size() - 6) / 3;
      if (binding_count != info.binding_count) {
        return InvalidArgumentError("entry point '%s' has %u bindings, %zu given",
                                    info.name.c_str(), info.binding_count, binding_count);
      }
      if (cb->push_constant_words * 4 != info.push_constant_bytes) {
        return InvalidArgumentError("entry point '%s' takes %u push-constant bytes, %u were set",
                                    info.name.c_str(), info.push_constant_bytes,
                                    cb->push_constant_words * 4);
      }
      if (bindings_.capacity() < binding_count) CountHostAllocation();
      bindings_.resize(binding_count);
      for (size_t b = 0; b < binding_count; ++b) {
        BufferArg buf;
        KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(6 + 3 * b), "binding", &buf));
        int32_t offset = call.ArgI32(7 + 3 * b);
        int32_t length = call.ArgI32(8 + 3 * b);
        KILN_RETURN_IF_ERROR(CheckRange(buf, offset, length, "binding"));
        uint64_t len = length ? static_cast<uint64_t>(length) : buf.size - offset;
        bindings_[b] = hal::BufferBinding{buf.buffer, buf.base + offset, len};
        if (b < info.binding_readonly.size() && info.binding_readonly[b]) continue;
        hal::Buffer* root = buf.buffer->allocation();
        uint64_t begin = buf.buffer->allocation_offset() + buf.base + offset;
        for (const hal::BufferBinding& lent : borrowed_) {
          if (lent.buffer == root && begin < lent.offset + lent.length && lent.offset < begin + len) {
            return InvalidArgumentError(
                "entry point '%s' binding %zu is writable but holds a borrowed argument (a module "
                "may not write what the caller lends it)", info.name.c_str(), b);
          }
        }
      }
      KILN_RETURN_IF_ERROR(cb->command_buffer->Dispatch(
          exe, static_cast<uint32_t>(entry), groups, cb->push_constants,
          cb->push_constant_words * 4, bindings_.data(), static_cast<uint32_t>(binding_count)));
      cb->push_constant_words = 0;
      return OkStatus();
    }
    case HalImport::kCommandBufferBarrier:
    case HalImport::kCommandBufferHostBarrier: {
      const bool host = id == HalImport::kCommandBufferHostBarrier;
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      size_t count = (call.args.size() - 1) / 3;
      if (host && count == 0) return OkStatus();
      if (count == 0) return cb->command_buffer->ExecutionBarrier();
      if (barriers_.capacity() < count) CountHostAllocation();
      barriers_.resize(count);
      size_t live = 0;
      for (size_t b = 0; b < count; ++b) {
        // A null register names storage that does not exist on this path
        // (a call result whose call has not run, a buffer already handed
        // to a callee): it has no pending access to order. Skipped.
        if (call.ArgRef(1 + 3 * b).type() == RefType::kNull) continue;
        BufferArg buf;
        KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(1 + 3 * b), "barrier", &buf));
        int32_t offset = call.ArgI32(2 + 3 * b);
        int32_t length = call.ArgI32(3 + 3 * b);
        KILN_RETURN_IF_ERROR(CheckRange(buf, offset, length, "barrier"));
        uint64_t len = length ? static_cast<uint64_t>(length) : buf.size - offset;
        barriers_[live++] = hal::BufferBarrier{buf.buffer, buf.base + offset, len};
      }
      if (host) return cb->command_buffer->HostReadBarrier(barriers_.data(), static_cast<uint32_t>(live));
      if (live == 0) return cb->command_buffer->ExecutionBarrier();
      return cb->command_buffer->Barrier(barriers_.data(), static_cast<uint32_t>(live));
    }
    case HalImport::kCommandBufferCopy: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      BufferArg src, dst;
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(1), "copy source", &src));
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(3), "copy target", &dst));
      int32_t src_off = call.ArgI32(2), dst_off = call.ArgI32(4), length = call.ArgI32(5);
      KILN_RETURN_IF_ERROR(CheckRange(src, src_off, length, "copy source"));
      KILN_RETURN_IF_ERROR(CheckRange(dst, dst_off, length, "copy target"));
      if (length == 0) return OkStatus();
      return cb->command_buffer->CopyBuffer(src.buffer, src.base + src_off, dst.buffer,
                                            dst.base + dst_off, static_cast<uint64_t>(length));
    }
    case HalImport::kCommandBufferFill: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      BufferArg dst;
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(1), "fill target", &dst));
      int32_t offset = call.ArgI32(2), length = call.ArgI32(3);
      KILN_RETURN_IF_ERROR(CheckRange(dst, offset, length, "fill target"));
      if (length % 4 != 0 || offset % 4 != 0) {
        return InvalidArgumentError("fill offset %d and length %d must be multiples of 4",
                                    offset, length);
      }
      if (length == 0) return OkStatus();
      return cb->command_buffer->FillBuffer(dst.buffer, dst.base + offset,
                                            static_cast<uint64_t>(length),
                                            static_cast<uint32_t>(call.ArgI32(4)));
    }
    case HalImport::kCommandBufferExecuteAndWait: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      return ExecuteAndWait(cb);
    }
    case HalImport::kCommandBufferExecute: {
      CommandBufferState* cb;
      KILN_RETURN_IF_ERROR(GetCommandBuffer(call.ArgRef(0), &cb));
      int32_t flags = call.ArgI32(1);
      if (flags & ~1) return InvalidArgumentError("execute: unknown flags 0x%x", flags);
      return Execute(cb, (flags & 1) != 0 && call.frame->depth == 0);
    }
    case HalImport::kBufferSubspan: {
      BufferArg buf;
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(0), "buffer", &buf));
      int32_t offset = call.ArgI32(1), length = call.ArgI32(2);
      KILN_RETURN_IF_ERROR(CheckRange(buf, offset, length, "subspan"));
      CountHostAllocation();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> sub,
                            device_->CreateSubspan(buf.buffer, buf.base + offset,
                                                   static_cast<uint64_t>(length)));
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(sub)));
      return OkStatus();
    }
    case HalImport::kBufferLoad: {
      BufferArg buf;
      KILN_RETURN_IF_ERROR(ResolveBuffer(call.ArgRef(0), "buffer", &buf));
      int32_t offset = call.ArgI32(1), width = call.ArgI32(2);
      if (width != 1 && width != 2 && width != 4) return InvalidArgumentError("load width %d (want 1, 2 or 4)", width);
      KILN_RETURN_IF_ERROR(CheckRange(buf, offset, width, "load"));
      uint8_t bytes[4] = {0, 0, 0, 0};
      uint64_t at = buf.base + static_cast<uint64_t>(offset);
      Status read = buf.buffer->Read(at, bytes, static_cast<uint64_t>(width));
      if (read.code() == StatusCode::kFailedPrecondition) {
        // Device-local memory the host cannot map (a discrete GPU): through
        // this context's 4-byte readback buffer, on its timeline (the
        // value's producer was already waited for). Counted as a transfer.
        if (!readback_) {
          KILN_ASSIGN_OR_RETURN(readback_, device_->AllocateBuffer(4, hal::MemoryKind::kHostVisible));
        }
        read = CopyStaged(device_.get(), buf.buffer, at, bytes, static_cast<uint64_t>(width), /*to_device=*/false,
                          {timeline_.get(), ++timeline_value_}, readback_.get(), wait_timeout_ns_);
        completed_value_ = timeline_value_;
      }
      KILN_RETURN_IF_ERROR(read);
      uint32_t v = static_cast<uint32_t>(bytes[0]) | (static_cast<uint32_t>(bytes[1]) << 8) |
                   (static_cast<uint32_t>(bytes[2]) << 16) | (static_cast<uint32_t>(bytes[3]) << 24);
      call.SetI32(0, static_cast<int32_t>(v));
      return OkStatus();
    }
    case HalImport::kBufferViewTakeOrAllocate:
    case HalImport::kBufferViewOutputStorage:
    case HalImport::kAllocatorAllocateCached:
    case HalImport::kBufferViewTakeOrClone:
      return InternalError("hal import %d is implemented by the context", static_cast<int>(id));
    case HalImport::kCount:
      break;
  }
  return InternalError("unknown hal import %d", static_cast<int>(id));
}

}  // namespace kiln::vm
