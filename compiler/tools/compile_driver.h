// In-process compiler driver: ONNX bytes/file -> module bytes. Used by
// kiln-compile and by the end-to-end tests (tests/e2e), so both go through
// exactly the same import -> pipeline -> emission path.
#ifndef KILN_COMPILER_TOOLS_COMPILE_DRIVER_H_
#define KILN_COMPILER_TOOLS_COMPILE_DRIVER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/ir.h"
#include "compiler/target/emit_module.h"
#include "compiler/transforms/pipeline.h"

namespace kiln::driver {

struct CompileOptions {
  onnx_import::ImportOptions import;
  // Graph inputs whose ownership passes to the callee (ABI `consume`): the
  // module may update them in place (kiln-compile --consume=NAME).
  std::vector<std::string> consume_args;
  transforms::PipelineOptions pipeline;
  target::EmitOptions emit;
};

// Marks the arguments named in `names` (func arg_names) of every exported
// function as `consume`. Errors: kInvalidArgument for an unknown name.
Status MarkConsumedArguments(ir::Module& module, const std::vector<std::string>& names);

// Runs the default pass pipeline and emission on an imported module.
StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             target::EmitReport* report = nullptr);
// Imports `path` (ONNX) and compiles it. Errors name the file.
StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               target::EmitReport* report = nullptr);

}  // namespace kiln::driver

#endif  // KILN_COMPILER_TOOLS_COMPILE_DRIVER_H_
