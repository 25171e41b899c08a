// conv-direct: register-blocked direct tensor.conv2d for every conv that is
// neither depthwise nor a 1x1 GEMM, with a window of at most
// kConvMaxUnrolledTaps taps (see codegen.cc and schedule_table.h).
//
// Each invocation computes TO output channels x TW consecutive columns of one
// output row, so one input load feeds TO multiply-adds per column it serves.
// Per (channel, kh) it reads one input row of (TW - 1) * stride + (KW - 1) *
// dilation + 1 elements that every (kw, column) pair reuses, and TO * KW
// weights. Taps in the padding read a clamped address and contribute
// fma(0, w, acc) = acc. Each output is one sequential multiply-add chain over
// (c, kh, kw) (Generator::Mac), then the bias, as in EvalConv.
#include <algorithm>

#include "compiler/codegen/generator.h"
#include "compiler/codegen/schedule_table.h"

namespace kiln::codegen::detail {

void Generator::EmitConvDirectMain(Operation* op, int64_t TO, int64_t TW, uint32_t wx,
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
       " dilations=" + ShapeStr(dil) + " group=" + std::to_string(group) +
       ": each invocation computes " + std::to_string(TO) + " output channels x " +
       std::to_string(TW) + " columns");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], oh = t[2];
  const std::string o0 = DeclI(MulC(t[1], TO), "o"), ow0 = DeclI(MulC(t[3], TW), "ow");
  std::vector<std::vector<std::string>> acc(TO, std::vector<std::string>(TW));
  for (auto& row : acc)
    for (auto& e : row) {
      e = Fresh("acc");
      Line("float " + e + " = 0.0;");
    }
  Open("");
  const std::string cbase = group == 1 ? "0" : DeclI(MulC(DivC(o0, Og), Cg), "cb");
  const std::string ih0 = DeclI(AddC(MulC(oh, st[0]), -pads[0]), "ih");
  const std::string iw0 = DeclI(AddC(MulC(ow0, st[1]), -pads[1]), "iw");
  const bool check_h = pads[0] > 0 || (OH - 1) * st[0] - pads[0] + (KH - 1) * dil[0] >= H;
  const bool check_w = pads[1] > 0 || (ts[3] * TW - 1) * st[1] - pads[1] + (KW - 1) * dil[1] >= W;
  const int64_t R = (TW - 1) * st[1] + (KW - 1) * dil[1] + 1;
  // Row-independent column indices (clamped when the row can leave the image).
  std::vector<std::string> iwc(R), iwok(R);
  for (int64_t r = 0; r < R; ++r) {
    const std::string iw = DeclI(AddC(iw0, r), "iw");
    if (check_w) {
      iwc[r] = DeclI("clamp(" + iw + ", 0, " + I(W - 1) + ")", "iwc");
      iwok[r] = Fresh("okw");
      Line("bool " + iwok[r] + " = " + InRange(iw, W) + ";");
    } else {
      iwc[r] = iw;
    }
  }
  int opened = 0;
  const std::string ic = OpenLoop(Cg, "ic", false, &opened);
  const std::string c = DeclI(AddE(cbase, ic), "c");
  // kh is a loop that the driver may unroll (no [[unroll]]): the SPIR-V
  // holds one kernel row's KW x TO x TW multiply-adds (each may be the
  // exact-FMA emulation, so module size, compile and pipeline-creation time
  // grow with the body).
  std::string kh = "0";
  if (KH > 1) {
    kh = Fresh("kh");
    Open("for (int " + kh + " = 0; " + kh + " < " + std::to_string(KH) + "; ++" + kh + ")");
    ++opened;
  }
  {
    const std::string ih = DeclI(AddE(ih0, MulC(kh, dil[0])), "ih");
    std::string ihc = ih, ihok;
    if (check_h) {
      ihc = DeclI("clamp(" + ih + ", 0, " + I(H - 1) + ")", "ihc");
      ihok = Fresh("okh");
      Line("bool " + ihok + " = " + InRange(ih, H) + ";");
    }
    std::vector<std::string> xr(R);
    for (int64_t r = 0; r < R; ++r) {
      std::string v = Eval(x, Idx{{n, c, ihc, iwc[r]}, "", {}});
      std::string ok = check_h && check_w ? "(" + ihok + " && " + iwok[r] + ")"
                       : check_h          ? ihok
                       : check_w          ? iwok[r]
                                          : "";
      xr[r] = ok.empty() ? v : Decl(CT::kF32, ok + " ? " + v + " : 0.0");
    }
    for (int64_t kw = 0; kw < KW; ++kw)
      for (int64_t to = 0; to < TO; ++to) {
        const std::string wvv = Eval(w, Idx{{AddC(o0, to), ic, kh, I(kw)}, "", {}});
        for (int64_t tw = 0; tw < TW; ++tw)
          Mac(acc[to][tw], xr[tw * st[1] + kw * dil[1]], wvv, CT::kF32);
      }
  }
  CloseN(opened);
  Close();
  // The bias goes onto the finished sums (as in EvalConv), then the epilogue.
  StoreAnchorBlock(
      op, acc,
      [&](const std::string& i, const std::string& j) {
        return Idx{{n, AddE(o0, i), oh, AddE(ow0, j)}, "", {}};
      },
      [&](const std::string&, const std::string& j) {
        return OW % TW ? AddE(ow0, j) + " < " + std::to_string(OW) : std::string();
      },
      b ? BlockFn([&](const std::string& i, const std::string&) {
            return Eval(b, Idx{{AddE(o0, i)}, "", {}});
          })
        : BlockFn());
}

}  // namespace kiln::codegen::detail
