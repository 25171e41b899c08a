// Pass: --fold-zero-trip-loops
//
// An scf.for whose bounds are constants with lower >= upper (and a
// positive constant step) runs no trip: its results are its initial values.
// The loop is erased and each result replaced by its initial operand, at
// any level (tensor or stream). Without this, copy elision's rule of
// copying a loop's initial value once before the loop (instead of once per
// trip) made a zero-trip loop cost one copy where the loop itself costs
// none; folding the loop first removes the copy and the loop.
//
// Runs first in the pipeline, with or without elision (it removes no copy
// the program needs: the loop body never runs).
//
// Must not act (each tested): bounds that are not constants (block
// arguments, host values read from the device); a loop with at least one
// trip; a step that is not a positive constant.
//
// Before:
//   %lb = "arith.constant"() {value = 0 : i64} : () -> index
//   %r = "scf.for"(%lb, %lb, %one, %x) ({ ... }) : (index, index, index, T) -> T
//   ... use %r
// After:
//   ... use %x
#include <vector>

#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

bool ConstantIndex(ir::Value* v, int64_t* out) {
  ir::Operation* def = v->is_block_argument() ? nullptr : v->defining_op();
  if (!def || !def->is(OpCode::kArithConstant) || !def->has_attr("value")) return false;
  *out = def->int_attr("value");
  return true;
}

bool RunsNoTrip(ir::Operation* loop) {
  int64_t lb, ub, step;
  if (loop->num_operands() < 3 || !ConstantIndex(loop->operand(0), &lb) || !ConstantIndex(loop->operand(1), &ub) ||
      !ConstantIndex(loop->operand(2), &step))
    return false;
  return step > 0 && lb >= ub;
}

class FoldZeroTripLoopsPass : public ir::Pass {
 public:
  const char* flag() const override { return "fold-zero-trip-loops"; }
  const char* description() const override {
    return "Replace an scf.for with constant bounds that runs no trip by its initial values";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Operation*> loops;
      func->Walk([&](ir::Operation* op) {
        if (op->is(OpCode::kScfFor) && RunsNoTrip(op)) loops.push_back(op);
      });
      // Outer loops first: an inner loop of an erased loop goes with it.
      std::vector<ir::Operation*> erased;
      for (ir::Operation* loop : loops) {
        bool inside_erased = false;
        for (ir::Operation* p = loop->parent_op(); p; p = p->parent_op())
          for (ir::Operation* e : erased) inside_erased = inside_erased || p == e;
        if (inside_erased) continue;
        if (loop->num_results() + 3 != loop->num_operands()) continue;
        for (unsigned i = 0; i < loop->num_results(); ++i) loop->result(i)->ReplaceAllUsesWith(loop->operand(3 + i));
        ctx.Remark(loop, "folded a loop that runs no trip");
        erased.push_back(loop);
      }
      for (auto it = erased.rbegin(); it != erased.rend(); ++it) (*it)->Erase();
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateFoldZeroTripLoopsPass() { return std::make_unique<FoldZeroTripLoopsPass>(); }

}  // namespace kiln::transforms
