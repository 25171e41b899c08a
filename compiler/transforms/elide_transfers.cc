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
// `source_affinity` the source. A transfer without `source_affinity` moves
// its operand from where the operand's producer put it: the producer's
// `affinity` (a dispatch, import, splat... placed on a device, or the
// target of an earlier transfer); the default device only when the
// producer has none (a function argument, an op without an affinity).
// IREE: the source affinity of a value is inferred from its producer.
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
//  3. T's result is replaced by the candidate: from here on the two are ONE
//     value (one storage) for every later analysis, which is what makes the
//     pass safe. Transfers left without uses by a rewrite (the earlier legs of
//     a round trip) are erased.
// Every transfer kept gets a remark saying why.
//
// Why this pass runs FIRST, before materialize-copy-on-write (pipeline.cc):
// an elided transfer turns two values into aliases of one storage. Any copy
// decision taken while they were separate values would be wrong afterwards:
// e.g. `%t = transfer(%v); %f = fill(%v); read %t`, where copy elision,
// seeing %t as a copy, lets the fill write %v in place, and eliding %t then
// makes the read see the fill. So transfers are elided first, then
// copy-on-write puts a clone before every tied use (including the uses that
// were the transfer's) and elide-async-copies removes the clones nothing
// needs: copies are introduced for correctness, then elided where not
// required, and no elision relies on a decision a later one invalidates.
// This pass therefore never writes a clone itself and needs no notion of
// "written in place".
//
// Preconditions: stream level (convert-to-stream ran).
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

#include "compiler/analysis/topology.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {
namespace {

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

// Where `t` (a transfer) moves its operand from: its source_affinity, else
// the affinity of the operand's producer, else "" (the default device).
std::string SourceAffinity(const ir::Operation* t) {
  if (t->attr("source_affinity")) return t->str_attr("source_affinity");
  const ir::Operation* def = t->num_operands() == 1 ? t->operand(0)->defining_op() : nullptr;
  return def && def->attr("affinity") ? def->str_attr("affinity") : std::string();
}

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
        if (op->is(ir::OpCode::kStreamAsyncTransfer)) transfers.push_back(op);
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
      std::string v_affinity = SourceAffinity(t);
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
        if (!def || !def->is(ir::OpCode::kStreamAsyncTransfer) || def->num_operands() != 1) break;
        v = def->operand(0);
        v_affinity = SourceAffinity(def);
      }
      if (unknown) continue;
      if (!candidate) {
        ctx.Remark(t, "transfer kept: " + Quoted(SourceAffinity(t)) + " and " + Quoted(target_name) +
                          " do not share memory" +
                          (t->attr("source_affinity") ? "" : " (source affinity from the operand's producer)"));
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
      result->ReplaceAllUsesWith(candidate);
      maybe_dead.erase(t);
      t->Erase();
      if (old_source != candidate && old_source->defining_op())
        maybe_dead.insert(old_source->defining_op());
    }
    // Rule 4: earlier legs of elided chains.
    while (!maybe_dead.empty()) {
      ir::Operation* op = *maybe_dead.begin();
      maybe_dead.erase(maybe_dead.begin());
      if (!op->is(ir::OpCode::kStreamAsyncTransfer) || !op->result(0)->use_empty()) continue;
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
