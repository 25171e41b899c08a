// ABI ownership across the call boundary (vm/context.h "Ownership"), in one
// place: which argument views a frame owns (a consumed argument the caller
// holds no other reference to: ClaimConsumed / IsExclusive), when that
// storage may be taken (Takeable), the context imports that take it or
// donate fresh storage (hal.buffer_view.take_or_allocate, take_or_clone,
// allocate_cached, output storage), and how a result reaches the caller's
// preallocated output storage (FinishOutputStorage). The module decides
// where a take is allowed (compiler/transforms/schedule_allocation.h: the
// storage plan's `taken` and `donated` storages); the runtime checks that
// the caller really handed the buffer over, and copies (counted) otherwise.
#include <cstring>

#include "vm/context.h"
#include "vm/tensor_sig.h"

namespace kiln::vm {

bool Context::IsExclusive(const BufferView* view) const {
  if (!view || view->refcount() != 1) return false;
  hal::Buffer* buffer = view->buffer();
  if (buffer->allocation() != buffer) return false;
  // In-flight work of this context holding it is queue-ordered before
  // anything the callee records.
  // Recordings' command buffers likewise (vm/replay.h).
  return buffer->refcount() == 1 + (IsCached(buffer) ? 1 : 0) + hal_.InFlightHolders(buffer) +
                                   RecordingHolders(buffer);
}

void Context::ClaimConsumed(Frame* frame, uint16_t index) {
  RefValue& v = frame->R(index);
  if (v.type() != RefType::kBufferView) return;
  BufferView* view = v.as<BufferView>();
  if (IsExclusive(view)) view->set_owner_serial(frame->serial);
}

Status Context::CallContextImport(HalImport id, const ImportCall& call, uint32_t m,
                                  uint32_t function) {
  hal::Device* device = hal_.device();
  if (!device) return FailedPreconditionError("the context has no device");
  Frame* frame = call.frame;
  auto view_arg = [&](size_t i, BufferView** out) -> Status {
    const RefValue& v = call.ArgRef(i);
    if (v.type() != RefType::kBufferView) {
      return InvalidArgumentError("expected a buffer view, got %s", RefTypeName(v.type()));
    }
    *out = v.as<BufferView>();
    return OkStatus();
  };
  // Whether `view`'s storage can be taken by this frame for `size` bytes.
  auto takeable = [&](const BufferView* view, uint64_t size, int32_t kind) {
    return view->owner_serial() == frame->serial && Takeable(view, size, kind);
  };
  // The run being recorded notes what the ownership imports returned.
  const bool note = recording_ && frame->depth == 0;
  switch (id) {
    case HalImport::kBufferViewTakeOrAllocate:
    case HalImport::kBufferViewTakeOrClone: {
      // take_or_allocate(view, size, kind) / take_or_clone(cb, view): the
      // view's storage when this frame owns it and it fits, else a fresh
      // buffer (counted), which take_or_clone fills with the view's bytes.
      const bool clone = id == HalImport::kBufferViewTakeOrClone;
      CommandBufferState* cb = nullptr;
      if (clone) {
        const RefValue& cb_ref = call.ArgRef(0);
        if (cb_ref.type() != RefType::kCommandBuffer) {
          return InvalidArgumentError("expected a command buffer, got %s", RefTypeName(cb_ref.type()));
        }
        cb = cb_ref.as<CommandBufferState>();
        if (cb->submitted) return FailedPreconditionError("command buffer was already submitted");
      }
      BufferView* view = nullptr;
      KILN_RETURN_IF_ERROR(view_arg(clone ? 1 : 0, &view));
      uint64_t size = view->byte_length();
      int32_t kind = 0;
      if (clone) {
        if (size > 0x7FFFFFFF) return OutOfRangeError("view of %llu bytes exceeds i32",
                                                      static_cast<unsigned long long>(size));
      } else {
        int32_t requested = call.ArgI32(1);
        kind = call.ArgI32(2);
        if (requested < 0) return InvalidArgumentError("negative size %d", requested);
        if (kind != 0 && kind != 1) return InvalidArgumentError("invalid memory kind %d", kind);
        size = static_cast<uint64_t>(requested);
      }
      if (takeable(view, size, kind)) {
        view->set_owner_serial(0);
        int32_t offset = static_cast<int32_t>(view->byte_offset());
        if (note) NoteGuard(id, call, view->buffer(), false);
        RefValue taken(RefType::kBuffer, view->buffer());
        call.SetRef(0, std::move(taken));
        call.SetI32(1, offset);
        return OkStatus();
      }
      CountHostAllocation();
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            hal_.AllocateCharged(size ? size : 4, clone ? view->buffer()->memory_kind()
                                                                        : static_cast<hal::MemoryKind>(kind)));
      if (note) NoteGuard(id, call, buffer.get(), true);
      if (clone && size) {
        KILN_RETURN_IF_ERROR(cb->command_buffer->CopyBuffer(view->buffer(), view->byte_offset(),
                                                            buffer.get(), 0, size));
      }
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      call.SetI32(1, 0);
      return OkStatus();
    }
    case HalImport::kBufferViewOutputStorage: {
      int32_t k = call.ArgI32(0);
      if (k < 0) return InvalidArgumentError("negative result index %d", k);
      RefValue out;
      if (frame->depth == 0 && static_cast<size_t>(k) < output_storage_.size() &&
          output_storage_[k] &&
          output_storage_[k]->root_offset() % hal_.binding_alignment() == 0) {
        out = RefValue(RefType::kBufferView, output_storage_[k].get());
      }
      call.SetRef(0, std::move(out));
      return OkStatus();
    }
    case HalImport::kAllocatorAllocateCached: {
      int32_t slot = call.ArgI32(0), size = call.ArgI32(1), kind = call.ArgI32(2);
      if (size < 0) return InvalidArgumentError("negative allocation size %d", size);
      if (kind != 0 && kind != 1) return InvalidArgumentError("invalid memory kind %d", kind);
      KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer,
                            AllocateCached(m, function, slot, static_cast<uint64_t>(size),
                                           static_cast<hal::MemoryKind>(kind)));
      if (note) NoteGuard(id, call, buffer.get(), false);
      call.SetRef(0, RefValue::Adopt(RefType::kBuffer, std::move(buffer)));
      return OkStatus();
    }
    default:
      return InternalError("hal import %d is not a context import", static_cast<int>(id));
  }
}

Status Context::FinishOutputStorage(size_t k, const format::TensorSig* sig,
                                    Ref<BufferView>* result, Ref<CommandBufferState>* cb) {
  const Ref<BufferView>& storage = output_storage_[k];
  if (result->get() != storage.get() && !(*result)->SameStorageAndType(*storage)) {
    if ((*result)->Overlaps(*storage)) {
      return FailedPreconditionError(
          "result %zu '%s' partially overlaps its output storage; cannot copy it there", k,
          KILN_STATUS_TEXT(SigName(sig).c_str()));
    }
    if (!*cb) {
      KILN_ASSIGN_OR_RETURN(*cb, hal_.AcquireCommandBuffer());
    }
    if (storage->byte_length()) {
      KILN_RETURN_IF_ERROR((*cb)->command_buffer->CopyBuffer(
          (*result)->buffer(), (*result)->byte_offset(), storage->buffer(), storage->byte_offset(),
          storage->byte_length()));
    }
  }
  *result = storage;
  return OkStatus();
}

bool Context::Takeable(const BufferView* view, uint64_t size, int32_t kind) const {
  const hal::Buffer* buffer = view->buffer();
  if (kind == 1 && buffer->memory_kind() != hal::MemoryKind::kHostVisible) return false;
  if (view->root_offset() % hal_.binding_alignment() != 0) return false;
  if (view->byte_offset() > 0x7FFFFFFF) return false;
  return buffer->size() >= view->byte_offset() && buffer->size() - view->byte_offset() >= size;
}

}  // namespace kiln::vm
