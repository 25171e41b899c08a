// ONNX Resize / Upsample as separable sampling taps.
//
// Resize is separable: along every axis, output coordinate o reads a few
// input coordinates (taps) and combines them with weights; the N-d result is
// the product of the per-axis weights (bilinear, trilinear, bicubic, ...).
// Shapes are static in Kiln, so the importer computes every axis's taps on
// the host, once, and the device only gathers and sums (tensor.resize,
// compiler/ir/ops.h). The host arithmetic follows ONNX Runtime's CPU kernel
// (onnxruntime/core/providers/cpu/tensor/upsamplebase.h and upsample.cc):
// source coordinates, nearest rounding and linear / cubic weights are
// computed in f32 in the same order, so the rounding decisions of nearest
// mode agree with the oracle bit for bit and do not depend on a GPU's
// division accuracy. Antialiased downscaling follows the ONNX reference
// implementation (onnx/reference/ops/op_resize.py: _linear_coeffs_antialias,
// _cubic_coeffs_antialias with edge padding and exclude_outside), in f64;
// ONNX Runtime agrees within 1.1e-5 on the antialias cases of
// tests/golden/resize.
#ifndef KILN_COMPILER_IMPORT_ONNX_RESIZE_TAPS_H_
#define KILN_COMPILER_IMPORT_ONNX_RESIZE_TAPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace kiln::onnx_import {

enum class ResizeMode { kNearest, kLinear, kCubic };
enum class ResizeCoordMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNearest,
  kTfCropAndResize,
};
// kSimple: Upsample and Resize-10 (no nearest_mode attribute): ONNX Runtime
// truncates the source coordinate when upsampling and takes its ceiling when
// downsampling (scale < 1).
enum class ResizeNearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil, kSimple };

// ONNX attribute spellings; false for an unknown name.
bool ParseResizeMode(const std::string& s, ResizeMode* out);
bool ParseResizeCoordMode(const std::string& s, ResizeCoordMode* out);
bool ParseResizeNearestMode(const std::string& s, ResizeNearestMode* out);

// One axis of a Resize.
struct ResizeAxisSpec {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoordMode coord = ResizeCoordMode::kHalfPixel;
  ResizeNearestMode nearest = ResizeNearestMode::kRoundPreferFloor;
  int64_t in_len = 1;   // > 0
  int64_t out_len = 1;  // > 0
  // The scale of the coordinate transform: the `scales` input, or
  // out_len / in_len (f32) when `sizes` was given, or the
  // keep_aspect_ratio_policy scale.
  float scale = 1.0f;
  // length_resized of align_corners, pytorch_half_pixel and
  // tf_crop_and_resize: f32(scale) * f32(in_len) when `scales` was given
  // (the ONNX reference implementation's output_width: 3.142857 in
  // test_resize_downsample_scales_linear_align_corners, where ONNX Runtime
  // uses the truncated out_len and gives 4), else out_len.
  float length_resized = 1.0f;
  float roi_start = 0.0f, roi_end = 1.0f;  // kTfCropAndResize only
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  bool antialias = false;  // linear / cubic downscaling (scale < 1) widens the filter
};

// The taps of one axis. taps == 0: the axis is copied (out_len == in_len
// and y[o] reads x[o] with weight 1); index and weight are then empty.
// Otherwise index and weight hold out_len * taps entries, output coordinate
// o's taps at [o * taps, (o + 1) * taps). An index is in [0, in_len), or -1
// for every tap of an output coordinate whose source lies outside the input
// (tf_crop_and_resize: the element is extrapolation_value).
struct ResizeAxisTaps {
  int64_t taps = 0;
  std::vector<int32_t> index;
  std::vector<float> weight;
  // Every weight is exactly 1 (then taps == 1): a pure gather.
  bool unit_weights = true;
};

// The source coordinate of output coordinate `x` (ONNX Runtime's f32
// transform; the f64 steps of half_pixel_symmetric and tf_crop_and_resize
// with one output element are kept).
float ResizeSourceCoordinate(const ResizeAxisSpec& s, int64_t x);

// The taps of axis `s`. An axis with scale 1 and in_len == out_len is
// copied, whatever the coordinate transform (as ONNX Runtime does; the
// reference would shift it by half a pixel under tf_half_pixel_for_nn),
// except tf_crop_and_resize with a roi other than [0, 1]. Taps whose weight is 0 for every output coordinate
// are dropped where that makes the axis a gather (taps == 1, weight 1), and a
// gather of x[o] for every o becomes the copy (taps == 0). Cost:
// O(out_len * taps) host time and memory (taps <= 4, or about 4 / scale with
// antialias).
ResizeAxisTaps ComputeResizeAxisTaps(const ResizeAxisSpec& s);

// Host evaluation of tensor.resize (compiler/ir/ops.h) for the constant
// folder and reference interpreter (const_eval.h): `x` any numeric dtype,
// `index` i32, `weight` f32 or nullptr (unit weights), attrs `taps`,
// `extrapolation_value`. Weighted sums are computed in double and rounded to
// the result dtype once. False, without error, when the operands do not
// match the attributes.
bool EvaluateResize(const ir::DenseElements& x, const ir::DenseElements& index,
                    const ir::DenseElements* weight, const ir::Type& result_type,
                    const std::vector<int64_t>& taps, double extrapolation_value,
                    ir::DenseElements* out);

}  // namespace kiln::onnx_import

#endif  // KILN_COMPILER_IMPORT_ONNX_RESIZE_TAPS_H_
