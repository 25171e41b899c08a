// ONNX's window functions (opset 17): HannWindow, HammingWindow and
// BlackmanWindow of `size` samples, as constants at import. `size` must be a
// constant (it decides the output's shape). With periodic = 1 (the default)
// the window is one period of length N = size (for spectral analysis, e.g.
// STFT); with periodic = 0 it is symmetric, N = size - 1. For n in [0, size):
//   Hann:     0.5 - 0.5 cos(2 pi n / N)
//   Hamming:  25/46 - 21/46 cos(2 pi n / N)
//   Blackman: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)
// (the coefficients of the ONNX operator definitions).
#include <cmath>

#include "compiler/import/onnx/onnx_importer_internal.h"

namespace kiln::onnx_import::detail {

Status Importer::Window(const onnx::NodeProto& n, const std::vector<Value*>& in,
                        std::vector<Value*>& out) {
  KILN_REQUIRE_INPUTS(1);
  KILN_ASSIGN_OR_RETURN(double size_d, ConstScalarValue(in[0], "size"));
  const int64_t size = static_cast<int64_t>(size_d);
  if (size < 0 || size > (int64_t{1} << 24)) return Invalid("size " + std::to_string(size) + " is out of range");
  const int32_t t = static_cast<int32_t>(AttrInt("output_datatype", 1));
  const DType dt = ConvertDType(t);
  if (dt == DType::kInvalid) return Unimpl("unsupported ONNX dtype " + OnnxDTypeName(t));
  const bool periodic = AttrInt("periodic", 1) != 0;
  const double N = static_cast<double>(periodic ? size : size - 1);
  const double pi = 3.14159265358979323846;
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double a = N > 0 ? 2.0 * pi * static_cast<double>(i) / N : 0.0;
    double v;
    if (op_type_ == "HannWindow") v = 0.5 - 0.5 * std::cos(a);
    else if (op_type_ == "HammingWindow") v = 25.0 / 46.0 - 21.0 / 46.0 * std::cos(a);
    else v = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2.0 * a);
    w[static_cast<size_t>(i)] = v;
  }
  out[0] = Constant(MakeDenseFromDoubles(Type::Tensor(dt, {size}), w));
  return OkStatus();
}

}  // namespace kiln::onnx_import::detail
