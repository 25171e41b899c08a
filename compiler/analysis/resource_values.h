// What passes and the backend ask of a resource value at the stream level:
// the operand a result is tied to, the allocation it lives in, its byte
// size. The op rules come from compiler/ir/ops.def (op_traits.h).
#ifndef KILN_COMPILER_ANALYSIS_RESOURCE_VALUES_H_
#define KILN_COMPILER_ANALYSIS_RESOURCE_VALUES_H_

#include <cstdint>

#include "compiler/ir/ir.h"

namespace kiln::analysis {

// The operand result `index` of `op` is written in place into (ops.def Tie),
// or nullptr.
ir::Value* TiedValue(ir::Operation* op, unsigned index);
// The operand whose allocation result `index` lives in: its tied operand, or
// operand 0 of a view (stream.async.slice, at an offset); nullptr when the
// result has storage of its own.
ir::Value* AllocationSource(ir::Operation* op, unsigned index);
// The value whose allocation `v` lives in (through tied results and slices).
ir::Value* RootOf(ir::Value* v);
// Ops placed by --resource-lifetime (compiler/transforms/resource_lifetime.cc).
bool IsLifetimeOp(ir::Operation* op);
// Byte size of a resource value (0 when unknown): its op's size attribute,
// a dispatch's or call's `sizes`, what a region yields or a loop carries, the
// incoming value of a block argument.
int64_t SizeOf(ir::Value* v, int depth = 0);

}  // namespace kiln::analysis

#endif  // KILN_COMPILER_ANALYSIS_RESOURCE_VALUES_H_
