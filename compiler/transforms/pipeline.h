// The compiler pipeline: which passes run, in which order (DESIGN.md "Data
// flow"). kiln-compile runs it between import and emission.
#ifndef KILN_COMPILER_TRANSFORMS_PIPELINE_H_
#define KILN_COMPILER_TRANSFORMS_PIPELINE_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/pass.h"

namespace kiln::transforms {

struct PipelineOptions {
  bool verify_each = true;  // run the IR verifier after every pass
  // Skip the passes that remove copies, transfers and writes
  // (elide-transfers, infer-argument-ownership, elide-async-copies,
  // elide-dead-writes): the
  // correct-but-naive program, for differential tests.
  bool disable_elision = false;
  // When non-empty, the IR after each pass is appended here (--print-ir-after-all).
  std::vector<std::string>* ir_after_each = nullptr;
  // When set, receives the remarks of the last elide-async-copies run: one
  // "kept copy: <reason>" per copy it left, with the reason it was decided
  // on (before scheduling wraps the program in execution regions). The
  // passes after it add and remove no copies (--explain-copies).
  std::vector<std::string>* last_copy_remarks = nullptr;
  // Store f32 tensors as f16, arithmetic in f32 (--demote-f32-to-f16 first;
  // kiln-compile --precision=f16).
  bool precision_f16 = false;
  // Opt-in pad fusion: --fuse-pad runs just before --emplace-allocations,
  // which places the producer into the padded target's interior
  // (compiler/transforms/fuse_pad.cc; kiln-compile --fuse-pad).
  bool fuse_pad = false;
  // Which dispatches multiply-add with one rounding on CPU drivers too:
  // --mark-exact-fma=POLICY right after --fuse-workgroup-stages
  // (compiler/transforms/mark_exact_fma.cc; kiln-compile --exact-fma).
  std::string exact_fma = "state";
  // What the caller compiles for, written into the module by the first
  // passes of the pipeline: --mark-consumed-arguments=NAME for each name
  // (kiln-compile --consume=NAME), then --set-topology=SPEC when the spec is
  // not empty (kiln-compile --topology; analysis::Topology::ToSpec()).
  std::vector<std::string> consume_args;
  std::string topology_spec;
  // Where the pipeline stops: kTensor after the passes above (the imported
  // program with its ABI; kiln-compile --emit=kir-tensor), kStream before
  // AllocationPipeline() (execution regions and timepoints; --emit=kir-stream),
  // kAllocated at the end (the level the backend writes out; --emit=kir-alloc).
  enum class Level { kTensor, kStream, kAllocated };
  Level level = Level::kAllocated;
};

// Pass flags of the tensor-to-stream pipeline, in order: the program at the
// stream level (async resources with value semantics, execution regions,
// timepoints).
const std::vector<std::string>& DefaultPipeline();

// Pass flags that take the stream level to the allocated level, the one the
// backend (compiler/backend/) writes out as bytecode: lower-timeline,
// materialize-result-copies, schedule-allocation, materialize-edge-copies.
const std::vector<std::string>& AllocationPipeline();

// Every IR-changing step between import and emission, in order, as pass
// flags: the ABI passes `options` asks for (mark-consumed-arguments=NAME,
// set-topology=SPEC), --demote-f32-to-f16 when precision_f16, then
// DefaultPipeline() (with --fuse-pad before --emplace-allocations when
// fuse_pad) and AllocationPipeline(), cut at `options.level`.
std::vector<std::string> PipelineFor(const PipelineOptions& options);

// Runs `flags` in order on `module`.
Status RunPasses(ir::Module& module, const std::vector<std::string>& flags, const PipelineOptions& options,
                 ir::PassContext& ctx);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_PIPELINE_H_
