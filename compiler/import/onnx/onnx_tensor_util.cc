// ONNX tensors and shapes: TensorProto to DenseElements, ONNX dtypes to
// Kiln dtypes, element counts, broadcasting and integer division helpers. The Importer class is declared in onnx_importer_internal.h;
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

int64_t Product(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < std::min(end, s.size()); ++i) p *= s[i];
  return p;
}

// Element count, or -1 when a dim is negative or the count overflows.
int64_t SafeNumElements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string ShapeStr(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

std::string OnnxDTypeName(int32_t t) {
  const std::string& n = onnx::TensorProto_DataType_Name(t);
  return n.empty() ? "dtype#" + std::to_string(t) : n;
}

// ONNX TensorProto.DataType → DType; kInvalid when unsupported.
DType ConvertDType(int32_t t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT: return DType::kF32;
    case onnx::TensorProto_DataType_UINT8: return DType::kU8;
    case onnx::TensorProto_DataType_INT8: return DType::kI8;
    case onnx::TensorProto_DataType_INT16: return DType::kI16;
    case onnx::TensorProto_DataType_INT32: return DType::kI32;
    case onnx::TensorProto_DataType_INT64: return DType::kI64;
    case onnx::TensorProto_DataType_BOOL: return DType::kBool;
    case onnx::TensorProto_DataType_FLOAT16: return DType::kF16;
    case onnx::TensorProto_DataType_DOUBLE: return DType::kF64;
    case onnx::TensorProto_DataType_BFLOAT16: return DType::kBF16;
    case onnx::TensorProto_DataType_UINT16: return DType::kU16;
    case onnx::TensorProto_DataType_UINT32: return DType::kU32;
    case onnx::TensorProto_DataType_UINT64: return DType::kU64;
    default: return DType::kInvalid;
  }
}

// Converts a TensorProto (raw_data or typed fields) to DenseElements. `what`
// names the tensor in errors ("initializer 'w'", "node 'n' (Constant)").
StatusOr<DenseElements> TensorToDense(const onnx::TensorProto& t, const std::string& what) {
  DType dt = ConvertDType(t.data_type());
  if (dt == DType::kInvalid)
    return UnimplementedError("%s: unsupported ONNX dtype %s", what.c_str(),
                              OnnxDTypeName(t.data_type()).c_str());
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL)
    return UnimplementedError("%s: external tensor data is not supported", what.c_str());
  if (t.has_segment())
    return UnimplementedError("%s: segmented tensors are not supported", what.c_str());
  Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = SafeNumElements(shape);
  if (n < 0 || n > (int64_t{1} << 40))
    return InvalidArgumentError("%s: bad tensor shape %s", what.c_str(), ShapeStr(shape).c_str());
  size_t es = DTypeSize(dt);
  size_t want = static_cast<size_t>(n) * es;
  // Every element must be present in the message, so these checks come before
  // allocating.
  size_t have = t.has_raw_data() ? t.raw_data().size()
                : static_cast<size_t>(std::max({t.float_data_size(), t.double_data_size(),
                                                t.int64_data_size(), t.int32_data_size(),
                                                t.uint64_data_size()})) * es;
  if (have != want && t.has_raw_data())
    return InvalidArgumentError("%s: raw_data has %zu bytes, expected %zu for shape %s %s",
                                what.c_str(), t.raw_data().size(), want,
                                ShapeStr(shape).c_str(), DTypeName(dt));
  if (have < want)
    return InvalidArgumentError("%s: holds fewer values than its shape %s needs", what.c_str(),
                                ShapeStr(shape).c_str());
  std::vector<uint8_t> bytes(want);
  if (t.has_raw_data()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data().data(), bytes.size());
  } else {
    auto check = [&](int count) -> Status {
      if (count != n)
        return InvalidArgumentError("%s: has %d values, expected %lld for shape %s", what.c_str(),
                                    count, static_cast<long long>(n), ShapeStr(shape).c_str());
      return OkStatus();
    };
    uint8_t* o = bytes.data();
    switch (dt) {
      case DType::kF32:
        KILN_RETURN_IF_ERROR(check(t.float_data_size()));
        for (int64_t i = 0; i < n; ++i) { float v = t.float_data(i); std::memcpy(o + 4 * i, &v, 4); }
        break;
      case DType::kF64:
        KILN_RETURN_IF_ERROR(check(t.double_data_size()));
        for (int64_t i = 0; i < n; ++i) { double v = t.double_data(i); std::memcpy(o + 8 * i, &v, 8); }
        break;
      case DType::kI64:
        KILN_RETURN_IF_ERROR(check(t.int64_data_size()));
        for (int64_t i = 0; i < n; ++i) { int64_t v = t.int64_data(i); std::memcpy(o + 8 * i, &v, 8); }
        break;
      case DType::kI32:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) { int32_t v = t.int32_data(i); std::memcpy(o + 4 * i, &v, 4); }
        break;
      case DType::kU32: case DType::kU64:
        KILN_RETURN_IF_ERROR(check(t.uint64_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          uint64_t v = t.uint64_data(i);
          std::memcpy(o + es * i, &v, es);  // little-endian: the low bytes for u32
        }
        break;
      case DType::kI16: case DType::kF16: case DType::kU16: case DType::kBF16:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          uint16_t v = static_cast<uint16_t>(t.int32_data(i));
          std::memcpy(o + 2 * i, &v, 2);
        }
        break;
      case DType::kI8: case DType::kU8: case DType::kBool:
        KILN_RETURN_IF_ERROR(check(t.int32_data_size()));
        for (int64_t i = 0; i < n; ++i) {
          int32_t v = t.int32_data(i);
          o[i] = dt == DType::kBool ? (v != 0) : static_cast<uint8_t>(v);
        }
        break;
      default:
        return UnimplementedError("%s: unsupported ONNX dtype %s", what.c_str(),
                                  OnnxDTypeName(t.data_type()).c_str());
    }
  }
  DenseElements d;
  d.type = Type::Tensor(dt, shape);
  d.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  return d;
}

const DenseElements* GetConst(Value* v) {
  if (!v) return nullptr;
  ir::Operation* op = v->defining_op();
  if (!op || !op->is("tensor.constant")) return nullptr;
  const Attribute* a = op->attr("value");
  return a ? std::get_if<DenseElements>(&a->value) : nullptr;
}

// numpy broadcasting of two shapes; false if incompatible.
bool BroadcastShapes(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  Shape s(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1) s[i] = da;
    else if (da == 1) s[i] = db;
    else return false;
  }
  *out = s;
  return true;
}

int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }
int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace detail
}  // namespace kiln::onnx_import
