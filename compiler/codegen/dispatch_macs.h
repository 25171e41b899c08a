// Multiply-accumulates of one dispatch: the useful arithmetic of its
// contractions, stored per entry point in the module (EntryPoint.macs,
// schemas/kiln_module.fbs) so tools can report GMAC/s per dispatch
// (kiln-bench --per-dispatch, scripts/bench.sh).
//
// Counted ops (shapes are static; the usual convention of FLOP counters such
// as fvcore/ptflops: padded taps count, bias and epilogues do not):
//   tensor.conv2d          N*O*OH*OW * (C/group)*KH*KW   (filter [O, C/group, KH, KW])
//   tensor.conv_transpose  N*C*prod(in spatial) * (M/group)*prod(K)
//                          (input [N, C, D...], filter [C, M/group, K...])
//   tensor.matmul          prod(result dims) * K          (A [..., M, K])
// Everything else counts 0, so a dispatch has MACs > 0 exactly when it holds
// a convolution or a matrix product. A producer that a schedule recomputes for
// several consumers is counted once: this is the model's work, not the
// shader's.
#ifndef KILN_COMPILER_CODEGEN_DISPATCH_MACS_H_
#define KILN_COMPILER_CODEGEN_DISPATCH_MACS_H_

#include <cstdint>

#include "compiler/ir/ir.h"

namespace kiln::codegen {

// MACs of one tensor-level op (0 for ops that are not contractions, and for
// malformed shapes).
uint64_t OpMacs(const ir::Operation& op);

// Sum of OpMacs over every op nested in `dispatch` (a flow.dispatch).
uint64_t DispatchMacs(ir::Operation* dispatch);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_DISPATCH_MACS_H_
