// Piecewise donation (donation.h).
#include "compiler/analysis/donation.h"

#include <map>
#include <set>

#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"

namespace kiln::analysis {
namespace {

using ir::OpCode;

void CollectReads(ir::Value* v, int64_t begin, int64_t end, int depth, std::vector<ByteAccess>* out) {
  for (const ir::Use& u : v->uses()) {
    ir::Operation* op = u.user;
    if (IsLifetimeOp(op) || op->is(OpCode::kStreamTensorExport)) continue;
    if (op->is(OpCode::kStreamAsyncSlice) && u.operand_index == 0 && depth < 64) {
      const int64_t b = begin + op->int_attr("offset");
      CollectReads(op->result(0), b, b + op->int_attr("length"), depth + 1, out);
      continue;
    }
    out->push_back({op, begin, end});
  }
}

// Whether a view of a chain value (or a view of it) is written in place or
// handed to a call: a write the chain walk would not see.
bool ViewWritten(ir::Value* view, int depth) {
  for (const ir::Use& u : view->uses()) {
    ir::Operation* op = u.user;
    if (op->is(OpCode::kFuncCall)) return true;
    for (unsigned r = 0; r < op->num_results(); ++r)
      if (TiedValue(op, r) == view) return true;
    if (op->is(OpCode::kStreamAsyncSlice) && (depth > 16 || ViewWritten(op->result(0), depth + 1))) return true;
  }
  return false;
}

}  // namespace

std::vector<ByteAccess> ReadsOf(ir::Value* v, int64_t size) {
  std::vector<ByteAccess> reads;
  CollectReads(v, 0, size, 0, &reads);
  return reads;
}

ChainWrites WritesInto(ir::Value* target, int64_t size) {
  ChainWrites result;
  ir::Operation* def = target->defining_op();
  if (!def || !def->is(OpCode::kStreamAsyncAlloca)) return result;
  ir::Block* block = def->parent_block();
  ir::Value* v = target;
  for (int links = 0; links < 4096; ++links) {
    ir::Operation* writer = nullptr;
    unsigned written = 0;
    for (const ir::Use& u : v->uses()) {
      ir::Operation* op = u.user;
      if (op->is(OpCode::kFuncCall)) return result;  // a callee may write it
      if (op->is(OpCode::kStreamAsyncSlice) && ViewWritten(op->result(0), 0)) return result;
      for (unsigned r = 0; r < op->num_results(); ++r) {
        if (TiedValue(op, r) != v) continue;
        if (writer) return result;  // the chain branches
        writer = op;
        written = r;
      }
    }
    if (!writer) break;
    if (writer->parent_block() != block) return result;
    ByteAccess w{writer, 0, size};
    if (writer->is(OpCode::kStreamAsyncDispatch)) {
      std::vector<int64_t> offsets = writer->ints_attr("result_offsets"), lengths = writer->ints_attr("result_lengths");
      if (written < offsets.size() && offsets[written] >= 0) {
        if (written >= lengths.size()) return result;
        w.begin = offsets[written];
        w.end = offsets[written] + lengths[written];
      }
    } else if (writer->is(OpCode::kStreamAsyncUpdate) || writer->is(OpCode::kStreamAsyncFill)) {
      w.begin = writer->int_attr("offset");
      w.end = w.begin + writer->int_attr("length");
    } else {
      return result;  // a write whose range this does not know
    }
    result.writes.push_back(w);
    v = writer->result(written);
  }
  result.ok = true;
  return result;
}

const ByteAccess* FirstConflict(const std::vector<ByteAccess>& reads, const std::vector<ByteAccess>& writes,
                                const std::function<int64_t(ir::Operation*)>& step) {
  for (const ByteAccess& r : reads) {
    const int64_t rs = step(r.op);
    for (const ByteAccess& w : writes) {
      if (r.begin >= w.end || w.begin >= r.end) continue;  // disjoint bytes
      if (rs < 0 || rs >= step(w.op)) return &r;
    }
  }
  return nullptr;
}

std::vector<int> MatchDonors(const std::vector<std::vector<int>>& candidates) {
  std::vector<int> donor(candidates.size(), -1);
  std::map<int, size_t> holder;  // donor -> the value it serves
  std::function<bool(size_t, std::set<int>&)> augment = [&](size_t v, std::set<int>& seen) {
    for (int d : candidates[v]) {
      if (!seen.insert(d).second) continue;
      auto held = holder.find(d);
      if (held == holder.end() || augment(held->second, seen)) {
        holder[d] = v;
        donor[v] = d;
        return true;
      }
    }
    return false;
  };
  for (size_t v = 0; v < candidates.size(); ++v) {
    for (int d : candidates[v])
      if (!holder.count(d)) {
        holder[d] = v;
        donor[v] = d;
        break;
      }
    std::set<int> seen;
    if (donor[v] < 0) augment(v, seen);
  }
  return donor;
}

}  // namespace kiln::analysis
