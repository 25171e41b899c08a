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
#include "compiler/analysis/topology.h"
#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/ir.h"
#include "compiler/backend/emit_module.h"
#include "compiler/transforms/pipeline.h"

namespace kiln::driver {

struct CompileOptions {
  onnx_import::ImportOptions import;
  // Graph inputs whose ownership passes to the callee (ABI `consume`): the
  // module may update them in place (kiln-compile --consume=NAME).
  std::vector<std::string> consume_args;
  // The device topology elide-transfers uses (--topology); recorded in the
  // module and checked against the device at load. Unset: the default.
  bool has_topology = false;
  analysis::Topology topology;
  transforms::PipelineOptions pipeline;
  backend::EmitOptions emit;
};

// Applies one compile flag, as kiln-compile spells it, to `options`:
// --input-shape=NAME=DIMS, --constant-input=NAME=V, --sequence-input=NAME=[..],
// --consume=NAME, --topology=unified|discrete|FILE, --no-elision,
// --module-name=NAME, --precision=f32|f16 (and --native-fma, accepted and
// ignored: modules always carry fma()). The flags that change the module, shared
// by kiln-compile and the compiler library (include/kiln/kiln_compiler.h), in
// the way IREE's embedding API takes its session flags as strings.
// Errors: kNotFound for a flag that is not one of these (kiln-compile's own
// output flags, or unknown), kInvalidArgument naming the flag for a bad value.
Status ApplyCompileFlag(const std::string& flag, CompileOptions* options);

// The module name for a model file when --module-name is not given: the file
// name without its directory, up to its first '.' ("a/mel.v1.onnx" -> "mel").
std::string DefaultModuleName(const std::string& path);

// Verifies the imported module, then applies the options that annotate it
// before the pipeline: consumed arguments and the topology.
Status PrepareModule(ir::Module& module, const CompileOptions& options);

// Marks the arguments named in `names` (func arg_names) of every exported
// function as `consume`. Errors: kInvalidArgument for an unknown name.
Status MarkConsumedArguments(ir::Module& module, const std::vector<std::string>& names);

// PrepareModule, then the default pass pipeline and emission, on an imported
// module.
StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             backend::EmitReport* report = nullptr);
// Imports `path` (ONNX) and compiles it. Errors name the file.
StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               backend::EmitReport* report = nullptr);
// Imports ONNX model bytes (a serialized ModelProto) and compiles them.
StatusOr<std::vector<uint8_t>> CompileOnnxBytes(const void* data, size_t size,
                                                const CompileOptions& options,
                                                backend::EmitReport* report = nullptr);

}  // namespace kiln::driver

#endif  // KILN_COMPILER_TOOLS_COMPILE_DRIVER_H_
