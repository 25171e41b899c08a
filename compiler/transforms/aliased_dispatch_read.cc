// The aliased in-place read rule of --elide-async-copies (header comment).
#include "compiler/transforms/aliased_dispatch_read.h"

#include <string>
#include <vector>

#include "compiler/ir/op_traits.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// The value whose bytes `v` names from its first byte on, following
// full-size views: await results (to the awaited operand) and slices at
// offset 0 of `size` bytes (to their source). Stops at anything else.
ir::Value* FullViewRoot(ir::Value* v, int64_t size) {
  for (int depth = 0; v && depth < 64; ++depth) {
    ir::Operation* def = v->defining_op();
    if (!def) return v;
    if (def->is(OpCode::kStreamTimepointAwait) && v->index() + 1 < def->num_operands()) {
      v = def->operand(v->index() + 1);
    } else if (def->is(OpCode::kStreamAsyncSlice) && def->num_operands() == 1 && def->int_attr("offset", -1) == 0 &&
               def->int_attr("length", -1) == size) {
      v = def->operand(0);
    } else {
      return v;
    }
  }
  return v;
}

// The flow.dispatch body of the flow.executable `dispatch` names, when its
// operands are the executable's arguments in order; nullptr otherwise.
ir::Operation* DispatchBody(const ir::Operation* dispatch) {
  const ir::Attribute* a = dispatch->attr("entry");
  const ir::SymbolRef* entry = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  const ir::Operation* top = dispatch;
  while (top->parent_op()) top = top->parent_op();
  ir::Block* module = top->parent_block();
  if (!entry || !module) return nullptr;
  for (const auto& o : module->ops()) {
    if (!o->is(OpCode::kFlowExecutable) || o->str_attr("sym_name") != entry->name) continue;
    if (o->num_regions() != 1 || o->region(0)->empty()) return nullptr;
    ir::Block* exe = o->region(0)->block(0);
    if (exe->empty()) return nullptr;
    ir::Operation* body = exe->ops().front().get();
    if (!body->is(OpCode::kFlowDispatch) || body->num_regions() != 1 || body->region(0)->empty() ||
        body->num_operands() != exe->num_arguments() ||
        body->region(0)->block(0)->num_arguments() != body->num_operands())
      return nullptr;
    for (unsigned i = 0; i < body->num_operands(); ++i)
      if (body->operand(i) != exe->argument(i)) return nullptr;
    return body;
  }
  return nullptr;
}

// "" when `body` (a flow.dispatch) reads its block
// arguments `args` only at the index it writes (header, condition 3);
// otherwise why not.
std::string ElementwiseAtOneIndex(ir::Operation* body, const std::vector<unsigned>& args) {
  ir::Block* block = body->region(0)->block(0);
  if (body->num_results() != 1) return "it has " + std::to_string(body->num_results()) + " results";
  const ir::Type& out = body->result(0)->type();
  if (!out.is_tensor()) return "its result is not a tensor";
  for (unsigned i : args) {
    const ir::Type& t = block->argument(i)->type();
    if (!t.is_tensor() || t.shape != out.shape || DTypeSize(t.dtype) != DTypeSize(out.dtype))
      return "operand " + std::to_string(i) + " (" + t.ToString() + ") is not laid out like the result (" +
             out.ToString() + ")";
  }
  for (const auto& owned : block->ops()) {
    const ir::Operation* op = owned.get();
    if (op == block->terminator()) continue;
    if (!ir::Traits(op).is_elementwise() || op->num_results() != 1)
      return "'" + op->name() + "' is not elementwise";
    if (op->result(0)->type().shape != out.shape)
      return "'" + op->name() + "' computes " + op->result(0)->type().ToString() + ", not the result's shape";
  }
  return "";
}

}  // namespace

analysis::Verdict AliasedDispatchReadVerdict(ir::Operation* clone, const analysis::Verdict& general) {
  if (general.ok || clone->num_operands() != 1 || clone->num_results() != 1) return general;
  ir::Value* src = clone->operand(0);
  ir::Value* copy = clone->result(0);
  const int64_t size = clone->int_attr("size", -1);
  // 1. The copy's one use: the tied operand of a one-result dispatch.
  if (copy->uses().size() != 1 || size < 0) return general;
  ir::Operation* d = copy->uses()[0].user;
  const unsigned k = copy->uses()[0].operand_index;
  if (!d->is(OpCode::kStreamAsyncDispatch)) return general;
  bool tied = false;
  for (unsigned r = 0; r < d->num_results(); ++r) tied |= analysis::TiedOperandOfResult(d, r) == static_cast<int>(k);
  if (!tied) return general;
  // 2. Operands naming the source's bytes from its first byte.
  ir::Value* root = FullViewRoot(src, size);
  std::vector<unsigned> reads;
  for (unsigned j = 0; j < d->num_operands(); ++j)
    if (j != k && FullViewRoot(d->operand(j), size) == root) reads.push_back(j);
  if (reads.empty()) return general;
  std::string what = "source is also read by the in-place " + analysis::DescribeOp(d) + " through operand " +
                     std::to_string(reads[0]);
  // 3. The body reads those operands only at the index it writes (an
  // operand indexed at an element offset, --slice-views, reads others).
  std::vector<int64_t> element_offsets = d->ints_attr("element_offsets");
  for (unsigned j : reads)
    if (j < element_offsets.size() && element_offsets[j] != 0)
      return {false, what + ", which it indexes at an element offset of " + std::to_string(element_offsets[j])};
  ir::Operation* body = DispatchBody(d);
  if (!body) return {false, what + ", and its body is not a flow.executable of one flow.dispatch"};
  std::vector<unsigned> args = reads;
  args.push_back(k);
  std::string why = d->num_results() != 1 ? "it has " + std::to_string(d->num_results()) + " results"
                                          : ElementwiseAtOneIndex(body, args);
  if (!why.empty())
    return {false, what + ", and its body '" + body->str_attr("name", "?") + "' is not elementwise at one index (" +
                       why + ")"};
  // 4. The general rule, with those reads counted as reads of the copy
  // (tried on the IR and undone).
  std::vector<ir::Value*> saved;
  for (unsigned j : reads) {
    saved.push_back(d->operand(j));
    d->SetOperand(j, copy);
  }
  analysis::Verdict v = analysis::CanReuseStorage(clone, 0);
  for (size_t n = 0; n < reads.size(); ++n) d->SetOperand(reads[n], saved[n]);
  if (!v.ok) return {false, v.reason};
  return {true, ""};
}

}  // namespace kiln::transforms
