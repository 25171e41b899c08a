#include "hal/vulkan/vulkan_buffer.h"

#include <cstring>
#include <new>
#include <string>

#include "hal/vulkan/vulkan_device.h"
#include "hal/vulkan/vulkan_status.h"

namespace kiln::hal::vulkan {
namespace {

// Index of the best memory type among `type_bits` for `kind`, or -1.
int SelectMemoryType(const VkPhysicalDeviceMemoryProperties& properties, uint32_t type_bits,
                     MemoryKind kind) {
  int best = -1;
  int best_score = -1;
  for (uint32_t i = 0; i < properties.memoryTypeCount; ++i) {
    if (!(type_bits & (1u << i))) continue;
    VkMemoryPropertyFlags flags = properties.memoryTypes[i].propertyFlags;
    // Never pick protected or lazily allocated memory for storage buffers.
    if (flags & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)) {
      continue;
    }
    bool device_local = flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    bool host_visible = flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT;
    bool coherent = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    bool cached = flags & VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int score = 0;
    if (kind == MemoryKind::kDeviceLocal) {
      // Device-local first; on discrete GPUs avoid the small host-visible BAR
      // window when a plain device-local type exists.
      score = (device_local ? 4 : 0) + (host_visible ? 0 : 1);
    } else {
      if (!host_visible) continue;
      score = (coherent ? 4 : 0) + (cached ? 2 : 0) + (device_local ? 1 : 0);
    }
    if (score > best_score) {
      best = static_cast<int>(i);
      best_score = score;
    }
  }
  return best;
}

const char* KindName(MemoryKind kind) {
  return kind == MemoryKind::kDeviceLocal ? "device-local" : "host-visible";
}

}  // namespace

StatusOr<Ref<VulkanBuffer>> VulkanBuffer::Allocate(VulkanDevice* device, uint64_t size,
                                                   MemoryKind kind) {
  if (kind != MemoryKind::kDeviceLocal && kind != MemoryKind::kHostVisible) {
    return InvalidArgumentError("AllocateBuffer: unknown MemoryKind %d", static_cast<int>(kind));
  }
  if (size > UINT64_MAX - 15) {
    return ResourceExhaustedError("AllocateBuffer: %llu bytes is too large",
                                  static_cast<unsigned long long>(size));
  }
  const uint64_t rounded = size == 0 ? 16 : (size + 15) & ~uint64_t{15};
  const VkPhysicalDeviceMemoryProperties& memory = device->memory_properties();
  uint64_t largest_heap = 0;
  for (uint32_t i = 0; i < memory.memoryHeapCount; ++i) {
    if (memory.memoryHeaps[i].size > largest_heap) largest_heap = memory.memoryHeaps[i].size;
  }
  if (rounded > largest_heap ||
      (device->max_memory_allocation_size() && rounded > device->max_memory_allocation_size())) {
    return ResourceExhaustedError(
        "AllocateBuffer: %llu bytes exceeds the device's largest heap (%llu bytes) or "
        "maxMemoryAllocationSize (%llu bytes)",
        static_cast<unsigned long long>(rounded), static_cast<unsigned long long>(largest_heap),
        static_cast<unsigned long long>(device->max_memory_allocation_size()));
  }

  VulkanBuffer* self = new (std::nothrow) VulkanBuffer();
  if (!self) return ResourceExhaustedError("AllocateBuffer: out of host memory");
  device->Retain();
  self->device_ = device;
  self->size_ = size;
  self->kind_ = kind;
  Ref<VulkanBuffer> ref = Ref<VulkanBuffer>::Adopt(self);  // destructor frees partial state

  const VulkanDeviceSyms& vk = device->syms();
  VkBufferCreateInfo buffer_info = {};
  buffer_info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  buffer_info.size = rounded;
  buffer_info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                      VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  buffer_info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  KILN_VK_RETURN_IF_ERROR(vk.vkCreateBuffer(device->handle(), &buffer_info, nullptr,
                                            &self->buffer_),
                          "vkCreateBuffer");

  VkMemoryRequirements requirements = {};
  vk.vkGetBufferMemoryRequirements(device->handle(), self->buffer_, &requirements);
  int type = SelectMemoryType(memory, requirements.memoryTypeBits, kind);
  if (type < 0) {
    return ResourceExhaustedError("AllocateBuffer: no %s memory type fits a storage buffer",
                                  KindName(kind));
  }
  uint32_t heap = memory.memoryTypes[type].heapIndex;
  if (requirements.size > memory.memoryHeaps[heap].size) {
    return ResourceExhaustedError(
        "AllocateBuffer: %llu bytes exceeds memory heap %u (%llu bytes)",
        static_cast<unsigned long long>(requirements.size), heap,
        static_cast<unsigned long long>(memory.memoryHeaps[heap].size));
  }

  VkMemoryAllocateInfo allocate_info = {};
  allocate_info.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  allocate_info.allocationSize = requirements.size;
  allocate_info.memoryTypeIndex = static_cast<uint32_t>(type);
  VkResult result = vk.vkAllocateMemory(device->handle(), &allocate_info, nullptr, &self->memory_);
  if (result != VK_SUCCESS) {
    self->memory_ = VK_NULL_HANDLE;
#if KILN_STATUS_MESSAGES
    return Status(VkResultCode(result),
                  std::string("vkAllocateMemory(") + std::to_string(requirements.size) +
                      " bytes, " + KindName(kind) + "): " + VkResultName(result));
#else
    return Status(VkResultCode(result));
#endif
  }
  self->memory_size_ = requirements.size;
  KILN_VK_RETURN_IF_ERROR(vk.vkBindBufferMemory(device->handle(), self->buffer_, self->memory_, 0),
                          "vkBindBufferMemory");

  VkMemoryPropertyFlags flags = memory.memoryTypes[type].propertyFlags;
  if ((flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) &&
      !(kind == MemoryKind::kDeviceLocal && device->unmapped_device_local())) {
    void* mapped = nullptr;
    KILN_VK_RETURN_IF_ERROR(
        vk.vkMapMemory(device->handle(), self->memory_, 0, VK_WHOLE_SIZE, 0, &mapped),
        "vkMapMemory");
    self->mapped_ = static_cast<uint8_t*>(mapped);
    self->coherent_ = flags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  }

  self->allocated_bytes_ = rounded;
  Stats& stats = device->stats();
  stats.device_allocations += 1;
  stats.device_bytes_allocated += rounded;
  stats.device_bytes_live += rounded;
  if (stats.device_bytes_live > stats.device_peak_bytes) {
    stats.device_peak_bytes = stats.device_bytes_live;
  }
  return ref;
}

StatusOr<Ref<VulkanBuffer>> VulkanBuffer::CreateSubspan(VulkanBuffer* parent, uint64_t offset,
                                                        uint64_t length) {
  if (!parent->InBounds(offset, length)) {
    return OutOfRangeError(
        "CreateSubspan: range [%llu, +%llu) exceeds parent buffer of %llu bytes",
        static_cast<unsigned long long>(offset), static_cast<unsigned long long>(length),
        static_cast<unsigned long long>(parent->size()));
  }
  VulkanBuffer* self = new (std::nothrow) VulkanBuffer();
  if (!self) return ResourceExhaustedError("CreateSubspan: out of host memory");
  parent->device_->Retain();
  parent->Retain();
  self->device_ = parent->device_;
  self->parent_ = parent;
  self->root_ = parent->root_;
  self->size_ = length;
  self->offset_ = parent->offset_ + offset;
  self->kind_ = parent->kind_;
  return Ref<VulkanBuffer>::Adopt(self);
}

VulkanBuffer::~VulkanBuffer() {
  if (parent_) {
    parent_->Release();
  } else if (device_) {
    const VulkanDeviceSyms& vk = device_->syms();
    for (const View& v : views_) vk.vkDestroyBufferView(device_->handle(), v.view, nullptr);
    if (buffer_ != VK_NULL_HANDLE) vk.vkDestroyBuffer(device_->handle(), buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) {
      // Freeing memory implicitly unmaps it.
      vk.vkFreeMemory(device_->handle(), memory_, nullptr);
    }
    if (allocated_bytes_) device_->stats().device_bytes_live -= allocated_bytes_;
  }
  if (device_) device_->Release();
}

StatusOr<VkBufferView> VulkanBuffer::TexelView(uint64_t absolute_offset, uint64_t length) {
  VulkanBuffer* root = root_;
  for (const View& v : root->views_) {
    if (v.offset == absolute_offset && v.length == length) return v.view;
  }
  VkBufferViewCreateInfo info = {};
  info.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO;
  info.buffer = root->buffer_;
  info.format = VK_FORMAT_R32G32B32A32_SFLOAT;
  info.offset = absolute_offset;
  info.range = length;
  VkBufferView view = VK_NULL_HANDLE;
  KILN_VK_RETURN_IF_ERROR(device_->syms().vkCreateBufferView(device_->handle(), &info, nullptr, &view),
                          "vkCreateBufferView");
  root->views_.push_back(View{absolute_offset, length, view});
  return view;
}

Status VulkanBuffer::FlushOrInvalidate(uint64_t absolute_offset, uint64_t length, bool flush) {
  VulkanBuffer* root = root_;
  if (root->coherent_ || length == 0) return OkStatus();
  const uint64_t atom = device_->limits().nonCoherentAtomSize ? device_->limits().nonCoherentAtomSize : 1;
  uint64_t begin = absolute_offset / atom * atom;
  uint64_t end = absolute_offset + length;
  end = (end + atom - 1) / atom * atom;
  VkMappedMemoryRange range = {};
  range.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE;
  range.memory = root->memory_;
  range.offset = begin;
  range.size = end >= root->memory_size_ ? VK_WHOLE_SIZE : end - begin;
  const VulkanDeviceSyms& vk = device_->syms();
  if (flush) {
    KILN_VK_RETURN_IF_ERROR(vk.vkFlushMappedMemoryRanges(device_->handle(), 1, &range),
                            "vkFlushMappedMemoryRanges");
  } else {
    KILN_VK_RETURN_IF_ERROR(vk.vkInvalidateMappedMemoryRanges(device_->handle(), 1, &range),
                            "vkInvalidateMappedMemoryRanges");
  }
  return OkStatus();
}

Status VulkanBuffer::Write(uint64_t offset, const void* data, uint64_t length) {
  if (!host_visible()) {
    return FailedPreconditionError("Buffer::Write: buffer memory is not host visible");
  }
  if (!InBounds(offset, length)) {
    return OutOfRangeError("Buffer::Write: range [%llu, +%llu) exceeds buffer of %llu bytes",
                           static_cast<unsigned long long>(offset),
                           static_cast<unsigned long long>(length),
                           static_cast<unsigned long long>(size_));
  }
  if (length == 0) return OkStatus();
  if (!data) return InvalidArgumentError("Buffer::Write: data is null");
  std::memcpy(root_->mapped_ + offset_ + offset, data, length);
  return FlushOrInvalidate(offset_ + offset, length, /*flush=*/true);
}

Status VulkanBuffer::Read(uint64_t offset, void* data, uint64_t length) {
  if (!host_visible()) {
    return FailedPreconditionError("Buffer::Read: buffer memory is not host visible");
  }
  if (!InBounds(offset, length)) {
    return OutOfRangeError("Buffer::Read: range [%llu, +%llu) exceeds buffer of %llu bytes",
                           static_cast<unsigned long long>(offset),
                           static_cast<unsigned long long>(length),
                           static_cast<unsigned long long>(size_));
  }
  if (length == 0) return OkStatus();
  if (!data) return InvalidArgumentError("Buffer::Read: data is null");
  KILN_RETURN_IF_ERROR(FlushOrInvalidate(offset_ + offset, length, /*flush=*/false));
  std::memcpy(data, root_->mapped_ + offset_ + offset, length);
  return OkStatus();
}

}  // namespace kiln::hal::vulkan
