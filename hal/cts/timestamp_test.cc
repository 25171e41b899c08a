// CTS: GPU timestamp queries (hal::QueryPool, CommandBuffer::ResetQueries /
// WriteTimestamp), the profiling API behind kiln-bench --per-dispatch.
// A driver without timestamps must say so (kUnimplemented) and the timing
// tests are skipped; with timestamps, a write pair around a real dispatch
// (whose result is checked) must give a positive, host-bounded interval.
#include <chrono>

#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

class TimestampTest : public CtsTest {
 protected:
  // Skips the test (returns false) when the device has no timestamps, after
  // checking that it says so clearly.
  bool RequireTimestamps() {
    if (device()->info().timestamp_valid_bits != 0) return true;
    auto pool = device()->CreateTimestampQueryPool(2);
    EXPECT_EQ(pool.status().code(), StatusCode::kUnimplemented) << pool.status().ToString();
    EXPECT_FALSE(pool.status().message().empty());
    return false;
  }
};

TEST(TimestampDeltaTest, WrapsModuloValidBitsAndScalesByPeriod) {
  // Independent arithmetic: 8 valid bits, 250 -> 4 is 10 ticks after a wrap.
  EXPECT_DOUBLE_EQ(TimestampDeltaNs(250, 4, 8, 2.5), 25.0);
  EXPECT_DOUBLE_EQ(TimestampDeltaNs(100, 130, 64, 1.0), 30.0);
  EXPECT_DOUBLE_EQ(TimestampDeltaNs(~0ull, 1, 64, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(TimestampDeltaNs(7, 7, 36, 52.08), 0.0);
}

TEST_P(TimestampTest, DeviceReportsTimestampSupport) {
  const DeviceInfo& info = device()->info();
  EXPECT_LE(info.timestamp_valid_bits, 64u);
  if (info.timestamp_valid_bits) {
    EXPECT_GE(info.timestamp_valid_bits, 36u);  // Vulkan: 0 or 36..64
    EXPECT_GT(info.timestamp_period_ns, 0.0);
  }
}

TEST_P(TimestampTest, PairAroundDispatchIsPositiveAndBoundedByHostTime) {
  if (!RequireTimestamps()) GTEST_SKIP() << "device has no timestamp queries";
  constexpr uint32_t kN = 1 << 18;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> vadd, CreateVadd());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> c, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  std::vector<float> av(kN);
  for (uint32_t i = 0; i < kN; ++i) av[i] = static_cast<float>(i % 1000);
  KILN_ASSERT_OK(WriteFloats(a.get(), 0, av));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<QueryPool> pool, device()->CreateTimestampQueryPool(4));
  EXPECT_EQ(pool->count(), 4u);

  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->ResetQueries(pool.get(), 0, 4));
  KILN_ASSERT_OK(cb->WriteTimestamp(pool.get(), 0));
  BufferBinding bindings[3] = {{a.get(), 0, 0}, {a.get(), 0, 0}, {c.get(), 0, 0}};
  const uint32_t groups[3] = {kN / 64, 1, 1};
  const uint32_t count = kN;
  KILN_ASSERT_OK(cb->Dispatch(vadd.get(), 0, groups, &count, 4, bindings, 3));
  KILN_ASSERT_OK(cb->WriteTimestamp(pool.get(), 1));
  KILN_ASSERT_OK(cb->WriteTimestamp(pool.get(), 2));  // nothing in between
  KILN_ASSERT_OK(cb->End());
  auto start = std::chrono::steady_clock::now();
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  double host_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();

  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> cv, ReadFloats(c.get(), 0, kN));
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(cv[i], 2.0f * static_cast<float>(i % 1000)) << i;

  uint64_t ticks[3] = {};
  KILN_ASSERT_OK(pool->ReadTimestamps(0, 3, ticks));
  const DeviceInfo& info = device()->info();
  double dispatch_ns = TimestampDeltaNs(ticks[0], ticks[1], info.timestamp_valid_bits,
                                        info.timestamp_period_ns);
  double empty_ns = TimestampDeltaNs(ticks[1], ticks[2], info.timestamp_valid_bits,
                                     info.timestamp_period_ns);
  EXPECT_GT(dispatch_ns, 0.0);
  // The dispatch ran inside the submission the host waited for; a wrong
  // tick period (e.g. ticks read as ns on a device with 50 ns ticks) breaks this.
  EXPECT_LT(dispatch_ns, host_ns);
  EXPECT_LE(empty_ns, dispatch_ns);
  // Query 3 was reset but never written: no result, and no blocking.
  uint64_t unused = 0;
  KILN_EXPECT_CODE(pool->ReadTimestamps(3, 1, &unused), kFailedPrecondition);
}

TEST_P(TimestampTest, ReRecordedCommandBufferWritesLaterTimes) {
  if (!RequireTimestamps()) GTEST_SKIP() << "device has no timestamp queries";
  KILN_ASSERT_OK_AND_ASSIGN(Ref<QueryPool> pool, device()->CreateTimestampQueryPool(2));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  uint64_t previous = 0;
  for (int round = 0; round < 3; ++round) {
    if (round) KILN_ASSERT_OK(cb->Reset());
    KILN_ASSERT_OK(cb->ResetQueries(pool.get(), 0, 2));
    KILN_ASSERT_OK(cb->WriteTimestamp(pool.get(), 0));
    KILN_ASSERT_OK(cb->WriteTimestamp(pool.get(), 1));
    KILN_ASSERT_OK(cb->End());
    KILN_ASSERT_OK(SubmitAndWait(cb.get()));
    uint64_t ticks[2] = {};
    KILN_ASSERT_OK(pool->ReadTimestamps(0, 2, ticks));
    if (round) {
      EXPECT_GT(TimestampDeltaNs(previous, ticks[0], device()->info().timestamp_valid_bits, 1.0), 0.0)
          << "round " << round;
    }
    previous = ticks[1];
  }
}

TEST_P(TimestampTest, RejectsBadArguments) {
  if (!RequireTimestamps()) GTEST_SKIP() << "device has no timestamp queries";
  KILN_EXPECT_CODE(device()->CreateTimestampQueryPool(0), kInvalidArgument);
  KILN_ASSERT_OK_AND_ASSIGN(Ref<QueryPool> pool, device()->CreateTimestampQueryPool(4));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_EXPECT_CODE(cb->ResetQueries(pool.get(), 2, 3), kOutOfRange);
  KILN_EXPECT_CODE(cb->WriteTimestamp(pool.get(), 4), kOutOfRange);
  KILN_EXPECT_CODE(cb->WriteTimestamp(nullptr, 0), kInvalidArgument);
  uint64_t ticks[4];
  KILN_EXPECT_CODE(pool->ReadTimestamps(3, 2, ticks), kOutOfRange);
  KILN_ASSERT_OK(cb->End());
  KILN_EXPECT_CODE(cb->WriteTimestamp(pool.get(), 0), kFailedPrecondition);
}

KILN_CTS_INSTANTIATE(TimestampTest);

}  // namespace
}  // namespace kiln::hal::cts
