// conv-tiled: tensor.conv2d register tiles (see codegen.cc; the block size
// comes from schedule_table.h SelectConvTile).
#include "compiler/codegen/generator.h"

#include <algorithm>

namespace kiln::codegen::detail {

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
  if (KW <= kMaxUnroll && R <= kConvMaxInputRow) {
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
  // One scope per output channel: the epilogue's per-channel operands (a
  // folded batch-norm scale and shift, a bias) are loaded once for the TW
  // columns, at column 0, which is never guarded.
  for (int64_t to = 0; to < TO; ++to) {
    Open("");
    for (int64_t tw = 0; tw < TW; ++tw) {
      std::string ow = AddC(ow0, tw);
      Idx idx{{n, AddC(o0, to), oh, ow}, "", {}};
      if (OW % TW != 0 && tw > 0) {
        StoreAnchorElement(op, idx, acc[to][tw], ow + " < " + std::to_string(OW));
      } else {
        cache_.back()[Key(op->result(), idx)] = acc[to][tw];
        StoreResults(idx, ShapeOf(op->result()));
      }
    }
    Close();
  }
}

}  // namespace kiln::codegen::detail
