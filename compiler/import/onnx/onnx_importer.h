// ONNX importer: ONNX ModelProto (protobuf) → Kiln tensor-level IR.
//
// Produces a Module holding one `func.func` @main:
//   * entry block arguments = the graph inputs that are not initializers, in
//     graph order; attr `arg_names` (AttrList of strings) gives their ONNX names;
//   * func.return operands = the graph outputs, in order; attr `result_names`;
//   * body = tensor-level ops of compiler/ir/ops.h, each with loc() = the ONNX
//     node name (or "<op_type>_<node index>" when the node is unnamed).
// Every result type is static: shapes are inferred op by op at import. Graph
// inputs with dynamic (symbolic or unknown) dims need ImportOptions::input_shapes.
//
// Constants: initializers and Constant nodes become `tensor.constant`
// (DenseElements; raw_data and typed fields; external data is not supported).
// Constant folding: every op whose operands are all constants and that the
// host evaluator (const_eval.h) understands is evaluated at import and becomes
// a tensor.constant. Shape/Size of any static value is a constant. So shape
// arithmetic (Shape→Cast→Slice→Concat→Reshape) folds away entirely.
// BatchNormalization (inference) becomes tensor.mul/tensor.add with
// per-channel constants shaped [C,1,...,1]. Unused constants are removed.
//
// Errors (Status codes, base/status.h):
//   kDataLoss        "failed to parse ONNX model" (bad or truncated protobuf)
//   kNotFound        the file cannot be opened (ImportOnnxFile)
//   kUnimplemented   "unsupported ONNX op 'LSTM' (node 'name', domain '')";
//                    unsupported dtype (names node and dtype); unsupported
//                    attribute values (names the node). If/Loop/Scan/LSTM/GRU/
//                    RNN are not supported yet.
//   kInvalidArgument a dynamic input dim without an --input-shape override
//                    (names the input and dim); ill-formed models (shape
//                    mismatches, missing inputs), naming the node.
// Cost: linear in the model size plus the folded constants; weights are copied
// once into DenseElements buffers (shared, never duplicated afterwards).
#ifndef KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_H_
#define KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/ir/ir.h"

namespace kiln::onnx_import {

struct ImportOptions {
  // Graph input name → full static shape (--input-shape=NAME=1x3x48x192).
  // Overrides the model's declared shape; static dims that the model declares
  // must agree. A dynamic dim without an override is an error naming the input.
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

// Reads and imports the .onnx file at `path`.
StatusOr<std::unique_ptr<ir::Module>> ImportOnnxFile(const std::string& path,
                                                     const ImportOptions& options);
// Imports a serialized ModelProto held in memory (not retained after return).
StatusOr<std::unique_ptr<ir::Module>> ImportOnnxBytes(const void* data, size_t size,
                                                      const ImportOptions& options);

// The ONNX op types (default domain) the importer handles, sorted. A node of
// one of these types may still be rejected for an unsupported attribute value
// or dtype (kUnimplemented, naming the node).
std::vector<std::string> SupportedOnnxOps();

// Parses "NAME=1x3x48x192" (an --input-shape flag value) into `options`.
// kInvalidArgument on a malformed value.
Status ParseInputShapeFlag(const std::string& flag_value, ImportOptions* options);

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_H_
