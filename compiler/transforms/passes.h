// Registration of every compiler pass (one pass per file in this folder).
#ifndef KILN_COMPILER_TRANSFORMS_PASSES_H_
#define KILN_COMPILER_TRANSFORMS_PASSES_H_

#include <memory>

#include "compiler/ir/pass.h"

namespace kiln::transforms {

// Registers every pass below under its flag. Idempotent.
void RegisterAllPasses();

// --fuse-dispatch-regions: groups tensor-level ops into flow.dispatch ops.
std::unique_ptr<ir::Pass> CreateFuseDispatchRegionsPass();

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_PASSES_H_
