// kiln-load-bench: the load-path microbenchmark behind the texel bindings
// (docs/architecture.md, "uniform texel buffer"). One dispatch of 8192
// invocations, each an 8 x 8 register block (a 1x1 conv block: 8 output
// channels x 8 columns) over 256 input channels, with its input row and
// weights read as float storage-buffer loads, vec4 storage-buffer loads,
// vec4 texel fetches, or not at all (the arithmetic alone): shaders
// hal/cts/shaders/load_bench*.{glsl,comp}. The multiply-adds are fma(), so
// on a CPU driver the runtime's exact-fma emulation runs as in Kiln's own
// convs; KILN_EXACT_FMA=0 measures the split fma instead.
//
// Reports GMAC (per second: 8192 x 256 x 64 multiply-adds per dispatch) per path, run
// through the HAL (hal/api.h) on the default Vulkan device, so the texel
// path goes through the same views and checks as a module's dispatches.
// Usage: kiln-load-bench [--benchmark_repetitions=N ...] (Google Benchmark
// flags). Compare paths inside one run: this machine drifts between runs.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include "hal/api.h"
#include "hal/cts/load_bench_float_spirv.h"
#include "hal/cts/load_bench_none_spirv.h"
#include "hal/cts/load_bench_texel_spirv.h"
#include "hal/cts/load_bench_vec4_spirv.h"
#include "hal/driver.h"

namespace kiln::hal {
namespace {

constexpr uint32_t kInvocations = 8192, kChannels = 256, kBlock = 64;
constexpr uint64_t kInputBytes = uint64_t{kChannels} * kInvocations * 8 * 4;
constexpr uint64_t kWeightBytes = 4 * 8 * kChannels * 4;

struct Path {
  const uint32_t* words;
  size_t count;
  BindingKind kind;
};

void BM_Loads(benchmark::State& state, Path path) {
  auto device = CreateDevice("vulkan", DeviceOptions{});
  if (!device.ok()) {
    state.SkipWithError(device.status().ToString().c_str());
    return;
  }
  Device* dev = device.value().get();
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 3;
  entry.workgroup_size[0] = 64;
  entry.binding_readonly = {1, 1, 0};
  entry.binding_kinds = {path.kind, path.kind, BindingKind::kStorageBuffer};
  auto exe = dev->CreateExecutable(path.words, path.count, {entry});
  auto x = dev->AllocateBuffer(kInputBytes, MemoryKind::kHostVisible);
  auto w = dev->AllocateBuffer(kWeightBytes, MemoryKind::kHostVisible);
  auto out = dev->AllocateBuffer(kInvocations * 4, MemoryKind::kHostVisible);
  auto cb = dev->CreateCommandBuffer();
  auto done = dev->CreateSemaphore(0);
  if (!exe.ok() || !x.ok() || !w.ok() || !out.ok() || !cb.ok() || !done.ok()) {
    state.SkipWithError("setup failed (executable, buffers, command buffer or semaphore)");
    return;
  }
  std::vector<float> values(kInputBytes / 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 13) * 0.125f;
  if (!x.value()->Write(0, values.data(), kInputBytes).ok() ||
      !w.value()->Write(0, values.data(), kWeightBytes).ok()) {
    state.SkipWithError("buffer write failed");
    return;
  }
  BufferBinding bindings[3] = {{x.value().get(), 0, kInputBytes},
                               {w.value().get(), 0, kWeightBytes},
                               {out.value().get(), 0, kInvocations * 4}};
  const uint32_t groups[3] = {kInvocations / 64, 1, 1};
  Status s = cb.value()->Dispatch(exe.value().get(), 0, groups, nullptr, 0, bindings, 3);
  if (s.ok()) s = cb.value()->End();
  if (!s.ok()) {
    state.SkipWithError(s.ToString().c_str());
    return;
  }
  uint64_t value = 0;
  for (auto _ : state) {
    SemaphorePoint signal{done.value().get(), ++value};
    s = dev->QueueExecute(cb.value().get(), nullptr, 0, &signal, 1);
    if (s.ok()) s = done.value()->Wait(value, 60ull * 1000 * 1000 * 1000);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  state.counters["GMAC"] = benchmark::Counter(
      static_cast<double>(kInvocations) * kChannels * kBlock * 1e-9 * state.iterations(),
      benchmark::Counter::kIsRate);
}

BENCHMARK_CAPTURE(BM_Loads, float_storage_buffer,
                  Path{kLoad_bench_floatSpirv, kLoad_bench_floatSpirvWordCount, BindingKind::kStorageBuffer})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Loads, vec4_storage_buffer,
                  Path{kLoad_bench_vec4Spirv, kLoad_bench_vec4SpirvWordCount, BindingKind::kStorageBuffer})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Loads, vec4_texel_buffer,
                  Path{kLoad_bench_texelSpirv, kLoad_bench_texelSpirvWordCount, BindingKind::kUniformTexelBuffer})
    ->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_Loads, no_loads,
                  Path{kLoad_bench_noneSpirv, kLoad_bench_noneSpirvWordCount, BindingKind::kStorageBuffer})
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kiln::hal

BENCHMARK_MAIN();
