// What the emitter asks of a resource value: the operand a result is tied to,
// the allocation it lives in, its byte size.
#include "compiler/backend/emitter.h"

namespace kiln::backend {

// Operand whose storage result `index` of `op` reuses (tied), or nullptr.
ir::Value* TiedOperand(ir::Operation* op, unsigned index) {
  if (op->is("stream.async.dispatch")) {
    std::vector<int64_t> tied = op->ints_attr("tied_operands");
    if (index < tied.size() && tied[index] >= 0 && tied[index] < op->num_operands())
      return op->operand(static_cast<unsigned>(tied[index]));
    return nullptr;
  }
  if (op->is("stream.async.update") || op->is("stream.async.copy") || op->is("stream.async.fill"))
    return op->operand(0);
  if (op->is("stream.async.slice")) return op->operand(0);  // a view (offset applied separately)
  return nullptr;
}

// The value whose allocation `v` lives in (through tied results and slices).
ir::Value* RootOf(ir::Value* v) {
  while (ir::Operation* def = v->defining_op()) {
    ir::Value* tied = TiedOperand(def, v->index());
    if (!tied) break;
    v = tied;
  }
  return v;
}

// Ops placed by --resource-lifetime (compiler/transforms/resource_lifetime.cc).
bool IsLifetimeOp(ir::Operation* op) {
  return op->is("stream.resource.dealloca") || op->is("stream.resource.retain") || op->is("stream.resource.release");
}
ir::Value* FunctionEmitter::TiedOperandOf(ir::Operation* op, unsigned index) {
  return op->is("stream.async.slice") ? nullptr : TiedOperand(op, index);
}
ir::Value* FunctionEmitter::RootOfValue(ir::Value* v) { return RootOf(v); }

namespace {

// Byte size of a block argument: the loop-carried value's init (scf.for,
// scf.while "before"), the forwarded value (scf.while "after"), or an
// incoming branch operand (a successor block of a function body).
int64_t BlockArgumentSize(ir::Value* v, int depth) {
  ir::Block* b = v->parent_block();
  ir::Operation* owner = b && b->parent() ? b->parent()->parent_op() : nullptr;
  if (!owner || depth > 32) return 0;
  unsigned i = v->index();
  if (owner->is("scf.for")) return i >= 1 && 3 + i - 1 < owner->num_operands() ? SizeOf(owner->operand(3 + i - 1), depth + 1) : 0;
  if (owner->is("scf.while")) {
    if (b == owner->region(0)->block(0)) return i < owner->num_operands() ? SizeOf(owner->operand(i), depth + 1) : 0;
    return i < owner->num_results() ? SizeOf(owner->result(i), depth + 1) : 0;
  }
  if (owner->is("func.func")) {
    for (auto& blk : owner->region(0)->blocks()) {
      ir::Operation* t = blk->terminator();
      if (!t) continue;
      // The first incoming edge whose size is known (a back edge may lead
      // around a cycle of block arguments).
      int64_t size = 0;
      if (t->is("cf.br") && t->num_successors() == 1 && t->successor(0) == b && i < t->num_operands())
        size = SizeOf(t->operand(i), depth + 1);
      if (t->is("cf.cond_br") && t->num_successors() == 2) {
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
  if (def->is("scf.index_switch")) {  // what the case regions yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y && v->index() < y->num_operands() ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is("scf.while")) {  // what the condition forwards
    ir::Operation* c = def->region(0)->block(0)->terminator();
    return c && 1 + v->index() < c->num_operands() ? SizeOf(c->operand(1 + v->index()), depth + 1) : 0;
  }
  if (def->is("stream.async.dispatch")) return def->ints_attr("sizes").at(v->index());
  if (def->is("scf.if")) {  // what the branches yield
    ir::Operation* y = def->region(0)->block(0)->terminator();
    return y ? SizeOf(y->operand(v->index()), depth + 1) : 0;
  }
  if (def->is("stream.async.slice")) return def->int_attr("length");
  if (def->is("scf.for")) return SizeOf(def->operand(3 + v->index()), depth + 1);  // the init
  if (def->is("func.call")) {  // sizes: [result bytes] (convert-to-stream)
    std::vector<int64_t> sizes = def->ints_attr("sizes");
    return v->index() < sizes.size() ? sizes[v->index()] : 0;
  }
  return def->int_attr("size");
}

}  // namespace kiln::backend
