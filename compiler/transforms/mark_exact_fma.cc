// Pass: --mark-exact-fma=state|all|none (after --fuse-workgroup-stages;
// kiln-compile --exact-fma, default state)
//
// Decides which dispatches must multiply-add with one rounding on every
// device, and marks them `exact_fma = true` (flow.dispatch attribute). The
// backend writes the choice per entry point (EntryPoint.exact_fma,
// schemas/kiln_module.fbs); the module's SPIR-V is the same either way.
//
// Why a choice. Every dot product is written with GLSL fma() (rounded once,
// as ONNX Runtime's MLAS kernels compute), and a GPU runs it as one fused
// instruction. A CPU driver (lavapipe) splits fma() into a multiply and an
// add, rounded twice; the runtime then splices an exact emulation into the
// shader at load (hal/vulkan/exact_fma_splice.h), which costs about 28% of
// PP-OCR cls's device instructions on lavapipe (78.3 M vs 56.6 M per
// invoke). Rounding twice adds at most half an ulp of each product to a sum
// whose own error bound is already a few ulps per term: every feed-forward
// model in this repository matches ONNX Runtime at its test tolerance with
// the split multiply-add (ModelGoldenTest, cls, det, rec, embedding,
// melspectrogram and the wake-word heads with KILN_EXACT_FMA=0). A model
// whose results are fed back as its next call's inputs is different: the
// error of each call is carried into the next and can grow over the calls.
// silero_vad's LSTM state drifts to 1.3e-4 off ONNX Runtime after 100 calls
// with split multiply-adds (SileroStreamTest fails), and stays on it with
// exact ones. So:
//   state (default): the dispatches a *carried state* result depends on are
//     exact. A carried state result is a result of an exported function that
//     has the type (shape and dtype) of one of the function's arguments and
//     depends on that argument: the recurrent state a caller passes back in
//     (silero_vad's state -> stateN, an LSTM's h/c -> hn/cn). Feed-forward
//     models get no exact dispatch and pay nothing.
//   all: every dispatch is exact (the behaviour before this pass).
//   none: no dispatch is.
// On a GPU the flag changes nothing: fma() is one instruction either way.
//
// The dependence walk is conservative: through every operand; an op with
// regions (scf.if / for / while) on the path puts every dispatch nested in it
// on the path with the values they read; a block argument of a nested block
// puts its parent op on the path; a func.call on the path makes every
// dispatch of the module exact.
//
// Errors: kInvalidArgument for an option other than state, all or none.
#include <set>
#include <string>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// Backward dependence closure over one function body.
class Slice {
 public:
  explicit Slice(ir::Operation* func) : entry_(func->region(0)->block(0)) {}

  void AddValue(ir::Value* v) {
    if (ir::Operation* def = v->defining_op()) {
      AddOp(def);
      return;
    }
    ir::Block* owner = v->parent_block();
    if (owner == entry_) {
      for (unsigned i = 0; i < entry_->num_arguments(); ++i)
        if (entry_->argument(i) == v) arguments_.insert(i);
      return;
    }
    if (owner && owner->parent_op()) AddOp(owner->parent_op());
  }

  void AddOp(ir::Operation* op) {
    if (!ops_.insert(op).second) return;
    if (op->is(ir::OpCode::kFuncCall)) calls_ = true;
    if (op->is(ir::OpCode::kFlowDispatch)) dispatches_.insert(op);
    for (ir::Value* v : op->operands()) AddValue(v);
    if (op->is(ir::OpCode::kFlowDispatch)) return;  // its region reads only its operands
    // The enclosing op of a nested value, for values of nested blocks.
    if (ir::Block* b = op->parent_block(); b && b != entry_ && b->parent_op()) AddOp(b->parent_op());
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& block : op->region(r)->blocks())
        for (auto& nested : block->ops()) AddOp(nested.get());
  }

  const std::set<unsigned>& arguments() const { return arguments_; }
  const std::set<ir::Operation*>& dispatches() const { return dispatches_; }
  bool calls() const { return calls_; }

 private:
  ir::Block* entry_;
  std::set<ir::Operation*> ops_;
  std::set<ir::Operation*> dispatches_;
  std::set<unsigned> arguments_;
  bool calls_ = false;
};

void MarkAll(ir::Block* block) {
  for (auto& op : block->ops()) {
    if (op->is(ir::OpCode::kFlowDispatch)) {
      op->set_attr("exact_fma", ir::Attribute(true));
      continue;
    }
    for (unsigned r = 0; r < op->num_regions(); ++r)
      for (auto& b : op->region(r)->blocks()) MarkAll(b.get());
  }
}

class MarkExactFmaPass : public ir::Pass {
 public:
  explicit MarkExactFmaPass(std::string policy) : policy_(std::move(policy)) {}
  const char* flag() const override { return "mark-exact-fma"; }
  const char* description() const override {
    return "Mark the dispatches that must multiply-add with one rounding (carried state)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    if (policy_ != "state" && policy_ != "all" && policy_ != "none")
      return InvalidArgumentError("mark-exact-fma: bad option '%s' (want state, all or none)", policy_.c_str());
    if (policy_ == "none") return OkStatus();
    bool all = policy_ == "all";
    std::vector<ir::Operation*> marked;
    for (ir::Operation* func : module.functions()) {
      if (all || func->num_regions() == 0 || func->region(0)->empty()) continue;
      if (func->str_attr("sym_visibility") == "private") continue;
      ir::Block* entry = func->region(0)->block(0);
      ir::Operation* ret = entry->terminator();
      if (!ret) continue;
      for (ir::Value* result : ret->operands()) {
        Slice slice(func);
        slice.AddValue(result);
        bool state = false;
        for (unsigned a : slice.arguments()) state = state || entry->argument(a)->type() == result->type();
        if (!state) continue;
        ctx.Remark(func, "exact fma: result of type " + result->type().ToString() +
                             " is carried state (depends on an argument of its type)");
        if (slice.calls()) all = true;
        marked.insert(marked.end(), slice.dispatches().begin(), slice.dispatches().end());
      }
    }
    if (all) {
      for (ir::Operation* func : module.functions())
        if (func->num_regions() != 0)
          for (auto& b : func->region(0)->blocks()) MarkAll(b.get());
      return OkStatus();
    }
    for (ir::Operation* d : marked) d->set_attr("exact_fma", ir::Attribute(true));
    return OkStatus();
  }

 private:
  std::string policy_;
};

}  // namespace

std::unique_ptr<ir::Pass> CreateMarkExactFmaPass(const std::string& policy) {
  return std::make_unique<MarkExactFmaPass>(policy);
}

}  // namespace kiln::transforms
