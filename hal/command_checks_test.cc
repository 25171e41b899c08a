// The command checks every HAL driver shares (hal/command_checks.h), on a
// stand-in Buffer with no device behind it: expected outcomes are derived by
// hand from the Vulkan rules the checks enforce.
#include "hal/command_checks.h"

#include <gtest/gtest.h>

namespace kiln::hal {
namespace {

// A buffer of `size` bytes at `offset` inside the allocation `root` (itself
// when null). No memory: the checks read only sizes and offsets.
class FakeBuffer final : public Buffer {
 public:
  FakeBuffer(uint64_t size, Buffer* root = nullptr, uint64_t offset = 0)
      : size_(size), root_(root ? root : this), offset_(offset) {}
  uint64_t size() const override { return size_; }
  MemoryKind memory_kind() const override { return MemoryKind::kDeviceLocal; }
  Buffer* allocation() override { return root_; }
  uint64_t allocation_offset() const override { return offset_; }
  Status Write(uint64_t, const void*, uint64_t) override { return OkStatus(); }
  Status Read(uint64_t, void*, uint64_t) override { return OkStatus(); }

 private:
  uint64_t size_;
  Buffer* root_;
  uint64_t offset_;
};

TEST(CommandChecks, CopyRangesAndOverlapWithinOneAllocation) {
  FakeBuffer root(256);
  FakeBuffer low(64, &root, 0), high(64, &root, 64), other(64);
  EXPECT_TRUE(CheckCopy(low, 0, high, 0, 64).ok());      // adjacent, same allocation
  EXPECT_TRUE(CheckCopy(low, 0, other, 0, 64).ok());     // other allocation
  Status s = CheckCopy(low, 32, high, 0, 64);            // source [32, 96) outside 64 B
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
  s = CheckCopy(root, 60, high, 0, 8);  // absolute [60, 68) against [64, 72)
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.ToString().find("overlap"), std::string::npos);
  EXPECT_TRUE(CheckCopy(root, 60, high, 0, 0).ok());     // empty: nothing overlaps
  EXPECT_EQ(CheckCopy(low, UINT64_MAX, high, 0, 2).code(), StatusCode::kOutOfRange);  // no wrap
}

TEST(CommandChecks, FillNeedsFourByteAbsoluteOffsetAndLength) {
  FakeBuffer root(256);
  FakeBuffer at2(64, &root, 2);
  EXPECT_TRUE(CheckFill(root, 4, 8).ok());
  EXPECT_EQ(CheckFill(root, 4, 6).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckFill(at2, 0, 8).code(), StatusCode::kInvalidArgument);  // absolute offset 2
  EXPECT_TRUE(CheckFill(at2, 2, 8).ok());                                // absolute offset 4
  EXPECT_EQ(CheckFill(root, 252, 8).code(), StatusCode::kOutOfRange);
}

TEST(CommandChecks, BarrierAndBindingLengthZeroMeansToTheEnd) {
  FakeBuffer buffer(100);
  StatusOr<uint64_t> length = CheckBarrierRange(0, buffer, 40, 0);
  ASSERT_TRUE(length.ok());
  EXPECT_EQ(*length, 60u);
  EXPECT_EQ(CheckBarrierRange(3, buffer, 101, 0).status().code(), StatusCode::kOutOfRange);

  DeviceInfo limits;
  limits.max_storage_buffer_range = 64;
  limits.min_storage_buffer_offset_alignment = 16;
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 1;
  StatusOr<uint64_t> bound = CheckBinding(entry, 0, limits, BufferBinding{&buffer, 48, 0});
  ASSERT_TRUE(bound.ok()) << bound.status().ToString();
  EXPECT_EQ(*bound, 52u);
  // 100 bytes from offset 0 exceed the 64-byte storage buffer range.
  EXPECT_EQ(CheckBinding(entry, 0, limits, BufferBinding{&buffer, 0, 0}).status().code(),
            StatusCode::kInvalidArgument);
  // Offset 40 is not a multiple of 16.
  Status s = CheckBinding(entry, 0, limits, BufferBinding{&buffer, 40, 8}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.ToString().find("alignment"), std::string::npos) << s.ToString();
  // Offset 100, to the end: empty.
  EXPECT_EQ(CheckBinding(entry, 0, limits, BufferBinding{&buffer, 100, 0}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(CommandChecks, DispatchCountsAgainstLimitsAndTwoToThe32Invocations) {
  DeviceInfo limits;  // 65535 workgroups per dimension
  EntryPointInfo entry;
  entry.name = "main";
  entry.push_constant_bytes = 8;
  const uint32_t pc[2] = {1, 2};
  const uint32_t ok[3] = {65535, 1024, 1};     // 64 * 65535 * 1024 < 2^32
  const uint32_t too_many[3] = {65535, 1025, 1};  // 64 * 65535 * 1025 > 2^32
  const uint32_t over_limit[3] = {65536, 1, 1};
  EXPECT_TRUE(CheckDispatch(entry, 64, limits, ok, pc, 8, nullptr, 0).ok());
  Status s = CheckDispatch(entry, 64, limits, too_many, pc, 8, nullptr, 0);
  EXPECT_NE(s.ToString().find("exceed 2^32"), std::string::npos) << s.ToString();
  EXPECT_EQ(CheckDispatch(entry, 64, limits, over_limit, pc, 8, nullptr, 0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDispatch(entry, 64, limits, ok, pc, 4, nullptr, 0).code(),
            StatusCode::kInvalidArgument);  // push constants of the wrong size
  EXPECT_EQ(CheckDispatch(entry, 64, limits, ok, nullptr, 8, nullptr, 0).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckDispatch(entry, 64, limits, ok, pc, 8, nullptr, 1).code(),
            StatusCode::kInvalidArgument);  // a binding the entry point does not take
  EXPECT_EQ(CheckDispatch(entry, 64, limits, nullptr, pc, 8, nullptr, 0).code(),
            StatusCode::kInvalidArgument);
}

TEST(CommandChecks, EntryPointLimitsAndSubmissions) {
  DeviceInfo limits;  // 4 storage buffers, 128 push-constant bytes
  HostVector<EntryPointInfo> entries(1);
  entries[0].name = "main";
  entries[0].binding_count = 4;
  entries[0].push_constant_bytes = 128;
  EXPECT_TRUE(CheckEntryPointLimits(entries, limits).ok());
  entries[0].binding_count = 5;
  EXPECT_EQ(CheckEntryPointLimits(entries, limits).code(), StatusCode::kInvalidArgument);
  entries[0].binding_count = 1;
  entries[0].push_constant_bytes = 6;
  EXPECT_EQ(CheckEntryPointLimits(entries, limits).code(), StatusCode::kInvalidArgument);

  // Any non-null pointer stands for a semaphore: the check only compares them.
  Semaphore* a = reinterpret_cast<Semaphore*>(uintptr_t{16});
  Semaphore* b = reinterpret_cast<Semaphore*>(uintptr_t{32});
  SemaphorePoint two[2] = {{a, 1}, {b, 1}};
  SemaphorePoint same[2] = {{a, 1}, {a, 2}};
  SemaphorePoint none[1] = {{nullptr, 1}};
  EXPECT_TRUE(CheckSubmission(two, 2, two, 2).ok());
  EXPECT_EQ(CheckSubmission(nullptr, 0, same, 2).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSubmission(none, 1, nullptr, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckSubmission(nullptr, 1, nullptr, 0).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::hal
