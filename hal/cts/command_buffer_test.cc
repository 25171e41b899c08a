// CTS: transfer commands (fill, copy), barriers, command buffer state, reuse
// after Reset, retention of referenced buffers, and error paths.
#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

class CommandBufferTest : public CtsTest {};

TEST_P(CommandBufferTest, FillWritesExactBytes) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  std::vector<uint8_t> init(64, 0xAA);
  KILN_ASSERT_OK(buffer->Write(0, init.data(), 64));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 8, 16, 0x11223344u));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(buffer.get(), 0, 64));
  for (size_t i = 0; i < 64; ++i) {
    // The 32-bit pattern is stored little-endian: 44 33 22 11.
    static const uint8_t kPattern[4] = {0x44, 0x33, 0x22, 0x11};
    uint8_t expected = (i >= 8 && i < 24) ? kPattern[i % 4] : 0xAA;
    EXPECT_EQ(got[i], expected) << "byte " << i;
  }
  EXPECT_EQ(device()->stats().fills, 1u);
  EXPECT_EQ(device()->stats().submissions, 1u);
}

TEST_P(CommandBufferTest, CopyMovesExactRange) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> src, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  std::vector<uint8_t> ramp(64), ones(64, 0xFF);
  for (size_t i = 0; i < 64; ++i) ramp[i] = static_cast<uint8_t>(i);
  KILN_ASSERT_OK(src->Write(0, ramp.data(), 64));
  KILN_ASSERT_OK(dst->Write(0, ones.data(), 64));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->CopyBuffer(src.get(), 4, dst.get(), 20, 32));  // src[4,36) -> dst[20,52)
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(dst.get(), 0, 64));
  for (size_t i = 0; i < 64; ++i) {
    uint8_t expected = (i >= 20 && i < 52) ? static_cast<uint8_t>(i - 16) : 0xFF;
    EXPECT_EQ(got[i], expected) << "byte " << i;
  }
  EXPECT_EQ(device()->stats().copies, 1u);
  EXPECT_EQ(device()->stats().copy_bytes, 32u);
}

TEST_P(CommandBufferTest, FillBarrierCopyThroughSubspans) {
  // One 256-byte allocation; fill [64,128), ranged barrier, copy it to
  // [160,224) of the same allocation through subspans.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> arena,
                            device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  std::vector<uint8_t> zeros(256, 0);
  KILN_ASSERT_OK(arena->Write(0, zeros.data(), 256));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->CreateSubspan(arena.get(), 64, 64));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->CreateSubspan(arena.get(), 160, 64));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(a.get(), 0, 64, 0x01020304u));
  BufferBarrier barrier{a.get(), 0, 64};
  KILN_ASSERT_OK(cb->Barrier(&barrier, 1));
  KILN_ASSERT_OK(cb->CopyBuffer(a.get(), 0, b.get(), 0, 64));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(arena.get(), 0, 256));
  for (size_t i = 0; i < 256; ++i) {
    bool filled = (i >= 64 && i < 128) || (i >= 160 && i < 224);
    uint8_t expected = filled ? static_cast<uint8_t>(4 - i % 4) : 0;
    EXPECT_EQ(got[i], expected) << "byte " << i;
  }
  const Stats& stats = device()->stats();
  EXPECT_EQ(stats.fills, 1u);
  EXPECT_EQ(stats.copies, 1u);
  EXPECT_EQ(stats.copy_bytes, 64u);
  EXPECT_EQ(stats.barriers, 1u);
  EXPECT_EQ(stats.device_allocations, 1u);
}

TEST_P(CommandBufferTest, ExecutionBarrierOrdersFillThenFill) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(32, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 32, 0x11111111u));
  KILN_ASSERT_OK(cb->ExecutionBarrier());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 16, 16, 0x22222222u));  // write-after-write
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(buffer.get(), 0, 32));
  for (size_t i = 0; i < 32; ++i) EXPECT_EQ(got[i], i < 16 ? 0x11 : 0x22) << "byte " << i;
  EXPECT_EQ(device()->stats().barriers, 1u);
  EXPECT_EQ(device()->stats().fills, 2u);
}

TEST_P(CommandBufferTest, ReuseAfterResetAndResubmit) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(16, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 16, 0xA5A5A5A5u));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  uint32_t words[4] = {};
  KILN_ASSERT_OK(buffer->Read(0, words, 16));
  for (uint32_t w : words) EXPECT_EQ(w, 0xA5A5A5A5u);

  // Resubmitting an ended command buffer replays it.
  const uint32_t zeros[4] = {};
  KILN_ASSERT_OK(buffer->Write(0, zeros, 16));
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK(buffer->Read(0, words, 16));
  for (uint32_t w : words) EXPECT_EQ(w, 0xA5A5A5A5u);

  // Reset makes it recordable again with different contents.
  KILN_ASSERT_OK(cb->Reset());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 4, 8, 0x5A5A5A5Au));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK(buffer->Read(0, words, 16));
  EXPECT_EQ(words[0], 0xA5A5A5A5u);
  EXPECT_EQ(words[1], 0x5A5A5A5Au);
  EXPECT_EQ(words[2], 0x5A5A5A5Au);
  EXPECT_EQ(words[3], 0xA5A5A5A5u);
  EXPECT_EQ(device()->stats().fills, 2u);        // counted when recorded
  EXPECT_EQ(device()->stats().submissions, 3u);
}

TEST_P(CommandBufferTest, RetainsReferencedBuffersUntilReset) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  {
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                              device()->AllocateBuffer(64, MemoryKind::kDeviceLocal));
    KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 64, 7));
  }  // our reference is gone; the command buffer holds one
  EXPECT_EQ(device()->stats().device_bytes_live, 64u);
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  EXPECT_EQ(device()->stats().device_bytes_live, 64u);
  KILN_ASSERT_OK(cb->Reset());
  EXPECT_EQ(device()->stats().device_bytes_live, 0u);
}

TEST_P(CommandBufferTest, RejectsBadTransfers) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> odd, device()->CreateSubspan(a.get(), 2, 32));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_EXPECT_CODE(cb->FillBuffer(a.get(), 2, 8, 0), kInvalidArgument);    // offset % 4
  KILN_EXPECT_CODE(cb->FillBuffer(a.get(), 0, 6, 0), kInvalidArgument);    // length % 4
  KILN_EXPECT_CODE(cb->FillBuffer(odd.get(), 0, 8, 0), kInvalidArgument);  // absolute offset 2
  KILN_EXPECT_CODE(cb->FillBuffer(a.get(), 60, 8, 0), kOutOfRange);
  KILN_EXPECT_CODE(cb->FillBuffer(nullptr, 0, 4, 0), kInvalidArgument);
  KILN_EXPECT_CODE(cb->CopyBuffer(a.get(), 40, b.get(), 0, 32), kOutOfRange);
  KILN_EXPECT_CODE(cb->CopyBuffer(a.get(), 0, b.get(), 48, 32), kOutOfRange);
  KILN_EXPECT_CODE(cb->CopyBuffer(a.get(), 0, a.get(), 16, 32), kInvalidArgument);  // overlap
  KILN_EXPECT_CODE(cb->CopyBuffer(a.get(), 0, nullptr, 0, 4), kInvalidArgument);
  BufferBarrier past_end{a.get(), 32, 64};
  KILN_EXPECT_CODE(cb->Barrier(&past_end, 1), kOutOfRange);
  // Nothing above was recorded or counted.
  const Stats& stats = device()->stats();
  EXPECT_EQ(stats.fills, 0u);
  EXPECT_EQ(stats.copies, 0u);
  EXPECT_EQ(stats.barriers, 0u);
  // Non-overlapping copy within one allocation is fine.
  KILN_EXPECT_OK(cb->CopyBuffer(a.get(), 0, a.get(), 32, 32));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
}

TEST_P(CommandBufferTest, StateErrors) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(16, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 16, 1));
  // Not ended: cannot submit.
  KILN_EXPECT_CODE(device()->QueueExecute(cb.get(), nullptr, 0, nullptr, 0), kFailedPrecondition);
  KILN_ASSERT_OK(cb->End());
  // Ended: cannot record or end again.
  KILN_EXPECT_CODE(cb->FillBuffer(buffer.get(), 0, 16, 2), kFailedPrecondition);
  KILN_EXPECT_CODE(cb->ExecutionBarrier(), kFailedPrecondition);
  KILN_EXPECT_CODE(cb->End(), kFailedPrecondition);
  EXPECT_EQ(device()->stats().submissions, 0u);
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
}

TEST_P(CommandBufferTest, PendingCommandBufferCannotBeResetOrResubmitted) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer,
                            device()->AllocateBuffer(16, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> gate, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> done, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 16, 0xC0FFEE00u));
  KILN_ASSERT_OK(cb->End());
  SemaphorePoint wait{gate.get(), 1};
  SemaphorePoint signal{done.get(), 1};
  KILN_ASSERT_OK(device()->QueueExecute(cb.get(), &wait, 1, &signal, 1));
  // The submission is blocked on `gate`, so the command buffer is pending.
  KILN_EXPECT_CODE(cb->Reset(), kFailedPrecondition);
  KILN_EXPECT_CODE(device()->QueueExecute(cb.get(), nullptr, 0, nullptr, 0), kFailedPrecondition);
  KILN_ASSERT_OK(gate->Signal(1));
  KILN_ASSERT_OK(done->Wait(1, kWaitTimeoutNs));
  uint32_t word = 0;
  KILN_ASSERT_OK(buffer->Read(12, &word, 4));
  EXPECT_EQ(word, 0xC0FFEE00u);
  KILN_EXPECT_OK(cb->Reset());
}

// Retention is per distinct buffer (Retains), and a buffer whose last
// reference is the command buffer's is freed at Reset after the work is
// done, counted in Stats::deferred_frees (queue-ordered frees).
TEST_P(CommandBufferTest, RetainsDistinctBuffersAndCountsDeferredFrees) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> src, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> kept, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> unused, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->CopyBuffer(src.get(), 0, dst.get(), 0, 32));
  KILN_ASSERT_OK(cb->CopyBuffer(src.get(), 32, dst.get(), 32, 32));
  KILN_ASSERT_OK(cb->FillBuffer(kept.get(), 0, 64, 7u));
  EXPECT_TRUE(cb->Retains(src.get()));
  EXPECT_TRUE(cb->Retains(dst.get()));
  EXPECT_TRUE(cb->Retains(kept.get()));
  EXPECT_FALSE(cb->Retains(unused.get()));
  EXPECT_EQ(src->refcount(), 2);  // the test's and one of the command buffer's
  EXPECT_EQ(dst->refcount(), 2);
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  uint64_t live = device()->stats().device_bytes_live;
  src.reset();
  dst.reset();
  EXPECT_EQ(device()->stats().device_bytes_live, live);  // still held by the command buffer
  KILN_ASSERT_OK(cb->Reset());
  EXPECT_EQ(device()->stats().deferred_frees, 2u);  // src and dst; `kept` is still ours
  EXPECT_EQ(device()->stats().device_bytes_live, live - 128);
  EXPECT_FALSE(cb->Retains(kept.get()));
}

// A barrier may be the only command that names a buffer (the emitter
// orders a later command after earlier accesses of a buffer this command
// buffer never binds): it retains it too, or the buffer could be destroyed
// while the submission that names it is in flight.
TEST_P(CommandBufferTest, BarrierRetainsTheBuffersItNames) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> named, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  BufferBarrier barrier{named.get(), 16, 32};
  KILN_ASSERT_OK(cb->Barrier(&barrier, 1));
  EXPECT_TRUE(cb->Retains(named.get()));
  EXPECT_EQ(named->refcount(), 2);
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  uint64_t live = device()->stats().device_bytes_live;
  named.reset();
  EXPECT_EQ(device()->stats().device_bytes_live, live);  // still held by the command buffer
  KILN_ASSERT_OK(cb->Reset());
  EXPECT_EQ(device()->stats().device_bytes_live, live - 64);
}

TEST_P(CommandBufferTest, HostReadBarrierNamesExactlyWhatTheHostReads) {
  // A fill of [16, 48), then the declaration that the host reads exactly
  // those bytes: the host sees the fill; the declaration retains the buffer
  // as Barrier does, counts no barrier, and checks its ranges as Barrier.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  std::vector<uint8_t> zeros(64, 0);
  KILN_ASSERT_OK(buffer->Write(0, zeros.data(), 64));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 16, 32, 0x05050505u));
  BufferBarrier outside{buffer.get(), 48, 32};
  KILN_EXPECT_CODE(cb->HostReadBarrier(&outside, 1), kOutOfRange);
  KILN_EXPECT_CODE(cb->HostReadBarrier(nullptr, 1), kInvalidArgument);
  BufferBarrier read{buffer.get(), 16, 32};
  KILN_ASSERT_OK(cb->HostReadBarrier(&read, 1));
  EXPECT_TRUE(cb->Retains(buffer.get()));
  KILN_ASSERT_OK(cb->End());
  KILN_EXPECT_CODE(cb->HostReadBarrier(&read, 1), kFailedPrecondition);  // not recording
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<uint8_t> got, ReadBytes(buffer.get(), 0, 64));
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(got[i], (i >= 16 && i < 48) ? 0x05 : 0x00) << "byte " << i;
  EXPECT_EQ(device()->stats().barriers, 0u);
}

KILN_CTS_INSTANTIATE(CommandBufferTest);

}  // namespace
}  // namespace kiln::hal::cts
