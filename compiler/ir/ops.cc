// Op-set predicates declared in ops.h.
#include "compiler/ir/ops.h"

#include "compiler/ir/op_traits.h"

namespace kiln::ir {

bool IsElementwiseOp(const std::string& name) { return Traits(LookupOpCode(name)).is_elementwise(); }
bool IsHostSideOp(const std::string& name) { return Traits(LookupOpCode(name)).has(kHostSide); }

}  // namespace kiln::ir
