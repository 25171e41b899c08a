// kiln-bench: times one function of a compiled module with Google Benchmark.
//
//   kiln-bench --module=M.kiln [--function=main]
//              --input=@in.npy | --input=1x16x96xf32=@in.npy | --input=2x2xf32=1,2,3,4 ...
//              [--device=vulkan] [--device-name=SUBSTR] [--device-index=N]
//              [--benchmark_* flags, e.g. --benchmark_min_time=2 --benchmark_format=json]
//
// Inputs use kiln-run's syntax and are created once, before timing. One
// warm-up invocation runs first (pipeline first-use, register banks). Each
// timed iteration is one synchronous kiln_invoke (it returns once the results
// are on the device and complete) followed by releasing its result tensors;
// the time is wall-clock (UseRealTime: the GPU/driver threads do the work).
// A second benchmark, .../async, issues back-to-back kiln_invoke_async calls,
// each waiting on the previous call's signal fence (a chain, as a streaming
// app would run), with at most kAsyncDepth calls in flight: the host waits
// only for the fence of the call kAsyncDepth back before re-arming it
// (kiln_fence_reset: the ring's fences are created once).
// Counters, per invocation, from kiln_device_stats over the timed loop:
//   dispatches, barriers, submissions, host_waits, copies, transfers, fills,
//   device_allocations, device_bytes_allocated, host_allocations
//   (host_allocations = host_allocations_invoke, allocations made inside
//   kiln_invoke; the steady state should be 0), recordings and replays
//   (command buffers recorded / recorded ones resubmitted; a function with
//   static commands replays on every warm invoke: 1 replay, 0 recordings).
//
// --per-dispatch replaces the benchmarks with a GPU profile: every dispatch
// is bracketed by timestamp queries (tools/dispatch_profile.h; the device
// must support them, else a clear error), --per-dispatch-invokes
// invocations are profiled after the warm-up, and a table sorted by time
// gives each dispatch's debug name, ONNX nodes, calls, MACs and GMAC/s, then
// totals (all dispatches; conv/matmul dispatches). --per-dispatch-format=tsv
// prints the same as tab-separated values (scripts/bench.sh reads it).
//
// Errors go to stderr as `error: ...`, exit status 1 (2 for usage).
// Uses the public C API (include/kiln/kiln.h) and tools/npy.h; only
// --per-dispatch reaches into runtime internals (tools/dispatch_profile.cc).
#include <benchmark/benchmark.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tools/dispatch_profile.h"
#include "tools/input_spec.h"
#include "tools/module_file.h"
#include "tools/flags.h"
#include "tools/npy.h"

namespace {

using kiln::tools::NpyArray;
using kiln::tools::ParseInput;
using kiln::tools::TypeString;

const kiln::tools::FlagTable kFlags = {
    "kiln-bench",
    "usage: kiln-bench --module=M.kiln [--function=main] --input=SPEC ... [--benchmark_* flags]\n"
    "Times kiln_invoke (synchronous) and chains of kiln_invoke_async with Google Benchmark.",
    {
        {"--module", "M.kiln", "the compiled module to benchmark"},
        {"--function", "F", "function to invoke (default main)"},
        {"--input", "SPEC", "argument i, in order: @in.npy, TYPE=@in.npy or TYPE=v1,v2,..."},
        {"--device", "DRIVER", "HAL driver (default vulkan; case-insensitive)"},
        {"--device-name", "SUBSTR", "pick the device whose name contains SUBSTR (any case)"},
        {"--device-index", "N", "pick device N in enumeration order (-1: the first)"},
        {"--per-dispatch", nullptr, "GPU time of each dispatch (timestamp queries) instead of benchmarks"},
        {"--per-dispatch-invokes", "N", "invocations profiled by --per-dispatch (default 20)"},
        {"--per-dispatch-format", "F", "table (default) or tsv"},
    },
    "--input forms as for kiln-run. Reports time per invocation and per-invocation counters:\n"
    "dispatches, barriers, submissions, copies, transfers, fills, device_allocations,\n"
    "device_bytes_allocated, host_allocations, recordings, replays. Flags --benchmark_* go to\n"
    "Google Benchmark "
    "(--benchmark_filter=..., --benchmark_repetitions=N, ...).\n",
    "--benchmark_"};

struct Options {
  std::string module;
  std::string function = "main";
  std::vector<std::string> inputs;
  std::string device = "vulkan";
  std::string device_name;
  int device_index = -1;
  bool per_dispatch = false;
  int per_dispatch_invokes = 20;
  bool per_dispatch_tsv = false;
};

int Error(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

// Consumes `status`. Returns true if OK; else sets *error to "context: CODE: message".
bool Ok(kiln_status_t status, const std::string& context, std::string* error) {
  if (!status) return true;
  *error = context + ": " + kiln_status_code_name(kiln_status_code(status)) + ": " +
           kiln_status_message(status);
  kiln_status_free(status);
  return false;
}

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) == 0 && arg[n] == '=') {
    *value = arg + n + 1;
    return true;
  }
  return false;
}

// Everything the benchmark needs, created once; owns every handle.
struct Session {
  // The module's bytes, read not mapped (tools/module_file.h); declared
  // first, so they are freed after the module and the context.
  kiln::tools::ModuleFile file;
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  kiln_function_t function = nullptr;  // borrowed from context
  std::vector<kiln_tensor_t> args;
  std::vector<kiln_tensor_t> results;
  void ReleaseResults() {
    for (kiln_tensor_t& t : results) {
      kiln_tensor_release(t);
      t = nullptr;
    }
  }
  ~Session() {
    ReleaseResults();
    for (kiln_tensor_t t : args) kiln_tensor_release(t);
    kiln_context_release(context);
    kiln_module_release(module);
    kiln_device_release(device);
    kiln_instance_release(instance);
  }
};

bool Open(const Options& opt, Session* s, std::string* error) {
  if (!Ok(kiln_instance_create(&s->instance), "creating the instance", error)) return false;
  if (!s->file.Read(opt.module, error)) return false;
  if (!Ok(s->file.Load(s->instance, &s->module), "loading " + opt.module, error)) return false;
  if (!Ok(kiln_device_create(s->instance, opt.device.c_str(),
                             opt.device_name.empty() ? nullptr : opt.device_name.c_str(),
                             opt.device_index, &s->device),
          "creating the " + opt.device + " device", error)) {
    return false;
  }
  if (opt.per_dispatch && !kiln::tools::EnableDispatchTiming(s->device, error)) return false;
  if (!Ok(kiln_context_create(s->device, &s->module, 1, &s->context), "creating the context",
          error)) {
    return false;
  }
  if (!Ok(kiln_context_lookup_function(s->context, opt.function.c_str(), &s->function),
          "looking up --function", error)) {
    return false;
  }
  size_t arg_count = kiln_function_arg_count(s->function);
  if (opt.inputs.size() != arg_count) {
    std::string sig;
    for (size_t i = 0; i < arg_count; ++i) {
      kiln_tensor_signature_t a;
      if (kiln_status_t st = kiln_function_arg(s->function, i, &a)) {
        kiln_status_free(st);
        continue;
      }
      sig += (i ? ", " : "") + std::string(a.name ? a.name : "") + ": " +
             TypeString(a.dtype, std::vector<int64_t>(a.dims, a.dims + a.rank));
    }
    *error = "function '" + opt.function + "' takes " + std::to_string(arg_count) + " inputs (" +
             sig + "), " + std::to_string(opt.inputs.size()) + " given";
    return false;
  }
  for (size_t i = 0; i < arg_count; ++i) {
    NpyArray array;
    std::string e;
    if (!ParseInput(opt.inputs[i], &array, &e)) {
      *error = "input " + std::to_string(i) + ": " + e;
      return false;
    }
    kiln_tensor_t t = nullptr;
    if (!Ok(kiln_tensor_create(s->device, array.dtype, array.shape.size(), array.shape.data(),
                               array.data.data(), array.data.size(), &t),
            "input " + std::to_string(i), error)) {
      return false;
    }
    s->args.push_back(t);
  }
  s->results.assign(kiln_function_result_count(s->function), nullptr);
  // Warm-up: the first invocation pays one-time costs; it must also succeed.
  return Ok(kiln_invoke(s->context, s->function, s->args.data(), s->args.size(),
                        s->results.data(), s->results.size()),
            "warm-up invocation of '" + opt.function + "'", error);
}

void Counters(benchmark::State& state, const kiln_device_stats_t& before,
              const kiln_device_stats_t& after) {
  auto per_invoke = [&](const char* name, uint64_t a, uint64_t b) {
    state.counters[name] = benchmark::Counter(static_cast<double>(a - b),
                                              benchmark::Counter::kAvgIterations);
  };
  per_invoke("dispatches", after.dispatches, before.dispatches);
  per_invoke("barriers", after.barriers, before.barriers);
  per_invoke("submissions", after.submissions, before.submissions);
  per_invoke("host_waits", after.host_waits, before.host_waits);
  per_invoke("copies", after.copies, before.copies);
  per_invoke("transfers", after.transfers, before.transfers);
  per_invoke("fills", after.fills, before.fills);
  per_invoke("device_allocations", after.device_allocations, before.device_allocations);
  per_invoke("device_bytes_allocated", after.device_bytes_allocated,
             before.device_bytes_allocated);
  per_invoke("host_allocations", after.host_allocations_invoke, before.host_allocations_invoke);
  per_invoke("recordings", after.command_buffer_recordings, before.command_buffer_recordings);
  per_invoke("replays", after.command_buffer_replays, before.command_buffer_replays);
}

constexpr size_t kAsyncDepth = 4;

void BM_InvokeAsync(benchmark::State& state, Session* s) {
  std::string error;
  kiln_device_stats_t before = {}, after = {};
  s->ReleaseResults();
  kiln_fence_t ring[kAsyncDepth] = {};
  kiln_fence_t previous = nullptr;
  std::vector<kiln_invoke_arg_t> args(s->args.size());
  for (size_t i = 0; i < args.size(); ++i) args[i] = {s->args[i], KILN_ARG_BORROW, 0};
  if (!Ok(kiln_device_stats(s->device, &before), "reading stats", &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (kiln_fence_t& f : ring) {
    if (!Ok(kiln_fence_create(s->device, &f), "kiln_fence_create", &error)) {
      state.SkipWithError(error.c_str());
      for (kiln_fence_t& g : ring) kiln_fence_release(g);
      return;
    }
  }
  size_t n = 0;
  for (auto _ : state) {
    kiln_fence_t slot = ring[n % kAsyncDepth];
    if (n++ >= kAsyncDepth) {  // the call kAsyncDepth back: wait for it, then re-arm the fence
      kiln_status_t w = kiln_fence_wait(slot, UINT64_MAX);
      if (!w) w = kiln_fence_reset(slot);
      if (w) {
        Ok(w, "kiln_fence_wait/reset", &error);
        state.SkipWithError(error.c_str());
        break;
      }
    }
    kiln_status_t status = kiln_invoke_async(s->context, s->function, args.data(), args.size(), previous,
                                             slot, s->results.data(), s->results.size());
    if (status) {
      Ok(status, "kiln_invoke_async", &error);
      state.SkipWithError(error.c_str());
      break;
    }
    previous = slot;
    s->ReleaseResults();  // queue-ordered: freed once the call's work is done
  }
  for (size_t i = 0; i < kAsyncDepth && i < n; ++i) kiln_status_free(kiln_fence_wait(ring[i], UINT64_MAX));
  for (kiln_fence_t& f : ring) kiln_fence_release(f);
  if (!Ok(kiln_device_stats(s->device, &after), "reading stats", &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  Counters(state, before, after);
}

void BM_Invoke(benchmark::State& state, Session* s) {
  std::string error;
  kiln_device_stats_t before = {}, after = {};
  s->ReleaseResults();
  if (!Ok(kiln_device_stats(s->device, &before), "reading stats", &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    kiln_status_t status = kiln_invoke(s->context, s->function, s->args.data(), s->args.size(),
                                       s->results.data(), s->results.size());
    if (status) {
      Ok(status, "kiln_invoke", &error);
      state.SkipWithError(error.c_str());
      break;
    }
    s->ReleaseResults();
  }
  if (!Ok(kiln_device_stats(s->device, &after), "reading stats", &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  Counters(state, before, after);
}

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  // Our flags are consumed here; --benchmark_* go to Google Benchmark.
  std::vector<std::string> args;
  int exit_code = 0;
  if (!kiln::tools::NormalizeFlags(kFlags, argc, argv, &args, &exit_code)) return exit_code;
  std::vector<char*> rest = {argv[0]};
  for (std::string& arg : args) {
    const char* a = arg.c_str();
    std::string v;
    if (ParseFlag(a, "--module", &v)) {
      opt.module = v;
    } else if (ParseFlag(a, "--function", &v)) {
      opt.function = v;
    } else if (ParseFlag(a, "--input", &v)) {
      opt.inputs.push_back(v);
    } else if (ParseFlag(a, "--device", &v)) {
      opt.device = v;
    } else if (ParseFlag(a, "--device-name", &v)) {
      opt.device_name = v;
    } else if (arg == "--per-dispatch") {
      opt.per_dispatch = true;
    } else if (ParseFlag(a, "--per-dispatch-invokes", &v)) {
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 100000) {
        Error("bad --per-dispatch-invokes '" + v + "' (want 1..100000)");
        return 2;
      }
      opt.per_dispatch_invokes = static_cast<int>(n);
    } else if (ParseFlag(a, "--per-dispatch-format", &v)) {
      if (v != "table" && v != "tsv") {
        Error("bad --per-dispatch-format '" + v + "' (want table or tsv)");
        return 2;
      }
      opt.per_dispatch_tsv = v == "tsv";
    } else if (ParseFlag(a, "--device-index", &v)) {
      char* end = nullptr;
      long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < -1 || n > (1 << 20)) {
        Error("bad --device-index '" + v + "'");
        return 2;
      }
      opt.device_index = static_cast<int>(n);
    } else {
      rest.push_back(arg.data());
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  if (opt.module.empty()) {
    Error("--module is required (kiln-bench --help lists every flag)");
    return 2;
  }

  Session session;
  std::string error;
  if (!Open(opt, &session, &error)) return Error(error);
  if (opt.per_dispatch) {
    kiln::tools::DispatchProfile profile;
    session.ReleaseResults();
    if (!kiln::tools::ProfileDispatches(session.device, session.module, session.context,
                                        session.function, session.args, session.results.size(),
                                        opt.per_dispatch_invokes, &profile, &error)) {
      return Error(error);
    }
    if (opt.per_dispatch_tsv) {
      kiln::tools::PrintDispatchProfileTsv(profile, stdout);
    } else {
      kiln::tools::PrintDispatchProfile(
          profile,
          "per-dispatch GPU time: " + BaseName(opt.module) + " '" + opt.function + "' on " +
              kiln_device_name(session.device) + ", median of " +
              std::to_string(opt.per_dispatch_invokes) + " invocations",
          stdout);
    }
    return 0;
  }
  benchmark::AddCustomContext("kiln_device", kiln_device_name(session.device));
  benchmark::AddCustomContext("kiln_module", opt.module);
  std::string name = "invoke/" + BaseName(opt.module) + "/" + opt.function;
  benchmark::RegisterBenchmark(name.c_str(), BM_Invoke, &session)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark((name + "/async").c_str(), BM_InvokeAsync, &session)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
