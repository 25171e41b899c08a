// CTS: buffer allocation, host access, bounds errors, subspans and stats.
#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

class BufferTest : public CtsTest {};

TEST_P(BufferTest, WriteThenReadRoundTripsBytes) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  EXPECT_EQ(buffer->size(), 256u);
  EXPECT_EQ(buffer->memory_kind(), MemoryKind::kHostVisible);
  EXPECT_EQ(buffer->allocation(), buffer.get());
  EXPECT_EQ(buffer->allocation_offset(), 0u);
  std::vector<uint8_t> bytes(256);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 3);
  KILN_ASSERT_OK(buffer->Write(0, bytes.data(), bytes.size()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> all, ReadBytes(buffer.get(), 0, 256));
  EXPECT_EQ(all, bytes);
  // A partial read at an odd offset: bytes 100..149 are (i*7+3) mod 256.
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> part, ReadBytes(buffer.get(), 100, 50));
  for (size_t i = 0; i < 50; ++i) {
    EXPECT_EQ(part[i], static_cast<uint8_t>((100 + i) * 7 + 3)) << "byte " << 100 + i;
  }
  // A partial write leaves its neighbours alone.
  const uint8_t patch[3] = {0xde, 0xad, 0xbe};
  KILN_ASSERT_OK(buffer->Write(253, patch, 3));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> tail, ReadBytes(buffer.get(), 251, 5));
  EXPECT_EQ(tail, (std::vector<uint8_t>{static_cast<uint8_t>(251 * 7 + 3),
                                        static_cast<uint8_t>(252 * 7 + 3), 0xde, 0xad, 0xbe}));
}

TEST_P(BufferTest, HostAccessIsBoundsChecked) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  uint8_t data[16] = {};
  KILN_EXPECT_CODE(buffer->Write(250, data, 7), kOutOfRange);   // ends at 257
  KILN_EXPECT_CODE(buffer->Read(250, data, 7), kOutOfRange);
  KILN_EXPECT_CODE(buffer->Read(257, data, 0), kOutOfRange);    // starts past the end
  KILN_EXPECT_CODE(buffer->Write(UINT64_MAX, data, 2), kOutOfRange);  // offset+length wraps
  KILN_EXPECT_CODE(buffer->Read(8, data, UINT64_MAX - 4), kOutOfRange);
  KILN_EXPECT_CODE(buffer->Write(0, nullptr, 4), kInvalidArgument);
  KILN_EXPECT_OK(buffer->Write(249, data, 7));  // ends exactly at 256
  KILN_EXPECT_OK(buffer->Read(256, data, 0));   // empty range at the end
}

TEST_P(BufferTest, StatsTrackAllocationsAndFrees) {
  const Stats& stats = device()->stats();
  EXPECT_EQ(stats.device_allocations, 0u);
  EXPECT_EQ(stats.device_bytes_live, 0u);
  {
    // 100 bytes round up to 112 (multiple of 16).
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(100, MemoryKind::kHostVisible));
    EXPECT_EQ(a->size(), 100u);
    EXPECT_EQ(stats.device_allocations, 1u);
    EXPECT_EQ(stats.device_bytes_allocated, 112u);
    EXPECT_EQ(stats.device_bytes_live, 112u);
    EXPECT_EQ(stats.device_peak_bytes, 112u);
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->AllocateBuffer(32, MemoryKind::kDeviceLocal));
    EXPECT_EQ(stats.device_allocations, 2u);
    EXPECT_EQ(stats.device_bytes_allocated, 144u);
    EXPECT_EQ(stats.device_bytes_live, 144u);
    EXPECT_EQ(stats.device_peak_bytes, 144u);
    a.reset();  // frees 112
    EXPECT_EQ(stats.device_bytes_live, 32u);
    EXPECT_EQ(stats.device_peak_bytes, 144u);
    // Subspans are views, not allocations.
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> view, device()->CreateSubspan(b.get(), 16, 16));
    EXPECT_EQ(stats.device_allocations, 2u);
    EXPECT_EQ(stats.device_bytes_live, 32u);
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> c, device()->AllocateBuffer(16, MemoryKind::kHostVisible));
    EXPECT_EQ(stats.device_allocations, 3u);
    EXPECT_EQ(stats.device_bytes_allocated, 160u);
    EXPECT_EQ(stats.device_bytes_live, 48u);
    EXPECT_EQ(stats.device_peak_bytes, 144u);
  }
  EXPECT_EQ(stats.device_bytes_live, 0u);
  EXPECT_EQ(stats.device_allocations, 3u);
  EXPECT_EQ(stats.device_peak_bytes, 144u);
}

TEST_P(BufferTest, ZeroSizedBufferIsValidAndEmpty) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(0, MemoryKind::kHostVisible));
  EXPECT_EQ(buffer->size(), 0u);
  EXPECT_EQ(device()->stats().device_bytes_allocated, 16u);  // rounded up to 16
  uint8_t byte = 0;
  KILN_EXPECT_OK(buffer->Read(0, &byte, 0));
  KILN_EXPECT_CODE(buffer->Write(0, &byte, 1), kOutOfRange);
}

TEST_P(BufferTest, HugeAllocationIsResourceExhausted) {
  KILN_EXPECT_CODE(device()->AllocateBuffer(uint64_t{1} << 62, MemoryKind::kDeviceLocal),
                   kResourceExhausted);
  KILN_EXPECT_CODE(device()->AllocateBuffer(UINT64_MAX, MemoryKind::kHostVisible),
                   kResourceExhausted);
  EXPECT_EQ(device()->stats().device_allocations, 0u);
  EXPECT_EQ(device()->stats().device_bytes_live, 0u);
}

TEST_P(BufferTest, DeviceLocalIsHostAccessibleOnUnifiedMemory) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(64, MemoryKind::kDeviceLocal));
  EXPECT_EQ(buffer->memory_kind(), MemoryKind::kDeviceLocal);
  if (!device()->info().unified_memory) GTEST_SKIP() << "device-local memory is not host visible";
  const uint32_t word = 0x12345678u;
  KILN_ASSERT_OK(buffer->Write(60, &word, 4));
  uint32_t back = 0;
  KILN_ASSERT_OK(buffer->Read(60, &back, 4));
  EXPECT_EQ(back, 0x12345678u);
}

TEST_P(BufferTest, SubspanRetainsParentAndSharesBytes) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> parent,
                            device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  std::vector<uint8_t> bytes(64);
  for (size_t i = 0; i < 64; ++i) bytes[i] = static_cast<uint8_t>(i);
  KILN_ASSERT_OK(parent->Write(0, bytes.data(), 64));
  Buffer* root = parent.get();

  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> view, device()->CreateSubspan(parent.get(), 16, 32));
  EXPECT_EQ(view->size(), 32u);
  EXPECT_EQ(view->allocation(), root);
  EXPECT_EQ(view->allocation_offset(), 16u);
  EXPECT_EQ(view->memory_kind(), MemoryKind::kHostVisible);
  // A subspan of a subspan composes offsets and still points at the root.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> inner, device()->CreateSubspan(view.get(), 8, 8));
  EXPECT_EQ(inner->allocation(), root);
  EXPECT_EQ(inner->allocation_offset(), 24u);

  // Drop our references to the parent: the views keep it alive.
  parent.reset();
  view.reset();
  EXPECT_EQ(device()->stats().device_bytes_live, 64u);
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(inner.get(), 0, 8));
  EXPECT_EQ(got, (std::vector<uint8_t>{24, 25, 26, 27, 28, 29, 30, 31}));
  // Writes through the view land in the root at offset 24 + 2.
  const uint8_t patch[2] = {0xaa, 0xbb};
  KILN_ASSERT_OK(inner->Write(2, patch, 2));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> root_bytes, ReadBytes(root, 24, 8));
  EXPECT_EQ(root_bytes, (std::vector<uint8_t>{24, 25, 0xaa, 0xbb, 28, 29, 30, 31}));
  // Bounds are the view's, not the root's.
  uint8_t scratch[8];
  KILN_EXPECT_CODE(inner->Read(4, scratch, 5), kOutOfRange);
  inner.reset();  // last reference: the allocation is freed
  EXPECT_EQ(device()->stats().device_bytes_live, 0u);
}

TEST_P(BufferTest, SubspanOutOfRangeIsRejected) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> parent,
                            device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_EXPECT_CODE(device()->CreateSubspan(parent.get(), 60, 8), kOutOfRange);
  KILN_EXPECT_CODE(device()->CreateSubspan(parent.get(), 65, 0), kOutOfRange);
  KILN_EXPECT_CODE(device()->CreateSubspan(parent.get(), 8, UINT64_MAX), kOutOfRange);
  KILN_EXPECT_CODE(device()->CreateSubspan(nullptr, 0, 4), kInvalidArgument);
  KILN_EXPECT_OK(device()->CreateSubspan(parent.get(), 0, 64));
}

KILN_CTS_INSTANTIATE(BufferTest);

}  // namespace
}  // namespace kiln::hal::cts
