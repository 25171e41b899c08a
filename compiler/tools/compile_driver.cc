#include "compiler/tools/compile_driver.h"

#include "compiler/ir/verifier.h"

namespace kiln::driver {

StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             target::EmitReport* report) {
  KILN_RETURN_IF_ERROR(ir::Verify(module).Annotate("invalid input IR"));
  ir::PassContext ctx;
  KILN_RETURN_IF_ERROR(transforms::RunPasses(module, transforms::DefaultPipeline(), options.pipeline, ctx));
  return target::EmitModule(module, options.emit, report);
}

StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               target::EmitReport* report) {
  auto imported = onnx_import::ImportOnnxFile(path, options.import);
  if (!imported.ok()) return imported.take_status().Annotate(path);
  return CompileModule(*imported.value(), options, report);
}

}  // namespace kiln::driver
