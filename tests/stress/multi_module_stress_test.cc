// Stress: many invocations of a multi-module program through the C API
// (vm/testing/ownership_modules.h: driver.main chains mel.main -> emb.main ->
// head.main; m is moved into emb, the state into head, e crosses back out to
// the app and into head). Each iteration, at random:
//   - the state argument is the previous call's s2 consumed (exclusive: taken
//     in place), or consumed while the app keeps a reference (shared: the
//     callee must allocate and leave it intact), or a fresh tensor;
//   - each result is released at once or parked in a pool that is drained in
//     random order (so cached buffers are sometimes still held);
//   - result h sometimes gets caller output storage (a row of a batch);
//   - results are checked against a host reference.
// At the end everything is released: the allocator must report zero live
// device bytes, and the sanitizer build must report nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"
#include "vm/testing/ownership_modules.h"

namespace {

// The state halves every iteration and reaches subnormal floats. Vulkan
// lets a shader flush subnormals to zero unless it declares DenormPreserve
// (NVIDIA's drivers flush f32 by default; lavapipe keeps them), so a
// subnormal expected value also matches a zero.
bool SameOrFlushed(float got, float want) {
  return got == want || (std::fpclassify(want) == FP_SUBNORMAL && got == 0.0f);
}

constexpr int kN = 64;
constexpr size_t kPoolMax = 12;

using kiln_test::Str;

long EnvLong(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

kiln_tensor_t Tensor(kiln_device_t device, const std::vector<float>& v) {
  int64_t dims[] = {static_cast<int64_t>(v.size())};
  kiln_tensor_t t = nullptr;
  EXPECT_EQ(Str(kiln_tensor_create(device, KILN_DTYPE_F32, 1, dims, v.data(), v.size() * 4, &t)),
            "OK");
  return t;
}

std::vector<float> Read(kiln_tensor_t t) {
  std::vector<float> v(kiln_tensor_byte_size(t) / 4);
  EXPECT_EQ(Str(kiln_tensor_read(t, v.data(), v.size() * 4)), "OK");
  return v;
}

TEST(MultiModuleStress, RandomReleaseOrdersEndWithNoLiveBuffers) {
  const long iterations = EnvLong("KILN_STRESS_ITERATIONS", 10000);
  const unsigned seed = static_cast<unsigned>(EnvLong("KILN_STRESS_SEED", 20240611));
  std::mt19937 rng(seed);
  auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };

  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  ASSERT_EQ(Str(kiln_instance_create(&instance)), "OK");
  ASSERT_EQ(Str(kiln_device_create(instance, "vulkan", nullptr, -1, &device)), "OK");
  kiln_device_stats_t start;
  ASSERT_EQ(Str(kiln_device_stats(device, &start)), "OK");
  ASSERT_EQ(start.device_bytes_live, 0u);

  kiln::vm::testing::TestShaders shaders{kVaddSpirv, kVaddSpirvWordCount, kScaleSpirv,
                                         kScaleSpirvWordCount};
  auto bytes = kiln::vm::testing::BuildPipelineModules(shaders, kN);
  std::vector<kiln_module_t> modules;
  for (const auto& b : bytes) {
    kiln_module_t m = nullptr;
    ASSERT_EQ(Str(kiln_module_load_from_memory(instance, b.data(), b.size(), &m)), "OK");
    modules.push_back(m);
  }
  kiln_context_t context = nullptr;
  ASSERT_EQ(Str(kiln_context_create(device, modules.data(), modules.size(), &context)), "OK");
  // The context keeps the modules alive: release them now (random order).
  std::shuffle(modules.begin(), modules.end(), rng);
  for (kiln_module_t m : modules) kiln_module_release(m);
  kiln_function_t fn = nullptr;
  ASSERT_EQ(Str(kiln_context_lookup_function(context, "driver.main", &fn)), "OK");

  std::vector<float> xv(kN), sv(kN);
  for (int i = 0; i < kN; ++i) {
    xv[i] = 1.0f + static_cast<float>(i);
    sv[i] = 100.0f + static_cast<float>(i);
  }
  kiln_tensor_t x = Tensor(device, xv);
  kiln_tensor_t s = Tensor(device, sv);
  // A batch of 4 rows; row r is output storage for h now and then.
  kiln_tensor_t batch = nullptr;
  int64_t batch_dims[] = {4, kN}, row_dims[] = {kN};
  ASSERT_EQ(Str(kiln_tensor_create(device, KILN_DTYPE_F32, 2, batch_dims, nullptr, 0, &batch)),
            "OK");
  kiln_tensor_t rows[4];
  for (int r = 0; r < 4; ++r) {
    ASSERT_EQ(Str(kiln_tensor_create_view(batch, static_cast<size_t>(r) * kN * 4, KILN_DTYPE_F32,
                                          1, row_dims, &rows[r])),
              "OK");
  }

  std::vector<kiln_tensor_t> pool;  // results parked by the "app"
  long shared = 0, fresh = 0, stored = 0, checked = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (long it = 0; it < iterations; ++it) {
    // The state argument.
    kiln_tensor_t shared_ref = nullptr;
    if (chance(4)) {
      kiln_tensor_release(s);
      for (int i = 0; i < kN; ++i) sv[i] = static_cast<float>(rng() % 1000);
      s = Tensor(device, sv);
      ++fresh;
    } else if (chance(10)) {
      kiln_tensor_retain(s);  // the app keeps a reference: shared
      shared_ref = s;
      ++shared;
    }
    std::vector<kiln_invoke_arg_t> args = {{x, KILN_ARG_BORROW, 0}, {s, KILN_ARG_CONSUME, 0}};
    int row = -1;
    if (chance(5)) {  // output storage for h, anywhere in the array
      row = static_cast<int>(rng() % 4);
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(rng() % 3),
                  kiln_invoke_arg_t{rows[row], KILN_ARG_OUTPUT_STORAGE, 0});
      ++stored;
    }
    kiln_tensor_t r[3] = {};
    ASSERT_EQ(Str(kiln_invoke_ex(context, fn, args.data(), args.size(), r, 3)), "OK") << it;
    if (row >= 0) {
      ASSERT_EQ(r[0], rows[row]) << it;
    }
    bool check = chance(3) || it == iterations - 1 || shared_ref;
    if (check) {
      std::vector<float> h = Read(r[0]), e = Read(r[1]), s2 = Read(r[2]);
      for (int i = 0; i < kN; ++i) {
        auto want = kiln::vm::testing::PipelineReference(xv[i], sv[i], i);
        ASSERT_EQ(h[i], want.h) << it << " " << i;
        ASSERT_EQ(e[i], want.e) << it << " " << i;
        ASSERT_TRUE(SameOrFlushed(s2[i], want.s2)) << it << " " << i << ": " << s2[i] << " vs " << want.s2;
      }
      if (shared_ref) {
        std::vector<float> old = Read(shared_ref);  // untouched by the callee
        for (int i = 0; i < kN; ++i) ASSERT_TRUE(SameOrFlushed(old[i], sv[i])) << it << ": " << old[i] << " vs " << sv[i];
      }
      ++checked;
    }
    for (int i = 0; i < kN; ++i) sv[i] *= 0.5f;
    if (shared_ref) kiln_tensor_release(shared_ref);
    // h and e: release now or park; s2 is the next state.
    for (int k = 0; k < 2; ++k) {
      if (chance(30)) {
        pool.push_back(r[k]);
      } else {
        kiln_tensor_release(r[k]);
      }
    }
    s = r[2];
    while (pool.size() > kPoolMax || (!pool.empty() && chance(20))) {
      size_t victim = rng() % pool.size();
      kiln_tensor_release(pool[victim]);
      pool[victim] = pool.back();
      pool.pop_back();
    }
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kiln_device_stats_t end;
  ASSERT_EQ(Str(kiln_device_stats(device, &end)), "OK");
  std::printf(
      "%ld invocations in %.2f s (%.1f us each): %ld shared states, %ld fresh, %ld with output "
      "storage, %ld checked; device allocations %llu, copies %llu, peak %llu bytes\n",
      iterations, seconds, 1e6 * seconds / static_cast<double>(iterations), shared, fresh, stored,
      checked, static_cast<unsigned long long>(end.device_allocations - start.device_allocations),
      static_cast<unsigned long long>(end.copies - start.copies),
      static_cast<unsigned long long>(end.device_peak_bytes));
  EXPECT_EQ(end.copies - start.copies, static_cast<uint64_t>(stored));  // h copied into rows

  // Release everything in a random order.
  pool.push_back(s);
  pool.push_back(x);
  pool.push_back(batch);
  for (kiln_tensor_t t : rows) pool.push_back(t);
  std::shuffle(pool.begin(), pool.end(), rng);
  for (kiln_tensor_t t : pool) kiln_tensor_release(t);
  kiln_context_release(context);
  ASSERT_EQ(Str(kiln_device_stats(device, &end)), "OK");
  EXPECT_EQ(end.device_bytes_live, 0u);
  kiln_device_release(device);
  kiln_instance_release(instance);
  EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
}

}  // namespace
