// kiln-test: the on-device test runner. Runs every test of a bundle (see
// bundle.h; made on the host by kiln-bundle) through the public C API only,
// compares each result with the expected output under the test's tolerance,
// and prints one line per test and a summary:
//
//   kiln-test BUNDLE [--filter=REGEX] [--device=vulkan] [--device-name=SUBSTR]
//             [--device-index=N] [--stats] [--junit=FILE] [--list]
//
//   PASS test_abs (3.1 ms)
//   FAIL test_gemm_default: result 0: element 3: got 1.5 want 1.25 (...)
//   SKIP silero_vad: model not fetched
//   412 passed, 1 failed, 3 skipped
//
// --filter keeps the tests whose name matches REGEX (ECMAScript, searched
// anywhere in the name); the others are not counted. --stats adds, per test,
// the wall time of load (module load + context creation: pipelines,
// constants) and invoke (kiln_invoke + reading the results back) and the
// device counters of the invoke (kiln_device_stats). --junit writes a JUnit
// XML report. Exit status: 0 when no test failed, 1 on any failure, 2 for
// usage or an unreadable bundle. With KILN_VALIDATION=1 the Vulkan validation
// layer is on: every validation message is printed (`kiln: vulkan
// validation: ...`, through kiln_set_log_callback) and fails the test that
// was running (messages outside any test fail the run).
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "tools/kiln-test/bundle.h"
#include "tools/npy.h"

namespace {

using kiln::tools::BundleTest;
using kiln::tools::NpyArray;

const char kUsage[] =
    "usage: kiln-test BUNDLE [--filter=REGEX] [--device=vulkan] [--device-name=SUBSTR]\n"
    "                 [--device-index=N] [--stats] [--junit=FILE] [--list]\n"
    "\n"
    "  BUNDLE              a directory with manifest.txt (made by kiln-bundle)\n"
    "  --filter=REGEX      run only the tests whose name matches REGEX\n"
    "  --device=DRIVER     HAL driver (default vulkan)\n"
    "  --device-name=S     device whose name contains S (case-insensitive)\n"
    "  --device-index=N    N-th device of the driver\n"
    "  --stats             per-test timings (ms) and device counters\n"
    "  --junit=FILE        write a JUnit XML report\n"
    "  --list              print the selected tests and exit\n";

struct Options {
  std::string bundle;
  std::string filter;
  bool has_filter = false;
  std::string driver = "vulkan";
  std::string device_name;
  int device_index = -1;
  bool stats = false;
  bool list = false;
  std::string junit;
};

struct Result {
  const BundleTest* test;
  enum { kPass, kFail, kSkip } outcome;
  std::string message;
  double load_ms = 0, invoke_ms = 0;
  kiln_device_stats_t stats = {};
};

// Validation-layer messages seen (kiln_set_log_callback; any thread).
std::atomic<uint64_t> g_validation_messages{0};

void LogCallback(void*, kiln_log_level_t level, const char* source, const char* message) {
  if (std::strcmp(source, "vulkan validation") == 0) g_validation_messages.fetch_add(1);
  std::fprintf(stderr, "kiln: %s: %s\n", source, message);
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Takes ownership of `s`: "" for OK, else "CODE: message".
std::string StatusText(kiln_status_t s) {
  if (!s) return "";
  std::string text = std::string(kiln_status_code_name(kiln_status_code(s))) + ": " + kiln_status_message(s);
  kiln_status_free(s);
  return text;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

// Every handle made by one test, released in reverse order.
struct TestHandles {
  kiln_module_t module = nullptr;
  kiln_context_t context = nullptr;
  std::vector<kiln_tensor_t> args, results;
  ~TestHandles() {
    for (kiln_tensor_t t : results) kiln_tensor_release(t);
    for (kiln_tensor_t t : args) kiln_tensor_release(t);
    kiln_context_release(context);
    kiln_module_release(module);
  }
};

void RunTest(const Options& opt, kiln_instance_t instance, kiln_device_t device, Result* r) {
  const BundleTest& t = *r->test;
  std::string dir = opt.bundle + "/" + t.dir + "/";
  std::string error;
  TestHandles h;
  auto fail = [&](const std::string& what) {
    r->outcome = Result::kFail;
    r->message = what;
  };
  // Inputs and expected outputs first: file errors are not timed.
  std::vector<NpyArray> inputs(t.inputs), expected(t.outputs);
  for (int i = 0; i < t.inputs; ++i)
    if (!kiln::tools::ReadNpy(dir + "input_" + std::to_string(i) + ".npy", &inputs[i], &error)) return fail(error);
  for (int i = 0; i < t.outputs; ++i)
    if (!kiln::tools::ReadNpy(dir + "expected_" + std::to_string(i) + ".npy", &expected[i], &error))
      return fail(error);

  auto t0 = std::chrono::steady_clock::now();
  error = StatusText(kiln_module_load_from_file(instance, (dir + "module.kiln").c_str(), &h.module));
  if (!error.empty()) return fail("load: " + error);
  error = StatusText(kiln_context_create(device, &h.module, 1, &h.context));
  if (!error.empty()) return fail("context: " + error);
  r->load_ms = MsSince(t0);
  kiln_function_t fn = nullptr;
  error = StatusText(kiln_context_lookup_function(h.context, t.function.c_str(), &fn));
  if (!error.empty()) return fail(error);
  if (kiln_function_arg_count(fn) != static_cast<size_t>(t.inputs) ||
      kiln_function_result_count(fn) != static_cast<size_t>(t.outputs))
    return fail("function " + t.function + " takes " + std::to_string(kiln_function_arg_count(fn)) +
                " arguments and gives " + std::to_string(kiln_function_result_count(fn)) + " results; the manifest says " +
                std::to_string(t.inputs) + " and " + std::to_string(t.outputs));
  for (int i = 0; i < t.inputs; ++i) {
    kiln_tensor_t x = nullptr;
    error = StatusText(kiln_tensor_create(device, inputs[i].dtype, inputs[i].shape.size(), inputs[i].shape.data(),
                                          inputs[i].data.data(), inputs[i].data.size(), &x));
    if (!error.empty()) return fail("input " + std::to_string(i) + ": " + error);
    h.args.push_back(x);
  }
  kiln_device_stats_t before = {}, after = {};
  kiln_device_stats(device, &before);
  t0 = std::chrono::steady_clock::now();
  h.results.assign(t.outputs, nullptr);
  error = StatusText(kiln_invoke(h.context, fn, h.args.data(), h.args.size(), h.results.data(), h.results.size()));
  if (!error.empty()) {
    h.results.clear();
    return fail("invoke: " + error);
  }
  std::vector<NpyArray> got(t.outputs);
  for (int i = 0; i < t.outputs; ++i) {
    kiln_tensor_t y = h.results[i];
    got[i].dtype = kiln_tensor_dtype(y);
    got[i].shape.assign(kiln_tensor_dims(y), kiln_tensor_dims(y) + kiln_tensor_rank(y));
    got[i].data.resize(kiln_tensor_byte_size(y));
    error = StatusText(kiln_tensor_read(y, got[i].data.data(), got[i].data.size()));
    if (!error.empty()) return fail("result " + std::to_string(i) + ": read: " + error);
  }
  r->invoke_ms = MsSince(t0);
  kiln_device_stats(device, &after);
#define KILN_TEST_DELTA(f) r->stats.f = after.f - before.f
  KILN_TEST_DELTA(device_allocations);
  KILN_TEST_DELTA(device_bytes_allocated);
  KILN_TEST_DELTA(copies);
  KILN_TEST_DELTA(transfers);
  KILN_TEST_DELTA(fills);
  KILN_TEST_DELTA(dispatches);
  KILN_TEST_DELTA(barriers);
  KILN_TEST_DELTA(submissions);
  KILN_TEST_DELTA(host_allocations_invoke);
#undef KILN_TEST_DELTA
  for (int i = 0; i < t.outputs; ++i) {
    std::string diff = kiln::tools::CompareArrays(got[i], expected[i], t.atol, t.rtol);
    if (!diff.empty()) return fail("result " + std::to_string(i) + ": " + diff);
  }
  r->outcome = Result::kPass;
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

bool WriteJunit(const std::string& path, const std::string& suite, const std::vector<Result>& results,
                const char* device_name) {
  std::ofstream out(path);
  if (!out) return false;
  int failures = 0, skipped = 0;
  double total = 0;
  for (const Result& r : results) {
    failures += r.outcome == Result::kFail;
    skipped += r.outcome == Result::kSkip;
    total += r.load_ms + r.invoke_ms;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites tests=\"" << results.size() << "\" failures=\"" << failures << "\">\n";
  out << "  <testsuite name=\"" << XmlEscape(suite) << "\" tests=\"" << results.size() << "\" failures=\""
      << failures << "\" skipped=\"" << skipped << "\" errors=\"0\" time=\"" << total / 1000 << "\">\n";
  out << "    <properties><property name=\"device\" value=\"" << XmlEscape(device_name) << "\"/></properties>\n";
  for (const Result& r : results) {
    out << "    <testcase classname=\"" << XmlEscape(suite) << "\" name=\"" << XmlEscape(r.test->name)
        << "\" time=\"" << (r.load_ms + r.invoke_ms) / 1000 << "\"";
    if (r.outcome == Result::kPass) {
      out << "/>\n";
      continue;
    }
    out << ">\n";
    if (r.outcome == Result::kFail)
      out << "      <failure message=\"" << XmlEscape(r.message) << "\"/>\n";
    else
      out << "      <skipped message=\"" << XmlEscape(r.message) << "\"/>\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
  return static_cast<bool>(out);
}

bool StartsWith(const char* arg, const char* prefix, const char** value) {
  size_t n = std::strlen(prefix);
  if (std::strncmp(arg, prefix, n) != 0) return false;
  *value = arg + n;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = nullptr;
    if (StartsWith(a, "--filter=", &v)) { opt.filter = v; opt.has_filter = true; }
    else if (StartsWith(a, "--device=", &v)) opt.driver = v;
    else if (StartsWith(a, "--device-name=", &v)) opt.device_name = v;
    else if (StartsWith(a, "--device-index=", &v)) opt.device_index = std::atoi(v);
    else if (StartsWith(a, "--junit=", &v)) opt.junit = v;
    else if (std::strcmp(a, "--stats") == 0) opt.stats = true;
    else if (std::strcmp(a, "--list") == 0) opt.list = true;
    else if (std::strcmp(a, "--help") == 0 || std::strcmp(a, "-h") == 0) { std::fputs(kUsage, stdout); return 0; }
    else if (a[0] == '-' || !opt.bundle.empty()) {
      std::fprintf(stderr, "error: unknown argument '%s'\n%s", a, kUsage);
      return 2;
    } else {
      opt.bundle = a;
    }
  }
  if (opt.bundle.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string text, error;
  if (!ReadFile(opt.bundle + "/manifest.txt", &text)) {
    std::fprintf(stderr, "error: cannot read %s/manifest.txt\n", opt.bundle.c_str());
    return 2;
  }
  std::vector<BundleTest> tests;
  if (!kiln::tools::ParseManifest(text, &tests, &error)) {
    std::fprintf(stderr, "error: %s/%s\n", opt.bundle.c_str(), error.c_str());
    return 2;
  }
  std::regex filter;
  if (opt.has_filter) {
    // std::regex reports a bad pattern by exception; this tool is built with
    // exceptions (only the runtime libraries are not).
    try {
      filter = std::regex(opt.filter, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      std::fprintf(stderr, "error: --filter: bad regular expression '%s': %s\n", opt.filter.c_str(), e.what());
      return 2;
    }
  }
  std::vector<Result> results;
  for (const BundleTest& t : tests)
    if (!opt.has_filter || std::regex_search(t.name, filter)) results.push_back(Result{&t, Result::kSkip, ""});
  if (opt.list) {
    for (const Result& r : results) std::printf("%s\n", r.test->name.c_str());
    return 0;
  }

  kiln_set_log_callback(LogCallback, nullptr);
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  error = StatusText(kiln_instance_create(&instance));
  if (error.empty())
    error = StatusText(kiln_device_create(instance, opt.driver.c_str(), opt.device_name.c_str(), opt.device_index,
                                          &device));
  if (!error.empty()) {
    std::fprintf(stderr, "error: device: %s\n", error.c_str());
    kiln_instance_release(instance);
    return 2;
  }
  const std::string device_name = kiln_device_name(device);
  std::printf("kiln-test: %zu tests from %s on %s\n", results.size(), opt.bundle.c_str(), device_name.c_str());
  std::fflush(stdout);
  int passed = 0, failed = 0, skipped = 0;
  for (Result& r : results) {
    if (!r.test->skip.empty()) {
      r.message = r.test->skip;
      ++skipped;
      std::printf("SKIP %s: %s\n", r.test->name.c_str(), r.message.c_str());
    } else {
      uint64_t messages = g_validation_messages.load();
      RunTest(opt, instance, device, &r);
      messages = g_validation_messages.load() - messages;
      if (messages && r.outcome == Result::kPass) {
        r.outcome = Result::kFail;
        r.message = std::to_string(messages) + " Vulkan validation messages (on stderr)";
      }
      if (r.outcome == Result::kPass) {
        ++passed;
        std::printf("PASS %s (%.1f ms)\n", r.test->name.c_str(), r.load_ms + r.invoke_ms);
      } else {
        ++failed;
        std::printf("FAIL %s: %s\n", r.test->name.c_str(), r.message.c_str());
      }
      if (opt.stats && r.outcome == Result::kPass) {
        const kiln_device_stats_t& s = r.stats;
        std::printf("  stats: load_ms=%.2f invoke_ms=%.2f device_allocations=%" PRIu64 " device_bytes=%" PRIu64
                    " copies=%" PRIu64 " transfers=%" PRIu64 " fills=%" PRIu64 " dispatches=%" PRIu64
                    " barriers=%" PRIu64 " submissions=%" PRIu64 " host_allocations_invoke=%" PRIu64 "\n",
                    r.load_ms, r.invoke_ms, s.device_allocations, s.device_bytes_allocated, s.copies, s.transfers,
                    s.fills, s.dispatches, s.barriers, s.submissions, s.host_allocations_invoke);
      }
    }
    std::fflush(stdout);
  }
  kiln_device_release(device);
  kiln_instance_release(instance);
  device = nullptr;
  instance = nullptr;
  uint64_t counted = 0;
  for (const Result& r : results) counted += r.outcome == Result::kFail && r.message.find("Vulkan validation") != std::string::npos;
  if (g_validation_messages.load() && !counted) {
    std::printf("FAIL (outside any test): %" PRIu64 " Vulkan validation messages (on stderr)\n",
                g_validation_messages.load());
    ++failed;
  }
  std::printf("%d passed, %d failed", passed, failed);
  if (skipped) std::printf(", %d skipped", skipped);
  std::printf("\n");
  int status = failed ? 1 : 0;
  if (!opt.junit.empty() && !WriteJunit(opt.junit, "kiln-test", results, device_name.c_str())) {
    std::fprintf(stderr, "error: cannot write %s\n", opt.junit.c_str());
    status = 2;
  }
  return status;
}
