// kiln_invoke_async on compiled modules (the real pipeline: schedule-execution,
// elide-timepoints, the emitter's non-blocking final submission): calls are
// issued back to back with no host wait, chained through fences, and their
// results equal hand-derived values (a stream program) and ONNX Runtime's
// goldens (alexa_v0.1, tests/golden/). Vulkan with validation and
// synchronization validation; any message fails.
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/parser.h"
#include "compiler/tools/compile_driver.h"
#include "runtime/kiln_status_test_util.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

using kiln_test::Str;

kiln_device_stats_t Stats() { return SharedDeviceStats(); }

HostTensor Read(kiln_tensor_t t) {
  HostTensor h;
  h.dtype = kiln_tensor_dtype(t);
  h.shape.assign(kiln_tensor_dims(t), kiln_tensor_dims(t) + kiln_tensor_rank(t));
  h.data.resize(kiln_tensor_byte_size(t));
  kiln_status_free(kiln_tensor_read(t, h.data.data(), h.data.size()));
  return h;
}


// r = (x + c) + (x + 2), c = [1, 2, 3, 4], in two execution regions joined
// by one await (tests/e2e/stream_emission_test.cc has the same program run
// synchronously).
const char* kTimelineProgram = KILN_E2E_ADD_EXECUTABLE R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %0 = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %1 = "stream.async.constant"() {size = 16 : i64, value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> !stream.resource<constant>
  %2:2 = "stream.async.execute"(%0, %1) ({
  ^bb0(%x_r1: !stream.resource<external>, %c_r1: !stream.resource<constant>):
    %d_r1 = "stream.async.dispatch"(%x_r1, %c_r1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient>
    "stream.yield"(%d_r1) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [0, 2]} : (!stream.resource<external>, !stream.resource<constant>) -> (!stream.resource<transient>, !stream.timepoint)
  %4:2 = "stream.async.execute"(%0) ({
  ^bb0(%x_r2: !stream.resource<external>):
    %s_r2 = "stream.async.splat"() {pattern = 1073741824 : i64, size = 16 : i64} : () -> !stream.resource<transient>
    %d_r2 = "stream.async.dispatch"(%x_r2, %s_r2) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<transient>) -> !stream.resource<transient>
    "stream.yield"(%d_r2) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [0, 1]} : (!stream.resource<external>) -> (!stream.resource<transient>, !stream.timepoint)
  %5 = "stream.timepoint.join"(%2#1, %4#1) : (!stream.timepoint, !stream.timepoint) -> !stream.timepoint
  %6:2 = "stream.timepoint.await"(%5, %2#0, %4#0) : (!stream.timepoint, !stream.resource<transient>, !stream.resource<transient>) -> (!stream.resource<transient>, !stream.resource<transient>)
  %7 = "stream.async.dispatch"(%6#0, %6#1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %8 = "stream.tensor.export"(%7) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%8) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

// Three calls chained through fences, each consuming the previous result:
//   x0 = [1, 2, 3, 4]; f(x) = 2x + c + 2
//   x1 = [5, 8, 11, 14]; x2 = [13, 20, 27, 34]; x3 = [29, 44, 59, 74]
// Issued with no host wait (one submission each); the host waits on the
// last fence only.
TEST(AsyncInvokeTest, ChainedCallsOfACompiledProgram) {
  auto parsed = ir::ParseModule(kTimelineProgram, "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  Program p;
  ASSERT_EQ(p.Load(driver::CompileModule(*parsed.value(), driver::CompileOptions())), "OK");
  float x0[4] = {1, 2, 3, 4};
  int64_t dims[] = {4};
  kiln_tensor_t x = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(SharedDevice(), KILN_DTYPE_F32, 1, dims, x0, sizeof(x0), &x)), "OK");
  kiln_fence_t fences[3] = {};
  kiln_tensor_t results[3] = {};
  kiln_device_stats_t before = Stats();
  kiln_tensor_t in = x;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &fences[i])), "OK");
    kiln_invoke_arg_t arg = {in, KILN_ARG_BORROW, 0};
    ASSERT_EQ(Str(kiln_invoke_async(p.context, p.main, &arg, 1, i ? fences[i - 1] : nullptr, fences[i],
                                    &results[i], 1)),
              "OK");
    in = results[i];
  }
  kiln_device_stats_t issued = Stats();
  EXPECT_EQ(issued.host_waits - before.host_waits, 0u);
  EXPECT_EQ(issued.submissions - before.submissions, 3u);
  EXPECT_EQ(issued.dispatches - before.dispatches, 9u);
  ASSERT_EQ(Str(kiln_fence_wait(fences[2], UINT64_MAX)), "OK");
  const float want[3][4] = {{5, 8, 11, 14}, {13, 20, 27, 34}, {29, 44, 59, 74}};
  for (int i = 0; i < 3; ++i) {
    HostTensor h = Read(results[i]);
    float got[4];
    std::memcpy(got, h.data.data(), sizeof(got));
    for (int k = 0; k < 4; ++k) EXPECT_EQ(got[k], want[i][k]) << "call " << i << " element " << k;
  }
  for (int i = 0; i < 3; ++i) {
    kiln_tensor_release(results[i]);
    kiln_fence_release(fences[i]);
  }
  kiln_tensor_release(x);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A real model: alexa_v0.1 (openWakeWord head) invoked 8 times back to back
// with kiln_invoke_async on the golden input, each call waiting on the
// previous one's fence, results released by the app while still in flight
// except the last; the host waits once. Every result is checked against
// ONNX Runtime's golden, and the released ones are freed after their
// timepoints (deferred_frees).
TEST(AsyncInvokeTest, RealModelBackToBack) {
  std::string dir = std::string(KILN_SOURCE_DIR) + "/tests/golden/alexa_v0.1";
  std::string model = std::string(KILN_SOURCE_DIR) + "/.cache/models/alexa_v0.1.onnx";
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  HostTensor input, expected;
  std::string error;
  ASSERT_TRUE(ReadNpyTensor(dir + "/input_0.npy", &input, &error)) << error;
  ASSERT_TRUE(ReadNpyTensor(dir + "/output_0.npy", &expected, &error)) << error;
  driver::CompileOptions options;
  ASSERT_TRUE(onnx_import::ParseInputShapeFlag("onnx::Flatten_0=1x16x96", &options.import).ok());
  Program p;
  ASSERT_EQ(p.Load(driver::CompileOnnxFile(model, options)), "OK");
  kiln_tensor_t x = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(SharedDevice(), input.dtype, input.shape.size(), input.shape.data(),
                                   input.data.data(), input.data.size(), &x)),
            "OK");
  // Warm-up (pipelines, caches), synchronous: the reference for bit equality.
  kiln_tensor_t sync_result = nullptr;
  ASSERT_EQ(Str(kiln_invoke(p.context, p.main, &x, 1, &sync_result, 1)), "OK");
  HostTensor sync = Read(sync_result);
  kiln_tensor_release(sync_result);
  EXPECT_EQ(Compare(sync, expected, 1e-4, 1e-3), "");

  constexpr int kCalls = 8;
  kiln_fence_t fences[kCalls] = {};
  kiln_tensor_t results[kCalls] = {};
  std::vector<HostTensor> reads;
  kiln_device_stats_t before = Stats();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &fences[i])), "OK");
    kiln_invoke_arg_t arg = {x, KILN_ARG_BORROW, 0};
    ASSERT_EQ(Str(kiln_invoke_async(p.context, p.main, &arg, 1, i ? fences[i - 1] : nullptr, fences[i],
                                    &results[i], 1)),
              "OK");
  }
  kiln_device_stats_t issued = Stats();
  EXPECT_EQ(issued.host_waits - before.host_waits, 0u);
  EXPECT_EQ(issued.submissions - before.submissions, static_cast<uint64_t>(kCalls));
  ASSERT_EQ(Str(kiln_fence_wait(fences[kCalls - 1], UINT64_MAX)), "OK");
  for (int i = 0; i < kCalls; ++i) {
    HostTensor got = Read(results[i]);
    EXPECT_EQ(Compare(got, expected, 1e-4, 1e-3), "") << "call " << i;
    EXPECT_EQ(got.data, sync.data) << "call " << i << " differs from the synchronous result";
  }
  for (int i = 0; i < kCalls; ++i) kiln_tensor_release(results[i]);
  // An input released by the app while the call that reads it is held back
  // by an unsignalled wait fence: its memory stays until the timepoint.
  kiln_tensor_t y = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(SharedDevice(), input.dtype, input.shape.size(), input.shape.data(),
                                   input.data.data(), input.data.size(), &y)),
            "OK");
  kiln_fence_t hold = nullptr;
  ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &hold)), "OK");
  kiln_fence_t done = nullptr;
  ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &done)), "OK");
  kiln_tensor_t r = nullptr;
  kiln_invoke_arg_t arg = {y, KILN_ARG_BORROW, 0};
  ASSERT_EQ(Str(kiln_invoke_async(p.context, p.main, &arg, 1, hold, done, &r, 1)), "OK");
  kiln_device_stats_t held = Stats();
  kiln_tensor_release(y);
  EXPECT_EQ(Stats().device_bytes_live, held.device_bytes_live) << "freed while in flight";
  ASSERT_EQ(Str(kiln_fence_signal(hold)), "OK");
  ASSERT_EQ(Str(kiln_fence_wait(done, UINT64_MAX)), "OK");
  EXPECT_EQ(Compare(Read(r), expected, 1e-4, 1e-3), "");
  kiln_tensor_release(r);
  ASSERT_EQ(Str(kiln_context_collect(p.context)), "OK");
  kiln_device_stats_t collected = Stats();
  EXPECT_EQ(collected.deferred_frees - held.deferred_frees, 1u) << "the released input was not freed";
  EXPECT_LT(collected.device_bytes_live, held.device_bytes_live);
  for (kiln_fence_t f : fences) kiln_fence_release(f);
  kiln_fence_release(hold);
  kiln_fence_release(done);
  kiln_tensor_release(x);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// silero_vad reads a device value on the host (an scf.if on a computed
// condition: one execute_and_wait per call), and streams its state: each
// call consumes the previous call's hn/cn. Three chained asynchronous calls
// (each waiting on the previous fence, state handed over with
// KILN_ARG_CONSUME) give bit-identical results to the same chain run with
// synchronous kiln_invoke_ex, and the first call matches ONNX Runtime. The
// only host waits are the three reads.
TEST(AsyncInvokeTest, StreamingStateWithHostReads) {
  std::string dir = std::string(KILN_SOURCE_DIR) + "/tests/golden/silero_vad";
  std::string model = std::string(KILN_SOURCE_DIR) + "/.cache/models/silero_vad.onnx";
  if (!std::ifstream(model)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  HostTensor in[4], golden;
  std::string error;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(ReadNpyTensor(dir + "/input_" + std::to_string(i) + ".npy", &in[i], &error)) << error;
  ASSERT_TRUE(ReadNpyTensor(dir + "/output_0.npy", &golden, &error)) << error;
  driver::CompileOptions options;
  for (const char* flag : {"input=1x512", "h=2x1x64", "c=2x1x64"})
    ASSERT_TRUE(onnx_import::ParseInputShapeFlag(flag, &options.import).ok());
  options.pipeline.consume_args = {"h", "c"};
  Program p;
  ASSERT_EQ(p.Load(driver::CompileOnnxFile(model, options)), "OK");
  auto tensor = [](const HostTensor& h) {
    kiln_tensor_t t = nullptr;
    kiln_status_free(kiln_tensor_create(SharedDevice(), h.dtype, h.shape.size(), h.shape.data(), h.data.data(),
                                        h.data.size(), &t));
    return t;
  };
  kiln_tensor_t audio = tensor(in[0]), sr = tensor(in[1]);
  constexpr int kCalls = 3;
  // Synchronous reference chain.
  std::vector<HostTensor> want;
  {
    kiln_tensor_t h = tensor(in[2]), c = tensor(in[3]);
    for (int i = 0; i < kCalls; ++i) {
      kiln_invoke_arg_t args[4] = {{audio, KILN_ARG_BORROW, 0}, {sr, KILN_ARG_BORROW, 0},
                                   {h, KILN_ARG_CONSUME, 0}, {c, KILN_ARG_CONSUME, 0}};
      kiln_tensor_t r[3] = {};
      ASSERT_EQ(Str(kiln_invoke_ex(p.context, p.main, args, 4, r, 3)), "OK");
      if (i == 0) EXPECT_EQ(Compare(Read(r[0]), golden, 1e-4, 1e-3), "");
      want.push_back(Read(r[0]));
      if (i == kCalls - 1) {
        want.push_back(Read(r[1]));
        want.push_back(Read(r[2]));
      }
      kiln_tensor_release(r[0]);
      h = r[1];
      c = r[2];
    }
    kiln_tensor_release(h);
    kiln_tensor_release(c);
  }
  // The same chain, asynchronously.
  kiln_tensor_t h = tensor(in[2]), c = tensor(in[3]);
  kiln_fence_t fences[kCalls] = {};
  kiln_tensor_t outs[kCalls] = {};
  kiln_device_stats_t before = Stats();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_EQ(Str(kiln_fence_create(SharedDevice(), &fences[i])), "OK");
    kiln_invoke_arg_t args[4] = {{audio, KILN_ARG_BORROW, 0}, {sr, KILN_ARG_BORROW, 0},
                                 {h, KILN_ARG_CONSUME, 0}, {c, KILN_ARG_CONSUME, 0}};
    kiln_tensor_t r[3] = {};
    ASSERT_EQ(Str(kiln_invoke_async(p.context, p.main, args, 4, i ? fences[i - 1] : nullptr, fences[i], r, 3)),
              "OK");
    outs[i] = r[0];
    h = r[1];
    c = r[2];
  }
  kiln_device_stats_t issued = Stats();
  EXPECT_EQ(issued.host_waits - before.host_waits, static_cast<uint64_t>(kCalls)) << "one per host read";
  ASSERT_EQ(Str(kiln_fence_wait(fences[kCalls - 1], UINT64_MAX)), "OK");
  for (int i = 0; i < kCalls; ++i) EXPECT_EQ(Read(outs[i]).data, want[i].data) << "call " << i;
  EXPECT_EQ(Read(h).data, want[kCalls].data);
  EXPECT_EQ(Read(c).data, want[kCalls + 1].data);
  for (int i = 0; i < kCalls; ++i) {
    kiln_tensor_release(outs[i]);
    kiln_fence_release(fences[i]);
  }
  kiln_tensor_release(h);
  kiln_tensor_release(c);
  kiln_tensor_release(audio);
  kiln_tensor_release(sr);
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
