// The per-op attribute table of the ONNX importer (onnx_op_attributes.h).
//
// Accepted although no handler reads them, because they do not change the
// result of inference:
//   consumed_inputs (opsets 1-5): an in-place hint for the runtime;
//   Dropout ratio, seed: inference Dropout is the identity;
//   BatchNormalization momentum: updates running statistics in training only;
//   LSTM/GRU/RNN output_sequence (opset 1): Y is produced when it is requested;
//   Gemm broadcast (opsets 1-6): C broadcasts numpy-style, which covers a C of
//     the output's shape (broadcast = 0);
//   LayerNormalization stash_type: the statistics are computed in f32;
//   Cast/CastLike/QuantizeLinear saturate: affects only float8 targets, which
//     Kiln rejects by dtype.
// Attributes newer than ONNX 1.12 (Debian's libonnx, whose schemas the test
// reads) that handlers read: AveragePool dilations (opset 19), Reduce*
// noop_with_empty_axes (18), Resize antialias/axes/keep_aspect_ratio_policy
// (18), Split num_outputs (18), QuantizeLinear/DequantizeLinear block_size and
// QuantizeLinear output_dtype (21), Cast/CastLike/QuantizeLinear saturate (19).
#include "compiler/import/onnx/onnx_op_attributes.h"

#include <sstream>

namespace kiln::onnx_import {
namespace {

const char* const kStrings = "string tensors are not supported by the runtime";
const char* const kSparse = "sparse tensors are not supported";
const char* const kActParams =
    "activation_alpha/activation_beta parameterize activations Kiln does not support "
    "(Sigmoid, Tanh and Relu take none)";
const char* const kUpsample1 =
    "Upsample-1's height_scale/width_scale are not supported (Upsample-7 and -9 are)";

struct Row {
  const char* accepted;  // space-separated
  std::map<std::string, std::string> rejected;
};

}  // namespace

const std::map<std::string, OnnxOpAttributes>& OnnxOpAttributeTable() {
  static const std::map<std::string, OnnxOpAttributes>* table = [] {
    // op → accepted attributes, {rejected attribute, reason}...
    static const std::map<std::string, Row> kRows = {
      {"Abs", {"consumed_inputs", {}}},
      {"Acos", {"", {}}},
      {"Acosh", {"", {}}},
      {"Add", {"axis broadcast consumed_inputs", {}}},
      {"And", {"axis broadcast", {}}},
      {"ArgMax", {"axis keepdims select_last_index", {}}},
      {"ArgMin", {"axis keepdims select_last_index", {}}},
      {"Asin", {"", {}}},
      {"Asinh", {"", {}}},
      {"Atan", {"", {}}},
      {"Atanh", {"", {}}},
      {"AveragePool", {"auto_pad ceil_mode count_include_pad dilations kernel_shape pads strides", {}}},
      {"BatchNormalization", {"consumed_inputs epsilon is_test momentum spatial training_mode", {}}},
      {"BitShift", {"direction", {}}},
      {"BlackmanWindow", {"output_datatype periodic", {}}},
      {"Cast", {"saturate to", {}}},
      {"CastLike", {"saturate", {}}},
      {"Ceil", {"consumed_inputs", {}}},
      {"Celu", {"alpha", {}}},
      {"Clip", {"consumed_inputs max min", {}}},
      {"Compress", {"axis", {}}},
      {"Concat", {"axis", {}}},
      {"Constant", {"value value_float value_floats value_int value_ints",
       {{"sparse_value", kSparse}, {"value_string", kStrings}, {"value_strings", kStrings}}}},
      {"ConstantOfShape", {"value", {}}},
      {"Conv", {"auto_pad dilations group kernel_shape pads strides", {}}},
      {"ConvInteger", {"auto_pad dilations group kernel_shape pads strides", {}}},
      {"ConvTranspose", {"auto_pad dilations group kernel_shape output_padding output_shape pads strides",
       {}}},
      {"Cos", {"", {}}},
      {"Cosh", {"", {}}},
      {"CumSum", {"exclusive reverse", {}}},
      {"DFT", {"axis inverse onesided", {}}},
      {"DepthToSpace", {"blocksize mode", {}}},
      {"DequantizeLinear", {"axis block_size", {}}},
      {"Det", {"", {}}},
      {"Div", {"axis broadcast consumed_inputs", {}}},
      {"Dropout", {"consumed_inputs is_test ratio seed", {}}},
      {"DynamicQuantizeLinear", {"", {}}},
      {"Einsum", {"equation", {}}},
      {"Elu", {"alpha consumed_inputs", {}}},
      {"Equal", {"axis broadcast", {}}},
      {"Erf", {"", {}}},
      {"Exp", {"consumed_inputs", {}}},
      {"Expand", {"", {}}},
      {"EyeLike", {"dtype k", {}}},
      {"Flatten", {"axis", {}}},
      {"Floor", {"consumed_inputs", {}}},
      {"GRU", {"activations clip direction hidden_size layout linear_before_reset output_sequence",
       {{"activation_alpha", kActParams}, {"activation_beta", kActParams}}}},
      {"Gather", {"axis", {}}},
      {"GatherElements", {"axis", {}}},
      {"GatherND", {"batch_dims", {}}},
      {"Gemm", {"alpha beta broadcast transA transB", {}}},
      {"GlobalAveragePool", {"", {}}},
      {"GlobalMaxPool", {"", {}}},
      {"Greater", {"axis broadcast", {}}},
      {"GreaterOrEqual", {"", {}}},
      {"GridSample", {"align_corners mode padding_mode", {}}},
      {"HammingWindow", {"output_datatype periodic", {}}},
      {"HannWindow", {"output_datatype periodic", {}}},
      {"HardSigmoid", {"alpha beta consumed_inputs", {}}},
      {"HardSwish", {"", {}}},
      {"Hardmax", {"axis", {}}},
      {"Identity", {"", {}}},
      {"If", {"else_branch then_branch", {}}},
      {"InstanceNormalization", {"consumed_inputs epsilon", {}}},
      {"IsInf", {"detect_negative detect_positive", {}}},
      {"IsNaN", {"", {}}},
      {"LRN", {"alpha beta bias size", {}}},
      {"LSTM", {"activations clip direction hidden_size input_forget layout output_sequence",
       {{"activation_alpha", kActParams}, {"activation_beta", kActParams}}}},
      {"LayerNormalization", {"axis epsilon stash_type", {}}},
      {"LeakyRelu", {"alpha consumed_inputs", {}}},
      {"Less", {"axis broadcast", {}}},
      {"LessOrEqual", {"", {}}},
      {"Log", {"consumed_inputs", {}}},
      {"LogSoftmax", {"axis", {}}},
      {"Loop", {"body", {}}},
      {"MatMul", {"", {}}},
      {"MatMulInteger", {"", {}}},
      {"Max", {"consumed_inputs", {}}},
      {"MaxPool", {"auto_pad ceil_mode dilations kernel_shape pads storage_order strides", {}}},
      {"MaxUnpool", {"kernel_shape pads strides", {}}},
      {"Mean", {"consumed_inputs", {}}},
      {"MeanVarianceNormalization", {"axes", {}}},
      {"MelWeightMatrix", {"output_datatype", {}}},
      {"Min", {"consumed_inputs", {}}},
      {"Mod", {"fmod", {}}},
      {"Mul", {"axis broadcast consumed_inputs", {}}},
      {"Neg", {"consumed_inputs", {}}},
      {"NegativeLogLikelihoodLoss", {"ignore_index reduction", {}}},
      {"NonMaxSuppression", {"center_point_box", {}}},
      {"NonZero", {"", {}}},
      {"Not", {"", {}}},
      {"OneHot", {"axis", {}}},
      {"Optional", {"type", {}}},
      {"OptionalGetElement", {"", {}}},
      {"OptionalHasElement", {"", {}}},
      {"Or", {"axis broadcast", {}}},
      {"PRelu", {"consumed_inputs", {}}},
      {"Pad", {"mode paddings pads value", {}}},
      {"Pow", {"axis broadcast", {}}},
      {"QLinearConv", {"auto_pad dilations group kernel_shape pads strides", {}}},
      {"QLinearMatMul", {"", {}}},
      {"QuantizeLinear", {"axis block_size output_dtype saturate", {}}},
      {"RNN", {"activations clip direction hidden_size layout output_sequence",
       {{"activation_alpha", kActParams}, {"activation_beta", kActParams}}}},
      {"Range", {"", {}}},
      {"Reciprocal", {"consumed_inputs", {}}},
      {"ReduceL1", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceL2", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceLogSum", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceLogSumExp", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceMax", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceMean", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceMin", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceProd", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceSum", {"axes keepdims noop_with_empty_axes", {}}},
      {"ReduceSumSquare", {"axes keepdims noop_with_empty_axes", {}}},
      {"Relu", {"consumed_inputs", {}}},
      {"Reshape", {"allowzero consumed_inputs shape", {}}},
      {"Resize", {"antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside "
                 "extrapolation_value keep_aspect_ratio_policy mode nearest_mode",
       {}}},
      {"ReverseSequence", {"batch_axis time_axis", {}}},
      {"RoiAlign", {"coordinate_transformation_mode mode output_height output_width sampling_ratio "
                 "spatial_scale",
       {}}},
      {"Round", {"", {}}},
      {"STFT", {"onesided", {}}},
      {"Scan", {"body directions num_scan_inputs scan_input_axes scan_input_directions scan_output_axes "
                 "scan_output_directions",
       {}}},
      {"Scatter", {"axis", {}}},
      {"ScatterElements", {"axis reduction", {}}},
      {"ScatterND", {"reduction", {}}},
      {"Selu", {"alpha consumed_inputs gamma", {}}},
      {"SequenceAt", {"", {}}},
      {"SequenceConstruct", {"", {}}},
      {"SequenceEmpty", {"dtype", {}}},
      {"SequenceErase", {"", {}}},
      {"SequenceInsert", {"", {}}},
      {"SequenceLength", {"", {}}},
      {"SequenceMap", {"body", {}}},
      {"Shape", {"end start", {}}},
      {"Shrink", {"bias lambd", {}}},
      {"Sigmoid", {"consumed_inputs", {}}},
      {"Sign", {"", {}}},
      {"Sin", {"", {}}},
      {"Sinh", {"", {}}},
      {"Size", {"", {}}},
      {"Slice", {"axes ends starts", {}}},
      {"Softmax", {"axis", {}}},
      {"SoftmaxCrossEntropyLoss", {"ignore_index reduction", {}}},
      {"Softplus", {"", {}}},
      {"Softsign", {"", {}}},
      {"SpaceToDepth", {"blocksize", {}}},
      {"Split", {"axis num_outputs split", {}}},
      {"Sqrt", {"consumed_inputs", {}}},
      {"Squeeze", {"axes", {}}},
      {"Sub", {"axis broadcast consumed_inputs", {}}},
      {"Sum", {"consumed_inputs", {}}},
      {"Tan", {"", {}}},
      {"Tanh", {"consumed_inputs", {}}},
      {"TfIdfVectorizer", {"max_gram_length max_skip_count min_gram_length mode ngram_counts "
                 "ngram_indexes pool_int64s weights",
       {{"pool_strings", kStrings}}}},
      {"ThresholdedRelu", {"alpha", {}}},
      {"Tile", {"", {}}},
      {"TopK", {"axis k largest sorted", {}}},
      {"Transpose", {"perm", {}}},
      {"Trilu", {"upper", {}}},
      {"Unique", {"axis sorted", {}}},
      {"Unsqueeze", {"axes", {}}},
      {"Upsample", {"mode scales", {{"height_scale", kUpsample1}, {"width_scale", kUpsample1}}}},
      {"Where", {"", {}}},
      {"Xor", {"axis broadcast", {}}},
    };
    auto* t = new std::map<std::string, OnnxOpAttributes>();
    for (const auto& [op, row] : kRows) {
      OnnxOpAttributes& a = (*t)[op];
      std::istringstream words(row.accepted);
      for (std::string w; words >> w;) a.accepted.insert(w);
      a.rejected = row.rejected;
    }
    return t;
  }();
  return *table;
}

Status CheckOnnxNodeAttributes(const onnx::NodeProto& node, const std::string& loc) {
  const auto& table = OnnxOpAttributeTable();
  auto it = table.find(node.op_type());
  if (it == table.end()) return OkStatus();
  const OnnxOpAttributes& rules = it->second;
  const std::string where = "node '" + loc + "' (" + node.op_type() + "): attribute '";
  for (const auto& a : node.attribute()) {
    if (rules.accepted.count(a.name())) continue;
    auto r = rules.rejected.find(a.name());
    if (r != rules.rejected.end())
      return Status(StatusCode::kUnimplemented, where + a.name() + "' is not supported: " + r->second);
    std::string list;
    for (const std::string& s : rules.accepted) list += (list.empty() ? "" : ", ") + s;
    return Status(StatusCode::kUnimplemented, where + a.name() + "' is not handled (" + node.op_type() +
                                                  " accepts: " + (list.empty() ? "none" : list) + ")");
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import
