#include "compiler/import/onnx/const_eval.h"
#include "compiler/import/onnx/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

namespace kiln::onnx_import {
namespace {

using ir::Attribute;
using ir::FloatToHalf;
using ir::DenseElements;
using ir::Type;
using Shape = std::vector<int64_t>;

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// Advances a row-major multi-index; returns false after the last one.
bool Next(std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (++idx[i] < shape[i]) return true;
    idx[i] = 0;
  }
  return false;
}

void WriteDouble(uint8_t* p, DType t, double v) {
  switch (t) {
    case DType::kF32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case DType::kF64: std::memcpy(p, &v, 8); break;
    case DType::kF16: { uint16_t h = FloatToHalf(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::kBF16: { uint16_t h = ir::FloatToBF16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::kBool: *p = v != 0 ? 1 : 0; break;
    case DType::kU64: {
      uint64_t u = 0;
      if (std::isfinite(v) && v > 0) u = v >= 1.8446744073709552e19 ? UINT64_MAX : static_cast<uint64_t>(v);
      else if (std::isfinite(v)) u = static_cast<uint64_t>(static_cast<int64_t>(std::trunc(v)));
      std::memcpy(p, &u, 8);
      break;
    }
    default: {
      int64_t i = 0;
      if (std::isfinite(v)) {
        double tv = std::trunc(v);
        if (tv >= 9.2233720368547758e18) i = std::numeric_limits<int64_t>::max();
        else if (tv <= -9.2233720368547758e18) i = std::numeric_limits<int64_t>::min();
        else i = static_cast<int64_t>(tv);
      }
      switch (t) {
        case DType::kI64: std::memcpy(p, &i, 8); break;
        case DType::kI32: { int32_t x = static_cast<int32_t>(i); std::memcpy(p, &x, 4); break; }
        case DType::kI16: { int16_t x = static_cast<int16_t>(i); std::memcpy(p, &x, 2); break; }
        case DType::kI8: { int8_t x = static_cast<int8_t>(i); std::memcpy(p, &x, 1); break; }
        case DType::kU8: *p = static_cast<uint8_t>(i); break;
        case DType::kU16: { uint16_t x = static_cast<uint16_t>(i); std::memcpy(p, &x, 2); break; }
        case DType::kU32: { uint32_t x = static_cast<uint32_t>(i); std::memcpy(p, &x, 4); break; }
        default: break;
      }
    }
  }
}

void WriteInt(uint8_t* p, DType t, int64_t i) {
  switch (t) {
    case DType::kI64: std::memcpy(p, &i, 8); break;
    case DType::kI32: { int32_t x = static_cast<int32_t>(i); std::memcpy(p, &x, 4); break; }
    case DType::kI16: { int16_t x = static_cast<int16_t>(i); std::memcpy(p, &x, 2); break; }
    case DType::kI8: { int8_t x = static_cast<int8_t>(i); std::memcpy(p, &x, 1); break; }
    case DType::kU8: *p = static_cast<uint8_t>(i); break;
    case DType::kU16: { uint16_t x = static_cast<uint16_t>(i); std::memcpy(p, &x, 2); break; }
    case DType::kU32: { uint32_t x = static_cast<uint32_t>(i); std::memcpy(p, &x, 4); break; }
    case DType::kU64: std::memcpy(p, &i, 8); break;  // two's complement bits
    case DType::kBool: *p = i != 0 ? 1 : 0; break;
    default: WriteDouble(p, t, static_cast<double>(i)); break;
  }
}

DenseElements NewDense(const Type& type) {
  DenseElements d;
  d.type = type;
  d.data = std::make_shared<const std::vector<uint8_t>>(
      static_cast<size_t>(NumElements(type.shape)) * DTypeSize(type.dtype));
  return d;
}
uint8_t* MutableBytes(DenseElements& d) { return const_cast<uint8_t*>(d.data->data()); }

bool IsSupportedDType(DType t) { return DTypeSize(t) != 0; }

// Maps each output multi-index to the flat index of a broadcast operand.
struct Broadcaster {
  std::vector<int64_t> in_strides;  // per output dim; 0 where broadcast
  Broadcaster(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& out_shape) {
    in_strides.assign(out_shape.size(), 0);
    std::vector<int64_t> s = Strides(in_shape);
    size_t off = out_shape.size() - in_shape.size();
    for (size_t i = 0; i < in_shape.size(); ++i)
      in_strides[off + i] = in_shape[i] == 1 ? 0 : s[i];
  }
  int64_t Map(const std::vector<int64_t>& idx) const {
    int64_t f = 0;
    for (size_t i = 0; i < idx.size(); ++i) f += idx[i] * in_strides[i];
    return f;
  }
};

bool ValidBroadcast(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return false;
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[off + i]) return false;
  return true;
}

int64_t IntAttr(const std::map<std::string, Attribute>& a, const char* n, int64_t def) {
  auto it = a.find(n);
  if (it == a.end()) return def;
  if (auto* v = std::get_if<int64_t>(&it->second.value)) return *v;
  if (auto* b = std::get_if<bool>(&it->second.value)) return *b;
  return def;
}
double FloatAttr(const std::map<std::string, Attribute>& a, const char* n, double def) {
  auto it = a.find(n);
  if (it == a.end()) return def;
  if (auto* v = std::get_if<double>(&it->second.value)) return *v;
  if (auto* i = std::get_if<int64_t>(&it->second.value)) return static_cast<double>(*i);
  return def;
}
bool BoolAttr(const std::map<std::string, Attribute>& a, const char* n, bool def) {
  auto it = a.find(n);
  if (it == a.end()) return def;
  if (auto* b = std::get_if<bool>(&it->second.value)) return *b;
  if (auto* i = std::get_if<int64_t>(&it->second.value)) return *i != 0;
  return def;
}
std::string StrAttr(const std::map<std::string, Attribute>& a, const char* n) {
  auto it = a.find(n);
  if (it == a.end()) return "";
  if (auto* s = std::get_if<std::string>(&it->second.value)) return *s;
  return "";
}
bool IntsAttr(const std::map<std::string, Attribute>& a, const char* n, std::vector<int64_t>* out) {
  auto it = a.find(n);
  if (it == a.end()) return false;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second.value)) { *out = *v; return true; }
  return false;
}

// ---------------------------------------------------------------------------
// Elementwise
// ---------------------------------------------------------------------------
bool EvalUnary(const std::string& op, const DenseElements& x, const Type& rt,
               const std::map<std::string, Attribute>& attrs, DenseElements* out) {
  if (x.type.shape != rt.shape) return false;
  int64_t n = NumElements(rt.shape);
  DenseElements r = NewDense(rt);
  uint8_t* o = MutableBytes(r);
  size_t es = DTypeSize(rt.dtype);
  bool fl = IsFloatDType(x.type.dtype);
  if (op == "cast") {
    for (int64_t i = 0; i < n; ++i) {
      if (fl) WriteDouble(o + i * es, rt.dtype, ReadElementAsDouble(x, i));
      else WriteInt(o + i * es, rt.dtype, ReadElementAsInt(x, i));
    }
    *out = std::move(r);
    return true;
  }
  if (rt.dtype != x.type.dtype) return false;
  if (!fl) {
    std::function<int64_t(int64_t)> f;
    if (op == "neg") f = [](int64_t v) { return -v; };
    else if (op == "abs") f = [](int64_t v) { return v < 0 ? -v : v; };
    else if (op == "relu") f = [](int64_t v) { return v < 0 ? 0 : v; };
    else if (op == "floor" || op == "ceil" || op == "round") f = [](int64_t v) { return v; };
    else if (op == "not") f = [](int64_t v) { return v ? 0 : 1; };
    else if (op == "sign") f = [](int64_t v) { return static_cast<int64_t>((v > 0) - (v < 0)); };
    else if (op == "clamp") {
      double lo = FloatAttr(attrs, "min", -INFINITY), hi = FloatAttr(attrs, "max", INFINITY);
      f = [lo, hi](int64_t v) {
        double d = static_cast<double>(v);
        if (d < lo) return static_cast<int64_t>(std::ceil(lo));
        if (d > hi) return static_cast<int64_t>(std::floor(hi));
        return v;
      };
    } else return false;
    for (int64_t i = 0; i < n; ++i) WriteInt(o + i * es, rt.dtype, f(ReadElementAsInt(x, i)));
    *out = std::move(r);
    return true;
  }
  std::function<double(double)> f;
  if (op == "neg") f = [](double v) { return -v; };
  else if (op == "abs") f = [](double v) { return std::fabs(v); };
  else if (op == "relu") f = [](double v) { return v < 0 ? 0.0 : v; };
  else if (op == "sigmoid") f = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  else if (op == "tanh") f = [](double v) { return std::tanh(v); };
  else if (op == "exp") f = [](double v) { return std::exp(v); };
  else if (op == "log") f = [](double v) { return std::log(v); };
  else if (op == "sqrt") f = [](double v) { return std::sqrt(v); };
  else if (op == "reciprocal") f = [](double v) { return 1.0 / v; };
  else if (op == "floor") f = [](double v) { return std::floor(v); };
  else if (op == "ceil") f = [](double v) { return std::ceil(v); };
  else if (op == "round") f = [](double v) { return std::nearbyint(v); };  // half to even
  else if (op == "erf") f = [](double v) { return std::erf(v); };
  else if (op == "sin") f = [](double v) { return std::sin(v); };
  else if (op == "cos") f = [](double v) { return std::cos(v); };
  else if (op == "tan") f = [](double v) { return std::tan(v); };
  else if (op == "asin") f = [](double v) { return std::asin(v); };
  else if (op == "acos") f = [](double v) { return std::acos(v); };
  else if (op == "atan") f = [](double v) { return std::atan(v); };
  else if (op == "sinh") f = [](double v) { return std::sinh(v); };
  else if (op == "cosh") f = [](double v) { return std::cosh(v); };
  else if (op == "asinh") f = [](double v) { return std::asinh(v); };
  else if (op == "acosh") f = [](double v) { return std::acosh(v); };
  else if (op == "atanh") f = [](double v) { return std::atanh(v); };
  else if (op == "sign") f = [](double v) { return std::isnan(v) ? v : double((v > 0) - (v < 0)); };
  else if (op == "softplus") f = [](double v) { return std::log1p(std::exp(v)); };
  else if (op == "hard_swish") f = [](double v) { return v * std::max(0.0, std::min(1.0, v / 6 + 0.5)); };
  else if (op == "leaky_relu") {
    double a = FloatAttr(attrs, "alpha", 0.01);
    f = [a](double v) { return v < 0 ? a * v : v; };
  } else if (op == "elu") {
    double a = FloatAttr(attrs, "alpha", 1.0);
    f = [a](double v) { return v < 0 ? a * (std::exp(v) - 1) : v; };
  } else if (op == "hard_sigmoid") {
    double a = FloatAttr(attrs, "alpha", 0.2), b = FloatAttr(attrs, "beta", 0.5);
    f = [a, b](double v) { return std::max(0.0, std::min(1.0, a * v + b)); };
  } else if (op == "clamp") {
    double lo = FloatAttr(attrs, "min", -INFINITY), hi = FloatAttr(attrs, "max", INFINITY);
    f = [lo, hi](double v) { return std::isnan(v) ? v : std::min(std::max(v, lo), hi); };
  } else {
    return false;
  }
  for (int64_t i = 0; i < n; ++i) WriteDouble(o + i * es, rt.dtype, f(ReadElementAsDouble(x, i)));
  *out = std::move(r);
  return true;
}

bool IsCompare(const std::string& op) {
  return op == "equal" || op == "greater" || op == "less" || op == "greater_equal" ||
         op == "less_equal";
}

bool EvalBinary(const std::string& op, const DenseElements& a, const DenseElements& b,
                const Type& rt, const std::map<std::string, Attribute>& attrs,
                DenseElements* out) {
  if (!ValidBroadcast(a.type.shape, rt.shape) || !ValidBroadcast(b.type.shape, rt.shape))
    return false;
  const bool cmp = IsCompare(op);
  const bool logic = op == "and" || op == "or" || op == "xor";
  if (cmp || logic) {
    if (rt.dtype != DType::kBool) return false;
  } else if (rt.dtype != a.type.dtype) {
    return false;
  }
  const bool fl = IsFloatDType(a.type.dtype) || IsFloatDType(b.type.dtype);
  Broadcaster ba(a.type.shape, rt.shape), bb(b.type.shape, rt.shape);
  DenseElements r = NewDense(rt);
  uint8_t* o = MutableBytes(r);
  size_t es = DTypeSize(rt.dtype);
  int64_t n = NumElements(rt.shape);
  if (n == 0) { *out = std::move(r); return true; }
  std::vector<int64_t> idx(rt.shape.size(), 0);
  const bool fmod_mode = IntAttr(attrs, "fmod", 0) != 0;
  int64_t k = 0;
  do {
    int64_t ia = ba.Map(idx), ib = bb.Map(idx);
    uint8_t* p = o + k * es;
    if (fl) {
      double x = ReadElementAsDouble(a, ia), y = ReadElementAsDouble(b, ib);
      if (cmp) {
        bool v = op == "equal" ? x == y : op == "greater" ? x > y : op == "less" ? x < y
               : op == "greater_equal" ? x >= y : x <= y;
        *p = v;
      } else {
        double v;
        if (op == "add") v = x + y;
        else if (op == "sub") v = x - y;
        else if (op == "mul") v = x * y;
        else if (op == "div") v = x / y;
        else if (op == "pow") v = std::pow(x, y);
        else if (op == "max") v = (std::isnan(x) || std::isnan(y)) ? NAN : std::max(x, y);
        else if (op == "min") v = (std::isnan(x) || std::isnan(y)) ? NAN : std::min(x, y);
        else if (op == "mod") {
          v = std::fmod(x, y);
          if (!fmod_mode && v != 0 && ((v < 0) != (y < 0))) v += y;
        } else return false;
        WriteDouble(p, rt.dtype, v);
      }
    } else {
      int64_t x = ReadElementAsInt(a, ia), y = ReadElementAsInt(b, ib);
      if (cmp) {
        bool v = op == "equal" ? x == y : op == "greater" ? x > y : op == "less" ? x < y
               : op == "greater_equal" ? x >= y : x <= y;
        *p = v;
      } else if (logic) {
        bool v = op == "and" ? (x && y) : op == "or" ? (x || y) : ((x != 0) != (y != 0));
        *p = v;
      } else {
        int64_t v;
        if (op == "add") v = static_cast<int64_t>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
        else if (op == "sub") v = static_cast<int64_t>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
        else if (op == "mul") v = static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        else if (op == "div") {
          if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) return false;
          v = x / y;
        } else if (op == "mod") {
          if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) return false;
          v = x % y;
          if (!fmod_mode && v != 0 && ((v < 0) != (y < 0))) v += y;
        } else if (op == "pow") {
          if (y < 0) return false;
          v = 1;
          for (int64_t e = 0; e < y && e < 64; ++e) v *= x;
        } else if (op == "max") v = std::max(x, y);
        else if (op == "min") v = std::min(x, y);
        else if (op == "shift_left" || op == "shift_right") {
          // Unsigned bits of x's width; a shift of the width or more gives 0.
          const uint64_t bits = 8 * es;
          uint64_t ux = static_cast<uint64_t>(x) & (bits == 64 ? ~0ull : (1ull << bits) - 1);
          uint64_t uy = static_cast<uint64_t>(y);
          v = uy >= bits ? 0 : static_cast<int64_t>(op == "shift_left" ? ux << uy : ux >> uy);
        } else return false;
        WriteInt(p, rt.dtype, v);
      }
    }
    ++k;
  } while (Next(idx, rt.shape));
  *out = std::move(r);
  return true;
}

bool EvalSelect(const DenseElements& c, const DenseElements& a, const DenseElements& b,
                const Type& rt, DenseElements* out) {
  if (a.type.dtype != rt.dtype || b.type.dtype != rt.dtype) return false;
  if (!ValidBroadcast(c.type.shape, rt.shape) || !ValidBroadcast(a.type.shape, rt.shape) ||
      !ValidBroadcast(b.type.shape, rt.shape))
    return false;
  Broadcaster bc(c.type.shape, rt.shape), ba(a.type.shape, rt.shape), bb(b.type.shape, rt.shape);
  DenseElements r = NewDense(rt);
  uint8_t* o = MutableBytes(r);
  size_t es = DTypeSize(rt.dtype);
  int64_t n = NumElements(rt.shape);
  if (n == 0) { *out = std::move(r); return true; }
  std::vector<int64_t> idx(rt.shape.size(), 0);
  int64_t k = 0;
  do {
    bool cond = ReadElementAsInt(c, bc.Map(idx)) != 0;
    const DenseElements& src = cond ? a : b;
    int64_t si = cond ? ba.Map(idx) : bb.Map(idx);
    std::memcpy(o + k * es, src.bytes() + si * es, es);
    ++k;
  } while (Next(idx, rt.shape));
  *out = std::move(r);
  return true;
}

// ---------------------------------------------------------------------------
// Data movement (dtype-agnostic byte copies)
// ---------------------------------------------------------------------------
// Calls src_index(out_multi_index) for each output element; -1 = fill.
template <typename F>
bool Gather(const DenseElements& in, const Type& rt, F&& src_index, DenseElements* out,
            const uint8_t* fill = nullptr) {
  if (in.type.dtype != rt.dtype) return false;
  DenseElements r = NewDense(rt);
  uint8_t* o = MutableBytes(r);
  size_t es = DTypeSize(rt.dtype);
  int64_t n = NumElements(rt.shape);
  if (n > 0) {
    std::vector<int64_t> idx(rt.shape.size(), 0);
    int64_t k = 0;
    do {
      int64_t s = src_index(idx);
      if (s == -2) return false;
      if (s < 0) {
        if (!fill) return false;
        std::memcpy(o + k * es, fill, es);
      } else {
        std::memcpy(o + k * es, in.bytes() + s * es, es);
      }
      ++k;
    } while (Next(idx, rt.shape));
  }
  *out = std::move(r);
  return true;
}

bool EvalTranspose(const DenseElements& x, const Type& rt, const std::vector<int64_t>& perm,
                   DenseElements* out) {
  size_t r = x.type.shape.size();
  if (perm.size() != r || rt.shape.size() != r) return false;
  std::vector<int64_t> s = Strides(x.type.shape);
  return Gather(x, rt, [&](const std::vector<int64_t>& idx) {
    int64_t f = 0;
    for (size_t i = 0; i < r; ++i) f += idx[i] * s[perm[i]];
    return f;
  }, out);
}

bool EvalSlice(const DenseElements& x, const Type& rt, const std::vector<int64_t>& starts,
               const std::vector<int64_t>& strides, DenseElements* out) {
  size_t r = x.type.shape.size();
  if (starts.size() != r || strides.size() != r || rt.shape.size() != r) return false;
  std::vector<int64_t> s = Strides(x.type.shape);
  return Gather(x, rt, [&](const std::vector<int64_t>& idx) -> int64_t {
    int64_t f = 0;
    for (size_t i = 0; i < r; ++i) {
      int64_t j = starts[i] + idx[i] * strides[i];
      if (j < 0 || j >= x.type.shape[i]) return -2;
      f += j * s[i];
    }
    return f;
  }, out);
}

bool EvalExpand(const DenseElements& x, const Type& rt, DenseElements* out) {
  if (!ValidBroadcast(x.type.shape, rt.shape)) return false;
  Broadcaster b(x.type.shape, rt.shape);
  return Gather(x, rt, [&](const std::vector<int64_t>& idx) { return b.Map(idx); }, out);
}

bool EvalConcat(const std::vector<const DenseElements*>& ins, const Type& rt, int64_t axis,
                DenseElements* out) {
  size_t r = rt.shape.size();
  if (axis < 0 || axis >= static_cast<int64_t>(r)) return false;
  for (auto* in : ins)
    if (in->type.dtype != rt.dtype || in->type.shape.size() != r) return false;
  size_t es = DTypeSize(rt.dtype);
  int64_t outer = NumElements(std::vector<int64_t>(rt.shape.begin(), rt.shape.begin() + axis));
  DenseElements res = NewDense(rt);
  uint8_t* o = MutableBytes(res);
  int64_t total = 0;
  for (auto* in : ins) total += in->type.shape[axis];
  if (total != rt.shape[axis]) return false;
  int64_t inner = NumElements(std::vector<int64_t>(rt.shape.begin() + axis + 1, rt.shape.end()));
  for (int64_t i = 0; i < outer; ++i) {
    for (auto* in : ins) {
      int64_t chunk = in->type.shape[axis] * inner * static_cast<int64_t>(es);
      std::memcpy(o, in->bytes() + i * chunk, chunk);
      o += chunk;
    }
  }
  *out = std::move(res);
  return true;
}

bool EvalGather(const DenseElements& x, const DenseElements& ind, const Type& rt, int64_t axis,
                DenseElements* out) {
  int64_t r = static_cast<int64_t>(x.type.shape.size());
  if (axis < 0 || axis >= r || IsFloatDType(ind.type.dtype)) return false;
  int64_t q = static_cast<int64_t>(ind.type.shape.size());
  if (static_cast<int64_t>(rt.shape.size()) != r - 1 + q) return false;
  std::vector<int64_t> s = Strides(x.type.shape), is = Strides(ind.type.shape);
  int64_t dim = x.type.shape[axis];
  return Gather(x, rt, [&](const std::vector<int64_t>& idx) -> int64_t {
    int64_t f = 0;
    for (int64_t i = 0; i < axis; ++i) f += idx[i] * s[i];
    int64_t fi = 0;
    for (int64_t i = 0; i < q; ++i) fi += idx[axis + i] * is[i];
    int64_t j = ReadElementAsInt(ind, fi);
    if (j < 0) j += dim;
    if (j < 0 || j >= dim) return -2;
    f += j * s[axis];
    for (int64_t i = axis + 1; i < r; ++i) f += idx[i - 1 + q] * s[i];
    return f;
  }, out);
}

bool EvalPad(const DenseElements& x, const Type& rt, const std::vector<int64_t>& pads,
             const std::string& mode, double value, DenseElements* out) {
  size_t r = x.type.shape.size();
  if (pads.size() != 2 * r || rt.shape.size() != r) return false;
  std::vector<int64_t> s = Strides(x.type.shape);
  std::vector<uint8_t> fill(DTypeSize(rt.dtype));
  WriteDouble(fill.data(), rt.dtype, value);
  const auto& sh = x.type.shape;
  return Gather(x, rt, [&](const std::vector<int64_t>& idx) -> int64_t {
    int64_t f = 0;
    for (size_t i = 0; i < r; ++i) {
      int64_t j = idx[i] - pads[i];
      if (j < 0 || j >= sh[i]) {
        if (mode == "constant" || mode.empty()) return -1;
        if (sh[i] == 0) return -2;
        if (mode == "edge") {
          j = std::min<int64_t>(std::max<int64_t>(j, 0), sh[i] - 1);
        } else if (mode == "reflect") {
          if (sh[i] == 1) { j = 0; }
          else {
            int64_t period = 2 * (sh[i] - 1);
            j = ((j % period) + period) % period;
            if (j >= sh[i]) j = period - j;
          }
        } else {
          return -2;
        }
      }
      f += j * s[i];
    }
    return f;
  }, out, fill.data());
}

bool EvalReduce(const DenseElements& x, const Type& rt, const std::string& kind,
                const std::vector<int64_t>& axes, bool keepdims, DenseElements* out) {
  if (rt.dtype != x.type.dtype) return false;
  size_t r = x.type.shape.size();
  std::vector<bool> red(r, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= static_cast<int64_t>(r)) return false;
    red[a] = true;
  }
  std::vector<int64_t> kshape;  // keepdims shape
  for (size_t i = 0; i < r; ++i) kshape.push_back(red[i] ? 1 : x.type.shape[i]);
  if (NumElements(kshape) != NumElements(rt.shape)) return false;
  int64_t n_out = NumElements(kshape);
  std::vector<double> acc(n_out);
  double init = 0;
  if (kind == "sum" || kind == "mean" || kind == "sum_square" || kind == "l2") init = 0;
  else if (kind == "prod") init = 1;
  else if (kind == "max") init = -INFINITY;
  else if (kind == "min") init = INFINITY;
  else if (kind == "log_sum_exp") init = 0;
  else return false;
  std::fill(acc.begin(), acc.end(), init);
  std::vector<int64_t> ks = Strides(kshape);
  int64_t n = NumElements(x.type.shape);
  int64_t count = n_out ? n / n_out : 0;
  if (n > 0) {
    std::vector<int64_t> idx(r, 0);
    int64_t k = 0;
    do {
      int64_t o = 0;
      for (size_t i = 0; i < r; ++i) o += (red[i] ? 0 : idx[i]) * ks[i];
      double v = ReadElementAsDouble(x, k);
      double& a = acc[o];
      if (kind == "sum" || kind == "mean") a += v;
      else if (kind == "sum_square" || kind == "l2") a += v * v;
      else if (kind == "log_sum_exp") a += std::exp(v);
      else if (kind == "prod") a *= v;
      else if (kind == "max") a = std::max(a, v);
      else if (kind == "min") a = std::min(a, v);
      ++k;
    } while (Next(idx, x.type.shape));
  }
  if (kind == "mean")
    for (double& a : acc) a = count ? a / count : NAN;
  if (kind == "l2")
    for (double& a : acc) a = std::sqrt(a);
  if (kind == "log_sum_exp")
    for (double& a : acc) a = std::log(a);
  (void)keepdims;
  *out = MakeDenseFromDoubles(rt, acc);
  return true;
}

// ---------------------------------------------------------------------------
// Compute ops (float only). Used rarely for folding (constant operands), and
// as a host reference for the importer's tests.
// ---------------------------------------------------------------------------
std::vector<double> ToDoubles(const DenseElements& d) {
  std::vector<double> v(NumElements(d.type.shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = ReadElementAsDouble(d, static_cast<int64_t>(i));
  return v;
}

bool EvalMatMul(const DenseElements& a, const DenseElements& b, const Type& rt, DenseElements* out) {
  const Shape& as = a.type.shape;
  const Shape& bs = b.type.shape;
  if (as.size() < 2 || bs.size() < 2 || rt.shape.size() < 2) return false;
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k || rt.shape[rt.shape.size() - 2] != m || rt.shape.back() != n) return false;
  Shape batch(rt.shape.begin(), rt.shape.end() - 2);
  Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  if (!ValidBroadcast(ab, batch) || !ValidBroadcast(bb, batch)) return false;
  Broadcaster ba(ab, batch), bbr(bb, batch);
  std::vector<double> av = ToDoubles(a), bv = ToDoubles(b), r(NumElements(rt.shape));
  int64_t nb = NumElements(batch);
  std::vector<int64_t> idx(batch.size(), 0);
  for (int64_t bi = 0; bi < nb; ++bi) {
    int64_t oa = ba.Map(idx) * m * k, ob = bbr.Map(idx) * k * n, orr = bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += av[oa + i * k + t] * bv[ob + t * n + j];
        r[orr + i * n + j] = acc;
      }
    Next(idx, batch);
  }
  *out = MakeDenseFromDoubles(rt, r);
  return true;
}

// Window of output position o along one spatial axis: input positions
// o*s - pad + t*d for t in [0, k).
bool EvalConv2D(const std::vector<const DenseElements*>& ops, const Type& rt,
                const std::map<std::string, Attribute>& attrs, DenseElements* out) {
  if (ops.size() < 2 || ops.size() > 3) return false;
  const DenseElements& x = *ops[0];
  const DenseElements& w = *ops[1];
  Shape strides, pads, dil;
  if (!IntsAttr(attrs, "strides", &strides) || !IntsAttr(attrs, "pads", &pads) ||
      !IntsAttr(attrs, "dilations", &dil) || strides.size() != 2 || pads.size() != 4 || dil.size() != 2)
    return false;
  int64_t group = IntAttr(attrs, "group", 1);
  const Shape& xs = x.type.shape;
  const Shape& ws = w.type.shape;
  if (xs.size() != 4 || ws.size() != 4 || rt.shape.size() != 4 || group <= 0) return false;
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], O = ws[0], CG = ws[1], KH = ws[2], KW = ws[3];
  int64_t OH = rt.shape[2], OW = rt.shape[3];
  if (CG * group != C || O % group != 0 || rt.shape[0] != N || rt.shape[1] != O) return false;
  std::vector<double> xv = ToDoubles(x), wv = ToDoubles(w), r(NumElements(rt.shape));
  std::vector<double> bias(O, 0.0);
  if (ops.size() == 3) {
    if (NumElements(ops[2]->type.shape) != O) return false;
    bias = ToDoubles(*ops[2]);
  }
  int64_t opg = O / group;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o) {
      int64_t g = o / opg;
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias[o];
          for (int64_t c = 0; c < CG; ++c)
            for (int64_t kh = 0; kh < KH; ++kh) {
              int64_t ih = oh * strides[0] - pads[0] + kh * dil[0];
              if (ih < 0 || ih >= H) continue;
              for (int64_t kw = 0; kw < KW; ++kw) {
                int64_t iw = ow * strides[1] - pads[1] + kw * dil[1];
                if (iw < 0 || iw >= W) continue;
                acc += xv[((n * C + g * CG + c) * H + ih) * W + iw] * wv[((o * CG + c) * KH + kh) * KW + kw];
              }
            }
          r[((n * O + o) * OH + oh) * OW + ow] = acc;
        }
    }
  *out = MakeDenseFromDoubles(rt, r);
  return true;
}

// Max pool ignores padding. Avg pool divides by the number of window
// positions inside the input (count_include_pad = false) or inside the padded
// input [-pad_begin, size + pad_end) (true).
bool EvalPool2D(const DenseElements& x, const Type& rt, const std::map<std::string, Attribute>& attrs,
                DenseElements* out) {
  Shape kernel, strides, pads, dil;
  if (!IntsAttr(attrs, "kernel", &kernel) || !IntsAttr(attrs, "strides", &strides) ||
      !IntsAttr(attrs, "pads", &pads) || kernel.size() != 2 || strides.size() != 2 || pads.size() != 4)
    return false;
  if (!IntsAttr(attrs, "dilations", &dil)) dil = {1, 1};
  if (dil.size() != 2) return false;
  std::string kind = StrAttr(attrs, "kind");
  bool cip = BoolAttr(attrs, "count_include_pad", false);
  const Shape& xs = x.type.shape;
  if (xs.size() != 4 || rt.shape.size() != 4 || rt.shape[0] != xs[0] || rt.shape[1] != xs[1]) return false;
  if (kind != "max" && kind != "avg") return false;
  int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3], OH = rt.shape[2], OW = rt.shape[3];
  std::vector<double> xv = ToDoubles(x), r(NumElements(rt.shape));
  for (int64_t p = 0; p < NC; ++p)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = kind == "max" ? -INFINITY : 0.0;
        int64_t count = 0, padded_count = 0;
        for (int64_t kh = 0; kh < kernel[0]; ++kh) {
          int64_t ih = oh * strides[0] - pads[0] + kh * dil[0];
          bool in_h = ih >= 0 && ih < H;
          bool in_ph = ih >= -pads[0] && ih < H + pads[2];
          for (int64_t kw = 0; kw < kernel[1]; ++kw) {
            int64_t iw = ow * strides[1] - pads[1] + kw * dil[1];
            bool in_w = iw >= 0 && iw < W;
            bool in_pw = iw >= -pads[1] && iw < W + pads[3];
            if (in_ph && in_pw) ++padded_count;
            if (!in_h || !in_w) continue;
            double v = xv[(p * H + ih) * W + iw];
            ++count;
            if (kind == "max") acc = std::max(acc, v);
            else acc += v;
          }
        }
        if (kind == "avg") acc /= static_cast<double>(cip ? padded_count : count);
        r[(p * OH + oh) * OW + ow] = acc;
      }
  *out = MakeDenseFromDoubles(rt, r);
  return true;
}

bool EvalSoftmax(const DenseElements& x, const Type& rt, int64_t axis, bool log, DenseElements* out) {
  const Shape& xs = x.type.shape;
  if (xs != rt.shape || axis < 0 || axis >= static_cast<int64_t>(xs.size())) return false;
  int64_t outer = 1, inner = 1, d = xs[axis];
  for (int64_t i = 0; i < axis; ++i) outer *= xs[i];
  for (size_t i = axis + 1; i < xs.size(); ++i) inner *= xs[i];
  std::vector<double> v = ToDoubles(x), r(v.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < d; ++j) mx = std::max(mx, v[(o * d + j) * inner + in]);
      for (int64_t j = 0; j < d; ++j) sum += std::exp(v[(o * d + j) * inner + in] - mx);
      for (int64_t j = 0; j < d; ++j) {
        double e = v[(o * d + j) * inner + in] - mx;
        r[(o * d + j) * inner + in] = log ? e - std::log(sum) : std::exp(e) / sum;
      }
    }
  *out = MakeDenseFromDoubles(rt, r);
  return true;
}

}  // namespace

bool IsFloatDType(DType t) { return IsFloatType(t); }

double ReadElementAsDouble(const DenseElements& d, int64_t i) {
  const uint8_t* p = d.bytes() + i * static_cast<int64_t>(DTypeSize(d.type.dtype));
  switch (d.type.dtype) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kF64: { double f; std::memcpy(&f, p, 8); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return ir::BF16ToFloat(h); }
    case DType::kU64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    default: return static_cast<double>(ReadElementAsInt(d, i));
  }
}

int64_t ReadElementAsInt(const DenseElements& d, int64_t i) {
  const uint8_t* p = d.bytes() + i * static_cast<int64_t>(DTypeSize(d.type.dtype));
  switch (d.type.dtype) {
    case DType::kI64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kI16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::kI8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case DType::kU8: return *p;
    case DType::kU16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::kU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::kU64: { int64_t v; std::memcpy(&v, p, 8); return v; }  // wraps above 2^63
    case DType::kBool: return *p ? 1 : 0;
    case DType::kF32: case DType::kF64: case DType::kF16: case DType::kBF16: {
      double v = ReadElementAsDouble(d, i);
      if (!std::isfinite(v)) return 0;
      if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
      if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(v);
    }
    default: return 0;
  }
}

DenseElements MakeDenseFromDoubles(const Type& type, const std::vector<double>& values) {
  DenseElements d = NewDense(type);
  uint8_t* o = MutableBytes(d);
  size_t es = DTypeSize(type.dtype);
  for (size_t i = 0; i < values.size(); ++i) WriteDouble(o + i * es, type.dtype, values[i]);
  return d;
}

DenseElements MakeDenseFromInts(const Type& type, const std::vector<int64_t>& values) {
  DenseElements d = NewDense(type);
  uint8_t* o = MutableBytes(d);
  size_t es = DTypeSize(type.dtype);
  for (size_t i = 0; i < values.size(); ++i) WriteInt(o + i * es, type.dtype, values[i]);
  return d;
}

bool EvaluateOp(const std::string& name, const std::vector<const DenseElements*>& operands,
                const Type& rt, const std::map<std::string, Attribute>& attrs,
                DenseElements* out) {
  if (name.compare(0, 7, "tensor.") != 0 || !rt.is_tensor()) return false;
  if (!IsSupportedDType(rt.dtype)) return false;
  for (auto* o : operands)
    if (!o || !o->data || !IsSupportedDType(o->type.dtype) ||
        o->data->size() != static_cast<size_t>(NumElements(o->type.shape)) * DTypeSize(o->type.dtype))
      return false;
  std::string op = name.substr(7);
  size_t n = operands.size();
  if (op == "reshape") {
    if (n != 1 || NumElements(operands[0]->type.shape) != NumElements(rt.shape) ||
        operands[0]->type.dtype != rt.dtype)
      return false;
    DenseElements d = *operands[0];
    d.type = rt;
    *out = std::move(d);
    return true;
  }
  if (op == "select") return n == 3 && EvalSelect(*operands[0], *operands[1], *operands[2], rt, out);
  if (op == "resize") {
    std::vector<int64_t> taps;
    return (n == 2 || n == 3) && IntsAttr(attrs, "taps", &taps) &&
           EvaluateResize(*operands[0], *operands[1], n == 3 ? operands[2] : nullptr, rt, taps,
                          FloatAttr(attrs, "extrapolation_value", 0.0), out);
  }
  if (op == "transpose") {
    std::vector<int64_t> perm;
    return n == 1 && IntsAttr(attrs, "perm", &perm) && EvalTranspose(*operands[0], rt, perm, out);
  }
  if (op == "slice") {
    std::vector<int64_t> starts, strides;
    return n == 1 && IntsAttr(attrs, "starts", &starts) && IntsAttr(attrs, "strides", &strides) &&
           EvalSlice(*operands[0], rt, starts, strides, out);
  }
  if (op == "concat") return n >= 1 && EvalConcat(operands, rt, IntAttr(attrs, "axis", 0), out);
  if (op == "gather")
    return n == 2 && EvalGather(*operands[0], *operands[1], rt, IntAttr(attrs, "axis", 0), out);
  if (op == "expand") return n == 1 && EvalExpand(*operands[0], rt, out);
  if (op == "pad") {
    std::vector<int64_t> pads;
    return n == 1 && IntsAttr(attrs, "pads", &pads) &&
           EvalPad(*operands[0], rt, pads, StrAttr(attrs, "mode"), FloatAttr(attrs, "value", 0),
                   out);
  }
  if (op == "reduce") {
    std::vector<int64_t> axes;
    return n == 1 && IntsAttr(attrs, "axes", &axes) &&
           EvalReduce(*operands[0], rt, StrAttr(attrs, "kind"), axes,
                      BoolAttr(attrs, "keepdims", true), out);
  }
  if (op == "gather_elements" || op == "scatter_elements" || op == "arg_reduce")  // const_eval_index.cc
    return EvalIndexOp(op, operands, rt, attrs, out);
  if (op == "conv_transpose") {  // const_eval_conv_transpose.cc
    for (auto* o : operands)
      if (!IsFloatDType(o->type.dtype)) return false;
    return IsFloatDType(rt.dtype) && EvalConvTranspose(operands, rt, attrs, out);
  }
  // i32 matmul (the integer matmuls of onnx_quantize.cc): the double
  // accumulation is exact while |sum| < 2^53, which covers u8/i8 products.
  if (op == "matmul" && n == 2 && rt.dtype == DType::kI32 && operands[0]->type.dtype == DType::kI32 &&
      operands[1]->type.dtype == DType::kI32)
    return EvalMatMul(*operands[0], *operands[1], rt, out);
  if (op == "matmul" || op == "conv2d" || op == "pool2d" || op == "softmax") {
    for (auto* o : operands)
      if (!IsFloatDType(o->type.dtype)) return false;
    if (!IsFloatDType(rt.dtype)) return false;
    if (op == "matmul") return n == 2 && EvalMatMul(*operands[0], *operands[1], rt, out);
    if (op == "conv2d") return EvalConv2D(operands, rt, attrs, out);
    if (op == "pool2d") return n == 1 && EvalPool2D(*operands[0], rt, attrs, out);
    return n == 1 && EvalSoftmax(*operands[0], rt, IntAttr(attrs, "axis", -1),
                                 BoolAttr(attrs, "log", false), out);
  }
  if (n == 1) return EvalUnary(op, *operands[0], rt, attrs, out);
  if (n == 2) return EvalBinary(op, *operands[0], *operands[1], rt, attrs, out);
  return false;
}


// ---------------------------------------------------------------------------
// Host scalars, structured control flow, whole functions
// ---------------------------------------------------------------------------
bool EvaluateExtract(const DenseElements& d, int64_t* out) {
  if (!d.data || NumElements(d.type.shape) != 1) return false;
  *out = ReadElementAsInt(d, 0);
  return true;
}

namespace {

DenseElements HostScalar(const Type& t, int64_t v) {
  Type tt = Type::Tensor(t.kind == ir::TypeKind::kI1 ? DType::kBool : DType::kI64, {});
  return MakeDenseFromInts(tt, {v});
}

// The host type a value of type `t` is represented with.
Type HostType(const Type& t) {
  if (t.kind == ir::TypeKind::kI1) return Type::Tensor(DType::kBool, {});
  if (t.kind == ir::TypeKind::kIndex) return Type::Tensor(DType::kI64, {});
  return t;
}

// Evaluates ops on DenseElements. `env` holds the values computed so far;
// values defined by tensor.constant / arith.constant are read from the IR.
class Evaluator {
 public:
  Evaluator(int64_t max_trips, int64_t max_elements)
      : trips_left_(max_trips), elements_left_(max_elements) {}

  Status error() const { return error_; }
  void Bind(ir::Value* v, DenseElements d) { env_[v] = std::move(d); }

  const DenseElements* Get(ir::Value* v) {
    auto it = env_.find(v);
    if (it != env_.end()) return &it->second;
    ir::Operation* d = v->defining_op();
    if (d && d->is("tensor.constant")) return d->dense_attr("value");
    if (d && d->is("arith.constant")) {
      env_[v] = HostScalar(v->type(), d->int_attr("value", 0));
      return &env_[v];
    }
    return nullptr;
  }

  // Runs block 0 of `region` with `args`; `yielded` gets the terminator's
  // operands.
  bool RunRegion(ir::Region* region, const std::vector<DenseElements>& args,
                 std::vector<DenseElements>* yielded) {
    if (region->num_blocks() != 1) return Fail(region->parent_op(), "expects regions with one block");
    ir::Block* b = region->block(0);
    if (b->num_arguments() != args.size()) return Fail(region->parent_op(), "block argument count");
    for (unsigned i = 0; i < args.size(); ++i) env_[b->argument(i)] = args[i];
    for (auto& o : b->ops()) {
      ir::Operation* op = o.get();
      if (op == b->terminator() && (op->is("scf.yield") || op->is("scf.condition") ||
                                    op->is("func.return"))) {
        yielded->clear();
        for (ir::Value* v : op->operands()) {
          const DenseElements* d = Get(v);
          if (!d) return Fail(op, "operand is not available");
          yielded->push_back(*d);
        }
        return true;
      }
      if (!Run(op)) return false;
    }
    return Fail(region->parent_op(), "block without a terminator");
  }

  bool Run(ir::Operation* op) {
    const std::string& n = op->name();
    if (n == "tensor.constant" || n == "arith.constant") return true;  // read lazily
    std::vector<const DenseElements*> ins;
    for (ir::Value* v : op->operands()) {
      const DenseElements* d = Get(v);
      if (!d) return Fail(op, "operand is not a constant");
      ins.push_back(d);
    }
    if (n == "tensor.extract") {
      int64_t v;
      if (ins.size() != 1 || op->num_results() != 1 || !EvaluateExtract(*ins[0], &v))
        return Fail(op, "expects one single-element operand");
      env_[op->result()] = HostScalar(op->result()->type(), v);
      return true;
    }
    if (n == "scf.if") {
      if (ins.size() != 1 || op->num_regions() != 2) return Fail(op, "malformed");
      ir::Region* r = op->region(ReadElementAsInt(*ins[0], 0) != 0 ? 0 : 1);
      std::vector<DenseElements> y;
      if (r->empty()) return op->num_results() == 0 || Fail(op, "empty region with results");
      if (!RunRegion(r, {}, &y)) return false;
      return BindResults(op, y);
    }
    if (n == "scf.index_switch") {
      if (ins.size() != 1) return Fail(op, "malformed");
      int64_t idx = ReadElementAsInt(*ins[0], 0);
      std::vector<int64_t> cases = op->ints_attr("cases");
      if (op->num_regions() != cases.size() + 1) return Fail(op, "region count");
      unsigned which = static_cast<unsigned>(cases.size());
      for (unsigned i = 0; i < cases.size(); ++i)
        if (cases[i] == idx) which = i;
      std::vector<DenseElements> y;
      if (!RunRegion(op->region(which), {}, &y)) return false;
      return BindResults(op, y);
    }
    if (n == "scf.for") {
      if (ins.size() < 3 || op->num_regions() != 1) return Fail(op, "malformed");
      int64_t lb = ReadElementAsInt(*ins[0], 0), ub = ReadElementAsInt(*ins[1], 0),
              step = ReadElementAsInt(*ins[2], 0);
      if (step <= 0) return Fail(op, "step must be positive");
      std::vector<DenseElements> iter;
      for (size_t i = 3; i < ins.size(); ++i) iter.push_back(*ins[i]);
      for (int64_t iv = lb; iv < ub; iv += step) {
        if (--trips_left_ < 0) return Exhausted(op);
        std::vector<DenseElements> args = {HostScalar(Type::Index(), iv)};
        args.insert(args.end(), iter.begin(), iter.end());
        if (!RunRegion(op->region(0), args, &iter)) return false;
      }
      return BindResults(op, iter);
    }
    if (n == "scf.while") {
      if (op->num_regions() != 2) return Fail(op, "malformed");
      std::vector<DenseElements> args;
      for (auto* d : ins) args.push_back(*d);
      while (true) {
        if (--trips_left_ < 0) return Exhausted(op);
        std::vector<DenseElements> c;
        if (!RunRegion(op->region(0), args, &c)) return false;
        if (c.empty()) return Fail(op, "scf.condition without a condition");
        bool go = ReadElementAsInt(c[0], 0) != 0;
        std::vector<DenseElements> fwd(c.begin() + 1, c.end());
        if (!go) return BindResults(op, fwd);
        if (!RunRegion(op->region(1), fwd, &args)) return false;
      }
    }
    if (op->num_regions() != 0 || op->num_results() != 1)
      return Unsupported(op);
    const Type& rt = op->result()->type();
    if (rt.is_tensor()) elements_left_ -= std::max<int64_t>(1, NumElements(rt.shape));
    if (elements_left_ < 0) return Exhausted(op);
    DenseElements out;
    if (!EvaluateOp(n, ins, rt, op->attrs(), &out)) return Unsupported(op);
    env_[op->result()] = std::move(out);
    return true;
  }

 private:
  bool BindResults(ir::Operation* op, const std::vector<DenseElements>& vals) {
    if (vals.size() != op->num_results()) return Fail(op, "yields the wrong number of values");
    for (unsigned i = 0; i < vals.size(); ++i) {
      if (vals[i].type != HostType(op->result(i)->type()))
        return Fail(op, "yields " + vals[i].type.ToString() + " for result type " +
                            op->result(i)->type().ToString());
      env_[op->result(i)] = vals[i];
    }
    return true;
  }
  std::string Where(const ir::Operation* op) const {
    std::string s = "'" + op->name() + "'";
    if (!op->loc().empty()) s += " at '" + op->loc() + "'";
    return s;
  }
  bool Fail(const ir::Operation* op, const std::string& msg) {
    if (error_.ok())
      error_ = Status(StatusCode::kInvalidArgument, (op ? Where(op) + ": " : std::string()) + msg);
    return false;
  }
  bool Unsupported(const ir::Operation* op) {
    if (error_.ok()) error_ = Status(StatusCode::kUnimplemented, "cannot evaluate " + Where(op));
    return false;
  }
  bool Exhausted(const ir::Operation* op) {
    if (error_.ok())
      error_ = Status(StatusCode::kResourceExhausted,
                      Where(op) + ": too many loop trips or elements evaluated");
    return false;
  }

  std::map<const ir::Value*, DenseElements> env_;
  int64_t trips_left_;
  int64_t elements_left_;
  Status error_;
};

}  // namespace

bool EvaluateRegionOp(ir::Operation* op, std::vector<DenseElements>* results, int64_t max_trips) {
  // Folding must stay cheap: at most 2^26 result elements computed in all.
  Evaluator ev(max_trips, int64_t{1} << 26);
  if (!ev.Run(op)) return false;
  results->clear();
  for (ir::Value* r : op->results()) {
    const DenseElements* d = ev.Get(r);
    if (!d || !r->type().is_tensor()) return false;
    results->push_back(*d);
  }
  return true;
}

StatusOr<std::vector<DenseElements>> InterpretFunction(ir::Operation* func,
                                                       const std::vector<DenseElements>& args,
                                                       int64_t max_trips) {
  if (!func || func->num_regions() != 1 || func->region(0)->num_blocks() != 1)
    return InvalidArgumentError("InterpretFunction expects a func.func with one block");
  ir::Block* entry = func->region(0)->block(0);
  if (entry->num_arguments() != args.size())
    return InvalidArgumentError("function takes %u arguments, %zu given", entry->num_arguments(),
                                args.size());
  for (unsigned i = 0; i < args.size(); ++i)
    if (args[i].type != HostType(entry->argument(i)->type()))
      return InvalidArgumentError("argument %u: %s given, %s expected", i,
                                  args[i].type.ToString().c_str(),
                                  entry->argument(i)->type().ToString().c_str());
  Evaluator ev(max_trips, std::numeric_limits<int64_t>::max());
  std::vector<DenseElements> results;
  if (!ev.RunRegion(func->region(0), args, &results)) return ev.error();
  return results;
}

}  // namespace kiln::onnx_import
