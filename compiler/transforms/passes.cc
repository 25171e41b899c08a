#include "compiler/transforms/passes.h"

namespace kiln::transforms {

void RegisterAllPasses() {
  static bool registered = false;
  if (registered) return;
  registered = true;
  ir::RegisterPass("fuse-dispatch-regions", CreateFuseDispatchRegionsPass);
}

}  // namespace kiln::transforms
