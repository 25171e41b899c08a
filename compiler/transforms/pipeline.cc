#include "compiler/transforms/pipeline.h"

#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"
#include "compiler/transforms/passes.h"

namespace kiln::transforms {

const std::vector<std::string>& DefaultPipeline() {
  static const std::vector<std::string> kPipeline = {
      // A loop with constant bounds that runs no trip is its initial values.
      "fold-zero-trip-loops",
      // Zero-element results need no dispatch.
      "fold-empty-tensors",
      "fuse-dispatch-regions",
      // Chains of small dispatches (squeeze-excite) run as one workgroup.
      "fuse-workgroup-stages",
      "convert-to-stream",
      "slice-views",
      // Transfers between devices that share memory become aliases of their
      // source first, so that copy-on-write sees the real aliasing; then
      // copies are introduced for correctness and the ones not needed are
      // elided. No elision relies on a decision a later one invalidates.
      "elide-transfers",
      // Arguments of module-internal functions that every caller hands over
      // become consumed, before copy-on-write sees the ownership.
      "infer-argument-ownership",
      "materialize-copy-on-write",
      "elide-async-copies",
      // Subrange writes overwritten before any read (dead stores).
      "elide-dead-writes",
      // Producers write into their concat's target subrange (in-place concat).
      "emplace-allocations",
      // Dealloca at the known last use, retain/release where a resource
      // escapes; the emitter ends transient lifetimes at the deallocas.
      "resource-lifetime",
      // Group async work into execution regions, then drop covered awaits.
      "schedule-execution",
      "elide-timepoints",
  };
  return kPipeline;
}

const std::vector<std::string>& AllocationPipeline() {
  static const std::vector<std::string> kPipeline = {
      // Execution regions recorded in place, awaits and joins dropped: the
      // backend records one in-order queue.
      "lower-timeline",
      // Results living in the constant pool, a global or a borrowed
      // argument are cloned into storage the caller owns.
      "materialize-result-copies",
      // Results of one value share one copy where the caller supplies no
      // output storage (a copy elision: --no-elision skips it).
      "share-result-copies",
      // Where every resource lives: arena slots, results, donated and taken
      // arguments, coalesced edges, parallel-copy temporaries.
      "schedule-allocation",
      // The copies that plan implies on scf edges and global stores, as IR.
      "materialize-edge-copies",
      // The barriers between conflicting commands, with the byte ranges
      // they cover (last: they follow the final command order).
      "place-barriers",
  };
  return kPipeline;
}

std::vector<std::string> PipelineFor(const PipelineOptions& options) {
  using Level = PipelineOptions::Level;
  // The ABI and the target, as the caller gives them: copy-on-write and the
  // elision passes read them from the module.
  std::vector<std::string> flags;
  for (const std::string& name : options.consume_args) flags.push_back("mark-consumed-arguments=" + name);
  if (!options.topology_spec.empty()) flags.push_back("set-topology=" + options.topology_spec);
  if (options.level == Level::kTensor) return flags;
  if (options.precision_f16) flags.push_back("demote-f32-to-f16");
  for (const std::string& flag : DefaultPipeline()) {
    // Opt-in: pads become border fills plus an update of the interior,
    // which emplace-allocations then places into the producer.
    if (options.fuse_pad && flag == "emplace-allocations") flags.push_back("fuse-pad");
    flags.push_back(flag);
    if (flag == "fuse-workgroup-stages") flags.push_back("mark-exact-fma=" + options.exact_fma);
  }
  if (options.level == Level::kAllocated)
    flags.insert(flags.end(), AllocationPipeline().begin(), AllocationPipeline().end());
  return flags;
}

Status RunPasses(ir::Module& module, const std::vector<std::string>& flags, const PipelineOptions& options,
                 ir::PassContext& ctx) {
  RegisterAllPasses();
  for (const std::string& flag : flags) {
    if (options.disable_elision && (flag == "elide-async-copies" || flag == "elide-transfers" ||
                                     flag == "elide-dead-writes" || flag == "infer-argument-ownership" ||
                                     flag == "share-result-copies")) continue;
    std::unique_ptr<ir::Pass> pass = ir::CreatePass(flag);
    if (!pass) return InvalidArgumentError("unknown pass '%s'", flag.c_str());
    size_t first_remark = ctx.remarks.size();
    KILN_RETURN_IF_ERROR(pass->Run(module, ctx).Annotate(flag));
    if (options.last_copy_remarks && flag == "elide-async-copies")
      options.last_copy_remarks->assign(ctx.remarks.begin() + static_cast<std::ptrdiff_t>(first_remark),
                                        ctx.remarks.end());
    if (options.verify_each) KILN_RETURN_IF_ERROR(ir::Verify(module).Annotate("after " + flag));
    if (options.ir_after_each) options.ir_after_each->push_back("// IR after --" + flag + "\n" + ir::PrintModule(module));
  }
  return OkStatus();
}

}  // namespace kiln::transforms
