// libFuzzer target: the ONNX importer (compiler/import/onnx) on arbitrary
// bytes: ModelProto parsing, ONNX's checker, then the import to the tensor
// level. Errors are expected (a status); crashes, uncaught exceptions and
// sanitizer reports are findings.
#include <cstdint>

#include "compiler/import/onnx/onnx_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::onnx_import::ImportOptions options;
  auto module = kiln::onnx_import::ImportOnnxBytes(data, size, options);
  (void)module;
  return 0;
}
