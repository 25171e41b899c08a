// kiln-bench --per-dispatch: the GPU time of every dispatch of an
// invocation, from timestamp queries written around each dispatch
// (hal/profiling/dispatch_timing_device.h), named by the module's debug info
// (EntryPoint.debug_name, Executable.source_locations: the ONNX nodes fused
// into the dispatch) with its multiply-accumulates (EntryPoint.macs).
//
// Rows are per entry point (a deduplicated executable that several dispatch
// sites share is one row with calls > 1). For each row, the time is the
// median over the profiled invocations of the summed time of its dispatches
// in one invocation; GMAC/s = MACs per invocation / that time. Totals: every
// dispatch, and the conv/matmul dispatches (MACs > 0) alone.
//
// Uses runtime internals (runtime/kiln_internal.h) to put the timing device
// under a kiln_device_t: profiling never touches the normal invoke path.
#ifndef KILN_TOOLS_DISPATCH_PROFILE_H_
#define KILN_TOOLS_DISPATCH_PROFILE_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::tools {

// Replaces `device`'s HAL device with a timing decorator. Call before any
// context or tensor is created on it. False with *error (e.g. "device 'X'
// cannot time dispatches: ... no timestamp queries") when the device cannot.
bool EnableDispatchTiming(kiln_device_t device, std::string* error);

// One profiled row (see the header comment).
struct DispatchProfileRow {
  int executable = -1;        // module executable index (-1: not from the module)
  uint32_t entry_point = 0;
  std::string name;           // EntryPoint.debug_name
  std::string nodes;          // source_locations of the entry point
  uint64_t macs = 0;          // per dispatch (EntryPoint.macs)
  double calls = 0;           // dispatches per invocation (mean)
  double median_ns = 0;       // per invocation, summed over its dispatches
  double gmacs() const { return median_ns > 0 ? macs * calls / median_ns : 0; }  // GMAC/s
};

struct DispatchProfile {
  std::vector<DispatchProfileRow> rows;  // sorted by median_ns, largest first
  int invokes = 0;
  double dispatches = 0;          // per invocation (mean)
  double total_ns = 0;            // median over invocations of all dispatch time
  double conv_matmul_ns = 0;      // same, dispatches with MACs > 0
  uint64_t conv_matmul_macs = 0;  // per invocation (mean)
  double conv_matmul_dispatches = 0;
  double invoke_wall_ns = 0;      // median wall-clock of a profiled kiln_invoke
};

// Profiles `invokes` (>= 1) synchronous invocations of `function` with
// `args` (the caller has done a warm-up invocation). `device` must have had
// EnableDispatchTiming before `context` was created; `module` is the
// context's (single) module. False with *error on failure.
bool ProfileDispatches(kiln_device_t device, kiln_module_t module, kiln_context_t context,
                       kiln_function_t function, const std::vector<kiln_tensor_t>& args,
                       size_t result_count, int invokes, DispatchProfile* out, std::string* error);

// Human-readable table + totals.
void PrintDispatchProfile(const DispatchProfile& profile, const std::string& title, FILE* out);
// Tab-separated, one header line then rows `kind ms calls macs gmac_s name nodes`:
// kind = dispatch (one per row), then all, conv_matmul (totals; calls =
// dispatches per invocation) and invoke (wall-clock of a profiled invoke).
void PrintDispatchProfileTsv(const DispatchProfile& profile, FILE* out);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_DISPATCH_PROFILE_H_
