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
//    plan gave the loaded value.
// The backend's copies on these edges then find the value already in place
// and record nothing: the commands are the same, now named by the IR.
//
// Left to the backend (documented as backend copies): branches between
// blocks (cf.br / cf.cond_br: a copy on one edge of a cond_br needs the edge
// split into a block of its own), and results returned
// from the constant pool, a global or a borrowed argument (storage made per
// invoke).
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

  Status Run(ir::Operation* func) {
    std::vector<ir::Operation*> ops;
    for (auto& b : func->region(0)->blocks())
      for (auto& owned : b->ops()) owned->Walk([&](ir::Operation* op) { ops.push_back(op); });
    std::map<std::string, int> globals;
    for (size_t id = 0; id < plan_.storages.size(); ++id)
      if (plan_.storages[id].kind == analysis::StorageSlot::kGlobal) globals[plan_.storages[id].global] = static_cast<int>(id);
    for (ir::Operation* op : ops) {
      if (op->is(OpCode::kScfIf) || op->is(OpCode::kScfIndexSwitch)) {
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
