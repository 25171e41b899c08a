// Pass: --elide-transfers
//
// Removes stream.async.transfer ops that move nothing: a transfer between two
// affinities that share memory per the device topology (compiler/analysis/
// topology.h) is a no-op, so its result is replaced with its source and the
// runtime maps the buffer instead of copying it (e.g. host <-> gpu on a
// unified-memory mobile GPU). A transfer across a discrete link stays.
//
// Topology: the module-level op `"kiln.topology"() {spec = "unified"}`
// (kiln-compile --topology=... sets it; lit tests write it in the input).
// Without one, only transfers whose two affinities name the same device are
// elided (as if every link were discrete). `affinity` is the target,
// `source_affinity` the source; absent = the default device.
//
// Rules, for each transfer T = transfer(%v) from S to D, everywhere (nested
// scf regions included), in program order:
//  1. Candidates: %v itself (on S), then, while the candidate is the result of
//     another transfer, that transfer's source (on its source affinity): a
//     round trip gpu -> host of a value that came from the host gives the
//     original back, even across a discrete link. The first candidate on a
//     device that shares memory with D is used; none: T stays.
//  2. The candidate's type must equal T's result type (a transfer may also
//     change the lifetime, e.g. staging -> transient, and there is no cast op
//     at this level); otherwise T stays.
//  3. If T's result may be written in place (a tied use: fill/copy/update
//     target, a dispatch's tied operand; or it flows into something this
//     pass does not follow: an scf/branch/yield operand, a `consume` call
//     operand (a borrowed call operand is only read), a global
//     store, an execute capture, a dealloca), eliding T would write the
//     candidate's storage. That is only allowed when the candidate is a fresh
//     value (defined in T's block by an async op that makes a new value, or a
//     `consume` import) whose only use is T. Otherwise T becomes
//     `stream.async.clone(candidate)` (same result type, size and affinity):
//     a plain copy that --elide-async-copies, run after this pass, removes if
//     the candidate has no later use.
//  4. Transfers left without uses by a rewrite (the earlier legs of a round
//     trip) are erased.
// Every transfer kept, or turned into a clone, gets a remark saying why.
//
// Preconditions: stream level (after materialize-copy-on-write and
// elide-async-copies: every tied use of a value still observed later already
// writes a clone, so rule 3 only has to protect the candidate).
//
// Before (topology unified):
//   %0 = "stream.async.transfer"(%arg0) {affinity = "gpu", size = 16 : i64, source_affinity = "host"}
//   %1 = "stream.async.dispatch"(%0) ...
// After:
//   %1 = "stream.async.dispatch"(%arg0) ...
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/resource_usage.h"
#include "compiler/analysis/topology.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

// True when `user` writes its operand `index` in place (a tied operand).
bool IsTiedUse(ir::Operation* user, unsigned index) {
  const std::string& n = user->name();
  if (n == "stream.async.fill" || n == "stream.async.copy" || n == "stream.async.update") return index == 0;
  if (n == "stream.async.dispatch") {
    for (int64_t t : user->ints_attr("tied_operands"))
      if (t == static_cast<int64_t>(index)) return true;
  }
  // A `consume` parameter of a call: the callee may update it in place.
  if (n == "func.call") return analysis::IsConsumedCallOperand(user, index);
  return false;
}

// True when `v`, or a value sharing its storage, may be written in place or
// freed by some user. Conservative for every use it does not know.
bool MayBeWritten(ir::Value* v, int depth = 0) {
  if (depth > 16) return true;
  for (const ir::Use& use : v->uses()) {
    ir::Operation* user = use.user;
    const std::string& n = user->name();
    if (IsTiedUse(user, use.operand_index)) return true;
    if (n == "stream.async.transfer" || n == "stream.async.clone" || n == "stream.async.dispatch" ||
        n == "stream.async.copy" || n == "stream.async.update" || n == "stream.tensor.export" ||
        n == "func.return" || n == "func.call")
      continue;  // reads (the tied operands, consumed call operands included, were checked above)
    if (n == "stream.async.slice") {  // a view: a write to it writes `v`
      if (MayBeWritten(user->result(0), depth + 1)) return true;
      continue;
    }
    if (n == "stream.timepoint.await" && use.operand_index >= 1) {  // forwards the value
      if (MayBeWritten(user->result(use.operand_index - 1), depth + 1)) return true;
      continue;
    }
    return true;  // scf/cf operands and yields, calls, globals, execute, dealloca, unknown ops
  }
  return false;
}

// True when the storage of `v` may be taken over by the result of `transfer`
// (which is written in place afterwards): `v` is a fresh value of the same
// block whose only use is `transfer`.
bool IsWritableSource(ir::Value* v, ir::Operation* transfer, std::string* why) {
  ir::Operation* def = v->defining_op();
  if (!def) {
    *why = "the source is a block argument (a function argument, loop-carried or region value)";
    return false;
  }
  if (def->parent_block() != transfer->parent_block()) {
    *why = "the source is defined outside the transfer's block (a region may run more than once)";
    return false;
  }
  if (v->uses().size() != 1) {
    *why = "the source is still used elsewhere";
    return false;
  }
  const std::string& n = def->name();
  if (n == "stream.tensor.import") {
    if (def->bool_attr("consume")) return true;
    *why = "the source is a borrowed import (the callee must never write it)";
    return false;
  }
  static const std::set<std::string> kFresh = {
      "stream.async.dispatch", "stream.async.splat", "stream.async.alloca", "stream.async.fill",
      "stream.async.copy",     "stream.async.update", "stream.async.clone", "stream.async.transfer"};
  if (kFresh.count(n)) return true;
  *why = "the source comes from '" + n + "', whose storage may be shared or read-only";
  return false;
}

// Devices by affinity: the module's topology, or (without one) one device per
// distinct affinity name, none sharing memory.
class Devices {
 public:
  explicit Devices(const analysis::Topology* topology) : topology_(topology) {}
  int Resolve(const std::string& affinity) {
    if (topology_) return topology_->Resolve(affinity);
    auto it = names_.find(affinity);
    if (it != names_.end()) return it->second;
    int id = static_cast<int>(names_.size());
    names_[affinity] = id;
    return id;
  }
  bool SharesMemory(int a, int b) const {
    if (topology_) return topology_->SharesMemory(a, b);
    return a >= 0 && a == b;
  }

 private:
  const analysis::Topology* topology_;
  std::map<std::string, int> names_;
};

std::string Quoted(const std::string& affinity) {
  return affinity.empty() ? "the default device" : "'" + affinity + "'";
}

class ElideTransfersPass : public ir::Pass {
 public:
  const char* flag() const override { return "elide-transfers"; }
  const char* description() const override {
    return "Replace stream.async.transfer between devices that share memory (topology) with its source";
  }

  Status Run(ir::Module& module, ir::PassContext& ctx) override {
    StatusOr<analysis::Topology> topology = analysis::GetModuleTopology(module);
    bool have_topology = topology.ok();
    if (!have_topology && topology.status().code() != StatusCode::kNotFound) return topology.status();
    Devices devices(have_topology ? &topology.value() : nullptr);

    std::vector<ir::Operation*> transfers;
    for (ir::Operation* func : module.functions())
      func->Walk([&](ir::Operation* op) {
        if (op->is("stream.async.transfer")) transfers.push_back(op);
      });
    if (!have_topology && !transfers.empty())
      ctx.Remark(nullptr, "elide-transfers: module has no kiln.topology op; only transfers within one "
                          "device are elided (every link treated as discrete)");

    std::set<ir::Operation*> maybe_dead;
    for (ir::Operation* t : transfers) {
      if (t->num_operands() != 1 || t->num_results() != 1) continue;
      std::string target_name = t->str_attr("affinity");
      int target = devices.Resolve(target_name);
      if (target < 0) {
        ctx.Remark(t, "transfer kept: affinity " + Quoted(target_name) + " names no device of the topology");
        continue;
      }
      // Rule 1: the nearest value of the chain on a device sharing memory with the target.
      ir::Value* candidate = nullptr;
      ir::Value* v = t->operand(0);
      std::string v_affinity = t->str_attr("source_affinity");
      bool unknown = false;
      for (int depth = 0; v && depth < 64; ++depth) {
        int dev = devices.Resolve(v_affinity);
        if (dev < 0) {
          ctx.Remark(t, "transfer kept: affinity " + Quoted(v_affinity) + " names no device of the topology");
          unknown = true;
          break;
        }
        if (devices.SharesMemory(dev, target)) {
          candidate = v;
          break;
        }
        ir::Operation* def = v->defining_op();
        if (!def || !def->is("stream.async.transfer") || def->num_operands() != 1) break;
        v = def->operand(0);
        v_affinity = def->str_attr("source_affinity");
      }
      if (unknown) continue;
      if (!candidate) {
        ctx.Remark(t, "transfer kept: " + Quoted(t->str_attr("source_affinity")) + " and " +
                          Quoted(target_name) + " do not share memory");
        continue;
      }
      ir::Value* result = t->result(0);
      // Rule 2.
      if (candidate->type() != result->type()) {
        ctx.Remark(t, "transfer kept: it changes the type from " + candidate->type().ToString() + " to " +
                          result->type().ToString());
        continue;
      }
      ir::Value* old_source = t->operand(0);
      // Rule 3.
      std::string why;
      if (MayBeWritten(result) && !IsWritableSource(candidate, t, &why)) {
        ir::Builder b = ir::Builder::Before(t);
        b.set_loc(t->loc());
        std::map<std::string, ir::Attribute> attrs;
        if (const ir::Attribute* size = t->attr("size")) attrs["size"] = *size;
        if (const ir::Attribute* aff = t->attr("affinity")) attrs["affinity"] = *aff;
        ir::Operation* clone = b.Create("stream.async.clone", {candidate}, {result->type()}, attrs);
        result->ReplaceAllUsesWith(clone->result(0));
        ctx.Remark(t, "transfer replaced by a clone: its result is written in place and " + why +
                          " (elide-async-copies decides)");
      } else {
        result->ReplaceAllUsesWith(candidate);
      }
      maybe_dead.erase(t);
      t->Erase();
      if (old_source != candidate && old_source->defining_op())
        maybe_dead.insert(old_source->defining_op());
    }
    // Rule 4: earlier legs of elided chains.
    while (!maybe_dead.empty()) {
      ir::Operation* op = *maybe_dead.begin();
      maybe_dead.erase(maybe_dead.begin());
      if (!op->is("stream.async.transfer") || !op->result(0)->use_empty()) continue;
      ir::Operation* up = op->num_operands() == 1 ? op->operand(0)->defining_op() : nullptr;
      op->Erase();
      if (up) maybe_dead.insert(up);
    }
    return OkStatus();
  }
};

}  // namespace

std::unique_ptr<ir::Pass> CreateElideTransfersPass() { return std::make_unique<ElideTransfersPass>(); }

}  // namespace kiln::transforms
