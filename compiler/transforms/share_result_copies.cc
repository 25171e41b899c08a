// Pass: --share-result-copies (the allocated level; pipeline.cc
// AllocationPipeline, right after --materialize-result-copies; a copy
// elision, so `--no-elision` skips it)
//
// One value returned by several results (`return %s, %s`) needs one copy
// where the caller supplies no output storage: the results may share it,
// as they share any other buffer returned twice (the non-elided build of
// `%t = transfer(%x); %s = slice(%t)` copies once at the transfer and
// returns that buffer twice: differential seed 7812). Each result's clone
// of the value (--materialize-result-copies', or any clone that is only
// exported) stays; every one after the value's first carries
// `shared_result = k`, k the first result's index. --schedule-allocation
// then backs it with the caller's output storage for its result when
// supplied, and otherwise with the one buffer the group's results without
// output storage share, so its copy is made only when it writes storage
// nothing else holds (storage_plan.h, "output" with `first`). Copies at
// run time for n results of one value, s of them with output storage:
// s + 1 (s when s = n), where the clones alone make n.
//
// Must not act: two values of one root (two slices of one argument: each
// result copies other bytes), a clone used by anything but its export, a
// value returned once.
//
// Before:
//   %k0 = "stream.async.clone"(%s) {size = 64 : i64}
//   %e0 = "stream.tensor.export"(%k0)
//   %k1 = "stream.async.clone"(%s) {size = 64 : i64}
//   %e1 = "stream.tensor.export"(%k1)
// After:
//   %k1 = "stream.async.clone"(%s) {shared_result = 0 : i64, size = 64 : i64}
#include <map>
#include <string>

#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

void ShareResultCopies(ir::Operation* func, ir::PassContext& ctx) {
  for (auto& block : func->region(0)->blocks()) {
    ir::Operation* ret = block->terminator();
    if (!ret || !ret->is(OpCode::kFuncReturn)) continue;
    std::map<ir::Value*, unsigned> first_result;  // copied value -> the first result copying it
    for (unsigned k = 0; k < ret->num_operands(); ++k) {
      ir::Operation* exp = ret->operand(k)->defining_op();
      if (!exp || !exp->is(OpCode::kStreamTensorExport) || exp->num_operands() != 1) continue;
      ir::Operation* clone = exp->operand(0)->defining_op();
      if (!clone || !clone->is(OpCode::kStreamAsyncClone) || clone->num_operands() != 1 ||
          clone->result(0)->uses().size() != 1 || clone->has_attr("shared_result"))
        continue;
      auto [first, inserted] = first_result.emplace(clone->operand(0), k);
      if (inserted) continue;
      clone->set_attr("shared_result", ir::Attribute(static_cast<int64_t>(first->second)));
      ctx.Remark(exp, "shared result copy: result " + std::to_string(k) + " shares result " +
                          std::to_string(first->second) +
                          "'s copy unless the caller supplies output storage for one of them");
    }
  }
}

class ShareResultCopiesPass : public ir::Pass {
 public:
  const char* flag() const override { return "share-result-copies"; }
  const char* description() const override {
    return "Results of one value share one copy where the caller supplies no output storage";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions())
      if (!func->region(0)->empty()) ShareResultCopies(func, ctx);
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateShareResultCopiesPass() { return std::make_unique<ShareResultCopiesPass>(); }

}  // namespace kiln::transforms
