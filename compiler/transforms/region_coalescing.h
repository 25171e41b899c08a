// Copy coalescing at structured control flow: the rules
// --schedule-allocation (schedule_allocation.h) applies before it plans the
// arena. Each says which region results and loop-carried values can share
// the storage of the value flowing into them, so the edge (a yield, a loop
// entry) copies nothing.
#ifndef KILN_COMPILER_TRANSFORMS_REGION_COALESCING_H_
#define KILN_COMPILER_TRANSFORMS_REGION_COALESCING_H_

#include <functional>
#include <map>
#include <set>

#include "compiler/ir/ir.h"

namespace kiln::transforms {

// Copy coalescing at structured control flow (region_coalescing.cc).
// The value whose whole storage `v` lives in through in-place (tied)
// updates only: `v` itself when it is not a tied result; no slice.
ir::Value* TiedChainRoot(ir::Value* v);
// Region results of the scf ops of `body` (and the loop-carried block
// arguments sharing their storage) that can live in a consumed import's
// storage, mapped to that import: every value flowing into the result (the
// loop's initial value, each branch's yield) is the import or an in-place
// update of it, the sizes match, and nothing reads the import's storage
// after the op, inside a loop's body, or through a call. The loop entry and
// the yields then copy nothing; the caller's donated buffer is the carried
// storage.
std::map<ir::Value*, ir::Value*> ValuesInConsumedImports(ir::Block* body);
// The same inside the body of every scf.for of `body`: an scf.if /
// index_switch result in a loop body whose incoming values are the carried
// argument or in-place updates of it (a branch may also yield a fresh value,
// or any value that views no carried storage, copied in at its yield) lives
// in the carried storage, so neither the
// yield nor the loop's back edge copies; likewise a nested loop's carried
// value. Mapped to the carried argument.
std::map<ir::Value*, ir::Value*> ValuesInCarriedArguments(ir::Block* body);
// The fresh allocation (ops.def: a stream-level new allocation) a branch
// yields `v` from, through in-place updates all defined in `branch`; nullptr
// when `v` does not come from one. --schedule-allocation writes it straight into the
// region result's storage, so the yield copies nothing.
ir::Value* FreshRootYielded(ir::Value* v, ir::Block* branch);
// Fresh allocations made before an scf.if / scf.index_switch of `body`
// (the value or the root of in-place updates) that one region yields,
// mapped to the op's result: the value is written straight into the
// result's storage from its definition on, so that region's yield copies
// nothing, when nothing reads it after the op or in the other regions
// (which write their own yields there) and it does not escape. When several
// regions yield values from outside the op, the first of them (region
// order) that qualifies is placed; the others copy at their yields. A root
// yielded by more than one region is not placed.
std::map<ir::Value*, ir::Value*> OuterValuesYielded(ir::Block* body, const std::set<ir::Value*>& escaping);
// In a function body with branches (cf.br / cf.cond_br): block arguments
// that share their incoming value's storage (copy coalescing), mapped to
// that value. Arguments in `excluded` (escaping, or already placed) take
// part in no sharing; `has_own_storage` says which values own storage.
// The rule: an argument A reached by exactly one edge, passing a value v
// that lives in the whole storage of R (v is R, or an in-place update of R:
// no slice), where R is another block's argument or a value with storage of
// its own, takes R's storage when nothing observes v after the edge except
// through A (analysis::FindLaterObserver), the edge passes nothing else
// living in R to the same block, the sizes match and A does not escape.
// The branch then copies nothing: a loop whose body block forwards the
// header's carried value and branches back with its in-place update copies
// nothing per trip. Safe because A's block has one predecessor edge: once
// R's block runs again (the only way R's storage is written by an edge),
// A is no longer live (A's uses are dominated by A's block, and R's block
// is not), and every other write into R's storage is an in-place update
// the elision pass proved unobserved, which FindLaterObserver covers.
std::map<ir::Value*, ir::Value*> BlockArgumentsSharingStorage(ir::Operation* func, const std::set<ir::Value*>& excluded,
                                                              const std::function<bool(ir::Value*)>& has_own_storage);

// A fresh value a branch of an scf.if / scf.index_switch of `func` creates
// only to yield it, directly or through in-place updates in the branch (a
// clone the branch then mutates), mapped from its fresh root
// (FreshRootYielded) to the op's result: it is written straight into the
// result's storage, so the yield copies nothing. Not when the value has
// uses other than the yield and read-only views in the yield's block, when
// its root is in `escaping`, or when the result shares a carried value's
// storage (`shares_root`: the branch may read that value while it computes
// `v`). The first region (program order) claiming a root keeps it.
std::map<ir::Value*, ir::Value*> FreshValuesYieldedIntoResults(ir::Operation* func,
                                                               const std::set<ir::Value*>& escaping,
                                                               const std::map<ir::Value*, ir::Value*>& shares_root);
// Copies made only to be a loop's initial value (elide-async-copies hoists
// the copy of a borrowed, constant or still-live initial value out of the
// loop): a stream.async.clone of `func`, not in `escaping` or *yield_into,
// whose one use besides lifetime ops, in its block, is an scf.for init,
// an scf.while operand or a branch operand into a block that cannot reach
// the branch's block. The copy is written straight into the carried storage
// (scf.for result i, scf.while "before" argument i, or result i when the
// condition forwards it at its own position, or the block argument): added
// to *yield_into (copy -> carried value); returned mapped from the carried
// value to the copy (one copy per carried value).
std::map<ir::Value*, ir::Operation*> InitialCopiesIntoCarriedStorage(ir::Operation* func,
                                                                     const std::set<ir::Value*>& escaping,
                                                                     std::map<ir::Value*, ir::Value*>* yield_into);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_REGION_COALESCING_H_
