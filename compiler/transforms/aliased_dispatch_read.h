// Part of --elide-async-copies (compiler/transforms/elide_async_copies.cc):
// the aliased in-place read rule, IREE's dispatch_aliased_buffer.
//
// The copy in
//   %c = "stream.async.clone"(%x) {size = 16 : i64}
//   %r = "stream.async.dispatch"(%c, %x) {entry = @add, tied_operands = [0]}
// is needed by the general rule (analysis::CanReuseStorage): the dispatch
// reads %x after the clone. It is not needed when writing %x in place
// cannot change what the dispatch reads: each invocation of the shader reads
// the element of %x it then writes, and nothing else. The rule removes the
// clone (giving `dispatch(%x, %x)`, result tied to operand 0) when all hold:
//  1. %c has one use: the tied operand k of a stream.async.dispatch D, and
//     D has one result (tied to k). Several results are not handled: the
//     generated shader stores one result before it loads the operands only
//     another result needs (compiler/codegen/schedule_pointwise.cc).
//  2. D reads %x through another operand j, directly or through a full-size
//     view: stream.timepoint.await results and stream.async.slice results
//     at offset 0 whose length is the copy's size, on either side (both
//     operands name the same first byte). A slice at another offset reads
//     other elements: not this rule (the clone stays); nor is an operand
//     that D indexes at an element offset (`element_offsets`,
//     compiler/transforms/slice_views.cc).
//  3. D's body (the flow.dispatch of the flow.executable D names, its
//     operands the executable's arguments in order) is elementwise at one
//     index: every op is elementwise (compiler/ir/op_traits.h kElementwise,
//     no reshape, constant or anchor op such as matmul, transpose or a
//     broadcast) and produces the result's shape, and the block arguments k
//     and every j have the result's shape and element byte size. Every
//     elementwise op whose result has an operand's shape reads that operand
//     at the index it computes, so invocation i reads element i of %x and
//     writes element i of the result, at the same bytes.
//  4. With D's reads through j counted as reads of %c (which D writes in
//     place anyway), the general rule removes the clone: %x is owned and no
//     one observes its contents after D (a read after the dispatch, a later
//     loop trip, an escape keep the copy).
// Codegen then declares the three bindings of one range without `restrict`
// (the emitter sees their byte ranges overlap: codegen::CodegenOptions::
// aliased_bindings).
#ifndef KILN_COMPILER_TRANSFORMS_ALIASED_DISPATCH_READ_H_
#define KILN_COMPILER_TRANSFORMS_ALIASED_DISPATCH_READ_H_

#include "compiler/analysis/resource_usage.h"
#include "compiler/ir/ir.h"

namespace kiln::transforms {

// `clone`: a stream.async.clone that the general rule keeps with verdict
// `general` (!general.ok). Returns {true, ""} when the aliased read rule
// above removes it; `general` unchanged when the rule does not apply (the
// copy does not feed an in-place dispatch that also reads its source);
// otherwise {false, reason} naming the condition that failed, e.g.
// "source is also read by the in-place 'stream.async.dispatch' (loc)
// through operand 1, and its body 'x' is not elementwise at one index
// ('tensor.transpose')". Leaves the IR as it found it (condition 4 is
// tried by pointing D's operands j at the copy and back).
analysis::Verdict AliasedDispatchReadVerdict(ir::Operation* clone, const analysis::Verdict& general);

}  // namespace kiln::transforms

#endif  // KILN_COMPILER_TRANSFORMS_ALIASED_DISPATCH_READ_H_
