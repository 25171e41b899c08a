// Recorded command buffers (vm/replay.h): the Context's record and replay
// paths.
#include <algorithm>

#include "vm/context.h"

namespace kiln::vm {

int32_t Context::RecordingHolders(const hal::Buffer* buffer) const {
  int32_t n = 0;
  for (const auto& r : recordings_) n += r->cb->command_buffer->Retains(buffer) ? 1 : 0;
  return n;
}

void Context::PruneRecordings() {
  for (size_t i = 0; i < recordings_.size();) {
    Recording& r = *recordings_[i];
    bool orphaned = false;
    auto held_elsewhere = [&](const hal::Buffer* b) {
      return b->refcount() > RecordingHolders(b) + hal_.InFlightHolders(b);
    };
    for (const Recording::Key& k : r.args) orphaned = orphaned || !held_elsewhere(k.buffer);
    for (const Recording::Key& k : r.storage) {
      orphaned = orphaned || (k.buffer && !held_elsewhere(k.buffer));
    }
    if (!orphaned) {
      ++i;
      continue;
    }
    // An ordinary command buffer again: retirement resets it (releasing the
    // buffers, queue-ordered when still in flight), then it is destroyed.
    r.cb->persistent = false;
    recordings_.erase(recordings_.begin() + static_cast<std::ptrdiff_t>(i));
  }
}

Status Context::TryReplay(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                          Ref<BufferView>* results, size_t result_count, bool any_storage,
                          InvokeFences* fences, bool* replayed) {
  *replayed = false;
  if (recordings_.empty()) return OkStatus();
  if (scratch_owned_.size() < arg_count) {
    CountHostAllocation();
    scratch_owned_.resize(arg_count);
  }
  // Ownership of consumed arguments, as ClaimConsumed decides it.
  for (size_t i = 0; i < arg_count; ++i) {
    scratch_owned_[i] = args[i].consume && IsExclusive(args[i].view) ? 1 : 0;
  }
  for (auto& rec : recordings_) {
    Recording& r = *rec;
    if (r.module != fn.module || r.function != fn.ordinal) continue;
    // 1. The binding set.
    bool match = r.args.size() == arg_count && r.storage.size() == result_count;
    for (size_t i = 0; match && i < arg_count; ++i) {
      const BufferView* v = args[i].view;
      match = r.args[i].buffer == v->buffer() && r.args[i].offset == v->byte_offset() &&
              r.args[i].owned == (scratch_owned_[i] != 0);
    }
    for (size_t k = 0; match && k < result_count; ++k) {
      const BufferView* st = output_storage_[k].get();
      match = st ? (r.storage[k].buffer == st->buffer() && r.storage[k].offset == st->byte_offset())
                 : r.storage[k].buffer == nullptr;
    }
    if (!match) continue;
    // One submission of a command buffer at a time.
    if (hal_.Pending(r.last_value)) continue;
    // 2. The guards, in the recorded order (holding each result as its
    // register did, so a second call of the same slot sees it taken).
    Status status;
    for (Recording::Guard& g : r.guards) {
      switch (g.id) {
        case HalImport::kAllocatorAllocateCached: {
          StatusOr<Ref<hal::Buffer>> b =
              AllocateCached(fn.module, fn.ordinal, g.a, static_cast<uint64_t>(g.b),
                             static_cast<hal::MemoryKind>(g.c));
          if (!b.ok()) {
            status = b.take_status();
            match = false;
            break;
          }
          g.held = std::move(b).value();
          match = g.held.get() == g.buffer;
          break;
        }
        case HalImport::kBufferViewTakeOrAllocate:
        case HalImport::kBufferViewTakeOrClone: {
          const BufferView* v = args[g.a].view;
          uint64_t size = g.id == HalImport::kBufferViewTakeOrClone ? v->byte_length()
                                                                   : static_cast<uint64_t>(g.b);
          int32_t kind = g.id == HalImport::kBufferViewTakeOrClone ? 0 : g.c;
          match = scratch_owned_[g.a] && Takeable(v, size, kind) && v->buffer() == g.buffer;
          break;
        }
        default:
          match = false;
      }
      if (!match) break;
    }
    if (match) {
      // 3. Replay: resubmit, carrying the signal fence as the final execute.
      hal_.BeginInvocation(fences ? fences->wait : hal::SemaphorePoint{},
                           fences ? fences->signal : hal::SemaphorePoint{}, !any_storage);
      status = hal_.Execute(r.cb.get(), /*final=*/true);
      if (status.ok()) {
        r.last_value = hal_.timeline_value();
        r.last_used = ++replay_clock_;
        hal::Stats& stats = hal_.device()->stats();
        stats.dispatches += r.dispatches;
        stats.barriers += r.barriers;
        stats.copies += r.copies;
        stats.copy_bytes += r.copy_bytes;
        stats.fills += r.fills;
        ++stats.command_buffer_replays;
      }
      Ref<CommandBufferState> copy_cb;
      const format::Function* def = function_info(fn).def;
      for (size_t k = 0; status.ok() && k < result_count; ++k) {
        const Recording::Result& res = r.results[k];
        StatusOr<Ref<BufferView>> view = BufferView::Create(
            Ref<hal::Buffer>::Retain(res.buffer), res.offset, res.dtype, res.dims, res.rank);
        if (!view.ok()) {
          status = view.take_status();
          break;
        }
        results[k] = std::move(view).value();
        if (output_storage_[k]) {
          status = FinishOutputStorage(
              k, def->results()->Get(static_cast<flatbuffers::uoffset_t>(k)), &results[k],
              &copy_cb);
        }
      }
      if (status.ok() && copy_cb) status = hal_.Execute(copy_cb.get(), /*final=*/false);
      if (!status.ok()) {
        for (size_t k = 0; k < result_count; ++k) results[k].reset();
      }
      for (Recording::Guard& g : r.guards) g.held.reset();
      Status end = hal_.EndInvocation();
      if (fences) fences->signal_submitted = end.ok();
      if (status.ok() && !end.ok()) {
        status = end;
        for (size_t k = 0; k < result_count; ++k) results[k].reset();
      }
      *replayed = true;
      return status;
    }
    for (Recording::Guard& g : r.guards) g.held.reset();
    if (!status.ok()) return status;
  }
  return OkStatus();
}

void Context::BeginRecording(FunctionRef fn, const InvokeArg* args, size_t arg_count,
                             const Frame* frame, size_t result_count) {
  CountHostAllocation(3);
  recording_ = std::make_unique<Recording>();
  Recording& r = *recording_;
  r.module = fn.module;
  r.function = fn.ordinal;
  r.args.resize(arg_count);
  for (size_t i = 0; i < arg_count; ++i) {
    const BufferView* v = args[i].view;
    r.args[i] = Recording::Key{v->buffer(), v->byte_offset(),
                               args[i].consume && v->owner_serial() == frame->serial};
  }
  r.storage.resize(result_count);
  for (size_t k = 0; k < result_count; ++k) {
    const BufferView* st = output_storage_[k].get();
    if (st) r.storage[k] = Recording::Key{st->buffer(), st->byte_offset(), false};
  }
  const hal::Stats& stats = hal_.device()->stats();
  // Baselines; FinishRecording keeps the differences.
  r.dispatches = stats.dispatches;
  r.barriers = stats.barriers;
  r.copies = stats.copies;
  r.copy_bytes = stats.copy_bytes;
  r.fills = stats.fills;
  recording_args_ = args;
  recording_arg_count_ = arg_count;
  if (scratch_owned_.size() < arg_count) {  // for later replays
    CountHostAllocation();
    scratch_owned_.resize(arg_count);
  }
  capture_ = HalModule::Capture{};
  hal_.set_capture(&capture_);
}

void Context::NoteGuard(HalImport id, const ImportCall& call, const hal::Buffer* result,
                        bool allocated) {
  Recording& r = *recording_;
  if (allocated) r.stable = false;  // a fresh buffer every time: nothing to replay
  Recording::Guard g;
  g.id = id;
  g.buffer = result;
  if (id == HalImport::kAllocatorAllocateCached) {
    g.a = call.ArgI32(0);
    g.b = call.ArgI32(1);
    g.c = call.ArgI32(2);
  } else {
    const RefValue& v = call.ArgRef(id == HalImport::kBufferViewTakeOrClone ? 1 : 0);
    g.a = -1;
    for (size_t i = 0; i < recording_arg_count_; ++i) {
      if (v.type() == RefType::kBufferView && v.as<BufferView>() == recording_args_[i].view) {
        g.a = static_cast<int32_t>(i);
      }
    }
    if (g.a < 0) r.stable = false;  // not an argument's view
    if (id == HalImport::kBufferViewTakeOrAllocate) {
      g.b = call.ArgI32(1);
      g.c = call.ArgI32(2);
    }
  }
  if (r.guards.size() == r.guards.capacity()) CountHostAllocation();
  r.guards.push_back(std::move(g));
}

void Context::FinishRecording(bool ok, const InvokeArg* args, size_t arg_count, Frame* frame,
                              const RegList& ret, size_t result_count, bool copied) {
  std::unique_ptr<Recording> rec = std::move(recording_);
  recording_args_ = nullptr;
  recording_arg_count_ = 0;
  hal_.set_capture(nullptr);
  Recording& r = *rec;
  if (!ok || copied || !r.stable || !capture_.single || !capture_.cb) return;
  CommandBufferState* cb = capture_.cb;
  const hal::CommandBuffer* hcb = cb->command_buffer.get();
  // Every key buffer must be retained by the command buffer (sound pointer
  // comparison: it cannot be freed and its address reused meanwhile).
  for (const Recording::Key& k : r.args) {
    if (!hcb->Retains(k.buffer)) return;
  }
  for (const Recording::Key& k : r.storage) {
    if (k.buffer && !hcb->Retains(k.buffer)) return;
  }
  for (const Recording::Guard& g : r.guards) {
    if (!hcb->Retains(g.buffer)) return;
  }
  CountHostAllocation();
  r.results.resize(result_count);
  for (size_t k = 0; k < result_count; ++k) {
    const RefValue& v = frame->R(ret[k].index);
    if (v.type() != RefType::kBufferView) return;
    // Always by buffer and offset, never by view identity: a consumed
    // argument's view may have been released by the run and its memory
    // reused for a result view at the same address.
    const BufferView* view = v.as<BufferView>();
    Recording::Result& res = r.results[k];
    if (!hcb->Retains(view->buffer())) return;
    res.buffer = view->buffer();
    res.offset = view->byte_offset();
    res.dtype = view->dtype();
    res.rank = view->rank();
    for (size_t d = 0; d < res.rank; ++d) res.dims[d] = view->dims()[d];
  }
  const hal::Stats& stats = hal_.device()->stats();
  r.dispatches = stats.dispatches - r.dispatches;
  r.barriers = stats.barriers - r.barriers;
  r.copies = stats.copies - r.copies;
  r.copy_bytes = stats.copy_bytes - r.copy_bytes;
  r.fills = stats.fills - r.fills;
  // Room for it: replace the least recently used recording of this
  // function that is not in flight (none: keep nothing).
  size_t same = 0;
  Recording* victim = nullptr;
  size_t victim_index = 0;
  for (size_t i = 0; i < recordings_.size(); ++i) {
    Recording& o = *recordings_[i];
    if (o.module != r.module || o.function != r.function) continue;
    ++same;
    if (hal_.Pending(o.last_value)) continue;
    if (!victim || o.last_used < victim->last_used) {
      victim = &o;
      victim_index = i;
    }
  }
  if (same >= Recording::kMaxRecordingsPerFunction) {
    if (!victim) return;
    victim->cb->persistent = false;
    recordings_.erase(recordings_.begin() + static_cast<std::ptrdiff_t>(victim_index));
  }
  r.cb = Ref<CommandBufferState>::Retain(cb);
  r.last_value = capture_.value;
  r.last_used = ++replay_clock_;
  hal_.Persist(cb);
  CountHostAllocation();
  recordings_.push_back(std::move(rec));
  ++hal_.device()->stats().command_buffer_recordings;
}

}  // namespace kiln::vm
