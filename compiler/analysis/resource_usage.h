// Resource usage analysis for the stream level (compiler/ir/ops.h "Stream
// level" and "Structured control flow"): tied (in-place) operands, value flow
// through branches and scf regions, content aliases, "is this value observed
// after this op", and "is this storage owned by the function". Shared by
// --materialize-copy-on-write and --elide-async-copies (DESIGN.md "Tied
// operand": COW inserts clones defensively, elision removes each clone whose
// source has no later use; both passes take the op contract from here, so
// they cannot disagree on which operands are written in place).
//
// The analysis is stateless: every query walks the current IR, so a pass may
// rewrite the IR between queries. Cost: one query is linear in the size of
// the function (times the number of aliases and incoming values it follows);
// the passes run one query per clone or tied op.
//
// Terms used below:
//  - A *flow edge* passes a value into a *flow target*: a cf.br/cf.cond_br
//    operand into a successor block argument; an scf.yield operand into the
//    result of its scf.if/scf.index_switch/scf.for and (scf.for, scf.while
//    "after" region) into the loop's block argument of the next trip; an
//    scf.condition operand into the scf.while "after" argument and result; an
//    scf.for/scf.while init operand into the first trip's block argument (and,
//    for scf.for, into the result: a zero-trip loop returns its init); a
//    stream.async.execute capture into its region argument; a stream.yield
//    operand into the execute result.
//  - *Content aliases* of v: values that may name the same bytes as v, with
//    the contents v holds: v itself; stream.timepoint.await results and
//    operands; stream.async.slice results and sources (a slice may be a
//    view); func.call results and `consume` arguments (a callee may return
//    its consumed argument; a borrowed one it returns is copied, so results
//    never alias borrowed operands); stream.tensor.import/export results and
//    operands; the tied
//    operand behind a tied result; and every flow target v is passed to.
//  - A value is *observed after* op P when some use of one of its content
//    aliases may run after P without re-running the alias's definition: a
//    later op in the same block, an op of a block reachable through branches,
//    an op nested in the regions of P or of a later op, an op after the
//    enclosing region op (scf.if, index_switch: a sibling branch is never
//    "later"), or, when the alias is defined outside an enclosing scf.for /
//    scf.while, any op of that loop (a later trip). Passing a value through a
//    branch, yield or loop init is a use. A value passed to a `consume`
//    parameter of a call escapes: it is always observed; so does one stored
//    to a global when it may live in a global's buffer (its storage root is
//    a util.global.load: the state update in place). Any other store copies
//    the value into the global (--materialize-edge-copies) and is a read at
//    the store, as a borrowed call operand is a read at the call.
#ifndef KILN_COMPILER_ANALYSIS_RESOURCE_USAGE_H_
#define KILN_COMPILER_ANALYSIS_RESOURCE_USAGE_H_

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::analysis {

// ---------------------------------------------------------------------------
// Op contract: tied operands and sizes
// ---------------------------------------------------------------------------
bool IsResource(const ir::Value* v);
// The operand index result `result` of `op` is written in place into, or -1:
// stream.async.dispatch `tied_operands[result]`; stream.async.update / copy /
// fill: operand 0 (the target). The ties are the `Tie` column of
// compiler/ir/ops.def (ir::TiedOperandIndex).
int TiedOperandOfResult(const ir::Operation* op, unsigned result);
// Every operand index `op` writes in place, ascending, without duplicates.
// Also every operand a func.call passes to a `consume` parameter (see
// IsConsumedCallOperand): the callee may update it in place or reuse it, so
// copy-on-write treats it like a tied operand.
std::vector<unsigned> TiedOperands(const ir::Operation* op);
// True when operand `operand` of the func.call `call` goes to a parameter the
// callee declares `consume` (arg_ownership of the callee's func.func, a
// definition or an import declaration of this module): ownership moves to
// the callee and the caller's storage must not be used after the call.
// Borrowed operands (the default) are only read by the callee.
bool IsConsumedCallOperand(const ir::Operation* call, unsigned operand);
// Byte size of result `result` of `op` from its `sizes`/`size` attribute; -1
// when unknown.
int64_t ResultSize(const ir::Operation* op, unsigned result);

// ---------------------------------------------------------------------------
// Value flow through control flow
// ---------------------------------------------------------------------------
bool IsLoopOp(const ir::Operation* op);  // scf.for, scf.while

// One flow edge into a flow target.
struct FlowEdge {
  ir::Value* value = nullptr;     // the value passed
  ir::Operation* edge = nullptr;  // the op passing it (branch, yield, condition,
                                  // or the loop / execute op for inits, captures)
  unsigned operand = 0;           // operand index of `value` on `edge`
};
// Every flow edge into `v` (a block argument or a region op result). Entry
// arguments of func.func have none. *modelled is set to false when `v` is a
// block argument or result of an op whose flow this analysis does not know
// (callers must then be conservative); true otherwise.
std::vector<FlowEdge> IncomingValues(ir::Value* v, bool* modelled);
// The flow targets operand `i` of `op` is passed to (empty if none).
std::vector<ir::Value*> FlowTargets(const ir::Operation* op, unsigned i);
// Flow operands of one op that land in the same destination belong to one
// group (cf.cond_br: one per successor; all others: group 0); -1 when operand
// `i` is not a flow operand (a condition, loop bounds, await timepoints).
int FlowGroup(const ir::Operation* op, unsigned i);

// ---------------------------------------------------------------------------
// Later observers
// ---------------------------------------------------------------------------
// The content aliases of v (v first). When `skip_flows_at` is set, the flow
// edges that pass v itself through that op are not followed (used to ask
// "is v observed after it is handed over at this edge, other than through
// the edge").
// `exclusive_of` (optional): a program point; flows through the yield of an
// scf.if / index_switch branch other than the one holding it are skipped
// (those branches do not run in the same execution as the point).
std::vector<ir::Value*> ContentAliases(ir::Value* v, const ir::Operation* skip_flows_at = nullptr,
                                      const ir::Operation* exclusive_of = nullptr);

struct Observer {
  enum class Kind {
    kNone,
    kLaterUse,   // `op` uses an alias later in program order
    kLaterTrip,  // `op` uses an alias defined outside `loop` in a later trip
    kEscape,     // an alias is stored to a global it may live in / passed to a call (`op`)
  };
  Kind kind = Kind::kNone;
  ir::Operation* op = nullptr;
  ir::Operation* loop = nullptr;
  explicit operator bool() const { return kind != Kind::kNone; }
};
// The first op found that may observe the contents v holds after `point`
// runs (see "observed after" above); kNone when there is none. Uses by
// `point` itself do not count (its nested regions do).
Observer FindLaterObserver(ir::Value* v, ir::Operation* point,
                           const ir::Operation* skip_flows_at = nullptr);
// `'stream.async.dispatch' (loc)` or `'stream.async.dispatch'`: how remarks
// name an op.
std::string DescribeOp(const ir::Operation* op);

// ---------------------------------------------------------------------------
// Ownership
// ---------------------------------------------------------------------------
struct Verdict {
  bool ok = false;
  std::string reason;  // when !ok: "source is a borrowed import", ...
};
// Is the storage `v` holds owned by this function, i.e. may it be written in
// place once v's contents are dead? Owned: results of clone, alloca, splat,
// transfer, untied dispatch results, imports with consume = true, func.func
// arguments marked "consume" in arg_ownership; tied results, await results
// and slices when their source is owned; block arguments and region results
// when every incoming value is owned, is passed once per edge and is not
// observed after its edge. Not owned: borrowed imports, constants, global
// loads, call results, other function arguments, anything unknown.
Verdict StorageOwnership(ir::Value* v);

// May `user` take over the storage of its operand `operand` (write it in
// place, or replace a clone of it by it)? True when the storage is owned, the
// contents are not observed after `user`, and `user` reads the value through
// no other operand. The reason says why not, most direct first: storage
// that is never the function's ("source is a borrowed import"), then a later
// observer ("source is used later by 'op' (loc)", "source is captured by a
// loop region (...)"), then storage arriving through a live edge ("source is
// loop-carried and live after the loop (...)").
Verdict CanReuseStorage(ir::Operation* user, unsigned operand);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_RESOURCE_USAGE_H_
