// Command-sequence analysis: whether a function's device command sequence is
// fixed at compile time (issue 16 part 5, "recorded command buffers").
//
// A function whose commands (dispatches, copies, fills, barriers, with their
// workgroup counts, push constants and byte ranges) do not depend on values
// computed while it runs can have its command buffer recorded once per
// argument binding set and replayed by the runtime (vm/replay.h): only the
// buffers bound at the ABI (arguments, output storage, allocate_cached and
// take_or_allocate results) may differ from one invocation to the next, and
// the runtime compares those before it replays.
//
// Input: a func.func at the stream level (after the stream passes, before
// emission). The function is *static* unless it contains, anywhere in its
// body (nested regions included):
//   - stream.async.load: a device value read on the host (branch conditions,
//     trip counts, host arithmetic on device data: data-dependent control
//     flow, and a host wait in the middle of the invocation);
//   - func.call: a call runs another function's commands in their own
//     submissions (and may itself read device data);
// The emitter adds one condition it alone can see (compiler/backend): a
// result returned through a fresh per-invoke allocation (a borrowed argument,
// a constant or a global returned as a result is copied into a new buffer,
// which a recorded command buffer could not name).
//
// Before/after: the analysis changes no IR; kiln-compile writes its verdict
// into the module (Function.static_commands, schemas/kiln_module.fbs) and
// kiln-dump prints it ("commands: static" or "commands: recorded per
// invoke (REASON)").
#ifndef KILN_COMPILER_ANALYSIS_COMMAND_SEQUENCE_H_
#define KILN_COMPILER_ANALYSIS_COMMAND_SEQUENCE_H_

#include <string>

#include "compiler/ir/ir.h"

namespace kiln::analysis {

struct CommandSequence {
  bool is_static = true;
  // Why not (empty when static), e.g. "stream.async.load at cond (a host
  // read of device data)".
  std::string reason;
};

// Analyses `func` (a func.func; anything else is reported not static with a
// reason). Cost: one walk of the function.
CommandSequence AnalyzeCommandSequence(ir::Operation* func);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_COMMAND_SEQUENCE_H_
