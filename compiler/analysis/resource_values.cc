// What passes and the backend ask of a resource value (resource_values.h).
#include "compiler/analysis/resource_values.h"

#include <vector>

#include "compiler/ir/op_traits.h"

namespace kiln::analysis {

using ir::OpCode;

// The operand whose allocation result `index` of `op` lives in: the operand
// it is tied to (ops.def Tie), or operand 0 of a stream-level view
// (stream.async.slice; the offset is applied separately); nullptr for a
// result with storage of its own.
ir::Value* AllocationSource(ir::Operation* op, unsigned index) {
  if (ir::Value* tied = TiedValue(op, index)) return tied;
  const ir::OpInfo& traits = ir::Traits(op);
  if (traits.level == ir::OpLevel::kStream && traits.storage == ir::ResultStorage::kView && op->num_operands() > 0)
    return op->operand(0);
  return nullptr;
}

// The operand result `index` of `op` is written in place into, or nullptr.
ir::Value* TiedValue(ir::Operation* op, unsigned index) {
  int tied = ir::TiedOperandIndex(*op, index);
  return tied < 0 ? nullptr : op->operand(static_cast<unsigned>(tied));
}

// The value whose allocation `v` lives in (through tied results and slices).
ir::Value* RootOf(ir::Value* v) {
  while (ir::Operation* def = v->defining_op()) {
    ir::Value* tied = AllocationSource(def, v->index());
    if (!tied) break;
    v = tied;
  }
  return v;
}

// Ops placed by --resource-lifetime (compiler/transforms/resource_lifetime.cc).
bool IsLifetimeOp(ir::Operation* op) { return ir::Traits(op).has(ir::kLifetime); }

namespace {

// Byte size of a block argument: the loop-carried value's init (scf.for,
// scf.while "before"), the forwarded value (scf.while "after"), or an
// incoming branch operand (a successor block of a function body).
int64_t BlockArgumentSize(ir::Value* v, int depth) {
  ir::Block* b = v->parent_block();
  ir::Operation* owner = b && b->parent() ? b->parent()->parent_op() : nullptr;
  if (!owner || depth > 32) return 0;
  unsigned i = v->index();
  if (owner->is(OpCode::kScfFor)) return i >= 1 && 3 + i - 1 < owner->num_operands() ? SizeOf(owner->operand(3 + i - 1), depth + 1) : 0;
  if (owner->is(OpCode::kScfWhile)) {
    if (b == owner->region(0)->block(0)) return i < owner->num_operands() ? SizeOf(owner->operand(i), depth + 1) : 0;
    return i < owner->num_results() ? SizeOf(owner->result(i), depth + 1) : 0;
  }
  if (owner->is(OpCode::kFuncFunc)) {
    for (auto& blk : owner->region(0)->blocks()) {
      ir::Operation* t = blk->terminator();
      if (!t) continue;
      // The first incoming edge whose size is known (a back edge may lead
      // around a cycle of block arguments).
      int64_t size = 0;
      if (t->is(OpCode::kCfBr) && t->num_successors() == 1 && t->successor(0) == b && i < t->num_operands())
        size = SizeOf(t->operand(i), depth + 1);
      if (t->is(OpCode::kCfCondBr) && t->num_successors() == 2) {
        std::vector<int64_t> seg = t->ints_attr("operand_segments");
        if (seg.size() != 3) continue;
        if (t->successor(0) == b && i < static_cast<unsigned>(seg[1])) size = SizeOf(t->operand(1 + i), depth + 1);
        if (!size && t->successor(1) == b && i < static_cast<unsigned>(seg[2]))
          size = SizeOf(t->operand(static_cast<unsigned>(1 + seg[1]) + i), depth + 1);
      }
      if (size > 0) return size;
    }
  }
  return 0;
}

}  // namespace

// Byte size of a resource value.
int64_t SizeOf(ir::Value* v, int depth) {
  ir::Operation* def = v->defining_op();
  if (!def) return v->is_block_argument() ? BlockArgumentSize(v, depth) : 0;
  if (depth > 32) return 0;
  if (def->is(OpCode::kScfIndexSwitch)) {  // what the case regions yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y && v->index() < y->num_operands() ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is(OpCode::kScfWhile)) {  // what the condition forwards
    ir::Operation* c = def->region(0)->block(0)->terminator();
    return c && 1 + v->index() < c->num_operands() ? SizeOf(c->operand(1 + v->index()), depth + 1) : 0;
  }
  if (def->is(OpCode::kStreamAsyncDispatch)) return def->ints_attr("sizes").at(v->index());
  if (def->is(OpCode::kScfIf)) {  // what the branches yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is(OpCode::kStreamAsyncSlice)) return def->int_attr("length");
  if (def->is(OpCode::kScfFor)) return SizeOf(def->operand(3 + v->index()), depth + 1);  // the init
  if (def->is(OpCode::kFuncCall)) {  // sizes: [result bytes] (convert-to-stream)
    std::vector<int64_t> sizes = def->ints_attr("sizes");
    return v->index() < sizes.size() ? sizes[v->index()] : 0;
  }
  return def->int_attr("size");
}

}  // namespace kiln::analysis
