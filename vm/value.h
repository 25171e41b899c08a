// VM values: the objects a ref register can hold, and the host-allocation
// counter behind Stats.host_allocations_invoke.
//
// Ref registers hold a RefValue: a retained RefObject plus a type tag (the
// runtime is built without RTTI, so the tag is how natives check what they
// were given). Types:
//   kBufferView    vm::BufferView   (tensor crossing the ABI, or made by
//                                    hal.buffer_view.create)
//   kBuffer        hal::Buffer      (allocations, subspans)
//   kExecutable    hal::Executable  (hal.executable.lookup)
//   kCommandBuffer vm::CommandBufferState (hal.command_buffer.create)
//   kRodata        vm::RodataSpan   (RODATA: zero-copy bytes of the module)
#ifndef KILN_VM_VALUE_H_
#define KILN_VM_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "base/dtype.h"
#include "base/ref.h"
#include "base/status.h"
#include "hal/api.h"

namespace kiln::vm {

// --- host allocation accounting ---------------------------------------------

// Thread-local count of host allocations made by the VM, its hal module and
// the C API on this thread (every `new`, container growth and HAL object
// creation on the invoke path calls CountHostAllocation). Context::Invoke adds
// the difference over the call to hal::Stats::host_allocations_invoke.
uint64_t HostAllocationCount();
void CountHostAllocation(uint64_t n = 1);

// A process-wide free list of fixed-size blocks behind the class-specific
// operator new/delete of objects made on every invoke (BufferView, the C
// API's tensor handles): a block freed by `delete` is kept (up to
// kMaxFreeBlocks) and handed to the next `new` of the same class, so the
// steady state makes no host allocation. Only a miss (heap allocation) calls
// CountHostAllocation. Thread-safe (a mutex): handles may be released on any
// thread. Under AddressSanitizer free blocks are poisoned, so a use after
// release is still reported. Blocks come from HostAllocate (the app's
// allocator hook); ReleaseAllPools() hands every cached block back.
//
// Debug builds (NDEBUG undefined) keep the last kQuarantine freed blocks out
// of reuse (FIFO) before they join the free list, so a handle released twice
// is still recognizably dead (the C API's double-release check, see
// runtime/kiln_internal.h). The first allocation pre-fills 2 * kQuarantine
// blocks, so the steady state still makes no host allocation.
class BlockPool {
 public:
  static constexpr size_t kMaxFreeBlocks = 4096;
#if !defined(NDEBUG)
  static constexpr size_t kQuarantine = 64;
#endif
  explicit BlockPool(size_t block_size);
  void* Allocate(size_t size);  // size <= block_size; null when the allocator fails
  void Free(void* block);
  size_t free_blocks() const { return free_count_; }
  // Frees every cached block (and the free list) of every pool; blocks in
  // use stay valid and are freed by their delete. Called when the C API's
  // last instance is released, so an app's allocator sees every block back.
  static void ReleaseAllPools();

 private:
  void ReleaseCached();
  const size_t block_size_;
  // Free blocks, kept outside the blocks themselves so a free block can be
  // poisoned whole (and LeakSanitizer still sees it as reachable).
  void** free_ = nullptr;  // kMaxFreeBlocks slots, allocated on first Free
  size_t free_count_ = 0;
#if !defined(NDEBUG)
  void* quarantine_[kQuarantine] = {};
  size_t quarantine_count_ = 0, quarantine_head_ = 0;
  bool prefilled_ = false;
#endif
  BlockPool* next_pool_ = nullptr;  // every pool, for ReleaseAllPools
  std::mutex mutex_;
};

// Declares pooled operator new/delete for CLASS (inside its definition).
// `new CLASS` yields null when the allocator fails.
#define KILN_POOLED_NEW_DELETE(CLASS)                                               \
 public:                                                                            \
  static void* operator new(size_t size) noexcept { return Pool().Allocate(size); } \
  static void operator delete(void* p) { Pool().Free(p); }                         \
  static ::kiln::vm::BlockPool& Pool() {                                            \
    /* Static storage, never destroyed: handles may be released at exit. */         \
    alignas(::kiln::vm::BlockPool) static unsigned char storage[sizeof(::kiln::vm::BlockPool)]; \
    static ::kiln::vm::BlockPool* pool = new (storage) ::kiln::vm::BlockPool(sizeof(CLASS)); \
    return *pool;                                                                   \
  }

// --- ref values -----------------------------------------------------------

enum class RefType : uint8_t {
  kNull = 0,
  kBufferView = 1,
  kBuffer = 2,
  kExecutable = 3,
  kCommandBuffer = 4,
  kRodata = 5,
};
const char* RefTypeName(RefType type);

// A tagged, retained reference. Copy retains, destruction releases.
class RefValue {
 public:
  RefValue() = default;
  // Retains `object` (may be null).
  RefValue(RefType type, RefObject* object) : type_(object ? type : RefType::kNull), ptr_(object) {
    if (ptr_) ptr_->Retain();
  }
  RefValue(const RefValue& o) : type_(o.type_), ptr_(o.ptr_) { if (ptr_) ptr_->Retain(); }
  RefValue(RefValue&& o) noexcept : type_(o.type_), ptr_(o.ptr_) {
    o.ptr_ = nullptr;
    o.type_ = RefType::kNull;
  }
  RefValue& operator=(RefValue o) noexcept {
    std::swap(type_, o.type_);
    std::swap(ptr_, o.ptr_);
    return *this;
  }
  ~RefValue() { if (ptr_) ptr_->Release(); }

  // Adopts a Ref<T> (no extra retain).
  template <typename T>
  static RefValue Adopt(RefType type, Ref<T> ref) {
    RefValue v;
    v.ptr_ = ref.release();
    v.type_ = v.ptr_ ? type : RefType::kNull;
    return v;
  }

  RefType type() const { return type_; }
  bool is_null() const { return ptr_ == nullptr; }
  RefObject* get() const { return ptr_; }
  // Unchecked downcast; callers check type() first.
  template <typename T>
  T* as() const { return static_cast<T*>(static_cast<RefObject*>(ptr_)); }
  void reset() { RefValue().swap(*this); }
  void swap(RefValue& o) { std::swap(type_, o.type_); std::swap(ptr_, o.ptr_); }

 private:
  RefType type_ = RefType::kNull;
  RefObject* ptr_ = nullptr;
};

// --- buffer views (tensors) -------------------------------------------------

constexpr size_t kMaxRank = 8;

// "tensor<1x3x48x192xf32>", "tensor<f32>" for rank 0.
std::string TensorTypeString(DType dtype, const int64_t* dims, size_t rank);

// A typed, shaped window of a buffer: `byte_offset` bytes into `buffer`,
// dense row-major, DTypeSize(dtype) bytes per element.
//
// Ownership: a view retains its buffer, and a buffer (subspan) retains its
// parent allocation, so any chain of views and subspans keeps the root
// allocation alive exactly until the last of them is released; the root is
// freed once (hal::Buffer is a RefObject). Views of views are flattened:
// CreateSubview resolves to the root storage directly (c -> b -> a all hold
// a's buffer at accumulated offsets).
//
// Exclusive ownership (consume): while a function runs, a view may be marked
// as owned by one frame (owner_serial == that frame's serial; see
// vm/context.h). Only then may hal.buffer_view.take_or_allocate hand its
// storage to the callee. The mark never outlives the frame: serials are
// never reused.
class BufferView : public RefObject {
  KILN_POOLED_NEW_DELETE(BufferView)

 public:
  // Errors: kInvalidArgument for a null buffer, invalid dtype, rank >
  // kMaxRank, negative dims or a size overflow; kOutOfRange when
  // [byte_offset, byte_offset + byte_length) exceeds buffer->size().
  // Host allocation: a pooled block (counted only when the pool is empty).
  static StatusOr<Ref<BufferView>> Create(Ref<hal::Buffer> buffer, uint64_t byte_offset,
                                          DType dtype, const int64_t* dims, size_t rank);
  // A view of `parent`'s storage starting `byte_offset` bytes into the
  // parent's window; the new view must lie inside that window (kOutOfRange).
  // Retains the parent's buffer, not the parent view.
  static StatusOr<Ref<BufferView>> CreateSubview(const BufferView& parent, uint64_t byte_offset,
                                                 DType dtype, const int64_t* dims, size_t rank);

  // Root allocation and the absolute byte range [begin, end) within it.
  hal::Buffer* root() const { return buffer_->allocation(); }
  uint64_t root_offset() const { return buffer_->allocation_offset() + byte_offset_; }
  // True when both views are windows of one allocation with overlapping
  // byte ranges (empty ranges never overlap).
  bool Overlaps(const BufferView& other) const;
  // Same root, same absolute offset, same dtype and dims.
  bool SameStorageAndType(const BufferView& other) const;
  bool SameType(DType dtype, const int64_t* dims, size_t rank) const;

  uint64_t owner_serial() const { return owner_serial_; }
  void set_owner_serial(uint64_t serial) { owner_serial_ = serial; }

  hal::Buffer* buffer() const { return buffer_.get(); }
  uint64_t byte_offset() const { return byte_offset_; }
  DType dtype() const { return dtype_; }
  size_t rank() const { return rank_; }
  const int64_t* dims() const { return dims_; }
  uint64_t element_count() const { return element_count_; }
  uint64_t byte_length() const { return element_count_ * DTypeSize(dtype_); }
  std::string TypeString() const { return TensorTypeString(dtype_, dims_, rank_); }

 private:
  BufferView() = default;
  Ref<hal::Buffer> buffer_;
  uint64_t byte_offset_ = 0;
  DType dtype_ = DType::kInvalid;
  size_t rank_ = 0;
  int64_t dims_[kMaxRank] = {};
  uint64_t element_count_ = 0;
  uint64_t owner_serial_ = 0;  // 0: not owned by any frame
};

// Zero-copy bytes of one rodata segment. Retains the object that owns them
// (the vm::Module).
class RodataSpan : public RefObject {
 public:
  RodataSpan(Ref<RefObject> owner, const uint8_t* data, size_t size)
      : owner_(std::move(owner)), data_(data), size_(size) {}
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Ref<RefObject> owner_;
  const uint8_t* data_;
  size_t size_;
};

// A hal command buffer plus the push constants staged for its next dispatch.
// Pooled per context (vm/hal_module.h): hal.command_buffer.create hands out
// a pooled state no one else holds; execute_and_wait resets the hal command
// buffer once the work is done, so it stops retaining the buffers it used.
class CommandBufferState : public RefObject {
 public:
  static constexpr uint32_t kMaxPushConstantWords = 32;  // 128 bytes
  explicit CommandBufferState(Ref<hal::CommandBuffer> cb) : command_buffer(std::move(cb)) {}
  Ref<hal::CommandBuffer> command_buffer;
  uint32_t push_constants[kMaxPushConstantWords] = {};
  uint32_t push_constant_words = 0;
  bool submitted = false;  // after execute_and_wait: no further recording
  bool reset = true;       // the hal command buffer is empty and recording
  // Kept by a recording (vm/replay.h): ended, submitted again on every
  // replay, never reset by retirement; not in the context's pool.
  bool persistent = false;
};

}  // namespace kiln::vm

#endif  // KILN_VM_VALUE_H_
