// ONNX ReverseSequence, MaxUnpool and Det → tensor-level ops.
//   ReverseSequence: y[.., t, b, ..] = x[.., len[b] - 1 - t, b, ..] for
//     t < len[b], else x itself: a tensor.gather_elements along time_axis
//     with indices select(t < len, len - 1 - t, t) computed from the runtime
//     sequence_lens (iota constant along time, lens along batch).
//   MaxUnpool: y = zeros of the output shape with y.flat[I.flat] = X.flat
//     (I: MaxPool's Indices, flat over the whole [N, C, D..] tensor): one
//     1-D tensor.scatter_elements into the inferred shape, per spatial dim
//     (in - 1) * stride - pad_begin - pad_end + kernel. A larger output_shape
//     (a constant) zero-pads that at the end of each dim (the indices
//     address the inferred shape, as in ONNX's test data).
//   Det: x [.., M, M] → [..]; cofactor (Laplace) expansion along the first
//     row on elementwise ops, for M <= 4 (M > 4: a clear error).
#include <functional>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::ReverseSequence(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                 std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* lens = in[1];
  const Shape xs = x->type().shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  if (r < 2) return Invalid("input must have rank >= 2");
  KILN_ASSIGN_OR_RETURN(int64_t ta, NormAxis(AttrInt("time_axis", 0), r));
  KILN_ASSIGN_OR_RETURN(int64_t ba, NormAxis(AttrInt("batch_axis", 1), r));
  if (ta == ba) return Invalid("time_axis equals batch_axis");
  if ((ta != 0 && ta != 1) || (ba != 0 && ba != 1)) return Invalid("time_axis and batch_axis must be 0 and 1");
  if (lens->type().shape != Shape{xs[ba]})
    return Invalid("sequence_lens must be [" + std::to_string(xs[ba]) + "]; got " + ShapeStr(lens->type().shape));
  if (lens->type().dtype != DType::kI64 && lens->type().dtype != DType::kI32)
    return Invalid("sequence_lens must be i32 or i64");
  Shape ts(r, 1), bs(r, 1);
  ts[ta] = xs[ta];
  bs[ba] = xs[ba];
  std::vector<double> iota(static_cast<size_t>(xs[ta]));
  for (int64_t t = 0; t < xs[ta]; ++t) iota[t] = static_cast<double>(t);
  Value* t = Constant(MakeDenseFromDoubles(Type::Tensor(DType::kI64, ts), iota));
  Value* l = Reshape(Cast(lens, DType::kI64), bs);
  KILN_ASSIGN_OR_RETURN(Value* in_seq, Binary("tensor.less", t, l));
  KILN_ASSIGN_OR_RETURN(Value* lm1, Binary("tensor.sub", l, I64Const(1)));
  KILN_ASSIGN_OR_RETURN(Value* rev, Binary("tensor.sub", lm1, t));
  Shape is = in_seq->type().shape;
  Value* idx = Emit("tensor.select", {in_seq, rev, Emit("tensor.expand", {t}, Type::Tensor(DType::kI64, is))},
                    Type::Tensor(DType::kI64, is));
  if (idx->type().shape != xs) idx = Emit("tensor.expand", {idx}, Type::Tensor(DType::kI64, xs));
  out[0] = GatherElementsOf(x, idx, ta);
  return OkStatus();
}

Status Importer::MaxUnpool(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* ind = in[1];
  const Shape xs = x->type().shape;
  const int64_t k = static_cast<int64_t>(xs.size()) - 2;
  if (k < 1) return Invalid("X must be [N, C, D1, ..]");
  if (ind->type().shape != xs) return Invalid("I must have X's shape");
  if (ind->type().dtype != DType::kI64) return Invalid("I must be i64");
  Shape kernel = AttrInts("kernel_shape");
  Shape strides = AttrInts("strides", Shape(k, 1)), pads = AttrInts("pads", Shape(2 * k, 0));
  if (static_cast<int64_t>(kernel.size()) != k || static_cast<int64_t>(strides.size()) != k ||
      static_cast<int64_t>(pads.size()) != 2 * k)
    return Invalid("kernel_shape, strides and pads must have one entry per spatial dim (pads two)");
  Shape os = {xs[0], xs[1]};
  for (int64_t d = 0; d < k; ++d) os.push_back((xs[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d]);
  Shape want = os;
  if (in.size() > 2 && in[2]) {
    KILN_ASSIGN_OR_RETURN(want, ConstInts(in[2], "output_shape"));
    bool fits = static_cast<int64_t>(want.size()) == k + 2 && want[0] == xs[0] && want[1] == xs[1];
    for (int64_t d = 2; fits && d < k + 2; ++d) fits = want[d] >= os[d] && want[d] <= kMaxDim;
    if (!fits)
      return Invalid("output_shape " + ShapeStr(want) + " must be [N, C, ..] at least the inferred " + ShapeStr(os));
  }
  for (int64_t d : os)
    if (d <= 0 || d > kMaxDim) return Invalid("bad output shape " + ShapeStr(os));
  const int64_t total = SafeNumElements(os);
  if (total < 0 || total > kMaxCreatedElements) return Invalid("output too large");
  const int64_t cnt = Product(xs);
  Value* zeros = Emit("tensor.expand", {ScalarConst(x->type().dtype, 0.0)}, Type::Tensor(x->type().dtype, {total}));
  Value* y = Emit("tensor.scatter_elements", {zeros, Reshape(ind, {cnt}), Reshape(x, {cnt})}, zeros->type(),
                  {{"axis", int64_t{0}}, {"reduction", std::string("none")}});
  y = Reshape(y, os);
  if (want != os) {  // the indices address the inferred shape; the rest is zero padding at the end
    Shape p(2 * os.size(), 0);
    for (size_t d = 0; d < os.size(); ++d) p[os.size() + d] = want[d] - os[d];
    y = Emit("tensor.pad", {y}, Type::Tensor(y->type().dtype, want),
             {{"pads", p}, {"mode", std::string("constant")}, {"value", 0.0}});
  }
  out[0] = y;
  return OkStatus();
}

Status Importer::Det(const onnx::NodeProto& n, const std::vector<Value*>& in, std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  const int64_t r = static_cast<int64_t>(xs.size());
  if (r < 2 || xs[r - 1] != xs[r - 2]) return Invalid("input must be [.., M, M]; got " + ShapeStr(xs));
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("Det of ") + DTypeName(x->type().dtype));
  const int64_t M = xs[r - 1];
  if (M > 4) return Unimpl("Det of " + std::to_string(M) + "x" + std::to_string(M) + " matrices (at most 4x4)");
  const Shape batch(xs.begin(), xs.end() - 2);
  // e[i][j]: element (i, j) of every matrix, shape `batch`.
  std::vector<std::vector<Value*>> e(M, std::vector<Value*>(M));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < M; ++j) e[i][j] = Reshape(SliceAxis(SliceAxis(x, r - 2, i, 1), r - 1, j, 1), batch);
  // det of the minor with rows [row, M) and the columns in `cols`.
  std::function<StatusOr<Value*>(int64_t, const std::vector<int64_t>&)> det =
      [&](int64_t row, const std::vector<int64_t>& cols) -> StatusOr<Value*> {
    if (cols.size() == 1) return e[row][cols[0]];
    Value* acc = nullptr;
    for (size_t c = 0; c < cols.size(); ++c) {
      std::vector<int64_t> rest;
      for (size_t d = 0; d < cols.size(); ++d)
        if (d != c) rest.push_back(cols[d]);
      KILN_ASSIGN_OR_RETURN(Value* minor, det(row + 1, rest));
      KILN_ASSIGN_OR_RETURN(Value* term, Binary("tensor.mul", e[row][cols[c]], minor));
      if (!acc) {
        acc = term;
      } else {
        KILN_ASSIGN_OR_RETURN(acc, Binary(c % 2 ? "tensor.sub" : "tensor.add", acc, term));
      }
    }
    return acc;
  };
  std::vector<int64_t> all;
  for (int64_t j = 0; j < M; ++j) all.push_back(j);
  KILN_ASSIGN_OR_RETURN(out[0], det(0, all));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
