// Textual form of the IR: MLIR's generic op form (see ir.h and the rules
// below). The parser (parser.h) reads exactly what this prints, so
// Print(Parse(Print(m))) == Print(m).
//
// Rules:
//  - Ops: `%0 = "tensor.add"(%a, %b) {attrs} : (t0, t1) -> t2 loc("node")`.
//    No results: `"func.return"(%1) : (t) -> ()`. Several results:
//    `%3:2 = ...` and uses `%3#0`, `%3#1`. Several result types print in
//    parentheses, one without. Successors: `"cf.br"(%x)[^bb1] : ...`.
//    Regions: ` ({ ... }, { ... })` after the operands/successors.
//  - Value names, numbered per top-level op: entry-block arguments of any
//    region `%argN`, other values `%N`; a value whose name hint is set prints
//    as `%hint` (sanitized to [A-Za-z0-9_$.-], uniqued with `_N`).
//  - Blocks: `^bbN(%a: type, ...):` (N = index in its region); the entry
//    block's label is omitted when it has no arguments and is not empty.
//  - Attributes, sorted by name: `3 : i64`; floats with the shortest text
//    that reads back exactly: `0.5 : f64`, or `0.2 : f32` when the value is
//    exactly a float32 and shorter that way (value = (double)0.2f); always
//    with '.' or 'e'; `nan : f64`, `inf : f64`, `-inf : f64`. `true`,
//    `"str"` (escapes \" \\ \n \t \XX), int arrays `[1, 2]` (`[]` is an
//    empty int array), float arrays `array<f64: 0.5, 1.0>` or
//    `array<f32: ...>`, types, `@symbol`, lists `[1 : i64, "a"]`, dense
//    elements `dense<[1.0, 2.0]> : tensor<2xf32>` (flat, row-major, <= 16
//    elements; `dense<2.0> : tensor<f32>` for scalars; i1 as true/false)
//    else `dense<"0xHEX"> : tensor<...>` (raw little-endian bytes).
#ifndef KILN_COMPILER_IR_PRINTER_H_
#define KILN_COMPILER_IR_PRINTER_H_

#include <ostream>
#include <string>

#include "compiler/ir/ir.h"

namespace kiln::ir {

// Prints every top-level op of `module`, one after the other.
std::string PrintModule(Module& module);
void PrintModule(Module& module, std::ostream& os);
// Prints one op (and its regions), for debugging: values defined outside
// `op` get names in the op's own numbering (after its inner values).
std::string PrintOp(Operation* op);
// Prints one attribute value (e.g. `3 : i64`, `dense<1.0> : tensor<f32>`).
std::string PrintAttribute(const Attribute& attr);
// Shortest decimal text that reads back to exactly `v` as a double (or as a
// float when `as_f32`), always containing '.' or 'e' (or nan/inf).
std::string FormatFloat(double v, bool as_f32);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_PRINTER_H_
