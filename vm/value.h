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

#include <cstdint>
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
class BufferView : public RefObject {
 public:
  // Errors: kInvalidArgument for a null buffer, invalid dtype, rank >
  // kMaxRank, negative dims or a size overflow; kOutOfRange when
  // [byte_offset, byte_offset + byte_length) exceeds buffer->size().
  // Counts one host allocation.
  static StatusOr<Ref<BufferView>> Create(Ref<hal::Buffer> buffer, uint64_t byte_offset,
                                          DType dtype, const int64_t* dims, size_t rank);

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
class CommandBufferState : public RefObject {
 public:
  static constexpr uint32_t kMaxPushConstantWords = 32;  // 128 bytes
  explicit CommandBufferState(Ref<hal::CommandBuffer> cb) : command_buffer(std::move(cb)) {}
  Ref<hal::CommandBuffer> command_buffer;
  uint32_t push_constants[kMaxPushConstantWords] = {};
  uint32_t push_constant_words = 0;
  bool submitted = false;  // after execute_and_wait: no further recording
};

}  // namespace kiln::vm

#endif  // KILN_VM_VALUE_H_
