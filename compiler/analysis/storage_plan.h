// The allocated level's storage plan, as IR: where every resource of a
// function lives at run time. --schedule-allocation
// (compiler/transforms/schedule_allocation.h) decides it and writes it into
// the function; the backend (compiler/backend/) reads it and only writes it
// out as registers and allocation calls. `kiln-compile --emit=kir-alloc`
// prints it.
//
// Function attributes:
//   storages = [[kind, fields...], ...]  the storages, by id (their index):
//     ["argument", k]          the caller's tensor for argument k (a view)
//     ["taken", k]             consumed argument k, written in place: taken
//                              at its first write (take_or_clone)
//     ["constant"]             the module's constant pool (offsets are each
//                              constant's place in the pool, set by the
//                              module writer)
//     ["global", "S"]          module global @S's buffer
//     ["arena", offset, length] bytes [offset, offset + length) of the
//                              function's transient arena
//     ["output", k, slot, length] backs result k: the caller's output storage
//                              when it supplies one, else allocation-cache
//                              slot `slot`
//     ["output", k, slot, length, first]  result k's copy of a value that
//                              the result backed by storage `first` (an
//                              earlier id) returns too
//                              (--materialize-result-copies'
//                              `shared_result`): the caller's output storage
//                              for result k when it supplies one; else the
//                              one buffer the group's results without output
//                              storage share: `first`'s when it is not the
//                              caller's output storage, else the first
//                              member's slot `slot`. The copy into it is
//                              made only where no earlier member wrote that
//                              shared buffer (the backend guards it with a
//                              flag)
//     ["cached", slot, length] an escaping value: allocation-cache slot
//     ["donated", k, length]   an escaping value written into consumed
//                              argument k's buffer when the caller hands it
//                              over (take_or_allocate), else a fresh one
//     ["call_result"]          what a func.call returns (the callee's storage)
//     ["temporary", slot, length] a parallel-copy temporary of an edge
//   arena_size = N             bytes of the transient arena (0: none)
//   live_bytes_peak = N        the most transient bytes live at one step of
//                              the schedule: the arena's lower bound
//   block_arg_storage / block_arg_offset = [...]  per argument of every block
//                              of the body, in order (the entry block's are
//                              the function's arguments)
// Op attributes:
//   storage / storage_offset = [...]  per result: storage id (-1: not a
//                              resource) and byte offset inside it
//   region_arg_storage / region_arg_offset = [...]  per argument of the entry
//                              block of each region, regions in order
//   edge_temps = [operand, id, ...]  an edge (scf.yield, scf.condition, cf.br,
//                              cf.cond_br) that copies `operand` through
//                              temporary `id` first (a parallel copy)
//   take_before = [id, ...]    a loop that takes these "taken" storages
//                              before its first trip
//   droppable                  (stream.tensor.import) a consumed argument
//                              that keeps the caller's buffer: its dealloca
//                              drops the registers
// A storage of kind argument, taken, donated, output or call_result has an
// offset only known at run time (a buffer view's); the offsets above are
// relative to it.
#ifndef KILN_COMPILER_ANALYSIS_STORAGE_PLAN_H_
#define KILN_COMPILER_ANALYSIS_STORAGE_PLAN_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::analysis {

struct StorageSlot {
  enum Kind { kArgument, kTaken, kConstant, kGlobal, kArena, kOutput, kCached, kDonated, kCallResult, kTemporary };
  Kind kind = kArena;
  int64_t index = -1;   // argument (kArgument, kTaken, kDonated) or result (kOutput)
  int64_t slot = -1;    // allocation-cache slot (kOutput, kCached, kTemporary)
  int64_t offset = 0;   // byte offset in the arena (kArena)
  int64_t length = 0;   // bytes (kArena, kOutput, kCached, kDonated, kTemporary)
  int64_t first = -1;   // kOutput of a group of results of one value: the group's first storage id
  std::string global;   // kGlobal: the symbol
  // Whether the storage's base offset is only known at run time.
  bool dynamic_offset() const {
    return kind == kArgument || kind == kTaken || kind == kDonated || kind == kOutput || kind == kCallResult;
  }
};

// A value's place: storage `id` (an index into the function's storages),
// `offset` bytes in.
struct ValueStorage {
  int id = -1;
  int64_t offset = 0;
};

// The plan of one function.
struct StoragePlan {
  std::vector<StorageSlot> storages;
  std::map<ir::Value*, ValueStorage> values;  // every resource value of the function
  int64_t arena_size = 0;
  int64_t live_bytes_peak = 0;
  std::map<ir::Operation*, std::vector<std::pair<unsigned, int>>> edge_temps;  // edge -> (operand, id)
  std::map<ir::Operation*, std::vector<int>> take_before;                      // loop -> taken ids
  std::vector<ir::Operation*> droppable;                                       // imports
};

// Where a value's bytes are, to compare two values the way the backend's
// hazard tracking does: the allocation they belong to (`group`: arena slots
// share one; taken and donated storage may be their argument's bytes),
// whether the base offset is known only at run time, and the byte range
// [begin, end) (arena slots at their arena offset).
struct Placement {
  int id = -1;  // the storage
  int group = -1;
  bool dynamic = false;
  int64_t begin = 0, end = 0;
};
// The placement of `v`, which `plan` must place (plan.values).
Placement PlacementOf(const StoragePlan& plan, ir::Value* v);
// Same bytes at the same offset: a copy from one to the other is no copy.
// Two storages whose base is known only at run time are the same only when
// they are one storage (a taken or donated argument may be moved to other
// bytes at run time).
inline bool SamePlace(const Placement& a, const Placement& b) {
  return a.group == b.group && a.dynamic == b.dynamic && a.begin == b.begin && (!a.dynamic || a.id == b.id);
}
// May share bytes (a run-time offset: anywhere in the allocation).
inline bool Overlap(const Placement& a, const Placement& b) {
  if (a.group != b.group) return false;
  if (a.dynamic || b.dynamic) return true;
  return a.begin < b.end && b.begin < a.end;
}

// Writes `plan` into `func`'s attributes (replacing an earlier plan).
void WriteStoragePlan(ir::Operation* func, const StoragePlan& plan);
// Reads the plan of `func`. Errors (kFailedPrecondition): the function has
// no plan (--schedule-allocation did not run); kInvalidArgument: a malformed
// one (an unknown kind, a storage id out of range, a resource without one),
// naming the op.
StatusOr<StoragePlan> ReadStoragePlan(ir::Operation* func);

// The values one edge copies at once (a parallel copy): `operands[i]` of the
// edge goes into `destinations[i]`. An scf.yield of an scf.for goes into the
// body's carried arguments; an scf.yield of an scf.while's "after" region
// into the "before" arguments; an scf.condition into the while's results;
// cf.br / cf.cond_br into each successor's arguments (one group per
// successor). Empty for any other op.
struct EdgeCopy {
  std::vector<unsigned> operands;
  std::vector<ir::Value*> destinations;
};
std::vector<EdgeCopy> EdgeCopiesOf(ir::Operation* edge);

// Barriers of the allocated level, placed by --place-barriers
// (compiler/transforms/place_barriers.h) and written out by the backend:
//   "stream.cmd.barrier"() {ranges = [storage id, byte offset, length, ...],
//                           command = k}
// `ranges`: per range the storage id of this plan, the byte offset in the
// storage's buffer and the length (0: to the end of the buffer); `command`
// (absent: 0): the barrier precedes the k-th hazard-tracked command of the
// op that follows it (OpCode::kStreamCmdBarrier, compiler/ir/ops.def).
inline constexpr const char* kBarrierOpName = "stream.cmd.barrier";
inline bool IsBarrier(const ir::Operation* op) { return op->is(ir::OpCode::kStreamCmdBarrier); }

// The name of `kind` as the IR spells it ("arena", "output", ...).
const char* StorageKindName(StorageSlot::Kind kind);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_STORAGE_PLAN_H_
