// Internal to the ONNX importer (compiler/import/onnx/): the Importer class
// and the helpers shared by its translation units (onnx_importer.cc: graph,
// scopes and plain ops; onnx_control_flow.cc: If, Loop, Scan;
// onnx_lstm.cc: LSTM; onnx_resize.cc: Resize, Upsample). Not a public API.
#ifndef KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_INTERNAL_H_
#define KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_INTERNAL_H_

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/import/onnx/const_eval.h"
#include "compiler/import/onnx/onnx_importer.h"

namespace kiln::onnx_import::detail {

using ir::Attribute;
using ir::DenseElements;
using ir::Type;
using ir::Value;
using Attrs = std::map<std::string, Attribute>;
using Shape = std::vector<int64_t>;

// Ops whose results have more elements than this are not folded (the op is
// kept and runs on the device). Reshapes of constants are always folded (free).
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;
// 8-bit constants at least this large stay 8-bit when dequantized
// (DequantizeLinear, onnx_quantize.cc; QDQ convolutions, onnx_qdq_conv.cc).
constexpr int64_t kMinInt8WeightElements = 256;
// Constants the importer creates from scratch (ConstantOfShape, Range) are
// capped so that a hostile model cannot make the compiler allocate unbounded memory.
constexpr int64_t kMaxCreatedElements = int64_t{1} << 28;
// Dims are capped so that element counts cannot overflow int64.
constexpr int64_t kMaxDim = int64_t{1} << 31;
// Highest rank of a graph input: the runtime's KILN_MAX_RANK (include/kiln/kiln.h).
constexpr size_t kMaxInputRank = 8;
// Newest default-domain opset the importer accepts (ONNX 1.18's); each op's
// handler follows the changes of its versions up to it.
constexpr int kMaxOpset = 23;

int64_t Product(const Shape& s, size_t begin = 0, size_t end = SIZE_MAX);
// Element count, or -1 when a dim is negative or the count overflows.
int64_t SafeNumElements(const Shape& s);
std::string ShapeStr(const Shape& s);
std::string OnnxDTypeName(int32_t t);
// ONNX TensorProto.DataType → DType; kInvalid when unsupported.
DType ConvertDType(int32_t t);
// Converts a TensorProto (raw_data or typed fields) to DenseElements. `what`
// names the tensor in errors ("initializer 'w'", "node 'n' (Constant)").
StatusOr<DenseElements> TensorToDense(const onnx::TensorProto& t, const std::string& what);
// The value of a tensor.constant result; nullptr for anything else.
const DenseElements* GetConst(Value* v);
// numpy broadcasting of two shapes; false if incompatible.
bool BroadcastShapes(const Shape& a, const Shape& b, Shape* out);
int64_t CeilDiv(int64_t a, int64_t b);
int64_t FloorDiv(int64_t a, int64_t b);

// In a node handler: requires inputs 0..count-1 to be present.
#define KILN_REQUIRE_INPUTS(count)                                                   \
  do {                                                                               \
    for (int _i = 0; _i < (count); ++_i)                                             \
      if (static_cast<int>(in.size()) <= _i || !in[_i])                              \
        return Invalid("missing required input " + std::to_string(_i));              \
  } while (0)

// Loops (Loop, Scan, LSTM time steps) are unrolled at import for at most this
// many trips.
constexpr int64_t kMaxUnrollTrips = 512;
// Bound on the nodes imported in all (subgraphs imported once per unrolled
// trip count each time), so that a hostile model cannot make the importer
// run unbounded.
constexpr int64_t kMaxImportedNodes = int64_t{1} << 20;
// Bound on the nesting of subgraphs (If inside Loop inside ...).
constexpr int kMaxSubgraphDepth = 64;
// Loop trips the host evaluates when folding a loop whose inputs are all
// constants (scf.while without a trip count).
constexpr int64_t kMaxFoldTrips = int64_t{1} << 16;

// One ONNX value at import. Sequences and optionals are compile-time
// structures (onnx_sequence.cc): a sequence is a list of tensor SSA values,
// each with its own static type; an optional is present or absent, and when
// present holds a tensor or a sequence. Nothing of them reaches the IR except
// their element tensors.
struct OnnxValue {
  enum class Kind { kTensor, kSequence, kOptional };
  Kind kind = Kind::kTensor;
  bool present = true;          // kOptional: holds a value
  bool holds_sequence = false;  // kOptional: the value is a sequence (else one tensor)
  // kTensor: {the tensor} (nullptr for an absent node input); kSequence: the
  // elements in order; kOptional: the value's tensors (empty when absent).
  std::vector<Value*> elems;
  // Element dtype of a sequence / optional (kInvalid when unknown, e.g. an
  // empty sequence of unknown type).
  DType elem_dtype = DType::kInvalid;

  static OnnxValue Tensor(Value* v) {
    OnnxValue r;
    r.elems = {v};
    return r;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  Value* tensor() const { return elems.empty() ? nullptr : elems[0]; }
  // A sequence, or a present optional holding one.
  bool is_sequence_like() const {
    return kind == Kind::kSequence || (kind == Kind::kOptional && present && holds_sequence);
  }
  // "tensor<5xf32>", "sequence of 2 [tensor<1xf32>, tensor<2xf32>]",
  // "optional(none)", "optional(sequence of 1 [...])".
  std::string Describe() const;
};

class Importer {
 public:
  explicit Importer(const ImportOptions& options) : opts_(options) {}

  StatusOr<std::unique_ptr<ir::Module>> Import(const onnx::ModelProto& model);

  using Handler = Status (Importer::*)(const onnx::NodeProto&, const std::vector<Value*>&,
                                       std::vector<Value*>&);
  // ONNX op type → handler (default domain).
  static const std::map<std::string, Handler>& Handlers();
  // Handlers of ops that take or give sequences/optionals (and of If, Loop
  // and Identity, which may carry them); consulted before Handlers().
  using AnyHandler = Status (Importer::*)(const onnx::NodeProto&, const std::vector<OnnxValue>&,
                                          std::vector<OnnxValue>&);
  static const std::map<std::string, AnyHandler>& AnyHandlers();

 private:

  // --- errors ----------------------------------------------------------------
  Status Err(StatusCode code, const std::string& msg) const {
    return Status(code, "node '" + loc_ + "' (" + op_type_ + "): " + msg);
  }
  Status Invalid(const std::string& msg) const { return Err(StatusCode::kInvalidArgument, msg); }
  Status Unimpl(const std::string& msg) const { return Err(StatusCode::kUnimplemented, msg); }

  // --- attributes --------------------------------------------------------------
  const onnx::AttributeProto* FindAttr(const char* name) const {
    for (const auto& a : node_->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  bool HasAttr(const char* name) const { return FindAttr(name) != nullptr; }
  int64_t AttrInt(const char* name, int64_t def) const {
    auto* a = FindAttr(name);
    return a ? a->i() : def;
  }
  double AttrFloat(const char* name, double def) const {
    auto* a = FindAttr(name);
    return a ? static_cast<double>(a->f()) : def;
  }
  std::string AttrStr(const char* name, const std::string& def) const {
    auto* a = FindAttr(name);
    return a ? a->s() : def;
  }
  Shape AttrInts(const char* name, Shape def = {}) const {
    auto* a = FindAttr(name);
    return a ? Shape(a->ints().begin(), a->ints().end()) : def;
  }

  // --- values ------------------------------------------------------------------
  StatusOr<Value*> Lookup(const std::string& name);
  // Any value (tensor, sequence, optional) by name.
  StatusOr<OnnxValue> LookupAny(const std::string& name);
  // Binds `name` in the current scope (shadowing a value of either kind).
  void Define(const std::string& name, const OnnxValue& v);
  bool IsComposite(const std::string& name) const { return composites_.count(name) != 0; }
  // Reads a constant integer tensor (an operand that must be known at import).
  StatusOr<Shape> ConstInts(Value* v, const char* what) const {
    const DenseElements* d = GetConst(v);
    if (!d)
      return Unimpl(std::string("input '") + what +
                    "' must be a constant (computable at import); dynamic values are not supported");
    Shape r(Product(d->type.shape));
    for (size_t i = 0; i < r.size(); ++i) r[i] = ReadElementAsInt(*d, static_cast<int64_t>(i));
    return r;
  }
  StatusOr<double> ConstScalarValue(Value* v, const char* what) const {
    const DenseElements* d = GetConst(v);
    if (!d)
      return Unimpl(std::string("input '") + what + "' must be a constant (computable at import)");
    if (Product(d->type.shape) != 1) return Invalid(std::string("input '") + what + "' must be a scalar");
    return ReadElementAsDouble(*d, 0);
  }

  // --- emission ----------------------------------------------------------------
  // Creates `name` (or folds it into a constant when every operand is
  // constant, unless fold_ is false: see DequantizeLinear).
  Value* Emit(const std::string& name, const std::vector<Value*>& operands, const Type& type,
              Attrs attrs = {});
  Value* Constant(DenseElements d, const std::string& loc);
  Value* Constant(DenseElements d) { return Constant(std::move(d), loc_); }
  Value* ScalarConst(DType dt, double v) {
    return Constant(MakeDenseFromDoubles(Type::Tensor(dt, {}), {v}));
  }
  // Reshapes `v`, looking through reshape chains and reusing an identical
  // earlier reshape (the bypassed intermediates die and are erased).
  Value* Reshape(Value* v, const Shape& shape) {
    while (v->defining_op() && v->defining_op()->is("tensor.reshape")) v = v->defining_op()->operand(0);
    if (v->type().shape == shape) return v;
    auto key = std::make_pair(v, shape);
    auto it = reshapes_.find(key);
    if (it != reshapes_.end()) return it->second;
    Value* r = Emit("tensor.reshape", {v}, Type::Tensor(v->type().dtype, shape));
    reshapes_[key] = r;
    return r;
  }
  Value* Transpose(Value* v, const Shape& perm) {
    Shape s;
    for (int64_t p : perm) s.push_back(v->type().shape[p]);
    return Emit("tensor.transpose", {v}, Type::Tensor(v->type().dtype, s), {{"perm", perm}});
  }
  // tensor.gather_elements of x along `axis` (onnx_index_ops.cc).
  Value* GatherElementsOf(Value* x, Value* ind, int64_t axis);
  // ONNX NegativeLogLikelihoodLoss of log-probabilities `logp` [N, C, d...]
  // (onnx_loss.cc); `weight` may be null.
  StatusOr<Value*> NllLossOf(Value* logp, Value* target, Value* weight);
  // (x - mean) / sqrt(var + eps) over `axes` (biased variance, keepdims
  // statistics); *mean and *sd (sqrt(var + eps)) are set when non-null
  // (onnx_normalization.cc).
  StatusOr<Value*> Standardize(Value* x, const Shape& axes, double eps, Value** mean, Value** sd);
  Value* Cast(Value* v, DType dt) {
    if (v->type().dtype == dt) return v;
    return Emit("tensor.cast", {v}, Type::Tensor(dt, v->type().shape));
  }
  StatusOr<Value*> Binary(const std::string& op, Value* a, Value* b);
  StatusOr<int64_t> NormAxis(int64_t axis, int64_t rank) const {
    if (axis < -rank || axis >= rank)
      return Invalid("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
    return axis < 0 ? axis + rank : axis;
  }

  // --- subgraphs and host scalars (onnx_control_flow.cc) ----------------------------
  // Imports the nodes of subgraph `g` into `block`: the current block (the
  // taken branch of an If is inlined, a Loop trip is unrolled) or the entry
  // block of a region. g's inputs are bound to `inputs` (same count), its
  // initializers shadow outer names, and every name of the enclosing scopes
  // stays visible (captured values are used directly: regions may use values
  // defined above). `outputs` receives the values of g's outputs. Unnamed
  // nodes get locs `prefix` + "<op>_<index>". The importer's scope (names,
  // insertion block, current node) is restored on success and on error.
  // Outputs must be tensors here (a sequence/optional output is
  // kUnimplemented naming it); ImportSubgraphAny takes and gives any values.
  Status ImportSubgraph(const onnx::GraphProto& g, ir::Block* block,
                        const std::vector<Value*>& inputs, std::vector<Value*>* outputs,
                        const std::string& prefix);
  Status ImportSubgraphAny(const onnx::GraphProto& g, ir::Block* block,
                           const std::vector<OnnxValue>& inputs, std::vector<OnnxValue>* outputs,
                           const std::string& prefix);
  // The graph attribute `name` of the current node; nullptr if absent.
  const onnx::GraphProto* GraphAttr(const char* name) const;
  // True when every name that `g` (or a nested subgraph) reads from an
  // enclosing scope is a constant here.
  bool CapturesAreConstant(const onnx::GraphProto& g);
  // "arith.constant"() {value = v} : () -> index (appended to the current block).
  Value* IndexConst(int64_t v);
  // "tensor.extract"(t) : (tensor<1 element>) -> i1 (bool t) or index
  // (integer t); folds to an arith.constant when `t` is a constant.
  Value* Extract(Value* t);
  // A bool / int64 scalar tensor constant.
  Value* BoolConst(bool v);
  Value* I64Const(int64_t v);
  // The slice [start, start + size) of `v` along `axis` (stride 1).
  Value* SliceAxis(Value* v, int64_t axis, int64_t start, int64_t size);
  // Scan-output accumulation inside a loop body: `acc` has shape y's with
  // `length` inserted at `axis`; the result is `acc` with slot `index` (an
  // i64 scalar tensor) along `axis` replaced by y:
  // select(iota == index, reshape(y), acc).
  StatusOr<Value*> InsertStep(Value* acc, Value* y, Value* index, int64_t axis, int64_t length);
  // Stacks `steps` (equal types) along a new dim `axis`: reshape + concat.
  StatusOr<Value*> Stack(const std::vector<Value*>& steps, int64_t axis, const std::string& what);
  // Appends `op` (a region op whose operands and captures may all be
  // constants) to the current block; when the host can evaluate it
  // (const_eval.h EvaluateRegionOp), its results become constants instead.
  std::vector<Value*> AppendRegionOp(std::unique_ptr<ir::Operation> op);

  // Loop lowering strategies (onnx_control_flow.cc). `trips`: the trip count
  // when known at import, else -1. `m`: the trip-count tensor (nullptr: none).
  Status LoopFor(const onnx::GraphProto& body, Value* m, int64_t trips,
                 const std::vector<Value*>& inits, int64_t num_scan, std::vector<Value*>& out,
                 bool* not_for);
  Status LoopWhile(const onnx::GraphProto& body, Value* m, Value* cond,
                   const std::vector<Value*>& inits, std::vector<Value*>& out);
  Status LoopUnroll(const onnx::GraphProto& body, int64_t trips, Value* cond,
                    const std::vector<Value*>& inits, int64_t num_scan, std::vector<Value*>& out);
  // Scan over `xs` (static length `length` along in_axes) with states
  // `states`; `results` = final states, then scan outputs.
  struct ScanSpec {
    std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
    int64_t length = 0;
  };
  Status ScanCore(const onnx::GraphProto& body, const std::vector<Value*>& states,
                  const std::vector<Value*>& xs, const ScanSpec& spec,
                  std::vector<Value*>* results);
  Status ScanFor(const onnx::GraphProto& body, const std::vector<Value*>& states,
                 const std::vector<Value*>& xs, const ScanSpec& spec, std::vector<Value*>* results);
  Status ScanUnroll(const onnx::GraphProto& body, const std::vector<Value*>& states,
                    const std::vector<Value*>& xs, const ScanSpec& spec,
                    std::vector<Value*>* results);

  // --- sequences and optionals (onnx_sequence.cc) ---------------------------------
  // A Loop that carries a sequence/optional: unrolled (trip count and
  // condition known at import).
  Status LoopUnrollAny(const onnx::GraphProto& body, int64_t trips, Value* cond,
                       const std::vector<OnnxValue>& inits, int64_t num_scan,
                       std::vector<OnnxValue>& out);
  // The sequence operand `v` of the current node (a sequence, or an optional
  // holding one); kInvalidArgument naming `what` otherwise.
  StatusOr<const OnnxValue*> SequenceOperand(const std::vector<OnnxValue>& in, size_t i,
                                             const char* what) const;
#define KILN_ANY_HANDLER(Name)                                                          \
  Status Name(const onnx::NodeProto& n, const std::vector<OnnxValue>& in,              \
              std::vector<OnnxValue>& out)
  KILN_ANY_HANDLER(SequenceConstruct);
  KILN_ANY_HANDLER(SequenceEmpty);
  KILN_ANY_HANDLER(SequenceInsert);
  KILN_ANY_HANDLER(SequenceErase);
  KILN_ANY_HANDLER(SequenceAt);
  KILN_ANY_HANDLER(SequenceLength);
  KILN_ANY_HANDLER(SequenceMap);
  KILN_ANY_HANDLER(OptionalOp);
  KILN_ANY_HANDLER(OptionalHasElement);
  KILN_ANY_HANDLER(OptionalGetElement);
  KILN_ANY_HANDLER(IdentityAny);
  KILN_ANY_HANDLER(IfAny);
  KILN_ANY_HANDLER(LoopAny);
#undef KILN_ANY_HANDLER

  // --- node handlers -------------------------------------------------------------
  Status ImportNode(const onnx::NodeProto& node, int index);
#define KILN_HANDLER(Name) \
  Status Name(const onnx::NodeProto& n, const std::vector<Value*>& in, std::vector<Value*>& out)
  KILN_HANDLER(ConstantOp);
  KILN_HANDLER(Identity);
  KILN_HANDLER(Unary);
  KILN_HANDLER(BinaryOp);
  KILN_HANDLER(Variadic);
  KILN_HANDLER(Where);
  KILN_HANDLER(Clip);
  KILN_HANDLER(PRelu);
  KILN_HANDLER(Conv);
  KILN_HANDLER(Pool);
  KILN_HANDLER(GlobalPool);
  KILN_HANDLER(BatchNorm);
  KILN_HANDLER(Reduce);
  KILN_HANDLER(Softmax);
  KILN_HANDLER(MatMul);
  KILN_HANDLER(Gemm);
  KILN_HANDLER(Flatten);
  KILN_HANDLER(ReshapeOp);
  KILN_HANDLER(Unsqueeze);
  KILN_HANDLER(Squeeze);
  KILN_HANDLER(TransposeOp);
  KILN_HANDLER(Concat);
  KILN_HANDLER(Split);
  KILN_HANDLER(Slice);
  KILN_HANDLER(CastOp);
  KILN_HANDLER(ShapeOp);
  KILN_HANDLER(Size);
  KILN_HANDLER(Gather);
  KILN_HANDLER(Pad);
  KILN_HANDLER(Expand);
  KILN_HANDLER(Tile);
  KILN_HANDLER(ConstantOfShape);
  KILN_HANDLER(Range);
  KILN_HANDLER(LayerNorm);       // onnx_normalization.cc
  KILN_HANDLER(InstanceNorm);    // onnx_normalization.cc
  KILN_HANDLER(MeanVarianceNorm);  // onnx_normalization.cc
  KILN_HANDLER(Lrn);             // onnx_normalization.cc
  KILN_HANDLER(Loop);  // onnx_control_flow.cc
  KILN_HANDLER(Scan);  // onnx_control_flow.cc
  KILN_HANDLER(LSTM);  // onnx_lstm.cc
  KILN_HANDLER(RnnGru);  // onnx_rnn.cc (RNN, GRU)
  // LSTM/GRU/RNN outputs from per-direction steps ys[d][t] ([B, H] each)
  // and final states (Y_h, then Y_c): Y [S, dirs, B, H] and [dirs, B, H],
  // batch first when layout is 1. `op` names them in errors (onnx_lstm.cc).
  // Per-step masks [B, 1] (bool, t < sequence_lens[b]) of an LSTM/GRU/RNN
  // over `seq` steps; empty when `seq_lens` is null or a constant equal to
  // `seq` everywhere (onnx_lstm.cc).
  StatusOr<std::vector<Value*>> StepMasks(Value* seq_lens, int64_t seq, int64_t batch);
  Status RecurrentOutputs(const onnx::NodeProto& n, const std::vector<std::vector<Value*>>& ys,
                          const std::vector<std::vector<Value*>>& states, int64_t layout,
                          const std::string& op, std::vector<Value*>& out);
  KILN_HANDLER(Einsum);  // onnx_einsum.cc
  KILN_HANDLER(DFT);             // onnx_signal.cc
  KILN_HANDLER(ReverseSequence);  // onnx_reorder.cc
  KILN_HANDLER(MaxUnpool);        // onnx_reorder.cc
  KILN_HANDLER(Det);              // onnx_reorder.cc
  KILN_HANDLER(GridSample);       // onnx_grid_sample.cc
  KILN_HANDLER(RoiAlign);         // onnx_roi_align.cc
  KILN_HANDLER(MaxPoolWithIndices);  // onnx_pool_indices.cc (Pool calls it)
  KILN_HANDLER(Pool3D);              // onnx_pool_indices.cc (Pool calls it)
  KILN_HANDLER(STFT);            // onnx_signal.cc
  KILN_HANDLER(MelWeightMatrix);  // onnx_signal.cc
  KILN_HANDLER(DataDependent);  // onnx_data_dependent.cc (NonZero, Unique, NonMaxSuppression)
  KILN_HANDLER(ConvTranspose);  // onnx_conv_transpose.cc
  KILN_HANDLER(Resize);  // onnx_resize.cc (Resize and Upsample)
  KILN_HANDLER(ArgReduce);   // onnx_index_ops.cc (ArgMax, ArgMin)
  KILN_HANDLER(Hardmax);     // onnx_index_ops.cc
  KILN_HANDLER(Trilu);       // onnx_index_ops.cc
  KILN_HANDLER(EyeLike);     // onnx_index_ops.cc
  KILN_HANDLER(CumSum);      // onnx_index_ops.cc
  KILN_HANDLER(BitShift);    // onnx_bitshift.cc
  KILN_HANDLER(TfIdfVectorizer);  // onnx_tfidf.cc
  KILN_HANDLER(GatherElements);  // onnx_index_ops.cc
  KILN_HANDLER(OneHot);      // onnx_index_ops.cc
  KILN_HANDLER(GatherND);    // onnx_index_ops.cc
  KILN_HANDLER(TopK);        // onnx_index_ops.cc
  KILN_HANDLER(Compress);    // onnx_index_ops.cc
  KILN_HANDLER(Window);      // onnx_window.cc (Hann, Hamming, Blackman)
  KILN_HANDLER(Scatter);     // onnx_index_ops.cc (ScatterElements, Scatter, ScatterND)
  KILN_HANDLER(NllLoss);     // onnx_loss.cc (NegativeLogLikelihoodLoss)
  KILN_HANDLER(SoftmaxCrossEntropyLoss);  // onnx_loss.cc
  KILN_HANDLER(SpaceDepth);  // onnx_index_ops.cc (DepthToSpace, SpaceToDepth)
  KILN_HANDLER(Activation);  // onnx_activation.cc (Softsign, Selu, Celu, ThresholdedRelu, Shrink)
  KILN_HANDLER(QuantizeLinear);         // onnx_quantize.cc
  KILN_HANDLER(DequantizeLinear);       // onnx_quantize.cc
  KILN_HANDLER(DynamicQuantizeLinear);  // onnx_quantize.cc
  KILN_HANDLER(MatMulInteger);          // onnx_quantize.cc
  KILN_HANDLER(ConvInteger);            // onnx_quantize.cc
  KILN_HANDLER(QLinearMatMul);          // onnx_quantize.cc
  KILN_HANDLER(QLinearConv);            // onnx_quantize.cc
#undef KILN_HANDLER

  // Quantization helpers (onnx_quantize.cc). QuantParam: a scale / zero
  // point shaped to broadcast against a tensor of shape `xs` (per tensor →
  // scalar; 1-D → along `axis`). Requantize: saturate(round(v) + zp) as `dt`.
  // ZeroPointShift: i32(x) - i32(zp). IntegerMatMul / IntegerConv: exact i32
  // products of zero-point-shifted u8/i8 operands.
  StatusOr<Value*> QuantParam(Value* p, const Shape& xs, int64_t axis, const char* what);
  StatusOr<Value*> Requantize(Value* v, Value* zp, DType dt);
  StatusOr<Value*> ZeroPointShift(Value* x, Value* zp);
  StatusOr<Value*> IntegerMatMul(Value* a, Value* a_zp, Value* b, Value* b_zp);
  StatusOr<Value*> IntegerConv(Value* x, Value* x_zp, Value* w, Value* w_zp);

  // QDQ convolutions computed exactly (onnx_qdq_conv.cc). A DequantizeLinear
  // result's quantized input, shaped scale and f32 zero point (may be null).
  struct DqInfo {
    Value* q;
    Value* scale;
    Value* zp;
  };
  // A Conv run on zero-point-shifted integers: its f32 integer sums (bias
  // included) and s_x * s_w[o] per output channel.
  struct QdqConv {
    Value* acc;
    std::vector<float> sxsw;
  };
  // When Conv's x, w, b are DequantizeLinear results that qualify, replaces
  // them by the zero-point-shifted integers (f32) and sets *sxsw; false
  // (operands untouched) otherwise.
  StatusOr<bool> ExactQdqConvOperands(Value** x, Value** w, Value** b, std::vector<float>* sxsw);
  // acc * v[o] along axis 1.
  StatusOr<Value*> ScaleChannels(Value* acc, const std::vector<float>& v);
  // QuantizeLinear of a QdqConv result: saturate(round(acc * (sxsw[o] / s_y))
  // + zp) as `dt`; nullptr when s_y or zp is not a per-tensor constant.
  StatusOr<Value*> QdqConvRequantize(const QdqConv& c, Value* y_scale, Value* y_zp, DType dt);

  // re/im of the DFT of xr (+ i xi, xi may be null) along the last axis: N
  // points, K bins (onnx_signal.cc).
  StatusOr<std::pair<Value*, Value*>> DftLastAxis(Value* xr, Value* xi, int64_t N, int64_t K, bool inverse);

  Status SpatialParams(const Shape& in_spatial, const Shape& kernel, bool pool, Shape* strides,
                       Shape* dilations, Shape* pads, Shape* out_spatial);

  const ImportOptions& opts_;
  int64_t opset_ = 1;
  ir::Block* block_ = nullptr;
  std::map<std::string, Value*> values_;
  // Sequence/optional values in scope (never also in values_).
  std::map<std::string, OnnxValue> composites_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::pair<Value*, Shape>, Value*> reshapes_;
  // Current node.
  const onnx::NodeProto* node_ = nullptr;
  std::string loc_;
  std::string op_type_;
  // Subgraphs: loc prefix of unnamed nodes, nesting depth, nodes imported.
  std::string loc_prefix_;
  int depth_ = 0;
  int64_t nodes_imported_ = 0;
  // Emit folds constant operands while true. DequantizeLinear clears it for an
  // 8-bit weight so that the weight stays 8-bit in the module (onnx_quantize.cc).
  bool fold_ = true;
  std::map<Value*, DqInfo> dq_info_;       // DequantizeLinear results
  std::map<Value*, QdqConv> qdq_convs_;    // Conv results computed exactly
};

// Sets the importer's insertion block for a scope (RAII).
class BlockScope {
 public:
  BlockScope(ir::Block** slot, ir::Block* b) : slot_(slot), saved_(*slot) { *slot = b; }
  ~BlockScope() { *slot_ = saved_; }
  BlockScope(const BlockScope&) = delete;
  BlockScope& operator=(const BlockScope&) = delete;

 private:
  ir::Block** slot_;
  ir::Block* saved_;
};

}  // namespace kiln::onnx_import::detail

#endif  // KILN_COMPILER_IMPORT_ONNX_ONNX_IMPORTER_INTERNAL_H_
