// Pass: --emplace-allocations
//
// In-place concat: each producer dispatch writes its result straight into
// the subrange of the concat's target that the result is copied into, so
// the copy (a stream.async.update) and the producer's own allocation go
// (IREE's iree-stream-emplace-allocations, PR #11173, issue #7729).
//
// --convert-to-stream lowers a contiguous tensor.concat to a chain of
// updates into one stream.async.alloca:
//   %t = alloca; %t1 = update(%t, %a) {offset = 0}; %t2 = update(%t1, %b) {offset = A}
// This pass then, per block (scf regions and loop bodies included):
// 1. Concat of concats: an update whose source is the end of another such
//    chain (used only there) takes that chain's updates in its place, at
//    its offset into the outer target; the inner alloca goes. Repeated, so
//    any nesting becomes one flat chain.
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
// Must not act (the update stays, a remark says why; each is a lit test in
// compiler/test/transforms/emplace-allocations.kir):
//  - the source is used again after the concat, by a second update, or
//    written in place: placing it would make that use see the target,
//    which the concat's consumers may write. (A read-only dispatch operand
//    before the concat is fine: it reads a stream.async.slice view of the
//    subrange, when the subrange starts on a 256-byte boundary.)
//  - the source is an import (a borrowed or consumed argument), a constant,
//    a block argument (loop-carried, region argument), a call result, or
//    anything but a dispatch;
//  - the producer is in another block (outside the scf region holding the
//    concat), already writes that result in place, already places another
//    result into the same target, or runs after the chain's first update.
//
// Preconditions: stream level, after the copy passes (copy-on-write sees no
// placement operand) and before --resource-lifetime (which sees the
// alloca's longer life).
//
// Before:
//   %a = "stream.async.dispatch"(%x) {entry = @f, sizes = [64], tied_operands = [-1]}
//   %b = "stream.async.dispatch"(%x) {entry = @g, sizes = [96], tied_operands = [-1]}
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
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

constexpr int64_t kBindingAlignment = 256;

// The updates of the chain rooted at `alloca`: each one's target is the
// previous one's result, used only there. Stops at the first value used
// more than once or by anything but an update in the same block.
std::vector<ir::Operation*> ChainOf(ir::Operation* alloca) {
  std::vector<ir::Operation*> chain;
  ir::Value* v = alloca->result(0);
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

// Why the uses of `src` other than the update `u` forbid placing it ("":
// they do not). Once placed, `src` lives in the target, which the later
// producers and the concat's consumers write: a read is safe only while
// the target still holds it there, i.e. a read-only dispatch operand
// before the concat's first update (in the same block; program order is
// queue order). It then reads a view of the subrange, which must start on
// a 256-byte boundary to be bound as is.
std::string OtherReadsConflict(ir::Value* src, ir::Operation* u, size_t first_update,
                               const std::map<ir::Operation*, size_t>& position) {
  for (const ir::Use& r : src->uses()) {
    if (r.user == u) continue;
    if (r.user->is(OpCode::kStreamAsyncUpdate) && r.operand_index == 1)
      return "the source is used again (by another update)";
    auto at = position.find(r.user);
    if (at == position.end() || at->second > first_update)
      return "the source is used again after the concat";
    if (!r.user->is(OpCode::kStreamAsyncDispatch)) return "the source is used again by '" + r.user->name() + "'";
    for (int64_t t : r.user->ints_attr("tied_operands"))
      if (t == static_cast<int64_t>(r.operand_index)) return "the source is written in place before the concat";
    std::vector<int64_t> eo = r.user->ints_attr("element_offsets");
    if (r.operand_index < eo.size() && eo[r.operand_index] != 0)
      return "the source is read at an element offset before the concat";
    if (u->int_attr("offset") % kBindingAlignment != 0)
      return "the source is read before the concat and its subrange starts at byte " +
             std::to_string(u->int_attr("offset")) + ", not a multiple of 256";
  }
  return "";
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

class EmplaceAllocationsPass : public ir::Pass {
 public:
  const char* flag() const override { return "emplace-allocations"; }
  const char* description() const override {
    return "Make producer dispatches write into the subrange of their concat's target (in-place concat)";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (auto& top : module.body()->ops())
      if (top->is(OpCode::kFlowExecutable)) executables_[top->str_attr("sym_name")] = top.get();
    for (ir::Operation* func : module.functions()) {
      std::vector<ir::Block*> blocks;
      func->Walk([&](ir::Operation* op) {
        for (unsigned r = 0; r < op->num_regions(); ++r)
          for (auto& b : op->region(r)->blocks()) blocks.push_back(b.get());
      });
      for (ir::Block* b : blocks) {
        Flatten(b, ctx);
        std::vector<ir::Operation*> allocas;
        for (auto& op : b->ops())
          if (op->is(OpCode::kStreamAsyncAlloca)) allocas.push_back(op.get());
        for (ir::Operation* a : allocas) Emplace(a, ctx);
      }
    }
    return OkStatus();
  }

 private:
  // Step 1: an update whose source ends another chain takes that chain in.
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

  // The element byte size of result `r` of `dispatch`'s executable; 0 when
  // the executable is not found.
  int64_t ElementBytes(ir::Operation* dispatch, unsigned r) {
    const ir::Attribute* a = dispatch->attr("entry");
    const ir::SymbolRef* entry = a ? std::get_if<ir::SymbolRef>(&a->value) : nullptr;
    auto it = entry ? executables_.find(entry->name) : executables_.end();
    if (it == executables_.end() || it->second->region(0)->empty() || it->second->region(0)->block(0)->empty())
      return 0;
    ir::Operation* body = it->second->region(0)->block(0)->ops().front().get();
    if (!body->is(OpCode::kFlowDispatch) || r >= body->num_results()) return 0;
    const ir::Type& t = body->result(r)->type();
    if (!t.is_tensor() || t.byte_size() != dispatch->ints_attr("sizes").at(r)) return 0;
    return static_cast<int64_t>(DTypeSize(t.dtype));
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
      std::vector<ir::Use> reads;  // the source's other uses (reads before the concat)
    };
    std::vector<Placement> placed;
    std::set<ir::Operation*> producers;
    for (ir::Operation* u : chain) {
      ir::Value* src = u->operand(1);
      ir::Operation* def = src->defining_op();
      std::string why;
      if (!def || !def->is(OpCode::kStreamAsyncDispatch)) {
        why = "the source is " + SourceKind(src);
      } else if (def->parent_block() != block) {
        why = "the producer is in another block (outside the region holding the concat)";
      } else if (!(why = OtherReadsConflict(src, u, first_update, position)).empty()) {
      } else if (def->ints_attr("tied_operands").at(src->index()) >= 0) {
        why = "the producer already writes that result in place";
      } else if (producers.count(def)) {
        why = "the producer already places another result into this target";
      } else if (position.at(def) > first_update) {
        why = "the producer runs after the concat's first update";
      } else if (def->ints_attr("sizes").at(src->index()) != u->int_attr("length")) {
        why = "the source is not the whole update";
      }
      int64_t element_bytes = why.empty() ? ElementBytes(def, src->index()) : 0;
      if (why.empty() && (element_bytes == 0 || (u->int_attr("offset") % kBindingAlignment) % element_bytes != 0))
        why = "the subrange does not start on an element of the producer's result";
      if (!why.empty()) {
        ctx.Remark(u, "concat copy kept: " + why);
        continue;
      }
      std::vector<ir::Use> reads;
      for (const ir::Use& r : src->uses())
        if (r.user != u) reads.push_back(r);
      placed.push_back({u, def, src->index(), element_bytes, reads});
      producers.insert(def);
    }
    if (placed.empty()) return;
    std::sort(placed.begin(), placed.end(),
              [&](const Placement& a, const Placement& b) { return position.at(a.producer) < position.at(b.producer); });
    // The updates that go: their results become their targets, so the
    // updates left chain from the alloca; its uses are then rethreaded
    // after the last placed producer.
    std::vector<std::pair<int64_t, int64_t>> ranges;  // offset, length per placement
    for (const Placement& p : placed) {
      ranges.push_back({p.update->int_attr("offset"), p.update->int_attr("length")});
      p.update->result(0)->ReplaceAllUsesWith(p.update->operand(0));
      p.update->Erase();
    }
    std::vector<ir::Use> alloca_uses = alloca->result(0)->uses();
    if (position.at(placed.front().producer) < position.at(alloca)) alloca->MoveBefore(placed.front().producer);
    const int64_t size = alloca->int_attr("size");
    ir::Value* cur = alloca->result(0);
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
      cur = d->result(r);
      // Reads of the result before the concat now read its subrange of the
      // target: a view at an aligned offset (OtherReadsConflict), made
      // before the first of them.
      if (!placed[i].reads.empty()) {
        ir::Operation* first = placed[i].reads.front().user;
        for (const ir::Use& r : placed[i].reads)
          if (position.at(r.user) < position.at(first)) first = r.user;
        ir::Operation* view = ir::Builder::Before(first).Create(
            "stream.async.slice", {cur}, {ir::Type::Resource(ir::Lifetime::kTransient)},
            {{"offset", ir::Attribute(ranges[i].first)}, {"length", ir::Attribute(ranges[i].second)}});
        view->set_loc(d->loc());
        for (const ir::Use& r : placed[i].reads) r.user->SetOperand(r.operand_index, view->result(0));
      }
    }
    for (const ir::Use& u : alloca_uses) u.user->SetOperand(u.operand_index, cur);
  }

  std::map<std::string, ir::Operation*> executables_;
};

}  // namespace

std::unique_ptr<ir::Pass> CreateEmplaceAllocationsPass() { return std::make_unique<EmplaceAllocationsPass>(); }

}  // namespace kiln::transforms
