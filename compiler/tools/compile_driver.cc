#include "compiler/tools/compile_driver.h"

#include <fstream>
#include <sstream>
#include <string>

#include "compiler/ir/parser.h"
#include "compiler/ir/verifier.h"

namespace kiln::driver {

namespace {

// The value of `flag` when it is "--NAME=VALUE" for `name` = "--NAME".
bool Value(const std::string& flag, const char* name, std::string* value) {
  size_t n = std::char_traits<char>::length(name);
  if (flag.compare(0, n, name) != 0 || flag.size() <= n || flag[n] != '=') return false;
  *value = flag.substr(n + 1);
  return true;
}

}  // namespace

Status ApplyCompileFlag(const std::string& flag, CompileOptions* options) {
  std::string v;
  if (Value(flag, "--input-shape", &v)) {
    KILN_RETURN_IF_ERROR(onnx_import::ParseInputShapeFlag(v, &options->import));
  } else if (Value(flag, "--constant-input", &v)) {
    KILN_RETURN_IF_ERROR(onnx_import::ParseConstantInputFlag(v, &options->import).Annotate("--constant-input"));
  } else if (Value(flag, "--sequence-input", &v)) {
    KILN_RETURN_IF_ERROR(onnx_import::ParseSequenceInputFlag(v, &options->import).Annotate("--sequence-input"));
  } else if (Value(flag, "--consume", &v)) {
    options->pipeline.consume_args.push_back(v);
  } else if (Value(flag, "--topology", &v)) {
    // Read (a FILE) and checked here, so a bad value fails at the flag; the
    // pipeline's set-topology pass gets it in its one-line form.
    auto topology = analysis::ParseTopologyFlag(v);
    if (!topology.ok()) return topology.take_status().Annotate("--topology");
    options->pipeline.topology_spec = topology.value().ToSpec();
  } else if (Value(flag, "--module-name", &v)) {
    if (v.empty() || v.find_first_of("/ \t") != std::string::npos)
      return InvalidArgumentError("bad --module-name '%s' (want a name like mel, no '/' or spaces)", v.c_str());
    options->emit.module_name = v;
  } else if (flag == "--no-elision") {
    options->pipeline.disable_elision = true;
  } else if (flag == "--fuse-pad") {
    options->pipeline.fuse_pad = true;
  } else if (flag == "--native-fma") {
    // Kept so existing build scripts still work: every module now carries
    // GLSL fma() alone, and the runtime makes it exact on CPU drivers
    // (hal/vulkan/exact_fma_splice.h).
  } else if (Value(flag, "--exact-fma", &v)) {
    if (v != "state" && v != "all" && v != "none")
      return InvalidArgumentError("bad --exact-fma '%s' (want state, all or none)", v.c_str());
    options->pipeline.exact_fma = v;
  } else if (flag == "--unroll-in-module") {
    options->emit.codegen.unroll_in_module = true;
  } else if (flag == "--no-texels") {
    options->emit.codegen.texel_buffers = false;
  } else if (flag == "--no-f16-arithmetic") {
    options->emit.codegen.f16_arithmetic_variants = false;
  } else if (Value(flag, "--precision", &v)) {
    if (v != "f32" && v != "f16") return InvalidArgumentError("bad --precision '%s' (want f32 or f16)", v.c_str());
    options->pipeline.precision_f16 = v == "f16";
  } else {
    return NotFoundError("not a compile flag: '%s'", flag.c_str());
  }
  return OkStatus();
}

std::string DefaultModuleName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
  return base.substr(0, base.find('.'));
}

StatusOr<std::unique_ptr<ir::Module>> LoadModel(const std::string& path, const CompileOptions& options) {
  if (path.size() > 4 && path.compare(path.size() - 4, 4, ".kir") == 0) {
    std::ifstream in(path);
    if (!in) return NotFoundError("cannot open '%s'", path.c_str());
    std::stringstream text;
    text << in.rdbuf();
    return ir::ParseModule(text.str(), path);
  }
  auto imported = onnx_import::ImportOnnxFile(path, options.import);
  if (!imported.ok()) return imported.take_status().Annotate(path);
  return imported;
}

Status RunPipeline(ir::Module& module, const CompileOptions& options, ir::PassContext& ctx) {
  KILN_RETURN_IF_ERROR(ir::Verify(module).Annotate("invalid input IR"));
  return transforms::RunPasses(module, transforms::PipelineFor(options.pipeline), options.pipeline, ctx);
}

StatusOr<std::vector<uint8_t>> CompileModule(ir::Module& module, const CompileOptions& options,
                                             backend::EmitReport* report) {
  ir::PassContext ctx;
  CompileOptions allocated = options;
  allocated.pipeline.level = transforms::PipelineOptions::Level::kAllocated;
  KILN_RETURN_IF_ERROR(RunPipeline(module, allocated, ctx));
  return backend::EmitModule(module, options.emit, report);
}

StatusOr<std::vector<uint8_t>> CompileOnnxFile(const std::string& path, const CompileOptions& options,
                                               backend::EmitReport* report) {
  auto loaded = LoadModel(path, options);
  if (!loaded.ok()) return loaded.take_status();
  return CompileModule(*loaded.value(), options, report);
}

StatusOr<std::vector<uint8_t>> CompileOnnxBytes(const void* data, size_t size,
                                                const CompileOptions& options,
                                                backend::EmitReport* report) {
  auto imported = onnx_import::ImportOnnxBytes(data, size, options.import);
  if (!imported.ok()) return imported.take_status();
  return CompileModule(*imported.value(), options, report);
}

}  // namespace kiln::driver
