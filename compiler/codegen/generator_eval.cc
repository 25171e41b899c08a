// The dispatch generator's element evaluation: Eval(v, idx) for every op
// kind a dispatch region may hold (see codegen.cc for the model).
#include "compiler/codegen/generator.h"

#include <algorithm>
#include <cmath>

#include "compiler/codegen/conv_transpose_schedule.h"
#include "compiler/codegen/resize_schedule.h"

namespace kiln::codegen::detail {

std::string Generator::Eval(Value* v, const Idx& idx) {
  if (!status_.ok()) return "0";
  std::string key = Key(v, idx);
  for (auto it = cache_.rbegin(); it != cache_.rend(); ++it) {
    auto f = it->find(key);
    if (f != it->end()) return f->second;
  }
  std::string r;
  Operation* op = v->defining_op();
  if (auto s = staged_.find(v); s != staged_.end()) {
    r = Decl(CTOf(v), s->second + "[" + Offset(idx, ShapeOf(v)) + "]");
  } else if (!op) {
    r = EvalArg(v, idx);
  } else {
    using ir::OpCode;
    if (ir::Traits(op).is_elementwise()) {
      r = EvalElementwise(op, idx);
    } else {
      switch (op->code()) {
        case OpCode::kTensorConstant: r = EvalConstant(op, idx); break;
        case OpCode::kTensorConv2d: r = EvalConv(op, idx); break;
        case OpCode::kTensorConvTranspose: r = EvalConvTranspose(op, idx); break;
        case OpCode::kTensorMatmul: r = EvalMatmul(op, idx); break;
        case OpCode::kTensorPool2d: r = EvalPool(op, idx); break;
        case OpCode::kTensorReduce: r = EvalReduce(op, idx); break;
        case OpCode::kTensorArgReduce: r = EvalArgReduce(op, idx); break;
        case OpCode::kTensorCumsum: r = EvalCumsum(op, idx); break;
        case OpCode::kTensorGatherElements: r = EvalGatherElements(op, idx); break;
        case OpCode::kTensorTopK: r = EvalTopK(op, idx); break;
        case OpCode::kTensorScatterElements:
        case OpCode::kTensorScatterNd: r = EvalScatter(op, idx); break;
        case OpCode::kTensorSoftmax: r = EvalSoftmax(op, idx); break;
        case OpCode::kTensorTranspose: r = EvalTranspose(op, idx); break;
        case OpCode::kTensorSlice: r = EvalSlice(op, idx); break;
        case OpCode::kTensorConcat: r = EvalConcat(op, idx); break;
        case OpCode::kTensorPad: r = EvalPad(op, idx); break;
        case OpCode::kTensorGather: r = EvalGather(op, idx); break;
        case OpCode::kTensorResize: r = EvalResize(op, idx); break;
        case OpCode::kTensorExpand:
          r = Eval(op->operand(0), BroadcastIdx(idx, ShapeOf(op->result()), ShapeOf(op->operand(0))));
          break;
        case OpCode::kTensorReshape: r = EvalReshape(op, idx); break;
        default:
          Fail(Unsupported(op));
          return "0";
      }
    }
  }
  if (!status_.ok()) return "0";
  cache_.back()[key] = r;
  return r;
}

namespace {

// `off` (an index expression) plus the constant `base`, folded into a
// leading integer term ("(40 + i1)" plus -24 is "(16 + i1)"), so that a
// call site whose element offset only moves a slice's start compiles to the
// shader of a call site without one, with another constant: the two then
// share SPIR-V through specialization constants (shader_dedupe.h).
std::string AddBase(const std::string& off, int64_t base) {
  if (base == 0) return off;
  int64_t c = 0;
  if (ParseInt(off, &c)) return I(c + base);
  const size_t plus = off.find(" + ");
  if (off.size() > 2 && off.front() == '(' && off.back() == ')' && plus != std::string::npos &&
      ParseInt(off.substr(1, plus - 1), &c)) {
    int depth = 0;
    bool enclosed = true;  // the first '(' closes at the last character
    for (size_t i = 0; i + 1 < off.size() && enclosed; ++i) {
      depth += off[i] == '(' ? 1 : off[i] == ')' ? -1 : 0;
      enclosed = depth > 0;
    }
    if (enclosed) {
      std::string rest = off.substr(plus + 3, off.size() - plus - 4);
      if (rest.find(' ') != std::string::npos) rest = "(" + rest + ")";
      return AddE(I(c + base), rest);
    }
  }
  return AddE(I(base), off);
}

}  // namespace

std::string Generator::EvalArg(Value* v, const Idx& idx) {
  auto it = arg_binding_.find(v);
  if (it == arg_binding_.end()) {
    Fail(InternalError("codegen: value is neither a dispatch argument nor an op result"));
    return "0";
  }
  DType dt = v->type().dtype;
  // The tensor starts operand_element_offsets[b] elements into its binding
  // (CodegenOptions::operand_element_offsets; negative: the binding starts
  // inside the tensor, at the first element the dispatch reads).
  const size_t b = static_cast<size_t>(it->second);
  const int64_t base = b < options_.operand_element_offsets.size() ? options_.operand_element_offsets[b] : 0;
  std::string e;
  if (IsTexel(it->second)) {  // f32, base 0 (CodegenOptions::texel_eligible)
    const std::string off = DeclI(Offset(idx, ShapeOf(v)));
    e = "texelFetch(in" + std::to_string(it->second) + "t, " + off + " >> 2)[" + off + " & 3]";
  } else {
    e = "in" + std::to_string(it->second) + "[" + AddBase(Offset(idx, ShapeOf(v)), base) + "]";
  }
  CT ct = CTOf(v);
  return Decl(ct, ct == CT::kF16 ? e : LoadConvert(dt, e));
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
    if (IsFloatCT(ct)) return Literal(ct, d->GetDouble(i));
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
  using ir::OpCode;
  const OpCode code = op->code();
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
  // A GLSL built-in of one argument.
  auto call = [&](const char* fn) { return std::string(fn) + "(" + A(0) + ")"; };
  bool f = IsFloatCT(rct);
  std::string e;
  std::string zero = Literal(rct, 0);
  switch (code) {
    case OpCode::kTensorNeg: e = "(-" + A(0) + ")"; break;
    case OpCode::kTensorAbs: e = IsUnsignedCT(rct) ? A(0) : "abs(" + A(0) + ")"; break;
    case OpCode::kTensorRelu: e = "max(" + A(0) + ", " + zero + ")"; break;
    case OpCode::kTensorSigmoid: e = "(1.0 / (1.0 + exp(-" + A(0) + ")))"; break;
    case OpCode::kTensorTanh: e = "tanh(clamp(" + A(0) + ", -15.0, 15.0))"; break;
    case OpCode::kTensorExp: e = call("exp"); break;
    case OpCode::kTensorLog: e = call("log"); break;
    case OpCode::kTensorSqrt: e = call("sqrt"); break;
    case OpCode::kTensorFloor: e = call("floor"); break;
    case OpCode::kTensorCeil: e = call("ceil"); break;
    case OpCode::kTensorSin: e = call("sin"); break;
    case OpCode::kTensorCos: e = call("cos"); break;
    case OpCode::kTensorTan: e = call("tan"); break;
    case OpCode::kTensorAsin: e = call("asin"); break;
    case OpCode::kTensorAcos: e = call("acos"); break;
    case OpCode::kTensorAtan: e = call("atan"); break;
    case OpCode::kTensorSinh: e = call("sinh"); break;
    case OpCode::kTensorCosh: e = call("cosh"); break;
    case OpCode::kTensorAsinh: e = call("asinh"); break;
    case OpCode::kTensorAcosh: e = call("acosh"); break;
    case OpCode::kTensorAtanh: e = call("atanh"); break;
    case OpCode::kTensorSign:
      // GLSL sign(): -1, 0 or 1 for float and int; NaN stays NaN as in ONNX.
      e = IsUnsignedCT(rct) ? Convert("(" + A(0) + " != " + zero + ")", CT::kBool, rct) : rct == CT::kBool ? A(0) : "sign(" + A(0) + ")";
      break;
    case OpCode::kTensorIsnan: e = "isnan(" + a[0] + ")"; break;
    case OpCode::kTensorIsinf: {
      std::string x = a[0];
      bool neg = op->int_attr("detect_negative", 1) != 0, pos = op->int_attr("detect_positive", 1) != 0;
      e = neg && pos ? "isinf(" + x + ")"
          : neg      ? "(isinf(" + x + ") && " + x + " < 0.0)"
          : pos      ? "(isinf(" + x + ") && " + x + " > 0.0)"
                     : "false";
      break;
    }
    case OpCode::kTensorRound: e = "roundEven(" + A(0) + ")"; break;
    case OpCode::kTensorReciprocal: e = "(1.0 / " + A(0) + ")"; break;
    case OpCode::kTensorErf:
      helpers_.insert(kErfHelper);
      e = "kiln_erf(" + A(0) + ")";
      break;
    case OpCode::kTensorNot: e = "(!" + A(0) + ")"; break;
    case OpCode::kTensorCast: {
      e = Convert(a[0], act[0], rct);
      // A 16-bit float result inside the region rounds as its storage would.
      DType rdt = op->result()->type().dtype;
      if (rdt == DType::kF16) e = "unpackHalf2x16(packHalf2x16(vec2(" + e + ", 0.0))).x";
      if (rdt == DType::kBF16) {
        helpers_.insert(kToBF16Helper);
        e = "uintBitsToFloat(kiln_to_bf16(" + e + ") << 16)";
      }
      break;
    }
    case OpCode::kTensorLeakyRelu: {
      std::string x = A(0);
      e = "(" + x + " < 0.0 ? " + x + " * " + FloatLit(op->float_attr("alpha", 0.01)) + " : " + x + ")";
      break;
    }
    case OpCode::kTensorHardSigmoid:
      e = "clamp(" + FloatLit(op->float_attr("alpha", 0.2)) + " * " + A(0) + " + " +
          FloatLit(op->float_attr("beta", 0.5)) + ", 0.0, 1.0)";
      break;
    case OpCode::kTensorHardSwish: {
      std::string x = A(0);
      e = "(" + x + " * clamp(" + x + " * " + FloatLit(1.0 / 6.0) + " + 0.5, 0.0, 1.0))";
      break;
    }
    case OpCode::kTensorElu: {
      helpers_.insert(kExpm1Helper);
      std::string x = A(0);
      e = "(" + x + " > 0.0 ? " + x + " : " + FloatLit(op->float_attr("alpha", 1.0)) +
          " * kiln_expm1(" + x + "))";
      break;
    }
    case OpCode::kTensorSoftplus: {
      helpers_.insert(kLog1pHelper);
      std::string x = A(0);
      e = "(max(" + x + ", 0.0) + kiln_log1p(exp(-abs(" + x + "))))";
      break;
    }
    case OpCode::kTensorClamp:
      e = A(0);
      if (op->has_attr("min")) e = "max(" + e + ", " + Literal(rct, op->float_attr("min")) + ")";
      if (op->has_attr("max")) e = "min(" + e + ", " + Literal(rct, op->float_attr("max")) + ")";
      break;
    case OpCode::kTensorAdd: e = "(" + A(0) + " + " + A(1) + ")"; break;
    case OpCode::kTensorSub: e = "(" + A(0) + " - " + A(1) + ")"; break;
    case OpCode::kTensorMul: e = "(" + A(0) + " * " + A(1) + ")"; break;
    case OpCode::kTensorDiv: e = "(" + A(0) + " / " + A(1) + ")"; break;
    case OpCode::kTensorMax: e = "max(" + A(0) + ", " + A(1) + ")"; break;
    case OpCode::kTensorMin: e = "min(" + A(0) + ", " + A(1) + ")"; break;
    case OpCode::kTensorPow: {
      helpers_.insert(kPowHelper);
      std::string p = "kiln_pow(" + Convert(a[0], act[0], CT::kF32) + ", " +
                      Convert(a[1], act[1], CT::kF32) + ")";
      e = f ? p : std::string(CTName(rct)) + "(roundEven(" + p + "))";
      break;
    }
    case OpCode::kTensorMod: {
      bool fmod = op->int_attr("fmod", 0) != 0;
      std::string x = A(0), y = A(1);
      if (f) {
        // fmod=1: C fmod (sign of the dividend); fmod=0: sign of the divisor.
        e = fmod ? "(" + x + " - " + y + " * trunc(" + x + " / " + y + "))"
                 : "(" + x + " - " + y + " * floor(" + x + " / " + y + "))";
      } else {
        std::string r = Decl(rct, "(" + x + " - " + y + " * (" + x + " / " + y + "))");
        if (fmod || IsUnsignedCT(rct)) e = r;
        else e = "((" + r + " != " + zero + " && ((" + r + " < " + zero + ") != (" + y + " < " +
                 zero + "))) ? " + r + " + " + y + " : " + r + ")";
      }
      break;
    }
    case OpCode::kTensorEqual:
    case OpCode::kTensorGreater:
    case OpCode::kTensorLess:
    case OpCode::kTensorGreaterEqual:
    case OpCode::kTensorLessEqual: {
      CT ct = act[0] == CT::kF64 || act[1] == CT::kF64   ? CT::kF64
              : act[0] == CT::kF32 || act[1] == CT::kF32 ? CT::kF32
                                                         : act[0];
      const char* opr = code == OpCode::kTensorEqual     ? "=="
                        : code == OpCode::kTensorGreater ? ">"
                        : code == OpCode::kTensorLess    ? "<"
                        : code == OpCode::kTensorGreaterEqual ? ">="
                                                              : "<=";
      e = "(" + Convert(a[0], act[0], ct) + " " + opr + " " + Convert(a[1], act[1], ct) + ")";
      break;
    }
    case OpCode::kTensorAnd: e = "(" + A(0) + " && " + A(1) + ")"; break;
    case OpCode::kTensorOr: e = "(" + A(0) + " || " + A(1) + ")"; break;
    case OpCode::kTensorXor: e = "(" + A(0) + " ^^ " + A(1) + ")"; break;
    case OpCode::kTensorShiftLeft:
    case OpCode::kTensorShiftRight: {
      // Logical shift in the compute type (32 or 64 bits), then wrapped to the
      // dtype's width; a shift of the width or more gives 0 (ONNX BitShift).
      DType rdt = op->result()->type().dtype;
      const int64_t bits = static_cast<int64_t>(DTypeSize(rdt)) * 8;
      const int64_t cbits = rct == CT::kU64 || rct == CT::kI64 ? 64 : 32;
      std::string x = Decl(rct, A(0)), y = Decl(rct, A(1));
      std::string s = "(" + x + (code == OpCode::kTensorShiftLeft ? " << " : " >> ") + y + ")";
      if (bits < cbits) s = "(" + s + " & " + IntLiteral(rct, (int64_t{1} << bits) - 1) + ")";
      e = "(" + y + " < " + IntLiteral(rct, bits) + " ? " + s + " : " + zero + ")";
      break;
    }
    case OpCode::kTensorSelect:
      e = "(" + Convert(a[0], act[0], CT::kBool) + " ? " + A(1) + " : " + A(2) + ")";
      break;
    default:
      Fail(Unsupported(op));
      return "0";
  }
  if (code == OpCode::kTensorDiv && f) {
    // `precise`: a float division stays a division. Without it a driver may
    // rewrite a / c with a constant c (a fused scalar literal) into
    // a * (1 / c), which rounds differently from the host and from the same
    // division by a value loaded from a buffer (lavapipe's NIR does).
    std::string n = Fresh("t");
    Line("precise " + std::string(CTName(rct)) + " " + n + " = " + e + ";  // " + Comment(op));
    return n;
  }
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
  // Max pooling accumulates in the result's compute type (exact for
  // integers); average pooling in f32.
  const CT ct = is_max ? ComputeType(op->result()->type().dtype) : CT::kF32;
  std::string acc = Fresh("acc");
  std::string cnt = Fresh("cnt");
  Line(std::string(CTName(ct)) + " " + acc + " = " + (is_max ? Lowest(ct) : "0.0") + ";  // " + Comment(op) +
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
      // GLSL has no double exp()/log(): f64 evaluates them in f32.
      const bool f64 = ct == CT::kF64;
      p.push_back({zero, [m, f64](const std::string& v) {
                     return f64 ? "double(exp(float(" + v + " - " + m + ")))" : "exp(" + v + " - " + m + ")";
                   }, '+'});
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
    if (IsFloatCT(ct)) return "(" + acc[0] + " / " + Literal(ct, static_cast<double>(count)) + ")";
    return "(" + acc[0] + " / " + IntLiteral(ct, count) + ")";
  }
  if (kind == "l2") return "sqrt(" + acc[0] + ")";
  if (kind == "log_sum_exp" && ct == CT::kF64) return "(" + acc[0] + " + double(log(float(" + acc[1] + "))))";
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
  if (!IsFloatCT(ct) && (kind == "l2" || kind == "log_sum_exp")) {
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

// ONNX ArgMax / ArgMin: a sequential scan along the axis keeping the first
// (select_last_index: the last) position of the extreme value.
std::string Generator::EvalArgReduce(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  const int64_t axis = op->int_attr("axis", 0);
  const bool is_max = op->str_attr("kind", "max") == "max";
  const bool last = op->int_attr("select_last_index", 0) != 0;
  const bool keep = ShapeOf(op->result()).size() == xs.size();
  auto input_idx = [&](const std::string& r) {
    Idx in;
    size_t oi = 0;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (static_cast<int64_t>(d) == axis) {
        in.d.push_back(r);
        if (keep) ++oi;
      } else {
        in.d.push_back(idx.d[oi++]);
      }
    }
    return in;
  };
  Line("// " + Comment(op) + " arg" + (is_max ? "max" : "min") + " axis=" + std::to_string(axis) +
       (last ? " (last index)" : " (first index)"));
  CT xct = CTOf(x);
  std::string best = Fresh("best"), bi = Fresh("bi");
  Line(std::string(CTName(xct)) + " " + best + ";");
  Line("int " + bi + " = 0;");
  Open("");
  Line(best + " = " + Eval(x, input_idx("0")) + ";");
  Close();
  if (xs[axis] > 1) {
    std::string r = Fresh("r");
    Open("for (int " + r + " = 1; " + r + " < " + std::to_string(xs[axis]) + "; ++" + r + ")");
    std::string v = Eval(x, input_idx(r));
    const char* cmp = is_max ? (last ? ">=" : ">") : (last ? "<=" : "<");
    Open("if (" + v + " " + cmp + " " + best + ")");
    Line(best + " = " + v + ";");
    Line(bi + " = " + r + ";");
    Close();
    Close();
  }
  return Decl(CT::kI64, "int64_t(" + bi + ")");
}

// ONNX CumSum: element i along the axis sums x over [0, i] (exclusive:
// [0, i)), or with reverse over [i, n) (exclusive: (i, n)), adding in scan
// order (from the start, or from the end when reversed) as ONNX's reference
// and ONNX Runtime do. O(n) per element: meant for the short axes models use.
std::string Generator::EvalCumsum(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const Shape& xs = ShapeOf(x);
  const int64_t axis = op->int_attr("axis", 0);
  const bool excl = op->int_attr("exclusive", 0) != 0, rev = op->int_attr("reverse", 0) != 0;
  const std::string i = idx.d[axis];
  CT ct = CTOf(op->result());
  Line("// " + Comment(op) + " axis=" + std::to_string(axis) + (excl ? " exclusive" : "") +
       (rev ? " reverse" : ""));
  std::string acc = Fresh("acc"), r = Fresh("r");
  Line(std::string(CTName(ct)) + " " + acc + " = " + Literal(ct, 0) + ";");
  std::string loop = rev ? "for (int " + r + " = " + I(xs[axis] - 1) + "; " + r + (excl ? " > " : " >= ") +
                               i + "; --" + r + ")"
                         : "for (int " + r + " = 0; " + r + (excl ? " < " : " <= ") + i + "; ++" + r + ")";
  Open(loop);
  Idx in = idx;
  in.flat.clear();
  in.d[axis] = r;
  Line(acc + " += " + Convert(Eval(x, in), CTOf(x), ct) + ";");
  Close();
  return acc;
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

std::string Generator::EvalGatherElements(Operation* op, const Idx& idx) {
  Value* data = op->operand(0);
  const int64_t axis = op->int_attr("axis", 0);
  const int64_t n = ShapeOf(data)[axis];
  Idx ii = idx;
  std::string g = Fresh("g");
  // As tensor.gather: negative indices count from the end, and the index is
  // clamped so a bad one never reads outside the binding.
  Line("int " + g + " = int(" + Eval(op->operand(1), ii) + ");  // " + Comment(op) +
       " axis=" + std::to_string(axis));
  Line(g + " = clamp(" + g + " < 0 ? " + g + " + " + I(n) + " : " + g + ", 0, " + I(n - 1) + ");");
  Idx di = idx;
  di.flat.clear();
  di.d[axis] = g;
  return Eval(data, di);
}

// TopK by rank: output position j along the axis is the element e whose rank
// (the number of elements before it in the order: greater, or equal with a
// lower index; smaller for largest = false) is j. O(n^2) compares per output
// element for an axis of n: meant for the short axes of classifier heads
// and the node tests, not for sorting long axes.
std::string Generator::EvalTopK(Operation* op, const Idx& idx) {
  Value* x = op->operand(0);
  const int64_t axis = op->int_attr("axis", 0), n = ShapeOf(x)[axis];
  const bool largest = op->int_attr("largest", 1) != 0;
  const std::string j = idx.d[static_cast<size_t>(axis)];
  std::string found = Fresh("tk"), e = Fresh("e"), f = Fresh("f"), rank = Fresh("rank");
  Line("int " + found + " = 0;  // " + Comment(op) + (largest ? " largest" : " smallest"));
  Open("for (int " + e + " = 0; " + e + " < " + std::to_string(n) + "; ++" + e + ")");
  Idx ie = idx;
  ie.flat.clear();
  ie.d[static_cast<size_t>(axis)] = e;
  std::string ve = Eval(x, ie);
  Line("int " + rank + " = 0;");
  Open("for (int " + f + " = 0; " + f + " < " + std::to_string(n) + "; ++" + f + ")");
  Idx iff = idx;
  iff.flat.clear();
  iff.d[static_cast<size_t>(axis)] = f;
  std::string vf = Eval(x, iff);
  const char* before = largest ? ">" : "<";
  Line("if (" + vf + " " + before + " " + ve + " || (" + vf + " == " + ve + " && " + f + " < " + e +
       ")) ++" + rank + ";");
  Close();
  Line("if (" + rank + " == " + j + ") " + found + " = " + e + ";");
  Close();
  return Decl(CT::kI64, "int64_t(" + found + ")");
}

// Scatter as a gather over the updates: output element i starts as data[i]
// and folds in, in update order, every update whose target is i. For
// scatter_elements only the updates j with j[d] = i[d] off the axis can hit
// i (a loop over the axis); for scatter_nd every index tuple q is compared
// with i's leading k coordinates. Cost per element: the axis extent of the
// indices (elements) or their tuple count (nd): meant for the small update
// sets models scatter, not for bulk copies.
std::string Generator::EvalScatter(Operation* op, const Idx& idx) {
  Value* data = op->operand(0);
  Value* ind = op->operand(1);
  Value* upd = op->operand(2);
  const Shape& ds = ShapeOf(data);
  const Shape& is = ShapeOf(ind);
  CT ct = CTOf(op->result());
  const std::string red = op->str_attr("reduction", "none");
  std::string acc = Fresh("sc");
  Line(std::string(CTName(ct)) + " " + acc + " = " + Eval(data, idx) + ";  // " + Comment(op));
  auto apply = [&](const std::string& u) {
    if (red == "add") Line(acc + " += " + u + ";");
    else if (red == "mul") Line(acc + " *= " + u + ";");
    else if (red == "max") Line(acc + " = max(" + acc + ", " + u + ");");
    else if (red == "min") Line(acc + " = min(" + acc + ", " + u + ");");
    else Line(acc + " = " + u + ";");
  };
  if (op->is(ir::OpCode::kTensorScatterElements)) {
    const int64_t axis = op->int_attr("axis", 0);
    std::string guard;
    for (size_t d = 0; d < ds.size(); ++d)
      if (static_cast<int64_t>(d) != axis && is[d] < ds[d])
        guard += (guard.empty() ? "" : " && ") + InRange(idx.d[d], is[d]);
    if (!guard.empty()) Open("if (" + guard + ")");
    std::string t = Fresh("t");
    Open("for (int " + t + " = 0; " + t + " < " + std::to_string(is[axis]) + "; ++" + t + ")");
    Idx j = idx;
    j.flat.clear();
    j.d[static_cast<size_t>(axis)] = t;
    std::string k = DeclI("int(" + Eval(ind, j) + ")", "k");
    Line(k + " = " + k + " < 0 ? " + k + " + " + I(ds[axis]) + " : " + k + ";");
    Open("if (" + k + " == " + idx.d[static_cast<size_t>(axis)] + ")");
    apply(Convert(Eval(upd, j), CTOf(upd), ct));
    Close();
    Close();
    if (!guard.empty()) Close();
  } else {
    const int64_t k = is.back();
    Shape qs(is.begin(), is.end() - 1);
    int64_t nq = 1;
    for (int64_t d : qs) nq *= d;
    std::string q = Fresh("q");
    Open("for (int " + q + " = 0; " + q + " < " + std::to_string(nq) + "; ++" + q + ")");
    std::vector<std::string> qd = Decompose("uint(" + q + ")", qs);
    std::string hit;
    for (int64_t c = 0; c < k; ++c) {
      Idx ii{qd, "", {}};
      ii.d.push_back(I(c));
      std::string v = DeclI("int(" + Eval(ind, ii) + ")", "k");
      Line(v + " = " + v + " < 0 ? " + v + " + " + I(ds[c]) + " : " + v + ";");
      hit += (hit.empty() ? "" : " && ") + v + " == " + idx.d[static_cast<size_t>(c)];
    }
    Open("if (" + (hit.empty() ? std::string("true") : hit) + ")");
    Idx ui{qd, "", {}};
    for (size_t d = static_cast<size_t>(k); d < ds.size(); ++d) ui.d.push_back(idx.d[d]);
    apply(Convert(Eval(upd, ui), CTOf(upd), ct));
    Close();
    Close();
  }
  return acc;
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

}  // namespace kiln::codegen::detail
