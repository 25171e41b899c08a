// Every host allocation of the runtime goes through kiln_set_allocator's
// hook, shown on a real model (alexa_v0.1, the openWakeWord head, against
// ONNX Runtime's golden in tests/golden/alexa_v0.1).
//
// The test binary links the shared libkiln.so and replaces malloc, calloc,
// realloc, posix_memalign, aligned_alloc and memalign for the whole process
// (an executable's definitions win over libc's; each forwards to glibc's
// __libc_* entry). While watching, every malloc-family call is attributed by
// its call stack (backtrace(3)): skipping frames in libc, libstdc++ and
// libgcc_s (operator new, std::string's out-of-line members), the first
// frame left decides whose allocation it is:
//   - inside libkiln.so: the runtime allocated outside the hook (a failure);
//   - inside this executable: the test's own (gtest, its vectors): ignored;
//   - anywhere else (the Vulkan loader, the validation layers, lavapipe and
//     its LLVM, ld.so): the system's; counted and printed, not the runtime's.
// The runtime is built without unwind tables, so the walk stops at the first
// libkiln.so frame, which is all the attribution needs.
//
// Watched: kiln_instance_create through the last release (device
// enumeration, load from a file and from memory, context,
// five invokes: kiln_invoke, kiln_invoke_ex, kiln_invoke_async with fences,
// kiln_tensor_write). Checked: no runtime allocation outside the hook, the
// hook saw allocations, and every block it handed out came back (count and
// bytes). Not built under sanitizers (they replace malloc themselves).
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"
#include "tools/npy.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <malloc.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" {
void* __libc_malloc(size_t size);
void __libc_free(void* p);
void* __libc_calloc(size_t n, size_t size);
void* __libc_realloc(void* p, size_t size);
void* __libc_memalign(size_t alignment, size_t size);
}

namespace {

// --- attribution ------------------------------------------------------------

struct Range {
  uintptr_t begin = 0, end = 0;
  bool Has(uintptr_t a) const { return a >= begin && a < end; }
};
enum Who : int { kKiln, kSkip, kSelf, kOther, kWhoCount };
constexpr int kMaxRanges = 16;
struct Module {
  Range ranges[kMaxRanges];
  int count = 0;
  Who who = kOther;
};
Module g_modules[64];
int g_module_count = 0;

std::atomic<bool> g_watching{false};
std::atomic<uint64_t> g_counts[kWhoCount];
thread_local bool t_inside = false;

// The call sites of runtime allocations outside the hook (the first
// libkiln.so frame), up to 64 distinct ones, with their counts.
constexpr int kSites = 64;
std::atomic<uintptr_t> g_sites[kSites];
std::atomic<uint64_t> g_site_counts[kSites];

void NoteSite(uintptr_t pc) {
  for (int i = 0; i < kSites; ++i) {
    uintptr_t seen = g_sites[i].load();
    if (seen == 0 && g_sites[i].compare_exchange_strong(seen, pc)) seen = pc;
    if (seen == pc) {
      g_site_counts[i].fetch_add(1);
      return;
    }
  }
}

Who Classify(const char* name) {
  if (std::strstr(name, "libkiln.so")) return kKiln;
  if (std::strstr(name, "libc.so") || std::strstr(name, "libstdc++.so") ||
      std::strstr(name, "libgcc_s.so") || std::strstr(name, "libm.so")) {
    return kSkip;
  }
  if (name[0] == '\0') return kSelf;  // the executable
  return kOther;
}

int CollectModule(struct dl_phdr_info* info, size_t, void*) {
  if (g_module_count == static_cast<int>(std::size(g_modules))) return 0;
  Module& m = g_modules[g_module_count++];
  m.who = Classify(info->dlpi_name ? info->dlpi_name : "");
  for (int i = 0; i < info->dlpi_phnum && m.count < kMaxRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    m.ranges[m.count++] = {begin, begin + ph.p_memsz};
  }
  return 0;
}

Who WhoIs(uintptr_t pc) {
  for (int i = 0; i < g_module_count; ++i) {
    for (int k = 0; k < g_modules[i].count; ++k) {
      if (g_modules[i].ranges[k].Has(pc)) return g_modules[i].who;
    }
  }
  return kOther;  // JIT code, a module loaded after the scan
}

__attribute__((noinline)) void Attribute() {
  if (!g_watching.load(std::memory_order_relaxed) || t_inside) return;
  t_inside = true;
  void* frames[64];
  int n = backtrace(frames, 64);
  // frames[0]: here; frames[1]: the replaced malloc; then its caller.
  Who who = kOther;
  int first = 2;
  for (; first < n; ++first) {
    who = WhoIs(reinterpret_cast<uintptr_t>(frames[first]) - 1);
    if (who != kSkip) break;
  }
  if (first == n) who = kOther;
  g_counts[who].fetch_add(1, std::memory_order_relaxed);
  if (who == kKiln) NoteSite(reinterpret_cast<uintptr_t>(frames[first]));
  t_inside = false;
}

// "function+0xOFF (file)", or "file+0xOFF" for a hidden symbol (then
// `addr2line -f -C -e FILE 0xOFF` names it).
std::string Symbolize(uintptr_t pc) {
  Dl_info info;
  char line[512];
  void* p = reinterpret_cast<void*>(pc);
  if (dladdr(p, &info) && info.dli_fname) {
    if (info.dli_sname) {
      std::snprintf(line, sizeof(line), "%s+0x%zx (%s)", info.dli_sname,
                    static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_saddr)),
                    info.dli_fname);
    } else {
      std::snprintf(line, sizeof(line), "%s+0x%zx", info.dli_fname,
                    static_cast<size_t>(pc - reinterpret_cast<uintptr_t>(info.dli_fbase)));
    }
  } else {
    std::snprintf(line, sizeof(line), "%p", p);
  }
  return line;
}

// --- the counting hook ------------------------------------------------------

struct Hook {
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> frees{0};
  std::atomic<int64_t> live_bytes{0};
};

void* HookAllocate(void* user_data, size_t size, size_t alignment) {
  auto* h = static_cast<Hook*>(user_data);
  // A size header in front of the block, so HookFree can check the bytes.
  size_t front = alignment < 16 ? 16 : alignment;
  void* base = __libc_memalign(front, size + front);
  if (!base) return nullptr;
  *static_cast<size_t*>(base) = size;
  h->allocations.fetch_add(1);
  h->live_bytes.fetch_add(static_cast<int64_t>(size));
  // The front offset, just before the pointer handed out.
  char* p = static_cast<char*>(base) + front;
  reinterpret_cast<size_t*>(p)[-1] = front;
  return p;
}

void HookFree(void* user_data, void* ptr) {
  auto* h = static_cast<Hook*>(user_data);
  size_t front = reinterpret_cast<size_t*>(ptr)[-1];
  char* base = static_cast<char*>(ptr) - front;
  h->frees.fetch_add(1);
  h->live_bytes.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(base)));
  __libc_free(base);
}

}  // namespace

// --- the replaced malloc family (process-wide) ---------------------------------

extern "C" {
void* malloc(size_t size) {
  Attribute();
  return __libc_malloc(size);
}
void free(void* p) { __libc_free(p); }
void* calloc(size_t n, size_t size) {
  Attribute();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t size) {
  Attribute();
  return __libc_realloc(p, size);
}
void* memalign(size_t alignment, size_t size) {
  Attribute();
  return __libc_memalign(alignment, size);
}
void* aligned_alloc(size_t alignment, size_t size) {
  Attribute();
  return __libc_memalign(alignment, size);
}
int posix_memalign(void** out, size_t alignment, size_t size) {
  Attribute();
  if (alignment < sizeof(void*) || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, size);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
}

namespace {

using kiln_test::Str;

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Largest |a - e| - (atol + rtol |e|) over the elements (<= 0: within).
double WorstExcess(const std::vector<float>& actual, const std::vector<float>& expected) {
  double worst = -1;
  for (size_t i = 0; i < actual.size(); ++i) {
    double excess = std::fabs(actual[i] - expected[i]) - (1e-4 + 1e-3 * std::fabs(expected[i]));
    if (!(excess <= worst)) worst = excess;  // NaN counts as the worst
  }
  return worst;
}

TEST(HostMemoryTest, RealModelAllocatesOnlyThroughTheHook) {
  const std::string golden = std::string(KILN_SOURCE_DIR) + "/tests/golden/alexa_v0.1";
  const std::string onnx = std::string(KILN_SOURCE_DIR) + "/.cache/models/alexa_v0.1.onnx";
  if (!std::ifstream(onnx)) GTEST_SKIP() << "model not fetched (run scripts/setup.sh)";
  const std::string module_path = std::string(KILN_TEST_WORK_DIR) + "/alexa_host_memory.kiln";
  std::string compile = std::string(KILN_COMPILE) + " '" + onnx +
                        "' --input-shape=onnx::Flatten_0=1x16x96 -o '" + module_path + "'";
  ASSERT_EQ(std::system(compile.c_str()), 0) << compile;
  std::vector<uint8_t> bytes = ReadFile(module_path);
  ASSERT_FALSE(bytes.empty());
  kiln::tools::NpyArray input, expected_array;
  std::string error;
  ASSERT_TRUE(kiln::tools::ReadNpy(golden + "/input_0.npy", &input, &error)) << error;
  ASSERT_TRUE(kiln::tools::ReadNpy(golden + "/output_0.npy", &expected_array, &error)) << error;
  ASSERT_EQ(input.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(expected_array.dtype, KILN_DTYPE_F32);
  std::vector<float> expected(expected_array.element_count());
  std::memcpy(expected.data(), expected_array.data.data(), expected.size() * 4);
  // Every result read lands here (allocated before watching).
  std::vector<float> got(expected.size());
  std::vector<double> excess;
  excess.reserve(16);

  Hook hook;
  kiln_allocator_t allocator = {};
  allocator.struct_size = sizeof(allocator);
  allocator.user_data = &hook;
  allocator.allocate = HookAllocate;
  allocator.free = HookFree;
  ASSERT_EQ(Str(kiln_set_allocator(&allocator)), "OK");
  // Warm what the watcher itself needs (backtrace loads libgcc_s), then
  // note where every loaded object lies.
  void* warm[4];
  (void)backtrace(warm, 4);
  g_module_count = 0;
  dl_iterate_phdr(CollectModule, nullptr);
  bool have_kiln = false;
  for (int i = 0; i < g_module_count; ++i) have_kiln |= g_modules[i].who == kKiln;
  ASSERT_TRUE(have_kiln) << "the test must link the shared libkiln.so";

  g_watching = true;
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t main_fn = nullptr;
  kiln_tensor_t x = nullptr;
  std::string s = Str(kiln_instance_create(&instance));
  kiln_device_info_t infos[4];
  size_t device_count = 0;
  if (s == "OK") s = Str(kiln_enumerate_devices(instance, "Vulkan", infos, 4, &device_count));
  if (s == "OK") s = Str(kiln_device_create(instance, "vulkan", nullptr, -1, &device));
  // From a file (mmap), then from memory: the second one runs.
  kiln_module_t mapped = nullptr;
  if (s == "OK") s = Str(kiln_module_load_from_file(instance, module_path.c_str(), &mapped));
  kiln_module_release(mapped);
  if (s == "OK") s = Str(kiln_module_load_from_memory(instance, bytes.data(), bytes.size(), &module));
  if (s == "OK") s = Str(kiln_context_create(device, &module, 1, &context));
  if (s == "OK") s = Str(kiln_context_lookup_function(context, "main", &main_fn));
  if (s == "OK") {
    s = Str(kiln_tensor_create(device, input.dtype, input.shape.size(), input.shape.data(),
                               input.data.data(), input.data.size(), &x));
  }
  // Five invokes through the three entry points, each result read back.
  for (int i = 0; i < 5 && s == "OK"; ++i) {
    kiln_tensor_t r = nullptr;
    if (i < 2) {
      s = Str(kiln_invoke(context, main_fn, &x, 1, &r, 1));
    } else if (i == 2) {
      kiln_invoke_arg_t arg = {x, KILN_ARG_BORROW, 0};
      s = Str(kiln_invoke_ex(context, main_fn, &arg, 1, &r, 1));
    } else {
      kiln_fence_t done = nullptr;
      s = Str(kiln_fence_create(device, &done));
      kiln_invoke_arg_t arg = {x, KILN_ARG_BORROW, 0};
      if (s == "OK") s = Str(kiln_invoke_async(context, main_fn, &arg, 1, nullptr, done, &r, 1));
      if (s == "OK") s = Str(kiln_fence_wait(done, UINT64_MAX));
      kiln_fence_release(done);
    }
    if (s == "OK") s = Str(kiln_tensor_read(r, got.data(), got.size() * 4));
    if (s == "OK") excess.push_back(WorstExcess(got, expected));
    kiln_tensor_release(r);
    // Refill the input in place (the streaming path) with the same frame.
    if (s == "OK") s = Str(kiln_tensor_write(x, input.data.data(), input.data.size()));
  }
  kiln_tensor_release(x);
  kiln_context_release(context);
  kiln_module_release(module);
  kiln_device_release(device);
  kiln_instance_release(instance);
  g_watching = false;

  EXPECT_EQ(s, "OK");
  ASSERT_EQ(excess.size(), 5u);
  for (size_t i = 0; i < excess.size(); ++i) {
    EXPECT_LE(excess[i], 0.0) << "invoke " << i << " differs from ONNX Runtime's golden";
  }
  std::string sites;
  for (int i = 0; i < kSites && g_sites[i].load(); ++i) {
    sites += "  " + std::to_string(g_site_counts[i].load()) + "x at " + Symbolize(g_sites[i].load()) + "\n";
  }
  EXPECT_EQ(g_counts[kKiln].load(), 0u)
      << "the runtime allocated outside kiln_set_allocator's hook, from:\n" << sites;
  EXPECT_GT(hook.allocations.load(), 100u);
  EXPECT_EQ(hook.frees.load(), hook.allocations.load());
  EXPECT_EQ(hook.live_bytes.load(), 0);
  EXPECT_EQ(Str(kiln_set_allocator(nullptr)), "OK");
  std::printf("hook: %llu allocations, all freed; outside the hook: runtime %llu, system "
              "(Vulkan loader, layers, driver, ld.so) %llu, this test %llu\n",
              static_cast<unsigned long long>(hook.allocations.load()),
              static_cast<unsigned long long>(g_counts[kKiln].load()),
              static_cast<unsigned long long>(g_counts[kOther].load()),
              static_cast<unsigned long long>(g_counts[kSelf].load()));
}

}  // namespace
