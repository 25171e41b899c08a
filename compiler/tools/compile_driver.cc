#include "compiler/tools/compile_driver.h"

#include "compiler/ir/verifier.h"

namespace kiln::driver {

Status MarkConsumedArguments(ir::Module& module, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    bool found = false;
    for (ir::Operation* func : module.functions()) {
      std::vector<std::string> arg_names = func->strs_attr("arg_names");
      std::vector<std::string> ownership = func->strs_attr("arg_ownership");
      ownership.resize(arg_names.size(), "borrow");
      for (size_t i = 0; i < arg_names.size(); ++i)
        if (arg_names[i] == name) {
          ownership[i] = "consume";
          found = true;
        }
      ir::AttrList list;
      for (const std::string& o : ownership) list.push_back(ir::Attribute(o));
      func->set_attr("arg_ownership", ir::MakeListAttr(list));
    }
    if (!found) return InvalidArgumentError("--consume=%s: no function argument has that name", name.c_str());
  }
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             target::EmitReport* report) {
  KILN_RETURN_IF_ERROR(ir::Verify(module).Annotate("invalid input IR"));
  KILN_RETURN_IF_ERROR(MarkConsumedArguments(module, options.consume_args));
  ir::PassContext ctx;
  KILN_RETURN_IF_ERROR(transforms::RunPasses(module, transforms::PipelineFor(options.pipeline), options.pipeline, ctx));
  return target::EmitModule(module, options.emit, report);
}

StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               target::EmitReport* report) {
  auto imported = onnx_import::ImportOnnxFile(path, options.import);
  if (!imported.ok()) return imported.take_status().Annotate(path);
  return CompileModule(*imported.value(), options, report);
}

}  // namespace kiln::driver
