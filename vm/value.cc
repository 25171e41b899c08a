#include "vm/value.h"

#include <cstdlib>
#include <new>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KILN_ASAN 1
#endif
#if KILN_ASAN
#include <sanitizer/asan_interface.h>
#define KILN_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define KILN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define KILN_POISON(p, n) ((void)(p), (void)(n))
#define KILN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace kiln::vm {

namespace {
thread_local uint64_t g_host_allocations = 0;
}  // namespace

uint64_t HostAllocationCount() { return g_host_allocations; }
void CountHostAllocation(uint64_t n) { g_host_allocations += n; }

namespace {
std::mutex g_pools_mutex;
BlockPool* g_pools = nullptr;
}  // namespace

BlockPool::BlockPool(size_t block_size) : block_size_(block_size) {
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  next_pool_ = g_pools;
  g_pools = this;
}

void* BlockPool::Allocate(size_t size) {
  if (size <= block_size_) {
    std::lock_guard<std::mutex> lock(mutex_);
#if !defined(NDEBUG)
    if (!prefilled_) {
      prefilled_ = true;
      if (!free_) {
        CountHostAllocation();
        free_ = static_cast<void**>(HostAllocate(kMaxFreeBlocks * sizeof(void*)));
      }
      for (size_t i = 0; free_ && i < 2 * kQuarantine; ++i) {
        void* block = HostAllocate(block_size_);
        if (!block) break;
        CountHostAllocation();
        KILN_POISON(block, block_size_);
        free_[free_count_++] = block;
      }
    }
#endif
    if (free_count_) {
      void* block = free_[--free_count_];
      KILN_UNPOISON(block, block_size_);
      return block;
    }
  }
  CountHostAllocation();
  return HostAllocate(size > block_size_ ? size : block_size_);
}

void BlockPool::Free(void* block) {
  if (!block) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_) {
      CountHostAllocation();  // once per pool
      free_ = static_cast<void**>(HostAllocate(kMaxFreeBlocks * sizeof(void*)));
    }
    KILN_POISON(block, block_size_);
#if !defined(NDEBUG)
    // The oldest quarantined block (if the ring is full) moves on instead.
    void* entering = block;
    if (quarantine_count_ < kQuarantine) {
      quarantine_[(quarantine_head_ + quarantine_count_++) % kQuarantine] = entering;
      return;
    }
    block = quarantine_[quarantine_head_];
    quarantine_[quarantine_head_] = entering;
    quarantine_head_ = (quarantine_head_ + 1) % kQuarantine;
#endif
    if (free_ && free_count_ < kMaxFreeBlocks) {
      free_[free_count_++] = block;
      return;
    }
  }
  KILN_UNPOISON(block, block_size_);
  HostFree(block);
}

void BlockPool::ReleaseCached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < free_count_; ++i) {
    KILN_UNPOISON(free_[i], block_size_);
    HostFree(free_[i]);
  }
  free_count_ = 0;
#if !defined(NDEBUG)
  for (size_t i = 0; i < quarantine_count_; ++i) {
    void* block = quarantine_[(quarantine_head_ + i) % kQuarantine];
    KILN_UNPOISON(block, block_size_);
    HostFree(block);
  }
  quarantine_count_ = quarantine_head_ = 0;
  prefilled_ = false;
#endif
  HostFree(free_);
  free_ = nullptr;
}

void BlockPool::ReleaseAllPools() {
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  for (BlockPool* pool = g_pools; pool; pool = pool->next_pool_) pool->ReleaseCached();
}

const char* RefTypeName(RefType type) {
  switch (type) {
    case RefType::kNull: return "null";
    case RefType::kBufferView: return "buffer_view";
    case RefType::kBuffer: return "buffer";
    case RefType::kExecutable: return "executable";
    case RefType::kCommandBuffer: return "command_buffer";
    case RefType::kRodata: return "rodata";
  }
  return "unknown";
}

std::string TensorTypeString(DType dtype, const int64_t* dims, size_t rank) {
  std::string s = "tensor<";
  for (size_t i = 0; i < rank; ++i) s += std::to_string(dims[i]) + "x";
  return s + DTypeName(dtype) + ">";
}

StatusOr<Ref<BufferView>> BufferView::Create(Ref<hal::Buffer> buffer, uint64_t byte_offset,
                                             DType dtype, const int64_t* dims, size_t rank) {
  if (!buffer) return InvalidArgumentError("buffer view of a null buffer");
  if (DTypeSize(dtype) == 0) {
    return InvalidArgumentError("buffer view with invalid dtype %d", static_cast<int>(dtype));
  }
  if (rank > kMaxRank) {
    return InvalidArgumentError("buffer view of rank %zu exceeds the maximum rank %zu", rank,
                                kMaxRank);
  }
  uint64_t count = 1;
  const uint64_t kLimit = uint64_t{1} << 48;
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return InvalidArgumentError("buffer view with negative dim %lld",
                                                 static_cast<long long>(dims[i]));
    if (dims[i] != 0 && count > kLimit / static_cast<uint64_t>(dims[i])) {
      return InvalidArgumentError("buffer view shape is too large");
    }
    count *= static_cast<uint64_t>(dims[i]);
  }
  uint64_t bytes = count * DTypeSize(dtype);
  if (byte_offset > buffer->size() || bytes > buffer->size() - byte_offset) {
    return OutOfRangeError(
        "buffer view %s at byte offset %llu (%llu bytes) exceeds its buffer of %llu bytes",
        KILN_STATUS_TEXT(TensorTypeString(dtype, dims, rank).c_str()),
        static_cast<unsigned long long>(byte_offset),
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(buffer->size()));
  }
  Ref<BufferView> view = Ref<BufferView>::Adopt(new BufferView());
  if (!view) return ResourceExhaustedError("out of host memory for a buffer view");
  view->buffer_ = std::move(buffer);
  view->byte_offset_ = byte_offset;
  view->dtype_ = dtype;
  view->rank_ = rank;
  for (size_t i = 0; i < rank; ++i) view->dims_[i] = dims[i];
  view->element_count_ = count;
  return view;
}

StatusOr<Ref<BufferView>> BufferView::CreateSubview(const BufferView& parent,
                                                    uint64_t byte_offset, DType dtype,
                                                    const int64_t* dims, size_t rank) {
  // The window check comes first so that the error names the parent.
  uint64_t bytes = DTypeSize(dtype);
  bool known = bytes != 0 && rank <= kMaxRank;
  for (size_t i = 0; known && i < rank; ++i) {
    if (dims[i] < 0 || (dims[i] != 0 && bytes > (uint64_t{1} << 48) / static_cast<uint64_t>(dims[i]))) {
      known = false;
    } else {
      bytes *= static_cast<uint64_t>(dims[i]);
    }
  }
  if (known && (byte_offset > parent.byte_length() || bytes > parent.byte_length() - byte_offset)) {
    return OutOfRangeError(
        "subview %s at byte offset %llu (%llu bytes) exceeds its parent %s (%llu bytes)",
        KILN_STATUS_TEXT(TensorTypeString(dtype, dims, rank).c_str()),
        static_cast<unsigned long long>(byte_offset),
        static_cast<unsigned long long>(bytes), KILN_STATUS_TEXT(parent.TypeString().c_str()),
        static_cast<unsigned long long>(parent.byte_length()));
  }
  // Invalid dtype/rank/dims: BufferView::Create reports them.
  return Create(Ref<hal::Buffer>::Retain(parent.buffer()), parent.byte_offset() + byte_offset,
                dtype, dims, rank);
}

bool BufferView::Overlaps(const BufferView& other) const {
  if (root() != other.root()) return false;
  uint64_t a = root_offset(), b = other.root_offset();
  uint64_t ae = a + byte_length(), be = b + other.byte_length();
  return a < be && b < ae && a < ae && b < be;
}

bool BufferView::SameType(DType dtype, const int64_t* dims, size_t rank) const {
  if (dtype_ != dtype || rank_ != rank) return false;
  for (size_t i = 0; i < rank; ++i) {
    if (dims_[i] != dims[i]) return false;
  }
  return true;
}

bool BufferView::SameStorageAndType(const BufferView& other) const {
  return root() == other.root() && root_offset() == other.root_offset() &&
         SameType(other.dtype_, other.dims_, other.rank_);
}

}  // namespace kiln::vm
