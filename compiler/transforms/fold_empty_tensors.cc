// Pass: --fold-empty-tensors
//
// Replaces every tensor-level op whose results all have zero elements (a
// static dimension of 0: a MatMul with M = 0, an input given
// --input-shape=x=0x4) by an empty tensor.constant of the result type. An
// empty tensor has no bytes to compute, so it needs no dispatch, and
// codegen never sees a zero-sized grid (it divided by zero on M*N = 0).
// The op's operands lose a use (a producer left without uses is dead and
// not emitted); a constant made here that ends up unused is erased.
//
// Must not act (each tested):
//  - an op with a result of at least one element (an empty operand may
//    still give a non-empty result: a concat with an empty operand);
//  - a result of unknown size (a dimension < 0);
//  - non-tensor ops (control flow, globals, func.return).
//
// Preconditions: tensor level, before --fuse-dispatch-regions.
//
// Before:
//   %y = "tensor.matmul"(%a, %b) : (tensor<0x4xf32>, tensor<4x3xf32>) -> tensor<0x3xf32>
// After:
//   %y = "tensor.constant"() {value = dense<[]> : tensor<0x3xf32>} : () -> tensor<0x3xf32>
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

bool IsEmpty(const ir::Type& t) {
  if (!t.is_tensor()) return false;
  bool zero = false;
  for (int64_t d : t.shape) {
    if (d < 0) return false;
    zero = zero || d == 0;
  }
  return zero;
}

class FoldEmptyTensorsPass : public ir::Pass {
 public:
  const char* flag() const override { return "fold-empty-tensors"; }
  const char* description() const override {
    return "Replace tensor ops whose results have zero elements by empty constants (no dispatch)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Operation*> empty;
      func->Walk([&](ir::Operation* op) {
        if (ir::Traits(op).level != ir::OpLevel::kTensor || op->is(ir::OpCode::kTensorConstant) ||
            op->num_results() == 0)
          return;
        if (op->num_regions() != 0) return;
        for (ir::Value* r : op->results())
          if (!IsEmpty(r->type())) return;
        empty.push_back(op);
      });
      std::vector<ir::Operation*> made;
      for (ir::Operation* op : empty) {
        ir::Builder b = ir::Builder::Before(op);
        b.set_loc(op->loc());
        for (ir::Value* r : op->results()) {
          ir::Operation* c = b.Create("tensor.constant", {}, {r->type()},
                                      {{"value", ir::Attribute(ir::MakeDense(r->type(), {}))}});
          r->ReplaceAllUsesWith(c->result(0));
          made.push_back(c);
        }
        ctx.Remark(op, "'" + op->name() + "' has an empty result: folded to an empty constant");
        op->Erase();
      }
      // A folded op whose users were folded too leaves its constant unused.
      for (ir::Operation* c : made)
        if (c->result(0)->use_empty()) c->Erase();
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateFoldEmptyTensorsPass() { return std::make_unique<FoldEmptyTensorsPass>(); }

}  // namespace kiln::transforms
