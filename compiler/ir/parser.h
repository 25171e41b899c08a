// Parser for the textual IR printed by printer.h (MLIR generic form).
//
// Accepts: a sequence of top-level ops, optionally wrapped in
// `"builtin.module"() ({ ... }) : () -> ()` (unwrapped on parse); `//`
// comments to end of line; forward references to values and blocks inside
// a top-level op (needed for CFG regions). Besides the printed forms it also
// accepts, for hand-written tests: splat dense (`dense<1.0> : tensor<4xf32>`),
// nested dense lists (flattened), ints without `: i64`, `%a, %b = ...` for
// multi-result ops.
//
// Value names are scoped per top-level op; redefining a name there is an
// error. As in MLIR, names are not kept by default: `%x` prints back as
// `%arg0` / `%3`. With ParseOptions::keep_names, names other than the
// generated `%N` / `%argN` become the values' name hints, so text printed
// from IR with hints reads back and prints identically.
#ifndef KILN_COMPILER_IR_PARSER_H_
#define KILN_COMPILER_IR_PARSER_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

struct ParseOptions {
  bool keep_names = false;  // value names -> name hints (see above)
};

// Parses `text`. Errors are InvalidArgument with message
// "<filename>:<line>:<col>: <what>" (1-based line and column).
StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& filename);
StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text, const std::string& filename,
                                              const ParseOptions& options);

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_PARSER_H_
