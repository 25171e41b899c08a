// conv-transpose-tiled: tensor.conv_transpose (2-D) register blocks (see
// codegen.cc; the block size comes from schedule_table.h
// SelectConvTransposeTile, the tap rules and the summation order from
// conv_transpose_schedule.h).
//
// One invocation computes TO output channels x TW output columns of one
// stride phase of one output row: y[n, m0 .. m0+TO-1, oh, ow0 + s_w * tw]
// for tw < TW. Every column of the block reads the same taps, so per tap
// (kh, kw) and input channel it loads TW inputs (one per column, at
// consecutive input columns) and TO weights for TO * TW multiply-adds. For
// PaddleOCR det's 2x2 stride-2 upsampling (24 -> 24 channels) that is 16
// loads per 64 multiply-adds, against 2 loads per multiply-add in the
// pointwise gather.
//
// conv-transpose-upsample, for stride == kernel (dilation 1, no pads, no
// output_padding): each output reads exactly one tap of one input pixel,
// y[n, m, ih*s_h + kh, iw*s_w + kw], so one invocation takes TO output
// channels x TW input columns of one input row and writes each pixel's
// KH x KW outputs: per input channel TW inputs and TO * KH * KW weights for
// TO * TW * KH * KW multiply-adds (det's 24 -> 1 upsampler: 20 loads per
// 64, against 17 per 16 as conv-transpose-tiled).
#include <algorithm>
#include <numeric>

#include "compiler/codegen/conv_transpose_schedule.h"
#include "compiler/codegen/generator.h"
#include "compiler/ir/conv_transpose.h"

namespace kiln::codegen::detail {

void Generator::EmitConvTransposeTiledMain(Operation* op, int64_t TO, int64_t TW, uint32_t wx,
                                           uint32_t wy) {
  ir::ConvTransposeParams p;
  std::string error;
  if (!ir::GetConvTransposeParams(*op, &p, &error) || p.spatial != 2) {
    Fail(Unsupported(op, error.empty() ? "conv-transpose-tiled expects 2 spatial dims" : error));
    return;
  }
  Value* x = op->operand(0);
  Value* w = op->operand(1);
  Value* b = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const Shape &xs = ShapeOf(x), &ws = ShapeOf(w), &os = ShapeOf(op->result());
  const int64_t H = xs[2], W = xs[3], Cg = xs[1] / p.group, Mg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t M = os[1], OH = os[2], OW = os[3];
  const int64_t sh = p.strides[0], sw = p.strides[1], dh = p.dilations[0], dw = p.dilations[1];
  const int64_t ph = p.pads[0], pw = p.pads[1];
  // Phases (ow mod s_w) that hold an output, columns per phase, column tiles.
  const int64_t P = std::min(sw, OW), J = (OW + sw - 1) / sw, tiles = (J + TW - 1) / TW;
  const Shape ts = {os[0], M / TO, OH, P, tiles};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " strides=" + ShapeStr(p.strides) + " pads=" + ShapeStr(p.pads) +
       " dilations=" + ShapeStr(p.dilations) + " group=" + std::to_string(p.group) +
       ": each invocation computes " + std::to_string(TO) + " output channels x " + std::to_string(TW) +
       " columns of one stride phase");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], oh = t[2];
  const std::string m0 = DeclI(MulC(t[1], TO), "m");
  // First column of the block, and its padded position (>= 0).
  const std::string ow0 = DeclI(AddE(t[3], MulC(t[4], sw * TW)), "ow");
  const std::string tw0 = DeclI(AddC(ow0, pw), "tw");

  const std::string acc = DeclareAccumulators(TO * TW);
  auto at = [&](const std::string& a, const std::string& to, const std::string& tw) {
    return a + "[" + AddE(MulC(to, TW), tw) + "]";
  };
  Open("");
  int opened = 0;
  const std::string cbase = p.group == 1 ? "0" : DeclI(MulC(DivC(m0, Mg), Cg), "cb");
  const std::string mg0 = p.group == 1 ? m0 : DeclI("(" + m0 + " % " + I(Mg) + ")", "mg");
  // Row taps: the pointwise gather's loop (conv_transpose_schedule.cc), for
  // the block's one output row.
  const int64_t gh = std::gcd(sh, dh), gw = std::gcd(sw, dw);
  const std::string th = DeclI(AddC(oh, ph), "th");
  if (gh > 1) {
    Open("if (" + th + " % " + I(gh) + " == 0)");
    ++opened;
  }
  const std::string kh = Fresh("kh");
  Open("for (int " + kh + " = " + FirstTapExpr(th, sh, dh) + "; " + kh + " < " + I(KH) + "; " + kh +
       " += " + I(sh / gh) + ")");
  ++opened;
  const std::string uh = DeclI("(" + th + " - " + MulC(kh, dh) + ")", "uh");
  Line("if (" + uh + " < 0) break;");
  const std::string ih = DeclI(DivC(uh, sh), "ih");
  Open("if (" + ih + " < " + I(H) + ")");
  ++opened;
  // Column taps: the same for every column of the block (one phase).
  if (gw > 1) {
    Open("if (" + tw0 + " % " + I(gw) + " == 0)");
    ++opened;
  }
  const std::string kw = Fresh("kw");
  Open("for (int " + kw + " = " + FirstTapExpr(tw0, sw, dw) + "; " + kw + " < " + I(KW) + "; " + kw +
       " += " + I(sw / gw) + ")");
  ++opened;
  // Input column of column 0: (tw0 - kw * dw) / sw, an exact division of a
  // value that may be negative, written with a bias A * sw that makes the
  // dividend >= 0 (GLSL leaves negative int division to the driver).
  const int64_t A = ((KW - 1) * dw + sw - 1) / sw;
  const std::string iw0 =
      DeclI(AddC(DivC("(" + AddC(tw0, A * sw) + " - " + MulC(kw, dw) + ")", sw), -A), "iw");
  // Does any column of any block read outside [0, W)? (Columns past OW
  // included: their loads must stay inside the binding too.) Exhaustive over
  // phases, tiles and taps: a few thousand steps for real shapes.
  bool check_w = false, last_negative = false;
  for (int64_t ph_ = 0; ph_ < P && !check_w; ++ph_)
    for (int64_t tile = 0; tile < tiles && !check_w; ++tile) {
      const int64_t t0 = ph_ + tile * sw * TW + pw;
      if (t0 % gw != 0) continue;
      for (int64_t k = 0; k < KW; ++k) {
        if ((t0 - k * dw) % sw != 0) continue;
        const int64_t first = (t0 - k * dw) / sw;  // exact
        if (first < 0 || first + TW - 1 >= W) check_w = true;
        if (first + TW - 1 < 0) last_negative = true;
      }
    }
  // Taps visit decreasing input columns: once the block's last column is
  // left of the input, so is every later tap (the gather's `break`).
  if (last_negative) Line("if (" + AddC(iw0, TW - 1) + " < 0) break;");

  // Per tap: a TO x TW array of dots over the group's input channels (fma,
  // channel order), then added to the sums (conv_transpose_schedule.h).
  // When every output reads at most one tap (kernel <= stride / gcd in both
  // dims: the decoders' 2x2 stride 2), the sum is that tap's dot (0.0 + dot
  // is dot: a dot that starts at +0.0 is never -0.0), so the dots
  // accumulate into the sums directly: half the registers, the same bits.
  const bool one_tap = KH <= sh / gh && KW <= sw / gw;
  const std::string dot = one_tap ? acc : Fresh("dot");
  if (!one_tap) {
    Line("float " + dot + "[" + I(TO * TW) + "];");
    int o = 0;
    const std::string i = OpenUnrolled(TO * TW, "a", &o);
    Line(dot + "[" + i + "] = 0.0;");
    CloseN(o);
  }
  {
    int oc = 0;
    const std::string c = OpenLoop(Cg, "c", false, &oc);
    const std::string ch = DeclI(AddE(cbase, c), "ch");
    const std::string xr = Fresh("xr");
    Line("float " + xr + "[" + I(TW) + "];");
    {
      int o = 0;
      const std::string tw = OpenUnrolled(TW, "tw", &o);
      const std::string iw = DeclI(AddE(iw0, tw), "iw");
      if (check_w) {
        const std::string iwc = DeclI("clamp(" + iw + ", 0, " + I(W - 1) + ")", "iwc");
        const std::string v = Convert(Eval(x, Idx{{n, ch, ih, iwc}, "", {}}), CTOf(x), CT::kF32);
        Line(xr + "[" + tw + "] = " + InRange(iw, W) + " ? " + v + " : 0.0;");
      } else {
        Line(xr + "[" + tw + "] = " + Convert(Eval(x, Idx{{n, ch, ih, iw}, "", {}}), CTOf(x), CT::kF32) + ";");
      }
      CloseN(o);
    }
    const std::string wv = Fresh("wv");
    Line("float " + wv + "[" + I(TO) + "];");
    {
      int o = 0;
      const std::string to = OpenUnrolled(TO, "to", &o);
      Line(wv + "[" + to + "] = " +
           Convert(Eval(w, Idx{{ch, AddE(mg0, to), kh, kw}, "", {}}), CTOf(w), CT::kF32) + ";");
      CloseN(o);
    }
    int o = 0;
    const std::string to = OpenUnrolled(TO, "to", &o);
    const std::string tw = OpenUnrolled(TW, "tw", &o);
    Mac(at(dot, to, tw), xr + "[" + tw + "]", wv + "[" + to + "]", CT::kF32);
    CloseN(o);
    CloseN(oc);
  }
  if (!one_tap) {
    int o = 0;
    const std::string i = OpenUnrolled(TO * TW, "a", &o);
    Line(acc + "[" + i + "] += " + dot + "[" + i + "];");
    CloseN(o);
  }
  CloseN(opened);
  Close();
  // The bias goes onto the finished sums (ONNX Runtime adds it after col2im).
  AddBlockBias(b, acc, m0, TO, TW);
  // The epilogue, as conv-tiled writes it (schedule_conv.cc): column 0 in
  // the channel's scope, so its per-channel operands (a folded batch-norm
  // scale and shift) are loaded once per channel, then a loop over the other
  // columns. A column is past the row when its phase has fewer columns
  // (OW not a multiple of s_w) or the last tile is ragged.
  auto needs_guard = [&](int64_t tw) { return (P - 1) + sw * ((tiles - 1) * TW + tw) >= OW; };
  int o = 0;
  const std::string to = OpenUnrolled(TO, "to", &o);
  auto store = [&](const std::string& tw, bool guard) {
    const std::string ow = AddE(ow0, MulC(tw, sw));
    Idx idx{{n, AddE(m0, to), oh, ow}, "", {}};
    if (guard) {
      StoreAnchorElement(op, idx, at(acc, to, tw), ow + " < " + std::to_string(OW));
    } else {
      cache_.back()[Key(op->result(), idx)] = at(acc, to, tw);
      StoreResults(idx, os);
    }
  };
  store("0", needs_guard(0));
  if (TW > 1) {
    const std::string tw = Fresh("tw");
    uses_ctrl_attr_ = true;
    Open("[[unroll]] for (int " + tw + " = 1; " + tw + " < " + I(TW) + "; ++" + tw + ")");
    store(tw, needs_guard(TW - 1));
    Close();
  }
  CloseN(o);
}

void Generator::EmitConvTransposeUpsampleMain(Operation* op, int64_t TO, int64_t TW, const ConvTexels& texels,
                                              uint32_t wx, uint32_t wy) {
  ir::ConvTransposeParams p;
  std::string error;
  if (!ir::GetConvTransposeParams(*op, &p, &error) || p.spatial != 2) {
    Fail(Unsupported(op, error.empty() ? "conv-transpose-upsample expects 2 spatial dims" : error));
    return;
  }
  Value* x = op->operand(0);
  Value* w = op->operand(1);
  Value* b = op->num_operands() > 2 ? op->operand(2) : nullptr;
  const Shape &xs = ShapeOf(x), &ws = ShapeOf(w), &os = ShapeOf(op->result());
  const int64_t H = xs[2], W = xs[3], Cg = xs[1] / p.group, Mg = ws[1], KH = ws[2], KW = ws[3];
  const int64_t M = os[1], T = KH * KW;
  const Shape ts = {os[0], M / TO, H, (W + TW - 1) / TW};
  Line("uint gid = " + WorkgroupIndex(wx, wy) + " * " + std::to_string(kWorkgroupSize) +
       "u + gl_LocalInvocationID.x;");
  Line("if (gid >= " + std::to_string(NumElements(ts)) + "u) return;");
  Line("// " + Comment(op) + " strides=" + ShapeStr(p.strides) + " group=" + std::to_string(p.group) +
       ": each invocation computes " + std::to_string(TO) + " output channels x " + std::to_string(TW) +
       " input columns x " + std::to_string(KH) + "x" + std::to_string(KW) + " taps");
  std::vector<std::string> t = Decompose("gid", ts);
  const std::string n = t[0], ih = t[2];
  const std::string m0 = DeclI(MulC(t[1], TO), "m");
  const std::string iw0 = DeclI(MulC(t[3], TW), "iw");
  // acc[(to * T + k) * TW + tw], k = kh * KW + kw: one tap per output, so
  // the channel dot is the sum (conv_transpose_schedule.h).
  const std::string acc = DeclareAccumulators(TO * T * TW);
  auto at = [&](const std::string& to, const std::string& e) { return acc + "[" + AddE(MulC(to, T * TW), e) + "]"; };
  const bool ragged = W % TW != 0;
  Open("");
  {
    const std::string cbase = p.group == 1 ? "0" : DeclI(MulC(DivC(m0, Mg), Cg), "cb");
    const std::string mg0 = p.group == 1 ? m0 : DeclI("(" + m0 + " % " + I(Mg) + ")", "mg");
    int oc = 0;
    const std::string c = OpenLoop(Cg, "c", false, &oc);
    const std::string ch = DeclI(AddE(cbase, c), "ch");
    const std::string xr = Fresh("xr");
    Line("float " + xr + "[" + I(TW) + "];");
    if (texels.input) {
      // TW / 4 whole texels from x[n, ch, ih, iw0] (W and iw0 multiples of
      // 4); a ragged last block's extra columns read on, clamped to the
      // binding (their outputs are not stored).
      const std::string xt = UseTexels(arg_binding_.at(x));
      const std::string first =
          DeclI(AddE(MulC(AddE(MulC(AddE(MulC(n, xs[1]), ch), H), ih), W / 4), MulC(t[3], TW / 4)), "tx");
      const std::string xq = Fresh("xq");
      Line("vec4 " + xq + "[" + I(TW / 4) + "];");
      int o = 0;
      const std::string j = OpenUnrolled(TW / 4, "j", &o);
      const std::string at_j = AddE(first, j);
      Line(xq + "[" + j + "] = texelFetch(" + xt + ", " +
           (ragged ? "min(" + at_j + ", " + I(NumElements(xs) / 4 - 1) + ")" : at_j) + ");");
      CloseN(o);
      o = 0;
      const std::string tw = OpenUnrolled(TW, "tw", &o);
      Line(xr + "[" + tw + "] = " + xq + "[" + tw + " >> 2][" + tw + " & 3];");
      CloseN(o);
    } else {
      int o = 0;
      const std::string tw = OpenUnrolled(TW, "tw", &o);
      const std::string iw = DeclI(AddE(iw0, tw), "iw");
      if (ragged) {  // the last tile's columns past W load a clamped 0
        const std::string iwc = DeclI("min(" + iw + ", " + I(W - 1) + ")", "iwc");
        const std::string v = Convert(Eval(x, Idx{{n, ch, ih, iwc}, "", {}}), CTOf(x), CT::kF32);
        Line(xr + "[" + tw + "] = " + iw + " < " + I(W) + " ? " + v + " : 0.0;");
      } else {
        Line(xr + "[" + tw + "] = " + Convert(Eval(x, Idx{{n, ch, ih, iw}, "", {}}), CTOf(x), CT::kF32) + ";");
      }
      CloseN(o);
    }
    const std::string wv = Fresh("wv");
    Line("float " + wv + "[" + I(TO * T) + "];");
    if (texels.weights) {
      // w[ch, mg0 .. mg0+TO-1, :, :]: TO * T contiguous floats from a
      // texel boundary (T % 4 == 0).
      const std::string wt = UseTexels(arg_binding_.at(w));
      const std::string first = DeclI(MulC(AddE(MulC(ch, Mg), mg0), T / 4), "wt");
      const std::string wq = Fresh("wq");
      Line("vec4 " + wq + "[" + I(TO * T / 4) + "];");
      int o = 0;
      const std::string j = OpenUnrolled(TO * T / 4, "j", &o);
      Line(wq + "[" + j + "] = texelFetch(" + wt + ", " + AddE(first, j) + ");");
      CloseN(o);
      o = 0;
      const std::string i = OpenUnrolled(TO * T, "i", &o);
      Line(wv + "[" + i + "] = " + wq + "[" + i + " >> 2][" + i + " & 3];");
      CloseN(o);
    } else {
      int o = 0;
      const std::string to = OpenUnrolled(TO, "to", &o);
      const std::string k = OpenUnrolled(T, "k", &o);
      Line(wv + "[" + AddE(MulC(to, T), k) + "] = " +
           Convert(Eval(w, Idx{{ch, AddE(mg0, to), DivC(k, KW), "(" + k + " % " + I(KW) + ")"}, "", {}}),
                   CTOf(w), CT::kF32) +
           ";");
      CloseN(o);
    }
    int o = 0;
    const std::string to = OpenUnrolled(TO, "to", &o);
    const std::string k = OpenUnrolled(T, "k", &o);
    const std::string tw = OpenUnrolled(TW, "tw", &o);
    Mac(at(to, AddE(MulC(k, TW), tw)), xr + "[" + tw + "]", wv + "[" + AddE(MulC(to, T), k) + "]", CT::kF32);
    CloseN(o);
    CloseN(oc);
  }
  Close();
  AddBlockBias(b, acc, m0, TO, T * TW);
  // The epilogue: output (kh, kw) of input column iw0 + tw is y[.., ih*s_h +
  // kh, (iw0 + tw)*s_w + kw]; element e = k * TW + tw of a channel. Element
  // 0 in the channel's scope (its per-channel operands loaded once), then a
  // loop over the rest (conv-tiled's pattern, schedule_conv.cc).
  int o = 0;
  const std::string to = OpenUnrolled(TO, "to", &o);
  auto store = [&](const std::string& e, bool guarded) {
    const std::string k = e == "0" ? "0" : DivC(e, TW), tw = e == "0" ? "0" : "(" + e + " % " + I(TW) + ")";
    const std::string oh = AddE(MulC(ih, KH), e == "0" ? "0" : DivC(k, KW));
    const std::string iw = AddE(iw0, tw);
    const std::string ow = AddE(MulC(iw, KW), e == "0" ? "0" : "(" + k + " % " + I(KW) + ")");
    Idx idx{{n, AddE(m0, to), oh, ow}, "", {}};
    if (guarded) {
      StoreAnchorElement(op, idx, at(to, e), iw + " < " + std::to_string(W));
    } else {
      cache_.back()[Key(op->result(), idx)] = at(to, e);
      StoreResults(idx, os);
    }
  };
  store("0", false);  // iw0 < W
  if (T * TW > 1) {
    const std::string e = Fresh("e");
    uses_ctrl_attr_ = true;
    Open("[[unroll]] for (int " + e + " = 1; " + e + " < " + I(T * TW) + "; ++" + e + ")");
    store(e, ragged);
    Close();
  }
  CloseN(o);
}

}  // namespace kiln::codegen::detail
