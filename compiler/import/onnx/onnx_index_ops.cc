// ONNX ops built from positions along axes: ArgMax / ArgMin (tensor.arg_reduce),
// Hardmax, Trilu, EyeLike, DepthToSpace, SpaceToDepth.
//
//   ArgMax/ArgMin(x; axis, keepdims, select_last_index)
//       -> tensor.arg_reduce (compiler/ir/ops.h), i64 indices.
//   Hardmax(x; axis)       = cast(iota_axis == argmax(x, axis, keepdims = 1))
//       opset < 13 coerces x to 2-D [prod(d < axis), prod(d >= axis)] first,
//       as Softmax does; the first maximum wins, like ONNX's reference.
//   Trilu(x, k?; upper)    = select(j - i >= k (upper) / j - i <= k (lower), x, 0)
//       over the last two axes; j - i is a constant [N, M] i64 tensor, k may
//       be a runtime scalar.
//   GatherElements(x, indices; axis) -> tensor.gather_elements.
//   OneHot(indices, depth, values; axis) = select(iota_axis == indices', on, off),
//       indices' = indices + depth where negative; depth must be a constant.
//   ScatterElements / Scatter (opset 9-10) / ScatterND(data, indices, updates;
//       axis, reduction) -> tensor.scatter_elements / tensor.scatter_nd.
//   GatherND(data, indices; batch_dims) = tensor.gather on axis 0 of data
//       flattened to [B * P, rest...] at rows batch * P + sum_c t[c] * stride_c.
//   Compress(x, condition; axis) = tensor.gather of the kept positions; the
//       condition decides the output's shape, so it must be a constant.
//   TopK(x, K; axis, largest, sorted) = (gather_elements(x, i), i) with
//       i = tensor.top_k(x); K decides the output's shape (a constant).
//   CumSum(x, axis; exclusive, reverse) -> tensor.cumsum; axis must be a
//       constant at import (an initializer, or --constant-input).
//   EyeLike(x; dtype, k)   = a constant: ones where column - row == k.
//   DepthToSpace(x; blocksize, mode DCR|CRD), SpaceToDepth(x; blocksize)
//       = reshape -> transpose (rank 6) -> reshape, as the ONNX operator
//       definitions state them.
#include <algorithm>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::ArgReduce(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const int64_t r = x->type().rank();
  if (r == 0) return Invalid("input must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  if (x->type().shape[axis] == 0) return Invalid("reduces an empty axis");
  const bool keepdims = AttrInt("keepdims", 1) != 0;
  Shape os;
  for (int64_t d = 0; d < r; ++d) {
    if (d != axis) os.push_back(x->type().shape[d]);
    else if (keepdims) os.push_back(1);
  }
  out[0] = Emit("tensor.arg_reduce", {x}, Type::Tensor(DType::kI64, os),
                {{"kind", std::string(op_type_ == "ArgMax" ? "max" : "min")},
                 {"axis", axis},
                 {"keepdims", keepdims},
                 {"select_last_index", AttrInt("select_last_index", 0) != 0}});
  return OkStatus();
}

Status Importer::Hardmax(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  const int64_t r = x->type().rank();
  if (r == 0) return Invalid("input must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", opset_ < 13 ? 1 : -1), r));
  Value* v = x;
  if (opset_ < 13 && axis != r - 1) {
    v = Reshape(x, {Product(xs, 0, axis), Product(xs, axis)});
    axis = 1;
  }
  const Shape vs = v->type().shape;
  if (vs[axis] == 0) {
    out[0] = x;  // nothing to select from: an empty result
    return OkStatus();
  }
  Shape ks = vs;
  ks[axis] = 1;
  Value* am = Emit("tensor.arg_reduce", {v}, Type::Tensor(DType::kI64, ks),
                   {{"kind", std::string("max")}, {"axis", axis}, {"keepdims", true},
                    {"select_last_index", false}});
  Shape is(vs.size(), 1);
  is[axis] = vs[axis];
  std::vector<int64_t> iota(static_cast<size_t>(vs[axis]));
  for (size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<int64_t>(i);
  Value* pos = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, is), iota));
  KILN_ASSIGN_OR_RETURN(Value* hit, Binary("tensor.equal", pos, am));
  Value* y = Cast(hit, x->type().dtype);
  out[0] = Reshape(y, xs);
  return OkStatus();
}

Status Importer::Trilu(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  const int64_t r = x->type().rank();
  if (r < 2) return Invalid("input must have rank >= 2");
  const int64_t N = xs[r - 2], M = xs[r - 1];
  if (N * M == 0) {
    out[0] = x;
    return OkStatus();
  }
  std::vector<int64_t> diff(static_cast<size_t>(N * M));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) diff[static_cast<size_t>(i * M + j)] = j - i;
  Value* d = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {N, M}), diff));
  Value* k = in.size() > 1 && in[1] ? in[1] : I64Const(0);
  if (k->type().dtype != DType::kI64 || Product(k->type().shape) != 1)
    return Invalid("k must be an int64 scalar");
  if (k->type().rank() != 0) k = Reshape(k, {});
  const bool upper = AttrInt("upper", 1) != 0;
  KILN_ASSIGN_OR_RETURN(Value* keep, Binary(upper ? "tensor.greater_equal" : "tensor.less_equal", d, k));
  Value* zero = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, {}), {0.0}));
  out[0] = Emit("tensor.select", {keep, x, zero}, x->type());
  return OkStatus();
}

Status Importer::GatherElements(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* ind = in[1];
  const int64_t r = x->type().rank();
  if (r == 0) return Invalid("input must have rank >= 1");
  if (ind->type().rank() != r) return Invalid("indices must have the rank of the data");
  const DType it = ind->type().dtype;
  if (it != DType::kI64 && it != DType::kI32) return Invalid("indices must be int32/int64");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && ind->type().shape[d] > x->type().shape[d])
      return Invalid("indices dim " + std::to_string(d) + " exceeds the data's");
  const int64_t dim = x->type().shape[axis];
  if (dim == 0) return Invalid("gathers along an empty axis");
  if (const DenseElements* c = GetConst(ind)) {
    for (int64_t i = 0; i < c->type.num_elements(); ++i) {
      int64_t v = ReadElementAsInt(*c, i);
      if (v < -dim || v >= dim)
        return Invalid("index " + std::to_string(v) + " out of range for dim " + std::to_string(dim));
    }
  }
  out[0] = GatherElementsOf(x, ind, axis);
  return OkStatus();
}

Value* Importer::GatherElementsOf(Value* x, Value* ind, int64_t axis) {
  return Emit("tensor.gather_elements", {x, ind}, Type::Tensor(x->type().dtype, ind->type().shape),
              {{"axis", axis}});
}

Status Importer::OneHot(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  Value* ind = in[0];
  Value* values = in[2];
  KILN_ASSIGN_OR_RETURN(double depth_d, ConstScalarValue(in[1], "depth"));
  const int64_t depth = static_cast<int64_t>(depth_d);
  if (depth <= 0) return Invalid("depth must be positive");
  if (values->type().rank() != 1 || values->type().shape[0] != 2)
    return Invalid("values must be [off_value, on_value]");
  const int64_t r = ind->type().rank() + 1;
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", -1), r));
  // Indices of any numeric type, truncated to integers; negative ones count
  // from the end (ONNX: an index outside [-depth, depth) gives all off_value).
  Value* idx = Cast(ind, DType::kI64);
  KILN_ASSIGN_OR_RETURN(Value* neg, Binary("tensor.less", idx, I64Const(0)));
  KILN_ASSIGN_OR_RETURN(Value* wrapped, Binary("tensor.add", idx, I64Const(depth)));
  idx = Emit("tensor.select", {neg, wrapped, idx}, idx->type());
  Shape es = ind->type().shape;
  es.insert(es.begin() + axis, 1);
  idx = Reshape(idx, es);
  Shape ps(static_cast<size_t>(r), 1);
  ps[axis] = depth;
  std::vector<int64_t> iota(static_cast<size_t>(depth));
  for (int64_t i = 0; i < depth; ++i) iota[static_cast<size_t>(i)] = i;
  Value* pos = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, ps), iota));
  KILN_ASSIGN_OR_RETURN(Value* hit, Binary("tensor.equal", pos, idx));
  Value* off = Reshape(SliceAxis(values, 0, 0, 1), {});
  Value* on = Reshape(SliceAxis(values, 0, 1, 1), {});
  Shape os = ind->type().shape;
  os.insert(os.begin() + axis, depth);
  out[0] = Emit("tensor.select", {hit, on, off}, Type::Tensor(values->type().dtype, os));
  return OkStatus();
}

Status Importer::Scatter(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  Value* data = in[0];
  Value* ind = in[1];
  Value* upd = in[2];
  const int64_t r = data->type().rank();
  if (r == 0) return Invalid("data must have rank >= 1");
  const DType it = ind->type().dtype;
  if (it != DType::kI64 && it != DType::kI32) return Invalid("indices must be int32/int64");
  if (upd->type().dtype != data->type().dtype) return Invalid("updates must have the data's dtype");
  const std::string reduction = AttrStr("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    return Invalid("reduction '" + reduction + "' is not none, add, mul, max or min");
  if (op_type_ == "ScatterND") {
    const Shape& is = ind->type().shape;
    if (is.empty() || is.back() < 1 || is.back() > r) return Invalid("indices must be [..., k] with 1 <= k <= rank");
    Shape us(is.begin(), is.end() - 1);
    for (int64_t d = is.back(); d < r; ++d) us.push_back(data->type().shape[d]);
    if (upd->type().shape != us) return Invalid("updates shape must be indices.shape[:-1] + data.shape[k:]");
    out[0] = Emit("tensor.scatter_nd", {data, Cast(ind, DType::kI64), upd}, data->type(),
                  {{"reduction", reduction}});
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  if (ind->type().shape != upd->type().shape) return Invalid("indices and updates differ in shape");
  if (ind->type().rank() != r) return Invalid("indices must have the rank of the data");
  for (int64_t d = 0; d < r; ++d)
    if (d != axis && ind->type().shape[d] > data->type().shape[d])
      return Invalid("indices dim " + std::to_string(d) + " exceeds the data's");
  out[0] = Emit("tensor.scatter_elements", {data, ind, upd}, data->type(),
                {{"axis", axis}, {"reduction", reduction}});
  return OkStatus();
}

Status Importer::GatherND(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* data = in[0];
  Value* ind = in[1];
  const Shape ds = data->type().shape, is = ind->type().shape;
  const int64_t r = static_cast<int64_t>(ds.size()), q = static_cast<int64_t>(is.size());
  const int64_t b = AttrInt("batch_dims", 0);
  if (q < 1 || r < 1) return Invalid("data and indices must have rank >= 1");
  if (b < 0 || b >= std::min(q, r)) return Invalid("batch_dims out of range");
  const int64_t k = is.back();
  if (k < 1 || b + k > r) return Invalid("indices' last dim must be in [1, rank(data) - batch_dims]");
  for (int64_t d = 0; d < b; ++d)
    if (is[d] != ds[d]) return Invalid("batch dims of data and indices differ");
  // Flattened form: data -> [B * P, rest...] with B = prod(batch dims) and P =
  // prod(data dims b..b+k-1); the row of index tuple t at batch position pb is
  // pb * P + sum_c norm(t[c]) * stride_c, one tensor.gather on axis 0.
  Value* t = Cast(ind, DType::kI64);
  Shape dims_k(ds.begin() + b, ds.begin() + b + k), strides(static_cast<size_t>(k), 1), shift(static_cast<size_t>(k));
  for (int64_t c = k - 2; c >= 0; --c) strides[c] = strides[c + 1] * dims_k[c + 1];
  for (int64_t c = 0; c < k; ++c) shift[c] = dims_k[c];
  Shape ks(static_cast<size_t>(q), 1);
  ks.back() = k;
  Value* dim_c = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, ks), shift));
  KILN_ASSIGN_OR_RETURN(Value* neg, Binary("tensor.less", t, I64Const(0)));
  KILN_ASSIGN_OR_RETURN(Value* wrapped, Binary("tensor.add", t, dim_c));
  t = Emit("tensor.select", {neg, wrapped, t}, t->type());
  KILN_ASSIGN_OR_RETURN(Value* scaled, Binary("tensor.mul", t, Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, ks), strides))));
  Shape rs(is.begin(), is.end() - 1);
  Value* row = Emit("tensor.reduce", {scaled}, Type::Tensor(DType::kI64, rs),
                    {{"kind", std::string("sum")}, {"axes", Shape{q - 1}}, {"keepdims", false}});
  const int64_t P = Product(dims_k);
  int64_t B = 1;
  for (int64_t d = 0; d < b; ++d) B *= ds[d];
  if (b > 0) {
    Shape bs(rs.size(), 1);
    for (int64_t d = 0; d < b; ++d) bs[d] = ds[d];
    std::vector<int64_t> base(static_cast<size_t>(B));
    for (int64_t i = 0; i < B; ++i) base[static_cast<size_t>(i)] = i * P;
    KILN_ASSIGN_OR_RETURN(row, Binary("tensor.add", row, Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, bs), base))));
  }
  Shape flat = {B * P};
  for (int64_t d = b + k; d < r; ++d) flat.push_back(ds[d]);
  Value* fd = Reshape(data, flat);
  Shape os = rs;
  for (int64_t d = b + k; d < r; ++d) os.push_back(ds[d]);
  out[0] = Emit("tensor.gather", {fd, row}, Type::Tensor(data->type().dtype, os), {{"axis", int64_t{0}}});
  return OkStatus();
}

Status Importer::Compress(const onnx::NodeProto& n, const std::vector<Value*>& in,
                          std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  KILN_ASSIGN_OR_RETURN(Shape cond, ConstInts(in[1], "condition"));
  int64_t axis = 0;
  if (HasAttr("axis")) {
    KILN_ASSIGN_OR_RETURN(axis, NormAxis(AttrInt("axis", 0), x->type().rank()));
  } else {
    x = Reshape(x, {Product(x->type().shape)});  // no axis: the flattened input
  }
  const int64_t dim = x->type().shape[axis];
  if (static_cast<int64_t>(cond.size()) > dim) return Invalid("condition is longer than the axis");
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond.size(); ++i)
    if (cond[i] != 0) keep.push_back(static_cast<int64_t>(i));
  Shape os = x->type().shape;
  os[axis] = static_cast<int64_t>(keep.size());
  if (keep.empty()) {
    out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(x->type().dtype, os), {}));
    return OkStatus();
  }
  Value* idx = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {static_cast<int64_t>(keep.size())}), keep));
  out[0] = Emit("tensor.gather", {x, idx}, Type::Tensor(x->type().dtype, os), {{"axis", axis}});
  return OkStatus();
}

Status Importer::TopK(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const int64_t r = x->type().rank();
  if (r == 0) return Invalid("input must have rank >= 1");
  int64_t k = AttrInt("k", -1);  // opset < 10: an attribute
  if (opset_ >= 10) {
    if (in.size() < 2 || !in[1]) return Invalid("needs the input K");
    KILN_ASSIGN_OR_RETURN(Shape kv, ConstInts(in[1], "K"));
    if (kv.size() != 1) return Invalid("K must hold one value");
    k = kv[0];
  }
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", -1), r));
  if (k < 0 || k > x->type().shape[axis]) return Invalid("K is out of range for the axis");
  if (AttrInt("sorted", 1) == 0) return Unimpl("sorted = 0 (Kiln always returns sorted results)");
  Shape os = x->type().shape;
  os[axis] = k;
  Value* ind = Emit("tensor.top_k", {x}, Type::Tensor(DType::kI64, os),
                    {{"axis", axis}, {"k", k}, {"largest", AttrInt("largest", 1) != 0}});
  out[0] = GatherElementsOf(x, ind, axis);
  if (out.size() > 1) out[1] = ind;
  return OkStatus();
}

Status Importer::CumSum(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  const int64_t r = x->type().rank();
  if (r == 0) return Invalid("input must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(Shape axis_v, ConstInts(in[1], "axis"));
  if (axis_v.size() != 1) return Invalid("axis must hold one value");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(axis_v[0], r));
  const DType dt = x->type().dtype;
  // ONNX CumSum's types (f16/bf16 accumulate in f32, compiler/codegen).
  if (!IsFloatType(dt) && dt != DType::kI32 && dt != DType::kI64 && dt != DType::kU32 &&
      dt != DType::kU64)
    return Invalid(std::string("input of dtype ") + DTypeName(dt) +
                   " (CumSum takes f32, f64, f16, bf16, i32, i64, u32, u64)");
  out[0] = Emit("tensor.cumsum", {x}, x->type(),
                {{"axis", axis},
                 {"exclusive", AttrInt("exclusive", 0) != 0},
                 {"reverse", AttrInt("reverse", 0) != 0}});
  return OkStatus();
}

Status Importer::EyeLike(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape xs = in[0]->type().shape;
  if (xs.size() != 2) return Invalid("input must be 2-D");
  DType dt = in[0]->type().dtype;
  if (HasAttr("dtype")) {
    int32_t t = static_cast<int32_t>(AttrInt("dtype", 0));
    dt = ConvertDType(t);
    if (dt == DType::kInvalid) return Unimpl("unsupported ONNX dtype " + OnnxDTypeName(t));
  }
  const int64_t k = AttrInt("k", 0);
  std::vector<double> v(static_cast<size_t>(xs[0] * xs[1]), 0.0);
  for (int64_t i = 0; i < xs[0]; ++i)
    if (i + k >= 0 && i + k < xs[1]) v[static_cast<size_t>(i * xs[1] + i + k)] = 1.0;
  out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, xs), v));
  return OkStatus();
}

Status Importer::SpaceDepth(const onnx::NodeProto& n, const std::vector<Value*>& in,
                            std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  if (xs.size() != 4) return Invalid("input must be 4-D NCHW");
  const int64_t b = AttrInt("blocksize", 0);
  if (b <= 0) return Invalid("blocksize must be positive");
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (op_type_ == "DepthToSpace") {
    if (C % (b * b) != 0) return Invalid("channels are not a multiple of blocksize^2");
    const std::string mode = AttrStr("mode", "DCR");
    Value* t;
    if (mode == "DCR") {
      t = Transpose(Reshape(x, {N, b, b, C / (b * b), H, W}), {0, 3, 4, 1, 5, 2});
    } else if (mode == "CRD") {
      t = Transpose(Reshape(x, {N, C / (b * b), b, b, H, W}), {0, 1, 4, 2, 5, 3});
    } else {
      return Invalid("mode '" + mode + "' is not DCR or CRD");
    }
    out[0] = Reshape(t, {N, C / (b * b), H * b, W * b});
  } else {
    if (H % b != 0 || W % b != 0) return Invalid("spatial dims are not multiples of blocksize");
    Value* t = Transpose(Reshape(x, {N, C, H / b, b, W / b, b}), {0, 3, 5, 1, 2, 4});
    out[0] = Reshape(t, {N, C * b * b, H / b, W / b});
  }
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
