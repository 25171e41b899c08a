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
// A view of a value another result copies whole shares that copy too
// (`return %t, slice(%t)`, %t an elided transfer of a borrowed argument:
// the non-elided build copies once at the transfer and returns the slice as
// a view of that buffer, the clones alone made one copy per result). The
// view's clone goes and its result becomes the same slice (offsets of a
// chain of slices added up) of the whole value's copy: one copy, both
// results views of it, whatever the caller supplies (the runtime copies a
// view into the output storage given for its result, as in the non-elided
// build). The whole value's copy is its first result's (not a
// `shared_result` one); it moves up to the view's clone when it comes later.
//
// Must not act: two values of one root neither of which is the other's
// whole (two slices of one argument: each result copies other bytes), a
// clone used by anything but its export, a value returned once.
//
// Before:
//   %k0 = "stream.async.clone"(%s) {size = 64 : i64}
//   %e0 = "stream.tensor.export"(%k0)
//   %k1 = "stream.async.clone"(%s) {size = 64 : i64}
//   %e1 = "stream.tensor.export"(%k1)
// After:
//   %k1 = "stream.async.clone"(%s) {shared_result = 0 : i64, size = 64 : i64}
// Before (a view of a value another result copies):
//   %v = "stream.async.slice"(%t) {offset = 32 : i64, length = 64 : i64}
//   %k0 = "stream.async.clone"(%t) {size = 256 : i64}
//   %e0 = "stream.tensor.export"(%k0)
//   %k1 = "stream.async.clone"(%v) {size = 64 : i64}
//   %e1 = "stream.tensor.export"(%k1)
// After:
//   %k0 = "stream.async.clone"(%t) {size = 256 : i64}
//   %e0 = "stream.tensor.export"(%k0)
//   %k1 = "stream.async.slice"(%k0) {offset = 32 : i64, length = 64 : i64}
//   %e1 = "stream.tensor.export"(%k1)
#include <map>
#include <string>

#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// The result copy behind `exp` (a result's definer): the stream.async.clone
// that only this export reads and no earlier decision shares, else null.
ir::Operation* ResultCopy(ir::Operation* exp) {
  if (!exp || !exp->is(OpCode::kStreamTensorExport) || exp->num_operands() != 1) return nullptr;
  ir::Operation* clone = exp->operand(0)->defining_op();
  if (!clone || !clone->is(OpCode::kStreamAsyncClone) || clone->num_operands() != 1 ||
      clone->result(0)->uses().size() != 1 || clone->has_attr("shared_result"))
    return nullptr;
  return clone;
}

void ShareResultCopies(ir::Operation* func, ir::PassContext& ctx) {
  for (auto& block : func->region(0)->blocks()) {
    ir::Operation* ret = block->terminator();
    if (!ret || !ret->is(OpCode::kFuncReturn)) continue;
    std::map<ir::Value*, unsigned> first_result;  // copied value -> the first result copying it
    for (unsigned k = 0; k < ret->num_operands(); ++k) {
      ir::Operation* exp = ret->operand(k)->defining_op();
      ir::Operation* clone = ResultCopy(exp);
      if (!clone) continue;
      auto [first, inserted] = first_result.emplace(clone->operand(0), k);
      if (inserted) continue;
      clone->set_attr("shared_result", ir::Attribute(static_cast<int64_t>(first->second)));
      ctx.Remark(exp, "shared result copy: result " + std::to_string(k) + " shares result " +
                          std::to_string(first->second) +
                          "'s copy unless the caller supplies output storage for one of them");
    }
    // Views of a value another result copies whole.
    for (unsigned k = 0; k < ret->num_operands(); ++k) {
      ir::Operation* exp = ret->operand(k)->defining_op();
      ir::Operation* clone = ResultCopy(exp);
      if (!clone) continue;
      // Follow the slices under the clone's source to a value a result copies.
      ir::Value* w = clone->operand(0);
      int64_t offset = 0;
      auto whole = first_result.end();
      while (w->defining_op() && w->defining_op()->is(OpCode::kStreamAsyncSlice)) {
        offset += w->defining_op()->int_attr("offset");
        w = w->defining_op()->operand(0);
        whole = first_result.find(w);
        if (whole != first_result.end()) break;
      }
      if (whole == first_result.end() || whole->second == k) continue;
      ir::Operation* copy = ret->operand(whole->second)->defining_op()->operand(0)->defining_op();
      const int64_t length = clone->int_attr("size", -1);
      if (length <= 0 || copy->parent_block() != clone->parent_block()) continue;
      // The whole copy must come first: it reads only the whole value, which
      // the view's chain of slices shows is defined before the view's clone.
      bool copy_first = false;
      for (ir::Operation* o = clone->prev_op(); o && !copy_first; o = o->prev_op()) copy_first = o == copy;
      if (!copy_first) copy->MoveBefore(clone);
      ir::Builder b = ir::Builder::Before(clone);
      b.set_loc(clone->loc());
      ir::Operation* view = b.Create("stream.async.slice", {copy->result(0)}, {clone->result(0)->type()},
                                     {{"offset", ir::Attribute(offset)}, {"length", ir::Attribute(length)}});
      exp->SetOperand(0, view->result(0));
      clone->Erase();
      ctx.Remark(exp, "result view: result " + std::to_string(k) + " is a view of result " +
                          std::to_string(whole->second) + "'s copy at byte " + std::to_string(offset) +
                          " (its own result copy is gone)");
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
