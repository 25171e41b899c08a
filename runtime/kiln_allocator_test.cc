// The allocator hook (kiln_set_allocator) on the vadd and streaming test
// modules: a counting allocator sees the runtime's host allocations, none in
// the steady state of a streaming loop (kiln_invoke_ex), and gets every block back once everything is
// released; an allocator that fails at any point of setup makes that call
// fail with RESOURCE_EXHAUSTED, and nothing leaks or crashes.
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "vm/testing/ownership_modules.h"
#include "vm/testing/test_modules.h"

namespace {

using kiln::vm::testing::kVaddCount;
using kiln_test::Str;
constexpr int kN = 64;

// Counts calls and live blocks; fails every allocation once `budget`
// allocations have been made (budget < 0: never fails).
struct Counting {
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> frees{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<int64_t> live_bytes{0};
  int64_t budget = -1;
};

void* CountingAllocate(void* user_data, size_t size, size_t alignment) {
  auto* c = static_cast<Counting*>(user_data);
  if (c->budget >= 0 && c->allocations.load() >= static_cast<uint64_t>(c->budget)) {
    c->refused.fetch_add(1);
    return nullptr;
  }
  EXPECT_GE(alignment, 16u);
  EXPECT_EQ(alignment & (alignment - 1), 0u);
  // A size header in front, so free can check the byte balance.
  size_t front = alignment < 16 ? 16 : alignment;
  void* base = nullptr;
  if (posix_memalign(&base, front, size + front) != 0) return nullptr;
  *static_cast<size_t*>(base) = size;
  c->allocations.fetch_add(1);
  c->live_bytes.fetch_add(static_cast<int64_t>(size));
  return static_cast<char*>(base) + front;
}

// Every block the hook handed out, with its front offset (the size header
// lies at ptr - front), so Free can check it and free the base.
struct Allocator {
  static void* Allocate(void* user_data, size_t size, size_t alignment) {
    void* p = CountingAllocate(user_data, size, alignment);
    if (p) {
      std::lock_guard<std::mutex> lock(Mutex());
      Blocks().push_back({p, alignment < 16 ? 16 : alignment});
    }
    return p;
  }
  static void Free(void* user_data, void* ptr) {
    auto* c = static_cast<Counting*>(user_data);
    std::lock_guard<std::mutex> lock(Mutex());
    auto& blocks = Blocks();
    for (size_t i = blocks.size(); i-- > 0;) {
      if (blocks[i].first == ptr) {
        char* base = static_cast<char*>(ptr) - blocks[i].second;
        c->frees.fetch_add(1);
        c->live_bytes.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(base)));
        std::free(base);
        blocks[i] = blocks.back();
        blocks.pop_back();
        return;
      }
    }
    ADD_FAILURE() << "free of a pointer the allocator never returned: " << ptr;
  }
  static std::vector<std::pair<void*, size_t>>& Blocks() {
    static std::vector<std::pair<void*, size_t>> blocks;
    return blocks;
  }
  static std::mutex& Mutex() {
    static std::mutex mutex;
    return mutex;
  }
};

kiln_allocator_t MakeAllocator(Counting* c) {
  kiln_allocator_t a = {};
  a.struct_size = sizeof(a);
  a.user_data = c;
  a.allocate = Allocator::Allocate;
  a.free = Allocator::Free;
  return a;
}

// Everything an app makes to run vadd once; Release() undoes what exists.
struct App {
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t main = nullptr;
  kiln_tensor_t args[2] = {};
  kiln_tensor_t results[3] = {};
  std::vector<float> a, b;

  // Runs the steps in order; returns the first error ("OK" when all pass).
  std::string Run(const std::vector<uint8_t>& bytes) {
    a.resize(kVaddCount);
    b.resize(kVaddCount);
    for (int i = 0; i < kVaddCount; ++i) {
      a[i] = 2.0f * i;
      b[i] = 0.25f * i;
    }
    std::string s = Str(kiln_instance_create(&instance));
    if (s == "OK") s = Str(kiln_device_create(instance, "vulkan", nullptr, -1, &device));
    if (s == "OK") {
      s = Str(kiln_module_load_from_memory(instance, bytes.data(), bytes.size(), &module));
    }
    if (s == "OK") s = Str(kiln_context_create(device, &module, 1, &context));
    if (s == "OK") s = Str(kiln_context_lookup_function(context, "main", &main));
    int64_t dims[] = {kVaddCount};
    if (s == "OK") {
      s = Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, a.data(), a.size() * 4, &args[0]));
    }
    if (s == "OK") {
      s = Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, b.data(), b.size() * 4, &args[1]));
    }
    if (s == "OK") s = Str(kiln_invoke(context, main, args, 2, results, 3));
    return s;
  }
  // c = a + b + bias, bias[i] = i + 0.5 (vm/testing/test_modules.h).
  void CheckResult() {
    std::vector<float> c(kVaddCount);
    ASSERT_EQ(Str(kiln_tensor_read(results[0], c.data(), c.size() * 4)), "OK");
    for (int i = 0; i < kVaddCount; ++i) {
      ASSERT_FLOAT_EQ(c[i], a[i] + b[i] + static_cast<float>(i) + 0.5f) << i;
    }
  }
  void ReleaseResults() {
    for (kiln_tensor_t& t : results) {
      kiln_tensor_release(t);
      t = nullptr;
    }
  }
  void Release() {
    ReleaseResults();
    for (kiln_tensor_t t : args) kiln_tensor_release(t);
    kiln_context_release(context);
    kiln_module_release(module);
    kiln_device_release(device);
    kiln_instance_release(instance);
  }
};

TEST(AllocatorTest, CountingAllocatorSeesEverythingBackAndNothingInTheSteadyState) {
  std::vector<uint8_t> bytes = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  Counting counting;
  kiln_allocator_t allocator = MakeAllocator(&counting);
  ASSERT_EQ(Str(kiln_set_allocator(&allocator)), "OK");
  {
    App setup;
    ASSERT_EQ(setup.Run(bytes), "OK");
    setup.CheckResult();
    // Every object behind the handles, and the HAL's and VM's objects.
    uint64_t after_setup = counting.allocations.load();
    EXPECT_GE(after_setup, 20u);
    // The allocator may not change while its memory is in use.
    EXPECT_EQ(Str(kiln_set_allocator(nullptr)).rfind("FAILED_PRECONDITION: kiln_set_allocator", 0), 0u);
    setup.ReleaseResults();
    // The streaming module (vm/testing/ownership_modules.h): state consumed
    // and fed back, y released; after the first call no allocator call.
    std::vector<uint8_t> stream_bytes = kiln::vm::testing::BuildStreamModule(
        {kVaddSpirv, kVaddSpirvWordCount, kScaleSpirv, kScaleSpirvWordCount}, kN);
    kiln_module_t stream = nullptr;
    kiln_context_t stream_context = nullptr;
    kiln_function_t step = nullptr;
    ASSERT_EQ(Str(kiln_module_load_from_memory(setup.instance, stream_bytes.data(),
                                               stream_bytes.size(), &stream)), "OK");
    ASSERT_EQ(Str(kiln_context_create(setup.device, &stream, 1, &stream_context)), "OK");
    ASSERT_EQ(Str(kiln_context_lookup_function(stream_context, "step", &step)), "OK");
    std::vector<float> x(kN), want(kN, 0.0f), y(kN), zeros(kN, 0.0f);
    for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i);
    int64_t dims[] = {kN};
    kiln_tensor_t xt = nullptr, state = nullptr;
    ASSERT_EQ(Str(kiln_tensor_create(setup.device, KILN_DTYPE_F32, 1, dims, x.data(), kN * 4, &xt)), "OK");
    ASSERT_EQ(Str(kiln_tensor_create(setup.device, KILN_DTYPE_F32, 1, dims, zeros.data(), kN * 4, &state)), "OK");
    for (int iter = 0; iter < 20; ++iter) {
      uint64_t before = counting.allocations.load();
      kiln_invoke_arg_t args[] = {{xt, KILN_ARG_BORROW, 0}, {state, KILN_ARG_CONSUME, 0}};
      kiln_tensor_t r[2] = {};
      ASSERT_EQ(Str(kiln_invoke_ex(stream_context, step, args, 2, r, 2)), "OK");
      if (iter >= 1) {
        EXPECT_EQ(counting.allocations.load() - before, 0u) << "invoke " << iter;
      }
      ASSERT_EQ(Str(kiln_tensor_read(r[0], y.data(), kN * 4)), "OK");
      for (int i = 0; i < kN; ++i) {  // y = (x + state) + x; next = (x + state) * 0.5
        float tmp = x[i] + want[i];
        ASSERT_EQ(y[i], tmp + x[i]) << iter;
        want[i] = tmp * 0.5f;
      }
      kiln_tensor_release(r[0]);
      state = r[1];
    }
    kiln_tensor_release(state);
    kiln_tensor_release(xt);
    kiln_context_release(stream_context);
    kiln_module_release(stream);
    setup.Release();
  }
  // Released: every block came back through `free`, byte for byte.
  EXPECT_EQ(counting.frees.load(), counting.allocations.load());
  EXPECT_EQ(counting.live_bytes.load(), 0);
  EXPECT_EQ(Str(kiln_set_allocator(nullptr)), "OK");
  EXPECT_EQ(counting.refused.load(), 0u);
  EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
}

// The allocator refuses from its N-th call on, for every N up to what a
// whole setup needs: the first call that needed the memory fails with
// RESOURCE_EXHAUSTED, everything made before is released cleanly, and every
// block made through the hook comes back.
TEST(AllocatorTest, FailingAllocatorGivesResourceExhaustedAtEveryPoint) {
  std::vector<uint8_t> bytes = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  uint64_t needed = 0;
  {
    Counting counting;
    kiln_allocator_t allocator = MakeAllocator(&counting);
    ASSERT_EQ(Str(kiln_set_allocator(&allocator)), "OK");
    App setup;
    ASSERT_EQ(setup.Run(bytes), "OK");
    needed = counting.allocations.load();
    setup.Release();
    ASSERT_EQ(Str(kiln_set_allocator(nullptr)), "OK");
  }
  ASSERT_GT(needed, 0u);
  // Every budget when that is cheap, else about 60 of them spread evenly
  // (each creates a Vulkan device), always including 0 and needed - 1.
  uint64_t step = needed > 60 ? needed / 60 : 1;
  std::vector<uint64_t> budgets;
  for (uint64_t n = 0; n < needed; n += step) budgets.push_back(n);
  if (budgets.back() != needed - 1) budgets.push_back(needed - 1);
  for (uint64_t budget : budgets) {
    Counting counting;
    counting.budget = static_cast<int64_t>(budget);
    kiln_allocator_t allocator = MakeAllocator(&counting);
    ASSERT_EQ(Str(kiln_set_allocator(&allocator)), "OK");
    App setup;
    std::string s = setup.Run(bytes);
    EXPECT_EQ(s.rfind("RESOURCE_EXHAUSTED", 0), 0u) << "budget " << budget << ": " << s;
    EXPECT_GT(counting.refused.load(), 0u) << "budget " << budget;
    setup.Release();
    EXPECT_EQ(counting.frees.load(), counting.allocations.load()) << "budget " << budget;
    EXPECT_EQ(Str(kiln_set_allocator(nullptr)), "OK") << "budget " << budget;
  }
  EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
}

TEST(AllocatorTest, BadAllocatorStructsAreRefused) {
  kiln_allocator_t a = {};
  EXPECT_EQ(Str(kiln_set_allocator(&a)).rfind("INVALID_ARGUMENT: kiln_set_allocator", 0), 0u);
  Counting counting;
  a = MakeAllocator(&counting);
  a.free = nullptr;
  EXPECT_EQ(Str(kiln_set_allocator(&a)).rfind("INVALID_ARGUMENT", 0), 0u);
  a = MakeAllocator(&counting);
  a.struct_size = 8;
  EXPECT_EQ(Str(kiln_set_allocator(&a)).rfind("INVALID_ARGUMENT", 0), 0u);
  EXPECT_EQ(Str(kiln_set_allocator(nullptr)), "OK");
}

}  // namespace
