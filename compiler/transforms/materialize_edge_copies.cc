// Pass: --materialize-edge-copies (the allocated level; pipeline.cc
// AllocationPipeline, after --schedule-allocation)
//
// The copies the storage plan implies become IR. Where a value flows into
// storage it does not live in, the backend used to copy it without an IR op
// (and listed the copy as a "backend copy"). This pass writes each such copy
// as a stream.async.clone placed in the destination's storage, so the
// runtime's copies are the IR's copies, and `--explain-copies` names each:
//  - a region's yield into its scf.if / scf.index_switch result;
//  - a loop's initial value into its carried storage (scf.for, scf.while),
//    placed before the loop;
//  - a loop's yield into its carried storage and scf.while's condition into
//    its results, as one parallel copy: the operands the plan gives a
//    temporary (edge_temps) are cloned into it first, then every operand into
//    its destination;
//  - a util.global.store of a value that does not live in the global;
//  - a global snapshot (global_snapshots.h: the global is stored to while
//    the loaded value is read): the util.global.load becomes a view of the
//    global and a clone after it copies the global into the storage the
//    plan gave the loaded value;
//  - a branch between blocks: a cf.br's operands into its successor's
//    arguments, as one parallel copy before the cf.br (temporaries first, as
//    above); a cf.cond_br edge that copies gets a block of its own (a new
//    block holding a cf.br to the old successor), so the copies run on that
//    edge only.
// The backend's copies on these edges then find the value already in place
// and record nothing: the backend adds no copy of its own
// (EmitReport::backend_copies stays empty; e2e programs and real models
// assert it).
//
// Must not act: a value that already lives in its destination (a tied
// update of the carried value, a fresh value the plan writes straight into
// the result), host values, functions without a plan.
//
// Before (the plan puts %v in arena slot 1, the if result in slot 2):
//   %r = "scf.if"(%c) ({ ... "scf.yield"(%v) }, ...) {storage = [2]}
// After:
//   %r = "scf.if"(%c) ({ ... %k = "stream.async.clone"(%v) {storage = [2]}; "scf.yield"(%k) }, ...)
#include <map>
#include <string>
#include <vector>

#include "compiler/analysis/resource_values.h"
#include "compiler/analysis/storage_plan.h"
#include "compiler/ir/op_traits.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

using analysis::StoragePlan;
using analysis::ValueStorage;
using ir::OpCode;

bool IsResource(const ir::Value* v) { return v->type().kind == ir::TypeKind::kResource; }

class EdgeCopier {
 public:
  EdgeCopier(StoragePlan& plan, ir::PassContext& ctx) : plan_(plan), ctx_(ctx) {}

  // Whether `v` must be copied to live where `dest` lives.
  bool NeedsCopy(ir::Value* v, ir::Value* dest) const {
    if (!IsResource(v) || !plan_.values.count(v) || !plan_.values.count(dest)) return false;
    return !analysis::SamePlace(analysis::PlacementOf(plan_, v), analysis::PlacementOf(plan_, dest));
  }

  // A clone of `v` in `place` (sized `size`), inserted before `at`.
  ir::Value* CloneInto(ir::Value* v, ValueStorage place, int64_t size, ir::Type type, ir::Operation* at,
                       const char* why) {
    ir::Builder b = ir::Builder::Before(at);
    b.set_loc(at->loc());
    ir::Operation* clone =
        b.Create("stream.async.clone", {v}, {type},
                 {{"size", ir::Attribute(size)},
                  {"storage", ir::Attribute(std::vector<int64_t>{place.id})},
                  {"storage_offset", ir::Attribute(std::vector<int64_t>{place.offset})}});
    plan_.values[clone->result(0)] = place;
    ctx_.Remark(at, std::string("edge copy: ") + why);
    ++copies_;
    return clone->result(0);
  }

  // Operand `i` of `at` into `dest`'s storage, when it does not live there.
  void CopyOperand(ir::Operation* at, unsigned i, ir::Value* dest, const char* why) {
    ir::Value* v = at->operand(i);
    if (!NeedsCopy(v, dest)) return;
    at->SetOperand(i, CloneInto(v, plan_.values.at(dest), analysis::SizeOf(dest), dest->type(), at, why));
  }

  // One parallel copy: the planned temporaries first, then each operand (or
  // its temporary) into its destination.
  void CopyEdge(ir::Operation* edge, const char* why) {
    std::map<unsigned, int> temps;
    if (auto it = plan_.edge_temps.find(edge); it != plan_.edge_temps.end())
      for (auto& [operand, id] : it->second) temps[operand] = id;
    for (const analysis::EdgeCopy& g : analysis::EdgeCopiesOf(edge))
      for (size_t k = 0; k < g.operands.size(); ++k) {
        auto t = temps.find(g.operands[k]);
        if (t == temps.end()) continue;
        ir::Value* v = edge->operand(g.operands[k]);
        ir::Value* dest = g.destinations[k];
        edge->SetOperand(g.operands[k], CloneInto(v, ValueStorage{t->second, 0}, analysis::SizeOf(dest), dest->type(),
                                                  edge, "parallel-copy temporary"));
      }
    for (const analysis::EdgeCopy& g : analysis::EdgeCopiesOf(edge))
      for (size_t k = 0; k < g.operands.size(); ++k) CopyOperand(edge, g.operands[k], g.destinations[k], why);
    edge->remove_attr("edge_temps");
    plan_.edge_temps.erase(edge);
  }

  // Whether edge group `g` of `edge` copies anything: an operand that does
  // not live in its destination, or one given a parallel-copy temporary.
  bool EdgeCopies(ir::Operation* edge, const analysis::EdgeCopy& g) const {
    auto temps = plan_.edge_temps.find(edge);
    for (size_t k = 0; k < g.operands.size(); ++k) {
      if (NeedsCopy(edge->operand(g.operands[k]), g.destinations[k])) return true;
      if (temps != plan_.edge_temps.end())
        for (auto& [operand, id] : temps->second)
          if (operand == g.operands[k]) return true;
    }
    return false;
  }

  // Successor `k` of `cond_br` gets a block of its own when its edge copies:
  // a new block (appended to the region) holding a cf.br that passes that
  // edge's operands to the old successor. The copies then go before that
  // cf.br, on that edge only; the cond_br passes nothing to the new block.
  // Parallel-copy temporaries move with their operands.
  void SplitCondBrEdges(ir::Operation* cond_br) {
    std::vector<int64_t> seg = cond_br->ints_attr("operand_segments");
    if (seg.size() != 3 || cond_br->num_successors() != 2) return;
    std::vector<analysis::EdgeCopy> groups = analysis::EdgeCopiesOf(cond_br);
    bool split[2] = {false, false};
    for (unsigned k = 0; k < 2; ++k) {
      unsigned first = k == 0 ? 1u : static_cast<unsigned>(1 + seg[1]);
      for (const analysis::EdgeCopy& g : groups)
        if (!g.operands.empty() && g.operands[0] >= first && g.operands[0] < first + seg[1 + k] && EdgeCopies(cond_br, g))
          split[k] = true;
    }
    if (!split[0] && !split[1]) return;
    std::vector<std::pair<unsigned, int>> temps;
    if (auto it = plan_.edge_temps.find(cond_br); it != plan_.edge_temps.end()) temps = it->second;
    std::vector<ir::Value*> kept = {cond_br->operand(0)};
    std::vector<std::pair<unsigned, int>> kept_temps;
    int64_t kept_seg[2] = {seg[1], seg[2]};
    for (unsigned k = 0; k < 2; ++k) {
      unsigned first = k == 0 ? 1u : static_cast<unsigned>(1 + seg[1]);
      unsigned count = static_cast<unsigned>(seg[1 + k]);
      std::vector<ir::Value*> passed;
      for (unsigned i = 0; i < count; ++i) passed.push_back(cond_br->operand(first + i));
      if (!split[k]) {
        for (auto& [operand, id] : temps)
          if (operand >= first && operand < first + count)
            kept_temps.push_back({static_cast<unsigned>(kept.size() + operand - first), id});
        kept.insert(kept.end(), passed.begin(), passed.end());
        continue;
      }
      ir::Block* edge_block = cond_br->parent_block()->parent()->AddBlock();
      ir::Builder b = ir::Builder::AtEnd(edge_block);
      b.set_loc(cond_br->loc());
      ir::Operation* br = b.Create("cf.br", passed, {}, {});
      br->AddSuccessor(cond_br->successor(k));
      cond_br->SetSuccessor(k, edge_block);
      kept_seg[k] = 0;
      std::vector<std::pair<unsigned, int>> br_temps;
      for (auto& [operand, id] : temps)
        if (operand >= first && operand < first + count) br_temps.push_back({operand - first, id});
      if (!br_temps.empty()) plan_.edge_temps[br] = br_temps;
      split_edges_.push_back(br);
    }
    cond_br->SetOperands(kept);
    cond_br->set_attr("operand_segments", ir::Attribute(std::vector<int64_t>{1, kept_seg[0], kept_seg[1]}));
    plan_.edge_temps.erase(cond_br);
    cond_br->remove_attr("edge_temps");
    if (!kept_temps.empty()) plan_.edge_temps[cond_br] = kept_temps;
  }

  Status Run(ir::Operation* func) {
    std::vector<ir::Operation*> ops;
    for (auto& b : func->region(0)->blocks())
      for (auto& owned : b->ops()) owned->Walk([&](ir::Operation* op) { ops.push_back(op); });
    std::map<std::string, int> globals;
    for (size_t id = 0; id < plan_.storages.size(); ++id)
      if (plan_.storages[id].kind == analysis::StorageSlot::kGlobal) globals[plan_.storages[id].global] = static_cast<int>(id);
    for (ir::Operation* op : ops) {
      if (op->is(OpCode::kCfBr)) {
        CopyEdge(op, "branch operand into the block argument's storage");
      } else if (op->is(OpCode::kCfCondBr)) {
        SplitCondBrEdges(op);
      } else if (op->is(OpCode::kScfIf) || op->is(OpCode::kScfIndexSwitch)) {
        for (unsigned r = 0; r < op->num_regions(); ++r) {
          if (op->region(r)->empty()) continue;
          ir::Operation* y = op->region(r)->block(0)->terminator();
          if (!y || !y->is(OpCode::kScfYield)) continue;
          for (unsigned i = 0; i < y->num_operands() && i < op->num_results(); ++i)
            CopyOperand(y, i, op->result(i), "yield into the region's result storage");
        }
      } else if (op->is(OpCode::kScfFor)) {
        for (unsigned i = 0; 3 + i < op->num_operands() && i < op->num_results(); ++i)
          CopyOperand(op, 3 + i, op->result(i), "loop entry into the carried storage");
        if (ir::Operation* y = op->region(0)->block(0)->terminator(); y && y->is(OpCode::kScfYield))
          CopyEdge(y, "loop yield into the carried storage");
      } else if (op->is(OpCode::kScfWhile) && op->num_regions() == 2 && !op->region(0)->empty() &&
                 !op->region(1)->empty()) {
        ir::Block* before = op->region(0)->block(0);
        for (unsigned i = 0; i < op->num_operands() && i < before->num_arguments(); ++i)
          CopyOperand(op, i, before->argument(i), "loop entry into the carried storage");
        if (ir::Operation* c = before->terminator(); c && c->is(OpCode::kScfCondition))
          CopyEdge(c, "scf.condition forward into the result storage");
        if (ir::Operation* y = op->region(1)->block(0)->terminator(); y && y->is(OpCode::kScfYield))
          CopyEdge(y, "loop yield into the carried storage");
      } else if (op->is(OpCode::kUtilGlobalLoad) && op->num_results() == 1) {
        // A snapshot: the load becomes a view of the global, and a clone
        // copies it into the storage the plan gave the loaded value.
        auto g = globals.find(op->str_attr("global"));
        ir::Value* v = op->result(0);
        if (g == globals.end() || !IsResource(v) || !plan_.values.count(v)) continue;
        const ValueStorage place = plan_.values.at(v);
        if (place.id == g->second) continue;  // a view of the global already
        ir::Operation* next = NextOp(op);
        if (!next) return InvalidArgumentError("util.global.load ends its block (%s)", op->loc().c_str());
        ir::Value* snapshot = CloneInto(v, place, analysis::SizeOf(v), v->type(), next,
                                        "global snapshot (the global is stored to while the loaded value is read)");
        v->ReplaceAllUsesWith(snapshot);
        snapshot->defining_op()->SetOperand(0, v);
        plan_.values[v] = ValueStorage{g->second, 0};
        op->set_attr("storage", ir::Attribute(std::vector<int64_t>{g->second}));
        op->set_attr("storage_offset", ir::Attribute(std::vector<int64_t>{0}));
      } else if (op->is(OpCode::kUtilGlobalStore) && op->num_operands() == 1) {
        auto g = globals.find(op->str_attr("global"));
        ir::Value* v = op->operand(0);
        if (g == globals.end() || !IsResource(v) || !plan_.values.count(v)) continue;
        const ValueStorage place{g->second, 0};
        const analysis::Placement global{g->second, g->second, false, 0, analysis::SizeOf(v)};
        if (analysis::SamePlace(analysis::PlacementOf(plan_, v), global)) continue;
        op->SetOperand(0, CloneInto(v, place, analysis::SizeOf(v), v->type(), op,
                                    "global store of a value that does not live in the global"));
      }
    }
    for (ir::Operation* br : split_edges_) CopyEdge(br, "branch operand into the block argument's storage");
    return OkStatus();
  }

  int copies() const { return copies_; }

  static ir::Operation* NextOp(ir::Operation* op) {
    ir::Block* b = op->parent_block();
    for (auto it = b->ops().begin(); it != b->ops().end(); ++it)
      if (it->get() == op) return ++it == b->ops().end() ? nullptr : it->get();
    return nullptr;
  }

 private:
  StoragePlan& plan_;
  ir::PassContext& ctx_;
  int copies_ = 0;
  std::vector<ir::Operation*> split_edges_;  // the cf.br of each split cond_br edge
};

class MaterializeEdgeCopiesPass : public ir::Pass {
 public:
  const char* flag() const override { return "materialize-edge-copies"; }
  const char* description() const override {
    return "Write the copies the storage plan implies on scf edges and global stores as stream.async.clone";
  }
  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    for (ir::Operation* func : module.functions()) {
      if (!func->list_attr("storages")) continue;  // no plan: nothing to read
      StatusOr<StoragePlan> plan = analysis::ReadStoragePlan(func);
      if (!plan.ok()) {
        Status error = plan.status();
        return error.Annotate("function @" + func->str_attr("sym_name"));
      }
      EdgeCopier copier(plan.value(), ctx);
      KILN_RETURN_IF_ERROR(copier.Run(func));
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateMaterializeEdgeCopiesPass() { return std::make_unique<MaterializeEdgeCopiesPass>(); }

}  // namespace kiln::transforms
