// VulkanCommandBuffer: hal::CommandBuffer over one primary VkCommandBuffer
// allocated from the device's single VkCommandPool.
//
// Lifecycle: recording (from creation, and again after Reset) -> End() ->
// submitted through Device::QueueExecute (any number of times, one at a time)
// -> Reset() or release. Recording calls after End() return
// kFailedPrecondition. Reset() and QueueExecute of a command buffer whose
// previous submission has not retired return kFailedPrecondition. Releasing
// the last reference while a submission is in flight blocks until it retires.
//
// Retention: every buffer and executable a recorded command references is
// retained (once: one reference per distinct buffer) until Reset() or
// destruction.
//
// Implicit synchronization (not counted in Stats::barriers):
//  - Begin (creation / Reset) records a global memory barrier
//    COMPUTE|TRANSFER writes -> COMPUTE|TRANSFER reads/writes, so work in this
//    command buffer is ordered after, and sees the writes of, everything
//    submitted earlier on the device's queue.
//  - End() of a command buffer that recorded commands and never declared
//    its host reads (HostReadBarrier) records a global memory barrier
//    COMPUTE|TRANSFER writes -> HOST reads, so after the submission's signal
//    is waited on, Buffer::Read sees every write.
// Explicit: Barrier() emits one VkBufferMemoryBarrier per range (exact offset
// and size), ExecutionBarrier() a global VkMemoryBarrier; each call counts 1
// in Stats::barriers. HostReadBarrier() emits one VkBufferMemoryBarrier per
// range to HOST_READ at the HOST stage (not counted: like End()'s, it orders
// no device command) and declares the host reads, so End() adds nothing.
//
// Threading: the VkCommandPool is shared per device, so all command buffers
// of a device must be created, recorded, reset and destroyed from one thread
// at a time (the Device's threading rule).
//
// Host allocation: scratch arrays and retention lists keep their capacity
// across Reset(), so re-recording the same work does not allocate.
#ifndef KILN_HAL_VULKAN_VULKAN_COMMAND_BUFFER_H_
#define KILN_HAL_VULKAN_VULKAN_COMMAND_BUFFER_H_

#include "hal/vulkan/vulkan_symbols.h"

#include <vector>

#include "hal/api.h"

namespace kiln::hal::vulkan {

class VulkanDevice;
class VulkanBuffer;

// Test hook: `observer` (null: none) is called by every Barrier() and
// HostReadBarrier() (dstAccessMask VK_ACCESS_HOST_READ_BIT) with the
// VkBufferMemoryBarriers it records (absolute offsets and sizes, as passed
// to vkCmdPipelineBarrier), right before recording them; `user` is passed
// through. Process-wide and unsynchronized: set it before recording and
// clear it after (tests/e2e/barrier_ranges_test.cc reads the barriers a
// compiled program records). Built only with the tests (KILN_BUILD_TESTS:
// KILN_BARRIER_OBSERVER), so shipped runtimes carry none of it.
using BufferBarrierObserver = void (*)(void* user, const VkBufferMemoryBarrier* barriers, uint32_t count);
void SetBufferBarrierObserverForTesting(BufferBarrierObserver observer, void* user);

class VulkanCommandBuffer final : public CommandBuffer {
 public:
  // Allocates and begins a primary command buffer. Errors: VkResult failures
  // (kResourceExhausted on out-of-memory).
  static StatusOr<Ref<VulkanCommandBuffer>> Create(VulkanDevice* device);

  // Errors for all recording calls: kFailedPrecondition when not recording;
  // kInvalidArgument for null buffers/executables, an entry point out of
  // range, a binding/push-constant count that does not match the entry point,
  // a workgroup count above maxComputeWorkGroupCount, a binding range that is
  // empty, exceeds maxStorageBufferRange, or whose absolute offset
  // (allocation_offset + offset) is not a multiple of
  // minStorageBufferOffsetAlignment; kOutOfRange when a range exceeds its
  // buffer. Nothing is recorded when an error is returned.
  Status Dispatch(Executable* executable, uint32_t entry_point,
                  const uint32_t workgroup_count[3], const void* push_constants,
                  uint32_t push_constant_bytes, const BufferBinding* bindings,
                  uint32_t binding_count) override;
  // length 0 in a BufferBarrier means "to the end of the buffer". count == 0
  // records nothing and counts nothing.
  Status Barrier(const BufferBarrier* barriers, uint32_t count) override;
  Status ExecutionBarrier() override;
  // As Barrier, to host reads; count == 0 records nothing (the declaration
  // that the host reads nothing of this submission).
  Status HostReadBarrier(const BufferBarrier* barriers, uint32_t count) override;
  // length 0 is a no-op. Overlapping ranges of one allocation:
  // kInvalidArgument. Counts copies += 1, copy_bytes += length.
  Status CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                    uint64_t target_offset, uint64_t length) override;
  // The absolute offset and the length must be multiples of 4
  // (kInvalidArgument). length 0 is a no-op. Counts fills += 1.
  Status FillBuffer(Buffer* target, uint64_t offset, uint64_t length,
                    uint32_t pattern) override;
  Status End() override;
  Status Reset() override;
  bool Retains(const Buffer* buffer) const override;
  // Profiling (timestamp queries): vkCmdResetQueryPool and
  // vkCmdWriteTimestamp(BOTTOM_OF_PIPE). The pool must belong to this device
  // (kInvalidArgument); it is retained until Reset.
  Status ResetQueries(QueryPool* pool, uint32_t first, uint32_t count) override;
  Status WriteTimestamp(QueryPool* pool, uint32_t index) override;

  // Driver-internal (QueueExecute).
  VkCommandBuffer handle() const { return command_buffer_; }
  // OK when ended and not executing; kFailedPrecondition otherwise.
  Status CheckSubmittable();
  // Records a submission: its device timeline value and the user signals of
  // its batch (retained until the next submission or Reset). The command
  // buffer counts as complete once either the device timeline or any of
  // those signals is reached (signals of one batch may become visible to
  // the host in any order).
  void NoteSubmitted(uint64_t submission_value, const SemaphorePoint* signals,
                     uint32_t signal_count);

 private:
  enum class State { kRecording, kEnded };

  VulkanCommandBuffer() = default;
  ~VulkanCommandBuffer() override;
  Status Begin();
  Status CheckRecording(const char* op) const;
  StatusOr<bool> Completed();
  Status CheckBuffer(const char* op, Buffer* buffer) const;
  Status AllocateDescriptorSet(VkDescriptorSetLayout layout, uint32_t binding_count,
                               VkDescriptorSet* out_set);
  void RetainBuffer(Buffer* buffer);
  // Barrier (host false: device writes -> device accesses, counted) and
  // HostReadBarrier (host true: -> HOST_READ at the HOST stage, declares the
  // host reads): one VkBufferMemoryBarrier per non-empty range.
  Status RecordBufferBarriers(const BufferBarrier* barriers, uint32_t count, bool host);
  void RetainExecutable(Executable* executable);
  // Recording state, pool ownership and range checks; retains `pool`.
  Status CheckQueryPool(const char* op, QueryPool* pool, uint32_t first, uint32_t count);

  VulkanDevice* device_ = nullptr;  // retained
  VkCommandBuffer command_buffer_ = VK_NULL_HANDLE;
  State state_ = State::kRecording;
  bool has_commands_ = false;
  bool host_reads_declared_ = false;  // HostReadBarrier called since Begin
  VkPipeline bound_pipeline_ = VK_NULL_HANDLE;
  uint64_t submission_value_ = 0;  // device timeline value of the last submission

  struct Signal {
    Ref<Semaphore> semaphore;
    uint64_t value;
  };
  HostVector<Signal> submission_signals_;  // of the last submission

  HostVector<Ref<Buffer>> retained_buffers_;
  HostVector<Ref<Executable>> retained_executables_;
  HostVector<Ref<QueryPool>> retained_query_pools_;  // profiling only

  // Descriptor pools for entry points not using push descriptors.
  struct Pool {
    VkDescriptorPool pool = VK_NULL_HANDLE;
    uint32_t sets_left = 0;
    uint32_t descriptors_left = 0;
    uint32_t sets = 0;
    uint32_t descriptors = 0;
  };
  HostVector<Pool> pools_;
  size_t current_pool_ = 0;

  HostVector<VkDescriptorBufferInfo> scratch_infos_;
  HostVector<VkBufferView> scratch_views_;  // per binding; VK_NULL_HANDLE: a storage buffer
  HostVector<VkWriteDescriptorSet> scratch_writes_;
  HostVector<VkBufferMemoryBarrier> scratch_barriers_;
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_COMMAND_BUFFER_H_
