#include "hal/vulkan/vulkan_command_buffer.h"

#include <algorithm>
#include <new>

#include "hal/command_checks.h"
#include "hal/vulkan/vulkan_buffer.h"
#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_executable.h"
#include "hal/vulkan/vulkan_query_pool.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

constexpr VkPipelineStageFlags kDeviceStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
constexpr VkAccessFlags kDeviceWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr VkAccessFlags kDeviceAccesses = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                          VK_ACCESS_TRANSFER_READ_BIT |
                                          VK_ACCESS_TRANSFER_WRITE_BIT;
constexpr uint32_t kPoolSets = 64;
constexpr uint32_t kPoolDescriptors = 512;

#if KILN_BARRIER_OBSERVER
BufferBarrierObserver g_barrier_observer = nullptr;
void* g_barrier_observer_user = nullptr;
#endif

}  // namespace

#if KILN_BARRIER_OBSERVER
void SetBufferBarrierObserverForTesting(BufferBarrierObserver observer, void* user) {
  g_barrier_observer = observer;
  g_barrier_observer_user = user;
}
#endif

StatusOr<Ref<VulkanCommandBuffer>> VulkanCommandBuffer::Create(VulkanDevice* device) {
  VulkanCommandBuffer* self = new (std::nothrow) VulkanCommandBuffer();
  if (!self) return ResourceExhaustedError("CreateCommandBuffer: out of host memory");
  device->Retain();
  self->device_ = device;
  Ref<VulkanCommandBuffer> ref = Ref<VulkanCommandBuffer>::Adopt(self);

  VkCommandBufferAllocateInfo allocate_info = {};
  allocate_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  allocate_info.commandPool = device->command_pool();
  allocate_info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  allocate_info.commandBufferCount = 1;
  KILN_VK_RETURN_IF_ERROR(device->syms().vkAllocateCommandBuffers(
                              device->handle(), &allocate_info, &self->command_buffer_),
                          "vkAllocateCommandBuffers");
  self->scratch_infos_.reserve(16);
  self->scratch_writes_.reserve(16);
  self->scratch_barriers_.reserve(16);
  self->submission_signals_.reserve(4);
  KILN_RETURN_IF_ERROR(self->Begin());
  return ref;
}

VulkanCommandBuffer::~VulkanCommandBuffer() {
  if (!device_) return;
  // The GPU may still read this command buffer and the resources it retains.
  (void)device_->WaitSubmission(submission_value_);
  const VulkanDeviceSyms& vk = device_->syms();
  if (command_buffer_ != VK_NULL_HANDLE) {
    vk.vkFreeCommandBuffers(device_->handle(), device_->command_pool(), 1, &command_buffer_);
  }
  for (Pool& pool : pools_) vk.vkDestroyDescriptorPool(device_->handle(), pool.pool, nullptr);
  retained_buffers_.clear();
  retained_executables_.clear();
  submission_signals_.clear();
  device_->Release();
}

Status VulkanCommandBuffer::Begin() {
  VkCommandBufferBeginInfo begin_info = {};
  begin_info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  KILN_VK_RETURN_IF_ERROR(device_->syms().vkBeginCommandBuffer(command_buffer_, &begin_info),
                          "vkBeginCommandBuffer");
  // Orders this command buffer after earlier submissions on the queue.
  VkMemoryBarrier barrier = {};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = kDeviceWrites;
  barrier.dstAccessMask = kDeviceAccesses;
  device_->syms().vkCmdPipelineBarrier(command_buffer_, kDeviceStages, kDeviceStages, 0, 1,
                                       &barrier, 0, nullptr, 0, nullptr);
  state_ = State::kRecording;
  has_commands_ = false;
  host_reads_declared_ = false;
  bound_pipeline_ = VK_NULL_HANDLE;
  return OkStatus();
}

Status VulkanCommandBuffer::CheckRecording(const char* op) const {
  if (state_ != State::kRecording) {
    return FailedPreconditionError("CommandBuffer::%s: command buffer is not recording "
                                   "(End() was called; Reset() it first)",
                                   op);
  }
  return OkStatus();
}

Status VulkanCommandBuffer::CheckBuffer(const char* op, Buffer* buffer) const {
  if (!buffer) return InvalidArgumentError("CommandBuffer::%s: buffer is null", op);
  if (static_cast<VulkanBuffer*>(buffer)->device() != device_) {
    return InvalidArgumentError("CommandBuffer::%s: buffer belongs to another device", op);
  }
  return OkStatus();
}

void VulkanCommandBuffer::RetainBuffer(Buffer* buffer) {
  // Distinct buffers only (a program binds few: arena, constants, arguments,
  // results), newest first since consecutive commands repeat them.
  for (size_t i = retained_buffers_.size(); i-- > 0;) {
    if (retained_buffers_[i].get() == buffer) return;
  }
  retained_buffers_.push_back(Ref<Buffer>::Retain(buffer));
}

bool VulkanCommandBuffer::Retains(const Buffer* buffer) const {
  for (const Ref<Buffer>& retained : retained_buffers_) {
    if (retained.get() == buffer) return true;
  }
  return false;
}

void VulkanCommandBuffer::RetainExecutable(Executable* executable) {
  for (const Ref<Executable>& retained : retained_executables_) {
    if (retained.get() == executable) return;
  }
  retained_executables_.push_back(Ref<Executable>::Retain(executable));
}

Status VulkanCommandBuffer::AllocateDescriptorSet(VkDescriptorSetLayout layout,
                                                  uint32_t binding_count,
                                                  VkDescriptorSet* out_set) {
  const VulkanDeviceSyms& vk = device_->syms();
  // Pools are filled in order; a pool's own counters guarantee that the
  // allocation below never fails for lack of space.
  while (current_pool_ < pools_.size() && (pools_[current_pool_].sets_left == 0 ||
                                           pools_[current_pool_].descriptors_left < binding_count)) {
    ++current_pool_;
  }
  if (current_pool_ == pools_.size()) {
    Pool pool;
    pool.sets = kPoolSets;
    pool.descriptors = std::max(kPoolDescriptors, binding_count);
    // Either kind of binding may use up the pool's descriptor budget.
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, pool.descriptors},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, pool.descriptors}};
    VkDescriptorPoolCreateInfo pool_info = {};
    pool_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
    pool_info.maxSets = pool.sets;
    pool_info.poolSizeCount = 2;
    pool_info.pPoolSizes = sizes;
    KILN_VK_RETURN_IF_ERROR(
        vk.vkCreateDescriptorPool(device_->handle(), &pool_info, nullptr, &pool.pool),
        "vkCreateDescriptorPool");
    pool.sets_left = pool.sets;
    pool.descriptors_left = pool.descriptors;
    pools_.push_back(pool);
  }
  Pool& pool = pools_[current_pool_];
  VkDescriptorSetAllocateInfo allocate_info = {};
  allocate_info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  allocate_info.descriptorPool = pool.pool;
  allocate_info.descriptorSetCount = 1;
  allocate_info.pSetLayouts = &layout;
  KILN_VK_RETURN_IF_ERROR(vk.vkAllocateDescriptorSets(device_->handle(), &allocate_info, out_set),
                          "vkAllocateDescriptorSets");
  pool.sets_left -= 1;
  pool.descriptors_left -= binding_count;
  return OkStatus();
}

Status VulkanCommandBuffer::Dispatch(Executable* executable, uint32_t entry_point,
                                     const uint32_t workgroup_count[3],
                                     const void* push_constants, uint32_t push_constant_bytes,
                                     const BufferBinding* bindings, uint32_t binding_count) {
  KILN_RETURN_IF_ERROR(CheckRecording("Dispatch"));
  if (!executable) return InvalidArgumentError("Dispatch: executable is null");
  VulkanExecutable* vk_executable = static_cast<VulkanExecutable*>(executable);
  if (vk_executable->device() != device_) {
    return InvalidArgumentError("Dispatch: executable belongs to another device");
  }
  if (entry_point >= vk_executable->entry_point_count()) {
    return InvalidArgumentError("Dispatch: entry point %u out of range (executable has %u)",
                                entry_point, vk_executable->entry_point_count());
  }
  const EntryPointInfo& info = vk_executable->entry_point(entry_point);
  const VulkanExecutable::Pipeline& pipeline = vk_executable->pipeline(entry_point);
  const DeviceInfo& limits = device_->info();
  KILN_RETURN_IF_ERROR(CheckDispatch(info, pipeline.workgroup_invocations, limits,
                                     workgroup_count, push_constants, push_constant_bytes,
                                     bindings, binding_count));
  scratch_infos_.clear();
  scratch_views_.clear();
  for (uint32_t i = 0; i < binding_count; ++i) {
    const BufferBinding& binding = bindings[i];
    KILN_RETURN_IF_ERROR(CheckBuffer("Dispatch", binding.buffer));
    KILN_ASSIGN_OR_RETURN(uint64_t length, CheckBinding(info, i, limits, binding));
    VulkanBuffer* buffer = static_cast<VulkanBuffer*>(binding.buffer);
    uint64_t absolute = buffer->allocation_offset() + binding.offset;
    scratch_infos_.push_back(VkDescriptorBufferInfo{buffer->handle(), absolute, length});
    VkBufferView view = VK_NULL_HANDLE;
    if (info.kind(i) == BindingKind::kUniformTexelBuffer) {
      KILN_ASSIGN_OR_RETURN(view, buffer->TexelView(absolute, length));
    }
    scratch_views_.push_back(view);
  }

  const VulkanDeviceSyms& vk = device_->syms();
  VkDescriptorSet set = VK_NULL_HANDLE;
  if (binding_count && !pipeline.push_descriptor) {
    KILN_RETURN_IF_ERROR(AllocateDescriptorSet(pipeline.set_layout, binding_count, &set));
  }
  scratch_writes_.clear();
  for (uint32_t i = 0; i < binding_count; ++i) {
    VkWriteDescriptorSet write = {};
    write.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    write.dstSet = set;
    write.dstBinding = i;
    write.descriptorCount = 1;
    if (scratch_views_[i] != VK_NULL_HANDLE) {
      write.descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      write.pTexelBufferView = &scratch_views_[i];
    } else {
      write.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      write.pBufferInfo = &scratch_infos_[i];
    }
    scratch_writes_.push_back(write);
  }

  // --- record ------------------------------------------------------------------
  if (bound_pipeline_ != pipeline.pipeline) {
    vk.vkCmdBindPipeline(command_buffer_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.pipeline);
    bound_pipeline_ = pipeline.pipeline;
  }
  if (binding_count) {
    if (pipeline.push_descriptor) {
      vk.vkCmdPushDescriptorSetKHR(command_buffer_, VK_PIPELINE_BIND_POINT_COMPUTE,
                                   pipeline.layout, 0, binding_count, scratch_writes_.data());
    } else {
      vk.vkUpdateDescriptorSets(device_->handle(), binding_count, scratch_writes_.data(), 0,
                                nullptr);
      vk.vkCmdBindDescriptorSets(command_buffer_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline.layout,
                                 0, 1, &set, 0, nullptr);
    }
  }
  if (push_constant_bytes) {
    vk.vkCmdPushConstants(command_buffer_, pipeline.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                          push_constant_bytes, push_constants);
  }
  vk.vkCmdDispatch(command_buffer_, workgroup_count[0], workgroup_count[1], workgroup_count[2]);

  RetainExecutable(executable);
  for (uint32_t i = 0; i < binding_count; ++i) RetainBuffer(bindings[i].buffer);
  has_commands_ = true;
  ++device_->stats().dispatches;
  return OkStatus();
}

Status VulkanCommandBuffer::RecordBufferBarriers(const BufferBarrier* barriers, uint32_t count,
                                                 bool host) {
  KILN_RETURN_IF_ERROR(CheckRecording(host ? "HostReadBarrier" : "Barrier"));
  if (host) host_reads_declared_ = true;
  if (count == 0) return OkStatus();
  if (!barriers) return InvalidArgumentError("Barrier: barriers is null");
  scratch_barriers_.clear();
  for (uint32_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(CheckBuffer("Barrier", barriers[i].buffer));
    VulkanBuffer* buffer = static_cast<VulkanBuffer*>(barriers[i].buffer);
    KILN_ASSIGN_OR_RETURN(uint64_t length,
                          CheckBarrierRange(i, *buffer, barriers[i].offset, barriers[i].length));
    if (length == 0) continue;
    VkBufferMemoryBarrier barrier = {};
    barrier.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER;
    barrier.srcAccessMask = kDeviceWrites;
    barrier.dstAccessMask = host ? VK_ACCESS_HOST_READ_BIT : kDeviceAccesses;
    barrier.srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    barrier.buffer = buffer->handle();
    barrier.offset = buffer->allocation_offset() + barriers[i].offset;
    barrier.size = length;
    scratch_barriers_.push_back(barrier);
    // The barrier names the buffer: it must outlive the submission like any
    // buffer a dispatch or copy uses (queue-ordered free).
    RetainBuffer(barriers[i].buffer);
  }
  if (!scratch_barriers_.empty()) {
#if KILN_BARRIER_OBSERVER
    if (g_barrier_observer)
      g_barrier_observer(g_barrier_observer_user, scratch_barriers_.data(),
                         static_cast<uint32_t>(scratch_barriers_.size()));
#endif
    device_->syms().vkCmdPipelineBarrier(command_buffer_, kDeviceStages,
                                         host ? VK_PIPELINE_STAGE_HOST_BIT : kDeviceStages, 0, 0,
                                         nullptr, static_cast<uint32_t>(scratch_barriers_.size()),
                                         scratch_barriers_.data(), 0, nullptr);
  }
  if (!host) ++device_->stats().barriers;
  return OkStatus();
}

Status VulkanCommandBuffer::Barrier(const BufferBarrier* barriers, uint32_t count) {
  return RecordBufferBarriers(barriers, count, /*host=*/false);
}

Status VulkanCommandBuffer::HostReadBarrier(const BufferBarrier* barriers, uint32_t count) {
  return RecordBufferBarriers(barriers, count, /*host=*/true);
}

Status VulkanCommandBuffer::ExecutionBarrier() {
  KILN_RETURN_IF_ERROR(CheckRecording("ExecutionBarrier"));
  VkMemoryBarrier barrier = {};
  barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  barrier.srcAccessMask = kDeviceWrites;
  barrier.dstAccessMask = kDeviceAccesses;
  device_->syms().vkCmdPipelineBarrier(command_buffer_, kDeviceStages, kDeviceStages, 0, 1,
                                       &barrier, 0, nullptr, 0, nullptr);
  ++device_->stats().barriers;
  return OkStatus();
}

Status VulkanCommandBuffer::CopyBuffer(Buffer* source, uint64_t source_offset, Buffer* target,
                                       uint64_t target_offset, uint64_t length) {
  KILN_RETURN_IF_ERROR(CheckRecording("CopyBuffer"));
  KILN_RETURN_IF_ERROR(CheckBuffer("CopyBuffer", source));
  KILN_RETURN_IF_ERROR(CheckBuffer("CopyBuffer", target));
  VulkanBuffer* src = static_cast<VulkanBuffer*>(source);
  VulkanBuffer* dst = static_cast<VulkanBuffer*>(target);
  KILN_RETURN_IF_ERROR(CheckCopy(*src, source_offset, *dst, target_offset, length));
  if (length == 0) return OkStatus();
  VkBufferCopy region = {};
  region.srcOffset = src->allocation_offset() + source_offset;
  region.dstOffset = dst->allocation_offset() + target_offset;
  region.size = length;
  device_->syms().vkCmdCopyBuffer(command_buffer_, src->handle(), dst->handle(), 1, &region);
  RetainBuffer(source);
  RetainBuffer(target);
  has_commands_ = true;
  Stats& stats = device_->stats();
  ++stats.copies;
  stats.copy_bytes += length;
  return OkStatus();
}

Status VulkanCommandBuffer::FillBuffer(Buffer* target, uint64_t offset, uint64_t length,
                                       uint32_t pattern) {
  KILN_RETURN_IF_ERROR(CheckRecording("FillBuffer"));
  KILN_RETURN_IF_ERROR(CheckBuffer("FillBuffer", target));
  VulkanBuffer* dst = static_cast<VulkanBuffer*>(target);
  KILN_RETURN_IF_ERROR(CheckFill(*dst, offset, length));
  uint64_t absolute = dst->allocation_offset() + offset;
  if (length == 0) return OkStatus();
  device_->syms().vkCmdFillBuffer(command_buffer_, dst->handle(), absolute, length, pattern);
  RetainBuffer(target);
  has_commands_ = true;
  ++device_->stats().fills;
  return OkStatus();
}

Status VulkanCommandBuffer::End() {
  KILN_RETURN_IF_ERROR(CheckRecording("End"));
  if (has_commands_ && !host_reads_declared_) {
    // Device writes -> host reads (nothing declared, HostReadBarrier): every
    // write is readable once the submission's signal has been waited on.
    VkMemoryBarrier barrier = {};
    barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
    barrier.srcAccessMask = kDeviceWrites;
    barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    device_->syms().vkCmdPipelineBarrier(command_buffer_, kDeviceStages,
                                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, nullptr,
                                         0, nullptr);
  }
  KILN_VK_RETURN_IF_ERROR(device_->syms().vkEndCommandBuffer(command_buffer_),
                          "vkEndCommandBuffer");
  state_ = State::kEnded;
  return OkStatus();
}

void VulkanCommandBuffer::NoteSubmitted(uint64_t submission_value, const SemaphorePoint* signals,
                                        uint32_t signal_count) {
  submission_value_ = submission_value;
  submission_signals_.clear();
  for (uint32_t i = 0; i < signal_count; ++i) {
    submission_signals_.push_back(
        Signal{Ref<Semaphore>::Retain(signals[i].semaphore), signals[i].value});
  }
}

StatusOr<bool> VulkanCommandBuffer::Completed() {
  KILN_ASSIGN_OR_RETURN(bool retired, device_->SubmissionRetired(submission_value_));
  if (retired) return true;
  for (Signal& signal : submission_signals_) {
    KILN_ASSIGN_OR_RETURN(uint64_t value, signal.semaphore->Query());
    if (value >= signal.value) return true;
  }
  return false;
}

Status VulkanCommandBuffer::CheckSubmittable() {
  if (state_ != State::kEnded) {
    return FailedPreconditionError("QueueExecute: command buffer must be End()ed before submission");
  }
  KILN_ASSIGN_OR_RETURN(bool completed, Completed());
  if (!completed) {
    return FailedPreconditionError(
        "QueueExecute: command buffer is still executing its previous submission");
  }
  return OkStatus();
}

Status VulkanCommandBuffer::Reset() {
  KILN_ASSIGN_OR_RETURN(bool completed, Completed());
  if (!completed) {
    return FailedPreconditionError(
        "CommandBuffer::Reset: command buffer is still executing (wait for its signal first)");
  }
  const VulkanDeviceSyms& vk = device_->syms();
  KILN_VK_RETURN_IF_ERROR(vk.vkResetCommandBuffer(command_buffer_, 0), "vkResetCommandBuffer");
  for (Pool& pool : pools_) {
    KILN_VK_RETURN_IF_ERROR(vk.vkResetDescriptorPool(device_->handle(), pool.pool, 0),
                            "vkResetDescriptorPool");
    pool.sets_left = pool.sets;
    pool.descriptors_left = pool.descriptors;
  }
  current_pool_ = 0;
  // A buffer held only by this command buffer was released by everyone else
  // while the work was in flight: it is freed now, after its timepoint.
  for (Ref<Buffer>& buffer : retained_buffers_) {
    if (buffer->refcount() == 1) ++device_->stats().deferred_frees;
    buffer.reset();
  }
  retained_buffers_.clear();
  retained_executables_.clear();
  retained_query_pools_.clear();
  submission_signals_.clear();
  submission_value_ = 0;
  return Begin();
}

// --- profiling: timestamp queries (never called on the invoke path) ---------

Status VulkanCommandBuffer::CheckQueryPool(const char* op, QueryPool* pool, uint32_t first,
                                           uint32_t count) {
  KILN_RETURN_IF_ERROR(CheckRecording(op));
  if (!pool) return InvalidArgumentError("CommandBuffer::%s: pool is null", op);
  if (static_cast<VulkanQueryPool*>(pool)->device() != device_) {
    return InvalidArgumentError("CommandBuffer::%s: query pool belongs to another device", op);
  }
  if (first > pool->count() || count > pool->count() - first) {
    return OutOfRangeError("CommandBuffer::%s: queries [%u, %u) outside the pool of %u", op,
                           first, first + count, pool->count());
  }
  for (const Ref<QueryPool>& retained : retained_query_pools_) {
    if (retained.get() == pool) return OkStatus();
  }
  retained_query_pools_.push_back(Ref<QueryPool>::Retain(pool));
  return OkStatus();
}

Status VulkanCommandBuffer::ResetQueries(QueryPool* pool, uint32_t first, uint32_t count) {
  KILN_RETURN_IF_ERROR(CheckQueryPool("ResetQueries", pool, first, count));
  if (count == 0) return OkStatus();
  device_->syms().vkCmdResetQueryPool(command_buffer_,
                                      static_cast<VulkanQueryPool*>(pool)->handle(), first, count);
  return OkStatus();
}

Status VulkanCommandBuffer::WriteTimestamp(QueryPool* pool, uint32_t index) {
  KILN_RETURN_IF_ERROR(CheckQueryPool("WriteTimestamp", pool, index, 1));
  // BOTTOM_OF_PIPE: written once every earlier command has completed.
  device_->syms().vkCmdWriteTimestamp(command_buffer_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                                      static_cast<VulkanQueryPool*>(pool)->handle(), index);
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
