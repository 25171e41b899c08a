// Asynchronous invocation through the C API (kiln_invoke_async, fences,
// queue-ordered frees) on the vadd test module (vm/testing/test_modules.h)
// built with an asynchronous end (hal.command_buffer.execute "final"):
//   main(a, b) -> (c = a + b + bias, d = [a[0..50), 1.0 ...], e = c[4..12))
// with bias[i] = i + 0.5. References are computed on the host here.
// Vulkan with validation + synchronization validation (KILN_VULKAN_TEST_ENV);
// any validation message fails the test.
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "vm/isa.h"
#include "vm/testing/module_builder.h"
#include "vm/testing/test_modules.h"

namespace {

using kiln::vm::testing::kVaddCount;

using kiln_test::Str;

float Bias(int i) { return static_cast<float>(i) + 0.5f; }

class AsyncTest : public ::testing::TestWithParam<bool> {
 protected:
  // GetParam(): the module ends with execute (true) or execute_and_wait.
  void SetUp() override {
    ASSERT_EQ(Str(kiln_instance_create(&instance_)), "OK");
    ASSERT_EQ(Str(kiln_device_create(instance_, "vulkan", nullptr, -1, &device_)), "OK");
    bytes_ = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount, GetParam());
    ASSERT_EQ(Str(kiln_module_load_from_memory(instance_, bytes_.data(), bytes_.size(), &module_)),
              "OK");
    ASSERT_EQ(Str(kiln_context_create(device_, &module_, 1, &context_)), "OK");
    ASSERT_EQ(Str(kiln_context_lookup_function(context_, "main", &main_)), "OK");
    for (int i = 0; i < kVaddCount; ++i) {
      a_.push_back(static_cast<float>(i) * 0.25f - 3.0f);
      b_.push_back(100.0f - static_cast<float>(2 * i));
    }
  }
  void TearDown() override {
    kiln_context_release(context_);
    kiln_module_release(module_);
    kiln_device_release(device_);
    kiln_instance_release(instance_);
    EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
  }
  kiln_tensor_t Vector(const std::vector<float>& v) {
    int64_t dims[] = {static_cast<int64_t>(v.size())};
    kiln_tensor_t t = nullptr;
    EXPECT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 1, dims, v.data(), v.size() * 4, &t)),
              "OK");
    return t;
  }
  std::vector<float> Read(kiln_tensor_t t) {
    std::vector<float> v(kiln_tensor_byte_size(t) / 4);
    EXPECT_EQ(Str(kiln_tensor_read(t, v.data(), v.size() * 4)), "OK");
    return v;
  }
  kiln_fence_t Fence() {
    kiln_fence_t f = nullptr;
    EXPECT_EQ(Str(kiln_fence_create(device_, &f)), "OK");
    return f;
  }
  kiln_device_stats_t Stats() {
    kiln_device_stats_t s = {};
    EXPECT_EQ(Str(kiln_device_stats(device_, &s)), "OK");
    return s;
  }
  static std::vector<kiln_invoke_arg_t> Args(kiln_tensor_t x, kiln_tensor_t y) {
    return {{x, KILN_ARG_BORROW, 0}, {y, KILN_ARG_BORROW, 0}};
  }
  bool Signaled(kiln_fence_t f) {
    int s = -1;
    EXPECT_EQ(Str(kiln_fence_query(f, &s)), "OK");
    return s == 1;
  }

  std::vector<uint8_t> bytes_;
  std::vector<float> a_, b_;
  kiln_instance_t instance_ = nullptr;
  kiln_device_t device_ = nullptr;
  kiln_module_t module_ = nullptr;
  kiln_context_t context_ = nullptr;
  kiln_function_t main_ = nullptr;
};

// Invoke 1 signals F1; invoke 2 waits on F1 and consumes invoke 1's result
// c1; the host waits on F2 only. c2 = c1 + b + bias = a + 2b + 2 bias.
TEST_P(AsyncTest, ChainedInvokesWaitOnlyOnTheLastFence) {
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t f1 = Fence(), f2 = Fence();
  kiln_device_stats_t before = Stats();
  kiln_tensor_t r1[3] = {}, r2[3] = {};
  auto args1 = Args(a, b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args1.data(), 2, nullptr, f1, r1, 3)), "OK");
  auto args2 = Args(r1[0], b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args2.data(), 2, f1, f2, r2, 3)), "OK");
  kiln_device_stats_t issued = Stats();
  if (GetParam()) {
    // Nothing blocked: no host wait, one submission per invoke (the final
    // execute carries the signal fence).
    EXPECT_EQ(issued.host_waits - before.host_waits, 0u);
    EXPECT_EQ(issued.submissions - before.submissions, 2u);
  }
  ASSERT_EQ(Str(kiln_fence_wait(f2, UINT64_MAX)), "OK");
  EXPECT_TRUE(Signaled(f1));
  std::vector<float> c1 = Read(r1[0]), c2 = Read(r2[0]), d2 = Read(r2[1]), e2 = Read(r2[2]);
  for (int i = 0; i < kVaddCount; ++i) {
    EXPECT_FLOAT_EQ(c1[i], a_[i] + b_[i] + Bias(i)) << i;
    EXPECT_FLOAT_EQ(c2[i], (a_[i] + b_[i] + Bias(i)) + b_[i] + Bias(i)) << i;
    // d of invoke 2 copies its first argument (c1) into the first half.
    EXPECT_FLOAT_EQ(d2[i], i < kVaddCount / 2 ? c1[i] : 1.0f) << i;
  }
  for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(e2[i], c2[4 + i]) << i;
  for (kiln_tensor_t t : r1) kiln_tensor_release(t);
  for (kiln_tensor_t t : r2) kiln_tensor_release(t);
  kiln_fence_release(f1);
  kiln_fence_release(f2);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
}

// A streaming loop over two reused fences: call i waits on the fence call
// i-1 signals and signals the other one, which the host reset after waiting
// for call i-2 (double buffering: the host never waits on the call it just
// issued). Call i consumes call i-1's result c, so c_i = a + (i+1)(b + bias).
// Two fences (two semaphores) serve all 40 calls: none is created per call,
// and the runtime never blocks the host.
TEST_P(AsyncTest, ResetFencesStreamWithNoSteadyStateAllocations) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  const int kCalls = 40;
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t f[2] = {Fence(), Fence()};
  kiln_tensor_t c = a;  // call 0 consumes a
  kiln_device_stats_t warm = Stats();
  for (int i = 0; i < kCalls; ++i) {
    kiln_fence_t signal = f[i % 2], wait = i ? f[(i + 1) % 2] : nullptr;
    if (i >= 2) {
      // The signal fence was reached by call i-2: wait (normally already
      // there), then re-arm it. Call i-1 waited on its old point: unaffected.
      ASSERT_EQ(Str(kiln_fence_wait(signal, UINT64_MAX)), "OK");
      ASSERT_EQ(Str(kiln_fence_reset(signal)), "OK") << "call " << i;
      EXPECT_FALSE(Signaled(signal));
    }
    kiln_invoke_arg_t args[2] = {{c, KILN_ARG_CONSUME, 0}, {b, KILN_ARG_BORROW, 0}};
    kiln_tensor_t r[3] = {};
    ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args, 2, wait, signal, r, 3)), "OK") << "call " << i;
    kiln_tensor_release(r[1]);
    kiln_tensor_release(r[2]);
    c = r[0];
  }
  kiln_device_stats_t end = Stats();
  EXPECT_EQ(end.host_waits - warm.host_waits, 0u);  // only the app waited (kiln_fence_wait)
  ASSERT_EQ(Str(kiln_fence_wait(f[(kCalls - 1) % 2], UINT64_MAX)), "OK");
  std::vector<float> got = Read(c);
  for (int i = 0; i < kVaddCount; ++i)
    EXPECT_FLOAT_EQ(got[i], a_[i] + kCalls * (b_[i] + Bias(i))) << i;
  kiln_tensor_release(c);
  kiln_tensor_release(b);
  kiln_fence_release(f[0]);
  kiln_fence_release(f[1]);
}

// The wait fence is signalled by the host after the invoke was issued: the
// device work must not start (its signal fence stays unsignalled) until then.
TEST_P(AsyncTest, HostSignalledWaitFenceHoldsTheWork) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t wait = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, wait, done, r, 3)), "OK");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(Signaled(done));
  EXPECT_EQ(Str(kiln_fence_wait(done, 1000000)).rfind("DEADLINE_EXCEEDED: kiln_fence_wait: timeout", 0),
            0u);
  // Before the wait fence, the results still hold what the device has not
  // written yet: c's buffer is fresh (allocate: contents undefined, zero on
  // lavapipe), so check that it is not the answer yet only loosely: the
  // fence is the contract.
  ASSERT_EQ(Str(kiln_fence_signal(wait)), "OK");
  ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
  std::vector<float> c = Read(r[0]);
  for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_fence_release(wait);
  kiln_fence_release(done);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
}

// kiln_tensor_read of a result whose work is held back by a wait fence that
// another thread signals later waits for the work: never stale data. The same
// holds for output storage read through its parent tensor (a row of a batch).
// kiln_tensor_wait with a short timeout reports the timeout meanwhile.
TEST_P(AsyncTest, ReadOfAnInFlightResultWaitsForItsWork) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  // Output storage for result 0: the second row of a 2-row batch tensor.
  int64_t batch_dims[] = {2, kVaddCount};
  kiln_tensor_t batch = nullptr, row = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, batch_dims, nullptr, 0, &batch)), "OK");
  int64_t row_dims[] = {kVaddCount};
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, kVaddCount * 4, KILN_DTYPE_F32, 1, row_dims, &row)),
            "OK");
  kiln_fence_t wait = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  std::vector<kiln_invoke_arg_t> args = Args(a, b);
  args.push_back({row, KILN_ARG_OUTPUT_STORAGE, 0});
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 3, wait, done, r, 3)), "OK");
  EXPECT_EQ(Str(kiln_tensor_wait(r[1], 1000000)).rfind("DEADLINE_EXCEEDED: kiln_tensor_wait: timeout", 0),
            0u);
  EXPECT_EQ(Str(kiln_tensor_wait(batch, 0)).rfind("DEADLINE_EXCEEDED: kiln_tensor_wait: timeout", 0),
            0u);
  EXPECT_EQ(Str(kiln_tensor_wait(a, 0)), "OK");  // an argument: nothing writes it
  std::thread signaller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(Str(kiln_fence_signal(wait)), "OK");
  });
  // No kiln_fence_wait: the reads themselves wait for the work.
  std::vector<float> d = Read(r[1]);
  std::vector<float> both = Read(batch);
  std::vector<float> c = Read(r[0]);
  signaller.join();
  EXPECT_TRUE(Signaled(done));
  for (int i = 0; i < kVaddCount; ++i) {
    float want_c = a_[i] + b_[i] + Bias(i);
    EXPECT_FLOAT_EQ(c[i], want_c) << i;
    EXPECT_FLOAT_EQ(both[kVaddCount + i], want_c) << i;
    EXPECT_EQ(both[i], 0.0f) << i;  // the first row is not written
    EXPECT_FLOAT_EQ(d[i], i < kVaddCount / 2 ? a_[i] : 1.0f) << i;
  }
  EXPECT_EQ(Str(kiln_tensor_wait(r[0], 0)), "OK");
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(row);
  kiln_tensor_release(batch);
  kiln_fence_release(wait);
  kiln_fence_release(done);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
}

// Releasing a context whose work waits on a wait fence nobody signals would
// block forever; kiln_context_wait_idle and kiln_context_release_within
// return a timeout instead and keep the context usable. Once the fence is
// signalled the deadline release goes through.
TEST_P(AsyncTest, DeadlineReleaseOfAContextWithBlockedWork) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t never = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, never, done, r, 3)), "OK");
  EXPECT_EQ(Str(kiln_context_wait_idle(context_, 1000000)).rfind("DEADLINE_EXCEEDED: kiln_context_wait_idle: timeout", 0), 0u);
  // The last reference: a timeout, nothing released.
  EXPECT_EQ(Str(kiln_context_release_within(context_, 1000000)).rfind("DEADLINE_EXCEEDED: kiln_context_wait_idle: timeout", 0), 0u);
  // Another reference: released at once without waiting.
  kiln_context_retain(context_);
  EXPECT_EQ(Str(kiln_context_release_within(context_, 0)), "OK");
  EXPECT_FALSE(Signaled(done));
  ASSERT_EQ(Str(kiln_fence_signal(never)), "OK");
  ASSERT_EQ(Str(kiln_context_wait_idle(context_, UINT64_MAX)), "OK");
  EXPECT_TRUE(Signaled(done));
  std::vector<float> c = Read(r[0]);
  for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  EXPECT_EQ(Str(kiln_context_release_within(context_, UINT64_MAX)), "OK");
  context_ = nullptr;  // released (TearDown ignores NULL)
  kiln_fence_release(never);
  kiln_fence_release(done);
}

// kiln_fence_release_within: releasing the last reference of a wait fence
// whose work is held back would block (the fence's semaphore is destroyed
// only once no submission uses it); the deadline variant returns a timeout
// and keeps the fence. A fence the context still holds as its last signal
// point, or one with another reference, is released at once.
TEST_P(AsyncTest, DeadlineReleaseOfAFenceWithBlockedWork) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t never = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, never, done, r, 3)), "OK");
  EXPECT_EQ(Str(kiln_fence_release_within(never, 0)).rfind("DEADLINE_EXCEEDED: kiln_fence_release_within: timeout", 0), 0u);
  EXPECT_EQ(Str(kiln_fence_release_within(never, 1000000)).rfind("DEADLINE_EXCEEDED: kiln_fence_release_within: timeout", 0), 0u);
  // Another reference: dropped at once.
  kiln_fence_retain(never);
  EXPECT_EQ(Str(kiln_fence_release_within(never, 0)), "OK");
  // `done` is the context's last signal point: the context keeps its
  // semaphore, so even its last reference goes without waiting.
  kiln_fence_retain(done);
  EXPECT_EQ(Str(kiln_fence_release_within(done, 0)), "OK");
  EXPECT_FALSE(Signaled(done));
  ASSERT_EQ(Str(kiln_fence_signal(never)), "OK");
  ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
  EXPECT_EQ(Str(kiln_fence_release_within(never, UINT64_MAX)), "OK");
  std::vector<float> c = Read(r[0]);
  for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  EXPECT_EQ(Str(kiln_fence_release_within(done, 0)), "OK");
  EXPECT_EQ(Str(kiln_fence_release_within(nullptr, 0)), "OK");
}

// Every tensor of a call released by the app while its work is held back by
// an unsignalled wait fence: nothing is freed until the work's timepoint is
// reached (the command buffer keeps the buffers), then all of it is, without
// a blocking call (kiln_context_collect). Under ASan a use after free would
// be reported by the device threads.
TEST_P(AsyncTest, BuffersReleasedInFlightAreFreedAfterTheTimepoint) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_device_stats_t start = Stats();
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t wait = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, wait, done, r, 3)), "OK");
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  kiln_device_stats_t in_flight = Stats();
  // a, b, the device-local temp, c, d: 5 buffers still alive.
  EXPECT_EQ(in_flight.device_allocations - start.device_allocations, 5u);
  EXPECT_EQ(in_flight.device_bytes_live - start.device_bytes_live, 5u * kVaddCount * 4);
  EXPECT_EQ(in_flight.deferred_frees - start.deferred_frees, 0u);
  ASSERT_EQ(Str(kiln_context_collect(context_)), "OK");  // not reached: frees nothing
  EXPECT_EQ(Stats().device_bytes_live, in_flight.device_bytes_live);
  ASSERT_EQ(Str(kiln_fence_signal(wait)), "OK");
  ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
  ASSERT_EQ(Str(kiln_context_collect(context_)), "OK");
  kiln_device_stats_t after = Stats();
  EXPECT_EQ(after.device_bytes_live, start.device_bytes_live);
  EXPECT_EQ(after.deferred_frees - start.deferred_frees, 5u);
  kiln_fence_release(wait);
  kiln_fence_release(done);
}

// kiln_context_options_t::wait_timeout_ns bounds every host wait on the
// context's work: work queued behind a wait fence nobody signals makes
// kiln_tensor_read of its result and a later synchronous kiln_invoke return
// a timeout instead of hanging; with execute_and_wait (GetParam() false) the
// asynchronous call itself blocks mid-program and times out, leaving its
// command buffer in flight. Once the fence is signalled the queued work
// runs, and the context gives right answers again.
TEST_P(AsyncTest, ContextWaitTimeoutBoundsInvokeAndRead) {
  kiln_context_release(context_);
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options);
  options.wait_timeout_ns = 20 * 1000 * 1000;  // 20 ms
  context_ = nullptr;
  ASSERT_EQ(Str(kiln_context_create_with_options(device_, &module_, 1, &options, &context_)), "OK");
  ASSERT_EQ(Str(kiln_context_lookup_function(context_, "main", &main_)), "OK");
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t never = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  std::string async = Str(kiln_invoke_async(context_, main_, args.data(), 2, never, done, r, 3));
  if (GetParam()) {
    ASSERT_EQ(async, "OK");
    std::vector<float> v(kVaddCount);
    std::string read = Str(kiln_tensor_read(r[0], v.data(), v.size() * 4));
    EXPECT_EQ(read.rfind("DEADLINE_EXCEEDED: kiln_tensor_read: timeout", 0), 0u) << read;
    std::string write = Str(kiln_tensor_write(r[0], v.data(), v.size() * 4));
    EXPECT_EQ(write.rfind("DEADLINE_EXCEEDED: kiln_tensor_write: timeout", 0), 0u) << write;
  } else {
    EXPECT_EQ(async.rfind("DEADLINE_EXCEEDED", 0), 0u) << async;
    EXPECT_NE(async.find("timeout"), std::string::npos) << async;
    for (kiln_tensor_t t : r) EXPECT_EQ(t, nullptr);
  }
  kiln_tensor_t in[2] = {a, b}, s[3] = {};
  std::string sync = Str(kiln_invoke(context_, main_, in, 2, s, 3));
  EXPECT_EQ(sync.rfind("DEADLINE_EXCEEDED", 0), 0u) << sync;
  EXPECT_NE(sync.find("timeout"), std::string::npos) << sync;
  for (kiln_tensor_t t : s) EXPECT_EQ(t, nullptr);
  EXPECT_FALSE(Signaled(done));

  ASSERT_EQ(Str(kiln_fence_signal(never)), "OK");
  ASSERT_EQ(Str(kiln_context_wait_idle(context_, UINT64_MAX)), "OK");
  EXPECT_TRUE(Signaled(done));
  if (GetParam()) {
    std::vector<float> c = Read(r[0]);
    for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  }
  ASSERT_EQ(Str(kiln_invoke(context_, main_, in, 2, s, 3)), "OK");
  std::vector<float> c = Read(s[0]);
  for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  for (kiln_tensor_t t : s) kiln_tensor_release(t);
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  // Nothing the timed-out calls left in flight outlives the context.
  kiln_context_release(context_);
  context_ = nullptr;
  EXPECT_EQ(Stats().device_bytes_live, 0u);
  kiln_fence_release(never);
  kiln_fence_release(done);
}

// A synchronous kiln_invoke of an asynchronously ending module: one
// submission and exactly one host wait, at the end.
TEST_P(AsyncTest, SynchronousInvokeWaitsOnce) {
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_tensor_t in[2] = {a, b}, r[3] = {};
  ASSERT_EQ(Str(kiln_invoke(context_, main_, in, 2, r, 3)), "OK");  // warm
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_device_stats_t before = Stats();
  ASSERT_EQ(Str(kiln_invoke(context_, main_, in, 2, r, 3)), "OK");
  kiln_device_stats_t after = Stats();
  EXPECT_EQ(after.submissions - before.submissions, 1u);
  EXPECT_EQ(after.host_waits - before.host_waits, 1u);
  std::vector<float> c = Read(r[0]);
  for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
}

TEST_P(AsyncTest, ErrorPaths) {
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_tensor_t r[3] = {};
  auto args = Args(a, b);
  kiln_fence_t f = Fence(), g = Fence();
  EXPECT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, nullptr, nullptr, r, 3)),
            "INVALID_ARGUMENT: kiln_invoke_async: signal_fence is NULL (the results are valid "
            "only once it is signalled)");
  EXPECT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, f, f, r, 3)).rfind(
                "INVALID_ARGUMENT: kiln_invoke_async: wait_fence and signal_fence are the same", 0),
            0u);
  // A call that fails validation leaves its signal fence usable.
  auto bad = Args(a, nullptr);
  EXPECT_EQ(Str(kiln_invoke_async(context_, main_, bad.data(), 2, nullptr, f, r, 3)),
            "INVALID_ARGUMENT: kiln_invoke_async: args[1].tensor is NULL");
  EXPECT_EQ(r[0], nullptr);
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, nullptr, f, r, 3)), "OK");
  // One-shot: f is claimed now.
  kiln_tensor_t r2[3] = {};
  EXPECT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, nullptr, f, r2, 3)).rfind(
                "FAILED_PRECONDITION: kiln_invoke_async: signal_fence was already signalled", 0),
            0u);
  EXPECT_EQ(r2[0], nullptr);
  EXPECT_EQ(Str(kiln_fence_signal(f)).rfind("FAILED_PRECONDITION: kiln_fence_signal", 0), 0u);
  // Reset before the signal is reached is refused; once reached, allowed.
  if (!Signaled(f)) {
    EXPECT_EQ(Str(kiln_fence_reset(f)).rfind("FAILED_PRECONDITION: kiln_fence_reset", 0), 0u);
  }
  ASSERT_EQ(Str(kiln_fence_wait(f, UINT64_MAX)), "OK");
  EXPECT_EQ(Str(kiln_fence_reset(nullptr)), "INVALID_ARGUMENT: kiln_fence_reset: fence is NULL");
  // Timeout on a fence nobody signals.
  EXPECT_EQ(Str(kiln_fence_wait(g, 0)),
            "DEADLINE_EXCEEDED: kiln_fence_wait: timeout: the fence was not signalled within 0 ns");
  EXPECT_EQ(Str(kiln_fence_wait(g, 2000000)),
            "DEADLINE_EXCEEDED: kiln_fence_wait: timeout: the fence was not signalled within "
            "2000000 ns");
  EXPECT_FALSE(Signaled(g));
  ASSERT_EQ(Str(kiln_fence_signal(g)), "OK");
  EXPECT_EQ(Str(kiln_fence_wait(g, 0)), "OK");
  EXPECT_EQ(Str(kiln_fence_signal(g)).rfind("FAILED_PRECONDITION", 0), 0u);
  // NULL handles.
  EXPECT_EQ(Str(kiln_fence_create(nullptr, &g)), "INVALID_ARGUMENT: kiln_fence_create: device is NULL");
  EXPECT_EQ(Str(kiln_fence_wait(nullptr, 0)), "INVALID_ARGUMENT: kiln_fence_wait: fence is NULL");
  EXPECT_EQ(Str(kiln_fence_signal(nullptr)), "INVALID_ARGUMENT: kiln_fence_signal: fence is NULL");
  int s = 0;
  EXPECT_EQ(Str(kiln_fence_query(nullptr, &s)), "INVALID_ARGUMENT: kiln_fence_query: fence is NULL");
  EXPECT_EQ(Str(kiln_fence_query(f, nullptr)), "INVALID_ARGUMENT: kiln_fence_query: out_signaled is NULL");
  EXPECT_EQ(Str(kiln_context_collect(nullptr)), "INVALID_ARGUMENT: kiln_context_collect: context is NULL");
  EXPECT_EQ(Str(kiln_invoke_async(nullptr, main_, args.data(), 2, nullptr, g, r2, 3)),
            "INVALID_ARGUMENT: kiln_invoke_async: context is NULL");
  kiln_fence_release(nullptr);
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_fence_release(f);
  kiln_fence_release(g);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
}

// A consumed argument under kiln_invoke_async: the reference is handed over
// (released by the call) and its buffer is freed only after the work.
TEST_P(AsyncTest, ConsumedArgumentSurvivesUntilTheTimepoint) {
  if (!GetParam()) GTEST_SKIP() << "execute_and_wait blocks the calling thread on the wait fence";
  kiln_tensor_t a = Vector(a_), b = Vector(b_);
  kiln_fence_t wait = Fence(), done = Fence();
  kiln_tensor_t r[3] = {};
  std::vector<kiln_invoke_arg_t> args = {{a, KILN_ARG_CONSUME, 0}, {b, KILN_ARG_BORROW, 0}};
  ASSERT_EQ(Str(kiln_invoke_async(context_, main_, args.data(), 2, wait, done, r, 3)), "OK");
  kiln_tensor_release(b);
  ASSERT_EQ(Str(kiln_fence_signal(wait)), "OK");
  ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
  std::vector<float> c = Read(r[0]), d = Read(r[1]);
  for (int i = 0; i < kVaddCount; ++i) {
    EXPECT_FLOAT_EQ(c[i], a_[i] + b_[i] + Bias(i)) << i;
    EXPECT_FLOAT_EQ(d[i], i < kVaddCount / 2 ? a_[i] : 1.0f) << i;
  }
  for (kiln_tensor_t t : r) kiln_tensor_release(t);
  kiln_fence_release(wait);
  kiln_fence_release(done);
}

// A caller module passes its timepoint to a callee module (the design for
// func.call between modules): "app".main(b) fills x = 1.0 in its own
// command buffer, flushes it with hal.command_buffer.execute(cb, 0) (not
// final: its timepoint is what the callee's first submission waits on),
// then calls vadd_test.main(x, b) (ending in execute(cb, final), which in a
// nested frame is an ordinary submission). c = 1 + b + bias, with no host
// wait under kiln_invoke_async.
std::vector<uint8_t> BuildCallerModule() {
  using kiln::vm::BytecodeEncoder;
  using kiln::vm::testing::ModuleBuilder;
  using kiln::vm::testing::TensorDesc;
  using R = kiln::vm::Reg;
  ModuleBuilder b("app");
  const uint16_t kAlloc = static_cast<uint16_t>(b.AddHalImport("hal.allocator.allocate"));
  const uint16_t kCreate = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.create"));
  const uint16_t kFill = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.fill"));
  const uint16_t kExecute = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.execute"));
  const uint16_t kView = static_cast<uint16_t>(b.AddHalImport("hal.buffer_view.create"));
  const uint16_t kVadd = static_cast<uint16_t>(b.AddImport("vadd_test.main", "rr_rrr"));
  BytecodeEncoder e;
  e.ConstI32(0, kVaddCount * 4);
  e.ConstI32(1, 1);           // host visible; also dtype f32 and rank 1
  e.ConstI32(2, 0);           // offset 0; also flags 0 (not final)
  e.ConstI32(3, 0x3f800000);  // 1.0f
  e.ConstI32(4, kVaddCount);
  e.CallImport(kAlloc, {R::I32(0), R::I32(1)}, {R::Ref(1)});
  e.CallImport(kCreate, {}, {R::Ref(2)});
  e.CallImport(kFill, {R::Ref(2), R::Ref(1), R::I32(2), R::I32(0), R::I32(3)}, {});
  e.CallImport(kExecute, {R::Ref(2), R::I32(2)}, {});
  e.CallImport(kView, {R::Ref(1), R::I32(2), R::I32(1), R::I32(1), R::I32(4)}, {R::Ref(3)});
  e.CallImport(kVadd, {R::Ref(3), R::Ref(0)}, {R::Ref(4), R::Ref(5), R::Ref(6)});
  e.Ret({R::Ref(4)});
  TensorDesc bd{"b", kiln::DType::kF32, {kVaddCount}}, cd{"c", kiln::DType::kF32, {kVaddCount}};
  b.AddFunction("main", {bd}, {cd}, 5, 7, e);
  return b.Finish();
}

TEST(AsyncCallTest, CallerTimepointIsTheCalleesWait) {
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  ASSERT_EQ(Str(kiln_instance_create(&instance)), "OK");
  ASSERT_EQ(Str(kiln_device_create(instance, "vulkan", nullptr, -1, &device)), "OK");
  std::vector<uint8_t> vadd = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount, true);
  std::vector<uint8_t> app = BuildCallerModule();
  kiln_module_t modules[2] = {};
  ASSERT_EQ(Str(kiln_module_load_from_memory(instance, vadd.data(), vadd.size(), &modules[0])), "OK");
  ASSERT_EQ(Str(kiln_module_load_from_memory(instance, app.data(), app.size(), &modules[1])), "OK");
  kiln_context_t context = nullptr;
  ASSERT_EQ(Str(kiln_context_create(device, modules, 2, &context)), "OK");
  kiln_function_t fn = nullptr;
  ASSERT_EQ(Str(kiln_context_lookup_function(context, "app.main", &fn)), "OK");
  std::vector<float> bv(kVaddCount);
  for (int i = 0; i < kVaddCount; ++i) bv[i] = 3.0f * static_cast<float>(i) - 50.0f;
  int64_t dims[] = {kVaddCount};
  kiln_tensor_t bt = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, bv.data(), bv.size() * 4, &bt)), "OK");
  for (int async = 0; async < 2; ++async) {
    kiln_device_stats_t before = {}, issued = {};
    ASSERT_EQ(Str(kiln_device_stats(device, &before)), "OK");
    kiln_tensor_t c = nullptr;
    kiln_fence_t done = nullptr;
    if (async) {
      ASSERT_EQ(Str(kiln_fence_create(device, &done)), "OK");
      kiln_invoke_arg_t arg = {bt, KILN_ARG_BORROW, 0};
      ASSERT_EQ(Str(kiln_invoke_async(context, fn, &arg, 1, nullptr, done, &c, 1)), "OK");
      ASSERT_EQ(Str(kiln_device_stats(device, &issued)), "OK");
      // The flush, the callee's submission, and the signal (the callee's
      // final execute does not signal the caller's fence: nested frame).
      EXPECT_EQ(issued.submissions - before.submissions, 3u);
      EXPECT_EQ(issued.host_waits - before.host_waits, 0u);
      ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
    } else {
      ASSERT_EQ(Str(kiln_invoke(context, fn, &bt, 1, &c, 1)), "OK");
      ASSERT_EQ(Str(kiln_device_stats(device, &issued)), "OK");
      EXPECT_EQ(issued.submissions - before.submissions, 2u);
      EXPECT_EQ(issued.host_waits - before.host_waits, 1u);
    }
    std::vector<float> got(kVaddCount);
    ASSERT_EQ(Str(kiln_tensor_read(c, got.data(), got.size() * 4)), "OK");
    for (int i = 0; i < kVaddCount; ++i) EXPECT_FLOAT_EQ(got[i], 1.0f + bv[i] + Bias(i)) << i;
    kiln_tensor_release(c);
    kiln_fence_release(done);
  }
  kiln_tensor_release(bt);
  kiln_context_release(context);
  kiln_module_release(modules[0]);
  kiln_module_release(modules[1]);
  kiln_device_release(device);
  kiln_instance_release(instance);
  EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Timeline, AsyncTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "ExecuteEnd" : "ExecuteAndWaitEnd";
                         });

}  // namespace
