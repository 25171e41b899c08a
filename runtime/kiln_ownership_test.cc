// Ownership through the C API: kiln_invoke_ex (consume, output storage),
// kiln_tensor_create_view (slices, chained views), aliased results, a
// multi-module context, and exact steady-state counts from
// kiln_device_stats. Modules: vm/testing/ownership_modules.h.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"
#include "vm/testing/ownership_modules.h"

namespace {

constexpr int kN = 64;
constexpr size_t kBytes = kN * 4;

using kiln_test::Str;

kiln::vm::testing::TestShaders Shaders() {
  return {kVaddSpirv, kVaddSpirvWordCount, kScaleSpirv, kScaleSpirvWordCount};
}

class OwnershipCApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Str(kiln_instance_create(&instance_)), "OK");
    ASSERT_EQ(Str(kiln_device_create(instance_, "vulkan", nullptr, -1, &device_)), "OK");
  }
  void TearDown() override {
    kiln_context_release(context_);
    for (kiln_module_t m : modules_) kiln_module_release(m);
    kiln_device_stats_t s;
    ASSERT_EQ(Str(kiln_device_stats(device_, &s)), "OK");
    EXPECT_EQ(s.device_bytes_live, 0u);  // every buffer freed
    kiln_device_release(device_);
    kiln_instance_release(instance_);
    EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
  }
  void Load(std::vector<std::vector<uint8_t>> modules) {
    bytes_ = std::move(modules);
    for (const auto& b : bytes_) {
      kiln_module_t m = nullptr;
      ASSERT_EQ(Str(kiln_module_load_from_memory(instance_, b.data(), b.size(), &m)), "OK");
      modules_.push_back(m);
    }
    ASSERT_EQ(Str(kiln_context_create(device_, modules_.data(), modules_.size(), &context_)),
              "OK");
  }
  kiln_function_t Fn(const char* name) {
    kiln_function_t f = nullptr;
    EXPECT_EQ(Str(kiln_context_lookup_function(context_, name, &f)), "OK");
    return f;
  }
  kiln_tensor_t Tensor(std::vector<float> v) {
    int64_t dims[] = {static_cast<int64_t>(v.size())};
    kiln_tensor_t t = nullptr;
    EXPECT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 1, dims, v.data(), v.size() * 4, &t)),
              "OK");
    return t;
  }
  std::vector<float> Iota(float base, int n = kN) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
    return v;
  }
  std::vector<float> Read(kiln_tensor_t t) {
    std::vector<float> v(kiln_tensor_byte_size(t) / 4);
    EXPECT_EQ(Str(kiln_tensor_read(t, v.data(), v.size() * 4)), "OK");
    return v;
  }
  kiln_device_stats_t Stats() {
    kiln_device_stats_t s;
    EXPECT_EQ(Str(kiln_device_stats(device_, &s)), "OK");
    return s;
  }

  std::vector<std::vector<uint8_t>> bytes_;
  kiln_instance_t instance_ = nullptr;
  kiln_device_t device_ = nullptr;
  std::vector<kiln_module_t> modules_;
  kiln_context_t context_ = nullptr;
};

TEST_F(OwnershipCApiTest, StreamingStateRoundTripIsAllocationFree) {
  Load({kiln::vm::testing::BuildStreamModule(Shaders(), kN)});
  kiln_function_t step = Fn("step");
  kiln_tensor_signature_t sig;
  ASSERT_EQ(Str(kiln_function_arg(step, 1, &sig)), "OK");
  EXPECT_EQ(sig.ownership, KILN_OWNERSHIP_CONSUME);
  kiln_tensor_t x = Tensor(Iota(0));
  kiln_tensor_t state = Tensor(std::vector<float>(kN, 0.0f));
  std::vector<float> want(kN, 0.0f);
  for (int iter = 0; iter < 8; ++iter) {
    kiln_device_stats_t before = Stats();
    kiln_invoke_arg_t args[] = {{x, KILN_ARG_BORROW, 0}, {state, KILN_ARG_CONSUME, 0}};
    kiln_tensor_t r[2] = {};
    ASSERT_EQ(Str(kiln_invoke_ex(context_, step, args, 2, r, 2)), "OK");
    kiln_device_stats_t after = Stats();
    std::vector<float> y = Read(r[0]), next = Read(r[1]);
    for (int i = 0; i < kN; ++i) {
      float tmp = static_cast<float>(i) + want[i];
      ASSERT_EQ(y[i], tmp + static_cast<float>(i));
      want[i] = tmp * 0.5f;
      ASSERT_EQ(next[i], want[i]);
    }
    kiln_tensor_release(r[0]);
    state = r[1];  // consumed by the next call
    EXPECT_EQ(after.copies - before.copies, 0u);
    if (iter >= 1) {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 0u) << iter;
      EXPECT_EQ(after.host_allocations_invoke - before.host_allocations_invoke, 0u) << iter;
    }
  }
  // Keeping y alive across a call forces one new y buffer (never reused
  // while the app holds it).
  kiln_tensor_t held = nullptr;
  {
    kiln_invoke_arg_t args[] = {{x, KILN_ARG_BORROW, 0}, {state, KILN_ARG_CONSUME, 0}};
    kiln_tensor_t r[2] = {};
    ASSERT_EQ(Str(kiln_invoke_ex(context_, step, args, 2, r, 2)), "OK");
    held = r[0];
    state = r[1];
    std::vector<float> held_values = Read(held);
    kiln_device_stats_t before = Stats();
    kiln_invoke_arg_t args2[] = {{x, KILN_ARG_BORROW, 0}, {state, KILN_ARG_CONSUME, 0}};
    ASSERT_EQ(Str(kiln_invoke_ex(context_, step, args2, 2, r, 2)), "OK");
    EXPECT_EQ(Stats().device_allocations - before.device_allocations, 1u);
    EXPECT_EQ(Read(held), held_values);
    kiln_tensor_release(r[0]);
    state = r[1];
  }
  kiln_tensor_release(held);
  kiln_tensor_release(state);
  kiln_tensor_release(x);
}

// A streaming loop as an app writes it: each frame copies new input into
// the same tensor (kiln_tensor_write), runs step with the state consumed and
// fed back, reads y into the same host array. 100 frames; after the first,
// every frame makes 0 device allocations and 0 host allocations (the stats
// counters device_allocations and host_allocations_invoke), no copy and no
// transfer. y is checked against the recurrence on the host each frame.
TEST_F(OwnershipCApiTest, StreamingFramesWithTensorWriteAreAllocationFree) {
  Load({kiln::vm::testing::BuildStreamModule(Shaders(), kN)});
  kiln_function_t step = Fn("step");
  kiln_tensor_t x = Tensor(std::vector<float>(kN, 0.0f));
  kiln_tensor_t state = Tensor(std::vector<float>(kN, 0.0f));
  std::vector<float> frame(kN), y(kN), want_state(kN, 0.0f);
  for (int f = 0; f < 100; ++f) {
    for (int i = 0; i < kN; ++i) frame[i] = static_cast<float>((f * 7 + i) % 13) - 6.0f;
    kiln_device_stats_t before = Stats();
    kiln_status_t s = kiln_tensor_write(x, frame.data(), kBytes);
    kiln_invoke_arg_t args[] = {{x, KILN_ARG_BORROW, 0}, {state, KILN_ARG_CONSUME, 0}};
    kiln_tensor_t r[2] = {};
    if (!s) s = kiln_invoke_ex(context_, step, args, 2, r, 2);
    if (!s) s = kiln_tensor_read(r[0], y.data(), kBytes);
    if (!s) kiln_tensor_release(r[0]);
    kiln_device_stats_t after = Stats();
    ASSERT_EQ(Str(s), "OK") << "frame " << f;
    state = r[1];  // consumed by the next frame
    for (int i = 0; i < kN; ++i) {
      float tmp = frame[i] + want_state[i];
      ASSERT_EQ(y[i], tmp + frame[i]) << "frame " << f << " element " << i;
      want_state[i] = tmp * 0.5f;
    }
    EXPECT_EQ(after.copies - before.copies, 0u) << f;
    EXPECT_EQ(after.transfers - before.transfers, 0u) << f;
    if (f >= 1) {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 0u) << "frame " << f;
      EXPECT_EQ(after.host_allocations_invoke - before.host_allocations_invoke, 0u) << "frame " << f;
    }
  }
  std::vector<float> final_state = Read(state);
  for (int i = 0; i < kN; ++i) EXPECT_EQ(final_state[i], want_state[i]) << i;
  // Size and NULL errors.
  EXPECT_EQ(Str(kiln_tensor_write(x, frame.data(), kBytes - 4)).rfind("INVALID_ARGUMENT", 0), 0u);
  EXPECT_EQ(Str(kiln_tensor_write(nullptr, frame.data(), kBytes)).rfind("INVALID_ARGUMENT", 0), 0u);
  EXPECT_EQ(Str(kiln_tensor_write(x, nullptr, kBytes)).rfind("INVALID_ARGUMENT", 0), 0u);
  kiln_tensor_release(state);
  kiln_tensor_release(x);
}

TEST_F(OwnershipCApiTest, ConsumeOfASharedTensorLeavesItIntact) {
  Load({kiln::vm::testing::BuildOwnershipModule(Shaders(), kN)});
  kiln_tensor_t x = Tensor(Iota(0));
  kiln_tensor_retain(x);  // the app keeps a reference: the callee must not write
  kiln_invoke_arg_t arg = {x, KILN_ARG_CONSUME, 0};
  kiln_tensor_t y = nullptr;
  kiln_device_stats_t before = Stats();
  ASSERT_EQ(Str(kiln_invoke_ex(context_, Fn("patch"), &arg, 1, &y, 1)), "OK");
  EXPECT_EQ(Stats().copies - before.copies, 1u);  // take_or_clone copied
  EXPECT_EQ(Read(x)[0], 0.0f);
  EXPECT_EQ(Read(y)[0], 7.0f);
  EXPECT_EQ(Read(y)[9], 9.0f);
  kiln_tensor_release(y);
  // Now x's only reference: consumed in place.
  arg = {x, KILN_ARG_CONSUME, 0};
  before = Stats();
  ASSERT_EQ(Str(kiln_invoke_ex(context_, Fn("patch"), &arg, 1, &y, 1)), "OK");
  EXPECT_EQ(Stats().copies - before.copies, 0u);
  EXPECT_EQ(Stats().device_allocations - before.device_allocations, 0u);
  EXPECT_EQ(Read(y)[2], 7.0f);
  kiln_tensor_release(y);
}

TEST_F(OwnershipCApiTest, OutputStorageRowOfABatchThroughChainedViews) {
  Load({kiln::vm::testing::BuildOwnershipModule(Shaders(), kN)});
  kiln_tensor_t batch = nullptr;
  int64_t dims[] = {4, kN};
  ASSERT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, dims, nullptr, 0, &batch)), "OK");
  // b = rows 2..3 of a, c = row 1 of b (= row 3 of a).
  kiln_tensor_t b = nullptr, c = nullptr;
  int64_t rows2[] = {2, kN}, row[] = {kN};
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 2 * kBytes, KILN_DTYPE_F32, 2, rows2, &b)), "OK");
  ASSERT_EQ(Str(kiln_tensor_create_view(b, kBytes, KILN_DTYPE_F32, 1, row, &c)), "OK");
  kiln_tensor_release(b);  // c keeps the storage alive, not b
  kiln_tensor_t x = Tensor(Iota(1));
  kiln_invoke_arg_t args[] = {{c, KILN_ARG_OUTPUT_STORAGE, 0}, {x, KILN_ARG_BORROW, 0}};
  kiln_tensor_t y = nullptr;
  kiln_device_stats_t before = Stats();
  ASSERT_EQ(Str(kiln_invoke_ex(context_, Fn("write_output"), args, 2, &y, 1)), "OK");
  kiln_device_stats_t after = Stats();
  EXPECT_EQ(y, c);  // the caller's tensor is the result
  EXPECT_EQ(after.copies - before.copies, 0u);
  EXPECT_EQ(after.device_allocations - before.device_allocations, 0u);
  std::vector<float> all = Read(batch);
  EXPECT_EQ(all[3 * kN + 0], 2.0f);
  EXPECT_EQ(all[3 * kN + 63], 128.0f);
  EXPECT_EQ(all[2 * kN + 63], 0.0f);
  kiln_tensor_release(y);
  // A program that ignores output storage: still correct, through one copy.
  kiln_tensor_t row0 = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 0, KILN_DTYPE_F32, 1, row, &row0)), "OK");
  kiln_invoke_arg_t args2[] = {{x, KILN_ARG_BORROW, 0}, {row0, KILN_ARG_OUTPUT_STORAGE, 0}};
  before = Stats();
  ASSERT_EQ(Str(kiln_invoke_ex(context_, Fn("ignore_output"), args2, 2, &y, 1)), "OK");
  EXPECT_EQ(y, row0);
  EXPECT_EQ(Stats().copies - before.copies, 1u);
  EXPECT_EQ(Read(batch)[5], 12.0f);
  kiln_tensor_release(y);
  kiln_tensor_release(row0);
  kiln_tensor_release(c);
  kiln_tensor_release(x);
  kiln_tensor_release(batch);
}

TEST_F(OwnershipCApiTest, InvokeExErrors) {
  Load({kiln::vm::testing::BuildOwnershipModule(Shaders(), kN)});
  kiln_function_t fn = Fn("write_output");
  kiln_tensor_t batch = nullptr;
  int64_t dims[] = {2, kN}, row[] = {kN}, half[] = {kN / 2};
  ASSERT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 2, dims, nullptr, 0, &batch)), "OK");
  kiln_tensor_t r0 = nullptr, r0b = nullptr, small = nullptr, ints = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 0, KILN_DTYPE_F32, 1, row, &r0)), "OK");
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 16, KILN_DTYPE_F32, 1, row, &r0b)), "OK");
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 0, KILN_DTYPE_F32, 1, half, &small)), "OK");
  ASSERT_EQ(Str(kiln_tensor_create_view(batch, 0, KILN_DTYPE_I32, 1, row, &ints)), "OK");
  kiln_tensor_t out = nullptr;
  EXPECT_EQ(Str(kiln_tensor_create_view(batch, kBytes + 4, KILN_DTYPE_F32, 1, row, &out)),
            "OUT_OF_RANGE: kiln_tensor_create_view: subview tensor<64xf32> at byte offset 260 "
            "(256 bytes) exceeds its parent tensor<2x64xf32> (512 bytes)");
  kiln_tensor_t y = nullptr;
  auto run = [&](std::vector<kiln_invoke_arg_t> args) {
    return Str(kiln_invoke_ex(context_, fn, args.data(), args.size(), &y, 1));
  };
  EXPECT_EQ(run({{r0, KILN_ARG_BORROW, 0}, {r0b, KILN_ARG_OUTPUT_STORAGE, 0}}),
            "FAILED_PRECONDITION: argument 0 'x' overlaps the output storage of result 0 'y' "
            "(bytes [0, 256) and [16, 272) of one allocation)");
  EXPECT_EQ(run({{r0, KILN_ARG_BORROW, 0}, {small, KILN_ARG_OUTPUT_STORAGE, 0}}),
            "INVALID_ARGUMENT: output storage for result 0 'y': tensor<32xf32> (128 bytes) is "
            "smaller than tensor<64xf32> (256 bytes)");
  EXPECT_EQ(run({{r0, KILN_ARG_BORROW, 0}, {ints, KILN_ARG_OUTPUT_STORAGE, 0}}),
            "INVALID_ARGUMENT: output storage for result 0 'y': tensor<64xi32> has dtype i32, the "
            "result is tensor<64xf32>");
  EXPECT_EQ(run({{r0, KILN_ARG_BORROW, 0}, {r0b, KILN_ARG_OUTPUT_STORAGE, 1}}),
            "INVALID_ARGUMENT: kiln_invoke_ex: args[1]: output storage for result 1, but function "
            "'write_output' has 1 results");
  EXPECT_EQ(run({{r0, KILN_ARG_BORROW, 0}, {r0b, KILN_ARG_OUTPUT_STORAGE, 0},
                 {small, KILN_ARG_OUTPUT_STORAGE, 0}}),
            "INVALID_ARGUMENT: kiln_invoke_ex: args[2]: result 0 already has output storage");
  EXPECT_EQ(run({{r0, KILN_ARG_CONSUME | KILN_ARG_OUTPUT_STORAGE, 0}}),
            "INVALID_ARGUMENT: kiln_invoke_ex: args[0]: KILN_ARG_CONSUME and "
            "KILN_ARG_OUTPUT_STORAGE exclude each other");
  EXPECT_EQ(run({}),
            "INVALID_ARGUMENT: kiln_invoke_ex: function 'write_output' expects 1 arguments, got 0 "
            "(plus 0 output storage entries)");
  // A consumed handle is released even when the call fails.
  kiln_tensor_retain(r0);
  EXPECT_EQ(run({{r0, KILN_ARG_CONSUME, 0}, {r0b, KILN_ARG_OUTPUT_STORAGE, 0}}).substr(0, 19),
            "FAILED_PRECONDITION");
  kiln_tensor_retain(r0);
  EXPECT_EQ(run({{r0, KILN_ARG_CONSUME, 0}, {r0, KILN_ARG_BORROW, 0}}).substr(0, 16),
            "INVALID_ARGUMENT");
  EXPECT_FALSE(y);
  for (kiln_tensor_t t : {r0, r0b, small, ints, batch}) kiln_tensor_release(t);
}

TEST_F(OwnershipCApiTest, AliasedResultsAreSeparateHandlesFreedOnce) {
  Load({kiln::vm::testing::BuildOwnershipModule(Shaders(), kN)});
  uint64_t live0 = Stats().device_bytes_live;
  for (const char* fn : {"same_twice", "two_subviews", "subspans", "distinct"}) {
    kiln_tensor_t r[2] = {};
    ASSERT_EQ(Str(kiln_invoke_ex(context_, Fn(fn), nullptr, 0, r, 2)), "OK") << fn;
    EXPECT_NE(r[0], r[1]);
    EXPECT_EQ(Read(r[0])[0], 1.0f) << fn;
    kiln_tensor_release(r[0]);
    EXPECT_EQ(Read(r[1])[kN - 1], std::string(fn) == "same_twice" ? 1.0f : 2.0f) << fn;
    kiln_tensor_release(r[1]);
    EXPECT_EQ(Stats().device_bytes_live, live0) << fn;
  }
}

TEST_F(OwnershipCApiTest, MultiModuleContext) {
  Load(kiln::vm::testing::BuildPipelineModules(Shaders(), kN));
  kiln_function_t main_fn = Fn("driver.main");
  EXPECT_EQ(kiln_function_arg_count(main_fn), 2u);
  kiln_tensor_t x = Tensor(Iota(1));
  kiln_tensor_t s = Tensor(Iota(100));
  std::vector<float> sv = Iota(100);
  for (int iter = 0; iter < 4; ++iter) {
    kiln_device_stats_t before = Stats();
    kiln_invoke_arg_t args[] = {{x, KILN_ARG_BORROW, 0}, {s, KILN_ARG_CONSUME, 0}};
    kiln_tensor_t r[3] = {};
    ASSERT_EQ(Str(kiln_invoke_ex(context_, main_fn, args, 2, r, 3)), "OK");
    kiln_device_stats_t after = Stats();
    std::vector<float> h = Read(r[0]), e = Read(r[1]), s2 = Read(r[2]);
    for (int i = 0; i < kN; ++i) {
      auto want = kiln::vm::testing::PipelineReference(1.0f + i, sv[i], i);
      ASSERT_EQ(h[i], want.h);
      ASSERT_EQ(e[i], want.e);
      ASSERT_EQ(s2[i], want.s2);
      sv[i] = want.s2;
    }
    EXPECT_EQ(after.copies - before.copies, 0u);
    if (iter > 0) {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 0u);
      EXPECT_EQ(after.host_allocations_invoke - before.host_allocations_invoke, 0u);
    }
    kiln_tensor_release(r[0]);
    kiln_tensor_release(r[1]);
    s = r[2];
  }
  kiln_tensor_release(s);
  kiln_tensor_release(x);
}

TEST_F(OwnershipCApiTest, MultiModuleLinkOrderMatters) {
  auto bytes = kiln::vm::testing::BuildPipelineModules(Shaders(), kN);
  std::vector<kiln_module_t> mods;
  for (const auto& b : bytes) {
    kiln_module_t m = nullptr;
    ASSERT_EQ(Str(kiln_module_load_from_memory(instance_, b.data(), b.size(), &m)), "OK");
    mods.push_back(m);
  }
  std::swap(mods[0], mods[3]);  // driver first
  kiln_context_t ctx = nullptr;
  EXPECT_EQ(Str(kiln_context_create(device_, mods.data(), mods.size(), &ctx)),
            "NOT_FOUND: module 'driver': unknown import 0 'mel.main': neither a function of the "
            "native hal module nor an export of a module registered before it (registered: none)");
  for (kiln_module_t m : mods) kiln_module_release(m);
}

}  // namespace
