// ONNX Resize (opsets 10, 11, 13, 18) and Upsample (opsets 7, 9) →
// tensor.resize (compiler/ir/ops.h) with host-computed per-axis taps
// (resize_taps.h).
//
// Inputs by opset:
//   Upsample-7:  X; attribute `scales`.
//   Upsample-9, Resize-10: X, scales.
//   Resize-11+:  X, roi (optional), scales (optional), sizes (optional).
// scales / sizes / roi must be constants at import: initializers, Constant
// nodes, or anything the constant folder reduces to one (a
// Shape → Slice → Concat → Cast chain of a static shape). A value computed
// on the device is kUnimplemented naming the node and the input.
//
// Output shape, as ONNX Runtime computes it: with scales,
// out[d] = trunc(f32(scale[d]) * f32(in[d])); with sizes, out[d] = sizes[d]
// and scale[d] = f32(out[d]) / f32(in[d]); keep_aspect_ratio_policy
// not_larger / not_smaller (opset 18, sizes only) replaces the scale of
// every resized axis by the min / max of them and out[d] =
// round(scale * in[d]). Upsample and Resize-10 use the asymmetric transform
// and ONNX Runtime's legacy nearest rounding (ResizeNearestMode::kSimple).
//
// Example (nearest 2x of a 1x1x2x2 tensor):
//   %idx = "tensor.constant"() {value = dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi32>}
//   %y = "tensor.resize"(%x, %idx) {taps = [0, 0, 1, 1], extrapolation_value = 0.0 : f64,
//        mode = "nearest"} : (tensor<1x1x2x2xf32>, tensor<8xi32>) -> tensor<1x1x4x4xf32>
#include <cmath>
#include <limits>
#include <set>

#include "compiler/import/onnx/onnx_importer_internal.h"
#include "compiler/import/onnx/resize_taps.h"

namespace kiln::onnx_import::detail {

namespace {

// Upper bound on the host-computed tap table (entries over all axes).
constexpr int64_t kMaxResizeTaps = int64_t{1} << 24;

}  // namespace

Status Importer::Resize(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  (void)n;
  KILN_REQUIRE_INPUTS(1);
  Value* x = in[0];
  const Shape xs = x->type().shape;
  const int64_t rank = x->type().rank();
  const DType dt = x->type().dtype;
  const bool upsample = op_type_ == "Upsample";
  const bool legacy = upsample || opset_ < 11;  // no coordinate_transformation_mode
  // An optional input: absent when not given, or given with no elements.
  auto input = [&](size_t i) -> Value* {
    Value* v = in.size() > i ? in[i] : nullptr;
    return v && SafeNumElements(v->type().shape) != 0 ? v : nullptr;
  };
  auto floats = [&](Value* v, const char* what) -> StatusOr<std::vector<float>> {
    const DenseElements* d = GetConst(v);
    if (!d)
      return Unimpl(std::string("input '") + what +
                    "' must be a constant (computable at import); a value computed at run "
                    "time is not supported");
    std::vector<float> r(Product(d->type.shape));
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = static_cast<float>(ReadElementAsDouble(*d, static_cast<int64_t>(i)));
    return r;
  };

  // --- attributes ---------------------------------------------------------------
  std::string mode_name = AttrStr("mode", "nearest");
  ResizeMode mode;
  if (!ParseResizeMode(mode_name, &mode) || (mode_name == "bilinear" && !upsample))
    return Invalid("unknown mode '" + mode_name + "'");
  if (legacy && mode == ResizeMode::kCubic)
    return Invalid("mode 'cubic' needs Resize opset 11 or later");
  std::string coord_name =
      legacy ? "asymmetric" : AttrStr("coordinate_transformation_mode", "half_pixel");
  ResizeCoordMode coord;
  if (!ParseResizeCoordMode(coord_name, &coord))
    return Invalid("unknown coordinate_transformation_mode '" + coord_name + "'");
  if (coord == ResizeCoordMode::kHalfPixelSymmetric && opset_ < 18)
    return Invalid("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 18");
  ResizeNearestMode nearest = ResizeNearestMode::kSimple;
  if (!legacy) {
    std::string nm = AttrStr("nearest_mode", "round_prefer_floor");
    if (!ParseResizeNearestMode(nm, &nearest)) return Invalid("unknown nearest_mode '" + nm + "'");
  }
  const float cubic_a = static_cast<float>(AttrFloat("cubic_coeff_a", -0.75));
  const bool exclude_outside = AttrInt("exclude_outside", 0) != 0;
  const double extrapolation = AttrFloat("extrapolation_value", 0.0);
  const bool antialias = opset_ >= 18 && AttrInt("antialias", 0) != 0;
  const std::string policy =
      opset_ >= 18 ? AttrStr("keep_aspect_ratio_policy", "stretch") : "stretch";
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    return Invalid("unknown keep_aspect_ratio_policy '" + policy + "'");

  // --- axes ---------------------------------------------------------------------------
  Shape axes;
  if (opset_ >= 18 && HasAttr("axes")) {
    std::set<int64_t> seen;
    for (int64_t a : AttrInts("axes")) {
      KILN_ASSIGN_OR_RETURN(int64_t na, NormAxis(a, rank));
      if (!seen.insert(na).second) return Invalid("axes repeats axis " + std::to_string(na));
      axes.push_back(na);
    }
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const size_t na = axes.size();

  // --- scales / sizes / roi -----------------------------------------------------------
  std::vector<float> scales_in, roi_in;
  Shape sizes_in;
  bool have_scales = false, have_sizes = false;
  if (upsample && opset_ < 9) {
    const onnx::AttributeProto* a = FindAttr("scales");
    if (!a) return Invalid("Upsample needs the 'scales' attribute");
    scales_in.assign(a->floats().begin(), a->floats().end());
    have_scales = true;
  } else if (legacy) {
    KILN_REQUIRE_INPUTS(2);
    KILN_ASSIGN_OR_RETURN(scales_in, floats(in[1], "scales"));
    have_scales = true;
  } else {
    if (Value* s = input(2)) {
      KILN_ASSIGN_OR_RETURN(scales_in, floats(s, "scales"));
      have_scales = !scales_in.empty();
    }
    if (Value* s = input(3)) {
      KILN_ASSIGN_OR_RETURN(sizes_in, ConstInts(s, "sizes"));
      have_sizes = !sizes_in.empty();
    }
    if (have_scales == have_sizes)
      return Invalid(have_scales ? "both 'scales' and 'sizes' are given; exactly one must be"
                                 : "neither 'scales' nor 'sizes' is given; exactly one must be");
    if (coord == ResizeCoordMode::kTfCropAndResize && input(1)) {
      KILN_ASSIGN_OR_RETURN(roi_in, floats(input(1), "roi"));
    }
  }
  const size_t expect = have_scales ? scales_in.size() : sizes_in.size();
  if (expect != na)
    return Invalid(std::string(have_scales ? "scales" : "sizes") + " has " +
                   std::to_string(expect) + " entries; expected " + std::to_string(na) +
                   (na == static_cast<size_t>(rank) ? " (the rank of X)" : " (one per axis)"));

  // Per-axis scale (f32) and output length, as ONNX Runtime computes them.
  std::vector<float> scale(rank, 1.0f);
  Shape os = xs;
  if (have_scales) {
    if (policy != "stretch")
      return Invalid("keep_aspect_ratio_policy '" + policy + "' needs 'sizes', not 'scales'");
    for (size_t i = 0; i < na; ++i) {
      float s = scales_in[i];
      if (!(s > 0) || !std::isfinite(s))
        return Invalid("scale " + std::to_string(s) + " on axis " + std::to_string(axes[i]) +
                       " must be positive and finite");
      if (upsample && s < 1)
        return Invalid("Upsample scale " + std::to_string(s) + " on axis " +
                       std::to_string(axes[i]) + " must be >= 1");
      scale[axes[i]] = s;
      float prod = s * static_cast<float>(xs[axes[i]]);
      if (!(prod < static_cast<float>(kMaxDim)))
        return Invalid("scale " + std::to_string(s) + " makes axis " + std::to_string(axes[i]) +
                       " too large");
      os[axes[i]] = static_cast<int64_t>(prod);
    }
  } else {
    for (size_t i = 0; i < na; ++i) {
      int64_t d = axes[i];
      if (sizes_in[i] < 0 || sizes_in[i] > kMaxDim)
        return Invalid("size " + std::to_string(sizes_in[i]) + " on axis " + std::to_string(d) +
                       " is out of range");
      os[d] = sizes_in[i];
      if (xs[d] == 0) {
        if (os[d] != 0) return Invalid("axis " + std::to_string(d) + " of X is empty but the size is not");
        scale[d] = 1.0f;
      } else {
        scale[d] = static_cast<float>(os[d]) / static_cast<float>(xs[d]);
      }
    }
    if (policy != "stretch") {
      float s = policy == "not_larger" ? std::numeric_limits<float>::max()
                                       : std::numeric_limits<float>::min();
      for (int64_t d : axes) s = policy == "not_larger" ? std::min(s, scale[d]) : std::max(s, scale[d]);
      for (int64_t d : axes) {
        scale[d] = s;
        float prod = s * static_cast<float>(xs[d]);
        if (!(prod < static_cast<float>(kMaxDim))) return Invalid("the output is too large");
        os[d] = static_cast<int64_t>(std::round(prod));
      }
    }
  }

  // roi: [starts..., ends...] over the axes (opset 18 with axes) or the rank.
  std::vector<float> roi_start(rank, 0.0f), roi_end(rank, 1.0f);
  if (coord == ResizeCoordMode::kTfCropAndResize && !roi_in.empty()) {
    if (roi_in.size() != 2 * na)
      return Invalid("roi has " + std::to_string(roi_in.size()) + " entries; expected " +
                     std::to_string(2 * na));
    for (size_t i = 0; i < na; ++i) {
      roi_start[axes[i]] = roi_in[i];
      roi_end[axes[i]] = roi_in[na + i];
    }
  }

  // --- checks -----------------------------------------------------------------------
  if (mode != ResizeMode::kNearest && dt != DType::kF32)
    return Unimpl(mode_name + " Resize on " + DTypeName(dt) + " (only f32; nearest takes any dtype)");
  for (int64_t d = 0; d < rank; ++d)
    if (os[d] == 0 || xs[d] == 0)
      return Unimpl("Resize of an empty tensor (X " + ShapeStr(xs) + ", Y " + ShapeStr(os) + ")");

  // --- taps -------------------------------------------------------------------------
  std::vector<int64_t> taps(rank, 0);
  std::vector<int32_t> index;
  std::vector<float> weight;
  bool unit = true;
  for (int64_t d = 0; d < rank; ++d) {
    ResizeAxisSpec spec;
    spec.mode = mode;
    spec.coord = coord;
    spec.nearest = nearest;
    spec.in_len = xs[d];
    spec.out_len = os[d];
    spec.scale = scale[d];
    spec.length_resized = have_scales ? scale[d] * static_cast<float>(xs[d])
                                      : static_cast<float>(os[d]);
    spec.roi_start = roi_start[d];
    spec.roi_end = roi_end[d];
    spec.cubic_coeff_a = cubic_a;
    spec.exclude_outside = exclude_outside;
    spec.antialias = antialias;
    if (spec.in_len > std::numeric_limits<int32_t>::max())
      return Unimpl("Resize of an axis longer than 2^31 - 1");
    // Antialias widens the filter to about 4 / scale taps.
    double width = antialias && scale[d] < 1 ? 4.0 / scale[d] + 2 : 4;
    if (width * static_cast<double>(os[d]) + static_cast<double>(index.size()) >
        static_cast<double>(kMaxResizeTaps))
      return Unimpl("Resize needs more than " + std::to_string(kMaxResizeTaps) + " taps");
    ResizeAxisTaps t = ComputeResizeAxisTaps(spec);
    taps[d] = t.taps;
    unit = unit && t.unit_weights;
    index.insert(index.end(), t.index.begin(), t.index.end());
    weight.insert(weight.end(), t.weight.begin(), t.weight.end());
  }
  if (index.empty()) {  // every axis copied
    out[0] = x;
    return OkStatus();
  }
  const int64_t count = static_cast<int64_t>(index.size());
  std::vector<int64_t> index64(index.begin(), index.end());
  std::vector<Value*> operands = {x, Constant(MakeDenseFromInts(Type::Tensor(DType::kI32, {count}), index64))};
  if (!unit) operands.push_back(Constant(ir::MakeDenseF32({count}, weight)));
  out[0] = Emit("tensor.resize", operands, Type::Tensor(dt, os),
                {{"taps", taps}, {"extrapolation_value", extrapolation}, {"mode", mode_name}});
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
