// In-process compiler driver: ONNX bytes/file (or a .kir program) -> module
// bytes. Used by kiln-compile, the compiler library (include/kiln/
// kiln_compiler.h) and the end-to-end tests (tests/e2e), so all of them go
// through exactly the same load -> pipeline -> emission path. The pipeline's
// steps, the ABI ones included, are listed in compiler/transforms/pipeline.cc.
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
  // The passes and what they are told: among them the graph inputs whose
  // ownership passes to the callee (pipeline.consume_args, ABI `consume`:
  // the module may update them in place; kiln-compile --consume=NAME) and
  // the device topology elide-transfers uses (pipeline.topology_spec;
  // --topology), recorded in the module and checked against the device at
  // load. Empty: the default topology.
  transforms::PipelineOptions pipeline;
  backend::EmitOptions emit;
};

// Applies one compile flag, as kiln-compile spells it, to `options`:
// --input-shape=NAME=DIMS, --constant-input=NAME=V, --sequence-input=NAME=[..],
// --consume=NAME, --topology=unified|discrete|FILE, --no-elision, --fuse-pad,
// --module-name=NAME, --precision=f32|f16, --exact-fma=state|all|none, --unroll-in-module (and --native-fma, accepted and
// ignored: modules always carry fma()). The flags that change the module, shared
// by kiln-compile and the compiler library (include/kiln/kiln_compiler.h), in
// the way IREE's embedding API takes its session flags as strings.
// Errors: kNotFound for a flag that is not one of these (kiln-compile's own
// output flags, or unknown), kInvalidArgument naming the flag for a bad value.
Status ApplyCompileFlag(const std::string& flag, CompileOptions* options);

// The module name for a model file when --module-name is not given: the file
// name without its directory, up to its first '.' ("a/mel.v1.onnx" -> "mel").
std::string DefaultModuleName(const std::string& path);

// Reads a model: a .kir program (the IR's text form; the name ends in
// ".kir") or an ONNX file, imported with `options.import`. Errors name the
// file.
StatusOr<std::unique_ptr<ir::Module>> LoadModel(const std::string& path, const CompileOptions& options);

// Verifies `module`, then runs transforms::PipelineFor(options.pipeline) on
// it: every IR-changing step up to the pipeline's level, the ABI passes
// first. Pass remarks go to `ctx`. Errors: kInvalidArgument for invalid
// input IR, else the failing pass's error, prefixed with its flag.
Status RunPipeline(ir::Module& module, const CompileOptions& options, ir::PassContext& ctx);

// RunPipeline (to the allocated level), then emission, on an imported
// module. The module is lowered in place: compile a fresh import (or
// parse) each time, never a module CompileModule has already seen.
StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             backend::EmitReport* report = nullptr);
// Loads `path` (LoadModel: ONNX, or a .kir program) and compiles it.
// Errors name the file.
StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               backend::EmitReport* report = nullptr);
// Imports ONNX model bytes (a serialized ModelProto) and compiles them.
StatusOr<std::vector<uint8_t>> CompileOnnxBytes(const void* data, size_t size,
                                                const CompileOptions& options,
                                                backend::EmitReport* report = nullptr);

}  // namespace kiln::driver

#endif  // KILN_COMPILER_TOOLS_COMPILE_DRIVER_H_
