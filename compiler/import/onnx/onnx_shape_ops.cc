// ONNX node handlers that move data without arithmetic: Flatten, Reshape,
// (Un)Squeeze, Transpose, Concat, Split, Slice, Cast, Shape, Size, Gather,
// Pad, Expand, Tile, ConstantOfShape, Range. The Importer class is declared in onnx_importer_internal.h;
// see onnx_importer.cc for the structure.
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <set>

#include "compiler/import/onnx/onnx_importer_internal.h"
#include "compiler/import/onnx/onnx_op_attributes.h"

namespace kiln::onnx_import {
namespace detail {

// ---------------------------------------------------------------------------
// Shape manipulation
// ---------------------------------------------------------------------------
Status Importer::Flatten(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  int64_t axis = AttrInt("axis", 1);
  if (axis < -r || axis > r) return Invalid("Flatten axis out of range");
  if (axis < 0) axis += r;
  out[0] = Reshape(in[0], {Product(xs, 0, axis), Product(xs, axis)});
  return OkStatus();
}

Status Importer::ReshapeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Shape shape;
  if (opset_ < 5) {
    shape = AttrInts("shape");
  } else {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(shape, ConstInts(in[1], "shape"));
  }
  const Shape& xs = in[0]->type().shape;
  bool allowzero = AttrInt("allowzero", 0) != 0;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowzero) {
      if (i >= xs.size()) return Invalid("Reshape copies dim " + std::to_string(i) + " beyond the input rank");
      shape[i] = xs[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) return Invalid("Reshape shape has more than one -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0 || shape[i] > kMaxDim) {
      return Invalid("Reshape shape has a bad dim " + std::to_string(shape[i]));
    } else {
      if (shape[i] != 0 && known > (int64_t{1} << 40) / shape[i])
        return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
      known *= shape[i];
    }
  }
  int64_t total = Product(xs);
  if (infer >= 0) {
    if (known == 0 || total % known != 0)
      return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
    shape[infer] = total / known;
  } else if (known != total) {
    return Invalid("cannot reshape " + ShapeStr(xs) + " to " + ShapeStr(shape));
  }
  out[0] = Reshape(in[0], shape);
  return OkStatus();
}

Status Importer::Unsqueeze(const onnx::NodeProto& n, const std::vector<Value*>& in,
                           std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Shape axes;
  if (opset_ >= 13) {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes"));
  } else {
    axes = AttrInts("axes");
  }
  const Shape& xs = in[0]->type().shape;
  int64_t orank = static_cast<int64_t>(xs.size() + axes.size());
  for (int64_t& a : axes) { KILN_ASSIGN_OR_RETURN(a, NormAxis(a, orank)); }
  std::set<int64_t> as(axes.begin(), axes.end());
  if (as.size() != axes.size()) return Invalid("Unsqueeze axes repeat");
  Shape os;
  size_t j = 0;
  for (int64_t i = 0; i < orank; ++i) os.push_back(as.count(i) ? 1 : xs[j++]);
  out[0] = Reshape(in[0], os);
  return OkStatus();
}

Status Importer::Squeeze(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  Shape axes;
  bool have_axes = false;
  if (opset_ >= 13) {
    if (in.size() > 1 && in[1]) {
      KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[1], "axes"));
      have_axes = true;
    }
  } else if (HasAttr("axes")) {
    axes = AttrInts("axes");
    have_axes = true;
  }
  std::set<int64_t> as;
  if (have_axes) {
    for (int64_t a : axes) {
      KILN_ASSIGN_OR_RETURN(int64_t na, NormAxis(a, r));
      if (xs[na] != 1) return Invalid("Squeeze axis " + std::to_string(a) + " has size " + std::to_string(xs[na]));
      as.insert(na);
    }
  } else {
    for (int64_t i = 0; i < r; ++i) if (xs[i] == 1) as.insert(i);
  }
  Shape os;
  for (int64_t i = 0; i < r; ++i) if (!as.count(i)) os.push_back(xs[i]);
  out[0] = Reshape(in[0], os);
  return OkStatus();
}

Status Importer::TransposeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                             std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  int64_t r = in[0]->type().rank();
  Shape perm = AttrInts("perm");
  if (perm.empty()) for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != r) return Invalid("Transpose perm has the wrong length");
  std::vector<bool> seen(r, false);
  bool identity = true;
  for (int64_t i = 0; i < r; ++i) {
    if (perm[i] < 0 || perm[i] >= r || seen[perm[i]]) return Invalid("Transpose perm is not a permutation");
    seen[perm[i]] = true;
    identity &= perm[i] == i;
  }
  out[0] = identity ? in[0] : Transpose(in[0], perm);
  return OkStatus();
}

Status Importer::Concat(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  int64_t r = in[0]->type().rank();
  if (!HasAttr("axis")) return Invalid("Concat needs 'axis'");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  Shape os = in[0]->type().shape;
  os[axis] = 0;
  std::vector<Value*> ops;
  for (Value* v : in) {
    if (!v) continue;
    const Type& t = v->type();
    if (t.dtype != in[0]->type().dtype) return Invalid("Concat operand dtypes differ");
    if (t.rank() != r) return Invalid("Concat operand ranks differ");
    for (int64_t i = 0; i < r; ++i)
      if (i != axis && t.shape[i] != os[i])
        return Invalid("Concat operand shapes differ: " + ShapeStr(t.shape) + " vs " + ShapeStr(in[0]->type().shape));
    os[axis] += t.shape[axis];
    if (t.shape[axis] > 0) ops.push_back(v);  // empty pieces add nothing
  }
  if (ops.empty()) ops.push_back(in[0]);
  if (ops.size() == 1 && ops[0]->type().shape == os) { out[0] = ops[0]; return OkStatus(); }
  out[0] = Emit("tensor.concat", ops, Type::Tensor(in[0]->type().dtype, os), {{"axis", axis}});
  return OkStatus();
}

Status Importer::Split(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  int64_t dim = xs[axis];
  int64_t parts = static_cast<int64_t>(out.size());
  Shape sizes;
  if (opset_ >= 13 && in.size() > 1 && in[1]) {
    KILN_ASSIGN_OR_RETURN(sizes, ConstInts(in[1], "split"));
  } else if (opset_ < 13 && HasAttr("split")) {
    sizes = AttrInts("split");
  } else {
    if (opset_ >= 18 && HasAttr("num_outputs")) parts = AttrInt("num_outputs", parts);
    if (parts <= 0) return Invalid("Split into zero parts");
    int64_t chunk = CeilDiv(dim, parts);
    for (int64_t i = 0; i < parts; ++i) sizes.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
    if (opset_ < 18 && dim % parts != 0) return Invalid("Split: dim not divisible into equal parts");
  }
  if (static_cast<int64_t>(sizes.size()) != static_cast<int64_t>(out.size()))
    return Invalid("Split sizes do not match the number of outputs");
  for (int64_t sz : sizes)
    if (sz < 0 || sz > dim) return Invalid("bad Split size " + std::to_string(sz));
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    Shape os = xs, starts(r, 0), strides(r, 1);
    os[axis] = sizes[i];
    starts[axis] = off;
    off += sizes[i];
    if (off > dim) return Invalid("Split sizes exceed the dim");
    out[i] = os == xs ? x : Emit("tensor.slice", {x}, Type::Tensor(x->type().dtype, os),
                                 {{"starts", starts}, {"strides", strides}});
  }
  if (off != dim) return Invalid("Split sizes do not sum to the dim");
  return OkStatus();
}

Status Importer::Slice(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  int64_t r = x->type().rank();
  Shape starts, ends, axes, steps;
  if (opset_ < 10) {
    starts = AttrInts("starts");
    ends = AttrInts("ends");
    axes = AttrInts("axes");
  } else {
    KILN_REQUIRE_INPUTS(3);
    KILN_ASSIGN_OR_RETURN(starts, ConstInts(in[1], "starts"));
    KILN_ASSIGN_OR_RETURN(ends, ConstInts(in[2], "ends"));
    if (in.size() > 3 && in[3]) { KILN_ASSIGN_OR_RETURN(axes, ConstInts(in[3], "axes")); }
    if (in.size() > 4 && in[4]) { KILN_ASSIGN_OR_RETURN(steps, ConstInts(in[4], "steps")); }
  }
  if (axes.empty()) for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return Invalid("Slice starts/ends/axes/steps lengths differ");
  Shape os = xs, ostarts(r, 0), ostrides(r, 1);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], r));
    if (seen[a]) return Invalid("Slice axes repeat");
    seen[a] = true;
    int64_t d = xs[a], s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) return Invalid("Slice step is 0");
    // Steps beyond the dim select one element either way; clamping keeps the
    // arithmetic below in range.
    st = std::clamp<int64_t>(st, -kMaxDim, kMaxDim);
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t size;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      size = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      size = s > e ? (s - e - 1) / (-st) + 1 : 0;
    }
    os[a] = size;
    ostarts[a] = size > 0 ? s : 0;
    ostrides[a] = st;
  }
  bool identity = os == xs;
  for (int64_t i = 0; i < r; ++i) identity &= ostarts[i] == 0 && (ostrides[i] == 1 || os[i] <= 1);
  out[0] = identity ? x : Emit("tensor.slice", {x}, Type::Tensor(x->type().dtype, os),
                               {{"starts", ostarts}, {"strides", ostrides}});
  return OkStatus();
}

Status Importer::CastOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  DType to;
  if (op_type_ == "CastLike") {
    KILN_REQUIRE_INPUTS(2);
    to = in[1]->type().dtype;
  } else {
    int64_t t = AttrInt("to", 0);
    to = ConvertDType(static_cast<int32_t>(t));
    if (to == DType::kInvalid)
      return Unimpl("unsupported ONNX dtype " + OnnxDTypeName(static_cast<int32_t>(t)));
  }
  out[0] = Cast(in[0], to);
  return OkStatus();
}

Status Importer::ShapeOp(const onnx::NodeProto& n, const std::vector<Value*>& in,
                         std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  const Shape& xs = in[0]->type().shape;
  int64_t r = static_cast<int64_t>(xs.size());
  int64_t start = AttrInt("start", 0), end = AttrInt("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  Shape v;
  for (int64_t i = start; i < end; ++i) v.push_back(xs[i]);
  out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {int64_t(v.size())}), v));
  return OkStatus();
}

Status Importer::Size(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  out[0] = Constant(MakeDenseFromInts(Type::Tensor(DType::kI64, {}), {in[0]->type().num_elements()}));
  return OkStatus();
}

Status Importer::Gather(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* ind = in[1];
  int64_t r = x->type().rank();
  if (r == 0) return Invalid("Gather from a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t axis, NormAxis(AttrInt("axis", 0), r));
  DType it = ind->type().dtype;
  if (it != DType::kI64 && it != DType::kI32) return Invalid("Gather indices must be int32/int64");
  int64_t dim = x->type().shape[axis];
  if (const DenseElements* c = GetConst(ind)) {  // normalize negative indices, check bounds
    std::vector<int64_t> v(c->type.num_elements());
    bool changed = false;
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = ReadElementAsInt(*c, static_cast<int64_t>(i));
      if (v[i] < -dim || v[i] >= dim)
        return Invalid("Gather index " + std::to_string(v[i]) + " out of range for dim " + std::to_string(dim));
      if (v[i] < 0) { v[i] += dim; changed = true; }
    }
    if (changed) ind = Constant(MakeDenseFromInts(c->type, v));
  }
  Shape os(x->type().shape.begin(), x->type().shape.begin() + axis);
  for (int64_t d : ind->type().shape) os.push_back(d);
  for (int64_t i = axis + 1; i < r; ++i) os.push_back(x->type().shape[i]);
  out[0] = Emit("tensor.gather", {x, ind}, Type::Tensor(x->type().dtype, os), {{"axis", axis}});
  return OkStatus();
}

Status Importer::Pad(const onnx::NodeProto& n, const std::vector<Value*>& in,
                     std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  int64_t r = x->type().rank();
  std::string mode = AttrStr("mode", "constant");
  Shape pads;
  double value = 0;
  Value* runtime_value = nullptr;  // constant_value known only at run time
  if (opset_ < 11) {
    pads = AttrInts(opset_ < 2 ? "paddings" : "pads");
    value = AttrFloat("value", 0.0);
  } else {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(pads, ConstInts(in[1], "pads"));
    if (in.size() > 2 && in[2]) {
      if (GetConst(in[2])) {
        KILN_ASSIGN_OR_RETURN(value, ConstScalarValue(in[2], "constant_value"));
      } else {
        if (in[2]->type().num_elements() != 1) return Invalid("input 'constant_value' must be a scalar");
        if (in[2]->type().dtype != x->type().dtype) return Invalid("input 'constant_value' must have the data's dtype");
        runtime_value = Reshape(in[2], {});
      }
    }
    if (in.size() > 3 && in[3]) {
      KILN_ASSIGN_OR_RETURN(Shape axes, ConstInts(in[3], "axes"));
      if (pads.size() != 2 * axes.size()) return Invalid("Pad pads must have 2 * len(axes) entries");
      Shape full(2 * r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        KILN_ASSIGN_OR_RETURN(int64_t a, NormAxis(axes[i], r));
        full[a] = pads[i];
        full[a + r] = pads[i + axes.size()];
      }
      pads = full;
    }
  }
  if (static_cast<int64_t>(pads.size()) != 2 * r) return Invalid("Pad pads must have 2 * rank entries");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return Unimpl("Pad mode '" + mode + "' is not supported");
  Shape os = x->type().shape;
  bool zero = true;
  for (int64_t p : pads)
    if (p < -kMaxDim || p > kMaxDim) return Invalid("bad pad " + std::to_string(p));
  for (int64_t i = 0; i < r; ++i) {
    os[i] += pads[i] + pads[i + r];
    if (os[i] < 0) return Invalid("Pad removes more than the dim");
    zero &= pads[i] == 0 && pads[i + r] == 0;
  }
  if (zero) { out[0] = x; return OkStatus(); }
  out[0] = Emit("tensor.pad", {x}, Type::Tensor(x->type().dtype, os),
                {{"pads", pads}, {"mode", mode}, {"value", value}});
  if (runtime_value && mode == "constant") {
    // A runtime constant_value: select(inside, pad(x, 0), value), where
    // `inside` (the same pad of an all-true tensor) marks the elements taken
    // from x; it folds to a constant for outputs up to kMaxFoldElements.
    Value* all_true = Emit("tensor.expand", {BoolConst(true)}, Type::Tensor(DType::kBool, x->type().shape));
    Value* inside = Emit("tensor.pad", {all_true}, Type::Tensor(DType::kBool, os),
                         {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
    out[0] = Emit("tensor.select", {inside, out[0], runtime_value}, out[0]->type());
  }
  return OkStatus();
}

Status Importer::Expand(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  KILN_ASSIGN_OR_RETURN(Shape shape, ConstInts(in[1], "shape"));
  for (int64_t d : shape)
    if (d < 0 || d > kMaxDim) return Invalid("Expand shape has a bad dim " + std::to_string(d));
  Shape os;
  if (!BroadcastShapes(in[0]->type().shape, shape, &os))
    return Invalid("Expand: " + ShapeStr(in[0]->type().shape) + " does not broadcast to " + ShapeStr(shape));
  if (os == in[0]->type().shape) { out[0] = in[0]; return OkStatus(); }
  out[0] = Emit("tensor.expand", {in[0]}, Type::Tensor(in[0]->type().dtype, os));
  return OkStatus();
}

Status Importer::Tile(const onnx::NodeProto& n, const std::vector<Value*>& in,
                      std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  const Shape& xs = x->type().shape;
  KILN_ASSIGN_OR_RETURN(Shape reps, ConstInts(in[1], "repeats"));
  if (reps.size() != xs.size()) return Invalid("Tile repeats must have rank entries");
  bool identity = true;
  for (int64_t rp : reps) {
    if (rp < 0 || rp > kMaxDim) return Invalid("bad Tile repeat " + std::to_string(rp));
    identity &= rp == 1;
  }
  if (identity) { out[0] = x; return OkStatus(); }
  // [d0, d1, ...] → [1, d0, 1, d1, ...] → expand [r0, d0, r1, d1, ...] → [r0*d0, r1*d1, ...]
  Shape s1, s2, s3;
  for (size_t i = 0; i < xs.size(); ++i) {
    s1.push_back(1); s1.push_back(xs[i]);
    s2.push_back(reps[i]); s2.push_back(xs[i]);
    s3.push_back(reps[i] * xs[i]);
  }
  Value* e = Emit("tensor.expand", {Reshape(x, s1)}, Type::Tensor(x->type().dtype, s2));
  out[0] = Reshape(e, s3);
  return OkStatus();
}

Status Importer::ConstantOfShape(const onnx::NodeProto& n, const std::vector<Value*>& in,
                                 std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  KILN_ASSIGN_OR_RETURN(Shape shape, ConstInts(in[0], "input"));
  int64_t total = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > kMaxDim) return Invalid("ConstantOfShape with a bad dim " + std::to_string(d));
    total *= d;
    if (total > kMaxCreatedElements) return Unimpl("ConstantOfShape result is too large");
  }
  DType dt = DType::kF32;
  std::vector<uint8_t> elem(4, 0);
  if (const onnx::AttributeProto* a = FindAttr("value")) {
    KILN_ASSIGN_OR_RETURN(DenseElements v, TensorToDense(a->t(), "node '" + loc_ + "' (ConstantOfShape)"));
    if (v.type.num_elements() != 1) return Invalid("ConstantOfShape value must have one element");
    dt = v.type.dtype;
    elem.assign(v.bytes(), v.bytes() + DTypeSize(dt));
  }
  int64_t count = Product(shape);
  std::vector<uint8_t> bytes(static_cast<size_t>(count) * elem.size());
  for (int64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * elem.size(), elem.data(), elem.size());
  DenseElements d;
  d.type = Type::Tensor(dt, shape);
  d.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  out[0] = Constant(std::move(d));
  return OkStatus();
}

Status Importer::Range(const onnx::NodeProto& n, const std::vector<Value*>& in,
                       std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(3);
  DType dt = in[0]->type().dtype;
  const DenseElements* c[3];
  for (int i = 0; i < 3; ++i) {
    c[i] = GetConst(in[i]);
    if (!c[i]) return Unimpl("Range inputs must be constants (computable at import)");
    if (c[i]->type.num_elements() != 1) return Invalid("Range inputs must be scalars");
  }
  if (IsFloatDType(dt)) {
    double s = ReadElementAsDouble(*c[0], 0), l = ReadElementAsDouble(*c[1], 0), d = ReadElementAsDouble(*c[2], 0);
    if (d == 0) return Invalid("Range delta is 0");
    double fc = std::ceil((l - s) / d);
    if (!(fc <= static_cast<double>(kMaxCreatedElements))) return Unimpl("Range result is too large");
    int64_t cnt = std::max<int64_t>(0, static_cast<int64_t>(fc));
    std::vector<double> v(cnt);
    for (int64_t i = 0; i < cnt; ++i) v[i] = s + static_cast<double>(i) * d;
    out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {cnt}), v));
  } else {
    int64_t s = ReadElementAsInt(*c[0], 0), l = ReadElementAsInt(*c[1], 0), d = ReadElementAsInt(*c[2], 0);
    if (d == 0) return Invalid("Range delta is 0");
    double span = (static_cast<double>(l) - static_cast<double>(s)) / static_cast<double>(d);
    if (span > static_cast<double>(kMaxCreatedElements)) return Unimpl("Range result is too large");
    int64_t cnt = d > 0 ? (l > s ? (l - s + d - 1) / d : 0) : (s > l ? (s - l + (-d) - 1) / (-d) : 0);
    std::vector<int64_t> v(cnt);
    for (int64_t i = 0; i < cnt; ++i) v[i] = s + i * d;
    out[0] = Constant(MakeDenseFromInts(Type::Tensor(dt, {cnt}), v));
  }
  return OkStatus();
}

}  // namespace detail
}  // namespace kiln::onnx_import
