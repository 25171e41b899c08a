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
// per-channel constants shaped [C,1,...,1]. Unused ops are removed (also
// inside regions, and region ops whose results are all unused).
//
// Control flow (ops.h "Structured control flow"; subgraph nodes read names of
// the enclosing graphs directly: region bodies use values defined above):
//   If    condition known at import → the taken branch is inlined (no scf).
//         Otherwise %c = "tensor.extract"(%cond) : (tensor<..xi1>) -> i1 and
//         "scf.if"(%c) with region 0 = then_branch, region 1 = else_branch,
//         each ending in scf.yield of the branch outputs. Both branches must
//         produce the same static types (else kUnimplemented naming the node).
//   Loop  everything known at import (trip count M <= 512, condition, carried
//         inputs and captured values constant) → unrolled and folded.
//         M given and the condition provably true on every trip (cond input
//         absent or constant true, body's cond output folds to true with the
//         body's cond input bound to true) → scf.for %i = 0 to M step 1
//         (arith.constant bounds, or tensor.extract of a data-dependent M)
//         with iter_args [iteration counter tensor<i64> when the body reads
//         it or has scan outputs, carried values..., scan accumulators...].
//         Otherwise scf.while over [counter (when M given), cond tensor<i1>,
//         carried...]: the before region tests counter < M and cond and
//         forwards every argument; the after region is the body.
//         Scan outputs need a static M: each is accumulated in an iter_arg
//         of shape [M, ...] initialised to zeros and updated per trip with
//         select(iota == counter, step, acc). When the body needs values known
//         at import (e.g. a Slice whose starts come from the iteration
//         number) and M <= 512, the loop is unrolled instead (scan outputs
//         are then a tensor.concat of the steps). Loop-carried values must
//         keep their type across trips unless unrolled.
//   Scan  (opset >= 9; opset 8 with batch 1) static sequence length L: scf.for
//         0..L over [counter, states..., accumulators...]; each step reads
//         tensor.gather(scan_input, counter or L-1-counter, axis) and scan
//         outputs accumulate as for Loop. Unrolled (tensor.slice per step,
//         tensor.concat of outputs) when everything is constant or the body
//         needs import-time constants and L <= 512.
//   LSTM  unrolled over the (static, <= 512) time steps into tensor ops:
//         one matmul of X with W for all steps, then per step matmul with R,
//         slice of the 4 gates (iofc), sigmoid/tanh/mul/add; Y is a concat of
//         the steps. Directions forward/reverse/bidirectional, layouts 0 and 1,
//         optional B, P (peepholes), initial_h, initial_c, clip, input_forget,
//         activations among Sigmoid/Tanh/Relu. sequence_lens (constant or a
//         runtime input, int32 [B]) masks the steps at or past each batch
//         entry's length: Y is 0 there and the states are held (a
//         tensor.select per step). GRU and RNN (onnx_rnn.cc) likewise.
//   TfIdfVectorizer (onnx_tfidf.cc): n-gram counts over int32/int64 inputs
//         as compares, ands and sums on the device; a gather places them.
//   Resize (opsets 10-18), Upsample (7, 9): tensor.resize with per-axis
//         input indices and weights computed at import (onnx_resize.cc,
//         resize_taps.h); scales / sizes / roi must be constants at import
//         (else kUnimplemented naming the node and the input).
// An scf op whose operands and captured values are all constants is
// evaluated on the host and replaced by constants.
//
// Sequences and optionals (onnx_sequence.cc) are compile-time structures: a
// sequence is a list of tensor values, each with its own static type; an
// optional is present (holding a tensor or a sequence) or absent. They never
// appear in the IR. SequenceConstruct, SequenceEmpty, SequenceInsert,
// SequenceErase (positions: constants; default the back), SequenceAt
// (constant position), SequenceLength (a constant), Optional,
// OptionalHasElement (a constant), OptionalGetElement and Identity rearrange
// the lists; SequenceMap inlines its body once per element. A Loop that carries a sequence/optional is unrolled at import
// (trip count M and condition must be constants: --constant-input), else
// kUnimplemented naming the node. An If on a constant condition is inlined
// (its outputs may be of any structure); on a runtime condition its
// sequence/optional outputs become one scf.if result per element, which
// needs the same structure (length, presence, element types) in both
// branches, else kUnimplemented naming the node and both structures.
// ABI naming:
//   * a sequence graph input NAME (structure from ImportOptions::
//     sequence_inputs) → arguments NAME.0 ... NAME.<N-1>; an optional tensor
//     input → argument NAME; an empty optional → no argument;
//   * a sequence graph output NAME of N elements (N known at import) →
//     results NAME.0 ... NAME.<N-1> in order (none when N = 0); a present
//     optional output → the results of its value (NAME for a tensor,
//     NAME.k for a sequence); an empty optional output → no result (its
//     absence from result_names is the marker).
// A sequence/optional where a tensor is required (a tensor op's operand, a
// scan output, a region result that is not unrolled) is an error naming the
// node.
//
// Errors (Status codes, base/status.h):
//   kDataLoss        "failed to parse ONNX model" (bad or truncated protobuf)
//   kNotFound        the file cannot be opened (ImportOnnxFile)
//   kUnimplemented   "unsupported ONNX op 'StringNormalizer' (node 'name', domain '')";
//                    unsupported dtype (names node and dtype); an attribute
//                    the op's row of onnx_op_attributes.h does not accept
//                    (names attribute, op and node); unsupported
//                    attribute values (names the node); If branches of
//                    different types; Loop scan outputs without a static trip
//                    count; loop-carried values that change type; unrolling
//                    beyond 512 trips.
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
  // Graph input name → values fixing that input to a constant at compile
  // time (--constant-input=sr=16000). The input is no longer a function
  // argument (arg_names omits it); its dtype is the model's and its shape the
  // model's or input_shapes'; give one value (repeated to every element) or
  // one per element, row-major. Whatever depends on it folds at import: e.g.
  // silero_vad's If on `sr` is inlined, leaving no control flow. Values are
  // converted to the input's dtype (integers exact up to 2^53).
  std::map<std::string, std::vector<double>> constant_inputs;
  // Graph inputs of sequence or optional type (sequence(tensor),
  // optional(tensor), optional(sequence(tensor))): their structure, fixed at
  // compile time (--sequence-input=NAME=[2x3,scalar] / NAME=[] / NAME=none).
  // A sequence of N elements becomes N function arguments named NAME.0 ...
  // NAME.<N-1> (in element order) with the given static shapes and the
  // model's element dtype; their values stay runtime inputs. An optional
  // holding a tensor becomes one argument NAME (element_shapes has exactly
  // one shape); an optional holding a sequence, the sequence's arguments;
  // an empty optional (present = false), no argument. Every sequence/optional
  // graph input needs an entry (else kInvalidArgument naming the input).
  struct SequenceInput {
    bool present = true;                              // false: an empty optional
    std::vector<std::vector<int64_t>> element_shapes;  // one per element
  };
  std::map<std::string, SequenceInput> sequence_inputs;
  // Run ONNX's checker (onnx::checker::check_model) before importing, and
  // reject what it rejects (kInvalidArgument with its message). Off only for
  // hand-built test graphs that omit graph output types, which it requires.
  bool onnx_checker = true;
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

// Parses "NAME=[S0,S1,...]" (element shapes D0xD1x... or `scalar`), "NAME=[]"
// (an empty sequence) or "NAME=none" (an empty optional), a --sequence-input
// flag value, into options->sequence_inputs. kInvalidArgument when malformed.
Status ParseSequenceInputFlag(const std::string& flag_value, ImportOptions* options);

// Parses "NAME=V" or "NAME=V0,V1,..." (a --constant-input flag value; values
// are numbers, or true/false) into options->constant_inputs.
// kInvalidArgument on a malformed value.
Status ParseConstantInputFlag(const std::string& flag_value, ImportOptions* options);

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_H_
