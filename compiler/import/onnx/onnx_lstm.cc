// ONNX LSTM → tensor-level ops, unrolled over the (static) time steps.
//
// Per direction d (gate order of W, R, B: i, o, f, c; of P: i, o, f):
//   XW  = matmul(reshape(X, [S*B, I]), transpose(W[d])) + (Wb[d] + Rb[d])
//         → reshape [S, B, 4H]                      (one matmul for all steps)
//   for each step t (S-1 .. 0 for reverse):
//     g  = reshape(slice(XW, t), [B, 4H]) + matmul(H, transpose(R[d]))
//     gi, go, gf, gc = slices of g (H columns each)
//     i = f(gi + Pi*C), f = f(gf + Pf*C) (or 1 - i with input_forget),
//     c~ = g(gc), C = f*C + i*c~, o = f(go + Po*C), H = o * h(C)
//   Y[t, d] = H;  Y_h[d] = H, Y_c[d] = C after the last step.
// sequence_lens (constant or a runtime input, int32 [B]): at a step t at or
// past entry b's length, Y[t, d, b] is 0 and H, C of entry b are held
// (select on the mask t < len, StepMasks); so Y_h, Y_c are the states after
// each entry's last step, and the reverse direction starts at len - 1, as in
// ONNX's reference implementation and ONNX Runtime.
// f, g, h default to Sigmoid, Tanh, Tanh; `clip` clamps every gate input.
// Constant weights make the transposes, slices and bias sums fold at import.
// Example (one step, forward, B=1, H=64):
//   %g = "tensor.add"(%xw_t, %hr) : (tensor<1x256xf32>, tensor<1x256xf32>) -> tensor<1x256xf32>
//   %gi = "tensor.slice"(%g) {starts = [0, 0], strides = [1, 1]} : ... -> tensor<1x64xf32>
//   %i = "tensor.sigmoid"(%gi) ...   %c = "tensor.add"(%fc, %ic) ...   %h = "tensor.mul"(%o, %tc)
#include <algorithm>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::LSTM(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  auto opt = [&](size_t i) -> Value* { return in.size() > i ? in[i] : nullptr; };
  Value* x = in[0];
  Value* w = in[1];
  Value* r = in[2];
  Value* b = opt(3);
  Value* seq_lens = opt(4);
  Value* h0 = opt(5);
  Value* c0 = opt(6);
  Value* p = opt(7);
  DType dt = x->type().dtype;
  if (!IsFloatDType(dt)) return Unimpl(std::string("LSTM on ") + DTypeName(dt));
  for (Value* v : {w, r, b, h0, c0, p})
    if (v && v->type().dtype != dt) return Invalid("LSTM inputs differ in dtype");
  int64_t layout = AttrInt("layout", 0);
  if (layout != 0 && layout != 1) return Invalid("LSTM layout must be 0 or 1");
  if (x->type().rank() != 3) return Invalid("LSTM X must be 3-D");
  if (layout == 1) {  // [B, S, I] → [S, B, I]
    x = Transpose(x, {1, 0, 2});
    if (h0 && h0->type().rank() == 3) h0 = Transpose(h0, {1, 0, 2});
    if (c0 && c0->type().rank() == 3) c0 = Transpose(c0, {1, 0, 2});
  }
  const Shape xs = x->type().shape;
  int64_t seq = xs[0], batch = xs[1], isz = xs[2];
  std::string direction = AttrStr("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Invalid("LSTM direction '" + direction + "' is unknown");
  int64_t hs = AttrInt("hidden_size", 0);
  if (!HasAttr("hidden_size") && w->type().rank() == 3) hs = w->type().shape[1] / 4;
  if (hs <= 0 || hs > kMaxDim) return Invalid("LSTM hidden_size must be positive");
  auto expect = [&](Value* v, const Shape& s, const char* what) -> Status {
    if (v && v->type().shape != s)
      return Invalid(std::string("LSTM ") + what + " has shape " + ShapeStr(v->type().shape) +
                     ", expected " + ShapeStr(s));
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(expect(w, {dirs, 4 * hs, isz}, "W"));
  KILN_RETURN_IF_ERROR(expect(r, {dirs, 4 * hs, hs}, "R"));
  KILN_RETURN_IF_ERROR(expect(b, {dirs, 8 * hs}, "B"));
  KILN_RETURN_IF_ERROR(expect(h0, {dirs, batch, hs}, "initial_h"));
  KILN_RETURN_IF_ERROR(expect(c0, {dirs, batch, hs}, "initial_c"));
  KILN_RETURN_IF_ERROR(expect(p, {dirs, 3 * hs}, "P"));
  if (seq > kMaxUnrollTrips)
    return Unimpl("LSTM over " + std::to_string(seq) + " steps (at most " +
                  std::to_string(kMaxUnrollTrips) + " are unrolled)");
  if (seq == 0) return Unimpl("LSTM over an empty sequence");
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> masks, StepMasks(seq_lens, seq, batch));
  if (HasAttr("activation_alpha") || HasAttr("activation_beta"))
    return Unimpl("LSTM activation_alpha/activation_beta are not supported");
  std::vector<std::string> acts;
  if (const onnx::AttributeProto* a = FindAttr("activations")) {
    for (const auto& s : a->strings()) acts.push_back(s);
    if (static_cast<int64_t>(acts.size()) != 3 * dirs)
      return Invalid("LSTM activations must have 3 entries per direction");
  } else {
    for (int64_t d = 0; d < dirs; ++d) acts.insert(acts.end(), {"Sigmoid", "Tanh", "Tanh"});
  }
  for (const std::string& a : acts)
    if (a != "Sigmoid" && a != "Tanh" && a != "Relu")
      return Unimpl("LSTM activation '" + a + "' is not supported (Sigmoid, Tanh, Relu are)");
  bool has_clip = HasAttr("clip");
  double clip = AttrFloat("clip", 0);
  if (has_clip && !(clip > 0)) return Invalid("LSTM clip must be positive");
  bool input_forget = AttrInt("input_forget", 0) != 0;

  auto act = [&](const std::string& a, Value* v) -> Value* {
    std::string op = a == "Sigmoid" ? "tensor.sigmoid" : a == "Tanh" ? "tensor.tanh" : "tensor.relu";
    return Emit(op, {v}, v->type());
  };
  auto clipped = [&](Value* v) -> Value* {
    if (!has_clip) return v;
    return Emit("tensor.clamp", {v}, v->type(), {{"min", -clip}, {"max", clip}});
  };
  const Shape bh = {batch, hs};
  std::vector<std::vector<Value*>> ys(dirs, std::vector<Value*>(seq, nullptr));
  std::vector<Value*> last_h(dirs), last_c(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const std::string f = acts[3 * d], g = acts[3 * d + 1], h = acts[3 * d + 2];
    Value* wt = Transpose(Reshape(SliceAxis(w, 0, d, 1), {4 * hs, isz}), {1, 0});  // [I, 4H]
    Value* rt = Transpose(Reshape(SliceAxis(r, 0, d, 1), {4 * hs, hs}), {1, 0});   // [H, 4H]
    Value* xw = Emit("tensor.matmul", {Reshape(x, {seq * batch, isz}), wt},
                     Type::Tensor(dt, {seq * batch, 4 * hs}));
    if (b) {
      Value* bd = Reshape(SliceAxis(b, 0, d, 1), {8 * hs});
      KILN_ASSIGN_OR_RETURN(Value* bias,
                            Binary("tensor.add", SliceAxis(bd, 0, 0, 4 * hs), SliceAxis(bd, 0, 4 * hs, 4 * hs)));
      KILN_ASSIGN_OR_RETURN(xw, Binary("tensor.add", xw, bias));
    }
    xw = Reshape(xw, {seq, batch, 4 * hs});
    Value* pi = nullptr;
    Value* po = nullptr;
    Value* pf = nullptr;
    if (p) {
      Value* pd = Reshape(SliceAxis(p, 0, d, 1), {3 * hs});
      pi = SliceAxis(pd, 0, 0, hs);
      po = SliceAxis(pd, 0, hs, hs);
      pf = SliceAxis(pd, 0, 2 * hs, hs);
    }
    Value* zeros = Constant(MakeDenseFromDoubles(Type::Tensor(dt, bh), std::vector<double>(batch * hs, 0.0)));
    Value* hc = h0 ? Reshape(SliceAxis(h0, 0, d, 1), bh) : zeros;
    Value* cc = c0 ? Reshape(SliceAxis(c0, 0, d, 1), bh) : zeros;
    for (int64_t s = 0; s < seq; ++s) {
      int64_t t = reverse ? seq - 1 - s : s;
      Value* xt = Reshape(SliceAxis(xw, 0, t, 1), {batch, 4 * hs});
      Value* hr = Emit("tensor.matmul", {hc, rt}, Type::Tensor(dt, {batch, 4 * hs}));
      KILN_ASSIGN_OR_RETURN(Value* gates, Binary("tensor.add", xt, hr));
      Value* gi = SliceAxis(gates, 1, 0, hs);
      Value* go = SliceAxis(gates, 1, hs, hs);
      Value* gf = SliceAxis(gates, 1, 2 * hs, hs);
      Value* gc = SliceAxis(gates, 1, 3 * hs, hs);
      if (p) {
        KILN_ASSIGN_OR_RETURN(Value* t1, Binary("tensor.mul", pi, cc));
        KILN_ASSIGN_OR_RETURN(gi, Binary("tensor.add", gi, t1));
        KILN_ASSIGN_OR_RETURN(Value* t2, Binary("tensor.mul", pf, cc));
        KILN_ASSIGN_OR_RETURN(gf, Binary("tensor.add", gf, t2));
      }
      Value* it = act(f, clipped(gi));
      Value* ft;
      if (input_forget) {
        KILN_ASSIGN_OR_RETURN(ft, Binary("tensor.sub", ScalarConst(dt, 1.0), it));
      } else {
        ft = act(f, clipped(gf));
      }
      Value* ct = act(g, clipped(gc));
      KILN_ASSIGN_OR_RETURN(Value* fc, Binary("tensor.mul", ft, cc));
      KILN_ASSIGN_OR_RETURN(Value* ic, Binary("tensor.mul", it, ct));
      Value* c_prev = cc;
      KILN_ASSIGN_OR_RETURN(cc, Binary("tensor.add", fc, ic));
      if (p) {
        KILN_ASSIGN_OR_RETURN(Value* t3, Binary("tensor.mul", po, cc));
        KILN_ASSIGN_OR_RETURN(go, Binary("tensor.add", go, t3));
      }
      Value* ot = act(f, clipped(go));
      Value* h_prev = hc;
      KILN_ASSIGN_OR_RETURN(hc, Binary("tensor.mul", ot, act(h, cc)));
      ys[d][t] = hc;
      if (!masks.empty()) {  // past a batch entry's length: Y is 0, the state is held
        ys[d][t] = Emit("tensor.select", {masks[t], hc, zeros}, hc->type());
        hc = Emit("tensor.select", {masks[t], hc, h_prev}, hc->type());
        cc = Emit("tensor.select", {masks[t], cc, c_prev}, cc->type());
      }
    }
    last_h[d] = hc;
    last_c[d] = cc;
  }
  return RecurrentOutputs(n, ys, {last_h, last_c}, layout, "LSTM", out);
}

StatusOr<std::vector<Value*>> Importer::StepMasks(Value* seq_lens, int64_t seq, int64_t batch) {
  if (!seq_lens) return std::vector<Value*>{};
  if (seq_lens->type().dtype != DType::kI32 && seq_lens->type().dtype != DType::kI64)
    return Invalid("sequence_lens must be int32 (or int64)");
  if (seq_lens->type().shape != Shape{batch})
    return Invalid("sequence_lens has shape " + ShapeStr(seq_lens->type().shape) + ", expected [" +
                   std::to_string(batch) + "]");
  if (const DenseElements* c = GetConst(seq_lens)) {
    bool full = true;
    for (int64_t i = 0; i < batch; ++i) {
      const int64_t l = ReadElementAsInt(*c, i);
      if (l < 0 || l > seq)
        return Invalid("sequence_lens entry " + std::to_string(l) + " is outside [0, " + std::to_string(seq) + "]");
      full &= l == seq;
    }
    if (full) return std::vector<Value*>{};  // every step of every entry counts
  }
  Value* lens = Reshape(Cast(seq_lens, DType::kI32), {batch, 1});
  std::vector<Value*> masks;
  for (int64_t t = 0; t < seq; ++t) {
    Value* tc = Constant(MakeDenseFromInts(Type::Tensor(DType::kI32, {}), {t}));
    KILN_ASSIGN_OR_RETURN(Value* m, Binary("tensor.less", tc, lens));  // [B, 1]: t < len
    masks.push_back(m);
  }
  return masks;
}

Status Importer::RecurrentOutputs(const onnx::NodeProto& n,
                                  const std::vector<std::vector<Value*>>& ys,
                                  const std::vector<std::vector<Value*>>& states, int64_t layout,
                                  const std::string& op, std::vector<Value*>& out) {
  // Y [S, dirs, B, H]; each state (Y_h, then Y_c for LSTM) [dirs, B, H];
  // layout 1 puts the batch first.
  if (n.output_size() > 0 && !n.output(0).empty()) {
    std::vector<Value*> per_dir;
    for (const std::vector<Value*>& steps : ys) {
      KILN_ASSIGN_OR_RETURN(Value* yd, Stack(steps, 0, op + " Y"));  // [S, B, H]
      per_dir.push_back(yd);
    }
    KILN_ASSIGN_OR_RETURN(Value* y, Stack(per_dir, 1, op + " Y"));  // [S, dirs, B, H]
    out[0] = layout == 1 ? Transpose(y, {2, 0, 1, 3}) : y;
  }
  static const char* const kStateNames[] = {" Y_h", " Y_c"};
  for (size_t k = 0; k < states.size(); ++k) {
    KILN_ASSIGN_OR_RETURN(Value* st, Stack(states[k], 0, op + kStateNames[k]));
    if (out.size() > k + 1) out[k + 1] = layout == 1 ? Transpose(st, {1, 0, 2}) : st;
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
