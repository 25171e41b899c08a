// Pass infrastructure. A pass transforms a Module in place. Passes are
// registered by flag name ("fuse-dispatch-regions") in one explicit list
// (compiler/transforms/passes.cc: RegisterAllPasses), which kiln-opt and the
// kiln-compile pipeline (compiler/transforms/pipeline.cc) both use.
#ifndef KILN_COMPILER_IR_PASS_H_
#define KILN_COMPILER_IR_PASS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::ir {

// Where a pass writes debug remarks (e.g. why a copy was kept). Remarks are
// printed by kiln-opt with --remarks and by kiln-compile --explain-*.
struct PassContext {
  std::vector<std::string> remarks;
  void Remark(const Operation* op, const std::string& text);
};

class Pass {
 public:
  virtual ~Pass() = default;
  // The command-line flag, e.g. "fuse-dispatch-regions".
  virtual const char* flag() const = 0;
  virtual const char* description() const = 0;
  // Runs on `module`. An error aborts the pipeline; the message names the op
  // (and its ONNX node location) at fault.
  virtual Status Run(Module& module, PassContext& ctx) = 0;
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;
void RegisterPass(const std::string& flag, PassFactory factory);
// A pass that takes one option string, spelled "FLAG=OPTION" in a pipeline
// and --FLAG=OPTION on kiln-opt's command line (e.g.
// "set-topology=discrete"). The pass checks the option when it runs; an
// error then names the pass and the option.
using PassWithOptionFactory = std::function<std::unique_ptr<Pass>(const std::string& option)>;
void RegisterPassWithOption(const std::string& flag, PassWithOptionFactory factory);
// `spec` is "FLAG" or "FLAG=OPTION". nullptr when FLAG is unknown, when a
// pass without an option is given one, or a pass with one is given none.
std::unique_ptr<Pass> CreatePass(const std::string& spec);
// Every registered flag; a pass taking an option is listed as "FLAG=OPTION".
std::vector<std::string> RegisteredPassFlags();

}  // namespace kiln::ir

#endif  // KILN_COMPILER_IR_PASS_H_
