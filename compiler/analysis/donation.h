// Piecewise donation: whether a consumed import's storage can hold a value
// whose bytes are written range by range (an in-place concat's target:
// each placed producer writes its subrange at its own step).
//
// A donated storage is the import's buffer, at the same offsets (or a fresh
// buffer when the caller still shares it: then nothing aliases). Writing
// bytes [b, e) of it at step w is safe when every read of the import that
// covers any byte of [b, e) runs before w; a read of other bytes may run
// after (silero_vad --consume=h: LSTM layer i reads h[i] and writes hn[i],
// so hn's piece i goes into h's bytes of layer i once layer i has read them,
// while layer i + 1 still reads h[i + 1]). Queue order is program order
// within a block, so steps are positions in program order, given by the
// caller (both --emplace-allocations and --schedule-allocation use this,
// each with its own steps).
#ifndef KILN_COMPILER_ANALYSIS_DONATION_H_
#define KILN_COMPILER_ANALYSIS_DONATION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::analysis {

// Bytes [begin, end) of a value, touched by `op`.
struct ByteAccess {
  ir::Operation* op = nullptr;
  int64_t begin = 0, end = 0;
};

// Every read of `v` (a resource, e.g. a consumed stream.tensor.import), with
// the bytes of `v` it may read: an operand of `v` itself reads all of it
// ([0, size)); an operand that is a stream.async.slice view (views of views
// included) reads the view's range, offset into `v`. Lifetime ops and
// stream.tensor.export are not reads. Anything else derived from `v` (a
// tied result, a view used by a non-op) counts as a read of all of it at
// the user. Cost: the uses of `v` and of its views.
std::vector<ByteAccess> ReadsOf(ir::Value* v, int64_t size);

// Every write into the storage of `target` (a stream.async.alloca's result)
// through its chain of in-place writers: each op with a result tied to the
// chain's current value (a placed dispatch result: bytes [result_offsets,
// + result_lengths), all of it when not placed; stream.async.update and
// stream.async.fill: [offset, + length)), in chain order. `ok` is false when
// the chain leaves `target`'s block, branches (a value tied twice), or
// passes through an op whose written range is unknown: callers then treat
// the value as written whole at its definition.
struct ChainWrites {
  bool ok = false;
  std::vector<ByteAccess> writes;
};
ChainWrites WritesInto(ir::Value* target, int64_t size);

// The first read of `reads` that overlaps a write of `writes` and does not
// run before it (step(read) >= step(write)); nullptr when none conflicts.
// `step` gives an op's position in program order (a negative step is an op
// outside the region of interest: it conflicts).
const ByteAccess* FirstConflict(const std::vector<ByteAccess>& reads, const std::vector<ByteAccess>& writes,
                                const std::function<int64_t(ir::Operation*)>& step);

// One donor per value: `candidates[v]` lists the donors (indices) value v
// may take, in order of preference; returns each value's donor (-1: none),
// no donor given twice, as many values served as possible (a maximum
// bipartite matching: Kuhn's augmenting paths). Each value in order first
// takes its first free candidate, so where that greedy choice serves every
// value it is the result. Cost: O(values * edges).
std::vector<int> MatchDonors(const std::vector<std::vector<int>>& candidates);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_DONATION_H_
