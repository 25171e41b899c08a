// Pass: --lower-timeline (the first pass of the allocated level; pipeline.cc)
//
// Lowers the stream level's execution regions and timepoints for the
// bytecode emitter (compiler/backend/), which refuses a function that still
// has them (stream.async.execute, stream.timepoint.await / join).
//
// The emitter records a function into command buffers on one in-order
// queue: every command is ordered after earlier ones by the barriers it
// derives from byte ranges, a host read (stream.async.load) submits and
// waits (execute_and_wait), and the function end submits without blocking
// (hal.command_buffer.execute, "final"), signalling the invocation's fence.
// Within one queue, then, the timeline ops need no code of their own:
//  - stream.async.execute: its body is recorded in place (moved before the
//    op); each region result aliases what the region yields, each block
//    argument is its captured operand; its timepoint is reached when the
//    recorded work is, which the queue order already expresses;
//  - stream.timepoint.await: its results are its resource operands (the
//    await the host must observe is the one the emitter makes before a
//    stream.async.load, or the invocation's final signal);
//  - stream.resource.dealloca: its timepoint becomes an immediate one right
//    before it (queue order: after the work recorded before it); the
//    emitter lowers the dealloca itself;
//  - stream.timepoint.immediate / join: erased once unused (immediates only
//    deallocas use are kept);
//  - timepoints carried through control flow (scf.if / index_switch
//    results, scf.for / while carried and forwarded values, cf block
//    arguments): removed from the yields, region arguments and results, and
//    each use becomes an immediate timepoint at that point (queue order
//    again).
// Errors: kUnimplemented when a timepoint leaves the function (a func.return
// operand: exported functions signal fences instead, kiln_invoke_async),
// naming the op.
#ifndef KILN_COMPILER_TRANSFORMS_LOWER_TIMELINE_H_
#define KILN_COMPILER_TRANSFORMS_LOWER_TIMELINE_H_

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::transforms {

// Rewrites `func` (a func.func at the stream level) in place as described
// above. Returns the number of execution regions inlined in *regions and of
// awaits removed in *awaits (either may be null). Errors
// (kInvalidArgument): a malformed execution region or await, named by its
// location; kUnimplemented as above.
Status LowerTimeline(ir::Operation* func, int* regions = nullptr, int* awaits = nullptr);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_LOWER_TIMELINE_H_
