// VulkanBuffer: hal::Buffer backed by one VkBuffer + one VkDeviceMemory.
//
// Roots own a VkBuffer (usage STORAGE|UNIFORM_TEXEL|TRANSFER_SRC|TRANSFER_DST) bound to a
// dedicated VkDeviceMemory allocation of ceil16(size) bytes (no sub-allocator
// yet: one vkAllocateMemory per buffer). Memory type choice:
//   kDeviceLocal: DEVICE_LOCAL (prefer types that are not host visible only if
//                 no unified type exists; on lavapipe all types coincide);
//   kHostVisible: HOST_VISIBLE, preferring HOST_COHERENT, then HOST_CACHED.
// Any host-visible memory is mapped persistently at allocation, so Write/Read
// also work on device-local buffers of unified-memory devices.
//
// Subspans are views [offset, offset+length) of a parent; they retain the
// parent (and through it the root), are not allocations and do not count in
// Stats. Every buffer retains its VulkanDevice.
//
// Stats (root buffers only): device_allocations += 1 and
// device_bytes_allocated += ceil16(size) at allocation; device_bytes_live
// follows allocations and frees; device_peak_bytes is its high-water mark.
#ifndef KILN_HAL_VULKAN_VULKAN_BUFFER_H_
#define KILN_HAL_VULKAN_VULKAN_BUFFER_H_

#include "hal/vulkan/vulkan_symbols.h"

#include "hal/api.h"

namespace kiln::hal::vulkan {

class VulkanDevice;

class VulkanBuffer final : public Buffer {
 public:
  // Allocates a root buffer of `size` bytes (size 0 allocates 16 bytes and
  // reports size() == 0). Errors: kResourceExhausted when size exceeds the
  // heap or maxMemoryAllocationSize, or on VK_ERROR_OUT_OF_*_MEMORY;
  // kInternal for other Vulkan failures. Cost: one vkCreateBuffer +
  // vkAllocateMemory (+ vkMapMemory); not for hot paths.
  static StatusOr<Ref<VulkanBuffer>> Allocate(VulkanDevice* device, uint64_t size,
                                              MemoryKind kind);
  // A view of [offset, offset+length) bytes of `parent`; retains `parent`.
  // kOutOfRange if the range exceeds the parent. Cost: one host allocation.
  static StatusOr<Ref<VulkanBuffer>> CreateSubspan(VulkanBuffer* parent, uint64_t offset,
                                                   uint64_t length);

  // hal::Buffer
  uint64_t size() const override { return size_; }
  MemoryKind memory_kind() const override { return kind_; }
  Buffer* allocation() override { return root_; }
  uint64_t allocation_offset() const override { return offset_; }
  // Bounds-checked memcpy through the persistent mapping (flush/invalidate of
  // the nonCoherentAtomSize-aligned range on non-coherent memory).
  // Errors: kFailedPrecondition if the memory is not host visible;
  // kOutOfRange if [offset, offset+length) exceeds size(); kInvalidArgument
  // for a null pointer with nonzero length.
  Status Write(uint64_t offset, const void* data, uint64_t length) override;
  Status Read(uint64_t offset, void* data, uint64_t length) override;

  // Driver-internal.
  VulkanDevice* device() const { return device_; }
  VkBuffer handle() const { return root_->buffer_; }
  bool host_visible() const { return root_->mapped_ != nullptr; }
  // The R32G32B32A32_SFLOAT VkBufferView of [absolute_offset, +length) bytes
  // of the root allocation (BindingKind::kUniformTexelBuffer), created on
  // first use and kept by the root until it is destroyed: a program binds the
  // same arena ranges on every invoke, so views cost one vkCreateBufferView
  // per range per buffer's life. The caller has checked alignment and
  // length (hal/command_checks.h CheckBinding). Errors: kResourceExhausted
  // on out of memory, kInternal for other Vulkan failures. Not thread-safe
  // for concurrent recording against one allocation (nor is recording).
  StatusOr<VkBufferView> TexelView(uint64_t absolute_offset, uint64_t length);
  // Checks [offset, offset+length) lies within this buffer (overflow-safe).
  bool InBounds(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

 private:
  VulkanBuffer() = default;
  ~VulkanBuffer() override;
  Status FlushOrInvalidate(uint64_t absolute_offset, uint64_t length, bool flush);

  VulkanDevice* device_ = nullptr;  // retained
  VulkanBuffer* root_ = this;       // this, or the root allocation (retained via parent_)
  VulkanBuffer* parent_ = nullptr;  // retained; null for roots
  uint64_t size_ = 0;               // bytes visible through this buffer
  uint64_t offset_ = 0;             // bytes from the start of the root
  MemoryKind kind_ = MemoryKind::kDeviceLocal;

  // Root-only state.
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  uint64_t allocated_bytes_ = 0;  // ceil16(size), counted in Stats
  uint64_t memory_size_ = 0;      // VkMemoryRequirements::size actually allocated
  uint8_t* mapped_ = nullptr;     // persistent mapping or null
  struct View {
    uint64_t offset, length;
    VkBufferView view;
  };
  HostVector<View> views_;        // TexelView's cache
  bool coherent_ = true;
};

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_VULKAN_BUFFER_H_
