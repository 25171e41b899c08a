// Pass: --materialize-result-copies (the allocated level; pipeline.cc
// AllocationPipeline, before --schedule-allocation)
//
// A function result must be storage the caller owns, fresh per invoke: the
// constant pool is shared and immutable, a global changes on the next call,
// and a borrowed argument is the caller's own buffer (a caller in another
// module plans its call results apart from its operands). A returned value
// that lives in one of those (its allocation root, through slices and tied
// updates, is a stream.async.constant, a util.global.load that is not a
// snapshot (global_snapshots.h), or a stream.tensor.import without
// `consume`) is cloned right before its stream.tensor.export. The clone is a
// fresh allocation that escapes, so --schedule-allocation gives it the
// caller's output storage for that result (or a cached slot): the runtime
// copy is the IR's, and in steady state it allocates nothing. (The backend
// used to allocate a buffer per invoke for it and copy without an IR op.)
//
// Must not act: a value with storage of its own (a dispatch result, a
// global snapshot), a consumed argument (ownership goes back to the
// caller), host values.
//
// One value returned by several results gets one clone per result here;
// --share-result-copies (next in the pipeline) lets them share one copy.
//
// Before:
//   %c = "stream.async.constant"() {size = 16 : i64, value = ...}
//   %e = "stream.tensor.export"(%c) {size = 16 : i64}
// After:
//   %k = "stream.async.clone"(%c) {size = 16 : i64} : (...) -> !stream.resource<external>
//   %e = "stream.tensor.export"(%k) {size = 16 : i64}
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/global_snapshots.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// Why a result living where `root` lives must be copied; nullptr when it
// need not be.
const char* ReasonToCopy(ir::Value* root, const std::set<ir::Value*>& snapshots) {
  ir::Operation* def = root->is_block_argument() ? nullptr : root->defining_op();
  if (!def) return nullptr;
  if (def->is(OpCode::kStreamAsyncConstant)) return "the constant pool is shared and immutable";
  if (def->is(OpCode::kUtilGlobalLoad) && !snapshots.count(root)) return "a global changes on the next call";
  if (def->is(OpCode::kStreamTensorImport) && !def->bool_attr("consume"))
    return "a borrowed argument is the caller's storage";
  return nullptr;
}

int CopyResults(ir::Operation* func, ir::PassContext& ctx) {
  std::set<ir::Value*> snapshots = GlobalSnapshots(func);
  int copies = 0;
  for (auto& block : func->region(0)->blocks()) {
    ir::Operation* ret = block->terminator();
    if (!ret || !ret->is(OpCode::kFuncReturn)) continue;
    for (ir::Value* r : ret->operands()) {
      ir::Operation* exp = r->defining_op();
      if (!exp || !exp->is(OpCode::kStreamTensorExport) || exp->num_operands() != 1) continue;
      ir::Value* v = exp->operand(0);
      const char* why = ReasonToCopy(analysis::RootOf(v), snapshots);
      if (!why) continue;
      int64_t size = analysis::SizeOf(v);
      if (size == 0) size = exp->int_attr("size");  // a global's load before schedule-allocation sizes it
      ir::Builder b = ir::Builder::Before(exp);
      b.set_loc(exp->loc());
      ir::Operation* clone = b.Create("stream.async.clone", {v}, {ir::Type::Resource(ir::Lifetime::kExternal)},
                                      {{"size", ir::Attribute(size)}});
      exp->SetOperand(0, clone->result(0));
      ctx.Remark(exp, std::string("result copy: ") + why);
      ++copies;
    }
  }
  return copies;
}

class MaterializeResultCopiesPass : public ir::Pass {
 public:
  const char* flag() const override { return "materialize-result-copies"; }
  const char* description() const override {
    return "Clone results that live in the constant pool, a global or a borrowed argument before they are returned";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions())
      if (!func->region(0)->empty()) CopyResults(func, ctx);
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateMaterializeResultCopiesPass() {
  return std::make_unique<MaterializeResultCopiesPass>();
}

}  // namespace kiln::transforms
