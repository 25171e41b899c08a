// Pass: --place-barriers (contract in place_barriers.h). It walks each
// function in the order the backend records it (compiler/backend/: blocks in
// order, regions in place, both paths of a fork from the state before it) and
// keeps the byte ranges read and written since the last barrier, the way the
// backend's recording used to (FunctionEmitter::Sync, before this pass).
#include "compiler/transforms/place_barriers.h"

#include "base/dtype.h"

#include <algorithm>
#include <climits>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/resource_values.h"
#include "compiler/analysis/storage_plan.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using analysis::StoragePlan;
using analysis::StorageSlot;
using ir::OpCode;

constexpr int kArenaKey = -2;     // every arena slot names the one arena buffer
constexpr int kPoolGroup = -3;    // the constant pool: never written
// A placed dispatch result is bound from its offset aligned down to this
// (compiler/backend/dispatch.cc, kBindingAlignment).
constexpr int64_t kPlacedBindingAlignment = 256;

// A byte range of one allocation that a command reads or writes.
struct Range {
  int id = -1;        // storage id (what a barrier names)
  int key = -1;       // buffer identity: kArenaKey for arena slots, else id
  int group = -1;     // allocation identity (taken / donated: their argument's)
  bool dynamic = false;
  int64_t offset = 0;            // static offset (dynamic: within the view)
  int64_t begin = 0, end = 0;    // dynamic: within the view (end INT64_MAX: to its end)
  // Ranges of one storage whose base is known only at run time compare
  // exactly (one base); two such storages of one allocation (an argument and
  // its taken or donated storage) may lie anywhere in it: they overlap.
  bool Overlaps(const Range& o) const {
    if (group != o.group) return false;
    if ((dynamic || o.dynamic) && id != o.id) return true;
    return begin < o.end && o.begin < end;
  }
};

class Placer {
 public:
  // `global_sizes`: the byte size of each util.global of the module (found
  // once per module: a walk of the module per function was quadratic in
  // the number of functions).
  Placer(const std::map<std::string, int64_t>& global_sizes, ir::Operation* func, const StoragePlan& plan)
      : func_(func), plan_(plan), global_sizes_(global_sizes) {
    for (size_t id = 0; id < plan.storages.size(); ++id) {
      const StorageSlot& s = plan.storages[id];
      if (s.kind == StorageSlot::kGlobal) global_ids_[s.global] = static_cast<int>(id);
    }
    for (ir::Operation* imp : plan.droppable) droppable_.insert(imp->result(0));
    for (auto& [v, vs] : plan.values) {
      ir::Operation* def = v->defining_op();
      if (def && def->is(OpCode::kFuncCall) && plan.storages[static_cast<size_t>(vs.id)].kind == StorageSlot::kCallResult)
        droppable_.insert(v);
    }
  }

  Status Run() {
    ir::Region* region = func_->region(0);
    ir::Block* body = region->block(0);
    multi_block_ = region->num_blocks() > 1;
    if (!multi_block_) {
      for (ir::Operation* op : OpsOf(body)) op->is(OpCode::kFuncReturn) ? Return(op) : Record(op);
      return OkStatus();
    }
    std::vector<ir::Block*> all;
    for (auto& b : region->blocks()) all.push_back(b.get());
    State block_entry;
    block_entry.reads = block_entry.writes = TouchedRanges(all);
    for (ir::Block* b : all) {
      if (b != body) Restore(block_entry);
      // A terminator records no command: branch operands already live in
      // their block arguments' storage (the clones before it carry copies).
      ir::Operation* t = b->terminator();
      for (ir::Operation* op : OpsOf(b))
        if (op != t) Record(op);
      if (t && t->is(OpCode::kFuncReturn)) Return(t);
    }
    return OkStatus();
  }

  int barriers() const { return barriers_; }

 private:
  struct State {
    std::vector<Range> reads, writes;
    std::set<int> taken;  // taken storages whose take_or_clone ran on every path here
  };
  State Save() const { return {reads_, writes_, taken_}; }
  void Restore(const State& s) {
    reads_ = s.reads;
    writes_ = s.writes;
    taken_ = s.taken;
  }

  // A snapshot of a block's ops (barriers are inserted while walking).
  static std::vector<ir::Operation*> OpsOf(ir::Block* b) {
    std::vector<ir::Operation*> ops;
    for (auto& owned : b->ops())
      if (!analysis::IsBarrier(owned.get())) ops.push_back(owned.get());
    return ops;
  }

  const StorageSlot& Slot(int id) const { return plan_.storages[static_cast<size_t>(id)]; }
  int64_t SlotLength(int id) const {
    const StorageSlot& s = Slot(id);
    if (s.kind == StorageSlot::kGlobal) {
      auto it = global_sizes_.find(s.global);
      return it == global_sizes_.end() ? 0 : it->second;
    }
    if (s.kind == StorageSlot::kArgument || s.kind == StorageSlot::kTaken)
      return func_->region(0)->block(0)->argument(static_cast<unsigned>(s.index))->type().byte_size();
    return s.length;
  }
  int GroupOf(int id) const {
    const StorageSlot& s = Slot(id);
    if (s.kind == StorageSlot::kArena) return kArenaKey;
    if (s.kind == StorageSlot::kConstant) return kPoolGroup;
    if (s.kind == StorageSlot::kTaken || s.kind == StorageSlot::kDonated)
      for (size_t i = 0; i < plan_.storages.size(); ++i)
        if (plan_.storages[i].kind == StorageSlot::kArgument && plan_.storages[i].index == s.index)
          return static_cast<int>(i);
    return id;
  }
  // Bytes [offset, offset + length) of storage `id` (length <= 0: the slot's).
  Range SlotRange(int id, int64_t offset, int64_t length) const {
    const StorageSlot& s = Slot(id);
    Range r;
    r.id = id;
    r.key = s.kind == StorageSlot::kArena ? kArenaKey : id;
    r.group = GroupOf(id);
    r.dynamic = s.dynamic_offset();
    r.offset = (s.kind == StorageSlot::kArena ? s.offset : 0) + offset;
    if (length <= 0) length = SlotLength(id);
    r.begin = r.offset;
    r.end = length > 0 ? r.offset + length : INT64_MAX;  // unknown length: to the end
    return r;
  }
  bool Placed(ir::Value* v) const { return plan_.values.count(v) > 0; }
  Range ValueRange(ir::Value* v) const {
    const analysis::ValueStorage& vs = plan_.values.at(v);
    return SlotRange(vs.id, vs.offset, analysis::SizeOf(v));
  }
  // `r` narrowed to [offset, offset + length) of it.
  static Range Sub(Range r, int64_t offset, int64_t length) {
    r.offset += offset;
    r.begin = r.offset;
    r.end = r.offset + length;
    return r;
  }
  Range GlobalRange(const std::string& sym) const { return SlotRange(global_ids_.at(sym), 0, 0); }

  // The op whose commands come next: barriers go right before it.
  void Begin(ir::Operation* op) {
    current_ = op;
    command_ = 0;
  }

  // One hazard-tracked command of the current op reading `reads` and
  // writing `writes`: a barrier first when they conflict with what is pending.
  void Command(const std::vector<Range>& reads, const std::vector<Range>& writes) {
    unsubmitted_ = true;
    bool hazard = false;
    std::vector<Range> covered;
    for (const Range& w : writes_) {
      for (const Range& r : reads) hazard |= w.Overlaps(r);
      for (const Range& x : writes) hazard |= w.Overlaps(x);
    }
    for (const Range& r : reads_)
      for (const Range& x : writes)
        if (r.Overlaps(x)) {
          hazard = true;
          covered.push_back(r);
        }
    if (hazard) {
      covered.insert(covered.end(), writes_.begin(), writes_.end());
      // One entry per distinct range (joined paths may each have left the
      // same access pending).
      std::vector<Range> distinct;
      for (const Range& r : covered) {
        bool seen = false;
        for (const Range& d : distinct)
          seen |= d.group == r.group && d.key == r.key && d.begin == r.begin && d.end == r.end;
        if (!seen) distinct.push_back(r);
      }
      std::vector<int64_t> attr;
      for (const Range& r : distinct) {
        attr.push_back(r.id);
        attr.push_back(r.begin);
        attr.push_back(r.end == INT64_MAX ? 0 : r.end - r.begin);
      }
      ir::Builder b = ir::Builder::Before(current_);
      b.set_loc(current_->loc());
      std::map<std::string, ir::Attribute> attrs = {{"ranges", ir::Attribute(attr)}};
      if (command_ > 0) attrs["command"] = ir::Attribute(static_cast<int64_t>(command_));
      b.Create(analysis::kBarrierOpName, {}, {}, attrs);
      ++barriers_;
      reads_.clear();
      writes_.clear();
    }
    for (const Range& r : reads)
      if (r.group != kPoolGroup) reads_.push_back(r);
    writes_.insert(writes_.end(), writes.begin(), writes.end());
    written_.insert(written_.end(), writes.begin(), writes.end());
    ++command_;
  }

  // A host barrier right before `before`: the ranges the host reads once the
  // submission `before` makes (a func.return's, a stream.async.load's) has
  // been waited on. None when there are no such ranges.
  void HostBarrier(ir::Operation* before, const std::vector<Range>& ranges) {
    if (ranges.empty()) return;
    std::vector<int64_t> attr;
    for (const Range& r : ranges) {
      attr.push_back(r.id);
      attr.push_back(r.begin);
      attr.push_back(r.end == INT64_MAX ? 0 : r.end - r.begin);
    }
    ir::Builder b = ir::Builder::Before(before);
    b.set_loc(before->loc());
    b.Create(analysis::kBarrierOpName, {}, {}, {{"ranges", ir::Attribute(attr)}, {"host", ir::Attribute(true)}});
  }

  // Whether the device may have written bytes of `r` by the end of this
  // function: a write recorded anywhere in it (every path, every trip), or
  // storage written by a callee (a call result). Blocks of a multi-block
  // body are walked in order, not in the order they run: there, every
  // range may have been.
  bool DeviceWritten(const Range& r) const {
    if (multi_block_ || Slot(r.id).kind == StorageSlot::kCallResult) return true;
    for (const Range& w : written_)
      if (w.Overlaps(r)) return true;
    return false;
  }

  // func.return of a function the host may call (not private): the host
  // reads each result the device wrote, once the final submission's signal
  // has been waited on. A private function's results are read by its
  // caller's device commands (each command buffer's leading barrier orders
  // those); a result the device never wrote in this function (a consumed
  // argument returned as it came) was made host-visible where it was written.
  void Return(ir::Operation* ret) {
    if (func_->str_attr("sym_visibility") == "private") return;
    std::vector<Range> ranges;
    for (ir::Value* e : ret->operands()) {
      ir::Operation* exp = e->defining_op();
      if (!exp || !exp->is(OpCode::kStreamTensorExport) || !Placed(exp->operand(0))) continue;
      Range r = ValueRange(exp->operand(0));
      if (r.group == kPoolGroup || !DeviceWritten(r)) continue;
      bool seen = false;
      for (const Range& d : ranges) seen |= d.id == r.id && d.begin == r.begin && d.end == r.end;
      if (!seen) ranges.push_back(r);
    }
    HostBarrier(ret, ranges);
  }

  // take_or_clone of taken storage `id` before its first write: a possible
  // copy into it, ordered before the write by the write's own barrier. Once
  // it ran on every path to here, the backend's later takes find the flag
  // set and record nothing.
  void Take(int id) {
    if (id < 0 || Slot(id).kind != StorageSlot::kTaken || taken_.count(id)) return;
    unsubmitted_ = true;
    writes_.push_back(SlotRange(id, 0, 0));
    written_.push_back(writes_.back());
    taken_.insert(id);
  }

  void Paths(unsigned n, const std::function<void(unsigned)>& path) {
    const State before = Save();
    State after;
    for (unsigned k = 0; k < n; ++k) {
      Restore(before);
      path(k);
      after.reads.insert(after.reads.end(), reads_.begin(), reads_.end());
      after.writes.insert(after.writes.end(), writes_.begin(), writes_.end());
      if (k == 0) {
        after.taken = taken_;
      } else {  // taken on every path
        std::set<int> both;
        for (int id : taken_)
          if (after.taken.count(id)) both.insert(id);
        after.taken = both;
      }
    }
    Restore(after);
  }

  void Pend(const std::vector<Range>& ranges) {
    writes_.insert(writes_.end(), ranges.begin(), ranges.end());
    reads_.insert(reads_.end(), ranges.begin(), ranges.end());
  }

  std::vector<Range> TouchedRanges(const std::vector<ir::Block*>& blocks) const {
    std::vector<Range> ranges;
    auto add = [&](ir::Value* v) {
      if (!Placed(v)) return;
      Range r = ValueRange(v);
      if (r.group != kPoolGroup) ranges.push_back(r);
    };
    for (ir::Block* b : blocks) {
      for (ir::Value* a : b->arguments()) add(a);
      for (auto& owned : b->ops())
        owned->Walk([&](ir::Operation* inner) {
          for (ir::Value* v : inner->results()) add(v);
          for (ir::Value* v : inner->operands()) add(v);
          if (inner->is(OpCode::kUtilGlobalLoad) || inner->is(OpCode::kUtilGlobalStore))
            if (global_ids_.count(inner->str_attr("global"))) ranges.push_back(GlobalRange(inner->str_attr("global")));
          for (unsigned r = 0; r < inner->num_regions(); ++r)
            for (auto& nb : inner->region(r)->blocks())
              for (ir::Value* a : nb->arguments()) add(a);
        });
    }
    return ranges;
  }

  // A region of scf.if / scf.index_switch: its ops (the yields record
  // nothing: the yielded values already live in the op's result storage).
  void YieldingRegion(ir::Operation* op, unsigned region) {
    if (op->region(region)->empty()) return;
    for (ir::Operation* inner : OpsOf(op->region(region)->block(0)))
      if (!inner->is(OpCode::kScfYield)) Record(inner);
  }

  void For(ir::Operation* op) {
    ir::Block* body = op->region(0)->block(0);
    std::vector<Range> body_ranges;
    auto add = [&](ir::Value* v) {
      if (!Placed(v)) return;
      Range r = ValueRange(v);
      if (r.group != kPoolGroup) body_ranges.push_back(r);
    };
    for (auto& owned : body->ops())
      owned->Walk([&](ir::Operation* inner) {
        for (ir::Value* v : inner->results()) add(v);
        for (ir::Value* v : inner->operands()) add(v);
      });
    for (ir::Value* a : body->arguments())
      if (Placed(a)) body_ranges.push_back(ValueRange(a));
    Pend(body_ranges);  // the back edge: trip k+1 after trip k
    const State at_exit = Save();
    for (ir::Operation* inner : OpsOf(body))
      if (!inner->is(OpCode::kScfYield)) Record(inner);
    ExitLoop(body_ranges, at_exit);
  }

  void While(ir::Operation* op) {
    if (op->num_regions() != 2 || op->region(0)->empty() || op->region(1)->empty()) return;
    ir::Block* before = op->region(0)->block(0);
    ir::Block* after = op->region(1)->block(0);
    ir::Operation* cond = before->terminator();
    ir::Operation* yield = after->terminator();
    if (!cond || !yield) return;
    std::vector<Range> body_ranges = TouchedRanges({before, after});
    Pend(body_ranges);
    for (ir::Operation* inner : OpsOf(before))
      if (inner != cond) Record(inner);
    const State at_exit = Save();
    for (ir::Operation* inner : OpsOf(after))
      if (inner != yield) Record(inner);
    ExitLoop(body_ranges, at_exit);
  }

  // After a loop: what the last trip left, every range of the loop, and what
  // the exit edge had pending (a loop may run zero trips).
  void ExitLoop(const std::vector<Range>& loop_ranges, const State& exit) {
    Pend(loop_ranges);
    writes_.insert(writes_.end(), exit.writes.begin(), exit.writes.end());
    reads_.insert(reads_.end(), exit.reads.begin(), exit.reads.end());
    taken_ = exit.taken;  // what the exit edge had taken (a subset of every trip's)
  }

  void Record(ir::Operation* op) {
    Begin(op);
    const OpCode n = op->code();
    if (analysis::IsLifetimeOp(op)) {
      if (n == OpCode::kStreamResourceRetain || multi_block_) return;
      ir::Value* root = analysis::RootOf(op->operand(0));
      if (!droppable_.count(root) || !Placed(root)) return;
      int group = ValueRange(root).group;
      auto same = [&](const Range& r) { return r.group == group; };
      reads_.erase(std::remove_if(reads_.begin(), reads_.end(), same), reads_.end());
      writes_.erase(std::remove_if(writes_.begin(), writes_.end(), same), writes_.end());
      return;
    }
    if (n == OpCode::kStreamTimepointImmediate) return;
    auto take_before = plan_.take_before.find(op);
    if (ir::Traits(op).tie != ir::Tie::kNone || take_before != plan_.take_before.end()) {
      for (ir::Value* r : op->results())
        if (ir::Value* t = analysis::TiedValue(op, r->index()))
          if (auto it = plan_.values.find(t); it != plan_.values.end()) Take(it->second.id);
      if (take_before != plan_.take_before.end())
        for (int id : take_before->second) Take(id);
    }
    if (n == OpCode::kStreamAsyncDispatch) {
      // A result placed into a subrange of its tied operand
      // (--emplace-allocations: result_offsets[r] >= 0) writes its binding,
      // from the offset aligned down to 256 (validation takes every bound
      // byte as written, as the backend binds it); its placement target is
      // neither bound nor read.
      std::vector<int64_t> offsets = op->ints_attr("result_offsets");
      std::vector<int64_t> lengths = op->ints_attr("result_lengths");
      std::set<ir::Value*> targets;
      std::vector<Range> reads, writes;
      for (ir::Value* v : op->results()) {
        const unsigned r = v->index();
        ir::Value* t = analysis::TiedValue(op, r);
        if (r < offsets.size() && offsets[r] >= 0 && r < lengths.size() && t) {
          targets.insert(t);
          const analysis::ValueStorage& vs = plan_.values.at(v);
          const int64_t lead = offsets[r] % kPlacedBindingAlignment;
          writes.push_back(SlotRange(vs.id, vs.offset + offsets[r] - lead, lead + lengths[r]));
        } else {
          writes.push_back(ValueRange(v));
        }
      }
      for (ir::Value* v : op->operands())
        if (!targets.count(v)) reads.push_back(ValueRange(v));
      Command(reads, writes);
      return;
    }
    if (n == OpCode::kScfIf || n == OpCode::kScfIndexSwitch) {
      Paths(op->num_regions(), [&](unsigned r) { YieldingRegion(op, r); });
      unsubmitted_ = true;
      return;
    }
    if (n == OpCode::kScfFor || n == OpCode::kScfWhile) {
      n == OpCode::kScfFor ? For(op) : While(op);
      unsubmitted_ = true;
      return;
    }
    if (n == OpCode::kFuncCall) {
      // The backend submits what was recorded (nested in a region, or after
      // recorded work); the callee's work and the caller's next work are
      // queue-ordered after it, each command buffer starting with a full barrier.
      if (op->parent_op() != func_ || unsubmitted_) {
        reads_.clear();
        writes_.clear();
        unsubmitted_ = false;
      }
      return;
    }
    // util.global.load is a view of the global and a store finds its value
    // in place (snapshots and stores are clones): neither records a command.
    if (n == OpCode::kStreamAsyncLoad) {  // submit and wait on the host
      // The host reads the loaded bytes (the backend reads an i64 through
      // its low 4): a host barrier over exactly them, unless they are the
      // constant pool's (uploaded before any function ran). Anything else
      // may have been written on the device, here or before this function.
      if (Placed(op->operand(0))) {
        int64_t width = static_cast<int64_t>(DTypeSize(ParseDType(op->str_attr("dtype"))));
        if (op->str_attr("dtype") == "i64") width = 4;
        Range r = Sub(ValueRange(op->operand(0)), op->int_attr("offset"), width);
        if (r.group != kPoolGroup) HostBarrier(op, {r});
      }
      reads_.clear();
      writes_.clear();
      return;
    }
    if (n == OpCode::kStreamAsyncClone || n == OpCode::kStreamAsyncTransfer) {
      Command({ValueRange(op->operand(0))}, {ValueRange(op->result(0))});
    } else if (n == OpCode::kStreamAsyncUpdate) {
      Command({ValueRange(op->operand(1))},
              {Sub(ValueRange(op->result(0)), op->int_attr("offset"), op->int_attr("length"))});
    } else if (n == OpCode::kStreamAsyncCopy) {
      int64_t length = op->int_attr("length");
      Command({Sub(ValueRange(op->operand(1)), op->int_attr("src_offset"), length)},
              {Sub(ValueRange(op->result(0)), op->int_attr("dst_offset"), length)});
    } else if (n == OpCode::kStreamAsyncSplat) {
      Command({}, {Sub(ValueRange(op->result(0)), 0, op->int_attr("size"))});
    } else if (n == OpCode::kStreamAsyncFill) {
      Command({}, {Sub(ValueRange(op->result(0)), op->int_attr("offset"), op->int_attr("length"))});
    }
  }

  ir::Operation* func_;
  const StoragePlan& plan_;
  const std::map<std::string, int64_t>& global_sizes_;
  std::map<std::string, int> global_ids_;
  std::set<ir::Value*> droppable_;
  std::vector<Range> reads_, writes_;
  std::vector<Range> written_;  // every write recorded so far (host barriers)
  std::set<int> taken_;
  bool unsubmitted_ = false;
  bool multi_block_ = false;
  ir::Operation* current_ = nullptr;
  unsigned command_ = 0;
  int barriers_ = 0;
};

class PlaceBarriersPass : public ir::Pass {
 public:
  const char* flag() const override { return "place-barriers"; }
  const char* description() const override {
    return "Place barriers with the byte ranges they cover between conflicting device commands";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    (void)ctx;
    std::map<std::string, int64_t> global_sizes;
    for (auto& top : module.body()->ops())
      if (top->is(OpCode::kUtilGlobal)) global_sizes[top->str_attr("sym_name")] = top->int_attr("size", 0);
    for (ir::Operation* func : module.functions()) {
      if (!func->list_attr("storages")) continue;  // no plan: nothing to order
      // Idempotent: barriers placed earlier are placed again.
      std::vector<ir::Operation*> old;
      func->Walk([&](ir::Operation* op) {
        if (analysis::IsBarrier(op)) old.push_back(op);
      });
      for (ir::Operation* op : old) op->Erase();
      StatusOr<StoragePlan> plan = analysis::ReadStoragePlan(func);
      if (!plan.ok()) {
        Status error = plan.status();
        return error.Annotate("function @" + func->str_attr("sym_name"));
      }
      Placer placer(global_sizes, func, plan.value());
      KILN_RETURN_IF_ERROR(placer.Run());
    }
    return OkStatus();
  }
};

}  // namespace

BarrierTotals CountBarriers(ir::Module& module) {
  BarrierTotals t;
  for (ir::Operation* func : module.functions())
    func->Walk([&](ir::Operation* op) {
      if (!analysis::IsBarrier(op)) return;
      std::vector<int64_t> r = op->ints_attr("ranges");
      if (op->bool_attr("host")) {
        ++t.host_barriers;
        for (size_t i = 0; i + 2 < r.size(); i += 3) {
          ++t.host_ranges;
          if (r[i + 2] == 0) ++t.host_whole_buffer_ranges;
          t.host_bytes += r[i + 2];
        }
        return;
      }
      ++t.barriers;
      for (size_t i = 0; i + 2 < r.size(); i += 3) {
        ++t.ranges;
        if (r[i + 2] == 0) ++t.whole_buffer_ranges;
        t.bytes += r[i + 2];
      }
    });
  return t;
}

std::unique_ptr<ir::Pass> CreatePlaceBarriersPass() { return std::make_unique<PlaceBarriersPass>(); }

}  // namespace kiln::transforms
