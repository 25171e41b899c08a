// ONNX's loss operators, which are plain inference math, as compositions of
// tensor-level ops (compiler/ir/ops.h).
//
// NegativeLogLikelihoodLoss(input [N, C, d1..dk], target [N, d1..dk], weight? [C];
//                           ignore_index?, reduction = "mean"):
//   t' = target == ignore_index ? 0 : target     (so every gather stays in range)
//   w  = weight[t'] (1 without weight), 0 where target == ignore_index
//   l  = -input[n, t'[n, d], d] * w              (tensor.gather_elements on axis 1)
//   reduction none: l;  sum: sum(l);  mean: sum(l) / sum(w)
//   (ONNX's definition: the mean divides by the summed weights of the
//   targets that are not ignored, or by their count without weights.)
// SoftmaxCrossEntropyLoss(scores, labels, weights?; ignore_index?, reduction):
//   log_prob = log_softmax(scores, axis 1); loss = NLL(log_prob, labels, ...)
//   outputs: loss, and log_prob when the node asks for it.
// f32 only; other float types are kUnimplemented naming the node.
#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

StatusOr<Value*> Importer::NllLossOf(Value* logp, Value* target, Value* weight) {
  const Type lt = logp->type();
  if (lt.dtype != DType::kF32) return Unimpl(std::string("input of dtype ") + DTypeName(lt.dtype) + " (only f32)");
  if (lt.rank() < 2) return Invalid("input must be [N, C, d1..dk]");
  const Shape& ls = lt.shape;
  Shape ts = {ls[0]};
  for (size_t d = 2; d < ls.size(); ++d) ts.push_back(ls[d]);
  if (target->type().shape != ts) return Invalid("target shape does not match the input's [N, d1..dk]");
  const DType tdt = target->type().dtype;
  if (tdt != DType::kI64 && tdt != DType::kI32) return Invalid("target must be int32/int64");
  if (weight && (weight->type().rank() != 1 || weight->type().shape[0] != ls[1] ||
                 weight->type().dtype != lt.dtype))
    return Invalid("weight must be [C] of the input's dtype");
  const std::string reduction = AttrStr("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    return Invalid("reduction '" + reduction + "' is not none, sum or mean");

  Value* t = Cast(target, DType::kI64);
  Value* ignored = nullptr;  // i1: target == ignore_index
  if (HasAttr("ignore_index")) {
    KILN_ASSIGN_OR_RETURN(ignored, Binary("tensor.equal", t, I64Const(AttrInt("ignore_index", 0))));
    t = Emit("tensor.select", {ignored, I64Const(0), t}, t->type());
  }
  const Type ft = Type::Tensor(lt.dtype, ts);
  Value* zero = ScalarConst(lt.dtype, 0.0);
  Value* w = nullptr;  // per-element weight, null when every weight is 1
  if (weight) w = Emit("tensor.gather", {weight, t}, ft, {{"axis", int64_t{0}}});
  if (ignored) w = Emit("tensor.select", {ignored, zero, w ? w : ScalarConst(lt.dtype, 1.0)}, ft);

  Shape ts1 = ts;
  ts1.insert(ts1.begin() + 1, 1);
  Value* picked = Reshape(GatherElementsOf(logp, Reshape(t, ts1), 1), ts);
  Value* l = Emit("tensor.neg", {picked}, ft);
  if (w) { KILN_ASSIGN_OR_RETURN(l, Binary("tensor.mul", l, w)); }
  if (reduction == "none") return l;

  Shape all;
  for (size_t d = 0; d < ts.size(); ++d) all.push_back(static_cast<int64_t>(d));
  auto sum = [&](Value* v) {
    return Emit("tensor.reduce", {v}, Type::Tensor(lt.dtype, {}),
                {{"kind", std::string("sum")}, {"axes", all}, {"keepdims", false}});
  };
  Value* total = sum(l);
  if (reduction == "sum") return total;
  Value* den = w ? sum(w) : ScalarConst(lt.dtype, static_cast<double>(Product(ts)));
  return Binary("tensor.div", total, den);
}

Status Importer::NllLoss(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  KILN_ASSIGN_OR_RETURN(out[0], NllLossOf(in[0], in[1], in.size() > 2 ? in[2] : nullptr));
  return OkStatus();
}

Status Importer::SoftmaxCrossEntropyLoss(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* scores = in[0];
  if (scores->type().rank() < 2) return Invalid("scores must be [N, C, d1..dk]");
  if (scores->type().dtype != DType::kF32)
    return Unimpl(std::string("scores of dtype ") + DTypeName(scores->type().dtype) + " (only f32)");
  Value* logp = Emit("tensor.softmax", {scores}, scores->type(), {{"axis", int64_t{1}}, {"log", true}});
  KILN_ASSIGN_OR_RETURN(out[0], NllLossOf(logp, in[1], in.size() > 2 ? in[2] : nullptr));
  if (out.size() > 1) out[1] = logp;
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
