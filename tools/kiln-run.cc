// kiln-run: runs one function of a compiled module (or of a multi-module
// program) through the C API.
//
//   kiln-run --module=M.kiln [--module=M2.kiln ...] [--function=main]
//            --input=@in.npy | --input=1x16x96xf32=@in.npy | --input=2x2xf32=1,2,3,4 ...
//            [--output=@out.npy ...] [--device=vulkan] [--device-name=SUBSTR]
//            [--device-index=N] [--repeat=N] [--stats] [--stats-steady]
//            [--output-storage] [--feedback=R:A] [--print-device] [--print-full]
//
// Inputs are given in function-argument order. Results without an --output
// are printed as `result[0]: tensor<1x2xf32> = [0.1, 0.9]` (16 elements, then
// `...`; all of them with --print-full). --stats prints one `key: value` line
// per counter, measured around the invocations only (inputs are created
// before). With --repeat=N the function runs N times and the last results are
// printed; --stats then covers all N invocations, or only the last one with
// --stats-steady (the steady state: allocations made by the first invocation,
// such as register banks, are excluded).
//
// Ownership (kiln_invoke_ex): --output-storage preallocates one tensor per
// result (zero-filled, of the result's type) and passes it as caller output
// storage, so results are written into it (the result handle is that tensor;
// with --repeat the same storage serves every invocation). --feedback=R:A
// passes result R of each invocation back as argument A of the next one,
// consumed (KILN_ARG_CONSUME): the streaming-state pattern, which with
// --stats-steady should show zero device and host allocations. Argument A's
// --input is its initial value (consumed by the first invocation).
//
// Multi-module programs: repeat --module in dependency order (a module's
// imports "name.function" resolve against the modules before it), e.g.
//   kiln-run --module=mel.kiln --module=emb.kiln --module=head.kiln
//            --module=driver.kiln --function=driver.main ...
// all linked in one context. A --function without a '.' names a function of
// the LAST module (main -> driver.main). --stats counts the whole call tree
// (the device's counters: every module's allocations, copies, dispatches).
//
// Errors go to stderr as `error: ...` with exit status 1 (2 for usage).
// Uses only the public C API (include/kiln/kiln.h).
#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define KILN_CALLGRIND(request) request
#endif
#endif
#ifndef KILN_CALLGRIND
#define KILN_CALLGRIND(request)
#endif
#include <algorithm>
#include <climits>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tools/input_spec.h"
#include "tools/module_file.h"
#include "tools/flags.h"
#include "tools/npy.h"

namespace {

using kiln::tools::HalfToFloat;
using kiln::tools::ParseDTypeName;
using kiln::tools::ParseInput;
using kiln::tools::TypeString;

using kiln::tools::NpyArray;

const kiln::tools::FlagTable kFlags = {
    "kiln-run",
    "usage: kiln-run --module=M.kiln [--module=M2.kiln ...] [--function=main] --input=SPEC ...\n"
    "                [--output=@out.npy ...] [flags]\n"
    "Runs a compiled module (.kiln; compile ONNX models with kiln-compile first).",
    {
        {"--module", "M.kiln", "module to load; repeatable: linked in one context in this order"},
        {"--function", "F", "function to run (default main; MODULE.F names the module)"},
        {"--input", "SPEC", "argument i, in order: @in.npy, TYPE=@in.npy or TYPE=v1,v2,..."},
        {"--output", "@out.npy", "write result i (in order) to a .npy file"},
        {"--device", "DRIVER", "HAL driver (default vulkan; case-insensitive)"},
        {"--device-name", "SUBSTR", "pick the device whose name contains SUBSTR (any case)"},
        {"--device-index", "N", "pick device N in enumeration order (-1: the first)"},
        {"--repeat", "N", "invoke N times; print/write the last results"},
        {"--stats", nullptr, "print the runtime counters of all invocations"},
        {"--stats-steady", nullptr, "like --stats, counting the last invocation only"},
        {"--output-storage", nullptr, "pass preallocated storage for every result (in place)"},
        {"--feedback", "R:A", "feed result R back as consumed argument A; repeatable"},
        {"--step-budget", "N", "fail an invocation after N bytecode branches and calls (0: no limit)"},
        {"--device-memory-budget", "BYTES", "fail an allocation past BYTES of live device memory"},
        {"--wait-timeout-ms", "MS", "fail an invocation whose device work takes longer than MS (0: no limit)"},
        {"--print-device", nullptr, "print the device name"},
        {"--print-full", nullptr, "print every element (default: the first 16)"},
    },
    "--input forms: @in.npy (shape and dtype from the file); 1x16x96xf32=@in.npy (checked;\n"
    "a reshape with the same element count is allowed); 2x2xf32=1,2,3,4 (C order; one value\n"
    "fills the tensor). --feedback: --input A is the initial value; types must match.\n"
    "dtypes: f32 f64 f16 i64 i32 i16 i8 u8 i1 (bool)\n"};

struct Options {
  std::vector<std::string> modules;  // in dependency order
  std::string function = "main";
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::string device = "vulkan";
  std::string device_name;
  int device_index = -1;
  long repeat = 1;
  kiln_context_options_t limits = {sizeof(kiln_context_options_t), 0, 0, 0};
  bool stats = false;
  bool stats_steady = false;
  bool print_device = false;
  bool print_full = false;
  bool output_storage = false;
  std::vector<std::pair<size_t, size_t>> feedback;  // (result, argument)
};

int Error(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

// Consumes a status; returns true if OK, else prints `context: message`.
bool Check(kiln_status_t status, const std::string& context, int* exit_code) {
  if (!status) return true;
  std::fprintf(stderr, "error: %s: %s: %s\n", context.c_str(),
               kiln_status_code_name(kiln_status_code(status)), kiln_status_message(status));
  kiln_status_free(status);
  *exit_code = 1;
  return false;
}

std::string FormatElement(kiln_dtype_t dtype, const uint8_t* p) {
  char buf[64];
  switch (dtype) {
    case KILN_DTYPE_F32: { float f; std::memcpy(&f, p, 4); std::snprintf(buf, sizeof(buf), "%g", f); break; }
    case KILN_DTYPE_F64: { double f; std::memcpy(&f, p, 8); std::snprintf(buf, sizeof(buf), "%g", f); break; }
    case KILN_DTYPE_F16: { uint16_t h; std::memcpy(&h, p, 2); std::snprintf(buf, sizeof(buf), "%g", HalfToFloat(h)); break; }
    case KILN_DTYPE_I64: { int64_t v; std::memcpy(&v, p, 8); std::snprintf(buf, sizeof(buf), "%" PRId64, v); break; }
    case KILN_DTYPE_I32: { int32_t v; std::memcpy(&v, p, 4); std::snprintf(buf, sizeof(buf), "%d", v); break; }
    case KILN_DTYPE_I16: { int16_t v; std::memcpy(&v, p, 2); std::snprintf(buf, sizeof(buf), "%d", v); break; }
    case KILN_DTYPE_I8: std::snprintf(buf, sizeof(buf), "%d", static_cast<int8_t>(*p)); break;
    case KILN_DTYPE_U8: std::snprintf(buf, sizeof(buf), "%u", *p); break;
    case KILN_DTYPE_BOOL: std::snprintf(buf, sizeof(buf), "%s", *p ? "true" : "false"); break;
    case KILN_DTYPE_U16: { uint16_t v; std::memcpy(&v, p, 2); std::snprintf(buf, sizeof(buf), "%u", v); break; }
    case KILN_DTYPE_U32: { uint32_t v; std::memcpy(&v, p, 4); std::snprintf(buf, sizeof(buf), "%" PRIu32, v); break; }
    case KILN_DTYPE_U64: { uint64_t v; std::memcpy(&v, p, 8); std::snprintf(buf, sizeof(buf), "%" PRIu64, v); break; }
    case KILN_DTYPE_BF16: {
      // bfloat16: the top half of an f32.
      uint32_t x = 0;
      std::memcpy(reinterpret_cast<uint8_t*>(&x) + 2, p, 2);
      float f;
      std::memcpy(&f, &x, 4);
      std::snprintf(buf, sizeof(buf), "%g", f);
      break;
    }
    default: std::snprintf(buf, sizeof(buf), "?"); break;
  }
  return buf;
}

bool ParseFlag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) == 0 && arg[n] == '=') {
    *value = arg + n + 1;
    return true;
  }
  return false;
}

bool ParseInt(const std::string& s, long lo, long hi, long* out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// Owns every handle; releases in any order at scope exit.
struct Handles {
  // The modules' bytes, read not mapped (tools/module_file.h); declared
  // first, so they are freed after the modules and the context.
  std::vector<kiln::tools::ModuleFile> files;
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  std::vector<kiln_module_t> modules;  // in dependency order
  kiln_context_t context = nullptr;
  std::vector<kiln_tensor_t> args;
  std::vector<kiln_tensor_t> results;
  std::vector<kiln_tensor_t> storage;  // --output-storage, one per result (or NULL)
  void ReleaseResults() {
    for (kiln_tensor_t& t : results) {
      kiln_tensor_release(t);
      t = nullptr;
    }
  }
  ~Handles() {
    ReleaseResults();
    for (kiln_tensor_t t : args) kiln_tensor_release(t);
    for (kiln_tensor_t t : storage) kiln_tensor_release(t);
    kiln_context_release(context);
    for (kiln_module_t m : modules) kiln_module_release(m);
    kiln_device_release(device);
    kiln_instance_release(instance);
  }
};

void PrintStats(const kiln_device_stats_t& s) {
  std::printf("device_allocations: %" PRIu64 "\n", s.device_allocations);
  std::printf("device_bytes_allocated: %" PRIu64 "\n", s.device_bytes_allocated);
  std::printf("device_bytes_live: %" PRIu64 "\n", s.device_bytes_live);
  std::printf("device_peak_bytes: %" PRIu64 "\n", s.device_peak_bytes);
  std::printf("copies: %" PRIu64 "\n", s.copies);
  std::printf("copy_bytes: %" PRIu64 "\n", s.copy_bytes);
  std::printf("transfers: %" PRIu64 "\n", s.transfers);
  std::printf("fills: %" PRIu64 "\n", s.fills);
  std::printf("dispatches: %" PRIu64 "\n", s.dispatches);
  std::printf("barriers: %" PRIu64 "\n", s.barriers);
  std::printf("submissions: %" PRIu64 "\n", s.submissions);
  std::printf("host_allocations_invoke: %" PRIu64 "\n", s.host_allocations_invoke);
  std::printf("host_waits: %" PRIu64 "\n", s.host_waits);
  std::printf("deferred_frees: %" PRIu64 "\n", s.deferred_frees);
  std::printf("command_buffer_recordings: %" PRIu64 "\n", s.command_buffer_recordings);
  std::printf("command_buffer_replays: %" PRIu64 "\n", s.command_buffer_replays);
}

int Run(const Options& opt) {
  int rc = 0;
  Handles h;
  if (!Check(kiln_instance_create(&h.instance), "creating the instance", &rc)) return rc;
  for (const std::string& path : opt.modules) {
    kiln_module_t m = nullptr;
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) {
      return Error(path + " is an ONNX model; kiln-run runs compiled modules: run kiln-compile "
                   "first (kiln-compile " + path + " -o model.kiln), then kiln-run --module=model.kiln");
    }
    std::string error;
    h.files.emplace_back();
    if (!h.files.back().Read(path, &error)) return Error(error);
    if (!Check(h.files.back().Load(h.instance, &m), "loading " + path, &rc)) return rc;
    h.modules.push_back(m);
  }
  if (!Check(kiln_device_create(h.instance, opt.device.c_str(),
                                opt.device_name.empty() ? nullptr : opt.device_name.c_str(),
                                opt.device_index, &h.device),
             "creating the " + opt.device + " device", &rc)) {
    return rc;
  }
  if (opt.print_device) std::printf("device: %s\n", kiln_device_name(h.device));
  if (!Check(kiln_context_create_with_options(h.device, h.modules.data(), h.modules.size(),
                                              &opt.limits, &h.context),
             "creating the context", &rc)) {
    return rc;
  }
  // Several modules: a bare function name is the last module's (the driver's).
  std::string function = opt.function;
  if (h.modules.size() > 1 && function.find('.') == std::string::npos)
    function = std::string(kiln_module_name(h.modules.back())) + "." + function;
  kiln_function_t fn = nullptr;
  if (!Check(kiln_context_lookup_function(h.context, function.c_str(), &fn),
             "looking up --function", &rc)) {
    return rc;
  }
  size_t arg_count = kiln_function_arg_count(fn);
  size_t result_count = kiln_function_result_count(fn);
  if (opt.inputs.size() != arg_count) {
    std::string sig;
    for (size_t i = 0; i < arg_count; ++i) {
      kiln_tensor_signature_t s;
      kiln_status_free(kiln_function_arg(fn, i, &s));
      sig += (i ? ", " : "") + std::string(s.name) + ": " +
             TypeString(s.dtype, std::vector<int64_t>(s.dims, s.dims + s.rank));
    }
    return Error("function '" + opt.function + "' takes " + std::to_string(arg_count) +
                 " inputs (" + sig + "), " + std::to_string(opt.inputs.size()) + " given");
  }
  if (opt.outputs.size() > result_count) {
    return Error(std::to_string(opt.outputs.size()) + " --output flags but function '" +
                 opt.function + "' has " + std::to_string(result_count) + " results");
  }
  for (size_t i = 0; i < arg_count; ++i) {
    NpyArray array;
    std::string error;
    if (!ParseInput(opt.inputs[i], &array, &error)) {
      return Error("input " + std::to_string(i) + ": " + error);
    }
    kiln_tensor_t t = nullptr;
    if (!Check(kiln_tensor_create(h.device, array.dtype, array.shape.size(), array.shape.data(),
                                  array.data.data(), array.data.size(), &t),
               "input " + std::to_string(i), &rc)) {
      return rc;
    }
    h.args.push_back(t);
  }

  h.results.assign(result_count, nullptr);
  // --feedback: result R feeds argument A (same type), consumed.
  std::vector<bool> fed_result(result_count, false), consumed_arg(arg_count, false);
  for (const auto& [r, a] : opt.feedback) {
    if (r >= result_count || a >= arg_count) {
      return Error("--feedback=" + std::to_string(r) + ":" + std::to_string(a) + ": function '" +
                   opt.function + "' has " + std::to_string(result_count) + " results and " +
                   std::to_string(arg_count) + " arguments");
    }
    kiln_tensor_signature_t rs, as;
    kiln_status_free(kiln_function_result(fn, r, &rs));
    kiln_status_free(kiln_function_arg(fn, a, &as));
    std::vector<int64_t> rd(rs.dims, rs.dims + rs.rank), ad(as.dims, as.dims + as.rank);
    if (rs.dtype != as.dtype || rd != ad) {
      return Error("--feedback=" + std::to_string(r) + ":" + std::to_string(a) + ": result " +
                   std::to_string(r) + " is " + TypeString(rs.dtype, rd) + " but argument " +
                   std::to_string(a) + " is " + TypeString(as.dtype, ad));
    }
    if (consumed_arg[a]) return Error("--feedback: argument " + std::to_string(a) + " fed twice");
    fed_result[r] = true;
    consumed_arg[a] = true;
  }
  // --output-storage: one zero-filled tensor per result (not for fed-back
  // results: those are consumed by the next call, so they must be fresh).
  h.storage.assign(result_count, nullptr);
  if (opt.output_storage) {
    for (size_t k = 0; k < result_count; ++k) {
      if (fed_result[k]) continue;
      kiln_tensor_signature_t sig;
      if (!Check(kiln_function_result(fn, k, &sig), "result " + std::to_string(k), &rc)) return rc;
      if (!Check(kiln_tensor_create(h.device, sig.dtype, sig.rank, sig.dims, nullptr, 0,
                                    &h.storage[k]),
                 "output storage " + std::to_string(k), &rc)) {
        return rc;
      }
    }
  }
  const bool use_ex = opt.output_storage || !opt.feedback.empty();
  std::vector<kiln_invoke_arg_t> ex_args;
  kiln_device_stats_t stats = {};
  if (!Check(kiln_device_stats_reset(h.device), "resetting stats", &rc)) return rc;
  for (long r = 0; r < opt.repeat; ++r) {
    if (r > 0) {
      for (const auto& [res, a] : opt.feedback) {
        h.args[a] = h.results[res];  // the previous state, consumed below
        h.results[res] = nullptr;
      }
    }
    h.ReleaseResults();
    if (opt.stats_steady && r == opt.repeat - 1) {
      if (!Check(kiln_device_stats_reset(h.device), "resetting stats", &rc)) return rc;
    }
    kiln_status_t status;
    // Under `valgrind --tool=callgrind --instr-atstart=no
    // --separate-threads=yes` only the invokes are instrumented (module
    // loading and pipeline compilation run at native-ish speed) and each
    // invoke is dumped on its own (its calling thread's file holds the host
    // instructions; driver threads running shaders have their own files).
    // The first invoke is not instrumented: the driver may compile shaders
    // lazily on first use. A no-op otherwise.
    if (r > 0) KILN_CALLGRIND(CALLGRIND_START_INSTRUMENTATION);
    if (use_ex) {
      ex_args.clear();
      for (size_t i = 0; i < arg_count; ++i) {
        ex_args.push_back({h.args[i], consumed_arg[i] ? KILN_ARG_CONSUME : KILN_ARG_BORROW, 0});
      }
      for (size_t k = 0; k < result_count; ++k) {
        if (h.storage[k]) {
          ex_args.push_back({h.storage[k], KILN_ARG_OUTPUT_STORAGE, static_cast<int32_t>(k)});
        }
      }
      status = kiln_invoke_ex(h.context, fn, ex_args.data(), ex_args.size(), h.results.data(),
                              h.results.size());
      for (size_t i = 0; i < arg_count; ++i) {
        if (consumed_arg[i]) h.args[i] = nullptr;  // released by the call
      }
    } else {
      status = kiln_invoke(h.context, fn, h.args.data(), h.args.size(), h.results.data(),
                           h.results.size());
    }
    if (r > 0) {
      KILN_CALLGRIND(CALLGRIND_STOP_INSTRUMENTATION);
      KILN_CALLGRIND(CALLGRIND_DUMP_STATS);
    }
    if (!Check(status, "invoking '" + opt.function + "'", &rc)) return rc;
    for (size_t k = 0; k < result_count; ++k) {
      if (h.storage[k] && h.results[k] != h.storage[k]) {
        return Error("result " + std::to_string(k) + " was not returned in its output storage");
      }
    }
  }
  if (!Check(kiln_device_stats(h.device, &stats), "reading stats", &rc)) return rc;

  for (size_t i = 0; i < result_count; ++i) {
    kiln_tensor_t t = h.results[i];
    NpyArray array;
    array.dtype = kiln_tensor_dtype(t);
    array.shape.assign(kiln_tensor_dims(t), kiln_tensor_dims(t) + kiln_tensor_rank(t));
    array.data.resize(kiln_tensor_byte_size(t));
    if (!Check(kiln_tensor_read(t, array.data.data(), array.data.size()),
               "reading result " + std::to_string(i), &rc)) {
      return rc;
    }
    if (i < opt.outputs.size()) {
      std::string path = opt.outputs[i];
      if (!path.empty() && path[0] == '@') path = path.substr(1);
      std::string error;
      if (!kiln::tools::WriteNpy(path, array, &error)) return Error(error);
      continue;
    }
    size_t count = array.element_count();
    size_t shown = opt.print_full ? count : std::min<size_t>(count, 16);
    std::string text = "result[" + std::to_string(i) + "]: " + TypeString(array.dtype, array.shape) +
                       " = [";
    size_t esize = kiln_dtype_size(array.dtype);
    for (size_t e = 0; e < shown; ++e) {
      if (e) text += ", ";
      text += FormatElement(array.dtype, array.data.data() + e * esize);
    }
    if (shown < count) text += ", ...";
    text += "]";
    std::printf("%s\n", text.c_str());
  }
  if (opt.stats) PrintStats(stats);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  std::vector<std::string> args;
  int exit_code = 0;
  if (!kiln::tools::NormalizeFlags(kFlags, argc, argv, &args, &exit_code)) return exit_code;
  for (const std::string& arg : args) {
    const char* a = arg.c_str();
    std::string v;
    long n;
    if (ParseFlag(a, "--module", &v)) {
      opt.modules.push_back(v);
    } else if (ParseFlag(a, "--function", &v)) {
      opt.function = v;
    } else if (ParseFlag(a, "--input", &v)) {
      opt.inputs.push_back(v);
    } else if (ParseFlag(a, "--output", &v)) {
      opt.outputs.push_back(v);
    } else if (ParseFlag(a, "--device", &v)) {
      opt.device = v;
    } else if (ParseFlag(a, "--device-name", &v)) {
      opt.device_name = v;
    } else if (ParseFlag(a, "--device-index", &v)) {
      if (!ParseInt(v, -1, 1 << 20, &n)) return Error("bad --device-index '" + v + "'"), 2;
      opt.device_index = static_cast<int>(n);
    } else if (ParseFlag(a, "--repeat", &v)) {
      if (!ParseInt(v, 1, 1L << 30, &n)) return Error("bad --repeat '" + v + "' (>= 1)"), 2;
      opt.repeat = n;
    } else if (ParseFlag(a, "--step-budget", &v)) {
      if (!ParseInt(v, 0, LONG_MAX, &n)) return Error("bad --step-budget '" + v + "' (>= 0)"), 2;
      opt.limits.step_budget = static_cast<uint64_t>(n);
    } else if (ParseFlag(a, "--device-memory-budget", &v)) {
      if (!ParseInt(v, 0, LONG_MAX, &n)) return Error("bad --device-memory-budget '" + v + "' (>= 0)"), 2;
      opt.limits.device_memory_budget = static_cast<uint64_t>(n);
    } else if (ParseFlag(a, "--wait-timeout-ms", &v)) {
      if (!ParseInt(v, 0, LONG_MAX / 1000000, &n)) return Error("bad --wait-timeout-ms '" + v + "' (>= 0)"), 2;
      opt.limits.wait_timeout_ns = static_cast<uint64_t>(n) * 1000000u;
    } else if (!std::strcmp(a, "--stats")) {
      opt.stats = true;
    } else if (!std::strcmp(a, "--stats-steady")) {
      opt.stats = true;
      opt.stats_steady = true;
    } else if (!std::strcmp(a, "--output-storage")) {
      opt.output_storage = true;
    } else if (ParseFlag(a, "--feedback", &v)) {
      size_t colon = v.find(':');
      long r = 0, ai = 0;
      if (colon == std::string::npos || !ParseInt(v.substr(0, colon), 0, 1 << 20, &r) ||
          !ParseInt(v.substr(colon + 1), 0, 1 << 20, &ai)) {
        return Error("bad --feedback '" + v + "' (expected RESULT:ARGUMENT, e.g. 1:1)"), 2;
      }
      opt.feedback.push_back({static_cast<size_t>(r), static_cast<size_t>(ai)});
    } else if (!std::strcmp(a, "--print-device")) {
      opt.print_device = true;
    } else if (!std::strcmp(a, "--print-full")) {
      opt.print_full = true;
    } else {
      Error(std::string("unexpected argument '") + a + "' (kiln-run takes flags only; " +
            "kiln-run --help lists them)");
      return 2;
    }
  }
  if (opt.modules.empty()) {
    Error("--module is required (kiln-run --help lists every flag)");
    return 2;
  }
  for (const std::string& o : opt.outputs) {
    if (o.empty() || o[0] != '@') return Error("--output='" + o + "': expected @path.npy"), 2;
  }
  return Run(opt);
}
