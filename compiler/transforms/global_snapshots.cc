// Global snapshots (global_snapshots.h).
#include "compiler/transforms/global_snapshots.h"

#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

#include "compiler/analysis/resource_values.h"
#include "compiler/ir/op_traits.h"

namespace kiln::transforms {
namespace {

using ir::OpCode;

// Every op of `func`'s body, pre-order (nested regions included).
template <typename F>
void walk(ir::Operation* func, F&& f) {
  for (auto& b : func->region(0)->blocks())
    for (auto& owned : b->ops()) owned->Walk(f);
}

}  // namespace

std::set<ir::Value*> GlobalSnapshots(ir::Operation* func) {
  using analysis::RootOf;
  std::set<ir::Value*> snapshots;
    std::map<ir::Value*, std::vector<ir::Value*>> family;  // root -> values viewing it
    std::map<std::string, std::vector<ir::Operation*>> stores;
    std::vector<ir::Operation*> calls;
    walk(func, [&](ir::Operation* op) {
      for (ir::Value* r : op->results())
        if (r->type().kind == ir::TypeKind::kResource) family[RootOf(r)].push_back(r);
      if (op->is(OpCode::kUtilGlobalStore)) stores[op->str_attr("global")].push_back(op);
      if (op->is(OpCode::kFuncCall)) calls.push_back(op);  // the callee may store any global
    });
    auto position_in = [](ir::Block* b, ir::Operation* op, ir::Operation** anc) -> int {
      while (op && op->parent_block() != b) op = op->parent_op();
      if (!op) return -1;
      *anc = op;
      int i = 0;
      for (auto& o : b->ops()) {
        if (o.get() == op) return i;
        ++i;
      }
      return -1;
    };
    walk(func, [&](ir::Operation* op) {
      if (!op->is(OpCode::kUtilGlobalLoad)) return;
      std::vector<ir::Operation*> writers = calls;
      auto st = stores.find(op->str_attr("global"));
      if (st != stores.end()) writers.insert(writers.end(), st->second.begin(), st->second.end());
      if (writers.empty()) return;
      ir::Block* b = op->parent_block();
      ir::Operation* anc = nullptr;
      int load_pos = position_in(b, op, &anc), first = INT_MAX;
      bool snapshot = false;
      for (ir::Operation* store : writers) {
        int p = position_in(b, store, &anc);
        if (p < 0 || p <= load_pos) snapshot = true;
        first = std::min(first, p);
      }
      for (ir::Value* v : family[op->result(0)])
        for (const ir::Use& u : v->uses()) {
          int p = position_in(b, u.user, &anc);
          if (p < 0 || p > first || (p == first && !(u.user == anc && u.user->is(OpCode::kUtilGlobalStore))))
            snapshot = true;
        }
      if (snapshot) snapshots.insert(op->result(0));
    });
  return snapshots;
}

// util.global.load gets its global's byte size (`size`), which its storage
// (a view of the global, or a snapshot) is sized by. Errors: a load or store
// naming no util.global, a global without a positive `size`.
Status SizeGlobalLoads(ir::Module& module) {
  std::map<std::string, int64_t> sizes;
  for (auto& owned : module.body()->ops())
    if (owned->is(OpCode::kUtilGlobal)) sizes[owned->str_attr("sym_name")] = owned->int_attr("size", -1);
  Status status;
  for (ir::Operation* func : module.functions())
    func->Walk([&](ir::Operation* op) {
      if (!status.ok() || (!op->is(OpCode::kUtilGlobalLoad) && !op->is(OpCode::kUtilGlobalStore))) return;
      const std::string sym = op->str_attr("global");
      auto it = sizes.find(sym);
      if (it == sizes.end()) {
        status = InvalidArgumentError("schedule-allocation: %s names no util.global @%s (%s)", op->name().c_str(),
                                      sym.c_str(), op->loc().c_str());
        return;
      }
      if (it->second <= 0) {
        status = InvalidArgumentError("schedule-allocation: util.global @%s needs a positive byte `size` attribute",
                                      sym.c_str());
        return;
      }
      if (op->is(OpCode::kUtilGlobalLoad)) op->set_attr("size", ir::Attribute(it->second));
    });
  return status;
}

}  // namespace kiln::transforms
