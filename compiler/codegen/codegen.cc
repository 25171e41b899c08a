// Codegen: flow.dispatch -> GLSL 450 compute shader -> SPIR-V.
//
// Model. Every tensor value inside the dispatch region can be *evaluated at a
// multi-index*: Eval(v, idx) emits GLSL statements that compute element `idx`
// of `v` into a local variable and returns its name. Block arguments load
// from their storage buffer; elementwise ops evaluate their operands at the
// broadcast-adjusted index and combine them; "anchor" ops (conv2d, matmul,
// reduce, pool2d, softmax, ...) emit a scoped block with their window /
// reduction loops. Values evaluated twice at the same index are reused (a
// scoped CSE cache keyed by value and index text), so a DAG-shaped epilogue
// (hard-swish: x * hard_sigmoid(x)) computes its producer once. Producers that
// are evaluated at several indices (a prologue feeding a conv) are recomputed,
// which is correct for any DAG but only efficient for the shapes the fusion
// pass forms (anchor + same-shaped elementwise epilogue).
//
// Schedules (workgroup size is always 64 x 1 x 1; a grid wider than
// CodegenOptions::max_workgroup_count folds into y and is guarded):
//   pointwise: one invocation per element of the results (grouped by shape;
//              results of a smaller shape are guarded). Used for elementwise
//              chains, data-movement anchors, pool2d, small reductions, and
//              as the fallback for every other anchor. tensor.conv_transpose
//              runs here: a gather over its contributing taps per output
//              element (conv_transpose_schedule.h).
//   conv-tiled: tensor.conv2d: one invocation per 4 output channels x 4
//              columns (fewer when the group's channel count or the width
//              does not allow); one input row per (channel, kh) is loaded
//              once and reused across kw and the 4 columns.
//   matmul-tiled: tensor.matmul: one invocation per 4x4 output tile.
//   matmul-splitk: tensor.matmul with <= 1024 outputs and K >= 256: one
//              workgroup per output, lanes split K, shared-memory sum.
//   reduce-group: tensor.reduce with a reduced extent >= 128: one workgroup
//              per output element; 64 lanes stride over the reduced elements
//              and combine through shared memory; lane 0 runs the epilogue.
//   softmax-rows: tensor.softmax: one workgroup per row (axis extent >= 128,
//              max and sum through shared memory) or one invocation per row
//              (smaller extents); each row's outputs are written with the
//              epilogue applied.
// All but pointwise need exactly one anchor and every result to have the
// anchor's shape (the epilogue then runs per anchor element); otherwise the
// dispatch falls back to pointwise (always correct).
//
// Element types (compute type in registers / storage type in buffers):
//   f32 float/float   i32 int/int   i64 int64_t/int64_t (shaderInt64)
//   i8 int/int8_t  u8 uint/uint8_t  i1 bool/uint8_t (0 or 1)
// 8-bit tensors use GL_EXT_shader_8bit_storage (+ int8 arithmetic types for
// the conversions), so the device needs storageBuffer8BitAccess and
// shaderInt8; CompiledDispatch::requires_* say which features a shader uses.
#include "compiler/codegen/codegen.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <set>

#include "compiler/codegen/conv_transpose_schedule.h"
#include "compiler/codegen/resize_schedule.h"
#include "compiler/ir/ops.h"

namespace kiln::codegen {
namespace {

using ir::Operation;
using ir::Value;
using Shape = std::vector<int64_t>;

constexpr int kWorkgroupSize = 64;
// Reduced extent from which tensor.reduce uses one workgroup per output.
constexpr int64_t kGroupReduceMinExtent = 128;
// Softmax axis extent from which a row is processed by a whole workgroup.
constexpr int64_t kGroupSoftmaxMinExtent = 128;
// tensor.matmul with at most this many outputs and a depth of at least
// kSplitKMinDepth: one workgroup per output, lanes split K.
constexpr uint64_t kSplitKMaxOutputs = 1024;
constexpr int64_t kSplitKMinDepth = 256;
// Largest tensor.constant (elements) inlined as a GLSL const array.
constexpr int64_t kMaxInlineConstant = 4096;
// Window loops with at most this many trips get [[unroll]].
constexpr int64_t kMaxUnroll = 16;

int64_t NumElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape Strides(const Shape& s) {
  Shape st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

std::string ShapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// A loc string safe inside a // comment.
std::string Sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (c >= 32 && c < 127) ? c : '?';
  return r;
}

// --------------------------------------------------------------------------
// Element types
// --------------------------------------------------------------------------
enum class CT { kF32, kI32, kI64, kU32, kBool };

const char* CTName(CT t) {
  switch (t) {
    case CT::kF32: return "float";
    case CT::kI32: return "int";
    case CT::kI64: return "int64_t";
    case CT::kU32: return "uint";
    case CT::kBool: return "bool";
  }
  return "?";
}

bool SupportedDType(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kI64: case DType::kI8:
    case DType::kU8: case DType::kBool:
      return true;
    default:
      return false;
  }
}

CT ComputeType(DType t) {
  switch (t) {
    case DType::kF32: return CT::kF32;
    case DType::kI64: return CT::kI64;
    case DType::kU8: return CT::kU32;
    case DType::kBool: return CT::kBool;
    default: return CT::kI32;  // i32, i8
  }
}

const char* StorageType(DType t) {
  switch (t) {
    case DType::kF32: return "float";
    case DType::kI32: return "int";
    case DType::kI64: return "int64_t";
    case DType::kI8: return "int8_t";
    default: return "uint8_t";  // u8, i1
  }
}

std::string FloatLit(double v) {
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

// A literal of compute type `t` with value `v` (saturated to the type).
std::string Literal(CT t, double v) {
  switch (t) {
    case CT::kF32: return FloatLit(v);
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

std::string IntLiteral(CT t, int64_t v) {
  if (t == CT::kI64) return v < 0 ? "(" + std::to_string(v) + "l)" : std::to_string(v) + "l";
  return Literal(t, static_cast<double>(v));
}

std::string Lowest(CT t) {
  switch (t) {
    case CT::kF32: return "uintBitsToFloat(0xff800000u)";
    case CT::kI32: return "(-2147483647 - 1)";
    case CT::kI64: return "(-9223372036854775807l - 1l)";
    case CT::kU32: return "0u";
    case CT::kBool: return "false";
  }
  return "0";
}

std::string Highest(CT t) {
  switch (t) {
    case CT::kF32: return "uintBitsToFloat(0x7f800000u)";
    case CT::kI32: return "2147483647";
    case CT::kI64: return "9223372036854775807l";
    case CT::kU32: return "4294967295u";
    case CT::kBool: return "true";
  }
  return "0";
}

std::string Convert(const std::string& e, CT from, CT to) {
  if (from == to) return e;
  if (to == CT::kBool) return "(" + e + " != " + Literal(from, 0) + ")";
  if (from == CT::kBool) return "(" + e + " ? " + Literal(to, 1) + " : " + Literal(to, 0) + ")";
  return std::string(CTName(to)) + "(" + e + ")";
}

// --------------------------------------------------------------------------
// Integer index expressions (GLSL `int`), folded when constant.
// --------------------------------------------------------------------------
bool ParseInt(std::string s, int64_t* v) {
  if (s.size() >= 2 && s.front() == '(' && s.back() == ')') s = s.substr(1, s.size() - 2);
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return false;
  *v = std::stoll(s);
  return true;
}

std::string I(int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

std::string AddE(const std::string& a, const std::string& b) {
  int64_t x, y;
  bool ca = ParseInt(a, &x), cb = ParseInt(b, &y);
  if (ca && cb) return I(x + y);
  if (ca && x == 0) return b;
  if (cb && y == 0) return a;
  if (cb && y < 0) return "(" + a + " - " + std::to_string(-y) + ")";
  return "(" + a + " + " + b + ")";
}

std::string AddC(const std::string& a, int64_t c) { return AddE(a, I(c)); }

std::string MulC(const std::string& a, int64_t k) {
  int64_t x;
  if (k == 0) return "0";
  if (k == 1) return a;
  if (ParseInt(a, &x)) return I(x * k);
  return "(" + a + " * " + I(k) + ")";
}

std::string DivC(const std::string& a, int64_t k) {
  int64_t x;
  if (k == 1) return a;
  if (ParseInt(a, &x) && x >= 0) return I(x / k);
  return "(" + a + " / " + I(k) + ")";
}

bool IsIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

// True if `ident` occurs in `text` as a whole identifier.
bool UsesIdent(const std::string& text, const std::string& ident) {
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
Idx BroadcastIdx(const Idx& idx, const Shape& out, const Shape& in) {
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

const std::set<std::string>& FloatOnlyOps() {
  static const std::set<std::string> k = {
      "tensor.sigmoid", "tensor.tanh", "tensor.exp", "tensor.log", "tensor.sqrt",
      "tensor.reciprocal", "tensor.floor", "tensor.ceil", "tensor.round", "tensor.erf",
      "tensor.sin", "tensor.cos", "tensor.leaky_relu", "tensor.hard_sigmoid",
      "tensor.hard_swish", "tensor.elu", "tensor.softplus"};
  return k;
}

const std::set<std::string>& AnchorOps() {
  static const std::set<std::string> k = {
      "tensor.conv2d", "tensor.matmul", "tensor.reduce", "tensor.pool2d", "tensor.softmax",
      "tensor.transpose", "tensor.slice", "tensor.concat", "tensor.pad", "tensor.gather",
      "tensor.expand", "tensor.conv_transpose", "tensor.resize"};
  return k;
}

// GLSL helper functions, emitted on first use.
const char* kErfHelper = R"(float kiln_erf(float x) {
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

const char* kPowHelper = R"(float kiln_pow(float x, float y) {
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

const char* kLog1pHelper = R"(float kiln_log1p(float u) {
  // Accurate log(1 + u) for small u (Goldberg's trick).
  float w = 1.0 + u;
  return w == 1.0 ? u : log(w) * (u / (w - 1.0));
}
)";

const char* kExpm1Helper = R"(float kiln_expm1(float x) {
  // Accurate exp(x) - 1 for small |x| (Kahan's trick).
  float u = exp(x);
  if (u == 1.0) return x;
  float um1 = u - 1.0;
  if (um1 == -1.0) return -1.0;
  return um1 * (x / log(u));
}
)";

const char* kFmaHelper = R"(layout(constant_id = 0) const bool kiln_exact_fma = true;
float kiln_fma(float a, float b, float c) {
  // Specialization constant 0, set per device by the runtime (false where
  // the driver fuses fma(): one instruction, the same result).
  if (!kiln_exact_fma) return fma(a, b, c);
  // a * b + c as a fused multiply-add rounds it, from float operations only:
  // Dekker's exact product p + pe (Veltkamp split at 2^12 + 1) and Knuth's
  // TwoSum s + se, then s + (se + pe). Not correctly rounded in every corner
  // (a product that underflows, a rare double rounding in the last sum), but
  // equal to C's fmaf on 20 million random triples, where a * b + c rounded
  // twice differs on 25% of them. `precise` keeps the driver from fusing,
  // splitting or reassociating the steps. Where an intermediate overflows
  // (|a| or |b| > 2^115) the plain a * b + c is used.
  precise float p = a * b;
  precise float ca = 4097.0 * a;
  precise float ah = ca - (ca - a);
  precise float al = a - ah;
  precise float cb = 4097.0 * b;
  precise float bh = cb - (cb - b);
  precise float bl = b - bh;
  precise float pe = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  precise float s = p + c;
  precise float z = s - p;
  precise float se = (p - (s - z)) + (c - z);
  precise float r = s + (se + pe);
  return isnan(r) || isinf(r) ? a * b + c : r;
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
  void CloseN(int n) {
    for (int i = 0; i < n; ++i) Close();
  }
  // One term of a dot product: `acc += a * b`. For f32, a multiply-add
  // rounded once: kiln_fma (CodegenOptions::exact_fma) or GLSL fma(). Either
  // is more accurate than a product and a sum rounded separately, and is the
  // arithmetic of the FMA GEMM kernels CPU references run (ONNX Runtime's
  // MLAS: a sequential fused multiply-add chain over K), which matters where a
  // model amplifies the rounding of a long dot product. Integer compute types
  // accumulate exactly.
  void Mac(const std::string& acc, const std::string& a, const std::string& b, CT ct) {
    if (ct == CT::kF32 && options_.exact_fma) {
      helpers_.insert(kFmaHelper);
      Line(acc + " = kiln_fma(" + a + ", " + b + ", " + acc + ");");
    } else if (ct == CT::kF32) {
      Line(acc + " = fma(" + a + ", " + b + ", " + acc + ");");
    } else {
      Line(acc + " += " + a + " * " + b + ";");
    }
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

  CT CTOf(Value* v) { return ComputeType(v->type().dtype); }
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
  void EmitReduceGroupMain(Operation* reduce, uint32_t wx, uint32_t wy);
  void EmitSoftmaxRowsMain(Operation* softmax, int lanes, uint32_t wx, uint32_t wy);
  void EmitConvTiledMain(Operation* conv, int64_t TO, int64_t TW, uint32_t wx, uint32_t wy);
  void EmitMatmulTiledMain(Operation* matmul, int64_t TM, int64_t TN, uint32_t wx, uint32_t wy);
  void EmitMatmulSplitKMain(Operation* matmul, uint32_t wx, uint32_t wy);
  // Workgroup-wide combine of each lane's `acc` through `sh`; afterwards
  // every lane holds the result in `acc`.
  void EmitSharedReduce(const std::string& acc, char combine, bool reuse_after);
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

  std::string body_;
  int indent_ = 1;
  int counter_ = 0;
  std::vector<std::map<std::string, std::string>> cache_;
  std::set<std::string> helpers_;
  std::string globals_;  // const arrays
  std::map<Operation*, std::string> const_arrays_;
  std::string schedule_comment_;
  bool uses_ctrl_attr_ = false;
  bool uses_shared_ = false;
  CT shared_ct_ = CT::kF32;
  Status status_;
};

std::string Generator::Eval(Value* v, const Idx& idx) {
  if (!status_.ok()) return "0";
  std::string key = Key(v, idx);
  for (auto it = cache_.rbegin(); it != cache_.rend(); ++it) {
    auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  std::string r;
  Operation* op = v->defining_op();
  if (!op) {
    r = EvalArg(v, idx);
  } else {
    const std::string& n = op->name();
    if (n == "tensor.constant") r = EvalConstant(op, idx);
    else if (ir::IsElementwiseOp(n)) r = EvalElementwise(op, idx);
    else if (n == "tensor.conv2d") r = EvalConv(op, idx);
    else if (n == "tensor.conv_transpose") r = EvalConvTranspose(op, idx);
    else if (n == "tensor.matmul") r = EvalMatmul(op, idx);
    else if (n == "tensor.pool2d") r = EvalPool(op, idx);
    else if (n == "tensor.reduce") r = EvalReduce(op, idx);
    else if (n == "tensor.softmax") r = EvalSoftmax(op, idx);
    else if (n == "tensor.transpose") r = EvalTranspose(op, idx);
    else if (n == "tensor.slice") r = EvalSlice(op, idx);
    else if (n == "tensor.concat") r = EvalConcat(op, idx);
    else if (n == "tensor.pad") r = EvalPad(op, idx);
    else if (n == "tensor.gather") r = EvalGather(op, idx);
    else if (n == "tensor.resize") r = EvalResize(op, idx);
    else if (n == "tensor.expand") r = Eval(op->operand(0), BroadcastIdx(idx, ShapeOf(op->result()), ShapeOf(op->operand(0))));
    else if (n == "tensor.reshape") r = EvalReshape(op, idx);
    else {
      Fail(Unsupported(op));
      return "0";
    }
  }
  if (!status_.ok()) return "0";
  cache_.back()[key] = r;
  return r;
}

std::string Generator::EvalArg(Value* v, const Idx& idx) {
  auto it = arg_binding_.find(v);
  if (it == arg_binding_.end()) {
    Fail(InternalError("codegen: value is neither a dispatch argument nor an op result"));
    return "0";
  }
  DType dt = v->type().dtype;
  std::string e = "in" + std::to_string(it->second) + "[" + Offset(idx, ShapeOf(v)) + "]";
  switch (dt) {
    case DType::kI8: e = "int(" + e + ")"; break;
    case DType::kU8: e = "uint(" + e + ")"; break;
    case DType::kBool: e = "(uint(" + e + ") != 0u)"; break;
    default: break;
  }
  return Decl(CTOf(v), e);
}

std::string Generator::EvalConstant(Operation* op, const Idx& idx) {
  const ir::DenseElements* d = op->dense_attr("value");
  CT ct = CTOf(op->result());
  if (!d || !d->data) {
    Fail(Unsupported(op, "no dense value"));
    return "0";
  }
  int64_t n = d->type.num_elements();
  auto lit = [&](int64_t i) {
    if (ct == CT::kF32) return Literal(ct, d->GetDouble(i));
    return IntLiteral(ct == CT::kBool ? CT::kI32 : ct, d->GetInt(i));
  };
  auto as_ct = [&](const std::string& s) {
    return ct == CT::kBool ? "(" + s + " != 0)" : s;
  };
  if (n == 1) return as_ct(lit(0));
  // A splat stays a literal.
  bool splat = true;
  for (int64_t i = 1; i < n && splat; ++i) splat = d->GetDouble(i) == d->GetDouble(0);
  if (splat) return as_ct(lit(0));
  if (n > kMaxInlineConstant) {
    Fail(Unsupported(op, "constant of " + std::to_string(n) + " elements inside a dispatch"));
    return "0";
  }
  auto it = const_arrays_.find(op);
  std::string name;
  if (it != const_arrays_.end()) {
    name = it->second;
  } else {
    name = "kConst" + std::to_string(const_arrays_.size());
    const char* elem = ct == CT::kBool ? "int" : CTName(ct);
    std::string s = "const " + std::string(elem) + " " + name + "[" + std::to_string(n) + "] = " +
                    elem + "[" + std::to_string(n) + "](";
    for (int64_t i = 0; i < n; ++i) s += (i ? ", " : "") + lit(i);
    globals_ += s + ");  // " + Comment(op) + "\n";
    const_arrays_[op] = name;
  }
  return Decl(ct, as_ct(name + "[" + Offset(idx, ShapeOf(op->result())) + "]"));
}

std::string Generator::EvalElementwise(Operation* op, const Idx& idx) {
  const std::string& name = op->name();
  const Shape& os = ShapeOf(op->result());
  CT rct = CTOf(op->result());
  std::vector<std::string> a;
  std::vector<CT> act;
  for (Value* v : op->operands()) {
    a.push_back(Eval(v, BroadcastIdx(idx, os, ShapeOf(v))));
    act.push_back(CTOf(v));
  }
  if (!status_.ok()) return "0";
  auto A = [&](size_t i) { return Convert(a[i], act[i], rct); };
  std::string k = name.substr(std::strlen("tensor."));
  bool f = rct == CT::kF32;
  std::string e;
  std::string zero = Literal(rct, 0), one = Literal(rct, 1);
  if (k == "neg") e = "(-" + A(0) + ")";
  else if (k == "abs") e = rct == CT::kU32 ? A(0) : "abs(" + A(0) + ")";
  else if (k == "relu") e = "max(" + A(0) + ", " + zero + ")";
  else if (k == "sigmoid") e = "(1.0 / (1.0 + exp(-" + A(0) + ")))";
  else if (k == "tanh") e = "tanh(clamp(" + A(0) + ", -15.0, 15.0))";
  else if (k == "exp" || k == "log" || k == "sqrt" || k == "floor" || k == "ceil" ||
           k == "sin" || k == "cos") e = k + "(" + A(0) + ")";
  else if (k == "round") e = "roundEven(" + A(0) + ")";
  else if (k == "reciprocal") e = "(1.0 / " + A(0) + ")";
  else if (k == "erf") {
    helpers_.insert(kErfHelper);
    e = "kiln_erf(" + A(0) + ")";
  } else if (k == "not") e = "(!" + A(0) + ")";
  else if (k == "cast") e = Convert(a[0], act[0], rct);
  else if (k == "leaky_relu") {
    std::string x = A(0);
    e = "(" + x + " < 0.0 ? " + x + " * " + FloatLit(op->float_attr("alpha", 0.01)) + " : " + x + ")";
  } else if (k == "hard_sigmoid") {
    e = "clamp(" + FloatLit(op->float_attr("alpha", 0.2)) + " * " + A(0) + " + " +
        FloatLit(op->float_attr("beta", 0.5)) + ", 0.0, 1.0)";
  } else if (k == "hard_swish") {
    std::string x = A(0);
    e = "(" + x + " * clamp(" + x + " * " + FloatLit(1.0 / 6.0) + " + 0.5, 0.0, 1.0))";
  } else if (k == "elu") {
    helpers_.insert(kExpm1Helper);
    std::string x = A(0);
    e = "(" + x + " > 0.0 ? " + x + " : " + FloatLit(op->float_attr("alpha", 1.0)) +
        " * kiln_expm1(" + x + "))";
  } else if (k == "softplus") {
    helpers_.insert(kLog1pHelper);
    std::string x = A(0);
    e = "(max(" + x + ", 0.0) + kiln_log1p(exp(-abs(" + x + "))))";
  } else if (k == "clamp") {
    e = A(0);
    if (op->has_attr("min")) e = "max(" + e + ", " + Literal(rct, op->float_attr("min")) + ")";
    if (op->has_attr("max")) e = "min(" + e + ", " + Literal(rct, op->float_attr("max")) + ")";
  } else if (k == "add") e = "(" + A(0) + " + " + A(1) + ")";
  else if (k == "sub") e = "(" + A(0) + " - " + A(1) + ")";
  else if (k == "mul") e = "(" + A(0) + " * " + A(1) + ")";
  else if (k == "div") e = "(" + A(0) + " / " + A(1) + ")";
  else if (k == "max") e = "max(" + A(0) + ", " + A(1) + ")";
  else if (k == "min") e = "min(" + A(0) + ", " + A(1) + ")";
  else if (k == "pow") {
    helpers_.insert(kPowHelper);
    std::string p = "kiln_pow(" + Convert(a[0], act[0], CT::kF32) + ", " +
                    Convert(a[1], act[1], CT::kF32) + ")";
    e = f ? p : std::string(CTName(rct)) + "(roundEven(" + p + "))";
  } else if (k == "mod") {
    bool fmod = op->int_attr("fmod", 0) != 0;
    std::string x = A(0), y = A(1);
    if (f) {
      // fmod=1: C fmod (sign of the dividend); fmod=0: sign of the divisor.
      e = fmod ? "(" + x + " - " + y + " * trunc(" + x + " / " + y + "))"
               : "(" + x + " - " + y + " * floor(" + x + " / " + y + "))";
    } else {
      std::string r = Decl(rct, "(" + x + " - " + y + " * (" + x + " / " + y + "))");
      if (fmod || rct == CT::kU32) e = r;
      else e = "((" + r + " != " + zero + " && ((" + r + " < " + zero + ") != (" + y + " < " +
               zero + "))) ? " + r + " + " + y + " : " + r + ")";
    }
  } else if (k == "equal" || k == "greater" || k == "less" || k == "greater_equal" ||
             k == "less_equal") {
    CT ct = act[0] == CT::kF32 || act[1] == CT::kF32 ? CT::kF32 : act[0];
    const char* opr = k == "equal" ? "==" : k == "greater" ? ">" : k == "less" ? "<"
                    : k == "greater_equal" ? ">=" : "<=";
    e = "(" + Convert(a[0], act[0], ct) + " " + opr + " " + Convert(a[1], act[1], ct) + ")";
  } else if (k == "and") e = "(" + A(0) + " && " + A(1) + ")";
  else if (k == "or") e = "(" + A(0) + " || " + A(1) + ")";
  else if (k == "xor") e = "(" + A(0) + " ^^ " + A(1) + ")";
  else if (k == "select") {
    e = "(" + Convert(a[0], act[0], CT::kBool) + " ? " + A(1) + " : " + A(2) + ")";
  } else {
    Fail(Unsupported(op));
    return "0";
  }
  (void)one;
  return Decl(rct, e, Comment(op));
}

std::string Generator::EvalConv(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  Value* w = op->operand(1);
  Value* b = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const Shape& xs = ShapeOf(x);
  const Shape& ws = ShapeOf(w);
  const Shape& os = ShapeOf(op->result());
  std::vector<int64_t> st = op->ints_attr("strides"), pads = op->ints_attr("pads"),
                       dil = op->ints_attr("dilations");
  if (st.size() != 2) st = {1, 1};
  if (pads.size() != 4) pads = {0, 0, 0, 0};
  if (dil.size() != 2) dil = {1, 1};
  int64_t group = op->int_attr("group", 1);
  const int64_t C = xs[1], H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = os[2], OW = os[3];
  if (group < 1 || C != Cg * group || O % group != 0) {
    Fail(Unsupported(op, "inconsistent conv2d shapes"));
    return "0";
  }
  const int64_t Og = O / group;
  const std::string &n = idx.d[0], &o = idx.d[1], &oh = idx.d[2], &ow = idx.d[3];
  std::string acc = Fresh("acc");
  Line("float " + acc + " = 0.0;  // " + Comment(op) + " strides=" + ShapeStr(st) +
       " pads=" + ShapeStr(pads) + " dilations=" + ShapeStr(dil) + " group=" +
       std::to_string(group));
  Open("");
  std::string cbase = group == 1 ? "0" : DeclI(MulC(DivC(o, Og), Cg), "cb");
  std::string ih0 = DeclI(AddC(MulC(oh, st[0]), -pads[0]), "ih");
  std::string iw0 = DeclI(AddC(MulC(ow, st[1]), -pads[1]), "iw");
  bool check_h = pads[0] > 0 || (OH - 1) * st[0] - pads[0] + (KH - 1) * dil[0] >= H;
  bool check_w = pads[1] > 0 || (OW - 1) * st[1] - pads[1] + (KW - 1) * dil[1] >= W;
  int opened = 0;
  std::string ic = OpenLoop(Cg, "ic", false, &opened);
  std::string c = DeclI(AddE(cbase, ic), "c");
  std::string kh = OpenLoop(KH, "kh", true, &opened);
  std::string ih = DeclI(AddE(ih0, MulC(kh, dil[0])), "ih");
  if (check_h) {
    Open("if (" + InRange(ih, H) + ")");
    ++opened;
  }
  std::string kw = OpenLoop(KW, "kw", true, &opened);
  std::string iw = DeclI(AddE(iw0, MulC(kw, dil[1])), "iw");
  if (check_w) {
    Open("if (" + InRange(iw, W) + ")");
    ++opened;
  }
  std::string xv = Eval(x, Idx{{n, c, ih, iw}, "", {}});
  std::string wv = Eval(w, Idx{{o, ic, kh, kw}, "", {}});
  Mac(acc, xv, wv, CT::kF32);
  CloseN(opened);
  Close();
  // The bias is added to the finished sum, as CPU references do (a GEMM,
  // then bias + activation).
  if (b) Line(acc + " += " + Eval(b, Idx{{o}, "", {}}) + ";");
  return acc;
}

std::string Generator::EvalConvTranspose(Operation* op, const Idx& idx) {
  ir::ConvTransposeParams p;
  std::string error;
  if (!ir::GetConvTransposeParams(*op, &p, &error)) {
    Fail(Unsupported(op, error));
    return "0";
  }
  // The generator's statement services, for the emitter in its own file.
  struct Services : ConvTransposeEmitter {
    Generator* g;
    Operation* op;
    void Line(const std::string& s) override { g->Line(s); }
    void Open(const std::string& head) override { g->Open(head); }
    void Close() override { g->Close(); }
    std::string Fresh(const char* prefix) override { return g->Fresh(prefix); }
    std::string Operand(unsigned i, const std::vector<std::string>& idx) override {
      Value* v = op->operand(i);
      return Convert(g->Eval(v, Idx{idx, "", {}}), g->CTOf(v), CT::kF32);
    }
    void Mac(const std::string& acc, const std::string& a, const std::string& b) override {
      g->Mac(acc, a, b, CT::kF32);
    }
  } services;
  services.g = this;
  services.op = op;
  return EmitConvTransposeElement(*op, p, idx.d, services);
}

std::string Generator::EvalMatmul(Operation* op, const Idx& idx) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  if (as.size() < 2 || bs.size() < 2 || os.size() < 2) {
    Fail(Unsupported(op, "matmul operands must have rank >= 2"));
    return "0";
  }
  size_t r = os.size();
  int64_t K = as[as.size() - 1];
  CT ct = CTOf(op->result());
  std::string acc = Fresh("acc");
  Line(std::string(CTName(ct)) + " " + acc + " = " + Literal(ct, 0) + ";  // " + Comment(op) +
       " K=" + std::to_string(K));
  auto batch = [&](const Shape& s, Idx* out) {
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t d = 0; d < br; ++d) out->d.push_back(s[d] == 1 ? "0" : idx.d[off + d]);
  };
  int opened = 0;
  Open("");
  std::string k = OpenLoop(K, "k", K <= 8, &opened);
  Idx ai, bi;
  batch(as, &ai);
  ai.d.push_back(idx.d[r - 2]);
  ai.d.push_back(k);
  batch(bs, &bi);
  bi.d.push_back(k);
  bi.d.push_back(idx.d[r - 1]);
  std::string av = Convert(Eval(a, ai), CTOf(a), ct);
  std::string bv = Convert(Eval(b, bi), CTOf(b), ct);
  Mac(acc, av, bv, ct);
  CloseN(opened);
  Close();
  return acc;
}

std::string Generator::EvalPool(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  std::string kind = op->str_attr("kind", "max");
  std::vector<int64_t> ker = op->ints_attr("kernel"), st = op->ints_attr("strides"),
                       pads = op->ints_attr("pads"), dil = op->ints_attr("dilations");
  if (ker.size() != 2) {
    Fail(Unsupported(op, "pool2d needs a 2-D kernel"));
    return "0";
  }
  if (st.size() != 2) st = {1, 1};
  if (pads.size() != 4) pads = {0, 0, 0, 0};
  if (dil.size() != 2) dil = {1, 1};
  bool cip = op->bool_attr("count_include_pad", false);
  bool is_max = kind == "max";
  if (!is_max && kind != "avg") {
    Fail(Unsupported(op, "pool kind '" + kind + "'"));
    return "0";
  }
  const int64_t H = xs[2], W = xs[3];
  std::string acc = Fresh("acc");
  std::string cnt = Fresh("cnt");
  Line("float " + acc + " = " + (is_max ? Lowest(CT::kF32) : "0.0") + ";  // " + Comment(op) +
       " " + kind + " kernel=" + ShapeStr(ker) + " strides=" + ShapeStr(st) + " pads=" +
       ShapeStr(pads) + " dilations=" + ShapeStr(dil) +
       (is_max ? "" : cip ? " count_include_pad" : " exclude_pad"));
  Open("");
  if (!is_max) Line("float " + cnt + " = 0.0;");
  std::string ih0 = DeclI(AddC(MulC(idx.d[2], st[0]), -pads[0]), "ih");
  std::string iw0 = DeclI(AddC(MulC(idx.d[3], st[1]), -pads[1]), "iw");
  int opened = 0;
  std::string kh = OpenLoop(ker[0], "kh", true, &opened);
  std::string ih = DeclI(AddE(ih0, MulC(kh, dil[0])), "ih");
  std::string kw = OpenLoop(ker[1], "kw", true, &opened);
  std::string iw = DeclI(AddE(iw0, MulC(kw, dil[1])), "iw");
  std::string inside = "(" + InRange(ih, H) + " && " + InRange(iw, W) + ")";
  if (!is_max) {
    if (cip) {
      Line("if (" + ih + " >= " + I(-pads[0]) + " && " + ih + " < " + I(H + pads[2]) + " && " +
           iw + " >= " + I(-pads[1]) + " && " + iw + " < " + I(W + pads[3]) + ") " + cnt +
           " += 1.0;");
    } else {
      Line("if " + inside + " " + cnt + " += 1.0;");
    }
  }
  Open("if " + inside);
  std::string v = Eval(x, Idx{{idx.d[0], idx.d[1], ih, iw}, "", {}});
  Line(acc + " = " + (is_max ? "max(" + acc + ", " + v + ")" : acc + " + " + v) + ";");
  Close();
  CloseN(opened);
  if (!is_max) Line(acc + " = " + cnt + " > 0.0 ? " + acc + " / " + cnt + " : 0.0;");
  Close();
  return acc;
}

std::vector<int64_t> Generator::ReduceAxes(Operation* op) {
  std::vector<int64_t> axes = op->ints_attr("axes");
  int64_t rank = static_cast<int64_t>(ShapeOf(op->operand(0)).size());
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  for (auto& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

Idx Generator::ReduceInputIdx(Operation* op, const Idx& out, const std::vector<std::string>& red) {
  const Shape& xs = ShapeOf(op->operand(0));
  std::vector<int64_t> axes = ReduceAxes(op);
  // keepdims is implied by the result rank (the attribute may be absent).
  bool keep = ShapeOf(op->result()).size() == xs.size();
  Idx r;
  size_t ai = 0, oi = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (ai < axes.size() && axes[ai] == static_cast<int64_t>(d)) {
      r.d.push_back(red[ai++]);
      if (keep) ++oi;
    } else {
      r.d.push_back(out.d[oi++]);
    }
  }
  return r;
}

std::vector<Generator::ReducePass> Generator::ReducePasses(const std::string& kind, CT ct,
                                                           const std::vector<std::string>& prev) {
  auto id = [](const std::string& v) { return v; };
  auto sq = [](const std::string& v) { return "(" + v + " * " + v + ")"; };
  std::string zero = Literal(ct, 0);
  if (kind == "sum" || kind == "mean") return {{zero, id, '+'}};
  if (kind == "sum_square" || kind == "l2") return {{zero, sq, '+'}};
  if (kind == "prod") return {{Literal(ct, 1), id, '*'}};
  if (kind == "max") return {{Lowest(ct), id, 'M'}};
  if (kind == "min") return {{Highest(ct), id, 'm'}};
  if (kind == "log_sum_exp") {
    std::vector<ReducePass> p = {{Lowest(ct), id, 'M'}};
    if (!prev.empty()) {
      std::string m = prev[0];
      p.push_back({zero, [m](const std::string& v) { return "exp(" + v + " - " + m + ")"; }, '+'});
    } else {
      p.push_back({zero, id, '+'});  // placeholder; map filled once the max is known
    }
    return p;
  }
  return {};
}

std::string Generator::ReduceFinal(const std::string& kind, CT ct,
                                   const std::vector<std::string>& acc, int64_t count) {
  if (kind == "mean") {
    if (ct == CT::kF32) return "(" + acc[0] + " / " + FloatLit(static_cast<double>(count)) + ")";
    return "(" + acc[0] + " / " + IntLiteral(ct, count) + ")";
  }
  if (kind == "l2") return "sqrt(" + acc[0] + ")";
  if (kind == "log_sum_exp") return "(" + acc[0] + " + log(" + acc[1] + "))";
  return acc[0];
}

std::string Generator::EvalReduce(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  std::vector<int64_t> axes = ReduceAxes(op);
  std::string kind = op->str_attr("kind", "sum");
  CT ct = CTOf(op->result());
  int64_t count = 1;
  for (int64_t a : axes) count *= xs[a];
  if (ct != CT::kF32 && (kind == "l2" || kind == "log_sum_exp")) {
    Fail(Unsupported(op, "reduce " + kind + " on integers"));
    return "0";
  }
  std::vector<std::string> accs;
  Line("// " + Comment(op) + " " + kind + " axes=" + ShapeStr(axes) + " over " +
       std::to_string(count) + " elements");
  size_t npasses = ReducePasses(kind, ct, {}).size();
  for (size_t p = 0; p < npasses; ++p) {
    ReducePass pass = ReducePasses(kind, ct, accs)[p];
    std::string acc = Fresh("acc");
    Line(std::string(CTName(ct)) + " " + acc + " = " + pass.init + ";");
    int opened = 0;
    Open("");
    std::vector<std::string> red;
    for (int64_t a : axes) red.push_back(OpenLoop(xs[a], "r", false, &opened));
    std::string v = Convert(Eval(x, ReduceInputIdx(op, idx, red)), CTOf(x), ct);
    Line(acc + " = " + Combine(pass.combine, acc, pass.map(v)) + ";");
    CloseN(opened);
    Close();
    accs.push_back(acc);
  }
  return Decl(ct, ReduceFinal(kind, ct, accs, count));
}

std::string Generator::EvalSoftmax(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  int64_t axis = op->int_attr("axis", static_cast<int64_t>(xs.size()) - 1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  bool log = op->bool_attr("log", false);
  int64_t S = xs[axis];
  std::string m = Fresh("mx"), s = Fresh("sum");
  Line("// " + Comment(op) + (log ? " (log)" : "") + " axis=" + std::to_string(axis) +
       " extent=" + std::to_string(S));
  Line("float " + m + " = " + Lowest(CT::kF32) + ";");
  Line("float " + s + " = 0.0;");
  for (int pass = 0; pass < 2; ++pass) {
    int opened = 0;
    Open("");
    std::string j = OpenLoop(S, "j", false, &opened);
    Idx ri = idx;
    ri.flat.clear();
    ri.d[axis] = j;
    std::string v = Eval(x, ri);
    if (pass == 0) Line(m + " = max(" + m + ", " + v + ");");
    else Line(s + " += exp(" + v + " - " + m + ");");
    CloseN(opened);
    Close();
  }
  std::string v = Eval(x, idx);
  return Decl(CT::kF32, log ? "(" + v + " - " + m + " - log(" + s + "))"
                            : "(exp(" + v + " - " + m + ") / " + s + ")", Comment(op));
}

std::string Generator::EvalTranspose(Operation* op, const Idx& idx) {
  std::vector<int64_t> perm = op->ints_attr("perm");
  size_t r = idx.d.size();
  if (perm.empty())
    for (size_t d = 0; d < r; ++d) perm.push_back(static_cast<int64_t>(r - 1 - d));
  if (perm.size() != r) {
    Fail(Unsupported(op, "perm rank mismatch"));
    return "0";
  }
  Idx in;
  in.d.assign(r, "0");
  for (size_t d = 0; d < r; ++d) in.d[perm[d]] = idx.d[d];
  return Eval(op->operand(0), in);
}

std::string Generator::EvalSlice(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  std::vector<int64_t> starts = op->ints_attr("starts"), steps = op->ints_attr("strides");
  size_t r = idx.d.size();
  if (starts.size() != r) starts.assign(r, 0);
  if (steps.size() != r) steps.assign(r, 1);
  bool identity = ShapeOf(x) == ShapeOf(op->result());
  Idx in;
  for (size_t d = 0; d < r; ++d) {
    identity &= starts[d] == 0 && steps[d] == 1;
    in.d.push_back(DeclI(AddC(MulC(idx.d[d], steps[d]), starts[d]), "s"));
  }
  if (identity) return Eval(x, idx);
  return Eval(x, in);
}

std::string Generator::EvalConcat(Operation* op, const Idx& idx) {
  int64_t r = static_cast<int64_t>(idx.d.size());
  int64_t axis = op->int_attr("axis", 0);
  if (axis < 0) axis += r;
  CT ct = CTOf(op->result());
  std::string t = Fresh("t");
  Line(std::string(CTName(ct)) + " " + t + ";  // " + Comment(op) + " axis=" +
       std::to_string(axis));
  int64_t off = 0;
  std::vector<Value*> parts;
  for (Value* v : op->operands())
    if (ShapeOf(v)[axis] > 0) parts.push_back(v);
  for (size_t k = 0; k < parts.size(); ++k) {
    Value* v = parts[k];
    int64_t size = ShapeOf(v)[axis];
    std::string head = k == 0 ? "if (" + idx.d[axis] + " < " + I(off + size) + ")"
                     : k + 1 == parts.size() ? "else"
                                             : "else if (" + idx.d[axis] + " < " + I(off + size) + ")";
    if (parts.size() == 1) head = "";
    Open(head);
    Idx in = idx;
    in.flat.clear();
    in.d[axis] = DeclI(AddC(idx.d[axis], -off), "i");
    Line(t + " = " + Convert(Eval(v, in), CTOf(v), ct) + ";");
    Close();
    off += size;
  }
  return t;
}

std::string Generator::EvalPad(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  size_t r = xs.size();
  std::vector<int64_t> pads = op->ints_attr("pads");
  if (pads.size() != 2 * r) pads.assign(2 * r, 0);
  std::string mode = op->str_attr("mode", "constant");
  CT ct = CTOf(op->result());
  if (mode != "constant" && mode != "reflect" && mode != "edge") {
    Fail(Unsupported(op, "pad mode '" + mode + "'"));
    return "0";
  }
  Line("// " + Comment(op) + " " + mode + " pads=" + ShapeStr(pads));
  Idx in;
  std::vector<std::string> conds;
  for (size_t d = 0; d < r; ++d) {
    int64_t b = pads[d], e = pads[r + d], n = xs[d];
    std::string s = DeclI(AddC(idx.d[d], -b), "p");
    if (b <= 0 && e <= 0) {  // pure crop: always in range
      in.d.push_back(s);
      continue;
    }
    if (mode == "constant") {
      conds.push_back(InRange(s, n));
    } else if (mode == "edge" || n == 1) {
      s = DeclI("clamp(" + s + ", 0, " + I(n - 1) + ")", "p");
    } else {  // reflect (pads < n): one reflection about each edge
      s = DeclI(I(n - 1) + " - abs(" + I(n - 1) + " - abs(" + s + "))", "p");
    }
    in.d.push_back(s);
  }
  if (conds.empty()) return Eval(x, in);
  std::string t = Fresh("t");
  Line(std::string(CTName(ct)) + " " + t + " = " + Literal(ct, op->float_attr("value", 0)) + ";");
  std::string c;
  for (const auto& s : conds) c += (c.empty() ? "" : " && ") + s;
  Open("if (" + c + ")");
  Line(t + " = " + Eval(x, in) + ";");
  Close();
  return t;
}

std::string Generator::EvalGather(Operation* op, const Idx& idx) {
  Value* data = op->operand(0);
  Value* ind = op->operand(1);
  const Shape& ds = ShapeOf(data);
  int64_t r = static_cast<int64_t>(ds.size());
  int64_t q = static_cast<int64_t>(ShapeOf(ind).size());
  int64_t axis = op->int_attr("axis", 0);
  if (axis < 0) axis += r;
  Idx ii;
  for (int64_t d = 0; d < q; ++d) ii.d.push_back(idx.d[axis + d]);
  std::string iv = Eval(ind, ii);
  std::string g = Fresh("g");
  int64_t n = ds[axis];
  // Negative indices count from the end; out-of-range indices are clamped so
  // a bad index can never read outside the binding.
  Line("int " + g + " = int(" + iv + ");  // " + Comment(op) + " axis=" + std::to_string(axis));
  Line(g + " = clamp(" + g + " < 0 ? " + g + " + " + I(n) + " : " + g + ", 0, " + I(n - 1) + ");");
  Idx di;
  for (int64_t d = 0; d < axis; ++d) di.d.push_back(idx.d[d]);
  di.d.push_back(g);
  for (int64_t d = axis + 1; d < r; ++d) di.d.push_back(idx.d[d + q - 1]);
  return Eval(data, di);
}

std::string Generator::EvalResize(Operation* op, const Idx& idx) {
  ResizeEmitter e;
  e.line = [this](const std::string& s) { Line(s); };
  e.open = [this](const std::string& h) { Open(h); };
  e.close = [this] { Close(); };
  e.fresh = [this](const char* p) { return Fresh(p); };
  e.eval = [this](Value* v, const std::vector<std::string>& d) { return Eval(v, Idx{d, "", {}}); };
  e.type_name = [this](Value* v) { return std::string(CTName(CTOf(v))); };
  uses_ctrl_attr_ = true;  // the tap loops may be [[unroll]]
  return EmitResizeElement(op, idx.d, e);
}

std::string Generator::EvalReshape(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& os = ShapeOf(op->result());
  std::string flat = DeclI(Offset(idx, os), "f");
  Idx in;
  in.d = Decompose("uint(" + flat + ")", ShapeOf(x));
  in.flat = flat;
  in.flat_shape = ShapeOf(x);
  return Eval(x, in);
}

// ---------------------------------------------------------------------------

Status Generator::CheckOps() {
  auto check_type = [&](Value* v, Operation* op) -> Status {
    const ir::Type& t = v->type();
    if (!t.is_tensor()) return Unsupported(op, "non-tensor value " + t.ToString());
    if (!SupportedDType(t.dtype)) return Unsupported(op, std::string("dtype ") + DTypeName(t.dtype));
    for (int64_t d : t.shape)
      if (d < 0) return Unsupported(op, "dynamic shape " + t.ToString());
    return OkStatus();
  };
  for (auto& owned : block_->ops()) {
    Operation* op = owned.get();
    const std::string& n = op->name();
    if (op == block_->terminator()) continue;
    if (op->num_regions() != 0 || op->num_results() != 1) return Unsupported(op);
    if (!ir::IsElementwiseOp(n) && !AnchorOps().count(n) && n != "tensor.reshape" &&
        n != "tensor.constant")
      return Unsupported(op);
    KILN_RETURN_IF_ERROR(check_type(op->result(), op));
    for (Value* v : op->operands()) KILN_RETURN_IF_ERROR(check_type(v, op));
    DType dt = op->result()->type().dtype;
    if (FloatOnlyOps().count(n) && dt != DType::kF32)
      return Unsupported(op, std::string("dtype ") + DTypeName(dt));
    if ((n == "tensor.conv2d" || n == "tensor.pool2d" || n == "tensor.softmax" ||
         n == "tensor.conv_transpose") &&
        dt != DType::kF32)
      return Unsupported(op, std::string("dtype ") + DTypeName(dt));
    if ((n == "tensor.conv2d" || n == "tensor.pool2d") &&
        (op->operand(0)->type().rank() != 4 || op->result()->type().rank() != 4 ||
         (n == "tensor.conv2d" && op->operand(1)->type().rank() != 4)))
      return Unsupported(op, "expects NCHW rank-4 tensors");
    if (n == "tensor.reduce") {
      std::string k = op->str_attr("kind", "sum");
      static const std::set<std::string> kinds = {"sum", "mean", "max", "min", "prod",
                                                  "sum_square", "l2", "log_sum_exp"};
      if (!kinds.count(k)) return Unsupported(op, "reduce kind '" + k + "'");
    }
    if (n == "tensor.gather" && ComputeType(op->operand(1)->type().dtype) == CT::kF32)
      return Unsupported(op, "float indices");
    if (n == "tensor.resize") {
      Status s = CheckResize(op);
      if (!s.ok()) return Unsupported(op, s.message());
    }
  }
  for (Value* a : block_->arguments()) KILN_RETURN_IF_ERROR(check_type(a, dispatch_));
  return OkStatus();
}

void Generator::StoreResults(const Idx& idx, const Shape& shape) {
  for (size_t k = 0; k < results_.size(); ++k) {
    Value* v = results_[k];
    if (ShapeOf(v) != shape) continue;
    std::string e = Eval(v, idx);
    DType dt = dispatch_->result(static_cast<unsigned>(k))->type().dtype;
    e = Convert(e, CTOf(v), ComputeType(dt));
    switch (dt) {
      case DType::kI8: e = "int8_t(" + e + ")"; break;
      case DType::kU8: e = "uint8_t(" + e + ")"; break;
      case DType::kBool: e = "uint8_t(" + e + " ? 1u : 0u)"; break;
      default: break;
    }
    Line("out" + std::to_string(k) + "[" + Offset(idx, shape) + "] = " + e + ";");
  }
}

Status Generator::Grid(uint64_t groups, uint32_t* wx, uint32_t* wy) {
  uint64_t maxc = std::max<uint32_t>(options_.max_workgroup_count, 1);
  if (groups == 0) groups = 1;
  if (groups <= maxc) {
    *wx = static_cast<uint32_t>(groups);
    *wy = 1;
    return OkStatus();
  }
  uint64_t y = (groups + maxc - 1) / maxc;
  if (y > maxc) return UnimplementedError("codegen: grid of %llu workgroups is too large",
                                          static_cast<unsigned long long>(groups));
  *wy = static_cast<uint32_t>(y);
  *wx = static_cast<uint32_t>((groups + y - 1) / y);
  return OkStatus();
}

void Generator::EmitPointwiseMain(uint32_t wx, uint32_t wy) {
  // Results grouped by shape, in order of first appearance.
  std::vector<Shape> shapes;
  for (Value* v : results_)
    if (std::find(shapes.begin(), shapes.end(), ShapeOf(v)) == shapes.end())
      shapes.push_back(ShapeOf(v));
  int64_t total = 0;
  for (const Shape& s : shapes) total = std::max(total, NumElements(s));
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(total) + "u) return;");
  for (const Shape& s : shapes) {
    bool guard = NumElements(s) < total;
    Open(guard ? "if (gid < " + std::to_string(NumElements(s)) + "u)" : "");
    // Decompose into a side buffer so unused indices can be dropped.
    std::string saved = std::move(body_);
    body_.clear();
    std::vector<std::string> d = Decompose("gid", s);
    std::string decomp = std::move(body_);
    body_.clear();
    Line("int gi = int(gid);");
    Idx idx{d, "gi", s};
    StoreResults(idx, s);
    std::string rest = std::move(body_);
    bool used = false;
    for (const auto& n : d)
      if (IsIdentifier(n) && UsesIdent(rest, n)) used = true;
    body_ = std::move(saved) + (used ? decomp : "") + rest;
    Close();
  }
}

void Generator::EmitReduceGroupMain(Operation* op, uint32_t wx, uint32_t wy) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  const Shape& os = ShapeOf(op->result());
  std::vector<int64_t> axes = ReduceAxes(op);
  std::string kind = op->str_attr("kind", "sum");
  CT ct = CTOf(op->result());
  int64_t count = 1;
  Shape red_shape;
  for (int64_t a : axes) {
    count *= xs[a];
    red_shape.push_back(xs[a]);
  }
  // Reduced axes form a suffix: the input offset is row * count + r.
  bool suffix = true;
  for (size_t i = 0; i < axes.size(); ++i)
    suffix &= axes[axes.size() - 1 - i] == static_cast<int64_t>(xs.size() - 1 - i);
  uses_shared_ = true;
  shared_ct_ = ct;
  Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
  Line("if (row >= " + std::to_string(NumElements(os)) + "u) return;  // uniform per workgroup");
  Line("uint lid = gl_LocalInvocationID.x;");
  Line("// " + Comment(op) + " " + kind + " axes=" + ShapeStr(axes) + " over " +
       std::to_string(count) + " elements: one workgroup per output element");
  std::vector<std::string> od = Decompose("row", os);
  Line("int gi = int(row);");
  Idx oidx{od, "gi", os};
  std::vector<std::string> accs;
  size_t npasses = ReducePasses(kind, ct, {}).size();
  for (size_t p = 0; p < npasses; ++p) {
    ReducePass pass = ReducePasses(kind, ct, accs)[p];
    std::string acc = Fresh("acc");
    Line(std::string(CTName(ct)) + " " + acc + " = " + pass.init + ";");
    std::string rv = Fresh("rr");
    Open("for (uint " + rv + " = lid; " + rv + " < " + std::to_string(count) + "u; " + rv +
         " += " + std::to_string(kWorkgroupSize) + "u)");
    std::vector<std::string> red = Decompose(rv, red_shape);
    Idx in = ReduceInputIdx(op, oidx, red);
    if (suffix) {
      in.flat = DeclI(AddE(MulC("gi", count), "int(" + rv + ")"), "f");
      in.flat_shape = xs;
    }
    std::string v = Convert(Eval(x, in), CTOf(x), ct);
    Line(acc + " = " + Combine(pass.combine, acc, pass.map(v)) + ";");
    Close();
    EmitSharedReduce(acc, pass.combine, p + 1 < npasses);
    accs.push_back(acc);
  }
  Open("if (lid == 0u)");
  std::string r = Decl(ct, ReduceFinal(kind, ct, accs, count), Comment(op));
  StoreAnchorElement(op, oidx, r, "");
  Close();
}

void Generator::EmitSoftmaxRowsMain(Operation* op, int lanes, uint32_t wx, uint32_t wy) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  int64_t axis = op->int_attr("axis", static_cast<int64_t>(xs.size()) - 1);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  bool log = op->bool_attr("log", false);
  int64_t S = xs[axis];
  Shape row_shape = xs;
  row_shape.erase(row_shape.begin() + axis);
  int64_t rows = NumElements(row_shape);
  if (lanes > 1) {
    uses_shared_ = true;
    shared_ct_ = CT::kF32;
    Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
    Line("if (row >= " + std::to_string(rows) + "u) return;  // uniform per workgroup");
    Line("uint lid = gl_LocalInvocationID.x;");
  } else {
    Line("uint row = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
         "u + gl_LocalInvocationID.x;");
    Line("if (row >= " + std::to_string(rows) + "u) return;");
  }
  Line("// " + Comment(op) + (log ? " (log)" : "") + " axis=" + std::to_string(axis) +
       " extent=" + std::to_string(S) + ": one " + (lanes > 1 ? "workgroup" : "invocation") +
       " per row");
  std::vector<std::string> rd = Decompose("row", row_shape);
  auto idx_at = [&](const std::string& j) {
    Idx i;
    i.d = rd;
    i.d.insert(i.d.begin() + axis, j);
    return i;
  };
  std::string start = lanes > 1 ? "lid" : "0u";
  std::string step = std::to_string(lanes) + "u";
  std::string m = Fresh("mx"), s = Fresh("sum");
  Line("float " + m + " = " + Lowest(CT::kF32) + ";");
  Line("float " + s + " = 0.0;");
  for (int pass = 0; pass < 2; ++pass) {
    std::string jv = Fresh("j");
    Open("for (uint " + jv + "u = " + start + "; " + jv + "u < " + std::to_string(S) + "u; " + jv +
         "u += " + step + ")");
    Line("int " + jv + " = int(" + jv + "u);");
    std::string v = Eval(x, idx_at(jv));
    if (pass == 0) Line(m + " = max(" + m + ", " + v + ");");
    else Line(s + " += exp(" + v + " - " + m + ");");
    Close();
    if (lanes > 1) EmitSharedReduce(pass == 0 ? m : s, pass == 0 ? 'M' : '+', true);
  }
  if (log) Line(s + " = log(" + s + ");");
  std::string jv = Fresh("j");
  Open("for (uint " + jv + "u = " + start + "; " + jv + "u < " + std::to_string(S) + "u; " + jv +
       "u += " + step + ")");
  Line("int " + jv + " = int(" + jv + "u);");
  Idx idx = idx_at(jv);
  std::string v = Eval(x, idx);
  std::string y = Decl(CT::kF32, log ? "(" + v + " - " + m + " - " + s + ")"
                                     : "(exp(" + v + " - " + m + ") / " + s + ")", Comment(op));
  StoreAnchorElement(op, idx, y, "");
  Close();
}

void Generator::EmitSharedReduce(const std::string& acc, char combine, bool reuse_after) {
  uses_shared_ = true;
  uses_ctrl_attr_ = true;
  Line("sh[lid] = " + acc + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Open("[[unroll]] for (uint s = " + std::to_string(kWorkgroupSize / 2) + "u; s > 0u; s >>= 1u)");
  Line("if (lid < s) sh[lid] = " + Combine(combine, "sh[lid]", "sh[lid + s]") + ";");
  Line("memoryBarrierShared();");
  Line("barrier();");
  Close();
  Line(acc + " = sh[0];");
  if (reuse_after) Line("barrier();  // everyone has read sh[0] before it is reused");
}

void Generator::StoreAnchorElement(Operation* anchor, const Idx& idx, const std::string& value,
                                   const std::string& guard) {
  Open(guard.empty() ? "" : "if (" + guard + ")");
  cache_.back()[Key(anchor->result(), idx)] = value;
  StoreResults(idx, ShapeOf(anchor->result()));
  Close();
}

void Generator::EmitConvTiledMain(Operation* op, int64_t TO, int64_t TW, uint32_t wx,
                                  uint32_t wy) {
  Value* x = op->operand(0);
  Value* w = op->operand(1);
  Value* b = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const Shape &xs = ShapeOf(x), &ws = ShapeOf(w), &os = ShapeOf(op->result());
  std::vector<int64_t> st = op->ints_attr("strides"), pads = op->ints_attr("pads"),
                       dil = op->ints_attr("dilations");
  if (st.size() != 2) st = {1, 1};
  if (pads.size() != 4) pads = {0, 0, 0, 0};
  if (dil.size() != 2) dil = {1, 1};
  const int64_t group = op->int_attr("group", 1);
  const int64_t H = xs[2], W = xs[3], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = os[2], OW = os[3], Og = O / group;
  const Shape ts = {os[0], O / TO, OH, (OW + TW - 1) / TW};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " strides=" + ShapeStr(st) + " pads=" + ShapeStr(pads) +
       " dilations=" + ShapeStr(dil) + " group=" + std::to_string(group) + ": each invocation computes " +
       std::to_string(TO) + " output channels x " + std::to_string(TW) + " columns");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], oh = t[2];
  const std::string o0 = DeclI(MulC(t[1], TO), "o"), ow0 = DeclI(MulC(t[3], TW), "ow");
  std::vector<std::vector<std::string>> acc(TO, std::vector<std::string>(TW));
  for (int64_t to = 0; to < TO; ++to)
    for (int64_t tw = 0; tw < TW; ++tw) {
      acc[to][tw] = Fresh("acc");
      Line("float " + acc[to][tw] + " = 0.0;");
    }
  Open("");
  const std::string cbase = group == 1 ? "0" : DeclI(MulC(DivC(o0, Og), Cg), "cb");
  const std::string ih0 = DeclI(AddC(MulC(oh, st[0]), -pads[0]), "ih");
  const std::string iw0 = DeclI(AddC(MulC(ow0, st[1]), -pads[1]), "iw");
  const bool check_h = pads[0] > 0 || (OH - 1) * st[0] - pads[0] + (KH - 1) * dil[0] >= H;
  const bool check_w = pads[1] > 0 || (ts[3] * TW - 1) * st[1] - pads[1] + (KW - 1) * dil[1] >= W;
  int opened = 0;
  const std::string ic = OpenLoop(Cg, "ic", false, &opened);
  const std::string c = DeclI(AddE(cbase, ic), "c");
  const std::string kh = OpenLoop(KH, "kh", true, &opened);
  const std::string ih = DeclI(AddE(ih0, MulC(kh, dil[0])), "ih");
  if (check_h) {
    Open("if (" + InRange(ih, H) + ")");
    ++opened;
  }
  // Input element at column `iw` of row `ih` (0 in the padding; the load
  // itself is clamped so it never leaves the binding).
  auto load_x = [&](const std::string& iw) {
    if (!check_w) return Eval(x, Idx{{n, c, ih, iw}, "", {}});
    std::string iwc = DeclI("clamp(" + iw + ", 0, " + I(W - 1) + ")", "iwc");
    std::string v = Eval(x, Idx{{n, c, ih, iwc}, "", {}});
    return Decl(CT::kF32, InRange(iw, W) + " ? " + v + " : 0.0");
  };
  const int64_t R = (TW - 1) * st[1] + (KW - 1) * dil[1] + 1;
  if (KW <= kMaxUnroll && R <= 32) {
    // One row of inputs serves every (kw, column) pair.
    std::vector<std::string> xr(R);
    for (int64_t r = 0; r < R; ++r) xr[r] = load_x(DeclI(AddC(iw0, r), "iw"));
    for (int64_t kw = 0; kw < KW; ++kw) {
      std::vector<std::string> wv(TO);
      for (int64_t to = 0; to < TO; ++to) wv[to] = Eval(w, Idx{{AddC(o0, to), ic, kh, I(kw)}, "", {}});
      for (int64_t to = 0; to < TO; ++to)
        for (int64_t tw = 0; tw < TW; ++tw)
          Mac(acc[to][tw], xr[tw * st[1] + kw * dil[1]], wv[to], CT::kF32);
    }
  } else {
    const std::string kw = OpenLoop(KW, "kw", false, &opened);
    std::vector<std::string> wv(TO);
    for (int64_t to = 0; to < TO; ++to) wv[to] = Eval(w, Idx{{AddC(o0, to), ic, kh, kw}, "", {}});
    for (int64_t tw = 0; tw < TW; ++tw) {
      std::string xv = load_x(DeclI(AddE(AddC(iw0, tw * st[1]), MulC(kw, dil[1])), "iw"));
      for (int64_t to = 0; to < TO; ++to) Mac(acc[to][tw], xv, wv[to], CT::kF32);
    }
  }
  CloseN(opened);
  Close();
  // The bias goes onto the finished sums (as in EvalConv).
  for (int64_t to = 0; to < TO && b; ++to) {
    std::string bias = Eval(b, Idx{{AddC(o0, to)}, "", {}});
    for (int64_t tw = 0; tw < TW; ++tw) Line(acc[to][tw] + " += " + bias + ";");
  }
  for (int64_t to = 0; to < TO; ++to)
    for (int64_t tw = 0; tw < TW; ++tw) {
      std::string ow = AddC(ow0, tw);
      std::string guard = OW % TW != 0 && tw > 0 ? ow + " < " + std::to_string(OW) : "";
      StoreAnchorElement(op, Idx{{n, AddC(o0, to), oh, ow}, "", {}}, acc[to][tw], guard);
    }
}

void Generator::EmitMatmulTiledMain(Operation* op, int64_t TM, int64_t TN, uint32_t wx,
                                    uint32_t wy) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  const size_t r = os.size();
  const int64_t M = os[r - 2], N = os[r - 1], K = as.back();
  CT ct = CTOf(op->result());
  Shape ts = os;
  ts[r - 2] = (M + TM - 1) / TM;
  ts[r - 1] = (N + TN - 1) / TN;
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " K=" + std::to_string(K) + ": each invocation computes a " +
       std::to_string(TM) + "x" + std::to_string(TN) + " tile");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string m0 = DeclI(MulC(t[r - 2], TM), "m"), n0 = DeclI(MulC(t[r - 1], TN), "n");
  std::vector<std::string> ms(TM), ns(TN);
  for (int64_t i = 0; i < TM; ++i)
    ms[i] = M % TM ? DeclI("min(" + AddC(m0, i) + ", " + I(M - 1) + ")", "m") : AddC(m0, i);
  for (int64_t j = 0; j < TN; ++j)
    ns[j] = N % TN ? DeclI("min(" + AddC(n0, j) + ", " + I(N - 1) + ")", "n") : AddC(n0, j);
  std::vector<std::vector<std::string>> acc(TM, std::vector<std::string>(TN));
  for (auto& row : acc)
    for (auto& e : row) {
      e = Fresh("acc");
      Line(std::string(CTName(ct)) + " " + e + " = " + Literal(ct, 0) + ";");
    }
  auto batch = [&](const Shape& s) {
    std::vector<std::string> d;
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t i = 0; i < br; ++i) d.push_back(s[i] == 1 ? "0" : t[off + i]);
    return d;
  };
  int opened = 0;
  Open("");
  const std::string k = OpenLoop(K, "k", K <= 8, &opened);
  std::vector<std::string> av(TM), bv(TN);
  for (int64_t i = 0; i < TM; ++i) {
    Idx ai{batch(as), "", {}};
    ai.d.push_back(ms[i]);
    ai.d.push_back(k);
    av[i] = Convert(Eval(a, ai), CTOf(a), ct);
  }
  for (int64_t j = 0; j < TN; ++j) {
    Idx bi{batch(bs), "", {}};
    bi.d.push_back(k);
    bi.d.push_back(ns[j]);
    bv[j] = Convert(Eval(b, bi), CTOf(b), ct);
  }
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) Mac(acc[i][j], av[i], bv[j], ct);
  CloseN(opened);
  Close();
  for (int64_t i = 0; i < TM; ++i)
    for (int64_t j = 0; j < TN; ++j) {
      Idx idx{std::vector<std::string>(t.begin(), t.end() - 2), "", {}};
      idx.d.push_back(AddC(m0, i));
      idx.d.push_back(AddC(n0, j));
      std::string guard;
      if (M % TM && i > 0) guard = idx.d[r - 2] + " < " + std::to_string(M);
      if (N % TN && j > 0)
        guard += (guard.empty() ? "" : " && ") + idx.d[r - 1] + " < " + std::to_string(N);
      StoreAnchorElement(op, idx, acc[i][j], guard);
    }
}

void Generator::EmitMatmulSplitKMain(Operation* op, uint32_t wx, uint32_t wy) {
  Value* a = op->operand(0);
  Value* b = op->operand(1);
  const Shape &as = ShapeOf(a), &bs = ShapeOf(b), &os = ShapeOf(op->result());
  const size_t r = os.size();
  const int64_t K = as.back();
  CT ct = CTOf(op->result());
  shared_ct_ = ct;
  Line("uint row = " + WorkgroupIndex(wx, wy) + ";");
  Line("if (row >= " + std::to_string(NumElements(os)) + "u) return;  // uniform per workgroup");
  Line("uint lid = gl_LocalInvocationID.x;");
  Line("// " + Comment(op) + " K=" + std::to_string(K) +
       ": one workgroup per output element, lanes split K");
  std::vector<std::string> od = Decompose("row", os);
  Line("int gi = int(row);");
  Idx oidx{od, "gi", os};
  auto batch = [&](const Shape& s) {
    std::vector<std::string> d;
    size_t br = s.size() - 2, off = (r - 2) - br;
    for (size_t i = 0; i < br; ++i) d.push_back(s[i] == 1 ? "0" : od[off + i]);
    return d;
  };
  std::string acc = Fresh("acc");
  Line(std::string(CTName(ct)) + " " + acc + " = " + Literal(ct, 0) + ";");
  std::string kk = Fresh("kk");
  Open("for (uint " + kk + " = lid; " + kk + " < " + std::to_string(K) + "u; " + kk + " += " +
       std::to_string(kWorkgroupSize) + "u)");
  std::string k = DeclI("int(" + kk + ")", "k");
  Idx ai{batch(as), "", {}}, bi{batch(bs), "", {}};
  ai.d.push_back(od[r - 2]);
  ai.d.push_back(k);
  bi.d.push_back(k);
  bi.d.push_back(od[r - 1]);
  std::string av = Convert(Eval(a, ai), CTOf(a), ct);
  std::string bv = Convert(Eval(b, bi), CTOf(b), ct);
  Mac(acc, av, bv, ct);
  Close();
  EmitSharedReduce(acc, '+', false);
  Open("if (lid == 0u)");
  StoreAnchorElement(op, oidx, acc, "");
  Close();
}

StatusOr<CompiledDispatch> Generator::Run() {
  if (!dispatch_ || !dispatch_->is("flow.dispatch") || dispatch_->num_regions() != 1 ||
      dispatch_->region(0)->num_blocks() != 1)
    return InvalidArgumentError("codegen: expected a flow.dispatch op with one single-block region");
  block_ = dispatch_->region(0)->block(0);
  Operation* term = block_->terminator();
  if (!term || !term->is("flow.return"))
    return InvalidArgumentError("codegen: dispatch region must end in flow.return");
  if (block_->num_arguments() != dispatch_->num_operands())
    return InvalidArgumentError("codegen: dispatch block arguments must mirror its operands");
  if (term->num_operands() != dispatch_->num_results() || term->num_operands() == 0)
    return InvalidArgumentError("codegen: flow.return operands must match the dispatch results");
  for (unsigned i = 0; i < block_->num_arguments(); ++i) arg_binding_[block_->argument(i)] = i;
  results_ = term->operands();
  KILN_RETURN_IF_ERROR(CheckOps());
  for (unsigned k = 0; k < dispatch_->num_results(); ++k) {
    const ir::Type& t = dispatch_->result(k)->type();
    if (!t.is_tensor() || !SupportedDType(t.dtype))
      return Unsupported(dispatch_, "result type " + t.ToString());
    if (t.shape != ShapeOf(results_[k]))
      return InvalidArgumentError("codegen: result %u shape differs from flow.return operand", k);
  }

  CompiledDispatch out;
  out.debug_name = dispatch_->str_attr("name", "dispatch");
  const unsigned N = dispatch_->num_operands(), R = dispatch_->num_results();
  out.binding_count = N + R;
  out.binding_readonly.assign(N, true);
  out.binding_readonly.resize(N + R, false);

  // ---- schedule ----
  std::vector<Operation*> anchors;
  for (auto& owned : block_->ops())
    if (AnchorOps().count(owned->name())) anchors.push_back(owned.get());
  // The anchor-specific schedules need one anchor whose shape every result
  // has (the epilogue then runs per anchor element).
  Operation* anchor = anchors.size() == 1 ? anchors[0] : nullptr;
  bool same = anchor != nullptr;
  for (Value* v : results_) same = same && ShapeOf(v) == ShapeOf(anchor->result());
  if (!same) anchor = nullptr;
  const std::string kind = anchor ? anchor->name() : "";

  cache_.emplace_back();
  uint32_t wx = 1, wy = 1;
  auto invocations = [&](uint64_t n) {
    return Grid((n + kWorkgroupSize - 1) / kWorkgroupSize, &wx, &wy);
  };
  int64_t reduce_count = 0;
  if (kind == "tensor.reduce") {
    reduce_count = 1;
    for (int64_t ax : ReduceAxes(anchor)) reduce_count *= ShapeOf(anchor->operand(0))[ax];
  }
  if (kind == "tensor.reduce" && reduce_count >= kGroupReduceMinExtent) {
    uint64_t rows = static_cast<uint64_t>(NumElements(ShapeOf(anchor->result())));
    KILN_RETURN_IF_ERROR(Grid(rows, &wx, &wy));
    schedule_comment_ = "reduce-group: one workgroup of 64 per output element (" +
                        std::to_string(rows) + " workgroups)";
    EmitReduceGroupMain(anchor, wx, wy);
  } else if (kind == "tensor.softmax") {
    Shape row_shape = ShapeOf(anchor->operand(0));
    int64_t axis = anchor->int_attr("axis", static_cast<int64_t>(row_shape.size()) - 1);
    if (axis < 0) axis += static_cast<int64_t>(row_shape.size());
    int lanes = row_shape[axis] >= kGroupSoftmaxMinExtent ? kWorkgroupSize : 1;
    row_shape.erase(row_shape.begin() + axis);
    uint64_t rows = static_cast<uint64_t>(NumElements(row_shape));
    if (lanes > 1) {
      KILN_RETURN_IF_ERROR(Grid(rows, &wx, &wy));
    } else {
      KILN_RETURN_IF_ERROR(invocations(rows));
    }
    schedule_comment_ = std::string("softmax-rows: one ") +
                        (lanes > 1 ? "workgroup" : "invocation") + " per row (" +
                        std::to_string(rows) + " rows)";
    EmitSoftmaxRowsMain(anchor, lanes, wx, wy);
  } else if (kind == "tensor.conv2d") {
    const Shape &ws = ShapeOf(anchor->operand(1)), &os = ShapeOf(anchor->result());
    int64_t group = std::max<int64_t>(anchor->int_attr("group", 1), 1);
    int64_t og = ws[0] / group;
    int64_t to = og % 4 == 0 ? 4 : og % 2 == 0 ? 2 : 1;
    int64_t tw = std::min<int64_t>(os[3], 4);
    uint64_t tiles = static_cast<uint64_t>(os[0] * (ws[0] / to) * os[2] * ((os[3] + tw - 1) / tw));
    KILN_RETURN_IF_ERROR(invocations(tiles));
    schedule_comment_ = "conv-tiled: one invocation per " + std::to_string(to) + "x" +
                        std::to_string(tw) + " (channel x column) tile (" + std::to_string(tiles) +
                        " invocations)";
    EmitConvTiledMain(anchor, to, tw, wx, wy);
  } else if (kind == "tensor.matmul" && ShapeOf(anchor->operand(0)).size() >= 2 &&
             ShapeOf(anchor->operand(1)).size() >= 2) {
    const Shape& os = ShapeOf(anchor->result());
    int64_t K = ShapeOf(anchor->operand(0)).back(), M = os[os.size() - 2], N = os.back();
    uint64_t outputs = static_cast<uint64_t>(NumElements(os));
    if (outputs <= kSplitKMaxOutputs && K >= kSplitKMinDepth) {
      KILN_RETURN_IF_ERROR(Grid(outputs, &wx, &wy));
      schedule_comment_ = "matmul-splitk: one workgroup per output element (" +
                          std::to_string(outputs) + " workgroups)";
      EmitMatmulSplitKMain(anchor, wx, wy);
    } else {
      int64_t tm = std::min<int64_t>(M, 4), tn = std::min<int64_t>(N, 4);
      uint64_t tiles = outputs / static_cast<uint64_t>(M * N) *
                       static_cast<uint64_t>(((M + tm - 1) / tm) * ((N + tn - 1) / tn));
      KILN_RETURN_IF_ERROR(invocations(tiles));
      schedule_comment_ = "matmul-tiled: one invocation per " + std::to_string(tm) + "x" +
                          std::to_string(tn) + " tile (" + std::to_string(tiles) + " invocations)";
      EmitMatmulTiledMain(anchor, tm, tn, wx, wy);
    }
  } else {
    int64_t total = 0;
    for (Value* v : results_) total = std::max(total, NumElements(ShapeOf(v)));
    KILN_RETURN_IF_ERROR(invocations(static_cast<uint64_t>(total)));
    schedule_comment_ = "pointwise: one invocation per output element (" +
                        std::to_string(total) + " invocations)";
    EmitPointwiseMain(wx, wy);
  }
  if (!status_.ok()) return status_;
  out.workgroup_size[0] = kWorkgroupSize;
  out.workgroup_count[0] = wx;
  out.workgroup_count[1] = wy;
  out.workgroup_count[2] = 1;

  // ---- assemble ----
  bool int64 = false, int8 = false;
  auto note = [&](DType t) {
    int64 |= t == DType::kI64;
    int8 |= t == DType::kI8 || t == DType::kU8 || t == DType::kBool;
  };
  for (Value* a : block_->arguments()) note(a->type().dtype);
  for (Value* r : dispatch_->results()) note(r->type().dtype);
  for (auto& owned : block_->ops())
    for (Value* r : owned->results())
      if (r->type().is_tensor()) int64 |= r->type().dtype == DType::kI64;
  out.requires_int64 = int64;
  out.requires_8bit_storage = int8;

  std::string g = "#version 450\n";
  g += "// Kiln dispatch '" + Sanitize(out.debug_name) + "' (generated by compiler/codegen)\n";
  g += "// schedule: " + schedule_comment_ + "\n";
  g += "// grid: " + std::to_string(wx) + " x " + std::to_string(wy) + " workgroups of " +
       std::to_string(kWorkgroupSize) + "\n";
  g += "// ops:\n";
  for (auto& owned : block_->ops()) {
    Operation* op = owned.get();
    if (op == term) continue;
    g += "//   " + Comment(op) + " -> " + op->result()->type().ToString() + "\n";
  }
  if (uses_ctrl_attr_) g += "#extension GL_EXT_control_flow_attributes : enable\n";
  if (int64) g += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  if (int8) {
    g += "#extension GL_EXT_shader_8bit_storage : require\n";
    g += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
  }
  g += "layout(local_size_x = " + std::to_string(kWorkgroupSize) +
       ", local_size_y = 1, local_size_z = 1) in;\n";
  for (unsigned i = 0; i < N; ++i) {
    const ir::Type& t = block_->argument(i)->type();
    g += "layout(set = 0, binding = " + std::to_string(i) + ", std430) restrict readonly buffer Arg" +
         std::to_string(i) + " { " + StorageType(t.dtype) + " in" + std::to_string(i) +
         "[]; };  // operand " + std::to_string(i) + ": " + t.ToString() + "\n";
  }
  for (unsigned k = 0; k < R; ++k) {
    const ir::Type& t = dispatch_->result(k)->type();
    g += "layout(set = 0, binding = " + std::to_string(N + k) +
         ", std430) restrict writeonly buffer Res" + std::to_string(k) + " { " +
         StorageType(t.dtype) + " out" + std::to_string(k) + "[]; };  // result " +
         std::to_string(k) + ": " + t.ToString() + "\n";
  }
  if (uses_shared_)
    g += "shared " + std::string(CTName(shared_ct_)) + " sh[" + std::to_string(kWorkgroupSize) +
         "];\n";
  g += globals_;
  for (const std::string& h : helpers_) g += h;
  g += "void main() {\n" + body_ + "}\n";
  out.glsl = std::move(g);

  KILN_ASSIGN_OR_RETURN(out.spirv, CompileGlslToSpirv(out.glsl, out.debug_name));
  if (options_.optimize_spirv) {
    spvtools::Optimizer opt(SPV_ENV_VULKAN_1_2);
    std::string msgs;
    opt.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&,
                               const char* m) { msgs += std::string(m) + "\n"; });
    opt.RegisterPerformancePasses();
    std::vector<uint32_t> optimized;
    if (!opt.Run(out.spirv.data(), out.spirv.size(), &optimized))
      return InternalError("codegen: spirv-opt failed on '%s': %s", out.debug_name.c_str(),
                           msgs.c_str());
    out.spirv = std::move(optimized);
  }
  if (options_.validate_spirv) {
    Status s = ValidateSpirv(out.spirv);
    if (!s.ok()) return s.Annotate("codegen: '" + out.debug_name + "'");
  }
  return out;
}

std::once_flag g_glslang_once;
std::mutex g_glslang_mutex;

}  // namespace

StatusOr<CompiledDispatch> CompileDispatch(ir::Operation* dispatch, const CodegenOptions& options) {
  Generator gen(dispatch, options);
  return gen.Run();
}

StatusOr<std::vector<uint32_t>> CompileGlslToSpirv(const std::string& glsl, const std::string& name) {
  std::call_once(g_glslang_once, [] { glslang_initialize_process(); });
  // glslang keeps per-thread pools but its symbol tables are process globals;
  // compiles are serialized (codegen is an offline, build-time step).
  std::lock_guard<std::mutex> lock(g_glslang_mutex);
  glslang_input_t input = {};
  input.language = GLSLANG_SOURCE_GLSL;
  input.stage = GLSLANG_STAGE_COMPUTE;
  input.client = GLSLANG_CLIENT_VULKAN;
  // Vulkan 1.1 / SPIR-V 1.3: the widest reach on mobile drivers; the
  // validator still checks against the Vulkan 1.2 environment.
  input.client_version = GLSLANG_TARGET_VULKAN_1_1;
  input.target_language = GLSLANG_TARGET_SPV;
  input.target_language_version = GLSLANG_TARGET_SPV_1_3;
  input.code = glsl.c_str();
  input.default_version = 450;
  input.default_profile = GLSLANG_NO_PROFILE;
  input.force_default_version_and_profile = false;
  input.forward_compatible = false;
  input.messages = static_cast<glslang_messages_t>(GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT |
                                                   GLSLANG_MSG_VULKAN_RULES_BIT);
  input.resource = glslang_default_resource();

  glslang_shader_t* shader = glslang_shader_create(&input);
  if (!shader) return InternalError("codegen: glslang_shader_create failed for '%s'", name.c_str());
  auto fail = [&](const char* stage, const char* log) {
    std::string m = "codegen: glslang " + std::string(stage) + " failed for '" + name + "': " +
                    (log ? log : "");
    return Status(StatusCode::kInternal, m);
  };
  if (!glslang_shader_preprocess(shader, &input)) {
    Status s = fail("preprocess", glslang_shader_get_info_log(shader));
    glslang_shader_delete(shader);
    return s;
  }
  if (!glslang_shader_parse(shader, &input)) {
    Status s = fail("parse", glslang_shader_get_info_log(shader));
    glslang_shader_delete(shader);
    return s;
  }
  glslang_program_t* program = glslang_program_create();
  glslang_program_add_shader(program, shader);
  if (!glslang_program_link(program, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
    Status s = fail("link", glslang_program_get_info_log(program));
    glslang_program_delete(program);
    glslang_shader_delete(shader);
    return s;
  }
  glslang_program_SPIRV_generate(program, GLSLANG_STAGE_COMPUTE);
  std::vector<uint32_t> words(glslang_program_SPIRV_get_size(program));
  glslang_program_SPIRV_get(program, words.data());
  const char* msgs = glslang_program_SPIRV_get_messages(program);
  std::string messages = msgs ? msgs : "";
  glslang_program_delete(program);
  glslang_shader_delete(shader);
  if (words.empty()) return InternalError("codegen: no SPIR-V for '%s': %s", name.c_str(), messages.c_str());
  return words;
}

Status ValidateSpirv(const std::vector<uint32_t>& spirv) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
  std::string msgs;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& pos,
                               const char* m) {
    msgs += "word " + std::to_string(pos.index) + ": " + m + "\n";
  });
  if (!tools.Validate(spirv.data(), spirv.size()))
    return Status(StatusCode::kInternal, "codegen: SPIR-V validation failed: " + msgs);
  return OkStatus();
}

}  // namespace kiln::codegen
