// depthwise: tensor.conv2d with one input channel per group (Cg == 1; any
// channel multiplier O / group), see codegen.cc and schedule_table.h.
//
// Each invocation computes a TH x TW block (rows x columns) of one output
// channel. Per kernel row kh it loads the KW weights of that row and, for
// each of its TH output rows, one input row of (TW - 1) * stride + (KW - 1) *
// dilation + 1 elements that every (kw, column) pair reuses. The kh loop is
// left to the driver to unroll (no [[unroll]]): the SPIR-V holds KW x TH x TW
// multiply-adds, not KH times as many (module size, compile and
// pipeline-creation time). Taps in the padding read a clamped address and
// contribute fma(0, w, acc) = acc. Each output is one sequential multiply-add
// chain over (kh, kw) (Generator::Mac), then the bias, as in EvalConv.
#include <algorithm>

#include "compiler/codegen/generator.h"
#include "compiler/codegen/schedule_table.h"

namespace kiln::codegen::detail {

void Generator::EmitDepthwiseMain(Operation* op, int64_t TW, int64_t TH, uint32_t wx,
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
  const int64_t H = xs[2], W = xs[3], O = ws[0], KH = ws[2], KW = ws[3];
  const int64_t OH = os[2], OW = os[3], Og = O / group;
  const Shape ts = {os[0], O, (OH + TH - 1) / TH, (OW + TW - 1) / TW};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " strides=" + ShapeStr(st) + " pads=" + ShapeStr(pads) +
       " dilations=" + ShapeStr(dil) + " group=" + std::to_string(group) +
       ": each invocation computes " + std::to_string(TH) + " rows x " + std::to_string(TW) +
       " columns of one channel");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], o = t[1];
  const std::string oh0 = DeclI(MulC(t[2], TH), "oh"), ow0 = DeclI(MulC(t[3], TW), "ow");
  const std::string c = Og == 1 ? o : DeclI(DivC(o, Og), "c");
  const std::string ih0 = DeclI(AddC(MulC(oh0, st[0]), -pads[0]), "ih");
  const std::string iw0 = DeclI(AddC(MulC(ow0, st[1]), -pads[1]), "iw");
  const int64_t R = (TW - 1) * st[1] + (KW - 1) * dil[1] + 1;
  const bool check_h =
      pads[0] > 0 || (ts[2] * TH - 1) * st[0] - pads[0] + (KH - 1) * dil[0] >= H;
  const bool check_w =
      pads[1] > 0 || (ts[3] * TW - 1) * st[1] - pads[1] + (KW - 1) * dil[1] >= W;
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
  std::vector<std::vector<std::string>> acc(TH, std::vector<std::string>(TW));
  for (auto& row : acc)
    for (auto& e : row) {
      e = Fresh("acc");
      Line("float " + e + " = 0.0;");
    }
  // The kernel rows are a loop that the driver may unroll (no [[unroll]]):
  // the SPIR-V holds one row's KW x TH x TW multiply-adds.
  int opened = 0;
  std::string kh = "0";
  if (KH > 1) {
    kh = Fresh("kh");
    Open("for (int " + kh + " = 0; " + kh + " < " + std::to_string(KH) + "; ++" + kh + ")");
    ++opened;
  }
  std::vector<std::string> wv(KW);
  for (int64_t kw = 0; kw < KW; ++kw) wv[kw] = Eval(w, Idx{{o, "0", kh, I(kw)}, "", {}});
  for (int64_t th = 0; th < TH; ++th) {
    const std::string ih = DeclI(AddE(AddC(ih0, th * st[0]), MulC(kh, dil[0])), "ih");
    std::string ihc = ih, ihok;
    if (check_h) {
      ihc = DeclI("clamp(" + ih + ", 0, " + I(H - 1) + ")", "ihc");
      ihok = Fresh("okh");
      Line("bool " + ihok + " = " + InRange(ih, H) + ";");
    }
    std::vector<std::string> xr(R);
    for (int64_t q = 0; q < R; ++q) {
      std::string v = Eval(x, Idx{{n, c, ihc, iwc[q]}, "", {}});
      std::string ok = check_h && check_w ? "(" + ihok + " && " + iwok[q] + ")"
                       : check_h          ? ihok
                       : check_w          ? iwok[q]
                                          : "";
      xr[q] = ok.empty() ? v : Decl(CT::kF32, ok + " ? " + v + " : 0.0");
    }
    for (int64_t kw = 0; kw < KW; ++kw)
      for (int64_t tw = 0; tw < TW; ++tw)
        Mac(acc[th][tw], xr[tw * st[1] + kw * dil[1]], wv[kw], CT::kF32);
  }
  CloseN(opened);
  // The bias goes onto the finished sums (as in EvalConv), then the epilogue.
  StoreAnchorBlock(
      op, acc,
      [&](const std::string& i, const std::string& j) {
        return Idx{{n, o, AddE(oh0, i), AddE(ow0, j)}, "", {}};
      },
      [&](const std::string& i, const std::string& j) {
        std::string guard;
        if (OH % TH) guard = AddE(oh0, i) + " < " + std::to_string(OH);
        if (OW % TW) guard += (guard.empty() ? "" : " && ") + AddE(ow0, j) + " < " + std::to_string(OW);
        return guard;
      },
      b ? BlockFn([&](const std::string&, const std::string&) { return Eval(b, Idx{{o}, "", {}}); })
        : BlockFn());
}

}  // namespace kiln::codegen::detail
