// Pass: --place-barriers (the allocated level; pipeline.cc
// AllocationPipeline, last, after --materialize-edge-copies)
//
// Decides the barriers between the device commands of every function and
// writes each one into the IR as a `stream.cmd.barrier` op carrying the byte
// ranges it covers, and the barriers before the host's reads (`host = true`,
// below). The backend (compiler/backend/) writes each barrier op out as one
// hal.command_buffer.barrier (host: hal.command_buffer.host_barrier; one
// VkBufferMemoryBarrier per range) and decides nothing.
//
// Byte ranges: derived on demand from the storage plan
// (compiler/analysis/storage_plan.h) rather than written as attributes on
// every command. The plan (`storage` / `storage_offset` per result, the
// function's `storages`) is already the single written form of where each
// binding lives: the range a binding reads or writes is its value's
// placement (analysis::PlacementOf: storage id, offset, SizeOf bytes). A
// second copy of the same numbers on every dispatch would go stale whenever
// a pass re-places a value (emplacement), and nothing but this pass reads
// them. Commands and their ranges:
//   stream.async.dispatch   reads every operand's range, writes every result's
//                           (a result placed by --emplace-allocations: its
//                           binding, from the offset aligned down to 256; its
//                           placement target is not read);
//   stream.async.clone / transfer  reads operand 0, writes the result;
//   stream.async.update     reads operand 1, writes [offset, offset+length)
//                           of the result;
//   stream.async.copy       reads [src_offset, +length) of operand 1, writes
//                           [dst_offset, +length) of the result;
//   stream.async.splat / fill   writes the filled bytes;
//   plus take_or_clone of a taken argument. Terminators, yields, global
//   loads and stores record nothing: after --materialize-edge-copies and
//   --materialize-result-copies every value is already where an edge, a
//   global or a return needs it, and the backend refuses a value that is not.
// A storage whose base offset is known only at run time (argument, taken,
// donated, output, call result) has exact ranges relative to that base: two
// ranges of it compare exactly, and the backend adds the base when it writes
// the barrier. Two such storages of one allocation (an argument and its taken
// or donated storage) are taken to overlap.
//
// Hazards, in recording order (the order the backend records commands into
// one in-order queue): a command that reads a range overlapping a pending
// write (RAW), or writes a range overlapping a pending read (WAR) or write
// (WAW), of the same allocation, gets a barrier first. Pending accesses are
// those recorded since the last barrier:
//  - a barrier covers every pending write and the pending reads the command
//    conflicts with (one range per distinct range); it then clears them all
//    (its execution dependency orders every earlier command, and naming all
//    pending writes makes them visible at once instead of a barrier later).
//    Measured on the 16 golden models, covering only the conflicting
//    pending writes (and keeping the others pending) is never better: the
//    same or more barriers (det_text 80 -> 87, silero_vad 128 -> 129) and
//    more bytes covered in all (cls 3.84 -> 4.85 MB, det 9.08 -> 9.79 MB:
//    the writes left pending are named again by a later barrier);
//  - two commands writing disjoint subranges of one buffer, or only reading,
//    get no barrier; the constant pool is never written, so its reads are
//    never pending;
//  - control flow: each branch of scf.if / scf.index_switch / cf.cond_br
//    starts from the state before it and the join has the union pending; a
//    loop's body starts each trip with every range the body touches pending
//    (trip k+1 after trip k: the back edge), and after the loop those are
//    pending together with what the exit edge had; a block other than the
//    entry of a multi-block body starts with every range of the function
//    pending;
//  - a call into another function submits the work recorded so far (when
//    the backend does: nested in a region, or after recorded work), and a
//    stream.async.load waits for it on the host: nothing is pending after;
//  - a consumed argument or call result whose registers are dropped at its
//    dealloca (single-block bodies) leaves nothing pending.
//
// The barrier op:
//   "stream.cmd.barrier"() {ranges = [id, offset, length, ...], command = k}
//   `ranges`: per range the storage id (the plan's), the byte offset in its
//   buffer (an arena slot's offset includes the slot's place in the arena; a
//   storage with a run-time base: relative to that base) and the length (0:
//   to the end of the buffer, where the storage's length is unknown). It is
//   placed right before the op whose commands it precedes; `command` (absent:
//   0) is the index of that command among the op's hazard-tracked commands
//   in recording order (every op records one today).
//
// Host barriers: the host reads device memory at two points, and each gets
// a barrier op with `host = true` right before it, naming exactly the bytes
// the host reads (the backend writes it as hal.command_buffer.host_barrier,
// device writes -> HOST_READ, into the command buffer that point submits;
// command buffers record no other device -> host barrier):
//  - a stream.async.load: the loaded bytes (an i64: its low 4, as the
//    backend reads them), unless they are the constant pool's;
//  - the func.return of a function that is not private: each result's
//    range (its export's placement) the device wrote in this function (a
//    write recorded on any path or trip, a take_or_clone, a call result; in
//    a multi-block body every result).
// None for a private function's results (its caller's device commands read
// them, ordered by each command buffer's leading barrier), a result the
// device did not write here (a consumed argument returned untouched), or a
// load of the constant pool.
//   "stream.cmd.barrier"() {host = true, ranges = [id, offset, length, ...]}
//
// Must not act: commands that only read; writes to disjoint subranges;
// reads of the constant pool; functions without a storage plan.
//
// Before (%a and %b in disjoint halves of the arena, %c reads both):
//   %a = "stream.async.dispatch"(%x) {storage = [1], ...}
//   %b = "stream.async.dispatch"(%x) {storage = [2], ...}
//   %c = "stream.async.dispatch"(%a, %b) {storage = [3], ...}
// After:
//   %a = "stream.async.dispatch"(%x) {storage = [1], ...}
//   %b = "stream.async.dispatch"(%x) {storage = [2], ...}
//   "stream.cmd.barrier"() {ranges = [1, 0, 64, 2, 256, 64]}
//   %c = "stream.async.dispatch"(%a, %b) {storage = [3], ...}
//
// Errors: kInvalidArgument for a malformed storage plan (ReadStoragePlan).
// Preconditions: --schedule-allocation (and --materialize-edge-copies) ran;
// the pass runs last: a later pass that moves or adds commands invalidates
// the barriers.
#ifndef KILN_COMPILER_TRANSFORMS_PLACE_BARRIERS_H_
#define KILN_COMPILER_TRANSFORMS_PLACE_BARRIERS_H_

#include <cstdint>

#include "compiler/ir/ir.h"

namespace kiln::transforms {

// Totals of the barrier ops in `module` (kiln-compile --report):
// `barriers` ops, `ranges` ranges in all, `bytes` covered by ranges of known
// length, and `whole_buffer_ranges` ranges that run to the end of their
// buffer (length 0: a storage of unknown length).
// The host barriers (`host = true`) are counted apart, in `host_*`.
struct BarrierTotals {
  int64_t barriers = 0;
  int64_t ranges = 0;
  int64_t bytes = 0;
  int64_t whole_buffer_ranges = 0;
  int64_t host_barriers = 0;
  int64_t host_ranges = 0;
  int64_t host_bytes = 0;
  int64_t host_whole_buffer_ranges = 0;
};
BarrierTotals CountBarriers(ir::Module& module);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_PLACE_BARRIERS_H_
