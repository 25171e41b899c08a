#include "tools/dispatch_profile.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "hal/profiling/dispatch_timing_device.h"
#include "runtime/kiln_internal.h"
#include "kiln_module_generated.h"

namespace kiln::tools {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string Clean(std::string s) {  // one TSV field
  for (char& c : s)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return s;
}

bool Ok(kiln_status_t status, const char* what, std::string* error) {
  if (!status) return true;
  *error = std::string(what) + ": " + kiln_status_code_name(kiln_status_code(status)) + ": " +
           kiln_status_message(status);
  kiln_status_free(status);
  return false;
}

}  // namespace

bool EnableDispatchTiming(kiln_device_t device, std::string* error) {
  if (!device) {
    *error = "EnableDispatchTiming: no device";
    return false;
  }
  auto timing = hal::DispatchTimingDevice::Create(device->device);
  if (!timing.ok()) {
    *error = "--per-dispatch: " + timing.status().ToString();
    return false;
  }
  device->device = std::move(timing).value();
  return true;
}

bool ProfileDispatches(kiln_device_t device, kiln_module_t module, kiln_context_t context,
                       kiln_function_t function, const std::vector<kiln_tensor_t>& args,
                       size_t result_count, int invokes, DispatchProfile* out, std::string* error) {
  // Only a device wrapped by EnableDispatchTiming gets here (kiln-bench).
  auto* timing = static_cast<hal::DispatchTimingDevice*>(device->device.get());
  const format::Module* def = module->module->def();
  const auto* exes = def->executables();
  // Executable* -> module executable index, through the SPIR-V pointer the
  // context created it from (it points into the module's FlatBuffer: the
  // executable's `spirv`, or its `spirv_f16` on a device with shaderFloat16).
  std::map<const hal::Executable*, int> index_of;
  for (const hal::CreatedExecutable& c : timing->created_executables()) {
    for (flatbuffers::uoffset_t i = 0; exes && i < exes->size(); ++i) {
      const format::Executable* exe = exes->Get(i);
      if ((exe->spirv() && exe->spirv()->data() == c.spirv) ||
          (exe->spirv_f16() && exe->spirv_f16()->data() == c.spirv)) {
        index_of[c.executable] = static_cast<int>(i);
      }
    }
  }
  std::vector<hal::DispatchTiming> timings;
  if (kiln::Status s = timing->Collect(&timings); !s.ok()) {  // initializer + warm-up
    *error = "collecting timestamps: " + s.ToString();
    return false;
  }
  using Key = std::pair<int, uint32_t>;  // (executable, entry point)
  std::map<Key, std::vector<double>> per_key_ns;  // one value per invocation
  std::map<Key, double> per_key_calls;
  std::vector<double> total_ns, conv_ns, wall_ns;
  double dispatches = 0, conv_dispatches = 0;
  uint64_t conv_macs_sum = 0;  // over all invocations
  std::vector<kiln_tensor_t> results(result_count, nullptr);
  auto macs_of = [&](const Key& k) -> uint64_t {
    if (k.first < 0) return 0;
    const auto* eps = exes->Get(k.first)->entry_points();
    return eps && k.second < eps->size() ? eps->Get(k.second)->macs() : 0;
  };
  for (int n = 0; n < invokes; ++n) {
    auto start = std::chrono::steady_clock::now();
    kiln_status_t st = kiln_invoke(context, function, args.data(), args.size(), results.data(),
                                   results.size());
    wall_ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
    for (kiln_tensor_t& t : results) {
      kiln_tensor_release(t);
      t = nullptr;
    }
    if (!Ok(st, "kiln_invoke", error)) return false;
    timings.clear();
    if (kiln::Status s = timing->Collect(&timings); !s.ok()) {
      *error = "collecting timestamps: " + s.ToString();
      return false;
    }
    std::map<Key, double> ns;
    double all = 0, conv = 0;
    uint64_t conv_macs = 0;
    for (const hal::DispatchTiming& t : timings) {
      auto it = index_of.find(t.executable.get());
      Key k{it == index_of.end() ? -1 : it->second, t.entry_point};
      ns[k] += t.ns;
      per_key_calls[k] += 1;
      all += t.ns;
      if (uint64_t m = macs_of(k)) {
        conv += t.ns;
        conv_macs += m;
        conv_dispatches += 1;
      }
    }
    for (const auto& [k, v] : per_key_ns) {
      if (!ns.count(k)) ns[k] = 0;  // a key absent from this invocation
    }
    for (const auto& [k, v] : ns) {
      std::vector<double>& samples = per_key_ns[k];
      samples.resize(static_cast<size_t>(n), 0.0);  // absent from earlier invocations
      samples.push_back(v);
    }
    dispatches += static_cast<double>(timings.size());
    total_ns.push_back(all);
    conv_ns.push_back(conv);
    conv_macs_sum += conv_macs;
  }
  DispatchProfile p;
  p.invokes = invokes;
  p.dispatches = dispatches / invokes;
  p.conv_matmul_dispatches = conv_dispatches / invokes;
  p.total_ns = Median(total_ns);
  p.conv_matmul_ns = Median(conv_ns);
  p.conv_matmul_macs = conv_macs_sum / static_cast<uint64_t>(invokes);
  p.invoke_wall_ns = Median(wall_ns);
  for (const auto& [k, samples] : per_key_ns) {
    DispatchProfileRow r;
    r.executable = k.first;
    r.entry_point = k.second;
    r.calls = per_key_calls[k] / invokes;
    r.median_ns = Median(samples);
    r.macs = macs_of(k);
    if (k.first >= 0) {
      const format::Executable* e = exes->Get(k.first);
      if (e->entry_points() && k.second < e->entry_points()->size() &&
          e->entry_points()->Get(k.second)->debug_name()) {
        r.name = e->entry_points()->Get(k.second)->debug_name()->str();
      }
      if (e->source_locations() && k.second < e->source_locations()->size()) {
        r.nodes = e->source_locations()->Get(k.second)->str();
      }
    }
    if (r.name.empty()) r.name = "executable" + std::to_string(k.first) + ":" + std::to_string(k.second);
    p.rows.push_back(std::move(r));
  }
  std::stable_sort(p.rows.begin(), p.rows.end(),
                   [](const DispatchProfileRow& a, const DispatchProfileRow& b) {
                     return a.median_ns > b.median_ns;
                   });
  *out = std::move(p);
  return true;
}

void PrintDispatchProfile(const DispatchProfile& p, const std::string& title, FILE* out) {
  std::fprintf(out, "%s\n", title.c_str());
  std::fprintf(out, "%4s %10s %6s %6s %10s %8s  %s\n", "#", "time_ms", "%", "calls", "MMAC",
               "GMAC/s", "dispatch  [ONNX nodes]");
  int rank = 0;
  for (const DispatchProfileRow& r : p.rows) {
    double pct = p.total_ns > 0 ? 100.0 * r.median_ns / p.total_ns : 0;
    char macs[32] = "-", gm[32] = "-";
    if (r.macs) {
      std::snprintf(macs, sizeof(macs), "%.4f", r.macs * r.calls / 1e6);
      std::snprintf(gm, sizeof(gm), "%.2f", r.gmacs());
    }
    std::fprintf(out, "%4d %10.4f %5.1f%% %6.4g %10s %8s  %s  [%s]\n", ++rank, r.median_ns / 1e6,
                 pct, r.calls, macs, gm, r.name.c_str(), r.nodes.c_str());
  }
  std::fprintf(out, "totals over %d invocations (medians):\n", p.invokes);
  std::fprintf(out, "  dispatches        %.4g per invoke, GPU time %.4f ms\n", p.dispatches,
               p.total_ns / 1e6);
  double gmacs = p.conv_matmul_ns > 0 ? p.conv_matmul_macs / p.conv_matmul_ns : 0;
  std::fprintf(out,
               "  conv/matmul       %.4g dispatches, %.4f ms (%.1f%%), %.4g MMAC, %.3f GMAC/s\n",
               p.conv_matmul_dispatches, p.conv_matmul_ns / 1e6,
               p.total_ns > 0 ? 100.0 * p.conv_matmul_ns / p.total_ns : 0.0,
               p.conv_matmul_macs / 1e6, gmacs);
  std::fprintf(out, "  invoke wall-clock %.4f ms (profiled: includes the timestamp writes)\n",
               p.invoke_wall_ns / 1e6);
}

void PrintDispatchProfileTsv(const DispatchProfile& p, FILE* out) {
  std::fprintf(out, "kind\tms\tcalls\tmacs\tgmac_s\tname\tnodes\n");
  for (const DispatchProfileRow& r : p.rows) {
    std::fprintf(out, "dispatch\t%.6f\t%g\t%llu\t%.4f\t%s\t%s\n", r.median_ns / 1e6, r.calls,
                 static_cast<unsigned long long>(r.macs * r.calls + 0.5), r.gmacs(),
                 Clean(r.name).c_str(), Clean(r.nodes).c_str());
  }
  double all_macs = 0;
  for (const DispatchProfileRow& r : p.rows) all_macs += r.macs * r.calls;
  std::fprintf(out, "all\t%.6f\t%g\t%.0f\t%.4f\t-\t-\n", p.total_ns / 1e6, p.dispatches, all_macs,
               p.total_ns > 0 ? all_macs / p.total_ns : 0.0);
  std::fprintf(out, "conv_matmul\t%.6f\t%g\t%llu\t%.4f\t-\t-\n", p.conv_matmul_ns / 1e6,
               p.conv_matmul_dispatches, static_cast<unsigned long long>(p.conv_matmul_macs),
               p.conv_matmul_ns > 0 ? p.conv_matmul_macs / p.conv_matmul_ns : 0.0);
  std::fprintf(out, "invoke\t%.6f\t1\t0\t0\t-\t-\n", p.invoke_wall_ns / 1e6);
}

}  // namespace kiln::tools
