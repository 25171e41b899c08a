// Structural and type verifier for the IR (run by kiln-opt after parsing
// and after every pass).
//
// Checks: operands non-null, defined before use in their block and
// dominating in CFG regions (and visible: not defined in a nested region);
// blocks of func.func / flow.dispatch / scf regions end in a terminator and
// terminators are last; result types static (dims >= 0, known dtype); op
// rules of ops.h where cheap: elementwise operand counts, dtypes and numpy
// broadcasting, conv2d and matmul shapes, reshape element count, constant
// type, func.return vs. the other returns of its function and result_names,
// flow.dispatch region arguments / flow.return vs. operands / results,
// branch operands vs. successor block arguments; structured control flow
// (ops.h): scf.if (one i1 operand, then/else regions), scf.for (index
// lb/ub/step, ^bb(index, iter_args) typed as the inits, results = inits),
// scf.while (before region typed as the inits ending in scf.condition(i1,
// forwarded = results), after region typed as the results yielding the
// inits), scf.index_switch (index operand, one region per case + default):
// one block per region, scf.yield operand types = the op's result types,
// scf.yield / scf.condition parents; arith.constant (index or i1 with an
// integer value); tensor.extract (one-element tensor → i1 or index).
//
// Error message: `'<op name>' op loc("<loc>"): <what>` (the loc part only
// when the op has one); the first error found is returned, as
// InvalidArgument. Cost: linear in the IR size plus dominance per CFG region.
#ifndef KILN_COMPILER_IR_VERIFIER_H_
#define KILN_COMPILER_IR_VERIFIER_H_

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

Status Verify(Module& module);
// Verifies one op and everything nested in it (values from enclosing
// regions are accepted as defined).
Status VerifyOp(Operation* op);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_VERIFIER_H_
