#include "compiler/analysis/command_sequence.h"

namespace kiln::analysis {

CommandSequence AnalyzeCommandSequence(ir::Operation* func) {
  CommandSequence out;
  if (!func || !func->is("func.func") || func->num_regions() != 1) {
    out.is_static = false;
    out.reason = "not a func.func with a body";
    return out;
  }
  func->Walk([&](ir::Operation* op) {
    if (!out.is_static) return;
    const char* why = nullptr;
    if (op->is("stream.async.load")) {
      why = "a host read of device data";
    } else if (op->is("func.call")) {
      why = "a call runs its own submissions";
    }
    if (!why) return;
    out.is_static = false;
    out.reason = op->name() + (op->loc().empty() ? "" : " at " + op->loc()) + " (" + why + ")";
  });
  return out;
}

}  // namespace kiln::analysis
