// Internal to compiler/codegen: the dispatch generator shared by the
// schedule files. Not a public header; compiler/codegen/codegen.h is the API.
//
// Layout of the generator (one concern per file):
//   generator.h            this: GLSL helpers, the Idx model, class Generator
//   generator_eval.cc      Eval*: one element of a value at a multi-index
//   schedule_pointwise.cc  op checks, result stores, the grid, pointwise main
//   schedule_reduce.cc     reduce-group and softmax-rows (shared-memory sums)
//   schedule_conv.cc       conv-tiled
//   schedule_conv_transpose_tiled.cc  conv-transpose-tiled, -upsample
//   schedule_table.h       the per-shape thresholds the selection in codegen.cc reads
//   schedule_matmul.cc     matmul-tiled, matmul-splitk
//   codegen.cc             schedule selection, shader assembly, GLSL -> SPIR-V
// The model and the schedules are described at the top of codegen.cc.
#ifndef KILN_COMPILER_CODEGEN_GENERATOR_H_
#define KILN_COMPILER_CODEGEN_GENERATOR_H_

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/schedule_table.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/ops.h"

namespace kiln::codegen::detail {


using ir::Operation;
using ir::Value;
using Shape = std::vector<int64_t>;

constexpr int kWorkgroupSize = 64;
// Largest tensor.constant (elements) inlined as a GLSL const array.
constexpr int64_t kMaxInlineConstant = 4096;
// Window loops with at most this many trips get [[unroll]].
constexpr int64_t kMaxUnroll = 16;

inline int64_t NumElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline Shape Strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

inline std::string ShapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// A loc string safe inside a // comment.
inline std::string Sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (c >= 32 && c < 127) ? c : '?';
  return r;
}

// --------------------------------------------------------------------------
// Element types
// --------------------------------------------------------------------------
// kF16: float16_t arithmetic, only in a dispatch's f16-arithmetic variant
// (CodegenOptions::f16_arithmetic); f16 values compute in kF32 otherwise.
enum class CT { kF32, kI32, kI64, kU32, kBool, kU64, kF64, kF16 };

inline const char* CTName(CT t) {
  switch (t) {
    case CT::kF32: return "float";
    case CT::kI32: return "int";
    case CT::kI64: return "int64_t";
    case CT::kU32: return "uint";
    case CT::kBool: return "bool";
    case CT::kU64: return "uint64_t";
    case CT::kF64: return "double";
    case CT::kF16: return "float16_t";
  }
  return "?";
}

inline bool IsFloatCT(CT t) { return t == CT::kF32 || t == CT::kF64 || t == CT::kF16; }
inline bool IsUnsignedCT(CT t) { return t == CT::kU32 || t == CT::kU64; }

inline bool SupportedDType(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kI64: case DType::kI8:
    case DType::kU8: case DType::kBool: case DType::kF16: case DType::kBF16:
    case DType::kI16: case DType::kU16: case DType::kU32: case DType::kU64: case DType::kF64:
      return true;
    default:
      return false;
  }
}

// Arithmetic type of each storage dtype: 8/16-bit integers widen to 32 bits;
// f16 and bf16 compute in f32 (converted at load and store).
inline CT ComputeType(DType t) {
  switch (t) {
    case DType::kF32: case DType::kF16: case DType::kBF16: return CT::kF32;
    case DType::kI64: return CT::kI64;
    case DType::kU64: return CT::kU64;
    case DType::kF64: return CT::kF64;
    case DType::kU8: case DType::kU16: case DType::kU32: return CT::kU32;
    case DType::kBool: return CT::kBool;
    default: return CT::kI32;  // i32, i16, i8
  }
}

// The GLSL element type of a storage buffer of `t` (bf16: its raw bits).
inline const char* StorageType(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kF16: return "float16_t";
    case DType::kBF16: return "uint16_t";
    case DType::kI32: return "int";
    case DType::kU32: return "uint";
    case DType::kI64: return "int64_t";
    case DType::kU64: return "uint64_t";
    case DType::kF64: return "double";
    case DType::kI16: return "int16_t";
    case DType::kU16: return "uint16_t";
    case DType::kI8: return "int8_t";
    default: return "uint8_t";  // u8, i1
  }
}

// Storage element -> compute type (EvalArg) and compute -> storage
// (StoreResults) for the dtypes whose storage type differs from their
// compute type; `e` itself otherwise.
inline std::string LoadConvert(DType t, const std::string& e) {
  switch (t) {
    case DType::kI8: case DType::kI16: return "int(" + e + ")";
    case DType::kU8: case DType::kU16: return "uint(" + e + ")";
    case DType::kF16: return "float(" + e + ")";
    case DType::kBF16: return "uintBitsToFloat(uint(" + e + ") << 16)";
    case DType::kBool: return "(uint(" + e + ") != 0u)";
    default: return e;
  }
}

// The bfloat16 bits (low 16) of float f: round to nearest even, NaN kept a quiet NaN (the
// conversion of compiler/ir FloatToBF16).
inline const char* const kToBF16Helper = R"(uint kiln_to_bf16(float f) {
  uint x = floatBitsToUint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (x >> 16) | 0x40u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return x >> 16;
}
)";

inline std::string FloatLit(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) return "uintBitsToFloat(0x7fc00000u)";
  if (std::isinf(f)) return f > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (s[0] == '-') s = "(" + s + ")";
  return s;
}

inline std::string DoubleLit(double v) {
  if (std::isnan(v)) return "double(uintBitsToFloat(0x7fc00000u))";
  if (std::isinf(v)) return v > 0 ? "double(uintBitsToFloat(0x7f800000u))" : "double(uintBitsToFloat(0xff800000u))";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  s += "lf";
  if (s[0] == '-') s = "(" + s + ")";
  return s;
}

// A literal of compute type `t` with value `v` (saturated to the type).
inline std::string Literal(CT t, double v) {
  switch (t) {
    case CT::kF32: return FloatLit(v);
    case CT::kF64: return DoubleLit(v);
    case CT::kF16: return "float16_t(" + FloatLit(v) + ")";
    case CT::kU64: {
      if (v <= 0) return "0ul";
      if (v >= 18446744073709551615.0) return "18446744073709551615ul";
      return std::to_string(static_cast<uint64_t>(v)) + "ul";
    }
    case CT::kBool: return v != 0 ? "true" : "false";
    case CT::kU32: {
      double c = std::min(std::max(v, 0.0), 4294967295.0);
      return std::to_string(static_cast<uint32_t>(c)) + "u";
    }
    case CT::kI32: {
      double c = std::min(std::max(v, -2147483648.0), 2147483647.0);
      int64_t i = static_cast<int64_t>(c);
      if (i == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return i < 0 ? "(" + std::to_string(i) + ")" : std::to_string(i);
    }
    case CT::kI64: {
      if (v <= -9223372036854775808.0) return "(-9223372036854775807l - 1l)";
      if (v >= 9223372036854775807.0) return "9223372036854775807l";
      int64_t i = static_cast<int64_t>(v);
      return i < 0 ? "(" + std::to_string(i) + "l)" : std::to_string(i) + "l";
    }
  }
  return "0";
}

inline std::string IntLiteral(CT t, int64_t v) {
  if (t == CT::kI64) return v < 0 ? "(" + std::to_string(v) + "l)" : std::to_string(v) + "l";
  if (t == CT::kU64) return std::to_string(static_cast<uint64_t>(v)) + "ul";  // u64 bits
  return Literal(t, static_cast<double>(v));
}

inline std::string Lowest(CT t) {
  switch (t) {
    case CT::kF32: return "uintBitsToFloat(0xff800000u)";
    case CT::kI32: return "(-2147483647 - 1)";
    case CT::kI64: return "(-9223372036854775807l - 1l)";
    case CT::kU32: return "0u";
    case CT::kBool: return "false";
    case CT::kU64: return "0ul";
    case CT::kF64: return "double(uintBitsToFloat(0xff800000u))";
    case CT::kF16: return "float16_t(uintBitsToFloat(0xff800000u))";
  }
  return "0";
}

inline std::string Highest(CT t) {
  switch (t) {
    case CT::kF32: return "uintBitsToFloat(0x7f800000u)";
    case CT::kI32: return "2147483647";
    case CT::kI64: return "9223372036854775807l";
    case CT::kU32: return "4294967295u";
    case CT::kBool: return "true";
    case CT::kU64: return "18446744073709551615ul";
    case CT::kF64: return "double(uintBitsToFloat(0x7f800000u))";
    case CT::kF16: return "float16_t(uintBitsToFloat(0x7f800000u))";
  }
  return "0";
}

inline std::string Convert(const std::string& e, CT from, CT to) {
  if (from == to) return e;
  if (to == CT::kBool) return "(" + e + " != " + Literal(from, 0) + ")";
  if (from == CT::kBool) return "(" + e + " ? " + Literal(to, 1) + " : " + Literal(to, 0) + ")";
  return std::string(CTName(to)) + "(" + e + ")";
}

// --------------------------------------------------------------------------
// Integer index expressions (GLSL `int`), folded when constant.
// --------------------------------------------------------------------------
inline bool ParseInt(std::string s, int64_t* v) {
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return false;
  *v = std::stoll(s);
  return true;
}

inline std::string I(int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

inline std::string AddE(const std::string& a, const std::string& b) {
  int64_t x, y;
  bool ca = ParseInt(a, &x), cb = ParseInt(b, &y);
  if (ca && cb) return I(x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  if (cb && y < 0) return "(" + a + " - " + std::to_string(-y) + ")";
  return "(" + a + " + " + b + ")";
}

inline std::string AddC(const std::string& a, int64_t c) { return AddE(a, I(c)); }

inline std::string MulC(const std::string& a, int64_t k) {
  int64_t x;
  if (k == 0) return "0";
  if (k == 1) return a;
  if (ParseInt(a, &x)) return I(x * k);
  return "(" + a + " * " + I(k) + ")";
}

inline std::string DivC(const std::string& a, int64_t k) {
  int64_t x;
  if (k == 1) return a;
  if (ParseInt(a, &x) && x >= 0) return I(x / k);
  return "(" + a + " / " + I(k) + ")";
}

inline bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// True if `ident` occurs in `text` as a whole identifier.
inline bool UsesIdent(const std::string& text, const std::string& ident) {
  size_t pos = 0;
  auto is_id = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while ((pos = text.find(ident, pos)) != std::string::npos) {
    bool left = pos == 0 || !is_id(text[pos - 1]);
    size_t end = pos + ident.size();
    bool right = end >= text.size() || !is_id(text[end]);
    if (left && right) return true;
    pos = end;
  }
  return false;
}

// A multi-index into a tensor: one GLSL int expression per dimension, plus
// (optionally) the row-major flat offset for `flat_shape`, which saves the
// recombination when a value of that shape is loaded.
struct Idx {
  std::vector<std::string> d;
  std::string flat;
  Shape flat_shape;
  std::string Key() const {
    std::string k;
    for (const auto& s : d) k += s + ",";
    return k;
  }
};

// The index into an operand of shape `in` that numpy broadcasting maps output
// index `idx` (shape `out`) to.
inline Idx BroadcastIdx(const Idx& idx, const Shape& out, const Shape& in) {
  if (in == out) return idx;
  Idx r;
  size_t off = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) r.d.push_back(in[d] == 1 ? "0" : idx.d[off + d]);
  if (!idx.flat.empty() && idx.flat_shape == out && NumElements(in) == NumElements(out)) {
    r.flat = idx.flat;
    r.flat_shape = in;
  }
  return r;
}

// The elementwise ops the generator computes in f32 only (transcendental and
// activation functions: GLSL has them for float; a region that needs them on
// another compute type is unsupported).
inline bool IsFloatOnlyOp(const Operation* op) {
  using ir::OpCode;
  switch (op->code()) {
    case OpCode::kTensorSigmoid: case OpCode::kTensorTanh: case OpCode::kTensorExp:
    case OpCode::kTensorLog: case OpCode::kTensorSqrt: case OpCode::kTensorReciprocal:
    case OpCode::kTensorFloor: case OpCode::kTensorCeil: case OpCode::kTensorRound:
    case OpCode::kTensorErf: case OpCode::kTensorSin: case OpCode::kTensorCos:
    case OpCode::kTensorLeakyRelu: case OpCode::kTensorHardSigmoid: case OpCode::kTensorHardSwish:
    case OpCode::kTensorElu: case OpCode::kTensorSoftplus: case OpCode::kTensorTan:
    case OpCode::kTensorAsin: case OpCode::kTensorAcos: case OpCode::kTensorAtan:
    case OpCode::kTensorSinh: case OpCode::kTensorCosh: case OpCode::kTensorAsinh:
    case OpCode::kTensorAcosh: case OpCode::kTensorAtanh:
      return true;
    default:
      return false;
  }
}

// An op that anchors a dispatch region: a structured tensor op (ops.def
// kStructured: conv2d, matmul, reduce, gather, ...). The schedule is picked
// by the region's anchor.
inline bool IsAnchorOp(const Operation* op) { return ir::Traits(op).has(ir::kStructured); }

// GLSL helper functions, emitted on first use.
inline const char* const kErfHelper = R"(float kiln_erf(float x) {
  float ax = abs(x);
  if (ax < 0.5) {
    // Maclaurin series of erf (|x| < 0.5: 7 terms, error < 1e-9).
    float x2 = x * x;
    return x * (1.12837917 + x2 * (-0.376126389 + x2 * (0.112837917 + x2 * (-0.0268661706 +
           x2 * (0.00522397762 + x2 * (-0.000854832702 + x2 * 0.00012055333))))));
  }
  // Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7).
  float t = 1.0 / (1.0 + 0.3275911 * ax);
  float p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 +
            t * 1.061405429))));
  return sign(x) * (1.0 - p * exp(-ax * ax));
}
)";

inline const char* const kPowHelper = R"(float kiln_pow(float x, float y) {
  // ONNX Pow: negative bases with integral exponents are defined.
  if (y == 2.0) return x * x;
  if (y == 1.0) return x;
  if (y == 0.0) return 1.0;
  if (y == 3.0) return x * x * x;
  if (y == 0.5) return sqrt(x);
  if (y == -1.0) return 1.0 / x;
  if (x == 0.0) return y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u);
  float r = exp2(y * log2(abs(x)));
  if (x < 0.0) {
    if (floor(y) != y) return uintBitsToFloat(0x7fc00000u);
    if (mod(y, 2.0) != 0.0) r = -r;
  }
  return r;
}
)";

inline const char* const kLog1pHelper = R"(float kiln_log1p(float u) {
  // Accurate log(1 + u) for small u (Goldberg's trick).
  float w = 1.0 + u;
  return w == 1.0 ? u : log(w) * (u / (w - 1.0));
}
)";

inline const char* const kExpm1Helper = R"(float kiln_expm1(float x) {
  // Accurate exp(x) - 1 for small |x| (Kahan's trick).
  float u = exp(x);
  if (u == 1.0) return x;
  float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  return um1 * (x / log(u));
}
)";

// ----------------------------------------------------------------------------
// The generator for one dispatch.
// ----------------------------------------------------------------------------
class Generator {
 public:
  Generator(Operation* dispatch, const CodegenOptions& options)
      : dispatch_(dispatch), options_(options) {}

  StatusOr<CompiledDispatch> Run();

 private:
  // ---- emission ----
  void Line(const std::string& s) {
    body_.append(static_cast<size_t>(indent_) * 2, ' ');
    body_ += s;
    body_ += '\n';
  }
  void Open(const std::string& head) {
    Line(head.empty() ? "{" : head + " {");
    ++indent_;
    cache_.emplace_back();
  }
  void Close() {
    cache_.pop_back();
    --indent_;
    Line("}");
  }
  std::string Fresh(const char* prefix) { return prefix + std::to_string(counter_++); }
  std::string Decl(CT t, const std::string& expr, const std::string& comment = "") {
    std::string n = Fresh("t");
    Line(std::string(CTName(t)) + " " + n + " = " + expr + ";" +
         (comment.empty() ? "" : "  // " + comment));
    return n;
  }
  // Declares an int for a non-trivial index expression.
  std::string DeclI(const std::string& expr, const char* prefix = "i") {
    int64_t v;
    if (ParseInt(expr, &v) || IsIdentifier(expr)) return expr;
    std::string n = Fresh(prefix);
    Line("int " + n + " = " + expr + ";");
    return n;
  }
  // `for (int v = 0; v < n; ++v) {` (returns v), or "0" without a loop when n == 1.
  std::string OpenLoop(int64_t n, const char* prefix, bool unroll, int* opened) {
    if (n == 1) return "0";
    std::string v = Fresh(prefix);
    if (unroll && n <= kMaxUnroll) uses_ctrl_attr_ = true;
    Open(std::string(unroll && n <= kMaxUnroll ? "[[unroll]] " : "") + "for (int " + v +
         " = 0; " + v + " < " + std::to_string(n) + "; ++" + v + ")");
    ++*opened;
    return v;
  }
  // `[[unroll]] for (int v = 0; v < n; ++v) {` whatever n (returns v; "0"
  // without a loop when n == 1): a loop over a register block. The module
  // keeps the loop (codegen.cc runs no spirv-opt unroll) and the driver's
  // compiler unrolls it, so an array indexed only by such loops becomes
  // registers (issue 16 item 6: the block's code is in the module once).
  std::string OpenUnrolled(int64_t n, const char* prefix, int* opened) {
    if (n == 1) return "0";
    std::string v = Fresh(prefix);
    uses_ctrl_attr_ = true;
    Open("[[unroll]] for (int " + v + " = 0; " + v + " < " + std::to_string(n) + "; ++" + v + ")");
    ++*opened;
    return v;
  }
  void CloseN(int n) {
    for (int i = 0; i < n; ++i) Close();
  }
  // Adds bias `b` (one value per output channel) to a register block's
  // finished sums: acc[to * per_channel + e] += b[first_channel + to] for
  // to < channels, e < per_channel (the order of EvalConv and of ONNX
  // Runtime's col2im: the bias last). No-op when b is null.
  void AddBlockBias(Value* b, const std::string& acc, const std::string& first_channel,
                    int64_t channels, int64_t per_channel) {
    if (!b) return;
    int o = 0;
    const std::string to = OpenUnrolled(channels, "to", &o);
    const std::string bias = Convert(Eval(b, Idx{{AddE(first_channel, to)}, "", {}}), CTOf(b), CT::kF32);
    const std::string e = OpenUnrolled(per_channel, "tw", &o);
    Line(acc + "[" + AddE(MulC(to, per_channel), e) + "] += " + bias + ";");
    CloseN(o);
  }
  // `float accN[n];` set to zero by an [[unroll]] loop: a register block's
  // accumulators (conv-tiled, the conv-transpose blocks, matmul-tiled; of
  // compute type `ct`). Returns accN.
  std::string DeclareAccumulators(int64_t n, CT ct = CT::kF32) {
    const std::string acc = Fresh("acc");
    Line(std::string(CTName(ct)) + " " + acc + "[" + I(n) + "];");
    int o = 0;
    const std::string i = OpenUnrolled(n, "a", &o);
    Line(acc + "[" + i + "] = " + Literal(ct, 0) + ";");
    CloseN(o);
    return acc;
  }
  // One term of a dot product: `acc += a * b`. For f32, GLSL fma(), a
  // multiply-add rounded once: the arithmetic of the FMA GEMM kernels CPU
  // references run (ONNX Runtime's MLAS: a sequential fused multiply-add
  // chain over K), which matters where a model amplifies the rounding of a
  // long dot product (silero_vad: a K=256 STFT conv feeding log and a
  // recurrent cell state; tests/e2e/silero_stream_test.cc). GPUs run it as
  // one instruction; on drivers that split it into a multiply and an add
  // (lavapipe) the runtime replaces every f32 fma() with an exact emulation
  // at load (hal/vulkan/exact_fma_splice.h), so the module carries no
  // emulation. Integer compute types accumulate exactly.
  void Mac(const std::string& acc, const std::string& a, const std::string& b, CT ct) {
    if (ct == CT::kF32)
      Line(acc + " = fma(" + a + ", " + b + ", " + acc + ");");
    else
      Line(acc + " += " + a + " * " + b + ";");
  }
  // Unsigned-compare bounds check `0 <= e < n`.
  static std::string InRange(const std::string& e, int64_t n) {
    return "uint(" + e + ") < " + std::to_string(n) + "u";
  }

  void Fail(Status s) {
    if (status_.ok()) status_ = std::move(s);
  }
  Status Unsupported(Operation* op, const std::string& why = "") {
    std::string m = "codegen: unsupported op '" + op->name() + "'";
    if (!why.empty()) m += " (" + why + ")";
    m += " (" + (op->loc().empty() ? std::string("unknown loc") : op->loc()) + ")";
    return Status(StatusCode::kUnimplemented, m);
  }
  std::string Comment(Operation* op) {
    std::string c = op->name();
    if (!op->loc().empty()) c += " [" + Sanitize(op->loc()) + "]";
    return c;
  }

  // The compute type of `v`: ComputeType(dtype), except f16 values in the
  // f16-arithmetic variant, which compute in float16_t.
  CT CTOf(Value* v) {
    DType t = v->type().dtype;
    return options_.f16_arithmetic && t == DType::kF16 ? CT::kF16 : ComputeType(t);
  }
  const Shape& ShapeOf(Value* v) { return v->type().shape; }

  // Row-major offset of `idx` in a tensor of `shape`.
  static std::string Offset(const Idx& idx, const Shape& shape) {
    if (!idx.flat.empty() && idx.flat_shape == shape) return idx.flat;
    Shape st = Strides(shape);
    std::string off = "0";
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) continue;
      off = AddE(off, MulC(idx.d[d], st[d]));
    }
    return off;
  }

  // Emits the decomposition of the unsigned flat index `flat` into indices of
  // `shape`; returns the index expressions.
  std::vector<std::string> Decompose(const std::string& flat, const Shape& shape) {
    std::vector<std::string> r(shape.size(), "0");
    int first = -1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) {
        first = static_cast<int>(d);
        break;
      }
    if (first < 0) return r;
    std::string rem = Fresh("r");
    Line("uint " + rem + " = " + flat + ";");
    for (int d = static_cast<int>(shape.size()) - 1; d >= first; --d) {
      if (shape[d] == 1) continue;
      std::string n = Fresh("i");
      if (d == first) {
        Line("int " + n + " = int(" + rem + ");");
      } else {
        Line("int " + n + " = int(" + rem + " % " + std::to_string(shape[d]) + "u); " + rem +
             " /= " + std::to_string(shape[d]) + "u;");
      }
      r[d] = n;
    }
    return r;
  }

  // ---- evaluation ----
  std::string Eval(Value* v, const Idx& idx);
  std::string EvalArg(Value* v, const Idx& idx);
  std::string EvalConstant(Operation* op, const Idx& idx);
  std::string EvalElementwise(Operation* op, const Idx& idx);
  std::string EvalConv(Operation* op, const Idx& idx);
  std::string EvalConvTranspose(Operation* op, const Idx& idx);  // conv_transpose_schedule.h
  std::string EvalMatmul(Operation* op, const Idx& idx);
  std::string EvalPool(Operation* op, const Idx& idx);
  std::string EvalReduce(Operation* op, const Idx& idx);
  std::string EvalArgReduce(Operation* op, const Idx& idx);
  std::string EvalCumsum(Operation* op, const Idx& idx);
  std::string EvalGatherElements(Operation* op, const Idx& idx);
  std::string EvalTopK(Operation* op, const Idx& idx);
  std::string EvalScatter(Operation* op, const Idx& idx);  // scatter_elements, scatter_nd
  std::string EvalSoftmax(Operation* op, const Idx& idx);
  std::string EvalTranspose(Operation* op, const Idx& idx);
  std::string EvalSlice(Operation* op, const Idx& idx);
  std::string EvalConcat(Operation* op, const Idx& idx);
  std::string EvalPad(Operation* op, const Idx& idx);
  std::string EvalGather(Operation* op, const Idx& idx);
  std::string EvalResize(Operation* op, const Idx& idx);  // resize_schedule.cc
  std::string EvalReshape(Operation* op, const Idx& idx);

  // Reduction helpers.
  struct ReducePass {
    std::string init;                                 // accumulator init
    std::function<std::string(const std::string&)> map;  // element -> contribution
    char combine;                                     // '+', '*', 'M' (max), 'm' (min)
  };
  std::vector<ReducePass> ReducePasses(const std::string& kind, CT ct,
                                       const std::vector<std::string>& prev);
  std::string Combine(char c, const std::string& a, const std::string& b) {
    switch (c) {
      case '+': return "(" + a + " + " + b + ")";
      case '*': return "(" + a + " * " + b + ")";
      case 'M': return "max(" + a + ", " + b + ")";
      default: return "min(" + a + ", " + b + ")";
    }
  }
  std::string ReduceFinal(const std::string& kind, CT ct, const std::vector<std::string>& acc,
                          int64_t count);
  // Input index of tensor.reduce for output index `out` and reduced indices
  // `red` (one per reduced axis, in axis order).
  Idx ReduceInputIdx(Operation* op, const Idx& out, const std::vector<std::string>& red);
  std::vector<int64_t> ReduceAxes(Operation* op);

  Status CheckOps();
  void EmitPointwiseMain(uint32_t wx, uint32_t wy);
  // The pointwise schedule's body for the invocation's `gid`: every result
  // element gid (results of a smaller shape guarded).
  void EmitPointwiseStores();
  // The largest result's element count (the pointwise grid).
  int64_t PointwiseElements();
  // workgroup-staged (schedule_staged.cc): one workgroup; each value marked
  // `workgroup_stage` (fuse_workgroup_stages.cc) is computed over all its
  // elements into shared memory, in program order, then the results.
  void EmitStagedMain();
  // In a stage's loop body, for element `idx` of stage value `v`: each
  // reduction `v` is computed from whose rows are texel-eligible and a
  // multiple of 4 long is emitted as a loop of vec4 fetches, and its value
  // put in the CSE cache for Eval to find.
  void EmitStageReduceTexels(Value* v, const Idx& idx);
  // Whether the region holds a value marked `workgroup_stage`.
  bool HasStages() const;
  // Lanes (a power of two <= kWorkgroupSize) per output for a reduction of
  // `count` elements into `outputs` outputs; 1 means one invocation each.
  static int ReduceLanes(int64_t count, int64_t outputs);
  void EmitReduceGroupMain(Operation* reduce, int lanes, uint32_t wx, uint32_t wy);
  void EmitSoftmaxRowsMain(Operation* softmax, int lanes, uint32_t wx, uint32_t wy);
  void EmitConvTiledMain(Operation* conv, int64_t TO, int64_t TW, const ConvTexels& texels,
                         uint32_t wx, uint32_t wy);
  // The binding of `v` when it is a dispatch operand the emitter admits as
  // a texel buffer (CodegenOptions::texel_eligible), else -1.
  int TexelEligibleBinding(Value* v) const {
    auto it = arg_binding_.find(v);
    if (it == arg_binding_.end()) return -1;
    const size_t b = static_cast<size_t>(it->second);
    return b < options_.texel_eligible.size() && options_.texel_eligible[b] ? it->second : -1;
  }
  // The dispatch operand a conv input `x` reads element for element: `x`
  // itself when it is an operand, else the one operand of x's shape at the
  // leaves of an elementwise prologue (the squeeze-excite multiply
  // x * scale[c]: other leaves broadcast), else null.
  Value* ElementwiseSource(Value* x);
  // Binds operand `binding` as a texel buffer (declared `uniform
  // samplerBuffer in<b>t`); returns that name. Every read of the operand,
  // EvalArg's included, then goes through texelFetch.
  std::string UseTexels(int binding) {
    if (texel_.size() <= static_cast<size_t>(binding)) texel_.resize(static_cast<size_t>(binding) + 1, false);
    texel_[static_cast<size_t>(binding)] = true;
    return "in" + std::to_string(binding) + "t";
  }
  bool IsTexel(int binding) const {
    return static_cast<size_t>(binding) < texel_.size() && texel_[static_cast<size_t>(binding)];
  }
  // tensor.conv_transpose, 2-D: TO channels x TW columns of one stride
  // phase per invocation (schedule_conv_transpose_tiled.cc).
  void EmitConvTransposeTiledMain(Operation* op, int64_t TO, int64_t TW, uint32_t wx, uint32_t wy);
  // The same with stride == kernel: TO channels x TW input columns, each
  // with its KH x KW outputs (schedule_conv_transpose_tiled.cc).
  void EmitConvTransposeUpsampleMain(Operation* op, int64_t TO, int64_t TW, const ConvTexels& texels,
                                     uint32_t wx, uint32_t wy);
  void EmitMatmulTiledMain(Operation* matmul, const MatmulTile& tile, uint32_t wx, uint32_t wy);
  void EmitMatmulSplitKMain(Operation* matmul, uint32_t wx, uint32_t wy);
  // Workgroup-wide combine of each lane's `acc` through `sh`; afterwards
  // every lane holds the result in `acc`.
  void EmitSharedReduce(const std::string& acc, char combine, bool reuse_after);
  // The same per segment of `lanes` invocations (uses `lid`, `seg`, `lane`).
  void EmitSegmentedReduce(const std::string& acc, char combine, int lanes, bool reuse_after);
  // Runs the epilogue for anchor element `idx` whose value is `value` and
  // stores every result (all have the anchor's shape), under `guard`.
  void StoreAnchorElement(Operation* anchor, const Idx& idx, const std::string& value,
                          const std::string& guard);
  std::string Key(Value* v, const Idx& idx) {
    return std::to_string(reinterpret_cast<uintptr_t>(v)) + "@" + idx.Key();
  }
  void StoreResults(const Idx& idx, const Shape& shape);
  Status Grid(uint64_t groups, uint32_t* wx, uint32_t* wy);
  std::string WorkgroupIndex(uint32_t wx, uint32_t wy) {
    if (wy == 1) return "gl_WorkGroupID.x";
    return "(gl_WorkGroupID.y * " + std::to_string(wx) + "u + gl_WorkGroupID.x)";
  }

  Operation* dispatch_;
  CodegenOptions options_;
  ir::Block* block_ = nullptr;
  std::vector<Value*> results_;  // flow.return operands
  std::map<Value*, int> arg_binding_;
  std::vector<bool> texel_;  // operand binding -> read as vec4 texels (UseTexels)

  std::string body_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<std::map<std::string, std::string>> cache_;
  // Values of earlier stages and the shared array that holds each
  // (EmitStagedMain); Eval reads them from there.
  std::map<Value*, std::string> staged_;
  std::set<std::string> helpers_;
  std::string globals_;  // const arrays
  std::map<Operation*, std::string> const_arrays_;
  std::string schedule_comment_;
  bool uses_ctrl_attr_ = false;
  bool uses_shared_ = false;
  CT shared_ct_ = CT::kF32;
  Status status_;
};

}  // namespace kiln::codegen::detail

#endif  // KILN_COMPILER_CODEGEN_GENERATOR_H_
