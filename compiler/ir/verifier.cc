// IR verifier (rules in verifier.h).
#include "compiler/ir/verifier.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "compiler/ir/conv_transpose.h"
#include "compiler/ir/op_traits.h"

namespace kiln::ir {
namespace {

std::string TypeList(const std::vector<Type>& ts) {
  std::string s = "(";
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i].ToString();
  return s + ")";
}

std::vector<Type> TypesOf(const std::vector<Value*>& vs) {
  std::vector<Type> ts;
  for (Value* v : vs) ts.push_back(v ? v->type() : Type());
  return ts;
}

// Numpy-style broadcast of two shapes; false if incompatible.
bool Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>* out) {
  size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

std::string Dims(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

class Verifier {
 public:
  Status VerifyModule(Module& m) {
    for (auto& op : m.body()->ops()) {
      if (!VerifyTree(op.get())) return std::move(error_);
    }
    return OkStatus();
  }

  Status VerifyRoot(Operation* op) {
    root_ = op;
    if (!VerifyTree(op)) return std::move(error_);
    return OkStatus();
  }

 private:
  bool Fail(const Operation* op, const std::string& msg) {
    std::string where = "'" + op->name() + "' op";
    if (!op->loc().empty()) where += " loc(\"" + op->loc() + "\")";
    error_ = Status(StatusCode::kInvalidArgument, where + ": " + msg);
    return false;
  }

  // Position of `op` in its block (cached per block).
  size_t Position(const Operation* op) {
    auto it = position_.find(op);
    if (it != position_.end()) return it->second;
    size_t i = 0;
    for (auto& o : op->parent_block()->ops()) position_[o.get()] = i++;
    return position_[op];
  }

  // Dominators of each block of `region` (iterative data-flow; the entry
  // block dominates everything reachable; unreachable blocks are dominated
  // by every block, as in MLIR).
  const std::unordered_map<const Block*, std::set<const Block*>>& Dominators(Region* region) {
    auto it = dominators_.find(region);
    if (it != dominators_.end()) return it->second;
    auto& dom = dominators_[region];
    std::set<const Block*> all;
    for (auto& b : region->blocks()) all.insert(b.get());
    std::unordered_map<const Block*, std::vector<const Block*>> preds;
    for (auto& b : region->blocks())
      if (Operation* t = b->terminator())
        for (Block* s : t->successors()) preds[s].push_back(b.get());
    for (auto& b : region->blocks()) dom[b.get()] = all;
    if (!region->empty()) dom[region->block(0)] = {region->block(0)};
    bool changed = true;
    while (changed) {
      changed = false;
      for (unsigned i = 1; i < region->num_blocks(); ++i) {
        const Block* b = region->block(i);
        std::set<const Block*> d = all;
        bool any = false;
        for (const Block* p : preds[b]) {
          any = true;
          std::set<const Block*> tmp;
          std::set_intersection(d.begin(), d.end(), dom[p].begin(), dom[p].end(),
                                std::inserter(tmp, tmp.begin()));
          d.swap(tmp);
        }
        if (!any) d = all;
        d.insert(b);
        if (d != dom[b]) {
          dom[b] = std::move(d);
          changed = true;
        }
      }
    }
    return dom;
  }

  // Is `v` defined, visible and dominating at `user` (operand #i)?
  bool CheckOperand(Operation* user, unsigned i) {
    Value* v = user->operand(i);
    std::string which = "operand #" + std::to_string(i);
    if (!v) return Fail(user, which + " is null");
    Block* def_block = v->parent_block();
    if (!def_block) return Fail(user, which + " is not attached to any block");
    // Walk up from the user until an ancestor lives in def_block's region.
    Operation* anc = user;
    while (anc && anc->parent_block() && anc->parent_block()->parent() != def_block->parent()) {
      anc = anc->parent_op();
    }
    if (!anc || !anc->parent_block()) {
      // Not nested in def_block's region: defined in a sibling or inner region,
      // or outside of what is verified (VerifyOp on a nested op).
      if (root_ && !IsInside(def_block, root_)) return true;
      return Fail(user, which + " is defined in a region that does not enclose this use");
    }
    Block* use_block = anc->parent_block();
    if (use_block == def_block) {
      if (v->is_block_argument()) return true;
      Operation* def = v->defining_op();
      if (def == anc) return Fail(user, which + " uses a result of its own (enclosing) op");
      if (Position(def) >= Position(anc)) return Fail(user, which + " is used before its definition");
      return true;
    }
    const auto& dom = Dominators(def_block->parent());
    auto it = dom.find(use_block);
    if (it == dom.end() || !it->second.count(def_block))
      return Fail(user, which + " does not dominate this use");
    return true;
  }

  static bool IsInside(const Block* b, const Operation* root) {
    for (Operation* p = b->parent_op(); p; p = p->parent_op())
      if (p == root) return true;
    return false;
  }

  bool CheckStatic(Operation* op, const Type& t, const std::string& what) {
    if (!t.is_tensor()) return true;
    if (t.dtype == DType::kInvalid) return Fail(op, what + " has an invalid element type");
    for (int64_t d : t.shape)
      if (d < 0) return Fail(op, what + " type " + t.ToString() + " is not static");
    return true;
  }

  bool VerifyTree(Operation* op) {
    if (!VerifyOne(op)) return false;
    for (unsigned r = 0; r < op->num_regions(); ++r) {
      Region* region = op->region(r);
      for (auto& b : region->blocks()) {
        for (Value* a : b->arguments())
          if (!CheckStatic(op, a->type(), "block argument #" + std::to_string(a->index()))) return false;
        for (auto& o : b->ops())
          if (!VerifyTree(o.get())) return false;
      }
    }
    return true;
  }

  // Ops whose every block must end in a terminator: func.func, flow.dispatch
  // and the host control-flow ops (scf.*; those without regions have none).
  bool NeedsTerminators(const Operation* op) {
    return op->is(OpCode::kFuncFunc) || op->is(OpCode::kFlowDispatch) ||
           (Traits(op).level == OpLevel::kControl && Traits(op).has(kHasRegions));
  }

  // The module-level block holding `op` (top-level ops are its symbols).
  static Block* TopLevelBlock(Operation* op) {
    while (op->parent_op()) op = op->parent_op();
    return op->parent_block();
  }

  // Types listed in attribute `name` of an import declaration (each a Type).
  static bool TypeListAttr(const Operation* op, const char* name, std::vector<Type>* out) {
    const AttrList* l = op->list_attr(name);
    if (!l) return false;
    for (const Attribute& a : *l) {
      const Type* t = std::get_if<Type>(&a.value);
      if (!t) return false;
      out->push_back(*t);
    }
    return true;
  }

  // func.func {import = true}: a declaration of another module's function.
  bool VerifyImportDecl(Operation* op) {
    const std::string& name = op->str_attr("sym_name");
    if (name.find('.') == std::string::npos || name.front() == '.' || name.back() == '.')
      return Fail(op, "import declaration '" + name + "' must be named \"module.function\"");
    if (op->num_regions() != 1 || !op->region(0)->empty())
      return Fail(op, "import declaration '" + name + "' must have one empty region (no body)");
    std::vector<Type> args, results;
    if (!TypeListAttr(op, "arg_types", &args) || !TypeListAttr(op, "result_types", &results))
      return Fail(op, "import declaration '" + name +
                          "' needs 'arg_types' and 'result_types' (lists of tensor types)");
    for (const Type& t : args)
      if (!t.is_tensor() || !CheckStatic(op, t, "import argument type")) return t.is_tensor() ? false : Fail(op, "import argument type " + t.ToString() + " is not a tensor");
    for (const Type& t : results)
      if (!t.is_tensor() || !CheckStatic(op, t, "import result type")) return t.is_tensor() ? false : Fail(op, "import result type " + t.ToString() + " is not a tensor");
    if (const AttrList* l = op->list_attr("arg_ownership"))
      if (l->size() != args.size())
        return Fail(op, "'arg_ownership' has " + std::to_string(l->size()) + " entries for " +
                            std::to_string(args.size()) + " arguments");
    for (const std::string& s : op->strs_attr("arg_ownership"))
      if (s != "borrow" && s != "consume")
        return Fail(op, "unknown arg_ownership '" + s + "' (expected borrow or consume)");
    return true;
  }

  // func.call @callee: the callee is a func.func of this module (a definition
  // or an import declaration) and the operand/result counts match it; at the
  // tensor level (tensor operands) the types must match exactly.
  bool VerifyCall(Operation* op) {
    const Attribute* a = op->attr("callee");
    const SymbolRef* callee = a ? std::get_if<SymbolRef>(&a->value) : nullptr;
    if (!callee) return Fail(op, "requires a 'callee' symbol attribute");
    Operation* target = nullptr;
    if (Block* top = TopLevelBlock(op))
      for (auto& o : top->ops())
        if (o->is(OpCode::kFuncFunc) && o->str_attr("sym_name") == callee->name) target = o.get();
    if (!target) return Fail(op, "calls @" + callee->name + ", which is not a function of this module (declare it with func.func {import = true})");
    std::vector<Type> args, results;
    if (target->bool_attr("import")) {
      TypeListAttr(target, "arg_types", &args);
      TypeListAttr(target, "result_types", &results);
    } else if (target->num_regions() == 1 && !target->region(0)->empty()) {
      Block* entry = target->region(0)->block(0);
      for (Value* v : entry->arguments()) args.push_back(v->type());
      if (Operation* ret = entry->terminator())
        for (Value* v : ret->operands()) results.push_back(v->type());
    }
    if (op->num_operands() != args.size() || op->num_results() != results.size())
      return Fail(op, "@" + callee->name + " takes " + std::to_string(args.size()) + " arguments and returns " +
                          std::to_string(results.size()) + " results; the call has " +
                          std::to_string(op->num_operands()) + " and " + std::to_string(op->num_results()));
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (op->operand(i)->type().is_tensor() && !(op->operand(i)->type() == args[i]))
        return Fail(op, "operand #" + std::to_string(i) + " is " + op->operand(i)->type().ToString() + ", @" +
                            callee->name + " expects " + args[i].ToString());
    for (unsigned i = 0; i < op->num_results(); ++i)
      if (op->result(i)->type().is_tensor() && !(op->result(i)->type() == results[i]))
        return Fail(op, "result #" + std::to_string(i) + " is " + op->result(i)->type().ToString() + ", @" +
                            callee->name + " returns " + results[i].ToString());
    return true;
  }

  bool VerifyOne(Operation* op) {
    for (unsigned i = 0; i < op->num_operands(); ++i)
      if (!CheckOperand(op, i)) return false;
    for (unsigned i = 0; i < op->num_results(); ++i)
      if (!CheckStatic(op, op->result(i)->type(), "result #" + std::to_string(i))) return false;
    // Terminators are last in their block, and required where known.
    if (Traits(op).is_terminator() && op->parent_block() &&
        op->parent_block()->terminator() != op)
      return Fail(op, "terminator must be the last op of its block");
    for (Block* s : op->successors()) {
      if (!s || !op->parent_block() || s->parent() != op->parent_block()->parent())
        return Fail(op, "successor is not a block of the same region");
    }
    if (NeedsTerminators(op)) {
      for (unsigned r = 0; r < op->num_regions(); ++r) {
        for (unsigned b = 0; b < op->region(r)->num_blocks(); ++b) {
          Operation* t = op->region(r)->block(b)->terminator();
          if (!t) return Fail(op, "block #" + std::to_string(b) + " of region #" + std::to_string(r) + " is empty (needs a terminator)");
          if (!Traits(t).is_terminator())
            return Fail(op, "block #" + std::to_string(b) + " of region #" + std::to_string(r) +
                                " does not end in a terminator (ends in '" + t->name() + "')");
        }
      }
    }
    const OpCode n = op->code();
    if (n == OpCode::kFuncFunc) return op->bool_attr("import") ? VerifyImportDecl(op) : VerifyFunc(op);
    if (n == OpCode::kFuncCall) return VerifyCall(op);
    if (n == OpCode::kFuncReturn) {
      Operation* p = op->parent_op();
      if (!p || !p->is(OpCode::kFuncFunc)) return Fail(op, "expects parent op 'func.func'");
      return true;
    }
    if (n == OpCode::kFlowDispatch) return VerifyDispatch(op);
    if (n == OpCode::kFlowReturn) {
      Operation* p = op->parent_op();
      if (!p || !p->is(OpCode::kFlowDispatch)) return Fail(op, "expects parent op 'flow.dispatch'");
      return true;
    }
    if (n == OpCode::kCfBr || n == OpCode::kCfCondBr) return VerifyBranch(op);
    if (n == OpCode::kScfIf) return VerifyScfIf(op);
    if (n == OpCode::kScfFor) return VerifyScfFor(op);
    if (n == OpCode::kScfWhile) return VerifyScfWhile(op);
    if (n == OpCode::kScfIndexSwitch) return VerifyScfSwitch(op);
    if (n == OpCode::kScfYield || n == OpCode::kScfCondition) return VerifyScfTerminator(op);
    if (n == OpCode::kArithConstant) return VerifyArithConstant(op);
    if (n == OpCode::kTensorExtract) return VerifyExtract(op);
    if (Traits(op).is_elementwise()) return VerifyElementwise(op);
    if (n == OpCode::kTensorConstant) return VerifyConstant(op);
    if (n == OpCode::kTensorConv2d) return VerifyConv(op);
    if (n == OpCode::kTensorConvTranspose) return VerifyConvTranspose(op);
    if (n == OpCode::kTensorMatmul) return VerifyMatmul(op);
    if (n == OpCode::kTensorReshape) return VerifyReshape(op);
    if (n == OpCode::kTensorArgReduce) return VerifyArgReduce(op);
    return true;
  }

  bool ExpectCounts(Operation* op, unsigned operands, unsigned results) {
    if (op->num_operands() != operands)
      return Fail(op, "expects " + std::to_string(operands) + " operands, got " +
                          std::to_string(op->num_operands()));
    if (op->num_results() != results)
      return Fail(op, "expects " + std::to_string(results) + " results, got " +
                          std::to_string(op->num_results()));
    return true;
  }

  bool AllTensors(Operation* op) {
    for (Value* v : op->operands())
      if (!v->type().is_tensor()) return Fail(op, "expects tensor operands");
    for (Value* v : op->results())
      if (!v->type().is_tensor()) return Fail(op, "expects tensor results");
    return true;
  }

  bool VerifyFunc(Operation* op) {
    if (op->str_attr("sym_name").empty()) return Fail(op, "requires a 'sym_name' attribute");
    if (op->num_regions() != 1 || op->region(0)->empty())
      return Fail(op, "expects one region with an entry block");
    Block* entry = op->region(0)->block(0);
    auto check_count = [&](const char* attr, size_t want, const char* what) {
      if (const AttrList* l = op->list_attr(attr)) {
        if (l->size() != want)
          return Fail(op, std::string("'") + attr + "' has " + std::to_string(l->size()) +
                              " entries for " + std::to_string(want) + " " + what);
      }
      return true;
    };
    if (!check_count("arg_names", entry->num_arguments(), "arguments")) return false;
    if (!check_count("arg_ownership", entry->num_arguments(), "arguments")) return false;
    for (const std::string& s : op->strs_attr("arg_ownership"))
      if (s != "borrow" && s != "consume")
        return Fail(op, "unknown arg_ownership '" + s + "' (expected borrow or consume)");
    // Every func.return agrees (the function signature's result types).
    const Operation* first = nullptr;
    bool ok = true;
    op->Walk([&](Operation* o) {
      if (!ok || !o->is(OpCode::kFuncReturn) || o->parent_op() != op) return;
      if (!first) {
        first = o;
        return;
      }
      if (TypesOf(o->operands()) != TypesOf(first->operands()))
        ok = Fail(o, "operand types " + TypeList(TypesOf(o->operands())) +
                         " do not match the function result types " +
                         TypeList(TypesOf(first->operands())));
    });
    if (!ok) return false;
    if (first && !check_count("result_names", first->num_operands(), "results")) return false;
    return true;
  }

  bool VerifyDispatch(Operation* op) {
    if (op->num_regions() != 1 || op->region(0)->num_blocks() != 1)
      return Fail(op, "expects one region with one block");
    Block* body = op->region(0)->block(0);
    if (TypesOf(body->arguments()) != TypesOf(op->operands()))
      return Fail(op, "region arguments " + TypeList(TypesOf(body->arguments())) +
                          " do not match operands " + TypeList(TypesOf(op->operands())));
    Operation* t = body->terminator();
    if (t && t->is(OpCode::kFlowReturn) && TypesOf(t->operands()) != TypesOf(op->results()))
      return Fail(t, "operand types " + TypeList(TypesOf(t->operands())) +
                         " do not match the dispatch result types " +
                         TypeList(TypesOf(op->results())));
    return true;
  }

  bool VerifyBranch(Operation* op) {
    std::vector<std::vector<Value*>> groups;
    if (op->is(OpCode::kCfBr)) {
      if (op->num_successors() != 1) return Fail(op, "expects 1 successor");
      groups.push_back(op->operands());
    } else {
      if (op->num_successors() != 2) return Fail(op, "expects 2 successors");
      std::vector<int64_t> seg = op->ints_attr("operand_segments");
      if (seg.size() != 3 || seg[0] != 1 || seg[1] < 0 || seg[2] < 0 ||
          seg[0] + seg[1] + seg[2] != op->num_operands())
        return Fail(op, "expects 'operand_segments' = [1, n_true, n_false] summing to the operand count");
      Value* c = op->operand(0);
      if (c->type().kind != TypeKind::kI1 &&
          !(c->type().is_tensor() && c->type().dtype == DType::kBool && c->type().rank() == 0))
        return Fail(op, "condition must be i1");
      auto ops = op->operands();
      groups.emplace_back(ops.begin() + 1, ops.begin() + 1 + seg[1]);
      groups.emplace_back(ops.begin() + 1 + seg[1], ops.end());
    }
    for (size_t s = 0; s < groups.size(); ++s) {
      Block* dest = op->successor(static_cast<unsigned>(s));
      // A block argument of type !stream.resource<*> accepts any resource
      // (as scf.for iter_args and scf results do).
      if (!Compatible(TypesOf(groups[s]), TypesOf(dest->arguments())))
        return Fail(op, "operands " + TypeList(TypesOf(groups[s])) + " for successor #" +
                            std::to_string(s) + " do not match its arguments " +
                            TypeList(TypesOf(dest->arguments())));
    }
    return true;
  }

  // --- structured control flow (ops.h) ---------------------------------------------
  static bool IsI1(const Value* v) { return v->type().kind == TypeKind::kI1; }
  static bool IsIndex(const Value* v) { return v->type().kind == TypeKind::kIndex; }

  // Region #r of `op` has one block whose arguments have types `args` and
  // whose terminator is `term` with operand types `yields`.
  bool CheckRegion(Operation* op, unsigned r, const std::vector<Type>& args, OpCode term,
                   const std::vector<Type>& yields) {
    Region* region = op->region(r);
    std::string which = "region #" + std::to_string(r);
    if (region->num_blocks() != 1) return Fail(op, which + " must have exactly one block");
    Block* b = region->block(0);
    if (TypesOf(b->arguments()) != args)
      return Fail(op, which + " arguments " + TypeList(TypesOf(b->arguments())) + " should be " +
                          TypeList(args));
    Operation* t = b->terminator();
    if (!t || !t->is(term))
      return Fail(op, which + " must end in '" + OpName(term) + "'");
    if (!Compatible(TypesOf(t->operands()), yields))
      return Fail(t, "operand types " + TypeList(TypesOf(t->operands())) + " do not match " +
                         TypeList(yields));
    return true;
  }

  // Equal types, except that a resource of any lifetime may flow into a
  // `!stream.resource<*>` (the result type convert-to-stream gives scf ops,
  // whose branches may yield constants, imports or transients).
  static bool Compatible(const std::vector<Type>& got, const std::vector<Type>& want) {
    if (got.size() != want.size()) return false;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == want[i]) continue;
      if (got[i].kind == TypeKind::kResource && want[i].kind == TypeKind::kResource &&
          want[i].lifetime == Lifetime::kUnknown)
        continue;
      return false;
    }
    return true;
  }

  bool VerifyScfIf(Operation* op) {
    if (op->num_operands() != 1 || !IsI1(op->operand(0)))
      return Fail(op, "expects one i1 operand (the condition)");
    if (op->num_regions() != 2) return Fail(op, "expects 2 regions (then, else)");
    std::vector<Type> rt = TypesOf(op->results());
    if (!CheckRegion(op, 0, {}, OpCode::kScfYield, rt)) return false;
    // An else region may be empty when the op has no results.
    if (op->region(1)->empty() && rt.empty()) return true;
    return CheckRegion(op, 1, {}, OpCode::kScfYield, rt);
  }

  bool VerifyScfFor(Operation* op) {
    if (op->num_operands() < 3) return Fail(op, "expects operands (lb, ub, step, inits...)");
    for (unsigned i = 0; i < 3; ++i)
      if (!IsIndex(op->operand(i))) return Fail(op, "lb, ub and step must be index values");
    if (op->num_regions() != 1) return Fail(op, "expects 1 region");
    auto ops = op->operands();
    std::vector<Type> inits = TypesOf(std::vector<Value*>(ops.begin() + 3, ops.end()));
    std::vector<Type> results = TypesOf(op->results());
    if (!Compatible(inits, results))
      return Fail(op, "result types " + TypeList(results) + " do not match the init types " + TypeList(inits));
    std::vector<Type> args = {Type::Index()};
    args.insert(args.end(), results.begin(), results.end());
    return CheckRegion(op, 0, args, OpCode::kScfYield, results);
  }

  bool VerifyScfWhile(Operation* op) {
    if (op->num_regions() != 2) return Fail(op, "expects 2 regions (before, after)");
    std::vector<Type> inits = TypesOf(op->operands());
    std::vector<Type> rt = TypesOf(op->results());
    Region* before = op->region(0);
    if (before->num_blocks() != 1) return Fail(op, "region #0 must have exactly one block");
    Operation* c = before->block(0)->terminator();
    if (!c || !c->is(OpCode::kScfCondition)) return Fail(op, "region #0 must end in 'scf.condition'");
    std::vector<Type> cond_ops = TypesOf(c->operands());
    if (cond_ops.empty() || cond_ops[0].kind != TypeKind::kI1)
      return Fail(c, "expects an i1 condition as operand #0");
    std::vector<Type> fwd(cond_ops.begin() + 1, cond_ops.end());
    if (fwd != rt)
      return Fail(c, "forwarded types " + TypeList(fwd) + " do not match the result types " +
                         TypeList(rt));
    std::vector<Type> want = {Type::I1()};
    want.insert(want.end(), rt.begin(), rt.end());
    // "before" arguments of type !stream.resource<*> accept any resource init
    // (as scf.for iter_args do); the after region yields their types.
    if (before->empty()) return Fail(op, "region #0 must have exactly one block");
    std::vector<Type> bargs = TypesOf(before->block(0)->arguments());
    if (!Compatible(inits, bargs))
      return Fail(op, "region #0 arguments " + TypeList(bargs) + " should be " + TypeList(inits));
    if (!CheckRegion(op, 0, bargs, OpCode::kScfCondition, want)) return false;
    return CheckRegion(op, 1, rt, OpCode::kScfYield, bargs);
  }

  bool VerifyScfSwitch(Operation* op) {
    if (op->num_operands() != 1 || !IsIndex(op->operand(0)))
      return Fail(op, "expects one index operand");
    std::vector<int64_t> cases = op->ints_attr("cases");
    if (op->num_regions() != cases.size() + 1)
      return Fail(op, "expects one region per case plus the default (" +
                          std::to_string(cases.size() + 1) + "), got " +
                          std::to_string(op->num_regions()));
    std::set<int64_t> seen(cases.begin(), cases.end());
    if (seen.size() != cases.size()) return Fail(op, "repeats a case value");
    std::vector<Type> rt = TypesOf(op->results());
    for (unsigned r = 0; r < op->num_regions(); ++r)
      if (!CheckRegion(op, r, {}, OpCode::kScfYield, rt)) return false;
    return true;
  }

  bool VerifyScfTerminator(Operation* op) {
    Operation* p = op->parent_op();
    if (op->is(OpCode::kScfCondition)) {
      if (!p || !p->is(OpCode::kScfWhile) || op->parent_block()->parent() != p->region(0))
        return Fail(op, "expects to end the 'before' region of an 'scf.while'");
      return true;
    }
    if (!p || (!p->is(OpCode::kScfIf) && !p->is(OpCode::kScfFor) && !p->is(OpCode::kScfWhile) &&
               !p->is(OpCode::kScfIndexSwitch)))
      return Fail(op, "expects parent op 'scf.if', 'scf.for', 'scf.while' or 'scf.index_switch'");
    if (p->is(OpCode::kScfWhile) && op->parent_block()->parent() != p->region(1))
      return Fail(op, "in an 'scf.while' ends the 'after' region only");
    return true;
  }

  bool VerifyArithConstant(Operation* op) {
    if (!ExpectCounts(op, 0, 1)) return false;
    const Attribute* a = op->attr("value");
    if (!a || !std::holds_alternative<int64_t>(a->value))
      return Fail(op, "requires an integer 'value' attribute");
    TypeKind k = op->result()->type().kind;
    if (k != TypeKind::kIndex && k != TypeKind::kI1) return Fail(op, "result must be index or i1");
    int64_t v = std::get<int64_t>(a->value);
    if (k == TypeKind::kI1 && v != 0 && v != 1) return Fail(op, "i1 value must be 0 or 1");
    return true;
  }

  bool VerifyExtract(Operation* op) {
    if (!ExpectCounts(op, 1, 1)) return false;
    const Type& t = op->operand(0)->type();
    if (!t.is_tensor() || t.num_elements() != 1)
      return Fail(op, "expects a tensor operand with exactly one element, got " + t.ToString());
    TypeKind k = op->result()->type().kind;
    if (t.dtype == DType::kBool) {
      if (k != TypeKind::kI1) return Fail(op, "an i1 tensor extracts to i1");
    } else if (t.dtype == DType::kI64 || t.dtype == DType::kI32 || t.dtype == DType::kI16 ||
               t.dtype == DType::kI8 || t.dtype == DType::kU8) {
      if (k != TypeKind::kIndex) return Fail(op, "an integer tensor extracts to index");
    } else {
      return Fail(op, std::string("cannot extract from element type ") + DTypeName(t.dtype));
    }
    return true;
  }

  bool VerifyElementwise(Operation* op) {
    const OpCode n = op->code();
    const OpInfo& traits = Traits(op);
    unsigned arity = traits.has(kTernary) ? 3 : traits.has(kBinary) ? 2 : 1;
    if (!ExpectCounts(op, arity, 1) || !AllTensors(op)) return false;
    std::vector<int64_t> shape = op->operand(0)->type().shape;
    for (unsigned i = 1; i < arity; ++i) {
      std::vector<int64_t> out;
      if (!Broadcast(shape, op->operand(i)->type().shape, &out))
        return Fail(op, "operand shapes " + Dims(shape) + " and " +
                            Dims(op->operand(i)->type().shape) + " are not broadcast-compatible");
      shape = out;
    }
    const Type& rt = op->result()->type();
    if (rt.shape != shape)
      return Fail(op, "result shape " + Dims(rt.shape) + " does not match the broadcast shape " +
                          Dims(shape));
    // Element types.
    unsigned first_data = n == OpCode::kTensorSelect ? 1 : 0;
    DType dt = op->operand(first_data)->type().dtype;
    for (unsigned i = first_data + 1; i < arity; ++i)
      if (op->operand(i)->type().dtype != dt)
        return Fail(op, std::string("operand element types differ: ") + DTypeName(dt) + " vs " +
                            DTypeName(op->operand(i)->type().dtype));
    if (n == OpCode::kTensorSelect && op->operand(0)->type().dtype != DType::kBool)
      return Fail(op, "condition must have element type i1");
    if (traits.has(kLogical) && dt != DType::kBool) return Fail(op, "expects i1 operands");
    if ((n == OpCode::kTensorShiftLeft || n == OpCode::kTensorShiftRight) &&
        (IsFloatType(dt) || dt == DType::kBool))
      return Fail(op, "expects integer operands");
    if (n == OpCode::kTensorCast) return true;
    if (traits.has(kClassify) && dt != DType::kF32) return Fail(op, "expects an f32 operand");
    DType want = traits.has(kCompare) || traits.has(kClassify) ? DType::kBool : dt;
    if (rt.dtype != want)
      return Fail(op, std::string("result element type ") + DTypeName(rt.dtype) + " should be " +
                          DTypeName(want));
    return true;
  }

  bool VerifyConstant(Operation* op) {
    if (!ExpectCounts(op, 0, 1)) return false;
    const DenseElements* d = op->dense_attr("value");
    if (!d) return Fail(op, "requires a dense 'value' attribute");
    if (d->type != op->result()->type())
      return Fail(op, "value type " + d->type.ToString() + " does not match result type " +
                          op->result()->type().ToString());
    if (!d->data || static_cast<int64_t>(d->data->size()) != d->type.byte_size())
      return Fail(op, "value holds the wrong number of bytes");
    return true;
  }

  bool VerifyConvTranspose(Operation* op) {
    ConvTransposeParams p;
    std::string error;
    return GetConvTransposeParams(*op, &p, &error) || Fail(op, error);
  }

  bool VerifyConv(Operation* op) {
    if (op->num_operands() != 2 && op->num_operands() != 3)
      return Fail(op, "expects 2 or 3 operands (input, filter, bias), got " +
                          std::to_string(op->num_operands()));
    if (op->num_results() != 1) return Fail(op, "expects 1 result, got " + std::to_string(op->num_results()));
    if (!AllTensors(op)) return false;
    const Type& in = op->operand(0)->type();
    const Type& w = op->operand(1)->type();
    const Type& out = op->result()->type();
    if (in.rank() != 4 || w.rank() != 4 || out.rank() != 4)
      return Fail(op, "expects rank-4 input, filter and result (NCHW)");
    std::vector<int64_t> strides = op->ints_attr("strides"), dil = op->ints_attr("dilations"),
                         pads = op->ints_attr("pads");
    if (strides.empty()) strides = {1, 1};
    if (dil.empty()) dil = {1, 1};
    if (pads.empty()) pads = {0, 0, 0, 0};
    int64_t group = op->int_attr("group", 1);
    if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4 || group < 1)
      return Fail(op, "expects strides [2], dilations [2], pads [4] and group >= 1");
    if (in.shape[1] != w.shape[1] * group)
      return Fail(op, "input channels " + std::to_string(in.shape[1]) + " != filter channels " +
                          std::to_string(w.shape[1]) + " * group " + std::to_string(group));
    if (w.shape[0] % group != 0)
      return Fail(op, "filter count " + std::to_string(w.shape[0]) + " is not divisible by group " +
                          std::to_string(group));
    if (op->num_operands() == 3) {
      const Type& b = op->operand(2)->type();
      if (b.shape != std::vector<int64_t>{w.shape[0]})
        return Fail(op, "bias shape " + Dims(b.shape) + " should be [" + std::to_string(w.shape[0]) + "]");
    }
    std::vector<int64_t> want = {in.shape[0], w.shape[0], 0, 0};
    for (int i = 0; i < 2; ++i) {
      int64_t padded = in.shape[2 + i] + pads[i] + pads[2 + i];
      int64_t k = dil[i] * (w.shape[2 + i] - 1) + 1;
      want[2 + i] = strides[i] > 0 && padded >= k ? (padded - k) / strides[i] + 1 : -1;
    }
    if (out.shape != want)
      return Fail(op, "result shape " + Dims(out.shape) + " should be " + Dims(want));
    if (w.dtype != in.dtype || out.dtype != in.dtype)
      return Fail(op, "input, filter and result element types differ");
    return true;
  }

  bool VerifyMatmul(Operation* op) {
    if (!ExpectCounts(op, 2, 1) || !AllTensors(op)) return false;
    const Type& a = op->operand(0)->type();
    const Type& b = op->operand(1)->type();
    const Type& out = op->result()->type();
    if (a.rank() < 2 || b.rank() < 2) return Fail(op, "expects operands of rank >= 2");
    int64_t m = a.shape[a.rank() - 2], k = a.shape[a.rank() - 1];
    int64_t k2 = b.shape[b.rank() - 2], nn = b.shape[b.rank() - 1];
    if (k != k2)
      return Fail(op, "contraction sizes differ: " + std::to_string(k) + " vs " + std::to_string(k2));
    std::vector<int64_t> ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2),
        batch;
    if (!Broadcast(ba, bb, &batch))
      return Fail(op, "batch dims " + Dims(ba) + " and " + Dims(bb) + " are not broadcast-compatible");
    batch.push_back(m);
    batch.push_back(nn);
    if (out.shape != batch) return Fail(op, "result shape " + Dims(out.shape) + " should be " + Dims(batch));
    if (a.dtype != b.dtype || out.dtype != a.dtype) return Fail(op, "operand and result element types differ");
    return true;
  }

  bool VerifyReshape(Operation* op) {
    if (!ExpectCounts(op, 1, 1) || !AllTensors(op)) return false;
    const Type& in = op->operand(0)->type();
    const Type& out = op->result()->type();
    if (in.num_elements() != out.num_elements())
      return Fail(op, "element count changes from " + std::to_string(in.num_elements()) + " to " +
                          std::to_string(out.num_elements()));
    if (in.dtype != out.dtype) return Fail(op, "element type changes");
    return true;
  }

  bool VerifyArgReduce(Operation* op) {
    if (!ExpectCounts(op, 1, 1) || !AllTensors(op)) return false;
    const Type& in = op->operand(0)->type();
    const Type& out = op->result()->type();
    const std::string kind = op->str_attr("kind", "");
    if (kind != "max" && kind != "min") return Fail(op, "kind must be \"max\" or \"min\"");
    const int64_t axis = op->int_attr("axis", -1);
    if (axis < 0 || axis >= in.rank())
      return Fail(op, "axis " + std::to_string(axis) + " out of range for rank " +
                          std::to_string(in.rank()));
    if (in.shape[axis] < 1) return Fail(op, "reduces an empty axis");
    if (out.dtype != DType::kI64) return Fail(op, "result element type must be i64");
    std::vector<int64_t> want;
    for (int64_t d = 0; d < in.rank(); ++d) {
      if (d != axis) want.push_back(in.shape[d]);
      else if (op->int_attr("keepdims", 1) != 0) want.push_back(1);
    }
    if (out.shape != want) return Fail(op, "result shape " + Dims(out.shape) + " should be " + Dims(want));
    return true;
  }

  Status error_;
  const Operation* root_ = nullptr;
  std::unordered_map<const Operation*, size_t> position_;
  std::unordered_map<const Region*, std::unordered_map<const Block*, std::set<const Block*>>> dominators_;
};

}  // namespace

Status Verify(Module& module) { return Verifier().VerifyModule(module); }

Status VerifyOp(Operation* op) { return Verifier().VerifyRoot(op); }

}  // namespace kiln::ir
