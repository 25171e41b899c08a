// CTS: timeline semaphores (query, host signal, wait with timeout) and queue
// submissions that wait on and signal them.
#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

constexpr uint64_t kShortTimeoutNs = 10ull * 1000 * 1000;  // 10 ms

class SemaphoreTest : public CtsTest {};

TEST_P(SemaphoreTest, QueryReturnsInitialValue) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> semaphore, device()->CreateSemaphore(5));
  KILN_ASSERT_OK_AND_ASSIGN(uint64_t value, semaphore->Query());
  EXPECT_EQ(value, 5u);
  KILN_EXPECT_OK(semaphore->Wait(5, 0));  // already reached: returns at once
  KILN_EXPECT_OK(semaphore->Wait(3, 0));
}

TEST_P(SemaphoreTest, HostSignalAdvancesTheTimeline) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> semaphore, device()->CreateSemaphore(0));
  KILN_EXPECT_CODE(semaphore->Wait(1, 0), kDeadlineExceeded);  // poll
  KILN_ASSERT_OK(semaphore->Signal(7));
  KILN_ASSERT_OK_AND_ASSIGN(uint64_t value, semaphore->Query());
  EXPECT_EQ(value, 7u);
  KILN_EXPECT_OK(semaphore->Wait(7, 0));
  KILN_EXPECT_OK(semaphore->Wait(7, kShortTimeoutNs));
  KILN_EXPECT_CODE(semaphore->Wait(8, 0), kDeadlineExceeded);
  // Timeline values only move forward.
  KILN_EXPECT_CODE(semaphore->Signal(7), kInvalidArgument);
  KILN_EXPECT_CODE(semaphore->Signal(6), kInvalidArgument);
  KILN_ASSERT_OK(semaphore->Signal(8));
  KILN_EXPECT_OK(semaphore->Wait(8, kShortTimeoutNs));
  KILN_ASSERT_OK_AND_ASSIGN(value, semaphore->Query());
  EXPECT_EQ(value, 8u);
}

TEST_P(SemaphoreTest, WaitTimesOut) {
  // Kept apart from repeated host signals: validation layer 1.3.239 reports a
  // false VUID-VkSemaphoreSignalInfo-value-03259 when a semaphore that saw a
  // timed-out vkWaitSemaphores is host-signalled twice.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> semaphore, device()->CreateSemaphore(2));
  KILN_EXPECT_CODE(semaphore->Wait(3, kShortTimeoutNs), kDeadlineExceeded);
  KILN_ASSERT_OK(semaphore->Signal(3));
  KILN_EXPECT_OK(semaphore->Wait(3, kShortTimeoutNs));
}

TEST_P(SemaphoreTest, SubmissionSignalsOnCompletion) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(16, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> done, device()->CreateSemaphore(10));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 16, 0x01010101u));
  KILN_ASSERT_OK(cb->End());
  SemaphorePoint signal{done.get(), 11};
  KILN_ASSERT_OK(device()->QueueExecute(cb.get(), nullptr, 0, &signal, 1));
  KILN_ASSERT_OK(done->Wait(11, kWaitTimeoutNs));
  KILN_ASSERT_OK_AND_ASSIGN(uint64_t value, done->Query());
  EXPECT_EQ(value, 11u);
  uint32_t words[4];
  KILN_ASSERT_OK(buffer->Read(0, words, 16));
  for (uint32_t w : words) EXPECT_EQ(w, 0x01010101u);
  // Signalling a value the timeline already passed is rejected up front.
  SemaphorePoint stale{done.get(), 11};
  KILN_EXPECT_CODE(device()->QueueExecute(cb.get(), nullptr, 0, &stale, 1), kInvalidArgument);
  EXPECT_EQ(device()->stats().submissions, 1u);
}

TEST_P(SemaphoreTest, SubmissionWaitsForHostSignal) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> gate, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> done, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(16, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(cb->FillBuffer(buffer.get(), 0, 16, 0x2a2a2a2au));
  KILN_ASSERT_OK(cb->End());
  SemaphorePoint wait{gate.get(), 2};
  SemaphorePoint signal{done.get(), 1};
  KILN_ASSERT_OK(device()->QueueExecute(cb.get(), &wait, 1, &signal, 1));
  // Blocked on gate >= 2.
  KILN_EXPECT_CODE(done->Wait(1, kShortTimeoutNs), kDeadlineExceeded);
  // The host may not overtake the pending queue signal of `done`.
  KILN_EXPECT_CODE(done->Signal(5), kFailedPrecondition);
  KILN_ASSERT_OK(gate->Signal(1));
  KILN_EXPECT_CODE(done->Wait(1, kShortTimeoutNs), kDeadlineExceeded);
  KILN_ASSERT_OK(gate->Signal(2));
  KILN_ASSERT_OK(done->Wait(1, kWaitTimeoutNs));
  uint32_t word = 0;
  KILN_ASSERT_OK(buffer->Read(4, &word, 4));
  EXPECT_EQ(word, 0x2a2a2a2au);
}

TEST_P(SemaphoreTest, ChainedSubmissionsOrderedBySemaphore) {
  // Submission 1 fills `a` and signals t=1; submission 2 waits t=1, copies a
  // into b and signals t=2. The host waits only for t=2.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> timeline, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(64, MemoryKind::kDeviceLocal));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->AllocateBuffer(64, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> fill, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(fill->FillBuffer(a.get(), 0, 64, 0xfeedf00du));
  KILN_ASSERT_OK(fill->End());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> copy, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(copy->CopyBuffer(a.get(), 0, b.get(), 0, 64));
  KILN_ASSERT_OK(copy->End());
  SemaphorePoint t1{timeline.get(), 1};
  SemaphorePoint t2{timeline.get(), 2};
  KILN_ASSERT_OK(device()->QueueExecute(fill.get(), nullptr, 0, &t1, 1));
  KILN_ASSERT_OK(device()->QueueExecute(copy.get(), &t1, 1, &t2, 1));
  KILN_ASSERT_OK(timeline->Wait(2, kWaitTimeoutNs));
  uint32_t words[16];
  KILN_ASSERT_OK(b->Read(0, words, 64));
  for (uint32_t w : words) EXPECT_EQ(w, 0xfeedf00du);
  EXPECT_EQ(device()->stats().submissions, 2u);
}

TEST_P(SemaphoreTest, BackToBackSubmissionsAreOrdered) {
  // No semaphore between the two submissions: the HAL orders submissions on
  // a device's queue and makes earlier writes visible to later submissions.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> done, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(256, MemoryKind::kDeviceLocal));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> fill, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(fill->FillBuffer(a.get(), 0, 256, 0x0badcafeu));
  KILN_ASSERT_OK(fill->End());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> copy, device()->CreateCommandBuffer());
  KILN_ASSERT_OK(copy->CopyBuffer(a.get(), 0, b.get(), 0, 256));
  KILN_ASSERT_OK(copy->End());
  SemaphorePoint signal{done.get(), 1};
  KILN_ASSERT_OK(device()->QueueExecute(fill.get(), nullptr, 0, nullptr, 0));
  KILN_ASSERT_OK(device()->QueueExecute(copy.get(), nullptr, 0, &signal, 1));
  KILN_ASSERT_OK(done->Wait(1, kWaitTimeoutNs));
  uint32_t words[64];
  KILN_ASSERT_OK(b->Read(0, words, 256));
  for (uint32_t w : words) ASSERT_EQ(w, 0x0badcafeu);
}

TEST_P(SemaphoreTest, EmptySubmissionForwardsSignals) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> in, device()->CreateSemaphore(0));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> out, device()->CreateSemaphore(0));
  SemaphorePoint wait{in.get(), 1};
  SemaphorePoint signal{out.get(), 3};
  KILN_ASSERT_OK(device()->QueueExecute(nullptr, &wait, 1, &signal, 1));
  KILN_EXPECT_CODE(out->Wait(3, kShortTimeoutNs), kDeadlineExceeded);
  KILN_ASSERT_OK(in->Signal(1));
  KILN_ASSERT_OK(out->Wait(3, kWaitTimeoutNs));
  KILN_ASSERT_OK(device()->WaitIdle());
  KILN_ASSERT_OK_AND_ASSIGN(uint64_t value, out->Query());
  EXPECT_EQ(value, 3u);
}

TEST_P(SemaphoreTest, RejectsBadSubmissions) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Semaphore> semaphore, device()->CreateSemaphore(0));
  SemaphorePoint null_semaphore{nullptr, 1};
  KILN_EXPECT_CODE(device()->QueueExecute(nullptr, &null_semaphore, 1, nullptr, 0),
                   kInvalidArgument);
  KILN_EXPECT_CODE(device()->QueueExecute(nullptr, nullptr, 0, &null_semaphore, 1),
                   kInvalidArgument);
  KILN_EXPECT_CODE(device()->QueueExecute(nullptr, nullptr, 1, nullptr, 0), kInvalidArgument);
  SemaphorePoint twice[2] = {{semaphore.get(), 1}, {semaphore.get(), 2}};
  KILN_EXPECT_CODE(device()->QueueExecute(nullptr, nullptr, 0, twice, 2), kInvalidArgument);
  EXPECT_EQ(device()->stats().submissions, 0u);
}

KILN_CTS_INSTANTIATE(SemaphoreTest);

}  // namespace
}  // namespace kiln::hal::cts
