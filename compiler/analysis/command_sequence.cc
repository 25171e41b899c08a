#include "compiler/analysis/command_sequence.h"

namespace kiln::analysis {

using ir::OpCode;

CommandSequence AnalyzeCommandSequence(ir::Operation* func) {
  CommandSequence out;
  if (!func || !func->is(OpCode::kFuncFunc) || func->num_regions() != 1) {
    out.is_static = false;
    out.reason = "not a func.func with a body";
    return out;
  }
  func->Walk([&](ir::Operation* op) {
    if (!out.is_static) return;
    const char* why = nullptr;
    if (op->is(OpCode::kStreamAsyncLoad)) {
      why = "a host read of device data";
    } else if (op->is(OpCode::kFuncCall)) {
      why = "a call runs its own submissions";
    }
    if (!why) return;
    out.is_static = false;
    out.reason = op->name() + (op->loc().empty() ? "" : " at " + op->loc()) + " (" + why + ")";
  });
  return out;
}

}  // namespace kiln::analysis
