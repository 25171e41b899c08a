#include "vm/value.h"


namespace kiln::vm {

namespace {
thread_local uint64_t g_host_allocations = 0;
}  // namespace

uint64_t HostAllocationCount() { return g_host_allocations; }
void CountHostAllocation(uint64_t n) { g_host_allocations += n; }

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
        TensorTypeString(dtype, dims, rank).c_str(), static_cast<unsigned long long>(byte_offset),
        static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(buffer->size()));
  }
  CountHostAllocation();
  Ref<BufferView> view = Ref<BufferView>::Adopt(new BufferView());
  view->buffer_ = std::move(buffer);
  view->byte_offset_ = byte_offset;
  view->dtype_ = dtype;
  view->rank_ = rank;
  for (size_t i = 0; i < rank; ++i) view->dims_[i] = dims[i];
  view->element_count_ = count;
  return view;
}

}  // namespace kiln::vm
