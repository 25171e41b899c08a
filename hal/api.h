// Kiln HAL: the hardware abstraction every driver implements (vulkan/, and a
// future cpu/). Modelled on IREE's HAL and Vulkan's own objects; the VM's
// native `hal` module (vm/hal_module.cc) is a thin layer over these calls.
//
// Threading: a Device and its objects may be used from one thread at a time
// unless noted. Ownership: objects are RefObjects; creators return Ref<T>
// holding one reference; `T*` parameters are borrowed for the call's duration.
// Errors: every fallible call returns Status; nothing aborts on bad input or
// on allocation failure (kResourceExhausted).
#ifndef KILN_HAL_API_H_
#define KILN_HAL_API_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/ref.h"
#include "base/status.h"

namespace kiln::hal {

// Counters behind every tool's `--stats` (docs/design.md "Runtime contracts").
// Incremented by drivers as work is *recorded or allocated*, never estimated.
struct Stats {
  uint64_t device_allocations = 0;      // buffers allocated on the device
  uint64_t device_bytes_allocated = 0;  // sum of their sizes, bytes
  uint64_t device_bytes_live = 0;       // currently allocated, bytes
  uint64_t device_peak_bytes = 0;       // high-water mark of bytes_live
  uint64_t copies = 0;                  // device-side buffer copies recorded
  uint64_t copy_bytes = 0;
  uint64_t transfers = 0;               // host<->device staging transfers
  uint64_t fills = 0;                   // buffer fills recorded
  uint64_t dispatches = 0;              // compute dispatches recorded
  uint64_t barriers = 0;                // pipeline/buffer barriers recorded
  uint64_t submissions = 0;             // queue submissions
  uint64_t host_allocations_invoke = 0; // maintained by the VM (see vm/)
  // Appended (timeline):
  uint64_t host_waits = 0;      // blocking waits of the VM on the device (vm/hal_module.h)
  uint64_t deferred_frees = 0;  // buffers whose last reference was a command buffer's
                                // retention: freed when it retired (queue-ordered free)
  // Appended (recorded command buffers, vm/replay.h; maintained by the VM):
  uint64_t command_buffer_recordings = 0;  // recordings kept for replay
  uint64_t command_buffer_replays = 0;     // invocations that resubmitted a recording
                                           // (dispatches etc. above count its commands again)
};

// Memory the buffer must live in. On unified-memory devices these may alias.
enum class MemoryKind : uint8_t {
  kDeviceLocal = 0,  // fastest for dispatches; may not be host visible
  kHostVisible = 1,  // mappable; used for staging and for results read back
};

// Timeline semaphore: a monotonically increasing uint64 payload. A timepoint
// is a (semaphore, value) pair.
class Semaphore : public RefObject {
 public:
  virtual StatusOr<uint64_t> Query() = 0;
  virtual Status Signal(uint64_t value) = 0;  // host signal
  // Blocks until payload >= value or `timeout_ns` elapses (kResourceExhausted
  // is never used here: a timeout returns kDeadlineExceeded).
  virtual Status Wait(uint64_t value, uint64_t timeout_ns) = 0;
  // Blocks until no submitted device work waits on or signals this
  // semaphore any more (what its destruction waits for, without a limit),
  // or `timeout_ns` elapses: kDeadlineExceeded (0 polls).
  virtual Status WaitUnused(uint64_t timeout_ns) = 0;
};

struct SemaphorePoint {
  Semaphore* semaphore = nullptr;
  uint64_t value = 0;
};

// Device bytes charged to one context's memory budget (vm::HalModule): the
// live allocations its modules made. Buffers credit their bytes back when
// freed, on whichever thread releases them.
class MemoryAccount : public RefObject {
 public:
  std::atomic<uint64_t> live{0};  // bytes
};

// A device allocation. `size()` is in bytes. A buffer may be created as a
// subspan of another (see Device::CreateSubspan); a subspan retains its
// parent allocation until it is released.
class Buffer : public RefObject {
 public:
  virtual uint64_t size() const = 0;
  virtual MemoryKind memory_kind() const = 0;
  // Root allocation and this buffer's byte offset within it (0 for roots).
  virtual Buffer* allocation() = 0;
  virtual uint64_t allocation_offset() const = 0;
  // Host access. Valid only when the device reports the memory host visible;
  // otherwise returns kFailedPrecondition. Ranges are byte offsets into this
  // buffer and are bounds-checked (kOutOfRange).
  virtual Status Write(uint64_t offset, const void* data, uint64_t length) = 0;
  virtual Status Read(uint64_t offset, void* data, uint64_t length) = 0;

  // The timepoint after which device work already submitted has finished
  // writing this allocation, for host access to wait on (kiln_tensor_read /
  // kiln_tensor_write). Set on root allocations (allocation()) by the C API
  // when an asynchronous invocation returns results or fills output storage
  // in them; null semaphore: nothing pending. A later mark replaces an
  // earlier one (the queue runs invocations in order). Set and read by the
  // thread that uses the buffer's tensors.
  Ref<Semaphore> pending_write_semaphore;
  uint64_t pending_write_value = 0;
  // The bound on those host waits: the writing context's wait timeout
  // (kiln_context_options_t::wait_timeout_ns; UINT64_MAX: none).
  uint64_t pending_write_timeout_ns = UINT64_MAX;

  // Set on a root allocation by the context that made it when that context
  // has a memory budget: the account charged with `account_bytes`, credited
  // back when the allocation is freed.
  void Charge(Ref<MemoryAccount> to, uint64_t bytes) {
    account_ = std::move(to);
    account_bytes_ = bytes;
    account_->live += bytes;
  }

 protected:
  ~Buffer() override {
    if (account_) account_->live -= account_bytes_;
  }

 private:
  Ref<MemoryAccount> account_;
  uint64_t account_bytes_ = 0;
};

// How a dispatch binding reaches the shader (module format: BindingKind).
enum class BindingKind : uint8_t {
  // A storage buffer (GLSL `buffer`), read and written per element.
  kStorageBuffer = 0,
  // A read-only uniform texel buffer of R32G32B32A32_SFLOAT texels (GLSL
  // `samplerBuffer`, read with texelFetch): 16 bytes per fetch. The bound
  // range's absolute offset must be a multiple of
  // DeviceInfo::min_texel_buffer_offset_alignment and its length a multiple
  // of 16 bytes, at most max_texel_buffer_elements texels. The Vulkan HAL
  // creates one VkBufferView per (allocation, offset, length) and keeps it
  // with the allocation. Why: on CPU drivers (lavapipe, Mesa 22.3) a texel
  // fetch is a branch-free gather of 4 floats per lane, where a storage-buffer
  // load is a bounds-checked loop over the SIMD lanes per element.
  kUniformTexelBuffer = 1,
};

// Compiled SPIR-V with its entry points, created once per module load (with a
// pipeline cache on Vulkan).
struct EntryPointInfo {
  HostString name;             // SPIR-V entry point name
  uint32_t binding_count = 0;   // descriptors at set 0, bindings 0..n-1
  uint32_t push_constant_bytes = 0;
  uint32_t workgroup_size[3] = {1, 1, 1};
  // Values of the specialization constants with constant_id 1..N, 32 bits
  // each (constant_id 0 is the driver's: its exact-FMA choice, for older modules).
  HostVector<uint32_t> specialization;
  // binding_readonly[b] != 0: the module declares binding b read-only (the
  // SPIR-V must not write it; a borrowed argument may be bound there). Empty
  // or shorter than binding_count: the rest are writable.
  HostVector<uint8_t> binding_readonly;
  // binding_kinds[b]: BindingKind of binding b. Empty or shorter than
  // binding_count: the rest are storage buffers. A texel binding is read-only.
  HostVector<BindingKind> binding_kinds;
  // fma() must round once on this device too (the module's
  // EntryPoint.exact_fma): a driver that splits fma() gets the executable's
  // SPIR-V with an exact emulation spliced in (hal/vulkan
  // exact_fma_splice.h) when any entry point asks for it.
  bool exact_fma = true;

  BindingKind kind(uint32_t binding) const {
    return binding < binding_kinds.size() ? binding_kinds[binding] : BindingKind::kStorageBuffer;
  }
};
class Executable : public RefObject {
 public:
  virtual uint32_t entry_point_count() const = 0;
  virtual const EntryPointInfo& entry_point(uint32_t ordinal) const = 0;
};

// A byte range of a buffer bound to a dispatch.
struct BufferBinding {
  Buffer* buffer = nullptr;  // borrowed; must stay alive until execution ends
  uint64_t offset = 0;       // bytes
  uint64_t length = 0;       // bytes; 0 means "to the end"
};

// A buffer memory barrier covering only [offset, offset+length) bytes: the
// writes of earlier commands to that range become visible to later reads.
struct BufferBarrier {
  Buffer* buffer = nullptr;
  uint64_t offset = 0;
  uint64_t length = 0;
};

// A pool of `count()` GPU timestamp queries (Vulkan: a VkQueryPool of
// VK_QUERY_TYPE_TIMESTAMP). Profiling only: nothing on the invoke path creates
// or writes one. Created by Device::CreateTimestampQueryPool; a query must be
// reset (CommandBuffer::ResetQueries) before each write
// (CommandBuffer::WriteTimestamp) in the same or an earlier submission.
class QueryPool : public RefObject {
 public:
  virtual uint32_t count() const = 0;
  // Copies the raw ticks of queries [first, first+count) into `ticks` (each
  // masked to DeviceInfo::timestamp_valid_bits). Call only after the
  // submission that wrote them has completed (its signal waited on).
  // Errors: kOutOfRange (range outside the pool); kFailedPrecondition when a
  // query has no result (never written since its reset, or not yet
  // executed); driver errors. Never blocks.
  virtual Status ReadTimestamps(uint32_t first, uint32_t count, uint64_t* ticks) = 0;
};

// Nanoseconds from timestamp `begin` to `end` (raw ticks from
// QueryPool::ReadTimestamps): the difference is taken modulo
// 2^valid_bits (a counter that wrapped once between the two), then scaled by
// `period_ns` (DeviceInfo::timestamp_period_ns, ns per tick).
inline double TimestampDeltaNs(uint64_t begin, uint64_t end, uint32_t valid_bits,
                               double period_ns) {
  uint64_t mask = valid_bits >= 64 ? ~0ull : ((1ull << valid_bits) - 1);
  return static_cast<double>((end - begin) & mask) * period_ns;
}

// Records commands. Begin() is implicit at creation; End() must be called
// before submission. Buffers referenced by recorded commands are retained by
// the command buffer until it is destroyed or reset.
class CommandBuffer : public RefObject {
 public:
  // Records a compute dispatch of `workgroup_count` workgroups.
  // `push_constants` is `push_constant_bytes` bytes (entry point layout).
  virtual Status Dispatch(Executable* executable, uint32_t entry_point,
                          const uint32_t workgroup_count[3],
                          const void* push_constants, uint32_t push_constant_bytes,
                          const BufferBinding* bindings, uint32_t binding_count) = 0;
  // Records compute->compute/transfer barriers for the given byte ranges.
  // Retains each named buffer until Reset, as dispatches, copies and fills
  // do (a barrier may be the only command naming a buffer).
  virtual Status Barrier(const BufferBarrier* barriers, uint32_t count) = 0;
  // Full execution + memory barrier (used when ranges are unknown).
  virtual Status ExecutionBarrier() = 0;
  // Declares what the host reads once this submission's signal has been
  // waited on: records device writes -> host read barriers (Vulkan: one
  // VkBufferMemoryBarrier to VK_ACCESS_HOST_READ_BIT per range) for exactly
  // the given byte ranges, and none when `count` is 0. A command buffer that
  // called it (any count, since creation or Reset) gets nothing more at
  // End(); one that never did gets one global device-writes -> host-read
  // memory barrier at End() when it recorded commands (callers that do not
  // know their ranges: tests, tools). Compiled modules declare (the
  // compiler's host barriers, compiler/transforms/place_barriers.h).
  // Retains each named buffer until Reset. Errors: as Barrier.
  virtual Status HostReadBarrier(const BufferBarrier* barriers, uint32_t count) = 0;
  virtual Status CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                            uint64_t target_offset, uint64_t length) = 0;
  // Fills `length` bytes (multiple of 4) with the 32-bit `pattern`.
  virtual Status FillBuffer(Buffer* target, uint64_t offset, uint64_t length,
                            uint32_t pattern) = 0;
  virtual Status End() = 0;
  // Makes the command buffer recordable again (releases retained buffers).
  virtual Status Reset() = 0;
  // Whether recorded commands retain `buffer` (each retained buffer holds
  // exactly one reference from this command buffer until Reset). Lets the VM
  // tell references held only by in-flight work (queue-ordered) from other
  // holders. Cost: linear in the distinct buffers recorded.
  virtual bool Retains(const Buffer* buffer) const = 0;

  // --- Profiling (timestamp queries; off the invoke path) -------------------
  // Resets queries [first, first+count) of `pool` so they can be written
  // again; records the reset into this command buffer. Retains `pool` until
  // Reset. Errors: kOutOfRange, kFailedPrecondition (not recording),
  // kUnimplemented (the driver has no timestamp queries; the default).
  virtual Status ResetQueries(QueryPool* pool, uint32_t first, uint32_t count) {
    (void)pool, (void)first, (void)count;
    return UnimplementedError("CommandBuffer::ResetQueries: this driver has no timestamp queries");
  }
  // Records a timestamp write into query `index` of `pool`, taken once every
  // command recorded before it has completed (Vulkan: vkCmdWriteTimestamp at
  // BOTTOM_OF_PIPE), so the difference of two writes around a command is the
  // time that command added to the queue. Retains `pool` until Reset.
  // Errors as ResetQueries.
  virtual Status WriteTimestamp(QueryPool* pool, uint32_t index) {
    (void)pool, (void)index;
    return UnimplementedError("CommandBuffer::WriteTimestamp: this driver has no timestamp queries");
  }
};

struct DeviceInfo {
  HostString name;        // e.g. "llvmpipe (LLVM 15.0.6, 256 bits)"
  HostString driver;      // "vulkan"
  bool unified_memory = false;  // all device-local memory is host visible
  uint64_t max_storage_buffer_range = 0;
  uint32_t min_storage_buffer_offset_alignment = 16;
  // Compute limits (defaults: the Vulkan-guaranteed minimums).
  uint32_t max_push_constants_size = 128;          // bytes
  uint32_t max_bound_storage_buffers = 4;          // per dispatch (per stage)
  // Uniform texel buffers (BindingKind::kUniformTexelBuffer), Vulkan's
  // maxPerStageDescriptorSampledImages, minTexelBufferOffsetAlignment and
  // maxTexelBufferElements (defaults: the Vulkan-guaranteed values).
  uint32_t max_bound_texel_buffers = 16;           // per dispatch (per stage)
  uint32_t min_texel_buffer_offset_alignment = 256;  // bytes
  uint32_t max_texel_buffer_elements = 65536;      // texels
  uint32_t max_compute_workgroup_invocations = 128;
  uint32_t max_compute_workgroup_size[3] = {128, 128, 64};
  uint32_t max_compute_workgroup_count[3] = {65535, 65535, 65535};
  // Optional features the driver enabled, e.g. "shaderFloat16",
  // "storageBuffer16BitAccess", "synchronization2", "push_descriptor",
  // "validation".
  HostVector<HostString> features;
  // Appended (profiling): GPU timestamps on the compute queue. 0 valid bits:
  // the device cannot time commands (Device::CreateTimestampQueryPool fails).
  uint32_t timestamp_valid_bits = 0;  // Vulkan: the queue family's timestampValidBits
  double timestamp_period_ns = 0;     // ns per tick (VkPhysicalDeviceLimits::timestampPeriod)
};

class Device : public RefObject {
 public:
  virtual const DeviceInfo& info() const = 0;
  // Allocates `size` bytes (rounded up to 16). Counts in stats().
  virtual StatusOr<Ref<Buffer>> AllocateBuffer(uint64_t size, MemoryKind kind) = 0;
  // A view of [offset, offset+length) of `parent`; retains `parent`.
  virtual StatusOr<Ref<Buffer>> CreateSubspan(Buffer* parent, uint64_t offset,
                                              uint64_t length) = 0;
  // Creates compute pipelines for every entry point of `spirv` (words).
  virtual StatusOr<Ref<Executable>> CreateExecutable(
      const uint32_t* spirv, size_t word_count,
      const HostVector<EntryPointInfo>& entry_points) = 0;
  virtual StatusOr<Ref<CommandBuffer>> CreateCommandBuffer() = 0;
  virtual StatusOr<Ref<Semaphore>> CreateSemaphore(uint64_t initial_value) = 0;
  // Submits `command_buffer` after all `waits` are reached; signals `signals`
  // when it completes. Does not block.
  virtual Status QueueExecute(CommandBuffer* command_buffer,
                              const SemaphorePoint* waits, uint32_t wait_count,
                              const SemaphorePoint* signals, uint32_t signal_count) = 0;
  // Blocks until all work submitted so far is done, or `timeout_ns`
  // nanoseconds elapse (UINT64_MAX: no limit): then kFailedPrecondition with
  // "timeout" in the message, and nothing changes (the work stays queued).
  virtual Status WaitIdle(uint64_t timeout_ns = UINT64_MAX) = 0;
  virtual Stats& stats() = 0;
  // A pool of `count` (>= 1) timestamp queries (profiling only). Errors:
  // kUnimplemented when the device has no timestamps on its compute queue
  // (info().timestamp_valid_bits == 0; the default), kInvalidArgument for
  // count 0, driver errors.
  virtual StatusOr<Ref<QueryPool>> CreateTimestampQueryPool(uint32_t count) {
    (void)count;
    return UnimplementedError("Device::CreateTimestampQueryPool: device '%s' has no timestamp queries",
                              info().name.c_str());
  }
};

// Options for creating a device.
struct DeviceOptions {
  // Select by index in enumeration order (-1: first) or by a case-insensitive
  // substring of the device name (empty: any). Name wins when both are set.
  int index = -1;
  HostString name;
  // Enable VK_LAYER_KHRONOS_validation with synchronization validation (also
  // forced by env KILN_VALIDATION=1); every message is printed to stderr and
  // counted (hal/driver.h ValidationMessageCount()). kNotFound if the layer
  // is not installed.
  bool validation = false;
};

}  // namespace kiln::hal

#endif  // KILN_HAL_API_H_
