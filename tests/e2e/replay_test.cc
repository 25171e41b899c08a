// Recorded command buffers (vm/replay.h) on compiled programs: a function
// whose command sequence is static is recorded once per argument binding set
// and replayed; every result is checked against hand-derived values, so a
// replay that bound the wrong buffers (or skipped a re-bind) fails. Also: a
// consumed argument fed back, output storage, an asynchronous chain, and a
// program with data-dependent control flow that must never replay. Counts
// come from kiln_device_stats (command_buffer_recordings / _replays).
// Vulkan with validation and synchronization validation; any message fails.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/tools/compile_driver.h"
#include "runtime/kiln_status_test_util.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

using kiln_test::Str;

kiln_device_stats_t Stats() { return SharedDeviceStats(); }

// r = x * y - x (two dispatches after fusion or one; either way a static
// command sequence): hand-derived below.
const char* kStatic = R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
  %0 = "tensor.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "tensor.sub"(%0, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

std::vector<float> Expect(const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = x[i] * y[i] - x[i];
  return r;
}

kiln_tensor_t Call(Program& p, kiln_tensor_t x, kiln_tensor_t y) {
  kiln_tensor_t args[2] = {x, y};
  kiln_tensor_t r = nullptr;
  std::string s = Str(kiln_invoke(p.context, p.main, args, 2, &r, 1));
  EXPECT_EQ(s, "OK");
  return r;
}

TEST(ReplayTest, ArgumentsABAThenAHeldResult) {
  uint64_t validation = ValidationMessages();
  Program p;
  ASSERT_EQ(p.Load(kStatic), "OK");
  std::vector<float> av = {1, 2, 3, 4}, bv = {-1, 0.5f, 8, 2}, yv = {3, 3, 0.5f, -2};
  kiln_tensor_t a = DeviceF32(av), b = DeviceF32(bv), y = DeviceF32(yv);
  kiln_device_stats_t s0 = Stats();
  // A: recorded.
  kiln_tensor_t r = Call(p, a, y);
  EXPECT_EQ(ReadF32(r), Expect(av, yv));
  kiln_tensor_release(r);
  kiln_device_stats_t s1 = Stats();
  EXPECT_EQ(s1.command_buffer_recordings - s0.command_buffer_recordings, 1u);
  EXPECT_EQ(s1.command_buffer_replays - s0.command_buffer_replays, 0u);
  // A again: replayed, same dispatch count as recorded, no allocation.
  r = Call(p, a, y);
  EXPECT_EQ(ReadF32(r), Expect(av, yv));
  kiln_tensor_release(r);
  kiln_device_stats_t s2 = Stats();
  EXPECT_EQ(s2.command_buffer_replays - s1.command_buffer_replays, 1u);
  EXPECT_EQ(s2.command_buffer_recordings - s1.command_buffer_recordings, 0u);
  EXPECT_EQ(s2.dispatches - s1.dispatches, s1.dispatches - s0.dispatches);
  EXPECT_EQ(s2.submissions - s1.submissions, 1u);
  EXPECT_EQ(s2.device_allocations - s1.device_allocations, 0u);
  EXPECT_EQ(s2.host_allocations_invoke - s1.host_allocations_invoke, 0u);
  // B (another buffer): recorded anew; the result must be B's.
  r = Call(p, b, y);
  EXPECT_EQ(ReadF32(r), Expect(bv, yv));
  kiln_tensor_release(r);
  kiln_device_stats_t s3 = Stats();
  EXPECT_EQ(s3.command_buffer_recordings - s2.command_buffer_recordings, 1u);
  // A again, with new contents written into the same tensor: replayed, and
  // it reads the new data.
  av = {10, 20, 30, 40};
  ASSERT_EQ(Str(kiln_tensor_write(a, av.data(), av.size() * sizeof(float))), "OK");
  r = Call(p, a, y);
  EXPECT_EQ(ReadF32(r), Expect(av, yv));
  kiln_device_stats_t s4 = Stats();
  EXPECT_EQ(s4.command_buffer_replays - s3.command_buffer_replays, 1u);
  // A while the previous result is still held: the cached result buffer is
  // taken, so the recording must not be replayed over it.
  std::vector<float> av2 = {-4, -3, -2, -1};
  ASSERT_EQ(Str(kiln_tensor_write(a, av2.data(), av2.size() * sizeof(float))), "OK");
  kiln_tensor_t r2 = Call(p, a, y);
  EXPECT_EQ(ReadF32(r2), Expect(av2, yv));
  EXPECT_EQ(ReadF32(r), Expect(av, yv)) << "a replay overwrote a result the app still holds";
  kiln_device_stats_t s5 = Stats();
  EXPECT_EQ(s5.command_buffer_recordings - s4.command_buffer_recordings, 1u);
  // Results ping-pong between the slot's two buffers: both recorded now.
  for (int i = 0; i < 4; ++i) {
    kiln_tensor_release(r);
    r = r2;
    std::vector<float> v = {float(i), float(i + 1), float(i + 2), float(i + 3)};
    ASSERT_EQ(Str(kiln_tensor_write(a, v.data(), v.size() * sizeof(float))), "OK");
    r2 = Call(p, a, y);
    EXPECT_EQ(ReadF32(r2), Expect(v, yv)) << i;
    std::vector<float> prev = i ? std::vector<float>{float(i - 1), float(i), float(i + 1), float(i + 2)} : av2;
    EXPECT_EQ(ReadF32(r), Expect(prev, yv)) << i;
  }
  kiln_device_stats_t s6 = Stats();
  EXPECT_EQ(s6.command_buffer_replays - s5.command_buffer_replays, 4u);
  EXPECT_EQ(s6.command_buffer_recordings - s5.command_buffer_recordings, 0u);
  kiln_tensor_release(r);
  kiln_tensor_release(r2);
  kiln_tensor_release(a);
  kiln_tensor_release(b);
  kiln_tensor_release(y);
  EXPECT_EQ(ValidationMessages(), validation);
}

// A recording holds no application memory: once the app releases the
// arguments, the next call drops the recordings that bound them.
TEST(ReplayTest, ReleasedArgumentsDropTheirRecordings) {
  Program p;
  ASSERT_EQ(p.Load(kStatic), "OK");
  std::vector<float> av = {1, 2, 3, 4}, yv = {2, 2, 2, 2};
  kiln_tensor_t a = DeviceF32(av), y = DeviceF32(yv);
  kiln_tensor_t r = Call(p, a, y);
  kiln_tensor_release(r);
  kiln_device_stats_t before = Stats();
  kiln_tensor_release(a);
  ASSERT_EQ(Str(kiln_context_collect(p.context)), "OK");
  kiln_device_stats_t after = Stats();
  EXPECT_LT(after.device_bytes_live, before.device_bytes_live) << "the released argument is still alive";
  kiln_tensor_t b = DeviceF32(av);
  r = Call(p, b, y);
  EXPECT_EQ(ReadF32(r), Expect(av, yv));
  kiln_tensor_release(r);
  kiln_tensor_release(b);
  kiln_tensor_release(y);
}

// Output storage: the result lands in the caller's tensor on every call,
// recorded once then replayed; a different storage is a new binding set.
TEST(ReplayTest, OutputStorage) {
  uint64_t validation = ValidationMessages();
  Program p;
  ASSERT_EQ(p.Load(kStatic), "OK");
  std::vector<float> xv = {1, 2, 3, 4}, yv = {5, 6, 7, 8};
  kiln_tensor_t x = DeviceF32(xv), y = DeviceF32(yv);
  kiln_tensor_t out1 = DeviceF32({0, 0, 0, 0}), out2 = DeviceF32({0, 0, 0, 0});
  kiln_device_stats_t s0 = Stats();
  kiln_tensor_t storages[3] = {out1, out1, out2};
  for (int i = 0; i < 3; ++i) {
    std::vector<float> v = {float(i), 2, 3, float(-i)};
    ASSERT_EQ(Str(kiln_tensor_write(x, v.data(), v.size() * sizeof(float))), "OK");
    kiln_invoke_arg_t args[3] = {{x, KILN_ARG_BORROW, 0}, {y, KILN_ARG_BORROW, 0},
                                 {storages[i], KILN_ARG_OUTPUT_STORAGE, 0}};
    kiln_tensor_t r = nullptr;
    ASSERT_EQ(Str(kiln_invoke_ex(p.context, p.main, args, 3, &r, 1)), "OK");
    EXPECT_EQ(r, storages[i]);
    EXPECT_EQ(ReadF32(storages[i]), Expect(v, yv)) << i;
    kiln_tensor_release(r);
  }
  kiln_device_stats_t s1 = Stats();
  EXPECT_EQ(s1.command_buffer_recordings - s0.command_buffer_recordings, 2u);  // out1, out2
  EXPECT_EQ(s1.command_buffer_replays - s0.command_buffer_replays, 1u);        // out1 again
  EXPECT_EQ(s1.copies - s0.copies, 0u);
  for (kiln_tensor_t t : {x, y, out1, out2}) kiln_tensor_release(t);
  EXPECT_EQ(ValidationMessages(), validation);
}

// A consumed argument updated in place and fed back: x_{n+1} = x_n * y - x_n.
TEST(ReplayTest, ConsumedArgumentFedBack) {
  uint64_t validation = ValidationMessages();
  const char* kConsume = R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
  %0 = "tensor.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "tensor.sub"(%0, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["consume", "borrow"], sym_name = "main"} : () -> ()
)";
  Program p;
  ASSERT_EQ(p.Load(kConsume), "OK");
  std::vector<float> xv = {1, 2, -1, 0.5f}, yv = {3, 2, 2, 5};
  kiln_tensor_t x = DeviceF32(xv), y = DeviceF32(yv);
  kiln_device_stats_t s0 = Stats();
  for (int i = 0; i < 6; ++i) {
    kiln_invoke_arg_t args[2] = {{x, KILN_ARG_CONSUME, 0}, {y, KILN_ARG_BORROW, 0}};
    kiln_tensor_t r = nullptr;
    ASSERT_EQ(Str(kiln_invoke_ex(p.context, p.main, args, 2, &r, 1)), "OK") << i;
    xv = Expect(xv, yv);
    EXPECT_EQ(ReadF32(r), xv) << i;
    x = r;
  }
  kiln_device_stats_t s1 = Stats();
  EXPECT_GE(s1.command_buffer_replays - s0.command_buffer_replays, 3u);
  kiln_tensor_release(x);
  kiln_tensor_release(y);
  EXPECT_EQ(ValidationMessages(), validation);
}

// kiln_invoke_async chains: each call waits on the previous fence and
// consumes the previous result; the values are exact either way (replayed
// or, while a recording is still in flight, recorded anew).
TEST(ReplayTest, AsyncChain) {
  uint64_t validation = ValidationMessages();
  Program p;
  ASSERT_EQ(p.Load(kStatic), "OK");
  std::vector<float> xv = {1, 2, 3, 4}, yv = {2, 2, 2, 2};
  kiln_tensor_t y = DeviceF32(yv);
  kiln_tensor_t in = DeviceF32(xv);
  kiln_device_stats_t s0 = Stats();
  constexpr int kCalls = 8;
  std::vector<kiln_fence_t> fences(kCalls);
  std::vector<kiln_tensor_t> results(kCalls);
  for (int round = 0; round < 2; ++round) {
    std::vector<float> expect = xv;
    kiln_tensor_t cur = in;
    for (int i = 0; i < kCalls; ++i) {
      ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &fences[i])), "OK");
      kiln_tensor_t args_t[2] = {cur, y};
      kiln_invoke_arg_t args[2] = {{args_t[0], KILN_ARG_BORROW, 0}, {args_t[1], KILN_ARG_BORROW, 0}};
      ASSERT_EQ(Str(kiln_invoke_async(p.context, p.main, args, 2, i ? fences[i - 1] : nullptr, fences[i],
                                      &results[i], 1)), "OK");
      cur = results[i];
    }
    ASSERT_EQ(Str(kiln_fence_wait(fences[kCalls - 1], UINT64_MAX)), "OK");
    for (int i = 0; i < kCalls; ++i) {
      expect = Expect(expect, yv);
      EXPECT_EQ(ReadF32(results[i]), expect) << round << " " << i;
    }
    for (int i = 0; i < kCalls; ++i) {
      kiln_tensor_release(results[i]);
      kiln_fence_release(fences[i]);
    }
  }
  kiln_device_stats_t s1 = Stats();
  EXPECT_GE(s1.command_buffer_recordings - s0.command_buffer_recordings, 1u);
  kiln_tensor_release(in);
  kiln_tensor_release(y);
  EXPECT_EQ(ValidationMessages(), validation);
}

// Data-dependent control flow (a device value read on the host picks the
// branch): recorded on every call, never replayed; each branch is right.
TEST(ReplayTest, DataDependentControlFlowIsNotReplayed) {
  uint64_t validation = ValidationMessages();
  const char* kBranchy = R"(
"func.func"() ({
^bb0(%c: tensor<1xi1>, %x: tensor<2xf32>):
  %b = "tensor.extract"(%c) : (tensor<1xi1>) -> i1
  %r = "scf.if"(%b) ({
    %n = "tensor.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "scf.yield"(%n) : (tensor<2xf32>) -> ()
  }, {
    %m = "tensor.abs"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "scf.yield"(%m) : (tensor<2xf32>) -> ()
  }) : (i1) -> tensor<2xf32>
  "func.return"(%r) : (tensor<2xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  Program p;
  ASSERT_EQ(p.Load(kBranchy), "OK");
  int64_t one[] = {1};
  kiln_tensor_t x = DeviceF32({-2, 3});
  kiln_device_stats_t s0 = Stats();
  for (int i = 0; i < 4; ++i) {
    uint8_t flag = i % 2;
    kiln_tensor_t c = nullptr;
    ASSERT_EQ(Str(kiln_tensor_create(SharedDevice(), KILN_DTYPE_BOOL, 1, one, &flag, 1, &c)), "OK");
    kiln_tensor_t args[2] = {c, x};
    kiln_tensor_t r = nullptr;
    ASSERT_EQ(Str(kiln_invoke(p.context, p.main, args, 2, &r, 1)), "OK");
    // x = [-2, 3]: neg when the flag is set, abs otherwise.
    std::vector<float> expect = flag ? std::vector<float>{2, -3} : std::vector<float>{2, 3};
    EXPECT_EQ(ReadF32(r), expect) << i;
    kiln_tensor_release(r);
    kiln_tensor_release(c);
  }
  kiln_device_stats_t s1 = Stats();
  EXPECT_EQ(s1.command_buffer_recordings - s0.command_buffer_recordings, 0u);
  EXPECT_EQ(s1.command_buffer_replays - s0.command_buffer_replays, 0u);
  EXPECT_GE(s1.dispatches - s0.dispatches, 4u);
  kiln_tensor_release(x);
  EXPECT_EQ(ValidationMessages(), validation);
}

}  // namespace
}  // namespace kiln::e2e
