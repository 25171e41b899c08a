// ONNX RNN and GRU → tensor-level ops, unrolled over the (static) time steps
// like LSTM (onnx_lstm.cc). Per direction d, with X projected for all steps
// by one matmul (XW = X W[d]^T + Wb[d], [S, B, G*H]):
//   RNN (G = 1):  H = f(XW_t + H R^T + Rb)                         f = Tanh
//   GRU (G = 3, gate order z, r, h):                               f = Sigmoid, g = Tanh
//     z = f(XW_z + H Rz^T + Rbz),  r = f(XW_r + H Rr^T + Rbr)
//     linear_before_reset = 0:  h~ = g(XW_h + (r * H) Rh^T + Rbh)
//     linear_before_reset = 1:  h~ = g(XW_h + r * (H Rh^T + Rbh))
//     H = (1 - z) * h~ + z * H
// (the equations of the ONNX operator definitions). Y [S, dirs, B, H] and
// Y_h [dirs, B, H]; layout = 1 swaps S/B (Y [B, S, dirs, H], Y_h [B, dirs, H]).
// sequence_lens (constant or runtime) masks the steps past each batch
// entry's length as for LSTM (StepMasks, onnx_lstm.cc).
// Unsupported (a clear error): activation_alpha/beta, activations other than
// Sigmoid, Tanh, Relu.
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::RnnGru(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  const bool gru = op_type_ == "GRU";
  const int64_t G = gru ? 3 : 1;
  auto opt = [&](size_t i) -> Value* { return in.size() > i ? in[i] : nullptr; };
  Value* x = in[0];
  Value* w = in[1];
  Value* r = in[2];
  Value* b = opt(3);
  Value* seq_lens = opt(4);
  Value* h0 = opt(5);
  DType dt = x->type().dtype;
  if (!IsFloatDType(dt)) return Unimpl(op_type_ + " on " + DTypeName(dt));
  for (Value* v : {w, r, b, h0})
    if (v && v->type().dtype != dt) return Invalid("inputs differ in dtype");
  int64_t layout = AttrInt("layout", 0);
  if (layout != 0 && layout != 1) return Invalid("layout must be 0 or 1");
  if (x->type().rank() != 3) return Invalid("X must be 3-D");
  if (layout == 1) {  // [B, S, I] → [S, B, I]
    x = Transpose(x, {1, 0, 2});
    if (h0 && h0->type().rank() == 3) h0 = Transpose(h0, {1, 0, 2});
  }
  const Shape xs = x->type().shape;
  const int64_t seq = xs[0], batch = xs[1], isz = xs[2];
  const std::string direction = AttrStr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return Invalid("direction '" + direction + "' is unknown");
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  int64_t hs = AttrInt("hidden_size", 0);
  if (!HasAttr("hidden_size") && w->type().rank() == 3) hs = w->type().shape[1] / G;
  if (hs <= 0 || hs > kMaxDim) return Invalid("hidden_size must be positive");
  auto expect = [&](Value* v, const Shape& s, const char* what) -> Status {
    if (v && v->type().shape != s)
      return Invalid(std::string(what) + " has shape " + ShapeStr(v->type().shape) + ", expected " + ShapeStr(s));
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(expect(w, {dirs, G * hs, isz}, "W"));
  KILN_RETURN_IF_ERROR(expect(r, {dirs, G * hs, hs}, "R"));
  KILN_RETURN_IF_ERROR(expect(b, {dirs, 2 * G * hs}, "B"));
  KILN_RETURN_IF_ERROR(expect(h0, {dirs, batch, hs}, "initial_h"));
  if (seq > kMaxUnrollTrips)
    return Unimpl("a sequence of " + std::to_string(seq) + " steps (at most " + std::to_string(kMaxUnrollTrips) +
                  " are unrolled)");
  if (seq == 0) return Unimpl("an empty sequence");
  KILN_ASSIGN_OR_RETURN(std::vector<Value*> masks, StepMasks(seq_lens, seq, batch));
  if (HasAttr("activation_alpha") || HasAttr("activation_beta"))
    return Unimpl("activation_alpha/activation_beta are not supported");
  const int64_t nacts = gru ? 2 : 1;
  std::vector<std::string> acts;
  if (const onnx::AttributeProto* a = FindAttr("activations")) {
    for (const auto& s : a->strings()) acts.push_back(s);
    if (static_cast<int64_t>(acts.size()) != nacts * dirs)
      return Invalid("activations must have " + std::to_string(nacts) + " entries per direction");
  } else {
    for (int64_t d = 0; d < dirs; ++d) {
      if (gru) acts.insert(acts.end(), {"Sigmoid", "Tanh"});
      else acts.push_back("Tanh");
    }
  }
  for (const std::string& a : acts)
    if (a != "Sigmoid" && a != "Tanh" && a != "Relu")
      return Unimpl("activation '" + a + "' is not supported (Sigmoid, Tanh, Relu are)");
  const bool has_clip = HasAttr("clip");
  const double clip = AttrFloat("clip", 0);
  if (has_clip && !(clip > 0)) return Invalid("clip must be positive");
  const bool lbr = gru && AttrInt("linear_before_reset", 0) != 0;

  auto act = [&](const std::string& a, Value* v) -> Value* {
    if (has_clip) v = Emit("tensor.clamp", {v}, v->type(), {{"min", -clip}, {"max", clip}});
    std::string op = a == "Sigmoid" ? "tensor.sigmoid" : a == "Tanh" ? "tensor.tanh" : "tensor.relu";
    return Emit(op, {v}, v->type());
  };
  const Shape bh = {batch, hs};
  std::vector<std::vector<Value*>> ys(dirs, std::vector<Value*>(seq, nullptr));
  std::vector<Value*> last_h(dirs);
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const std::string f = acts[nacts * d], g = gru ? acts[nacts * d + 1] : f;
    Value* wt = Transpose(Reshape(SliceAxis(w, 0, d, 1), {G * hs, isz}), {1, 0});  // [I, G*H]
    Value* rd = Reshape(SliceAxis(r, 0, d, 1), {G * hs, hs});
    // GRU: z and r use H R^T together; h~ uses its own (r * H or H, see above).
    Value* rzr = Transpose(SliceAxis(rd, 0, 0, (G == 3 ? 2 : 1) * hs), {1, 0});  // [H, 2H] or [H, H]
    Value* rh = gru ? Transpose(SliceAxis(rd, 0, 2 * hs, hs), {1, 0}) : nullptr;
    Value* xw = Emit("tensor.matmul", {Reshape(x, {seq * batch, isz}), wt}, Type::Tensor(dt, {seq * batch, G * hs}));
    Value* rb_zr = nullptr;
    Value* rb_h = nullptr;
    if (b) {
      Value* bd = Reshape(SliceAxis(b, 0, d, 1), {2 * G * hs});
      Value* wb = SliceAxis(bd, 0, 0, G * hs);
      Value* rb = SliceAxis(bd, 0, G * hs, G * hs);
      if (gru) {
        // Wb for all gates goes with XW; Rb_z, Rb_r too; Rb_h stays apart
        // (inside r * (...) when linear_before_reset).
        KILN_ASSIGN_OR_RETURN(xw, Binary("tensor.add", xw, wb));
        rb_zr = SliceAxis(rb, 0, 0, 2 * hs);
        rb_h = SliceAxis(rb, 0, 2 * hs, hs);
        Value* zero = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {hs}), std::vector<double>(hs, 0.0)));
        Value* rb_pad = Emit("tensor.concat", {rb_zr, zero}, Type::Tensor(dt, {3 * hs}), {{"axis", int64_t{0}}});
        KILN_ASSIGN_OR_RETURN(xw, Binary("tensor.add", xw, rb_pad));
      } else {
        KILN_ASSIGN_OR_RETURN(Value* bias, Binary("tensor.add", wb, rb));
        KILN_ASSIGN_OR_RETURN(xw, Binary("tensor.add", xw, bias));
      }
    }
    xw = Reshape(xw, {seq, batch, G * hs});
    Value* zeros = Constant(MakeDenseFromDoubles(Type::Tensor(dt, bh), std::vector<double>(batch * hs, 0.0)));
    Value* hc = h0 ? Reshape(SliceAxis(h0, 0, d, 1), bh) : zeros;
    // Past a batch entry's length: Y is 0 and the state is held.
    auto masked = [&](int64_t t, Value* h_prev) {
      if (masks.empty()) return;
      ys[d][t] = Emit("tensor.select", {masks[t], hc, zeros}, hc->type());
      hc = Emit("tensor.select", {masks[t], hc, h_prev}, hc->type());
    };
    for (int64_t s = 0; s < seq; ++s) {
      const int64_t t = reverse ? seq - 1 - s : s;
      Value* h_prev = hc;
      Value* xt = Reshape(SliceAxis(xw, 0, t, 1), {batch, G * hs});
      Value* hr = Emit("tensor.matmul", {hc, rzr}, Type::Tensor(dt, {batch, (gru ? 2 : 1) * hs}));
      if (!gru) {
        KILN_ASSIGN_OR_RETURN(Value* pre, Binary("tensor.add", xt, hr));
        hc = act(f, pre);
        ys[d][t] = hc;
        masked(t, h_prev);
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Value* zr, Binary("tensor.add", SliceAxis(xt, 1, 0, 2 * hs), hr));
      Value* zt = act(f, SliceAxis(zr, 1, 0, hs));
      Value* rt = act(f, SliceAxis(zr, 1, hs, hs));
      Value* hpre;
      if (lbr) {
        Value* hrh = Emit("tensor.matmul", {hc, rh}, Type::Tensor(dt, bh));
        if (rb_h) { KILN_ASSIGN_OR_RETURN(hrh, Binary("tensor.add", hrh, rb_h)); }
        KILN_ASSIGN_OR_RETURN(hpre, Binary("tensor.mul", rt, hrh));
      } else {
        KILN_ASSIGN_OR_RETURN(Value* rhc, Binary("tensor.mul", rt, hc));
        hpre = Emit("tensor.matmul", {rhc, rh}, Type::Tensor(dt, bh));
        if (rb_h) { KILN_ASSIGN_OR_RETURN(hpre, Binary("tensor.add", hpre, rb_h)); }
      }
      KILN_ASSIGN_OR_RETURN(hpre, Binary("tensor.add", SliceAxis(xt, 1, 2 * hs, hs), hpre));
      Value* ht = act(g, hpre);
      // (1 - z) * h~ + z * H = h~ + z * (H - h~)
      KILN_ASSIGN_OR_RETURN(Value* one_z, Binary("tensor.sub", ScalarConst(dt, 1.0), zt));
      KILN_ASSIGN_OR_RETURN(Value* a1, Binary("tensor.mul", one_z, ht));
      KILN_ASSIGN_OR_RETURN(Value* a2, Binary("tensor.mul", zt, hc));
      KILN_ASSIGN_OR_RETURN(hc, Binary("tensor.add", a1, a2));
      ys[d][t] = hc;
      masked(t, h_prev);
    }
    last_h[d] = hc;
  }
  return RecurrentOutputs(n, ys, {last_h}, layout, n.op_type(), out);
}

}  // namespace kiln::onnx_import::detail
