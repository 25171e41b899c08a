#include "tools/input_spec.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln::tools {

kiln_dtype_t ParseDTypeName(const std::string& s) {
  for (int i = 1; i <= KILN_DTYPE_U64; ++i) {
    if (s == kiln_dtype_name(static_cast<kiln_dtype_t>(i))) return static_cast<kiln_dtype_t>(i);
  }
  if (s == "bool") return KILN_DTYPE_BOOL;
  return KILN_DTYPE_INVALID;
}

std::string TypeString(kiln_dtype_t dtype, const std::vector<int64_t>& shape) {
  std::string s = "tensor<";
  for (int64_t d : shape) s += std::to_string(d) + "x";
  return s + kiln_dtype_name(dtype) + ">";
}

// "1x16x96xf32" -> shape + dtype.
static bool ParseType(const std::string& text, std::vector<int64_t>* shape, kiln_dtype_t* dtype,
               std::string* error) {
  shape->clear();
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    if (x == std::string::npos) break;
    std::string dim = text.substr(start, x - start);
    if (dim.empty() || dim.find_first_not_of("0123456789") != std::string::npos ||
        dim.size() > 12) {
      *error = "bad dimension '" + dim + "' in type '" + text + "'";
      return false;
    }
    shape->push_back(std::strtoll(dim.c_str(), nullptr, 10));
    start = x + 1;
  }
  *dtype = ParseDTypeName(text.substr(start));
  if (*dtype == KILN_DTYPE_INVALID) {
    *error = "unknown dtype '" + text.substr(start) + "' in type '" + text +
             "' (expected e.g. 1x16x96xf32)";
    return false;
  }
  if (shape->size() > KILN_MAX_RANK) {
    *error = "type '" + text + "' has rank above " + std::to_string(KILN_MAX_RANK);
    return false;
  }
  return true;
}

// Stores `text` (a number) as element `i` of `out` (dtype `dtype`).
static bool StoreLiteral(const std::string& text, kiln_dtype_t dtype, size_t i, std::vector<uint8_t>* out,
                  std::string* error) {
  const char* s = text.c_str();
  char* end = nullptr;
  bool is_float = dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F64 || dtype == KILN_DTYPE_F16 ||
                  dtype == KILN_DTYPE_BF16;
  double d = 0;
  long long v = 0;
  if (is_float) {
    d = std::strtod(s, &end);
  } else if (dtype == KILN_DTYPE_BOOL && (text == "true" || text == "false")) {
    v = text == "true";
    end = const_cast<char*>(s) + text.size();
  } else if (dtype == KILN_DTYPE_U64) {
    errno = 0;
    unsigned long long u = text.empty() || text[0] == '-' ? 0 : std::strtoull(s, &end, 10);
    if (errno == ERANGE || (!text.empty() && text[0] == '-')) end = const_cast<char*>(s);
    std::memcpy(&v, &u, 8);
  } else {
    errno = 0;
    v = std::strtoll(s, &end, 10);
    if (errno == ERANGE) end = const_cast<char*>(s);
  }
  if (text.empty() || end != s + text.size()) {
    *error = "bad " + std::string(kiln_dtype_name(dtype)) + " value '" + text + "'";
    return false;
  }
  size_t size = kiln_dtype_size(dtype);
  uint8_t* p = out->data() + i * size;
  auto range = [&](long long lo, long long hi) {
    if (v < lo || v > hi) {
      *error = "value " + text + " out of range for " + kiln_dtype_name(dtype);
      return false;
    }
    return true;
  };
  switch (dtype) {
    case KILN_DTYPE_F32: { float f = static_cast<float>(d); std::memcpy(p, &f, 4); break; }
    case KILN_DTYPE_F64: std::memcpy(p, &d, 8); break;
    case KILN_DTYPE_F16: { uint16_t h = FloatToHalf(static_cast<float>(d)); std::memcpy(p, &h, 2); break; }
    case KILN_DTYPE_I64: { int64_t x = v; std::memcpy(p, &x, 8); break; }
    case KILN_DTYPE_I32: { if (!range(INT32_MIN, INT32_MAX)) return false; int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case KILN_DTYPE_I16: { if (!range(INT16_MIN, INT16_MAX)) return false; int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case KILN_DTYPE_I8: { if (!range(INT8_MIN, INT8_MAX)) return false; *p = static_cast<uint8_t>(static_cast<int8_t>(v)); break; }
    case KILN_DTYPE_U8: { if (!range(0, 255)) return false; *p = static_cast<uint8_t>(v); break; }
    case KILN_DTYPE_U16: { if (!range(0, UINT16_MAX)) return false; uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
    case KILN_DTYPE_U32: { if (!range(0, UINT32_MAX)) return false; uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case KILN_DTYPE_U64: std::memcpy(p, &v, 8); break;
    case KILN_DTYPE_BF16: {
      // bfloat16: the top half of the f32, rounded to nearest even.
      float f = static_cast<float>(d);
      uint32_t x;
      std::memcpy(&x, &f, 4);
      uint16_t b = (x & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((x >> 16) | 0x40)
                                                    : static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
      std::memcpy(p, &b, 2);
      break;
    }
    case KILN_DTYPE_BOOL: { if (!range(0, 1)) return false; *p = static_cast<uint8_t>(v); break; }
    default: *error = "unsupported dtype"; return false;
  }
  return true;
}

// Parses one --input spec into an array.
bool ParseInput(const std::string& spec, NpyArray* out, std::string* error, uint64_t max_bytes) {
  if (spec.empty()) {
    *error = "empty --input";
    return false;
  }
  if (spec[0] == '@') return kiln::tools::ReadNpy(spec.substr(1), out, error);
  size_t eq = spec.find('=');
  if (eq == std::string::npos) {
    *error = "--input='" + spec + "': expected @file.npy, TYPE=@file.npy or TYPE=v1,v2,...";
    return false;
  }
  std::vector<int64_t> shape;
  kiln_dtype_t dtype;
  if (!ParseType(spec.substr(0, eq), &shape, &dtype, error)) return false;
  size_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > (size_t{1} << 36) / static_cast<size_t>(d)) {
      *error = "type '" + spec.substr(0, eq) + "' is too large";
      return false;
    }
    count *= static_cast<size_t>(d);
  }
  if (count * kiln_dtype_size(dtype) > max_bytes) {
    *error = "type '" + spec.substr(0, eq) + "' is " + std::to_string(count * kiln_dtype_size(dtype)) +
             " bytes, over the " + std::to_string(max_bytes >> 20) + " MiB limit of --input";
    return false;
  }
  std::string value = spec.substr(eq + 1);
  if (!value.empty() && value[0] == '@') {
    if (!kiln::tools::ReadNpy(value.substr(1), out, error)) return false;
    if (out->dtype != dtype) {
      *error = value.substr(1) + ": has dtype " + kiln_dtype_name(out->dtype) + ", --input says " +
               TypeString(dtype, shape);
      return false;
    }
    if (out->element_count() != count) {
      *error = value.substr(1) + ": has shape " + TypeString(out->dtype, out->shape) +
               ", which does not fit --input type " + TypeString(dtype, shape);
      return false;
    }
    out->shape = shape;
    return true;
  }
  out->dtype = dtype;
  out->shape = shape;
  out->data.assign(count * kiln_dtype_size(dtype), 0);
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    items.push_back(value.substr(start, comma - start));
    start = comma + 1;
  }
  if (items.size() == 1 && count != 1) {
    // A splat: parse the value once, then double the filled prefix (a
    // per-element parse took 23 s for 33,333,333 i16 under ASan).
    if (count == 0) return true;
    if (!StoreLiteral(items[0], dtype, 0, &out->data, error)) return false;
    size_t filled = kiln_dtype_size(dtype), total = out->data.size();
    while (filled < total) {
      size_t n = filled < total - filled ? filled : total - filled;
      std::memcpy(out->data.data() + filled, out->data.data(), n);
      filled += n;
    }
    return true;
  }
  if (items.size() != count) {
    *error = "--input type " + TypeString(dtype, shape) + " has " + std::to_string(count) +
             " elements, " + std::to_string(items.size()) + " values given";
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!StoreLiteral(items[i], dtype, i, &out->data, error)) return false;
  }
  return true;
}

}  // namespace kiln::tools
