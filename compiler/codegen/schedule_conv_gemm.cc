// conv-gemm: tensor.conv2d with a 1x1 kernel, stride 1, no padding and one
// group, as a tiled GEMM (see codegen.cc and schedule_table.h).
//
// The conv is out[n, o, p] = sum_c w[o, c] * x[n, c, p] over the H*W pixels
// p. Each invocation computes a TO x TP block (TO output channels x TP
// consecutive pixels): per input channel it reads TP inputs (one vec4 when
// TP == 4 and the pixel count is a multiple of 4) and TO weights (vec4 over 4
// input channels when C is a multiple of 4), and does TO * TP multiply-adds.
// Each output is one sequential multiply-add chain over c (Generator::Mac),
// then the bias, as in EvalConv.
#include <algorithm>

#include "compiler/codegen/generator.h"
#include "compiler/codegen/schedule_table.h"

namespace kiln::codegen::detail {

std::string Generator::Vec4View(Value* v) {
  auto it = arg_binding_.find(v);
  if (it == arg_binding_.end() || v->type().dtype != DType::kF32) return "";
  const std::string b = std::to_string(it->second);
  const std::string name = "in" + b + "v";
  if (globals_.find(" " + name + "[]") == std::string::npos)
    globals_ += "layout(set = 0, binding = " + b + ", std430) restrict readonly buffer Arg" + b +
                "v { vec4 " + name + "[]; };  // operand " + b + " read 4 floats at a time\n";
  return name;
}

void Generator::EmitConvGemmMain(Operation* op, int64_t TO, int64_t TP, uint32_t wx,
                                 uint32_t wy) {
  Value* x = op->operand(0);
  Value* w = op->operand(1);
  Value* b = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const Shape &xs = ShapeOf(x), &ws = ShapeOf(w), &os = ShapeOf(op->result());
  const int64_t N = xs[0], C = xs[1], O = ws[0], OW = os[3], P = os[2] * os[3];
  // x as 4 floats at a time: a TP == 4 block starts at a multiple of 4 and
  // every channel row (P floats) keeps that alignment.
  const std::string xv4 = TP == 4 && P % 4 == 0 ? Vec4View(x) : "";
  const std::string wv4 = C % 4 == 0 ? Vec4View(w) : "";
  const Shape ts = {N, (O + TO - 1) / TO, (P + TP - 1) / TP};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " 1x1 as GEMM: each invocation computes " + std::to_string(TO) +
       " output channels x " + std::to_string(TP) + " pixels" +
       (xv4.empty() ? "" : ", x as vec4") + (wv4.empty() ? "" : ", w as vec4 over channels"));
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0];
  const std::string o0 = DeclI(MulC(t[1], TO), "o"), p0 = DeclI(MulC(t[2], TP), "p");
  // Loads use clamped channel / pixel indices (always inside the binding);
  // the stores of the block's out-of-range part are guarded.
  std::vector<std::string> oc(TO), pc(TP), oh(TP), ow(TP);
  for (int64_t i = 0; i < TO; ++i)
    oc[i] = O % TO ? DeclI("min(" + AddC(o0, i) + ", " + I(O - 1) + ")", "o") : AddC(o0, i);
  for (int64_t j = 0; j < TP; ++j) {
    pc[j] = P % TP ? DeclI("min(" + AddC(p0, j) + ", " + I(P - 1) + ")", "p") : DeclI(AddC(p0, j), "p");
    oh[j] = DeclI(DivC(pc[j], OW), "oh");
    ow[j] = DeclI(OW == 1 ? "0" : "(" + pc[j] + " % " + I(OW) + ")", "ow");
  }
  std::vector<std::vector<std::string>> acc(TO, std::vector<std::string>(TP));
  for (auto& row : acc)
    for (auto& e : row) {
      e = Fresh("acc");
      Line("float " + e + " = 0.0;");
    }
  // With w as vec4, the channel loop steps by 4 and an inner loop of 4 trips
  // picks component cc of each weight vector. That inner loop is left to the
  // driver to unroll (no [[unroll]]; GPU compilers unroll a 4-trip loop, and
  // the SPIR-V keeps one copy of the TO x TP multiply-adds instead of four:
  // module size, compile and pipeline-creation time).
  const int64_t CS = wv4.empty() ? 1 : 4;  // input channels per outer trip
  int opened = 0;
  Open("");
  const std::string xrow = DeclI(MulC(n, C * P), "xb");
  std::string cvar = "0";
  if (C / CS > 1) {
    cvar = Fresh("c");
    Open("for (int " + cvar + " = 0; " + cvar + " < " + std::to_string(C) + "; " + cvar +
         " = " + cvar + " + " + std::to_string(CS) + ")");
    ++opened;
  }
  std::vector<std::string> wq(TO);
  for (int64_t i = 0; i < TO && !wv4.empty(); ++i) {
    wq[i] = Fresh("wq");
    Line("vec4 " + wq[i] + " = " + wv4 + "[" + DivC(AddE(MulC(oc[i], C), cvar), 4) + "];");
  }
  std::string c = cvar, cc;
  if (CS > 1) {
    cc = Fresh("cc");
    Open("for (int " + cc + " = 0; " + cc + " < " + std::to_string(CS) + "; ++" + cc + ")");
    ++opened;
    c = DeclI(AddE(cvar, cc), "c");
  }
  std::vector<std::string> xv(TP);
  if (!xv4.empty()) {
    std::string q = Fresh("xq");
    Line("vec4 " + q + " = " + xv4 + "[" + DivC(AddE(AddE(xrow, MulC(c, P)), p0), 4) + "];");
    static const char* kComp[4] = {".x", ".y", ".z", ".w"};
    for (int64_t j = 0; j < TP; ++j) xv[j] = q + kComp[j];
  } else {
    for (int64_t j = 0; j < TP; ++j) {
      Idx xi{{n, c, oh[j], ow[j]}, AddE(AddE(xrow, MulC(c, P)), pc[j]), xs};
      xv[j] = Eval(x, xi);
    }
  }
  for (int64_t i = 0; i < TO; ++i) {
    std::string wvv =
        wv4.empty() ? Eval(w, Idx{{oc[i], c, "0", "0"}, "", {}}) : wq[i] + "[" + cc + "]";
    for (int64_t j = 0; j < TP; ++j) Mac(acc[i][j], xv[j], wvv, CT::kF32);
  }
  CloseN(opened);
  Close();
  // The bias goes onto the finished sums (as in EvalConv), then the epilogue.
  StoreAnchorBlock(
      op, acc,
      [&](const std::string& i, const std::string& j) {
        const std::string o = AddE(o0, i), p = DeclI(AddE(p0, j), "p");
        const std::string oh = DeclI(DivC(p, OW), "oh");
        const std::string ow = OW == 1 ? "0" : DeclI("(" + p + " % " + I(OW) + ")", "ow");
        return Idx{{n, o, oh, ow}, AddE(MulC(AddE(MulC(n, O), o), P), p), os};
      },
      [&](const std::string& i, const std::string& j) {
        std::string guard;
        if (O % TO) guard = AddE(o0, i) + " < " + std::to_string(O);
        if (P % TP) guard += (guard.empty() ? "" : " && ") + AddE(p0, j) + " < " + std::to_string(P);
        return guard;
      },
      b ? BlockFn([&](const std::string& i, const std::string&) {
            return Eval(b, Idx{{AddE(o0, i)}, "", {}});
          })
        : BlockFn());
}

}  // namespace kiln::codegen::detail
