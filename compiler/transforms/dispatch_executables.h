// What the stream-level passes that rewrite dispatches by their executable
// share (--emplace-allocations, --fuse-pad): the flow.executable of a
// stream.async.dispatch, the blocks of a function they walk, and the
// executables a rewrite left without a dispatch.
#ifndef KILN_COMPILER_TRANSFORMS_DISPATCH_EXECUTABLES_H_
#define KILN_COMPILER_TRANSFORMS_DISPATCH_EXECUTABLES_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::transforms {

// The module's flow.executables by sym_name (not owned).
class DispatchExecutables {
 public:
  explicit DispatchExecutables(ir::Module& module);
  // The flow.dispatch at the top of `dispatch`'s executable (its `entry`);
  // nullptr when there is none.
  ir::Operation* BodyOf(ir::Operation* dispatch) const;
  // Erases the executables named in `rewritten` that no
  // stream.async.dispatch of the module calls any more.
  void EraseUncalled(ir::Module& module, const std::set<std::string>& rewritten);

 private:
  std::map<std::string, ir::Operation*> by_name_;
};

// Every block of `func`'s body and of the regions nested in it, outer first.
std::vector<ir::Block*> BlocksOf(ir::Operation* func);

// Sets result `r`'s entry of `dispatch`'s `result_strides` (a strided
// placement, --emplace-allocations: per result its rank, then that many
// element strides in the target; rank 0 for a row-major result; the
// backend reads it into codegen::CodegenOptions::result_strides), keeping
// the other results' entries.
void SetResultStrides(ir::Operation* dispatch, unsigned r, const std::vector<int64_t>& strides);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_DISPATCH_EXECUTABLES_H_
