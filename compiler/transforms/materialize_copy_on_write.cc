// Pass: --materialize-copy-on-write
//
// Makes every in-place write safe under value semantics by writing into a
// private copy: before each tied use (compiler/analysis/resource_usage.h
// TiedOperands: a stream.async.dispatch result with tied_operands[i] = k
// writes operand k; stream.async.update / copy / fill write operand 0) of a
// resource V, it inserts
//   %c = "stream.async.clone"(%V) {size = <bytes of the tied result>}
// and makes the tied op write %c instead. The clone takes the tied op's loc
// and affinity.
//
// The pass is deliberately defensive (DESIGN.md "Tied operand"): it does not
// try to prove that V is dead after the write. V may be observed later in
// program order, in a branch successor, after the enclosing scf op returns,
// in a later loop trip (V defined outside the loop), through an alias (await,
// slice, call, block argument); or V's storage may not be the function's to
// write (a borrowed import, a constant, a global load, a function argument,
// a call result). Deciding which copies are unnecessary is the job of
// --elide-async-copies, which uses the same analysis and removes each clone
// whose source is provably dead and owned. The clone of a loop-carried value
// goes in the loop body like any other (this pass does not reason about
// trips); when only the loop's initial value makes it necessary (borrowed,
// constant, live after the loop), --elide-async-copies replaces it by one
// copy of the initial value before the loop. The two passes never fight:
// this pass only adds copies before tied uses (never on a loop's init
// operand), and that one only removes copies it proves redundant or trades a
// copy per trip for one copy before the loop, which a second run of both
// keeps as is (the new in-body clone goes: the loop owns its carried value).
//
// Must not act (conservative early-outs, each tested):
//  - ops without tied results (untied dispatches, slice, transfer, clone);
//  - non-resource operands;
//  - an operand that already is a private copy: a stream.async.clone result
//    in the same block whose only use is this operand (so the pass is
//    idempotent: running it twice adds nothing).
//
// Preconditions: stream level (convert-to-stream ran). Any nesting of scf
// regions and branch blocks. Errors when the size of a copy is unknown.
//
// Before:
//   %d = "stream.async.dispatch"(%x) {entry = @e, sizes = [16], tied_operands = [-1]} ...
//   %u = "stream.async.dispatch"(%d) {entry = @f, sizes = [16], tied_operands = [0]} ...
// After:
//   %d = "stream.async.dispatch"(%x) {entry = @e, sizes = [16], tied_operands = [-1]} ...
//   %c = "stream.async.clone"(%d) {size = 16 : i64} ...
//   %u = "stream.async.dispatch"(%c) {entry = @f, sizes = [16], tied_operands = [0]} ...
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// True when `v` is a clone made for exactly this use: the tied op already
// writes a private copy.
bool IsPrivateCopy(const ir::Value* v, const ir::Operation* user, unsigned operand) {
  const ir::Operation* def = v->defining_op();
  if (!def || !def->is(ir::OpCode::kStreamAsyncClone) || def->parent_block() != user->parent_block())
    return false;
  return v->uses().size() == 1 && v->uses()[0].user == user &&
         v->uses()[0].operand_index == operand;
}

// Bytes of argument `operand` of the callee of `call` (a func.call), from the
// callee declaration's `arg_types` or the callee definition's entry block
// arguments; -1 when unknown.
int64_t CalleeArgSize(const ir::Operation* call, unsigned operand) {
  const ir::Attribute* a = call->attr("callee");
  const ir::SymbolRef* callee = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  const ir::Operation* top = call;
  while (top->parent_op()) top = top->parent_op();
  const ir::Block* module = top->parent_block();
  if (!callee || !module) return -1;
  for (const auto& o : const_cast<ir::Block*>(module)->ops()) {
    if (!o->is(ir::OpCode::kFuncFunc) || o->str_attr("sym_name") != callee->name) continue;
    if (!o->bool_attr("import")) {  // a function of this module: its entry block's arguments
      if (o->num_regions() != 1 || o->region(0)->empty()) return -1;
      ir::Block* entry = o->region(0)->block(0);
      if (operand >= entry->num_arguments()) return -1;
      const ir::Type& t = entry->argument(operand)->type();
      return t.is_tensor() ? t.byte_size() : -1;
    }
    const ir::AttrList* types = o->list_attr("arg_types");
    if (!types || operand >= types->size()) return -1;
    const ir::Type* t = std::get_if<ir::Type>(&(*types)[operand].value);
    return t && t->is_tensor() ? t->byte_size() : -1;
  }
  return -1;
}

// Bytes to copy for the tied operand `operand` of `op`. A consumed operand of
// a func.call has no tied result: its size is the callee's declared argument
// size (its producer may carry none: a util.global.load, a block argument).
int64_t CopySize(const ir::Operation* op, unsigned operand) {
  if (op->is(ir::OpCode::kFuncCall)) {
    int64_t s = CalleeArgSize(op, operand);
    if (s >= 0) return s;
  }
  for (unsigned i = 0; i < op->num_results(); ++i)
    if (analysis::TiedOperandOfResult(op, i) == static_cast<int>(operand)) {
      int64_t s = analysis::ResultSize(op, i);
      if (s >= 0) return s;
    }
  const ir::Value* v = op->operand(operand);
  if (const ir::Operation* def = v->defining_op()) return analysis::ResultSize(def, v->index());
  return -1;
}

class MaterializeCopyOnWritePass : public ir::Pass {
 public:
  const char* flag() const override { return "materialize-copy-on-write"; }
  const char* description() const override {
    return "Insert a stream.async.clone before every tied (in-place) use of a resource";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Operation*> tied_ops;
      func->Walk([&](ir::Operation* op) {
        if (!analysis::TiedOperands(op).empty()) tied_ops.push_back(op);
      });
      for (ir::Operation* op : tied_ops) {
        for (unsigned k : analysis::TiedOperands(op)) {
          ir::Value* v = op->operand(k);
          if (!analysis::IsResource(v)) continue;  // only resources have storage
          if (IsPrivateCopy(v, op, k)) continue;   // already writes its own copy
          int64_t size = CopySize(op, k);
          if (size < 0)
            return InvalidArgumentError(
                "cannot size the copy of operand #%u of '%s'%s: no sizes/size attribute", k,
                op->name().c_str(),
                op->loc().empty() ? "" : (" loc(\"" + op->loc() + "\")").c_str());
          ir::Builder b = ir::Builder::Before(op);
          b.set_loc(op->loc());
          std::map<std::string, ir::Attribute> attrs = {{"size", ir::Attribute(size)}};
          if (const ir::Attribute* aff = op->attr("affinity")) attrs["affinity"] = *aff;
          ir::Operation* clone = b.Create("stream.async.clone", {v}, {v->type()}, std::move(attrs));
          op->SetOperand(k, clone->result(0));
        }
      }
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateMaterializeCopyOnWritePass() {
  return std::make_unique<MaterializeCopyOnWritePass>();
}

}  // namespace kiln::transforms
