// Liveness of values in one func.func body: over the body's blocks (cf.br /
// cf.cond_br, back edges included), through the regions nested in them
// (scf.if, scf.index_switch, scf.for, scf.while) and around loops. The
// storage plan (--schedule-allocation) plans the transient arena from it
// (compiler/transforms/schedule_allocation.cc): two keys whose hulls do not
// overlap are never live at once and may share bytes.
//
// Program points ("steps"). Ops are numbered in the order the backend
// records them: the body's blocks in order, each op followed by the ops of
// its regions (pre-order), from 0. A region op spans its own step through
// the step of its last nested op (RegionEnd).
//
// Keys. Liveness is tracked per key: `key(v)` maps a value to what it counts
// for (e.g. the storage a tied result, a view or a coalesced block argument
// lives in), or to nullptr for a value that is not tracked. Every value of
// a key is a definition or a use of the key. Without a key function every
// value is its own key.
//
// What is computed (standard backward dataflow, e.g. Appel, "Modern
// Compiler Implementation", ch. 10, over the body's blocks; nested regions
// are folded into the block that holds them):
//   - Defs: a key is defined by the results of ops (at the op's step), by
//     the arguments of a body block (written by each predecessor's
//     terminator; DefStep counts the block's first step) and by the block
//     arguments of a nested region (at the region op's step; a loop's
//     carried arguments are written again by each trip's yield, so also at
//     the loop's RegionEnd).
//   - LiveIn / LiveOut per body block, to a fixpoint: a key used in a block
//     before any definition there is live into it; a key live into a
//     successor and not defined in the block is live out of it and into it.
//   - UseStep: a use inside an scf.for / scf.while of a key first defined
//     before that loop counts at the loop's RegionEnd (the body runs again,
//     so the key must survive every trip).
//   - Hull: the smallest [first, last] step interval covering every point
//     where the key may hold a live value: its definitions, its uses
//     (UseStep), the first / last step of each block it is live into / out
//     of, and, for a body block's argument, the terminator of every
//     predecessor (the branch writes it).
//
// Cost: O(ops) to number and collect, then O(blocks x keys) per fixpoint
// round (at most blocks + 1 rounds).
//
// Example (steps on the right):
//   ^bb0:  %a = dispatch                         0
//          cf.br ^bb1(%a)                        1
//   ^bb1(%x):  %y = dispatch(%x)                 2
//          cf.cond_br %c, ^bb1(%y), ^bb2         3
//   ^bb2:  func.return                           4
// %x is written by the edges at steps 1 and 3 and used at 2: Hull [1, 3].
// %y is defined at 2 and used by the back edge at 3: Hull [2, 3]. Nothing
// is live into ^bb1: each trip redefines %x before using it.
#ifndef KILN_COMPILER_ANALYSIS_LIVENESS_H_
#define KILN_COMPILER_ANALYSIS_LIVENESS_H_

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "compiler/ir/ir.h"

namespace kiln::analysis {

class Liveness {
 public:
  using KeyFn = std::function<ir::Value*(ir::Value*)>;
  struct Interval {
    int first = 0, last = 0;  // steps, inclusive
  };

  // `func`: a func.func (its region's blocks are the body). `key`: see
  // above; empty: every value is its own key. The analysis keeps pointers
  // into `func`, which must outlive it and not change while it is used.
  explicit Liveness(ir::Operation* func, KeyFn key = nullptr);

  // Number of steps (ops of the body, nested ones included).
  int num_steps() const { return num_steps_; }
  // Step of `op`, or -1 when it is not in the body.
  int StepOf(ir::Operation* op) const;
  // Step of the last op nested in `op`'s regions (its own step when it has
  // none); -1 when it is not in the body.
  int RegionEnd(ir::Operation* op) const;
  // Step at which a use by `user` (at its own step) of a key first defined
  // at `def_step` counts (see UseStep above).
  int UseStep(ir::Operation* user, int def_step) const;

  // Key of `v` (nullptr: not tracked).
  ir::Value* KeyOf(ir::Value* v) const;
  // Earliest step that defines `key`, or -1 when nothing does.
  int DefStep(ir::Value* key) const;
  // First and last (terminator) step of a body block.
  Interval BlockSteps(ir::Block* block) const;
  // Keys live into / out of a body block (empty for any other block).
  const std::set<ir::Value*>& LiveIn(ir::Block* block) const;
  const std::set<ir::Value*>& LiveOut(ir::Block* block) const;
  // The key's hull (see above); nullopt when nothing defines or uses it.
  std::optional<Interval> Hull(ir::Value* key) const;
  // The last step at which `key` is used (UseStep), in step order (a use
  // reached again through a back edge is not later); -1 when unused.
  int LastUse(ir::Value* key) const;

 private:
  KeyFn key_;
  int num_steps_ = 0;
  std::map<ir::Operation*, int> step_, region_end_;
  std::map<ir::Value*, int> def_step_, last_use_;
  std::map<ir::Block*, Interval> block_steps_;
  std::map<ir::Block*, std::set<ir::Value*>> live_in_, live_out_;
  std::map<ir::Value*, Interval> hull_;
};

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_LIVENESS_H_
