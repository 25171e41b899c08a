// libFuzzer target: the ONNX importer (compiler/import/onnx) on arbitrary
// bytes: ModelProto parsing, ONNX's checker, then the import to the tensor
// level. Errors are expected (a status); crashes, uncaught exceptions and
// sanitizer reports are findings.
//
// Real models declare a dynamic batch dim, which the importer refuses
// without --input-shape; so that their graphs get imported, every graph
// input's dynamic dims are given as 1 (what kiln-compile --input-shape would
// say), as long as the bytes parse as a ModelProto.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/import/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::onnx_import::ImportOptions options;
  onnx::ModelProto model;
  if (model.ParseFromArray(data, static_cast<int>(size))) {
    for (const onnx::ValueInfoProto& input : model.graph().input()) {
      if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
      const onnx::TensorShapeProto& shape = input.type().tensor_type().shape();
      std::vector<int64_t> dims;
      bool dynamic = false;
      for (const auto& d : shape.dim()) {
        dynamic |= !d.has_dim_value();
        dims.push_back(d.has_dim_value() ? d.dim_value() : 1);
      }
      if (dynamic && dims.size() <= 8) options.input_shapes[input.name()] = dims;
    }
  }
  auto module = kiln::onnx_import::ImportOnnxBytes(data, size, options);
  (void)module;
  return 0;
}
