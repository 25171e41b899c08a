// Pass: --infer-argument-ownership
//
// Interprocedural by-value arguments (IREE's "argument move" rule in its
// ElideAsyncCopies pass: when every caller passes its last reference, the
// callee may mutate the argument in place). A resource argument of a
// module-internal function is marked `consume` in the function's
// arg_ownership (and its stream.tensor.import becomes consume = true) when
// every call site of the function hands over a value it no longer needs:
// analysis::CanReuseStorage(call, i) holds, i.e. the operand's storage is
// owned by the caller (not a borrowed import, a constant, a global load, a
// call result shared with other results, a borrowed argument of the
// caller), no content alias of it is observed after the call (later in
// program order, in a later trip of an enclosing loop, after the enclosing
// region, or escaping to a global or to another consumed operand), and the
// call does not read it through another operand.
//
// The copy passes then do the rest with their usual queries: the callee's
// copy-on-write clone of the argument goes (a consumed argument is owned,
// --elide-async-copies), and the clone --materialize-copy-on-write puts
// before each call for the now-consumed operand goes too (the operand is
// dead after the call). The pass only changes ownership; it never adds or
// removes copies itself, which is why it is a pass of its own placed before
// the copy passes (pipeline.cc) rather than part of --elide-async-copies:
// copy-on-write sees the final ownership, so introducing copies and eliding
// them never fight.
//
// Module-internal: a func.func definition with `sym_visibility = "private"`
// (MLIR's symbol visibility). Every other definition is part of the
// module's ABI (any caller, in another module or an app, may call it with
// the declared ownership) and keeps its arg_ownership as written. Note that
// the module writer still lists a private function among the module's
// functions, with the inferred ownership in its signature; a consumed
// argument is safe for any caller (the runtime works on a copy when the
// caller keeps a reference: kiln.h KILN_ARG_CONSUME).
//
// The inference is a fixpoint over the module: marking one function's
// argument consumed can make a value owned in that function (its argument),
// which may let a call it makes hand over too (chains of calls). Marking
// only ever adds ownership, so the iteration ends (at most one change per
// argument).
//
// Each decision must still hold once it is made. A consumed operand is an
// escape for the analysis (the callee may keep or return it), and a call
// result may be the consumed operand handed back, so marking an argument
// consumed changes the answers CanReuseStorage gives at its own call sites.
// The case that needs it: a loop-carried value passed to the call whose
// result is yielded back into it,
//   scf.for ... (%v = %init) { %r = func.call @f(%v); scf.yield %r }
// Asked while @f borrows, %v is owned (%init and %r are both fresh). Once
// @f consumes, %r may be %v handed back and %v escapes to the call in the
// next trip, so the yield no longer hands over and --elide-async-copies
// keeps the clone copy-on-write puts before the call: one copy per trip
// that the borrowed call did not make (the callee gained nothing either;
// differential seed 30423, elided 23 vs naive 22 copies). So after the
// fixpoint every inferred argument is checked again, with every inference
// in place, at each call site by the query --elide-async-copies will make
// on copy-on-write's clone there (a trial clone, removed again); one that
// fails goes back to borrowed ("stays borrowed: once consumed, <reason>"),
// and the check repeats until nothing changes (unmarking only removes
// ownership, so a chain that relied on it is checked again and ends too).
//
// Must not act (each tested):
//  - an exported function (no sym_visibility = "private");
//  - a function without call sites in the module (nothing to infer from);
//  - a recursive function (on a cycle of the module's call graph: the
//    argument's ownership would depend on itself);
//  - one call site whose operand is read after the call, is a borrowed
//    import, a constant, a global load, a borrowed argument of the caller,
//    is captured by an enclosing loop, or is also passed through another
//    operand of the same call;
//  - non-resource arguments;
//  - an argument whose call site stops handing over once the argument is
//    consumed (a loop-carried value whose next value is the call's result).
// Each argument left borrowed gets a remark on the first call site that
// keeps it: "argument #i of @f stays borrowed: <reason>".
//
// Preconditions: stream level (convert-to-stream ran); runs before
// --materialize-copy-on-write.
//
// Before:
//   func @step(%a: tensor<4xf32>) {sym_visibility = "private", arg_ownership = ["borrow"]}
//     %x = "stream.tensor.import"(%a) {consume = false, ...}
//     %u = "stream.async.dispatch"(%x) {tied_operands = [0], ...}   // COW will clone %x
//   func @main: %s = "stream.async.splat"(); %r = "func.call"(%s) {callee = @step}; (%s dead)
// After:
//   func @step ... {arg_ownership = ["consume"]}, %x = import {consume = true}
//   (then --materialize-copy-on-write + --elide-async-copies leave no copy)
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

bool IsPrivate(const ir::Operation* func) { return func->str_attr("sym_visibility") == "private"; }

const std::string* CalleeName(const ir::Operation* call) {
  const ir::Attribute* a = call->attr("callee");
  const ir::SymbolRef* s = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
  return s ? &s->name : nullptr;
}

// Functions of `module` that lie on a cycle of its call graph.
std::set<std::string> RecursiveFunctions(const std::map<std::string, std::set<std::string>>& callees) {
  std::set<std::string> out;
  for (const auto& [f, direct] : callees) {
    std::set<std::string> seen;
    std::vector<std::string> work(direct.begin(), direct.end());
    while (!work.empty()) {
      std::string g = work.back();
      work.pop_back();
      if (g == f) {
        out.insert(f);
        break;
      }
      if (!seen.insert(g).second) continue;
      auto it = callees.find(g);
      if (it != callees.end()) work.insert(work.end(), it->second.begin(), it->second.end());
    }
  }
  return out;
}

// Sets argument `i` of the definition `func` to consumed or borrowed: its
// arg_ownership entry, and the stream.tensor.import of the argument when
// there is one.
void SetOwnership(ir::Operation* func, unsigned i, bool consume) {
  ir::Block* entry = func->region(0)->block(0);
  std::vector<std::string> own = func->strs_attr("arg_ownership");
  own.resize(entry->num_arguments(), "borrow");
  own[i] = consume ? "consume" : "borrow";
  ir::AttrList list;
  for (const std::string& s : own) list.push_back(ir::Attribute(s));
  func->set_attr("arg_ownership", ir::MakeListAttr(std::move(list)));
  for (const ir::Use& u : entry->argument(i)->uses())
    if (u.user->is(ir::OpCode::kStreamTensorImport)) u.user->set_attr("consume", ir::Attribute(consume));
}
void MarkConsumed(ir::Operation* func, unsigned i) { SetOwnership(func, i, true); }
// Undoes MarkConsumed(func, i): the argument was borrowed before.
void MarkBorrowed(ir::Operation* func, unsigned i) { SetOwnership(func, i, false); }

// Whether `call` also passes a view of its operand `arg` through another
// operand: the call site would then keep a copy (copy-on-write + elision
// stay correct, but the copy only moves from the callee to the caller).
analysis::Verdict NoViewPassedTwice(ir::Operation* call, unsigned arg) {
  if (arg >= call->num_operands()) return analysis::Verdict{false, "a call passes no operand for it"};
  for (ir::Value* a : analysis::ContentAliases(call->operand(arg)))
    for (unsigned j = 0; j < call->num_operands(); ++j)
      if (j != arg && call->operand(j) == a) return analysis::Verdict{false, "a view of it is also passed to the call"};
  return analysis::Verdict{true, ""};
}

// Does `call` hand over its operand `arg` (its last use of storage it
// owns), the callee still borrowing it? analysis::CanReuseStorage, which
// ignores the call's own uses, and NoViewPassedTwice.
analysis::Verdict HandsOver(ir::Operation* call, unsigned arg) {
  if (arg >= call->num_operands()) return analysis::Verdict{false, "a call passes no operand for it"};
  analysis::Verdict v = analysis::CanReuseStorage(call, arg);
  return v.ok ? NoViewPassedTwice(call, arg) : v;
}

// The same question asked the way --elide-async-copies will ask it once the
// argument is consumed: copy-on-write puts a clone of the operand before the
// call (a consumed operand is a tied use), and the call site hands over when
// that clone may go. A trial clone is inserted, queried and removed again.
// (CanReuseStorage(call, arg) itself cannot be asked here: the consumed
// operand escapes to the call, which the query counts as an observer. Nor
// NoViewPassedTwice, asked before marking: with two consumed operands, each
// is a content alias of the other through the call's result, a copy the
// elision does not see.)
analysis::Verdict HandsOverOnceConsumed(ir::Operation* call, unsigned arg) {
  if (arg >= call->num_operands()) return analysis::Verdict{false, "a call passes no operand for it"};
  ir::Value* operand = call->operand(arg);
  ir::Builder b = ir::Builder::Before(call);
  b.set_loc(call->loc());
  ir::Operation* trial = b.Create("stream.async.clone", {operand}, {operand->type()}, {});
  call->SetOperand(arg, trial->result(0));
  analysis::Verdict v = analysis::CanReuseStorage(trial, 0);
  call->SetOperand(arg, operand);
  trial->Erase();
  return v;
}

class InferArgumentOwnershipPass : public ir::Pass {
 public:
  const char* flag() const override { return "infer-argument-ownership"; }
  const char* description() const override {
    return "Mark arguments of module-internal functions consumed when every call site passes its last use";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    std::vector<ir::Operation*> funcs = module.functions();
    std::map<std::string, ir::Operation*> by_name;
    for (ir::Operation* f : funcs) by_name[f->str_attr("sym_name")] = f;
    // Call sites per callee, and the call graph.
    std::map<std::string, std::vector<ir::Operation*>> calls;
    std::map<std::string, std::set<std::string>> callees;
    for (ir::Operation* f : funcs) {
      const std::string name = f->str_attr("sym_name");
      callees[name];
      f->Walk([&](ir::Operation* op) {
        if (!op->is(ir::OpCode::kFuncCall)) return;
        const std::string* c = CalleeName(op);
        if (!c) return;
        calls[*c].push_back(op);
        callees[name].insert(*c);
      });
    }
    std::set<std::string> recursive = RecursiveFunctions(callees);

    // Candidates: (function, argument) pairs still borrowed.
    struct Candidate {
      ir::Operation* func;
      unsigned arg;
      std::string reason;  // why it stays borrowed, from the last round
      const ir::Operation* at = nullptr;
    };
    std::vector<Candidate> open;
    std::vector<Candidate> inferred;  // marked consumed by the fixpoint
    for (ir::Operation* f : funcs) {
      if (!IsPrivate(f) || f->num_regions() != 1 || f->region(0)->empty()) continue;
      const std::string name = f->str_attr("sym_name");
      ir::Block* entry = f->region(0)->block(0);
      std::vector<std::string> own = f->strs_attr("arg_ownership");
      for (unsigned i = 0; i < entry->num_arguments(); ++i) {
        if (i < own.size() && own[i] == "consume") continue;
        const ir::Type& t = entry->argument(i)->type();
        if (!t.is_tensor() && !analysis::IsResource(entry->argument(i))) continue;  // only storage has ownership
        if (recursive.count(name)) {
          ctx.Remark(f, "argument #" + std::to_string(i) + " of @" + name +
                            " stays borrowed: the function is recursive");
          continue;
        }
        if (calls[name].empty()) {
          ctx.Remark(f, "argument #" + std::to_string(i) + " of @" + name +
                            " stays borrowed: no call site in the module");
          continue;
        }
        open.push_back(Candidate{f, i, "", nullptr});
      }
    }

    // Fixpoint: each round marks every candidate all of whose call sites hand
    // over; stops when a round marks nothing.
    for (bool changed = true; changed;) {
      changed = false;
      std::vector<Candidate> still;
      for (Candidate& c : open) {
        const std::string name = c.func->str_attr("sym_name");
        bool all = true;
        for (ir::Operation* call : calls[name]) {
          analysis::Verdict v = HandsOver(call, c.arg);
          if (!v.ok) {
            all = false;
            c.reason = v.reason;
            c.at = call;
            break;
          }
        }
        if (all) {
          MarkConsumed(c.func, c.arg);
          inferred.push_back(c);
          changed = true;
        } else {
          still.push_back(c);
        }
      }
      open.swap(still);
    }

    // Check again with every inference in place (header comment: "Each
    // decision must still hold once it is made"); drop those that no longer
    // hold until none is dropped.
    for (bool dropped = true; dropped;) {
      dropped = false;
      std::vector<Candidate> kept;
      for (Candidate& c : inferred) {
        bool all = true;
        for (ir::Operation* call : calls[c.func->str_attr("sym_name")]) {
          analysis::Verdict v = HandsOverOnceConsumed(call, c.arg);
          if (!v.ok) {
            all = false;
            c.reason = "once consumed, " + v.reason;
            c.at = call;
            break;
          }
        }
        if (all) {
          kept.push_back(c);
        } else {
          MarkBorrowed(c.func, c.arg);
          open.push_back(c);
          dropped = true;
        }
      }
      inferred.swap(kept);
    }
    for (const Candidate& c : inferred)
      ctx.Remark(c.func, "argument #" + std::to_string(c.arg) + " of @" + c.func->str_attr("sym_name") +
                             " inferred consume: every call site passes its last use");
    for (const Candidate& c : open)
      ctx.Remark(c.at ? c.at : c.func, "argument #" + std::to_string(c.arg) + " of @" +
                                           c.func->str_attr("sym_name") + " stays borrowed: " + c.reason);
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateInferArgumentOwnershipPass() {
  return std::make_unique<InferArgumentOwnershipPass>();
}

}  // namespace kiln::transforms
