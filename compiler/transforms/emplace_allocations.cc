// Pass: --emplace-allocations
//
// In-place concat: each producer dispatch writes its result straight into
// the subrange of the concat's target that the result is copied into, so
// the copy (a stream.async.update) and the producer's own allocation go
// (IREE's iree-stream-emplace-allocations, PR #11173, issue #7729).
//
// Per block (scf regions and loop bodies included):
// 1. Concat: a stream.async.dispatch whose executable is only a
//    tensor.concat of its operands, each one contiguous byte range of the
//    result (concat along axis k with every dimension before k of extent 1;
//    axis 0 always), becomes a stream.async.alloca of the result and one
//    stream.async.update per operand at its byte offset, chained, when every
//    operand can be placed (step 2 then removes every update). A concat
//    operand that is itself such a concat dispatch, used only there, is
//    taken in: its operands become pieces of the outer target (concat of
//    concats). All or nothing: when one operand cannot be placed, the
//    concat stays one dispatch (a remark says which operand and why), as a
//    copy command per unplaced operand would be no cheaper and would add
//    copies to programs that had none.
//    Explicit update chains into an alloca (written so, or from step 1)
//    are flattened too: an update whose source ends another chain (used
//    only there) takes that chain's updates in its place, at its offset
//    into the outer target.
// 2. Emplace: an update whose source is result r of a stream.async.dispatch
//    in the same block, used only by that update, and untied, is removed.
//    The dispatch gets the current chain value as an extra operand (the
//    placement target, appended after the operands its executable binds)
//    and result r becomes that target with the subrange written:
//      tied_operands[r]         = the placement operand's index;
//      sizes[r]                 = the target's byte size;
//      result_offsets[r]        = the byte offset of the subrange (-1: a
//                                 result not placed);
//      result_lengths[r]        = its byte length (the executable's result);
//      result_element_offsets[r]= elements the shader adds to every index it
//                                 writes: the result is bound from the
//                                 subrange's offset aligned down to 256 (the
//                                 largest minStorageBufferOffsetAlignment
//                                 Vulkan allows; every allocation a target
//                                 can live in starts 256-aligned), and the
//                                 tensor starts (offset % 256) / element
//                                 bytes into that binding.
//    The placement operand is not bound and not read by the shader: the
//    backend binds result r at target + the aligned offset
//    (compiler/backend/dispatch.cc), and codegen adds the element offset to
//    its writes (codegen::CodegenOptions::result_element_offsets). The
//    alloca moves up to the first placed producer; the placed producers
//    chain the target in their block order, and the updates left (sources
//    that cannot be placed) continue the chain where the concat was.
//
// Strided placement (--fuse-pad's strided interior): an update with
// `strides` (element strides in the target, one per dimension of the
// source; offset and length are the hull from its first element to its
// last) is placed the same way, and the producer also gets
// result_strides[r] (flattened: per result its rank, then its strides;
// rank 0 for a row-major result): codegen writes element (i0..ik) at
// result_element_offsets[r] + sum(i_d * strides[d]), and the backend binds
// the hull. Its source must have no other use (a reader would index it
// row-major). It has no copy to fall back on, so an unplaced strided
// update fails the pass (kInternal), and one whose placement costs a
// consumed argument's storage (TakesDonorStorage, below) is placed anyway
// (a remark says so: the result then takes storage of its own). A chain
// may start with fills of the alloca (the pad's border, written before
// the interior): they stay
// before the placed producers (they move with the alloca). --explain-copies
// prints each strided placement ("strided placement: ...").
//
// Must not act (the concat stays a dispatch, or an explicit update stays; a
// remark says why; each is a lit test in
// compiler/test/transforms/emplace-allocations.kir):
//  - the source is used by a second update (it is also a piece of another
//    concat's target: a value lives in one place), written in place, used
//    by anything but a dispatch operand (directly or through
//    stream.async.slice views), or used in another block or region:
//    placing it would make that use see the target. A read-only dispatch
//    operand in the same block is fine, before the concat or after it: it
//    reads a stream.async.slice view of the target from the byte the read
//    starts at aligned down to 256, indexing the tensor inside it at an
//    element offset (`element_offsets`, as --slice-views does; a view of
//    the source becomes such a view of the target), when that distance is
//    whole elements of the operand. After the concat, only while the
//    concat's value is not written in place before that read (nor used in
//    a region, a call or another block before it), since the read then
//    sees the target;
//  - the source is an import (a borrowed or consumed argument), a constant,
//    a block argument (loop-carried, region argument), a call result, or
//    anything but a dispatch;
//  - the producer is in another block (outside the scf region holding the
//    concat), already writes that result in place, already places another
//    result into the same target, or runs after the chain's first update;
//  - a concat whose operands interleave (concat along axis 1 of [2, n]),
//    or that reads an operand through a coarse view (`element_offsets`);
//  - the concat's value is a function result (stream.tensor.export), a
//    consumed import at least its size could hold it as it is (every read
//    of the import before the concat), and some read of the import's bytes
//    runs at or after the placed producer of the piece over those bytes
//    (TakesDonorStorage, analysis/donation.h): schedule-allocation could
//    then no longer donate the import's storage to it. Piece by piece,
//    reads of other bytes may follow a producer (silero_vad --consume=h:
//    layer 1 reads h[1] after layer 0's piece of hn is written into h[0]).
// A piece read again, the last producer's included, reads a view of its
// subrange: for the last producer that view is a use of the chain's last
// value besides the concat's users; schedule-allocation still writes a
// yielded target straight into the region result (OnlyYieldAndViewReads).
//
// Preconditions: stream level, after the copy passes (copy-on-write sees no
// placement operand) and before --resource-lifetime (which sees the
// alloca's longer life). Executables left without a dispatch are erased.
//
// Before (@cat: tensor.concat of tensor<16xf32> and tensor<24xf32>):
//   %a = "stream.async.dispatch"(%x) {entry = @f, sizes = [64], tied_operands = [-1]}
//   %b = "stream.async.dispatch"(%x) {entry = @g, sizes = [96], tied_operands = [-1]}
//   %c = "stream.async.dispatch"(%a, %b) {entry = @cat, sizes = [160], tied_operands = [-1]}
// Step 1:
//   %t = "stream.async.alloca"() {size = 160 : i64}
//   %t1 = "stream.async.update"(%t, %a) {length = 64 : i64, offset = 0 : i64, size = 160 : i64}
//   %t2 = "stream.async.update"(%t1, %b) {length = 96 : i64, offset = 64 : i64, size = 160 : i64}
// After:
//   %t = "stream.async.alloca"() {size = 160 : i64}
//   %a = "stream.async.dispatch"(%x, %t) {entry = @f, result_element_offsets = [0], result_lengths = [64],
//          result_offsets = [0], sizes = [160], tied_operands = [1]}
//   %t2 = "stream.async.dispatch"(%x, %a) {entry = @g, result_element_offsets = [16], result_lengths = [96],
//          result_offsets = [64], sizes = [160], tied_operands = [1]}
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "compiler/analysis/donation.h"
#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/dispatch_executables.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

constexpr int64_t kBindingAlignment = 256;

// The stream.async.fills that directly follow `alloca` in its value chain
// (each used only by the next link, in the same block): a strided pad's
// border fill runs before the producer writes the interior (--fuse-pad).
std::vector<ir::Operation*> LeadingFills(ir::Operation* alloca) {
  std::vector<ir::Operation*> fills;
  ir::Value* v = alloca->result(0);
  while (v->uses().size() == 1) {
    const ir::Use& u = v->uses().front();
    if (!u.user->is(OpCode::kStreamAsyncFill) || u.operand_index != 0 ||
        u.user->parent_block() != alloca->parent_block())
      break;
    fills.push_back(u.user);
    v = u.user->result(0);
  }
  return fills;
}

// The updates of the chain rooted at `alloca` (after its leading fills):
// each one's target is the previous one's result, used only there. Stops
// at the first value used more than once or by anything but an update in
// the same block.
std::vector<ir::Operation*> ChainOf(ir::Operation* alloca) {
  std::vector<ir::Operation*> chain;
  std::vector<ir::Operation*> fills = LeadingFills(alloca);
  ir::Value* v = fills.empty() ? alloca->result(0) : fills.back()->result(0);
  while (v->uses().size() == 1) {
    const ir::Use& u = v->uses().front();
    if (!u.user->is(OpCode::kStreamAsyncUpdate) || u.operand_index != 0 ||
        u.user->parent_block() != alloca->parent_block())
      break;
    chain.push_back(u.user);
    v = u.user->result(0);
  }
  return chain;
}

// The alloca a chain of updates ending at `v` starts from, when every link
// is used once and lies in `block`; nullptr otherwise.
ir::Operation* ChainRoot(ir::Value* v, ir::Block* block) {
  while (ir::Operation* def = v->defining_op()) {
    if (def->parent_block() != block) return nullptr;
    if (def->is(OpCode::kStreamAsyncAlloca)) return def;
    if (!def->is(OpCode::kStreamAsyncUpdate)) return nullptr;
    v = def->operand(0);
    if (v->uses().size() != 1) return nullptr;
  }
  return nullptr;
}

// Why the uses of `src` other than the copy into the target (`copy`: the
// update, or the concat dispatch) forbid placing it ("": they do not).
// Once placed, `src` lives in the target: a read is safe while the target
// still holds it there. Allowed: read-only dispatch operands in the same
// block (program order is queue order), before the concat (at
// `concat_pos`) or after it; a read after it also needs the target not
// written in place before it (TargetWrittenBefore: `*last_read_after`
// gets the position of the last such read, 0 when none). A read through a
// view of `src` (a stream.async.slice whose uses are such dispatch
// operands) counts as a read by each of them. The read then binds a view
// of the target from the byte it starts at aligned down to 256, and
// indexes the tensor at an element offset: that distance must be whole
// elements of the operand (`operand_bytes`: its element byte size, 0 when
// unknown).
std::string OtherReadsConflict(ir::Value* src, ir::Operation* copy, int64_t offset, size_t concat_pos,
                               const std::map<ir::Operation*, size_t>& position, size_t* last_read_after,
                               const std::function<int64_t(ir::Operation*, unsigned)>& operand_bytes) {
  int copies = 0;
  *last_read_after = 0;
  // One read-only dispatch operand `r` of `src`, or of a view of it at
  // `view_offset` bytes into it.
  auto dispatch_read = [&](const ir::Use& r, int64_t view_offset) -> std::string {
    auto at = position.find(r.user);
    if (at == position.end()) return "the source is used again in another block or region";
    const bool after = at->second > concat_pos;
    const char* when = after ? "after" : "before";
    if (!r.user->is(OpCode::kStreamAsyncDispatch))
      return std::string("the source is used again by '") + r.user->name() + "' " + when + " the concat" +
             (view_offset >= 0 ? " (through a view)" : "");
    for (int64_t t : r.user->ints_attr("tied_operands"))
      if (t == static_cast<int64_t>(r.operand_index)) return std::string("the source is written in place ") + when + " the concat";
    // The read binds a view of the target from the byte it starts at
    // aligned down to 256, and indexes the tensor at an element offset
    // (slice_views.cc): the distance must be whole elements of the operand.
    const int64_t start = offset + std::max<int64_t>(view_offset, 0);
    const int64_t bytes = start % kBindingAlignment == 0 ? 1 : operand_bytes(r.user, r.operand_index);
    if (bytes <= 0 || (start % kBindingAlignment) % bytes != 0)
      return std::string("the source is read ") + when + " the concat at byte " + std::to_string(start) +
             " of the target, not a whole number of its elements past a 256-byte boundary";
    if (after) *last_read_after = std::max(*last_read_after, at->second);
    return "";
  };
  for (const ir::Use& r : src->uses()) {
    if (r.user == copy) {
      if (++copies > 1) return "the source is copied twice into the target";
      continue;
    }
    if (r.user->is(OpCode::kStreamAsyncUpdate) && r.operand_index == 1)
      return "the source is also copied into another target (the update" +
             (r.user->loc().empty() ? std::string() : " at " + r.user->loc()) +
             "), where it is placed or copied: a value lives in one place, and this concat reads it there";
    if (r.user->is(OpCode::kStreamAsyncSlice) && r.operand_index == 0 && position.count(r.user)) {
      // A view of the piece (a slice a dispatch reads, at an offset into
      // it): its readers read it inside the target once it is placed.
      for (const ir::Use& v : r.user->result(0)->uses()) {
        std::string why = dispatch_read(v, r.user->int_attr("offset"));
        if (!why.empty()) return why;
      }
      continue;
    }
    std::string why = dispatch_read(r, -1);
    if (!why.empty()) return why;
  }
  return "";
}

// The op of `block` that holds `op` (itself, or the op whose region holds
// it); nullptr when `op` is not in `block`.
ir::Operation* AncestorIn(ir::Operation* op, ir::Block* block) {
  while (op && op->parent_block() != block) op = op->parent_op();
  return op;
}

// Why the concat's value `target` (or a view of it) may be written before
// the op at position `until` of `block` ("" when it is not): a use there
// that is not a read-only dispatch operand, an export or a view, or a use
// inside a region or a call. A read of a placed source after the concat
// binds the target's storage, so it must still hold the source then.
std::string TargetWrittenBefore(ir::Value* target, ir::Block* block, size_t until,
                                const std::map<ir::Operation*, size_t>& position) {
  for (const ir::Use& u : target->uses()) {
    ir::Operation* holder = AncestorIn(u.user, block);
    auto at = holder ? position.find(holder) : position.end();
    if (at == position.end()) return "used in another block";
    if (at->second >= until) continue;
    if (holder != u.user) return "used in a region before it";
    if (u.user->is(OpCode::kStreamTensorExport)) continue;
    if (u.user->is(OpCode::kStreamAsyncSlice)) {
      std::string why = TargetWrittenBefore(u.user->result(0), block, until, position);
      if (!why.empty()) return why;
      continue;
    }
    if (!u.user->is(OpCode::kStreamAsyncDispatch)) return "used by '" + u.user->name() + "' before it";
    for (int64_t t : u.user->ints_attr("tied_operands"))
      if (t == static_cast<int64_t>(u.operand_index)) return "written in place before it";
  }
  return "";
}

// Why placing would cost the concat's value (`target`, exported as a
// function result from `block`) a consumed argument's storage ("" when it
// does not). schedule-allocation donates a consumed import's storage to a
// result when no read of the import's bytes runs at or after a write of
// those bytes into the result (analysis/donation.h, piece by piece: the
// placed producers write their subranges at their own positions). A
// result left without it takes an output slot the caller must provide or
// the runtime allocates. So placing is refused only when some import
// would hold the value as it is (`unplaced`: the concat's copy, or the
// updates of an explicit chain) but not once its pieces are placed
// (`placed`): a piece's producer runs before a read of the import's bytes
// under that piece (e.g. it reads them itself).
std::string TakesDonorStorage(ir::Value* target, int64_t size, ir::Block* block,
                              const std::vector<analysis::ByteAccess>& unplaced,
                              const std::vector<analysis::ByteAccess>& placed,
                              const std::map<ir::Operation*, size_t>& position) {
  bool exported = false;
  for (const ir::Use& u : target->uses()) exported = exported || u.user->is(OpCode::kStreamTensorExport);
  if (!exported) return "";
  auto step = [&](ir::Operation* op) -> int64_t {
    ir::Operation* holder = AncestorIn(op, block);
    auto at = holder ? position.find(holder) : position.end();
    return at == position.end() ? -1 : static_cast<int64_t>(at->second);
  };
  std::string why;
  for (auto& owned : block->ops()) {
    ir::Operation* imp = owned.get();
    if (!imp->is(OpCode::kStreamTensorImport) || !imp->bool_attr("consume") || imp->int_attr("size") < size) continue;
    std::vector<analysis::ByteAccess> reads = analysis::ReadsOf(imp->result(0), imp->int_attr("size"));
    const analysis::ByteAccess* r = analysis::FirstConflict(reads, placed, step);
    if (!r) return "";  // this import can hold it placed
    if (!why.empty() || analysis::FirstConflict(reads, unplaced, step)) continue;  // no donation to lose
    const analysis::ByteAccess* w = nullptr;  // the piece written first over the bytes read
    for (const analysis::ByteAccess& p : placed)
      if (r->begin < p.end && p.begin < r->end && (!w || step(p.op) < step(w->op))) w = &p;
    const std::string reader = "'" + r->op->name() + "'" + (r->op->loc().empty() ? "" : " at " + r->op->loc());
    why = "its value is a result, and the consumed argument %" + std::to_string(imp->operand(0)->index()) +
          " that could hold it has bytes [" + std::to_string(r->begin) + ", " + std::to_string(r->end) + ") read by " +
          (w && w->op == r->op ? "the producer of the piece over them itself (" + reader + ")"
                               : reader + " after the producer of the piece over them");
  }
  // Placing it leaves the value no import that could hold it, where one
  // could hold it unplaced. (Several results competing for the same
  // imports: schedule-allocation matches them, this asks about one.)
  return why;
}

// Why a value cannot be placed, by what defines it.
std::string SourceKind(ir::Value* v) {
  ir::Operation* def = v->defining_op();
  if (!def) return "a block argument";
  switch (def->code()) {
    case OpCode::kStreamTensorImport:
      return def->int_attr("consume") ? "an import (a consumed argument)" : "an import (a borrowed argument)";
    case OpCode::kStreamAsyncConstant: return "a constant";
    case OpCode::kFuncCall: return "a call result";
    case OpCode::kStreamAsyncSlice: return "a view (stream.async.slice)";
    default: return "'" + def->name() + "', not a dispatch";
  }
}

// One operand of a concat: bytes [offset, offset + length) of the target.
struct Piece {
  ir::Value* source;
  ir::Operation* copy;  // the op copying it there (concat dispatch or update)
  int64_t offset, length;
  bool strided = false;  // a strided update: [offset, offset + length) is the hull
};

class EmplaceAllocationsPass : public ir::Pass {
 public:
  const char* flag() const override { return "emplace-allocations"; }
  const char* description() const override {
    return "Make producer dispatches write into the subrange of their concat's target (in-place concat)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    DispatchExecutables executables(module);
    executables_ = &executables;
    for (ir::Operation* func : module.functions()) {
      for (ir::Block* b : BlocksOf(func)) {
        LowerConcats(b, ctx);
        Flatten(b, ctx);
        std::vector<ir::Operation*> allocas;
        for (auto& op : b->ops())
          if (op->is(OpCode::kStreamAsyncAlloca)) allocas.push_back(op.get());
        for (ir::Operation* a : allocas) Emplace(a, ctx);
      }
    }
    // Concat executables no dispatch calls any more.
    executables.EraseUncalled(module, lowered_);
    executables_ = nullptr;
    return error_;
  }

 private:
  // The flow.dispatch body of `dispatch`'s executable, nullptr when absent.
  ir::Operation* BodyOf(ir::Operation* dispatch) { return executables_->BodyOf(dispatch); }

  // Adds `bytes` (whole elements of the operand: OtherReadsConflict) to
  // the element offset dispatch `d` reads operand `k` at.
  void AddElementOffset(ir::Operation* d, unsigned k, int64_t bytes) {
    if (bytes == 0) return;
    std::vector<int64_t> eo = d->ints_attr("element_offsets");
    if (eo.size() < d->num_operands()) eo.resize(d->num_operands(), 0);
    eo[k] += bytes / OperandBytes(d, k);
    d->set_attr("element_offsets", ir::Attribute(eo));
  }

  // The element byte size of operand `k` of `dispatch` (its executable's
  // argument k); 0 when unknown.
  int64_t OperandBytes(ir::Operation* dispatch, unsigned k) {
    ir::Operation* body = BodyOf(dispatch);
    if (!body || k >= body->num_operands()) return 0;
    const ir::Type& t = body->operand(k)->type();
    return t.is_tensor() ? static_cast<int64_t>(DTypeSize(t.dtype)) : 0;
  }

  // The element byte size of result `r` of `dispatch`; 0 when unknown.
  int64_t ElementBytes(ir::Operation* dispatch, unsigned r) {
    ir::Operation* body = BodyOf(dispatch);
    if (!body || r >= body->num_results()) return 0;
    const ir::Type& t = body->result(r)->type();
    if (!t.is_tensor() || t.byte_size() != dispatch->ints_attr("sizes").at(r)) return 0;
    return static_cast<int64_t>(DTypeSize(t.dtype));
  }

  // The pieces of a dispatch whose executable is only a tensor.concat of
  // its operands, each one contiguous range of the result; empty (with
  // `why` set when it is such a concat that does not qualify) otherwise.
  std::vector<Piece> ConcatPieces(ir::Operation* dispatch, std::string* why) {
    ir::Operation* body = dispatch->num_results() == 1 ? BodyOf(dispatch) : nullptr;
    if (!body || body->num_regions() != 1 || body->region(0)->empty()) return {};
    ir::Block* block = body->region(0)->block(0);
    if (block->ops().size() != 2) return {};
    ir::Operation* concat = block->ops().front().get();
    ir::Operation* ret = block->terminator();
    if (!concat->is(OpCode::kTensorConcat) || !ret || !ret->is(OpCode::kFlowReturn) || ret->num_operands() != 1 ||
        ret->operand(0) != concat->result(0))
      return {};
    // The executable's block arguments are the dispatch operands, in order.
    ir::Block* outer = body->parent_block();
    if (body->num_operands() != outer->num_arguments() || body->num_operands() != dispatch->num_operands())
      return {};
    for (unsigned i = 0; i < body->num_operands(); ++i)
      if (body->operand(i) != outer->argument(i)) return {};
    std::vector<int64_t> element_offsets = dispatch->ints_attr("element_offsets");
    for (int64_t e : element_offsets)
      if (e != 0) {
        *why = "concat stays a dispatch: it reads an operand through a coarse view (element_offsets)";
        return {};
      }
    const ir::Type& type = concat->result(0)->type();
    int64_t axis = concat->int_attr("axis");
    if (axis < 0) axis += static_cast<int64_t>(type.shape.size());
    int64_t outer_extent = 1;
    for (int64_t d = 0; d < axis && d < static_cast<int64_t>(type.shape.size()); ++d) outer_extent *= type.shape[d];
    if (outer_extent != 1) {
      *why = "concat stays a dispatch: its operands interleave (dimensions before axis " + std::to_string(axis) +
             " hold " + std::to_string(outer_extent) + " indices)";
      return {};
    }
    std::vector<Piece> pieces;
    int64_t offset = 0;
    for (ir::Value* v : concat->operands()) {
      if (v->defining_op() || v->parent_block() != block) return {};
      int64_t length = v->type().byte_size();
      if (length > 0) pieces.push_back({dispatch->operand(v->index()), dispatch, offset, length});
      offset += length;
    }
    return pieces;
  }

  // Why `p` cannot be placed ("" when it can), the concat (its copy) at
  // `concat_pos` of `block`; `*element_bytes` is the producer's element
  // size, `*last_read_after` the position of its last read after the concat
  // (0: none; the caller checks TargetWrittenBefore).
  std::string WhyNotPlaced(const Piece& p, ir::Block* block, size_t concat_pos,
                           const std::map<ir::Operation*, size_t>& position, int64_t* element_bytes,
                           size_t* last_read_after) {
    ir::Value* src = p.source;
    ir::Operation* def = src->defining_op();
    if (!def || !def->is(OpCode::kStreamAsyncDispatch)) return "the source is " + SourceKind(src);
    if (def->parent_block() != block) return "the producer is in another block (outside the region holding the concat)";
    std::string why = OtherReadsConflict(src, p.copy, p.offset, concat_pos, position, last_read_after,
                                         [&](ir::Operation* d, unsigned k) { return OperandBytes(d, k); });
    if (!why.empty()) return why;
    if (def->ints_attr("tied_operands").at(src->index()) >= 0) return "the producer already writes that result in place";
    if (position.at(def) > concat_pos) return "the producer runs after the concat's first update";
    if (!p.strided && def->ints_attr("sizes").at(src->index()) != p.length) return "the source is not the whole update";
    *element_bytes = ElementBytes(def, src->index());
    if (*element_bytes == 0 || (p.offset % kBindingAlignment) % *element_bytes != 0)
      return "the subrange does not start on an element of the producer's result";
    return "";
  }

  // Step 1: concat dispatches whose every piece (through nested concats)
  // can be placed become an alloca and updates; the others stay, with a
  // remark. Outer concats first, so a nested one is taken in whole.
  void LowerConcats(ir::Block* block, ir::PassContext& ctx) {
    std::vector<ir::Operation*> dispatches;
    for (auto& op : block->ops())
      if (op->is(OpCode::kStreamAsyncDispatch)) dispatches.push_back(op.get());
    std::set<ir::Operation*> erased;
    for (auto it = dispatches.rbegin(); it != dispatches.rend(); ++it) {
      ir::Operation* concat = *it;
      if (erased.count(concat)) continue;
      std::string why;
      std::vector<Piece> pieces = ConcatPieces(concat, &why);
      if (pieces.empty()) {
        if (!why.empty()) ctx.Remark(concat, why);
        continue;
      }
      // Concat of concats: a piece made by another concat dispatch of this
      // block, used only here, is replaced by its own pieces.
      std::vector<ir::Operation*> inner;
      for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < pieces.size(); ++i) {
          ir::Operation* def = pieces[i].source->defining_op();
          std::string inner_why;
          std::vector<Piece> sub;
          if (!def || def->parent_block() != block || pieces[i].source->uses().size() != 1 ||
              (sub = ConcatPieces(def, &inner_why)).empty())
            continue;
          for (Piece& s : sub) s.offset += pieces[i].offset;
          inner.push_back(def);
          pieces.erase(pieces.begin() + static_cast<std::ptrdiff_t>(i));
          pieces.insert(pieces.begin() + static_cast<std::ptrdiff_t>(i), sub.begin(), sub.end());
          changed = true;
          break;
        }
      }
      std::map<ir::Operation*, size_t> position;
      for (auto& op : block->ops()) position.emplace(op.get(), position.size());
      const size_t at = position.at(concat);
      std::set<ir::Operation*> producers;
      std::string refused;
      for (const Piece& p : pieces) {
        int64_t element_bytes = 0;
        size_t last_read = 0;
        std::string w = WhyNotPlaced(p, block, at, position, &element_bytes, &last_read);
        ir::Operation* def = p.source->defining_op();
        if (w.empty() && !producers.insert(def).second) w = "the producer places another result into this target";
        if (w.empty() && last_read > 0) {
          std::string written = TargetWrittenBefore(concat->result(0), block, last_read, position);
          if (!written.empty()) w = "it is read after the concat, and the concat's value is " + written;
        }
        if (!w.empty()) {
          refused = "concat stays a dispatch: the operand at bytes [" + std::to_string(p.offset) + ", " +
                    std::to_string(p.offset + p.length) + ") cannot be placed: " + w;
          break;
        }
      }
      // The target, when it is a result, must not start before a consumed
      // argument's last read (TakesDonorStorage).
      if (refused.empty()) {
        const int64_t size = concat->ints_attr("sizes").at(0);
        std::vector<analysis::ByteAccess> placed;
        for (const Piece& p : pieces) placed.push_back({p.source->defining_op(), p.offset, p.offset + p.length});
        std::string lost = TakesDonorStorage(concat->result(0), size, block, {{concat, 0, size}}, placed, position);
        if (!lost.empty()) refused = "concat stays a dispatch: " + lost;
      }
      if (!refused.empty()) {
        ctx.Remark(concat, refused);
        continue;
      }
      const int64_t size = concat->ints_attr("sizes").at(0);
      ir::Builder b = ir::Builder::Before(concat);
      ir::Operation* alloca =
          b.Create("stream.async.alloca", {}, {ir::Type::Resource(ir::Lifetime::kTransient)},
                   {{"size", ir::Attribute(size)}});
      alloca->set_loc(concat->loc());
      ir::Value* cur = alloca->result(0);
      for (const Piece& p : pieces) {
        ir::Operation* u = b.Create("stream.async.update", {cur, p.source}, {ir::Type::Resource(ir::Lifetime::kTransient)},
                                    {{"offset", ir::Attribute(p.offset)}, {"length", ir::Attribute(p.length)},
                                     {"size", ir::Attribute(size)}});
        u->set_loc(concat->loc());
        cur = u->result(0);
      }
      concat->result(0)->ReplaceAllUsesWith(cur);
      for (ir::Operation* op : std::vector<ir::Operation*>{concat}) {
        lowered_.insert(std::get<ir::SymbolRef>(op->attr("entry")->value).name);
        erased.insert(op);
        op->Erase();
      }
      for (ir::Operation* op : inner) {  // outer first: each is unused once its user is gone
        lowered_.insert(std::get<ir::SymbolRef>(op->attr("entry")->value).name);
        erased.insert(op);
        op->Erase();
      }
    }
  }

  // Explicit chains: an update whose source ends another chain takes it in.
  void Flatten(ir::Block* block, ir::PassContext& ctx) {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& owned : block->ops()) {
        ir::Operation* outer = owned.get();
        if (!outer->is(OpCode::kStreamAsyncUpdate)) continue;
        ir::Value* src = outer->operand(1);
        ir::Operation* root = ChainRoot(src, block);
        if (!root || root->int_attr("size") != outer->int_attr("length")) continue;
        if (src->uses().size() != 1) {
          ctx.Remark(outer, "concat copy kept: the inner concat is used again");
          continue;
        }
        std::vector<ir::Operation*> inner;
        for (ir::Value* v = src; v->defining_op() != root; v = v->defining_op()->operand(0))
          inner.push_back(v->defining_op());
        std::reverse(inner.begin(), inner.end());
        const int64_t base = outer->int_attr("offset"), size = outer->int_attr("size");
        ir::Value* cur = outer->operand(0);
        for (ir::Operation* u : inner) {
          u->MoveBefore(outer);
          u->SetOperand(0, cur);
          u->set_attr("offset", ir::Attribute(u->int_attr("offset") + base));
          u->set_attr("size", ir::Attribute(size));
          cur = u->result(0);
        }
        outer->result(0)->ReplaceAllUsesWith(cur);
        outer->Erase();
        root->Erase();
        changed = true;
        break;  // the block's op list changed
      }
    }
  }

  // Step 2 for the chain of `alloca`.
  void Emplace(ir::Operation* alloca, ir::PassContext& ctx) {
    std::vector<ir::Operation*> chain = ChainOf(alloca);
    if (chain.empty()) return;
    ir::Block* block = alloca->parent_block();
    std::map<ir::Operation*, size_t> position;
    for (auto& op : block->ops()) position.emplace(op.get(), position.size());
    const size_t first_update = position.at(chain.front());
    struct Placement {
      ir::Operation* update;
      ir::Operation* producer;
      unsigned result;
      int64_t element_bytes;
      std::vector<ir::Use> reads;  // the source's other uses (reads before or after the concat)
    };
    std::vector<Placement> placed;
    std::set<ir::Operation*> producers;
    for (ir::Operation* u : chain) {
      ir::Value* src = u->operand(1);
      int64_t element_bytes = 0;
      size_t last_read = 0;
      const bool strided = !u->ints_attr("strides").empty();
      std::string why = WhyNotPlaced({src, u, u->int_attr("offset"), u->int_attr("length"), strided}, block,
                                     first_update, position, &element_bytes, &last_read);
      if (why.empty() && strided && !src->uses().empty() && src->uses().size() != 1)
        why = "a strided placement's source has other uses (they would read it row-major)";
      if (why.empty() && producers.count(src->defining_op()))
        why = "the producer already places another result into this target";
      if (why.empty() && last_read > 0) {
        std::string written = TargetWrittenBefore(chain.back()->result(0), block, last_read, position);
        if (!written.empty()) why = "it is read after the concat, and the concat's value is " + written;
      }
      if (!why.empty()) {
        // A strided update is no copy the runtime can run: it exists only
        // to be placed (--fuse-pad checks the same conditions first).
        if (strided && error_.ok())
          error_ = InternalError("the strided update%s cannot be placed: %s",
                                 u->loc().empty() ? "" : (" at " + u->loc()).c_str(), why.c_str());
        ctx.Remark(u, "concat copy kept: " + why);
        continue;
      }
      std::vector<ir::Use> reads;
      for (const ir::Use& r : src->uses())
        if (r.user != u) reads.push_back(r);
      placed.push_back({u, src->defining_op(), src->index(), element_bytes, reads});
      producers.insert(src->defining_op());
    }
    if (placed.empty()) return;
    const std::vector<ir::Operation*> fills = LeadingFills(alloca);
    ir::Value* root = fills.empty() ? alloca->result(0) : fills.back()->result(0);
    std::sort(placed.begin(), placed.end(),
              [&](const Placement& a, const Placement& b) { return position.at(a.producer) < position.at(b.producer); });
    // A target that is a result keeps a consumed argument's storage
    // (TakesDonorStorage): the concat copies stay.
    {
      std::vector<analysis::ByteAccess> unplaced, writes;
      std::set<ir::Operation*> placed_updates;
      for (const Placement& p : placed) {
        placed_updates.insert(p.update);
        writes.push_back({p.producer, p.update->int_attr("offset"),
                          p.update->int_attr("offset") + p.update->int_attr("length")});
      }
      for (ir::Operation* u : chain) {
        analysis::ByteAccess w{u, u->int_attr("offset"), u->int_attr("offset") + u->int_attr("length")};
        unplaced.push_back(w);
        if (!placed_updates.count(u)) writes.push_back(w);
      }
      std::string lost =
          TakesDonorStorage(chain.back()->result(0), alloca->int_attr("size"), block, unplaced, writes, position);
      bool strided = false;
      for (const Placement& p : placed) strided = strided || !p.update->ints_attr("strides").empty();
      if (!lost.empty() && strided) {
        // A strided update has no copy to keep: it is placed, and the
        // result takes storage of its own instead of the argument's.
        ctx.Remark(chain.back(), "strided placement: made though it costs the result a consumed argument's storage (no copy can replace it): " + lost);
      } else if (!lost.empty()) {
        for (const Placement& p : placed) ctx.Remark(p.update, "concat copy kept: " + lost);
        return;
      }
    }
    // The updates that go: their results become their targets, so the
    // updates left chain from the alloca; its uses are then rethreaded
    // after the last placed producer.
    std::vector<std::pair<int64_t, int64_t>> ranges;  // offset, length per placement
    std::vector<std::vector<int64_t>> placed_strides;  // per placement; empty: contiguous
    for (const Placement& p : placed) {
      ranges.push_back({p.update->int_attr("offset"), p.update->int_attr("length")});
      placed_strides.push_back(p.update->ints_attr("strides"));
      p.update->result(0)->ReplaceAllUsesWith(p.update->operand(0));
      p.update->Erase();
    }
    std::vector<ir::Use> alloca_uses = root->uses();
    if (position.at(placed.front().producer) < position.at(alloca)) {
      alloca->MoveBefore(placed.front().producer);
      for (ir::Operation* f : fills) f->MoveBefore(placed.front().producer);  // the border, before the interior
    }
    const int64_t size = alloca->int_attr("size");
    ir::Value* cur = root;
    for (size_t i = 0; i < placed.size(); ++i) {
      ir::Operation* d = placed[i].producer;
      const unsigned r = placed[i].result;
      const unsigned n = d->num_results();
      std::vector<ir::Value*> operands(d->operands().begin(), d->operands().end());
      operands.push_back(cur);
      d->SetOperands(operands);
      auto per_result = [&](const char* name, int64_t fill) {
        std::vector<int64_t> v = d->ints_attr(name);
        if (v.size() != n) v.assign(n, fill);
        return v;
      };
      std::vector<int64_t> tied = d->ints_attr("tied_operands"), sizes = d->ints_attr("sizes");
      std::vector<int64_t> offsets = per_result("result_offsets", -1), lengths = per_result("result_lengths", 0),
                           element_offsets = per_result("result_element_offsets", 0);
      tied[r] = static_cast<int64_t>(operands.size() - 1);
      sizes[r] = size;
      offsets[r] = ranges[i].first;
      lengths[r] = ranges[i].second;
      element_offsets[r] = (ranges[i].first % kBindingAlignment) / placed[i].element_bytes;
      d->set_attr("tied_operands", ir::Attribute(tied));
      d->set_attr("sizes", ir::Attribute(sizes));
      d->set_attr("result_offsets", ir::Attribute(offsets));
      d->set_attr("result_lengths", ir::Attribute(lengths));
      d->set_attr("result_element_offsets", ir::Attribute(element_offsets));
      if (!placed_strides[i].empty()) {
        SetResultStrides(d, r, placed_strides[i]);
        std::string list;
        for (int64_t st : placed_strides[i]) list += (list.empty() ? "" : ", ") + std::to_string(st);
        ctx.Remark(d, "strided placement: result " + std::to_string(r) + " writes the hull [" +
                          std::to_string(ranges[i].first) + ", " + std::to_string(ranges[i].first + ranges[i].second) +
                          ") of the target at element strides [" + list + "] (a padded interior, --fuse-pad)");
      }
      cur = d->result(r);
      // Reads of the result before or after the concat now read its
      // subrange of the target (OtherReadsConflict): through a view from
      // the byte the read starts at aligned down to 256, made before the
      // first of them, the reader indexing the tensor inside it at an
      // element offset (slice_views.cc); a view of the result (a slice at
      // `o` bytes into it) becomes that view of the target.
      const int64_t at = ranges[i].first;
      std::vector<ir::Use> direct;
      for (const ir::Use& rd : placed[i].reads) {
        ir::Operation* u = rd.user;
        if (!u->is(OpCode::kStreamAsyncSlice) || rd.operand_index != 0) {
          direct.push_back(rd);
          continue;
        }
        const int64_t start = at + u->int_attr("offset"), base = start - start % kBindingAlignment;
        u->set_attr("length", ir::Attribute(start + u->int_attr("length") - base));
        u->set_attr("offset", ir::Attribute(base));
        for (const ir::Use& v : u->result(0)->uses()) AddElementOffset(v.user, v.operand_index, start - base);
      }
      if (!direct.empty()) {
        ir::Operation* first = direct.front().user;
        for (const ir::Use& rd : direct)
          if (position.at(rd.user) < position.at(first)) first = rd.user;
        const int64_t base = at - at % kBindingAlignment;
        ir::Operation* view = ir::Builder::Before(first).Create(
            "stream.async.slice", {cur}, {ir::Type::Resource(ir::Lifetime::kTransient)},
            {{"offset", ir::Attribute(base)}, {"length", ir::Attribute(at + ranges[i].second - base)}});
        view->set_loc(d->loc());
        for (const ir::Use& rd : direct) {
          rd.user->SetOperand(rd.operand_index, view->result(0));
          AddElementOffset(rd.user, rd.operand_index, at - base);
        }
      }
    }
    for (const ir::Use& u : alloca_uses) u.user->SetOperand(u.operand_index, cur);
  }

  const DispatchExecutables* executables_ = nullptr;  // during Run
  std::set<std::string> lowered_;  // entries of the concat dispatches rewritten
  Status error_;  // a strided update left unplaced (it has no copy to fall back on)
};

}  // namespace

std::unique_ptr<ir::Pass> CreateEmplaceAllocationsPass() { return std::make_unique<EmplaceAllocationsPass>(); }

}  // namespace kiln::transforms
