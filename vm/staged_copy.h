// Host <-> device copies through a staging buffer, for device memory the host
// cannot map (discrete GPUs: hal::MemoryKind::kDeviceLocal without
// HOST_VISIBLE; Buffer::Read/Write then fail with FailedPrecondition). Used by
// the VM (hal.buffer.load) and the C API (kiln_tensor_read/write).
#ifndef KILN_VM_STAGED_COPY_H_
#define KILN_VM_STAGED_COPY_H_

#include <cstdint>

#include "hal/api.h"

namespace kiln::vm {

// Copies `length` bytes between host memory `host` and [offset, offset +
// length) of `buffer` through a fresh host-visible staging buffer of
// `length` bytes (or `reuse`, a host-visible buffer of at least `length`
// bytes, when not null): one command buffer with one copy, submitted to `device`'s
// queue signalling `signal`, then a host wait on `signal` (blocks until the
// copy is done). `to_device`: host -> buffer, else buffer -> host.
// Ordering: every command buffer begins with a full barrier, so the copy
// runs after everything submitted to the queue before it. Counts one
// stats().transfers (not copies). Allocates the command buffer (host) and,
// without `reuse`, the staging buffer (device): callers on a steady-state
// path pass `reuse`. `timeout_ns` (UINT64_MAX: none) bounds the wait for
// the work queued before the copy: past it, DEADLINE_EXCEEDED
// and nothing is submitted. Errors: RESOURCE_EXHAUSTED when the
// staging allocation fails, OUT_OF_RANGE for a range beyond `buffer`, and the
// device's submission and wait errors.
Status CopyStaged(hal::Device* device, hal::Buffer* buffer, uint64_t offset, void* host, uint64_t length, bool to_device,
                  const hal::SemaphorePoint& signal, hal::Buffer* reuse = nullptr,
                  uint64_t timeout_ns = UINT64_MAX);

}  // namespace kiln::vm

#endif  // KILN_VM_STAGED_COPY_H_
