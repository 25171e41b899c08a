// ONNX ConvTranspose → tensor.conv_transpose (compiler/ir/conv_transpose.h).
//
// Everything ONNX leaves implicit is resolved here, so the tensor-level op
// carries only explicit pads and output_padding and its result shape is
// exactly ONNX's formula:
//   full_i  = s_i * (D_i - 1) + output_padding_i + ((K_i - 1) * d_i + 1)
//   NOTSET: pads as given; VALID: pads = 0;
//   SAME_UPPER / SAME_LOWER: the total pad is max(0, full_i - D_i * s_i);
//   output_shape O_i given: the total pad is max(0, full_i - O_i); if O_i is
//     larger than full_i the surplus goes to output_padding (positions no tap
//     reaches: they hold the bias only, as in ONNX Runtime).
// A total pad T splits as ONNX's ConvTranspose doc says (and ONNX Runtime
// 1.20's DistributePadding does): SAME_UPPER puts T/2 at the begin and the rest
// at the end; NOTSET and SAME_LOWER put the larger half at the begin.
// The kernel comes from W ([C, M/group, K...]); a `kernel_shape` attribute
// must agree with it. 1, 2 and 3 spatial dims; f32 (codegen).
//
// Example: X [1,24,160,160], W [24,24,2,2], strides [2,2] (PaddleOCR det's
// upsampling) → tensor.conv_transpose ... -> tensor<1x24x320x320xf32>.
#include <algorithm>

#include "compiler/import/onnx/onnx_importer_internal.h"
#include "compiler/ir/conv_transpose.h"

namespace kiln::onnx_import::detail {

Status Importer::ConvTranspose(const onnx::NodeProto& n, const std::vector<Value*>& in,
                               std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(2);
  Value* x = in[0];
  Value* w = in[1];
  Value* b = in.size() > 2 ? in[2] : nullptr;
  const Shape& xs = x->type().shape;
  const Shape& ws = w->type().shape;
  const int64_t r = x->type().rank();
  if (r < 3 || r > 5)
    return Unimpl("ConvTranspose with " + std::to_string(r - 2) + " spatial dims is not supported (1 to 3 are)");
  if (w->type().rank() != r)
    return Invalid("weight " + ShapeStr(ws) + " and input " + ShapeStr(xs) + " differ in rank");
  if (!IsFloatDType(x->type().dtype)) return Unimpl(std::string("ConvTranspose on ") + DTypeName(x->type().dtype));
  if (w->type().dtype != x->type().dtype) return Invalid("weight dtype differs from input");
  const size_t k = static_cast<size_t>(r - 2);
  const int64_t group = AttrInt("group", 1);
  if (group <= 0 || xs[1] % group != 0 || ws[0] != xs[1])
    return Invalid("channels mismatch: input " + ShapeStr(xs) + " has " + std::to_string(xs[1]) +
                   " channels, weight " + ShapeStr(ws) + " expects " + std::to_string(ws[0]) +
                   " (group " + std::to_string(group) + ")");
  const int64_t M = ws[1] * group;
  if (b) {
    if (b->type().shape != Shape{M}) return Invalid("bias must be [" + std::to_string(M) + "], got " + ShapeStr(b->type().shape));
    if (b->type().dtype != x->type().dtype) return Invalid("bias dtype differs from input");
  }
  Shape kernel(ws.begin() + 2, ws.end());
  if (HasAttr("kernel_shape") && AttrInts("kernel_shape") != kernel)
    return Invalid("kernel_shape " + ShapeStr(AttrInts("kernel_shape")) +
                   " disagrees with the weight shape " + ShapeStr(ws));
  Shape strides = AttrInts("strides", Shape(k, 1));
  Shape dil = AttrInts("dilations", Shape(k, 1));
  Shape pads = AttrInts("pads", Shape(2 * k, 0));
  Shape out_pad = AttrInts("output_padding", Shape(k, 0));
  Shape out_shape = AttrInts("output_shape");
  if (strides.size() != k || dil.size() != k || pads.size() != 2 * k || out_pad.size() != k)
    return Invalid("strides/dilations/output_padding need " + std::to_string(k) + " entries and pads " +
                   std::to_string(2 * k));
  if (!out_shape.empty() && out_shape.size() != k && out_shape.size() != k + 2)
    return Invalid("output_shape has " + std::to_string(out_shape.size()) + " entries, expected " +
                   std::to_string(k) + " or " + std::to_string(k + 2));
  if (out_shape.size() == k + 2) out_shape.erase(out_shape.begin(), out_shape.begin() + 2);
  for (size_t i = 0; i < k; ++i) {
    if (strides[i] <= 0 || dil[i] <= 0 || kernel[i] <= 0 || strides[i] > kMaxDim || dil[i] > kMaxDim ||
        kernel[i] > kMaxDim)
      return Invalid("strides, dilations and kernel sizes must be positive");
    if (out_pad[i] < 0 || out_pad[i] > kMaxDim) return Invalid("bad output_padding " + std::to_string(out_pad[i]));
    if (xs[2 + i] < 1) return Invalid("input " + ShapeStr(xs) + " has an empty spatial dim");
    // Keeps the extent arithmetic below far from int64 overflow.
    constexpr int64_t kMaxSpan = int64_t{1} << 40;
    if (strides[i] > kMaxSpan / xs[2 + i] || (kernel[i] - 1) > kMaxSpan / dil[i] || out_pad[i] > kMaxSpan)
      return Invalid("output extent of spatial dim " + std::to_string(i) + " would exceed 2^40");
  }
  for (int64_t p : pads)
    if (p < 0 || p > kMaxDim) return Invalid("bad pad " + std::to_string(p));
  std::string auto_pad = AttrStr("auto_pad", "NOTSET");
  if (auto_pad.empty()) auto_pad = "NOTSET";
  if (auto_pad != "NOTSET" && auto_pad != "VALID" && auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER")
    return Invalid("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
  const bool same = auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER";
  Shape ys = {xs[0], M};
  for (size_t i = 0; i < k; ++i) {
    const int64_t full = ir::ConvTransposeOutputSize(xs[2 + i], kernel[i], strides[i], dil[i], 0, 0, out_pad[i]);
    int64_t target = -1;  // the output extent asked for, if any
    if (!out_shape.empty()) {
      target = out_shape[i];
      if (target < 1 || target > kMaxDim) return Invalid("bad output_shape " + ShapeStr(out_shape));
    } else if (same) {
      target = xs[2 + i] * strides[i];
    } else if (auto_pad == "VALID") {
      pads[i] = pads[k + i] = 0;
    }
    if (target >= 0) {
      const int64_t total = std::max<int64_t>(0, full - target);
      const int64_t small = total / 2, big = total - total / 2;
      pads[i] = auto_pad == "SAME_UPPER" ? small : big;
      pads[k + i] = auto_pad == "SAME_UPPER" ? big : small;
      // output_shape beyond the full extent: positions no tap reaches.
      if (!out_shape.empty() && target > full) out_pad[i] += target - full;
    }
    const int64_t o = ir::ConvTransposeOutputSize(xs[2 + i], kernel[i], strides[i], dil[i], pads[i],
                                                  pads[k + i], out_pad[i]);
    if (o < 1)
      return Invalid("output extent " + std::to_string(o) + " of spatial dim " + std::to_string(i) +
                     " is not positive (pads " + ShapeStr(pads) + ")");
    ys.push_back(o);
  }
  std::vector<Value*> ops = {x, w};
  if (b) ops.push_back(b);
  out[0] = Emit("tensor.conv_transpose", ops, Type::Tensor(x->type().dtype, ys),
                {{"strides", strides},
                 {"dilations", dil},
                 {"pads", pads},
                 {"output_padding", out_pad},
                 {"group", group}});
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
