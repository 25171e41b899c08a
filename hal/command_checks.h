// Argument checks every HAL driver applies before it records a command, so
// that the Vulkan driver and the host-memory driver (hal/host, the fuzzers'
// HAL) accept and refuse exactly the same commands with the same messages.
//
// Each check reads only the driver-independent Buffer interface (size(),
// allocation(), allocation_offset()) and the DeviceInfo limits; the caller
// has already checked that every buffer is non-null and belongs to its
// device (the driver's own CheckBuffer), because only the driver knows its
// buffer type. Ranges are byte offsets into the buffer as given (a subspan's
// offsets are relative to the subspan); overflow-safe. Errors:
// kOutOfRange for a range outside a buffer, kInvalidArgument otherwise.
// No check allocates host memory.
#ifndef KILN_HAL_COMMAND_CHECKS_H_
#define KILN_HAL_COMMAND_CHECKS_H_

#include <cstdint>

#include "base/status.h"
#include "hal/api.h"

namespace kiln::hal {

// True when [offset, offset + length) lies inside `buffer`.
inline bool InBounds(const Buffer& buffer, uint64_t offset, uint64_t length) {
  return offset <= buffer.size() && length <= buffer.size() - offset;
}

// The length a binding or barrier of `length` bytes at `offset` covers: 0
// means "to the end of the buffer" (when offset is inside it).
inline uint64_t LengthToEnd(const Buffer& buffer, uint64_t offset, uint64_t length) {
  return length == 0 && offset <= buffer.size() ? buffer.size() - offset : length;
}

// CopyBuffer: both ranges inside their buffers and, within one allocation,
// not overlapping (absolute offsets).
Status CheckCopy(Buffer& source, uint64_t source_offset, Buffer& target,
                 uint64_t target_offset, uint64_t length);

// FillBuffer: the range is inside the buffer, and its absolute offset and
// its length are multiples of 4 (vkCmdFillBuffer's rule).
Status CheckFill(const Buffer& target, uint64_t offset, uint64_t length);

// Barrier number `index`: the range (length 0: to the end) is inside the
// buffer. Returns the length covered (0: nothing to order).
StatusOr<uint64_t> CheckBarrierRange(uint32_t index, const Buffer& buffer, uint64_t offset,
                                     uint64_t length);

// Dispatch, everything but the bindings' buffers: the workgroup counts
// against the device's limits and, with `workgroup_invocations` (the product
// of the entry point's workgroup size), the total against 2^32 invocations
// (a global invocation index is 32 bits: beyond it lavapipe silently
// miscounts, and a 65535^3 grid runs for hours); push-constant bytes and
// binding count equal to what `entry` declares; non-null arrays.
Status CheckDispatch(const EntryPointInfo& entry, uint64_t workgroup_invocations,
                     const DeviceInfo& limits, const uint32_t workgroup_count[3],
                     const void* push_constants, uint32_t push_constant_bytes,
                     const BufferBinding* bindings, uint32_t binding_count);

// Dispatch binding number `index` of `entry`: the range (length 0: to the
// end) is inside the buffer, non-empty, at most max_storage_buffer_range
// bytes, and its absolute offset a multiple of
// min_storage_buffer_offset_alignment; for a texel binding
// (BindingKind::kUniformTexelBuffer) instead a multiple of
// min_texel_buffer_offset_alignment, with a length of whole 16-byte texels,
// at most max_texel_buffer_elements of them. Returns the length bound.
StatusOr<uint64_t> CheckBinding(const EntryPointInfo& entry, uint32_t index,
                                const DeviceInfo& limits, const BufferBinding& binding);

// CreateExecutable: each entry point's binding kinds are known ones, a texel
// binding is read-only, it uses at most max_bound_storage_buffers storage
// buffers and max_bound_texel_buffers texel buffers, and a multiple of 4
// push-constant bytes up to max_push_constants_size. (The SPIR-V itself is checked against the
// declared layout by hal/vulkan/spirv_layout_check.h.)
Status CheckEntryPointLimits(const HostVector<EntryPointInfo>& entry_points,
                             const DeviceInfo& limits);

// QueueExecute: arrays non-null when their count is not, every point names
// a semaphore, and no semaphore is signalled twice in one submission. The
// driver then checks that each signal advances its timeline.
Status CheckSubmission(const SemaphorePoint* waits, uint32_t wait_count,
                       const SemaphorePoint* signals, uint32_t signal_count);

}  // namespace kiln::hal

#endif  // KILN_HAL_COMMAND_CHECKS_H_
