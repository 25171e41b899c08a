// Allocation-failure injection over whole models (docs/security.md): for
// every k, the k-th device allocation (hal::AllocFailureDevice) or the k-th
// host allocation (a kiln_set_allocator hook) of one full run fails, once:
//
//   load the modules -> create the context -> look up the function ->
//   create the arguments -> invoke -> read the results -> release everything
//
// The failed call must return RESOURCE_EXHAUSTED; the run then retries that
// call (an invoke with consumed arguments gets new ones), which must
// succeed, and the results must match the goldens. After each run the
// device's live bytes are back where they started, at the end every block
// the hook handed out is back, and no Vulkan validation message was printed
// (ASan/LSan check the rest in the asan preset).
//
// The allocations are counted first in a clean run (N device, M host); the
// sweep then fails k = 1..N (and 1..M) and asserts that allocation k was
// reached and refused exactly once, and that the sweep covered every k. A
// new allocation path without clean failure handling thus fails the test,
// however it is reached. Subset (the build's KILN_ALLOC_FAILURE_STRIDE S,
// default 50; env KILN_ALLOC_FAILURE_STRIDE overrides): inside context
// creation every S-th k, in the other stages every (S / 10)-th, from an
// offset (env KILN_ALLOC_FAILURE_OFFSET, else the day number, mod the
// stride), because each k costs a whole context creation. S = 1 is the full
// sweep. Device allocations are always swept in full.
//
// Models (compiled by the default preset's kiln-compile into
// KILN_ALLOC_FAILURE_MODULES; see tests/alloc_failure/CMakeLists.txt):
//  - cls: PaddleOCR's text-direction classifier on tests/golden/cls_upright,
//    against ONNX Runtime's output (1e-4 absolute, 1e-3 relative > 1);
//  - driver: the wake-word driver of samples/wakeword (mel, emb, head and
//    driver modules in one context), one invoke on chunk 46 of
//    tests/golden/wakeword/alexa.wav with the state of chunks 0..45 (run
//    clean once, up front): its score is ONNX Runtime's 0.993462 at frame
//    372 (tests/golden/wakeword/expected.txt, within 1e-4), and the new
//    state equals the clean run's, bit for bit.
//
// Env KILN_ALLOC_FAILURE_ONLY=K or K1-K2 sweeps only those k (to reproduce
// one); KILN_ALLOC_FAILURE_TRACE=1 (ASan builds) prints the call stack of
// each refused host allocation.
#include <gtest/gtest.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#include "base/host_alloc.h"
#include "hal/driver.h"
#include "hal/testing/alloc_failure_device.h"
#include "kiln/kiln.h"
#include "runtime/kiln_internal.h"
#include "samples/wakeword/wav_read.h"
#include "tools/npy.h"

namespace {

std::string Str(kiln_status_t s) {
  if (!s) return "OK";
  std::string r = std::string(kiln_status_code_name(kiln_status_code(s))) + ": " + kiln_status_message(s);
  kiln_status_free(s);
  return r;
}

// --- the failing host allocator ----------------------------------------------

// Counts the hook's calls since Arm and refuses call number fail_at (once).
struct HostCounter {
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> fail_at{0};
  std::atomic<uint64_t> refused{0};
  std::atomic<int64_t> live{0};  // blocks handed out and not freed
  void Arm(uint64_t k) {
    fail_at = k;
    calls = 0;
    refused = 0;
  }
};
HostCounter g_host;

void* HostAllocate(void* user_data, size_t size, size_t alignment) {
  auto* c = static_cast<HostCounter*>(user_data);
  uint64_t n = c->calls.fetch_add(1) + 1;
  if (n == c->fail_at.load()) {
    c->refused.fetch_add(1);
#if defined(__SANITIZE_ADDRESS__)
    if (std::getenv("KILN_ALLOC_FAILURE_TRACE")) {
      std::fprintf(stderr, "refusing host allocation %llu:\n", static_cast<unsigned long long>(n));
      __sanitizer_print_stack_trace();
    }
#endif
    return nullptr;
  }
  void* p = nullptr;
  if (posix_memalign(&p, alignment < 16 ? 16 : alignment, size ? size : 1) != 0) return nullptr;
  c->live.fetch_add(1);
  return p;
}

void HostFree(void* user_data, void* ptr) {
  static_cast<HostCounter*>(user_data)->live.fetch_sub(1);
  std::free(ptr);
}

// --- data ----------------------------------------------------------------------

std::string ModuleDir() { return KILN_ALLOC_FAILURE_MODULES; }

// A file's bytes, 64-byte aligned (weights load zero-copy).
struct Bytes {
  std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
  size_t size = 0;
};
bool ReadAligned(const std::string& path, Bytes* out, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot open " + path;
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  out->size = s.size();
  out->data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (s.size() + 63) / 64 * 64)));
  std::memcpy(out->data.get(), s.data(), s.size());
  return true;
}

struct Arg {
  std::vector<int64_t> dims;
  std::vector<float> data;
  bool consume = false;
};

// One full run's recipe: modules linked in order, a function, its
// arguments, and a check of the results' values.
struct Scenario {
  std::string name;
  std::vector<Bytes> modules;
  std::string function;
  std::vector<Arg> args;
  size_t result_count = 0;
  // "" when the results (as f32) are right, else what is wrong.
  std::function<std::string(const std::vector<std::vector<float>>&)> check;
};

// What one run saw: the call that failed (empty: none did), and where each
// stage of the run began in the count of host and device allocations.
struct Outcome {
  std::string error;        // "" when the run met the contract
  std::string failed_call;  // the call that returned the injected failure
  struct Mark {
    std::string stage;
    uint64_t host = 0, device = 0;  // allocations made before the stage began
  };
  std::vector<Mark> marks;
};

// The device and instance every run of a sweep shares.
struct Harness {
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln::hal::AllocFailureDevice* failing = nullptr;  // borrowed from device
};

uint64_t DeviceBytesLive(kiln_device_t device) {
  kiln_device_stats_t st;
  std::memset(&st, 0, sizeof(st));
  kiln_status_t s = kiln_device_stats(device, &st);
  if (s) {
    kiln_status_free(s);
    return UINT64_MAX;
  }
  return st.device_bytes_live;
}

// Runs the scenario once; every call that fails is retried once and must
// then succeed, and only one call may fail (one allocation is refused).
Outcome RunOnce(const Harness& h, Scenario& sc) {
  Outcome out;
  auto fail = [&](const std::string& what) {
    if (out.error.empty()) out.error = what;
  };
  // Calls `fn`; a failure must be RESOURCE_EXHAUSTED and the first one of
  // the run (call_retry then makes the same call again, which must succeed).
  auto call = [&](const char* name, const std::function<kiln_status_t()>& fn) -> bool {
    const uint64_t stand_ins = kiln::HostAllocationsLiveOutsideHooks();
    kiln_status_t s = fn();
    if (!s) return true;
    kiln_status_code_t code = kiln_status_code(s);
    std::string text = Str(s);
    // A container whose request the hook refused got its block from malloc
    // (base/host_alloc.h); the failed call must not keep any such block.
    if (uint64_t now = kiln::HostAllocationsLiveOutsideHooks(); now != stand_ins) {
      fail(std::string(name) + " failed but kept " + std::to_string(now - stand_ins) +
           " block(s) malloc gave in place of refused ones");
    }
    if (!out.failed_call.empty()) {
      fail(std::string(name) + " failed after " + out.failed_call + " had failed: " + text);
      return false;
    }
    out.failed_call = name;
    if (code != KILN_STATUS_RESOURCE_EXHAUSTED) fail(std::string(name) + ": expected RESOURCE_EXHAUSTED, got " + text);
    return true;
  };
  auto call_retry = [&](const char* name, const std::function<kiln_status_t()>& fn) -> bool {
    bool first_failed_here = out.failed_call.empty();
    if (!call(name, fn)) return false;
    if (first_failed_here && !out.failed_call.empty()) {
      kiln_status_t again = fn();
      if (again) {
        fail(std::string("retrying ") + name + " failed: " + Str(again));
        return false;
      }
    }
    return true;
  };

  auto stage = [&](const char* name) {
    if (out.marks.empty() || out.marks.back().stage != name)
      out.marks.push_back({name, g_host.calls.load(), h.failing->allocations()});
  };
  std::vector<kiln_module_t> modules(sc.modules.size(), nullptr);
  kiln_context_t context = nullptr;
  kiln_function_t function = nullptr;
  std::vector<kiln_tensor_t> args(sc.args.size(), nullptr);
  std::vector<kiln_tensor_t> results(sc.result_count, nullptr);
  bool ok = true;
  stage("load");
  for (size_t i = 0; ok && i < modules.size(); ++i) {
    ok = call_retry("kiln_module_load_from_memory", [&] {
      return kiln_module_load_from_memory(h.instance, sc.modules[i].data.get(), sc.modules[i].size, &modules[i]);
    });
  }
  stage("context");
  if (ok) {
    ok = call_retry("kiln_context_create",
                    [&] { return kiln_context_create(h.device, modules.data(), modules.size(), &context); });
  }
  if (ok) {
    ok = call_retry("kiln_context_lookup_function",
                    [&] { return kiln_context_lookup_function(context, sc.function.c_str(), &function); });
  }
  // Arguments and the invoke; a failed invoke is retried with new arguments
  // (it released the consumed ones).
  stage("invoke");
  for (int attempt = 0; ok && attempt < 2; ++attempt) {
    for (size_t i = 0; ok && i < args.size(); ++i) {
      const Arg& a = sc.args[i];
      ok = call_retry("kiln_tensor_create", [&] {
        return kiln_tensor_create(h.device, KILN_DTYPE_F32, a.dims.size(), a.dims.data(), a.data.data(),
                                  a.data.size() * sizeof(float), &args[i]);
      });
    }
    if (!ok) break;
    std::vector<kiln_invoke_arg_t> entries(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      entries[i].tensor = args[i];
      entries[i].flags = sc.args[i].consume ? KILN_ARG_CONSUME : KILN_ARG_BORROW;
      entries[i].result_index = 0;
    }
    bool had_failed = !out.failed_call.empty();
    ok = call("kiln_invoke_ex", [&] {
      return kiln_invoke_ex(context, function, entries.data(), entries.size(), results.data(), results.size());
    });
    for (size_t i = 0; i < args.size(); ++i) {
      if (!sc.args[i].consume) kiln_tensor_release(args[i]);
      args[i] = nullptr;
    }
    if (!ok) break;
    if (!had_failed && !out.failed_call.empty()) continue;  // this invoke failed: once more
    break;
  }
  if (ok && results[0] == nullptr) fail("kiln_invoke_ex gave no results");
  stage("read");
  std::vector<std::vector<float>> values(results.size());
  for (size_t i = 0; ok && out.error.empty() && i < results.size(); ++i) {
    values[i].resize(kiln_tensor_byte_size(results[i]) / sizeof(float));
    ok = call_retry("kiln_tensor_read", [&] {
      return kiln_tensor_read(results[i], values[i].data(), values[i].size() * sizeof(float));
    });
  }
  if (ok && out.error.empty()) fail(sc.check(values));
  if (!ok && out.error.empty()) fail("a call failed");
  stage("release");
  for (kiln_tensor_t t : results) kiln_tensor_release(t);
  kiln_context_release(context);
  for (kiln_module_t m : modules) kiln_module_release(m);
  stage("end");
  return out;
}

std::string CompareF32(const std::vector<float>& got, const std::vector<float>& want, const char* what) {
  if (got.size() != want.size())
    return std::string(what) + ": " + std::to_string(got.size()) + " values, want " + std::to_string(want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    double tol = std::abs(want[k]) > 1 ? 1e-3 * std::abs(want[k]) : 1e-4;
    if (!(std::abs(got[k] - want[k]) <= tol))
      return std::string(what) + " element " + std::to_string(k) + ": got " + std::to_string(got[k]) + " want " +
             std::to_string(want[k]);
  }
  return "";
}

std::vector<float> NpyF32(const std::string& path, std::vector<int64_t>* dims, std::string* error) {
  kiln::tools::NpyArray a;
  if (!kiln::tools::ReadNpy(path, &a, error)) return {};
  if (a.dtype != KILN_DTYPE_F32) {
    *error = path + ": not float32";
    return {};
  }
  if (dims) *dims = a.shape;
  std::vector<float> v(a.element_count());
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(float));
  return v;
}

// --- scenarios -------------------------------------------------------------------

bool LoadModules(const std::vector<std::string>& names, Scenario* sc, std::string* error) {
  for (const std::string& n : names) {
    Bytes b;
    if (!ReadAligned(ModuleDir() + "/" + n, &b, error)) {
      *error += " (the modules are compiled by the default preset's build: see tests/alloc_failure/CMakeLists.txt)";
      return false;
    }
    sc->modules.push_back(std::move(b));
  }
  return true;
}

bool MakeCls(Scenario* sc, std::string* error) {
  sc->name = "cls";
  if (!LoadModules({"cls.kiln"}, sc, error)) return false;
  sc->function = "main";
  std::string golden = std::string(KILN_SOURCE_DIR) + "/tests/golden/cls_upright/";
  Arg x;
  x.data = NpyF32(golden + "input_0.npy", &x.dims, error);
  if (x.data.empty()) return false;
  sc->args.push_back(std::move(x));
  std::vector<float> want = NpyF32(golden + "output_0.npy", nullptr, error);
  if (want.empty()) return false;
  sc->result_count = 1;
  sc->check = [want](const std::vector<std::vector<float>>& r) { return CompareF32(r[0], want, "cls output"); };
  return true;
}

// The driver's input for chunk `c` of `pcm`: samples [1280c-480, 1280c+1280).
std::vector<float> AudioChunk(const std::vector<int16_t>& pcm, size_t c) {
  std::vector<float> audio(1760);
  for (size_t i = 0; i < audio.size(); ++i) {
    long k = static_cast<long>(c * 1280) - 480 + static_cast<long>(i);
    audio[i] = k >= 0 && k < static_cast<long>(pcm.size()) ? static_cast<float>(pcm[k]) : 0.0f;
  }
  return audio;
}

// Runs chunks 0..kChunk-1 cleanly on `h` (state fed back, as
// kiln-wakeword-driver does) and sets up the sweep's invoke of chunk kChunk.
constexpr size_t kChunk = 46;  // frame 8*46+4 = 372: the clip's highest score
bool MakeDriver(const Harness& h, Scenario* sc, std::string* error) {
  sc->name = "driver";
  if (!LoadModules({"mel.kiln", "emb.kiln", "head.kiln", "driver.kiln"}, sc, error)) return false;
  sc->function = "driver.main";
  sc->result_count = 3;
  std::string golden = std::string(KILN_SOURCE_DIR) + "/tests/golden/wakeword/";
  int16_t* samples = nullptr;
  size_t count = 0;
  char err[512];
  if (wav_read_pcm16_mono_16k((golden + "alexa.wav").c_str(), &samples, &count, err, sizeof(err)) != 0) {
    *error = err;
    return false;
  }
  std::vector<int16_t> pcm(samples, samples + count);
  std::free(samples);
  // ONNX Runtime's score at frame 8*kChunk+4.
  double want_score = -1;
  {
    std::ifstream f(golden + "expected.txt");
    std::string line, prefix = "frame " + std::to_string(8 * kChunk + 4) + " score ";
    while (std::getline(f, line))
      if (line.rfind(prefix, 0) == 0) want_score = std::stod(line.substr(prefix.size()));
  }
  if (want_score < 0) {
    *error = "no frame " + std::to_string(8 * kChunk + 4) + " in expected.txt";
    return false;
  }
  // The clean run up to the chunk (no failure armed).
  std::vector<kiln_module_t> modules(sc->modules.size(), nullptr);
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  kiln_status_t s = nullptr;
  for (size_t i = 0; !s && i < modules.size(); ++i)
    s = kiln_module_load_from_memory(h.instance, sc->modules[i].data.get(), sc->modules[i].size, &modules[i]);
  if (!s) s = kiln_context_create(h.device, modules.data(), modules.size(), &context);
  if (!s) s = kiln_context_lookup_function(context, "driver.main", &fn);
  const int64_t frames_dims[2] = {80, 32}, embs_dims[2] = {15, 96}, audio_dims[2] = {1, 1760};
  kiln_tensor_t frames = nullptr, embs = nullptr;
  if (!s) s = kiln_tensor_create(h.device, KILN_DTYPE_F32, 2, frames_dims, nullptr, 0, &frames);
  if (!s) s = kiln_tensor_create(h.device, KILN_DTYPE_F32, 2, embs_dims, nullptr, 0, &embs);
  std::vector<float> frames_host(80 * 32), embs_host(15 * 96), state_frames, state_embs;
  std::vector<float> next_frames, next_embs;
  for (size_t c = 0; !s && c <= kChunk; ++c) {
    if (c == kChunk) {  // the sweep's starting state
      s = kiln_tensor_read(frames, frames_host.data(), frames_host.size() * sizeof(float));
      if (!s) s = kiln_tensor_read(embs, embs_host.data(), embs_host.size() * sizeof(float));
      if (s) break;
    }
    std::vector<float> audio = AudioChunk(pcm, c);
    kiln_tensor_t in = nullptr;
    s = kiln_tensor_create(h.device, KILN_DTYPE_F32, 2, audio_dims, audio.data(), audio.size() * sizeof(float), &in);
    if (s) break;
    kiln_invoke_arg_t a[3] = {{frames, KILN_ARG_CONSUME, 0}, {embs, KILN_ARG_CONSUME, 0}, {in, KILN_ARG_CONSUME, 0}};
    frames = embs = nullptr;
    kiln_tensor_t r[3] = {nullptr, nullptr, nullptr};
    s = kiln_invoke_ex(context, fn, a, 3, r, 3);
    if (s) break;
    kiln_tensor_release(r[0]);
    frames = r[1];
    embs = r[2];
  }
  if (!s) {
    next_frames.resize(80 * 32);
    next_embs.resize(15 * 96);
    s = kiln_tensor_read(frames, next_frames.data(), next_frames.size() * sizeof(float));
    if (!s) s = kiln_tensor_read(embs, next_embs.data(), next_embs.size() * sizeof(float));
  }
  kiln_tensor_release(frames);
  kiln_tensor_release(embs);
  kiln_context_release(context);
  for (kiln_module_t m : modules) kiln_module_release(m);
  if (s) {
    *error = "clean run of the driver: " + Str(s);
    return false;
  }
  Arg a_frames{{80, 32}, frames_host, true}, a_embs{{15, 96}, embs_host, true};
  Arg a_audio{{1, 1760}, AudioChunk(pcm, kChunk), true};
  sc->args = {a_frames, a_embs, a_audio};
  float score = static_cast<float>(want_score);
  sc->check = [score, next_frames, next_embs](const std::vector<std::vector<float>>& r) -> std::string {
    if (r[0].size() != 1) return "score: " + std::to_string(r[0].size()) + " values";
    if (!(std::abs(r[0][0] - score) <= 1e-4))
      return "score " + std::to_string(r[0][0]) + ", ONNX Runtime's is " + std::to_string(score);
    if (r[1] != next_frames) return "frames' differ from the clean run's";
    if (r[2] != next_embs) return "embs' differ from the clean run's";
    return "";
  };
  return true;
}

// --- the sweep ---------------------------------------------------------------------

enum class Kind { kDevice, kHost };

class AllocFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kiln_allocator_t a = {};
    a.struct_size = sizeof(a);
    a.user_data = &g_host;
    a.allocate = HostAllocate;
    a.free = HostFree;
    g_host.Arm(0);
    ASSERT_EQ(Str(kiln_set_allocator(&a)), "OK");
    ASSERT_EQ(Str(kiln_instance_create(&h_.instance)), "OK");
    ASSERT_EQ(Str(kiln_device_create(h_.instance, "vulkan", nullptr, -1, &h_.device)), "OK");
    auto failing = kiln::hal::AllocFailureDevice::Create(h_.device->device);
    ASSERT_TRUE(failing.ok()) << failing.status().ToString();
    h_.failing = failing->get();
    h_.device->device = std::move(failing).value();
    validation_start_ = kiln::hal::ValidationMessageCount();
  }
  void TearDown() override {
    kiln_device_release(h_.device);
    kiln_instance_release(h_.instance);
    // Every block the hook handed out is back (the last instance's release
    // empties the runtime's pools).
    EXPECT_EQ(g_host.live.load(), 0) << "host blocks never freed";
    EXPECT_EQ(Str(kiln_set_allocator(nullptr)), "OK");
  }

  void Arm(Kind kind, uint64_t k) {
    g_host.Arm(kind == Kind::kHost ? k : 0);
    h_.failing->Arm(kind == Kind::kDevice ? k : 0);
  }

  void Sweep(Scenario& sc, Kind kind) {
    const char* kind_name = kind == Kind::kDevice ? "device" : "host";
    // Warm-up (the runtime's pools fill on first use), then the count.
    Arm(kind, 0);
    Outcome clean = RunOnce(h_, sc);
    ASSERT_EQ(clean.error, "") << "clean run";
    ASSERT_EQ(clean.failed_call, "");
    const uint64_t live_bytes = DeviceBytesLive(h_.device);
    Arm(kind, 0);
    clean = RunOnce(h_, sc);
    ASSERT_EQ(clean.error, "") << "clean run";
    const uint64_t total = kind == Kind::kDevice ? h_.failing->allocations() : g_host.calls.load();
    ASSERT_GT(total, 0u);
    Arm(kind, 0);
    clean = RunOnce(h_, sc);
    ASSERT_EQ(clean.error, "");
    ASSERT_EQ(kind == Kind::kDevice ? h_.failing->allocations() : g_host.calls.load(), total)
        << "the number of " << kind_name << " allocations of a run is not reproducible";
    ASSERT_EQ(DeviceBytesLive(h_.device), live_bytes);

    // Where each stage's allocations lie: k in [first, next stage's first).
    std::vector<std::pair<std::string, uint64_t>> stages;  // (stage, first k)
    for (const Outcome::Mark& m : clean.marks)
      stages.push_back({m.stage, (kind == Kind::kDevice ? m.device : m.host) + 1});
    auto stage_of = [&](uint64_t k) {
      size_t i = 0;
      while (i + 1 < stages.size() && stages[i + 1].second <= k) ++i;
      return i;
    };
    std::printf("%s: %llu %s allocations per run:", sc.name.c_str(), static_cast<unsigned long long>(total),
                kind_name);
    for (size_t i = 0; i + 1 < stages.size(); ++i)
      std::printf(" %s %llu", stages[i].first.c_str(),
                  static_cast<unsigned long long>(stages[i + 1].second - stages[i].second));
    std::printf("\n");
    std::fflush(stdout);
    // The subset (see the file comment): inside context creation every
    // stride-th k, elsewhere every (stride / 10)-th, each from the offset.
    // Device allocations are few (cls 4, the driver 13): always every k.
    const uint64_t stride = kind == Kind::kDevice ? 1 : Stride(), offset = Offset(stride);
    const uint64_t other_stride = std::max<uint64_t>(stride / 10, 1), other_offset = offset % other_stride;
    uint64_t only_first = 1, only_last = total;  // KILN_ALLOC_FAILURE_ONLY=FIRST-LAST
    if (const char* r = std::getenv("KILN_ALLOC_FAILURE_ONLY")) {
      only_first = std::strtoull(r, nullptr, 10);
      const char* dash = std::strchr(r, '-');
      only_last = dash ? std::strtoull(dash + 1, nullptr, 10) : only_first;
    }
    auto selected = [&](uint64_t k) {
      if (k < only_first || k > only_last) return false;
      size_t i = stage_of(k);
      if (stages[i].first == "context") return (k - stages[i].second) % stride == offset;
      return (k - stages[i].second) % other_stride == other_offset;
    };

    std::map<std::string, uint64_t> by_call;  // failed call -> how many k
    std::vector<uint64_t> swept_in(stages.size(), 0);
    uint64_t swept = 0;
    auto t0 = std::chrono::steady_clock::now();
    std::clock_t c0 = std::clock();
    for (uint64_t k = 1; k <= total; ++k) {
      if (!selected(k)) continue;
      Arm(kind, k);
      Outcome o = RunOnce(h_, sc);
      uint64_t refused = kind == Kind::kDevice ? h_.failing->refused() : g_host.refused.load();
      Arm(kind, 0);
      EXPECT_EQ(refused, 1u) << sc.name << ": " << kind_name << " allocation " << k << " of " << total
                             << " was never made";
      EXPECT_EQ(o.error, "") << sc.name << ": " << kind_name << " allocation " << k << " of " << total;
      EXPECT_EQ(DeviceBytesLive(h_.device), live_bytes)
          << sc.name << ": device memory leaked after failing " << kind_name << " allocation " << k;
      EXPECT_EQ(kiln::hal::ValidationMessageCount(), validation_start_)
          << sc.name << ": validation messages after failing " << kind_name << " allocation " << k;
      // A refusal must surface as an error, except in a release (a void
      // call: it must then simply not leak or crash).
      if (o.failed_call.empty() && stages[stage_of(k)].first != "release") {
        ADD_FAILURE() << sc.name << ": " << kind_name << " allocation " << k << " (stage "
                      << stages[stage_of(k)].first << ") was refused, yet every call succeeded";
      }
      by_call[o.failed_call.empty() ? "(none: in a release)" : o.failed_call] += 1;
      ++swept_in[stage_of(k)];
      ++swept;
      if (HasFailure()) return;
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;  // every thread's
    std::printf("%s: %llu %s allocations per run; swept %llu of them in %.1f s, CPU %.1f s "
                "(%.2f s CPU per run)\n",
                sc.name.c_str(), static_cast<unsigned long long>(total), kind_name,
                static_cast<unsigned long long>(swept), seconds, cpu, swept ? cpu / swept : 0.0);
    for (size_t i = 0; i + 1 < stages.size(); ++i) {
      std::printf("  stage %-8s k %5llu..%-5llu swept %llu\n", stages[i].first.c_str(),
                  static_cast<unsigned long long>(stages[i].second),
                  static_cast<unsigned long long>(stages[i + 1].second - 1),
                  static_cast<unsigned long long>(swept_in[i]));
    }
    for (const auto& [call, n] : by_call)
      std::printf("  failed call %-30s %llu\n", call.c_str(), static_cast<unsigned long long>(n));
    if (stride == 1 && only_first == 1 && only_last == total) {
      EXPECT_EQ(swept, total) << "the sweep missed allocations";
    } else {
      std::printf("  subset: context creation every %llu-th k from offset %llu, the other stages "
                  "every %llu-th (KILN_ALLOC_FAILURE_STRIDE=1 sweeps every k)\n",
                  static_cast<unsigned long long>(stride), static_cast<unsigned long long>(offset),
                  static_cast<unsigned long long>(other_stride));
    }
  }

  // KILN_ALLOC_FAILURE_STRIDE, else the build's default.
  static uint64_t Stride() {
    uint64_t stride = KILN_ALLOC_FAILURE_DEFAULT_STRIDE;
    if (const char* s = std::getenv("KILN_ALLOC_FAILURE_STRIDE")) stride = std::strtoull(s, nullptr, 10);
    return stride < 1 ? 1 : stride;
  }
  // KILN_ALLOC_FAILURE_OFFSET (mod stride), else the day number mod stride:
  // successive days' runs cover every k.
  static uint64_t Offset(uint64_t stride) {
    if (const char* s = std::getenv("KILN_ALLOC_FAILURE_OFFSET")) return std::strtoull(s, nullptr, 10) % stride;
    auto days = std::chrono::duration_cast<std::chrono::hours>(
                    std::chrono::system_clock::now().time_since_epoch()).count() / 24;
    return static_cast<uint64_t>(days) % stride;
  }

  Harness h_;
  uint64_t validation_start_ = 0;
};

TEST_F(AllocFailureTest, ClsDevice) {
  Scenario sc;
  std::string error;
  ASSERT_TRUE(MakeCls(&sc, &error)) << error;
  Sweep(sc, Kind::kDevice);
}

TEST_F(AllocFailureTest, ClsHost) {
  Scenario sc;
  std::string error;
  ASSERT_TRUE(MakeCls(&sc, &error)) << error;
  Sweep(sc, Kind::kHost);
}

TEST_F(AllocFailureTest, WakewordDriverDevice) {
  Scenario sc;
  std::string error;
  ASSERT_TRUE(MakeDriver(h_, &sc, &error)) << error;
  Sweep(sc, Kind::kDevice);
}

TEST_F(AllocFailureTest, WakewordDriverHost) {
  Scenario sc;
  std::string error;
  ASSERT_TRUE(MakeDriver(h_, &sc, &error)) << error;
  Sweep(sc, Kind::kHost);
}

}  // namespace
