// HostDevice: a hal::Device backed by host memory, that runs no shader.
//
// What it is for: running the loader, the verifiers and the interpreter
// (vm/) without a GPU, e.g. under libFuzzer (fuzz/module_fuzzer.cc), and as
// a test double that obeys the contracts the VM relies on. It is not a
// compute driver: a Dispatch is validated and counted but its SPIR-V never
// runs, so buffers a shader would write keep their previous bytes.
//
// Behaviour, call by call (the contracts of hal/api.h, checked like the
// Vulkan HAL checks them, with the same status codes):
//  - AllocateBuffer: `size` rounded up to 16 bytes, a zeroed host allocation
//    aligned to 64 bytes (through base/host_alloc.h, so the app's allocator
//    hook sees it). Every buffer is host visible (unified memory), so
//    Read/Write always work; ranges are bounds-checked (kOutOfRange). A size
//    above HostDeviceOptions::max_allocation_bytes is kResourceExhausted,
//    never an attempt. Counts in stats() like the Vulkan HAL.
//  - CreateSubspan: a view retaining its parent; kOutOfRange past its end.
//  - CreateExecutable: the SPIR-V layout check every Vulkan executable gets
//    (hal/vulkan/spirv_layout_check.h) against this device's limits, then
//    the Vulkan HAL's per-entry-point limits (storage buffers, push-constant
//    bytes). No SPIR-V capability needs a feature here.
//  - CommandBuffer: records copies, fills, dispatches and barriers, checking
//    each as the Vulkan command buffer does (recording state, ranges,
//    alignment, overlap, workgroup counts within the device limits and at
//    most 2^32 invocations, push-constant and binding counts, binding ranges
//    non-empty, within max_storage_buffer_range and aligned). It retains the
//    buffers and executables it names until Reset.
//  - QueueExecute: submissions run in order. A submission whose waits are all
//    reached runs at once, inside the call: copies and fills change the host
//    bytes, then its signals are raised. One whose waits are not reached
//    stays queued (and so does everything submitted after it) until a host
//    Semaphore::Signal reaches them. A queued submission retains its command
//    buffer and semaphores (and through them the device) until it runs, so
//    one that waits on a value nobody signals keeps them alive; a Vulkan app
//    must not release objects in use either.
//  - Semaphore: a counter. Signal must advance the payload past every value
//    already scheduled (kInvalidArgument), and is kFailedPrecondition while a
//    queued submission is to signal it. Wait returns OK when the payload has
//    the value, else kDeadlineExceeded at once, whatever the timeout: with
//    one thread driving the device, nothing could raise it while Wait
//    blocked (the Vulkan HAL would block for the timeout, or forever).
//  - WaitIdle: OK when nothing is queued, else kDeadlineExceeded at once (a
//    queued submission waits on a host signal that cannot come meanwhile).
//  - No timestamp queries (kUnimplemented, the default).
//
// Threading: one thread at a time per device and its objects. Ownership: as
// hal/api.h; objects retain their device. Cost: copies and fills are
// memmove/memset on host memory; everything else is O(commands).
#ifndef KILN_HAL_HOST_HOST_DEVICE_H_
#define KILN_HAL_HOST_HOST_DEVICE_H_

#include <cstdint>

#include "hal/api.h"

namespace kiln::hal::host {

struct HostDeviceOptions {
  // Largest single allocation in bytes (a larger request is
  // kResourceExhausted): a bound for fuzzing, where a module may ask for
  // terabytes. Also max_storage_buffer_range.
  uint64_t max_allocation_bytes = uint64_t{1} << 30;
  // Reports the "shaderFloat16" feature (DeviceInfo::features), so that a
  // context creates its executables from their f16-arithmetic SPIR-V
  // (Executable.spirv_f16) where a module has it. No shader runs either way.
  bool shader_float16 = false;
};

// Creates a host device. DeviceInfo: name "host", driver "host",
// unified_memory, 16-byte storage offset alignment, and lavapipe's compute
// limits (workgroup size 1024^3 with 1024 invocations, counts 65535^3, 128
// push-constant bytes, 64 storage buffers per dispatch). Errors:
// kResourceExhausted when host memory runs out.
StatusOr<Ref<Device>> CreateHostDevice(const HostDeviceOptions& options = HostDeviceOptions{});

}  // namespace kiln::hal::host

#endif  // KILN_HAL_HOST_HOST_DEVICE_H_
