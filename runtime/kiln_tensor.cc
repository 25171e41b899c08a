// The C API's tensors (include/kiln/kiln.h): create, views, read, write,
// wait for asynchronous writers.
#include <cstring>
#include <vector>

#include "base/dtype.h"
#include "runtime/kiln_internal.h"
#include "vm/staged_copy.h"

namespace kiln::capi {

// Records that device work signalling `point` writes the storage of `view`.
void MarkPendingWrite(const kiln::vm::BufferView* view, const kiln::hal::SemaphorePoint& point,
                      uint64_t timeout_ns) {
  kiln::hal::Buffer* root = RootOf(view);
  if (root->pending_write_semaphore.get() != point.semaphore) {
    root->pending_write_semaphore = Ref<kiln::hal::Semaphore>::Retain(point.semaphore);
  }
  root->pending_write_value = point.value;
  root->pending_write_timeout_ns = timeout_ns;
}

}  // namespace kiln::capi

using namespace kiln::capi;  // NOLINT: the entry points below use the helpers

namespace {

// Copies between host memory and [offset, offset+length) of `buffer` through
// a host-visible staging buffer (used when `buffer` is not host visible), on
// the device's readback timeline. Blocks until the copy is done.
Status Staged(kiln_device_s* dev, kiln::hal::Buffer* buffer, uint64_t offset, void* host, uint64_t length,
              bool to_device, uint64_t timeout_ns) {
  if (!dev->readback_semaphore) {
    KILN_ASSIGN_OR_RETURN(dev->readback_semaphore, dev->device->CreateSemaphore(0));
  }
  return kiln::vm::CopyStaged(dev->device.get(), buffer, offset, host, length, to_device,
                              {dev->readback_semaphore.get(), ++dev->readback_value}, nullptr,
                              timeout_ns);
}

// Waits (at most `timeout_ns`) until device work submitted by an
// asynchronous invocation that writes `tensor`'s storage has finished.
// A reached mark is cleared, so later reads cost nothing.
Status WaitPendingWrite(const char* api, kiln_tensor_s* tensor, uint64_t timeout_ns) {
  kiln::hal::Buffer* root = RootOf(tensor->view.get());
  kiln::hal::Semaphore* semaphore = root->pending_write_semaphore.get();
  if (!semaphore) return kiln::OkStatus();
  uint64_t value = root->pending_write_value;
  KILN_ASSIGN_OR_RETURN(uint64_t reached, semaphore->Query());
  if (reached < value) {
    Status s = semaphore->Wait(value, timeout_ns);
    if (!s.ok()) {
      auto now = semaphore->Query();
      if (now.ok() && now.value() < value) {
        return kiln::DeadlineExceededError(
            "%s: timeout: the invocation writing %s has not finished within %llu ns (its "
            "wait fence is not signalled yet?)",
            api, KILN_STATUS_TEXT(tensor->view->TypeString().c_str()),
            static_cast<unsigned long long>(timeout_ns));
      }
      return s;
    }
  }
  if (root->pending_write_semaphore.get() == semaphore && root->pending_write_value == value) {
    root->pending_write_semaphore.reset();
  }
  return kiln::OkStatus();
}

}  // namespace

extern "C" {

// --- tensors -----------------------------------------------------------------

kiln_status_t kiln_tensor_create(kiln_device_t device, kiln_dtype_t dtype, size_t rank,
                                 const int64_t* dims, const void* data, size_t data_bytes,
                                 kiln_tensor_t* out_tensor) {
  if (!device) return NullArg("kiln_tensor_create", "device");
  if (!dims && rank) return NullArg("kiln_tensor_create", "dims");
  if (!out_tensor) return NullArg("kiln_tensor_create", "out_tensor");
  if (kiln_dtype_size(dtype) == 0) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: invalid dtype %d",
                                           static_cast<int>(dtype)));
  }
  if (rank > KILN_MAX_RANK) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: rank %zu exceeds %d", rank,
                                           KILN_MAX_RANK));
  }
  uint64_t count = 1;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) {
      return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: dim %zu is negative (%lld)", i,
                                             static_cast<long long>(dims[i])));
    }
    if (dims[i] != 0 && count > (uint64_t{1} << 40) / static_cast<uint64_t>(dims[i])) {
      return Wrap(kiln::InvalidArgumentError("kiln_tensor_create: shape is too large"));
    }
    count *= static_cast<uint64_t>(dims[i]);
  }
  uint64_t bytes = count * kiln_dtype_size(dtype);
  if (data && data_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError(
        "kiln_tensor_create: %s needs %llu bytes, %zu given",
        KILN_STATUS_TEXT(
            kiln::vm::TensorTypeString(static_cast<kiln::DType>(dtype), dims, rank).c_str()),
        static_cast<unsigned long long>(bytes), data_bytes));
  }
  kiln::hal::Device* dev = device->device.get();
  uint64_t alloc = bytes ? (bytes + 3) / 4 * 4 : 4;
  auto buffer = dev->AllocateBuffer(alloc, kiln::hal::MemoryKind::kHostVisible);
  if (!buffer.ok()) return Wrap(buffer.take_status());
  if (data && bytes) {
    Status s = buffer.value()->Write(0, data, bytes);
    if (!s.ok()) return Wrap(std::move(s));
  } else if (bytes) {
    void* zeros = kiln::HostAllocate(bytes);
    if (!zeros) return OutOfHostMemory("kiln_tensor_create");
    std::memset(zeros, 0, bytes);
    Status s = buffer.value()->Write(0, zeros, bytes);
    kiln::HostFree(zeros);
    if (!s.ok()) return Wrap(std::move(s));
  }
  auto view = kiln::vm::BufferView::Create(std::move(buffer).value(), 0,
                                           static_cast<kiln::DType>(dtype), dims, rank);
  if (!view.ok()) return Wrap(view.take_status());
  auto* t = new kiln_tensor_s();
  if (!t) return OutOfHostMemory("kiln_tensor_create");
  t->device = Ref<kiln_device_s>::Retain(device);
  t->view = std::move(view).value();
  *out_tensor = t;
  return nullptr;
}
void kiln_tensor_retain(kiln_tensor_t tensor) {
  RetainHandle<HandleTag::kTensor>(tensor, "kiln_tensor_retain");
}
void kiln_tensor_release(kiln_tensor_t tensor) {
  ReleaseHandle<HandleTag::kTensor>(tensor, "kiln_tensor_release");
}

kiln_status_t kiln_tensor_read(kiln_tensor_t tensor, void* dst, size_t dst_bytes) {
  if (!tensor) return NullArg("kiln_tensor_read", "tensor");
  uint64_t bytes = tensor->view->byte_length();
  if (dst_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_read: %s has %llu bytes, %zu requested",
                                           KILN_STATUS_TEXT(tensor->view->TypeString().c_str()),
                                           static_cast<unsigned long long>(bytes), dst_bytes));
  }
  if (bytes == 0) return nullptr;
  if (!dst) return NullArg("kiln_tensor_read", "dst");
  // Results of kiln_invoke_async: wait for the work that writes them.
  uint64_t timeout_ns = RootOf(tensor->view.get())->pending_write_timeout_ns;
  Status pending = WaitPendingWrite("kiln_tensor_read", tensor, timeout_ns);
  if (!pending.ok()) return Wrap(std::move(pending));
  kiln::hal::Buffer* buffer = tensor->view->buffer();
  Status s = buffer->Read(tensor->view->byte_offset(), dst, bytes);
  if (s.code() == StatusCode::kFailedPrecondition) {
    s = Staged(tensor->device.get(), buffer, tensor->view->byte_offset(), dst, bytes, /*to_device=*/false, timeout_ns);
  }
  return Wrap(std::move(s));
}

kiln_status_t kiln_tensor_write(kiln_tensor_t tensor, const void* src, size_t src_bytes) {
  if (!tensor) return NullArg("kiln_tensor_write", "tensor");
  uint64_t bytes = tensor->view->byte_length();
  if (src_bytes != bytes) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_write: %s has %llu bytes, %zu given",
                                           KILN_STATUS_TEXT(tensor->view->TypeString().c_str()),
                                           static_cast<unsigned long long>(bytes), src_bytes));
  }
  if (bytes == 0) return nullptr;
  if (!src) return NullArg("kiln_tensor_write", "src");
  // Work still writing the storage (an asynchronous result) finishes first.
  uint64_t timeout_ns = RootOf(tensor->view.get())->pending_write_timeout_ns;
  Status pending = WaitPendingWrite("kiln_tensor_write", tensor, timeout_ns);
  if (!pending.ok()) return Wrap(std::move(pending));
  kiln::hal::Buffer* buffer = tensor->view->buffer();
  Status s = buffer->Write(tensor->view->byte_offset(), src, bytes);
  if (s.code() == StatusCode::kFailedPrecondition) {
    s = Staged(tensor->device.get(), buffer, tensor->view->byte_offset(), const_cast<void*>(src), bytes, /*to_device=*/true, timeout_ns);
  }
  return Wrap(std::move(s));
}

kiln_status_t kiln_tensor_wait(kiln_tensor_t tensor, uint64_t timeout_ns) {
  if (!tensor) return NullArg("kiln_tensor_wait", "tensor");
  return Wrap(WaitPendingWrite("kiln_tensor_wait", tensor, timeout_ns));
}

kiln_dtype_t kiln_tensor_dtype(kiln_tensor_t tensor) {
  return tensor ? static_cast<kiln_dtype_t>(tensor->view->dtype()) : KILN_DTYPE_INVALID;
}
size_t kiln_tensor_rank(kiln_tensor_t tensor) { return tensor ? tensor->view->rank() : 0; }
const int64_t* kiln_tensor_dims(kiln_tensor_t tensor) {
  return tensor ? tensor->view->dims() : nullptr;
}
size_t kiln_tensor_byte_size(kiln_tensor_t tensor) {
  return tensor ? static_cast<size_t>(tensor->view->byte_length()) : 0;
}

kiln_status_t kiln_tensor_create_view(kiln_tensor_t parent, size_t byte_offset,
                                      kiln_dtype_t dtype, size_t rank, const int64_t* dims,
                                      kiln_tensor_t* out_tensor) {
  if (!parent) return NullArg("kiln_tensor_create_view", "parent");
  if (!dims && rank) return NullArg("kiln_tensor_create_view", "dims");
  if (!out_tensor) return NullArg("kiln_tensor_create_view", "out_tensor");
  if (kiln_dtype_size(dtype) == 0) {
    return Wrap(kiln::InvalidArgumentError("kiln_tensor_create_view: invalid dtype %d",
                                           static_cast<int>(dtype)));
  }
  auto view = kiln::vm::BufferView::CreateSubview(*parent->view, byte_offset,
                                                  static_cast<kiln::DType>(dtype), dims, rank);
  if (!view.ok()) {
    Status s = view.take_status();
    return Wrap(s.Annotate("kiln_tensor_create_view"));
  }
  auto* t = new kiln_tensor_s();
  if (!t) return OutOfHostMemory("kiln_tensor_create_view");
  t->device = parent->device;
  t->view = std::move(view).value();
  *out_tensor = t;
  return nullptr;
}

}  // extern "C"
