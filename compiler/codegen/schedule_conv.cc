// conv-tiled: tensor.conv2d register tiles (see codegen.cc; the block size
// comes from schedule_table.h SelectConvTile).
#include "compiler/codegen/generator.h"

#include <algorithm>

namespace kiln::codegen::detail {

void Generator::EmitConvTiledMain(Operation* op, int64_t TO, int64_t TW, const ConvTexels& texels,
                                  uint32_t wx, uint32_t wy) {
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
  // Flattened positions (schedule_table.h ConvFlattensPositions): H = OH =
  // 1 and W = OW = H * W below; x and the result are indexed by position
  // (flat), and the real row and column of a position (xidx, oidx) only
  // reach operands that broadcast along them.
  const bool flat = ConvFlattensPositions(xs, ws, st, pads);
  const Shape xe = ConvTileShape(xs, flat), oe = ConvTileShape(os, flat);
  const int64_t H = xe[2], W = xe[3], O = ws[0], Cg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t OH = oe[2], OW = oe[3], Og = O / group;
  auto flat_idx = [&](const Shape& real, const std::string& n0, const std::string& c0, const std::string& p) {
    return Idx{{n0, c0, DeclI(DivC(p, real[3]), "h"), DeclI("(" + p + " % " + I(real[3]) + ")", "w")},
               AddE(MulC(AddE(MulC(n0, real[1]), c0), real[2] * real[3]), p), real};
  };
  auto xidx = [&](const std::string& n0, const std::string& c0, const std::string& ih0_, const std::string& iw) {
    return flat ? flat_idx(xs, n0, c0, iw) : Idx{{n0, c0, ih0_, iw}, "", {}};
  };
  auto oidx = [&](const std::string& n0, const std::string& o, const std::string& oh0, const std::string& ow) {
    return flat ? flat_idx(os, n0, o, ow) : Idx{{n0, o, oh0, ow}, "", {}};
  };
  const Shape ts = {os[0], O / TO, OH, (OW + TW - 1) / TW};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " strides=" + ShapeStr(st) + " pads=" + ShapeStr(pads) +
       " dilations=" + ShapeStr(dil) + " group=" + std::to_string(group) + ": each invocation computes " +
       std::to_string(TO) + " output channels x " + std::to_string(TW) + (flat ? " positions" : " columns"));
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], oh = t[2];
  const std::string o0 = DeclI(MulC(t[1], TO), "o"), ow0 = DeclI(MulC(t[3], TW), "ow");
  // The TO x TW accumulators are one array, and every loop over the block
  // is an [[unroll]] loop: the driver unrolls them and keeps the array in
  // registers, and the module holds the block's code once rather than
  // TO x TW times (the epilogue, a hard-swish say, is most of it).
  const std::string acc = DeclareAccumulators(TO * TW);
  auto at = [&](const std::string& to, const std::string& tw) {
    return acc + "[" + AddE(MulC(to, TW), tw) + "]";
  };
  Open("");
  const std::string cbase = group == 1 ? "0" : DeclI(MulC(DivC(o0, Og), Cg), "cb");
  const std::string ih0 = DeclI(AddC(MulC(oh, st[0]), -pads[0]), "ih");
  const std::string iw0 = DeclI(AddC(MulC(ow0, st[1]), -pads[1]), "iw");
  const bool check_h = pads[0] > 0 || (OH - 1) * st[0] - pads[0] + (KH - 1) * dil[0] >= H;
  const bool check_w = pads[1] > 0 || (ts[3] * TW - 1) * st[1] - pads[1] + (KW - 1) * dil[1] >= W;
  int opened = 0;
  // Texel operands (schedule_table.h SelectConvTexels): the input rows as
  // vec4s along W, a 1x1 kernel's weights as vec4s of 4 input channels.
  Value* const xsrc = texels.input ? ElementwiseSource(x) : nullptr;
  const std::string xt = texels.input ? UseTexels(arg_binding_.at(xsrc)) : "";
  const std::string wt =
      texels.weights || texels.weight_kernels || texels.weight_rows ? UseTexels(arg_binding_.at(w)) : "";
  std::string wk;  // weight_rows: the TO x KW weights of one (ic, kh)
  std::string ic, wq, q;
  std::string wf, klead;  // weight_kernels: TK texels per output channel, and the kernel's lead
  const int64_t taps = KH * KW, TK = (taps + 3 + 3) / 4;
  if (texels.weights) {
    // The TO weight texels of 4 input channels, then a loop over the 4.
    const std::string ic4 = OpenLoop(Cg / 4, "ic", false, &opened);
    wq = Fresh("wq");
    Line("vec4 " + wq + "[" + I(TO) + "];");
    int o = 0;
    const std::string to = OpenUnrolled(TO, "to", &o);
    Line(wq + "[" + to + "] = texelFetch(" + wt + ", " + AddE(MulC(AddE(o0, to), Cg / 4), ic4) + ");");
    CloseN(o);
    q = OpenUnrolled(4, "q", &opened);
    ic = DeclI(AddE(MulC(ic4, 4), q), "ic");
  } else if (texels.weight_kernels) {
    // 4 input channels at a time; per channel q the TO kernels, each from
    // TK texels starting (q * taps) & 3 floats in: constants once the
    // driver unrolls q, so no selects.
    const std::string ic4 = OpenLoop(Cg / 4, "ic", false, &opened);
    q = OpenUnrolled(4, "q", &opened);
    ic = DeclI(AddE(MulC(ic4, 4), q), "ic");
    const std::string qt = DeclI(MulC(q, taps), "qt");
    klead = DeclI("(" + qt + " & 3)", "kl");
    wf = Fresh("wf");
    Line("vec4 " + wf + "[" + I(TO * TK) + "];");
    int o = 0;
    const std::string to = OpenUnrolled(TO, "to", &o);
    const std::string base =
        DeclI(AddE(DivC(MulC(AddE(MulC(AddE(o0, to), Cg), MulC(ic4, 4)), taps), 4), "(" + qt + " >> 2)"), "wb");
    const std::string j = OpenUnrolled(TK, "j", &o);
    Line(wf + "[" + AddE(MulC(to, TK), j) + "] = texelFetch(" + wt + ", min(" + AddE(base, j) + ", " +
         I(NumElements(ws) / 4 - 1) + "));");
    CloseN(o);
  } else {
    ic = OpenLoop(Cg, "ic", false, &opened);
  }
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
    if (!check_w) return Eval(x, xidx(n, c, ih, iw));
    std::string iwc = DeclI("clamp(" + iw + ", 0, " + I(W - 1) + ")", "iwc");
    std::string v = Eval(x, xidx(n, c, ih, iwc));
    return Decl(CT::kF32, InRange(iw, W) + " ? " + v + " : 0.0");
  };
  // The TO weights of one (ic, kh, kw), into an array.
  auto load_w = [&](const std::string& kw) {
    const std::string wv = Fresh("wv");
    Line("float " + wv + "[" + I(TO) + "];");
    int o = 0;
    const std::string to = OpenUnrolled(TO, "to", &o);
    std::string v;
    if (texels.weights) {
      v = wq + "[" + to + "][" + q + "]";
    } else if (texels.weight_kernels) {
      const std::string e = DeclI(AddE(klead, AddE(MulC(kh, KW), kw)), "e");
      v = wf + "[" + AddE(MulC(to, TK), "(" + e + " >> 2)") + "][" + e + " & 3]";
    } else if (texels.weight_rows) {
      v = wk + "[" + AddE(MulC(to, KW), kw) + "]";
    } else {
      v = Eval(w, Idx{{AddE(o0, to), ic, kh, kw}, "", {}});
    }
    Line(wv + "[" + to + "] = " + v + ";");
    CloseN(o);
    return wv;
  };
  const int64_t R = (TW - 1) * st[1] + (KW - 1) * dil[1] + 1;
  if (KW <= kMaxUnroll && R <= kConvMaxInputRow) {
    // One row of inputs serves every (kw, column) pair.
    const std::string xr = Fresh("xr");
    Line("float " + xr + "[" + I(R) + "];");
    if (texels.input) {
      // The row [iw0, iw0 + R) from T texels starting `lead` elements before
      // it: iw0 = ow0 * stride - pad, and ow0 * stride is a multiple of 4.
      const int64_t lead = ((pads[1] % 4) == 0) ? 0 : 4 - pads[1] % 4, T = (lead + R + 3) / 4;
      const int64_t texels_total = NumElements(xs) / 4;
      const std::string row = DeclI(MulC(AddE(MulC(AddE(MulC(n, xs[1]), c), H), ih), W / 4), "row");
      const std::string first = DeclI(AddE(row, DivC(AddC(iw0, -lead), 4)), "tx");
      const std::string xv = Fresh("xv");
      Line("vec4 " + xv + "[" + I(T) + "];");
      int o = 0;
      const std::string j = OpenUnrolled(T, "j", &o);
      const std::string at_j = AddE(first, j);
      Line(xv + "[" + j + "] = texelFetch(" + xt + ", " +
           (check_w ? "clamp(" + at_j + ", 0, " + I(texels_total - 1) + ")" : at_j) + ");");
      CloseN(o);
      // Element r of the row; with a prologue, the fetched element is its
      // operand's value at this index (seeded into the evaluation cache)
      // and the prologue computes x from it.
      auto element = [&](const std::string& r) {
        const std::string e = DeclI(AddC(r, lead), "e");
        std::string v = xv + "[" + e + " >> 2][" + e + " & 3]";
        if (xsrc != x) {
          const std::string iw =
              DeclI(check_w ? "clamp(" + AddE(iw0, r) + ", 0, " + I(W - 1) + ")" : AddE(iw0, r), "iw");
          const Idx idx = xidx(n, c, ih, iw);
          cache_.back()[Key(xsrc, idx)] = Decl(CT::kF32, v);
          v = Eval(x, idx);
        }
        Line(xr + "[" + r + "] = " + (check_w ? InRange(AddE(iw0, r), W) + " ? " + v + " : 0.0" : v) + ";");
      };
      if (xsrc == x) {
        o = 0;
        element(OpenUnrolled(R, "r", &o));
        CloseN(o);
      } else {
        // Column 0 in the channel's scope, so that the prologue's
        // per-channel operands (the squeeze-excite scale) load once per
        // row, not per column; then the other columns.
        element("0");
        const std::string r = Fresh("r");
        uses_ctrl_attr_ = true;
        Open("[[unroll]] for (int " + r + " = 1; " + r + " < " + I(R) + "; ++" + r + ")");
        element(r);
        Close();
      }
    } else {
      int o = 0;
      const std::string r = OpenUnrolled(R, "r", &o);
      Line(xr + "[" + r + "] = " + load_x(DeclI(AddE(iw0, r), "iw")) + ";");
      CloseN(o);
    }
    int o = 0;
    if (texels.weight_rows) {
      // Per output channel, the KW weights of (ic, kh) start `lead` floats
      // into texel `base`; each is picked from the fetched texels by lead.
      const int64_t TK = (KW + 3 + 3) / 4, last = NumElements(ws) / 4 - 1;
      wk = Fresh("wk");
      Line("float " + wk + "[" + I(TO * KW) + "];");
      const std::string to = OpenUnrolled(TO, "to", &o);
      const std::string tb =
          DeclI(AddE(MulC(AddE(MulC(AddE(o0, to), Cg), ic), KH * KW), MulC(kh, KW)), "wb");
      const std::string lead = DeclI(tb + " & 3", "lead"), base = DeclI(tb + " >> 2", "base");
      const std::string wf = Fresh("wf");
      Line("vec4 " + wf + "[" + I(TK) + "];");
      int oj = 0;
      const std::string j = OpenUnrolled(TK, "j", &oj);
      Line(wf + "[" + j + "] = texelFetch(" + wt + ", min(" + AddE(base, j) + ", " + I(last) + "));");
      CloseN(oj);
      oj = 0;
      const std::string kw = OpenUnrolled(KW, "kw", &oj);
      auto elem = [&](int64_t d) {
        const std::string e = AddC(kw, d);
        return wf + "[(" + e + ") >> 2][(" + e + ") & 3]";
      };
      Line(wk + "[" + AddE(MulC(to, KW), kw) + "] = " + lead + " == 0 ? " + elem(0) + " : " + lead +
           " == 1 ? " + elem(1) + " : " + lead + " == 2 ? " + elem(2) + " : " + elem(3) + ";");
      CloseN(oj);
      CloseN(o);
      o = 0;
    }
    const std::string kw = OpenUnrolled(KW, "kw", &o);
    const std::string wv = load_w(kw);
    const std::string to = OpenUnrolled(TO, "to", &o);
    const std::string tw = OpenUnrolled(TW, "tw", &o);
    Mac(at(to, tw), xr + "[" + AddE(MulC(tw, st[1]), MulC(kw, dil[1])) + "]", wv + "[" + to + "]",
        CT::kF32);
    CloseN(o);
  } else {
    const std::string kw = OpenLoop(KW, "kw", false, &opened);
    const std::string wv = load_w(kw);
    int o = 0;
    const std::string tw = OpenUnrolled(TW, "tw", &o);
    const std::string xv = load_x(DeclI(AddE(AddE(iw0, MulC(tw, st[1])), MulC(kw, dil[1])), "iw"));
    const std::string to = OpenUnrolled(TO, "to", &o);
    Mac(at(to, tw), xv, wv + "[" + to + "]", CT::kF32);
    CloseN(o);
  }
  CloseN(opened);
  Close();
  // The bias goes onto the finished sums (as in EvalConv).
  AddBlockBias(b, acc, o0, TO, TW);
  // The epilogue, in the module twice per block rather than TO x TW times:
  // column 0 of each channel (never guarded: ow0 < OW) in the channel's
  // scope, so that its per-channel operands (a folded batch-norm scale and
  // shift) are loaded once and the other columns' loop reuses them. On
  // lavapipe a load costs ~19 instructions per lane, and loading them per
  // element made cls's batch-norm convs 1.2-1.45x slower.
  int o = 0;
  const std::string to = OpenUnrolled(TO, "to", &o);
  auto store = [&](const std::string& tw) {
    const std::string ow = AddE(ow0, tw);
    Idx idx = oidx(n, AddE(o0, to), oh, ow);
    if (OW % TW != 0 && tw != "0") {
      StoreAnchorElement(op, idx, at(to, tw), ow + " < " + std::to_string(OW));
    } else {
      cache_.back()[Key(op->result(), idx)] = at(to, tw);
      StoreResults(idx, ShapeOf(op->result()));
    }
  };
  store("0");
  if (TW > 1) {
    const std::string tw = Fresh("tw");
    uses_ctrl_attr_ = true;
    Open("[[unroll]] for (int " + tw + " = 1; " + tw + " < " + I(TW) + "; ++" + tw + ")");
    store(tw);
    Close();
  }
  CloseN(o);
}

Value* Generator::ElementwiseSource(Value* x) {
  if (arg_binding_.count(x)) return x;
  const Shape& shape = ShapeOf(x);
  Value* found = nullptr;
  std::vector<Value*> stack = {x};
  int visited = 0;
  while (!stack.empty()) {
    Value* v = stack.back();
    stack.pop_back();
    if (++visited > 64) return nullptr;
    if (arg_binding_.count(v)) {
      if (ShapeOf(v) != shape) continue;  // broadcast along the row: a per-channel operand
      if (found && found != v) return nullptr;
      found = v;
      continue;
    }
    Operation* op = v->defining_op();
    if (!op) return nullptr;
    if (op->is(ir::OpCode::kTensorConstant)) continue;
    if (!ir::Traits(op).is_elementwise()) return nullptr;
    for (Value* operand : op->operands()) stack.push_back(operand);
  }
  return found;
}

}  // namespace kiln::codegen::detail
