// Pass: --elide-dead-writes
//
// Removes an in-place subrange write whose bytes are overwritten before
// anything reads them: a stream.async.update / copy / fill W1 whose result's
// only use is the target (operand 0) of a next update / copy / fill W2 that
// writes a byte range covering W1's range. Nothing can observe W1's bytes,
// so W2 writes W1's target directly and W1 is erased (its source operands
// lose a use, which may let other elisions act). Chains collapse: three
// updates of one range keep only the last. This is dead-store elimination
// on resources, as IREE's elide-async-copies does for updates
// (updateElisionNoRead, updateElided_chainedSameRegion,
// updateElided_followedByCopyToSameRegion).
//
// Ranges (bytes): update [offset, offset + length), fill [offset, offset +
// length), copy [dst_offset, dst_offset + length).
//
// Must not act (each tested):
//  - W1's result has another use (a read, a yield, an export, a lifetime op);
//  - W2 writes only part of W1's range (the rest stays observable), or a
//    disjoint range;
//  - W2 is not an update/copy/fill (a tied dispatch may read what it
//    writes; its written range is not an attribute);
//  - W2 is in another block or region (it may not run, or run more often).
//
// Preconditions: stream level, after --elide-async-copies (in-place writes
// are final). Runs before --resource-lifetime (no lifetime ops yet; a use by
// one counts as a read and the pass does not act).
//
// Before:
//   %u = "stream.async.update"(%t, %a) {offset = 0 : i64, length = 16 : i64, size = 64 : i64}
//   %v = "stream.async.update"(%u, %b) {offset = 0 : i64, length = 16 : i64, size = 64 : i64}
// After:
//   %v = "stream.async.update"(%t, %b) {offset = 0 : i64, length = 16 : i64, size = 64 : i64}
#include <vector>

#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// The byte range `op` writes into its target (operand 0), or false when op
// is not a subrange write with known attributes. The subrange writes are the
// ops whose effects (ops.def Writes) are operand 0 only: update, fill and
// copy; copy names its range `dst_offset`, the others `offset`.
bool WrittenRange(const ir::Operation* op, int64_t* begin, int64_t* end) {
  if (ir::Traits(op).writes != ir::OperandSet::kFirst) return false;
  const int64_t offset = op->int_attr(op->is(ir::OpCode::kStreamAsyncCopy) ? "dst_offset" : "offset", -1);
  const int64_t length = op->int_attr("length", -1);
  if (offset < 0 || length < 0 || op->num_operands() < 1 || op->num_results() != 1) return false;
  *begin = offset;
  *end = offset + length;
  return true;
}

class ElideDeadWritesPass : public ir::Pass {
 public:
  const char* flag() const override { return "elide-dead-writes"; }
  const char* description() const override {
    return "Remove in-place update/copy/fill writes whose bytes a later write overwrites before any read";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Operation*> writes;
      func->Walk([&](ir::Operation* op) {
        int64_t b, e;
        if (WrittenRange(op, &b, &e)) writes.push_back(op);
      });
      for (ir::Operation* w1 : writes) {
        int64_t b1, e1, b2, e2;
        if (!WrittenRange(w1, &b1, &e1)) continue;
        ir::Value* r = w1->result(0);
        if (r->uses().size() != 1) continue;
        const ir::Use& use = r->uses()[0];
        ir::Operation* w2 = use.user;
        if (use.operand_index != 0 || w2->parent_block() != w1->parent_block()) continue;
        if (!WrittenRange(w2, &b2, &e2) || b2 > b1 || e2 < e1) continue;
        if (w1->operand(0)->type() != r->type()) continue;  // keep the target's type
        ctx.Remark(w1, "write elided: '" + w2->name() + "' overwrites its bytes before any read");
        r->ReplaceAllUsesWith(w1->operand(0));
        w1->Erase();
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateElideDeadWritesPass() { return std::make_unique<ElideDeadWritesPass>(); }

}  // namespace kiln::transforms
