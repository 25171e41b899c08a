// Element types shared by the compiler, the module schema, the VM and the C API.
// The numeric values are part of the module format and the C ABI: never
// renumber (they equal kiln_dtype_t in include/kiln/kiln.h and DType in
// schemas/kiln_module.fbs; static_asserts in runtime/ keep them in step).
#ifndef KILN_BASE_DTYPE_H_
#define KILN_BASE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kiln {

enum class DType : uint8_t {
  kInvalid = 0,
  kF32 = 1,
  kF16 = 2,
  kI64 = 3,
  kI32 = 4,
  kI16 = 5,
  kI8 = 6,
  kU8 = 7,
  kBool = 8,  // stored as one byte per element
  kF64 = 9,
  // Appended (never renumber):
  kBF16 = 10,  // bfloat16: the top 16 bits of an f32; stored 16-bit, computed in f32
  kU16 = 11,
  kU32 = 12,
  kU64 = 13,
};

constexpr int kNumDTypes = 14;  // one past the largest value

// Bytes per element; 0 for kInvalid.
inline size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 4;
    case DType::kF16: case DType::kI16: case DType::kBF16: case DType::kU16: return 2;
    case DType::kI64: case DType::kF64: case DType::kU64: return 8;
    case DType::kI8: case DType::kU8: case DType::kBool: return 1;
    default: return 0;
  }
}

// "f32", "f16", "i64", "i32", "i16", "i8", "u8", "i1", "f64", "bf16", "u16",
// "u32", "u64".
inline const char* DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI16: return "i16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kBool: return "i1";
    case DType::kF64: return "f64";
    case DType::kBF16: return "bf16";
    case DType::kU16: return "u16";
    case DType::kU32: return "u32";
    case DType::kU64: return "u64";
    default: return "invalid";
  }
}

// Inverse of DTypeName; kInvalid when unknown.
inline DType ParseDType(std::string_view s) {
  for (int i = 1; i < kNumDTypes; ++i) {
    DType t = static_cast<DType>(i);
    if (s == DTypeName(t)) return t;
  }
  if (s == "bool") return DType::kBool;
  return DType::kInvalid;
}

// True for f32, f16, bf16 and f64.
inline bool IsFloatType(DType t) {
  return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16 || t == DType::kF64;
}

// True for u8, u16, u32 and u64.
inline bool IsUnsignedType(DType t) {
  return t == DType::kU8 || t == DType::kU16 || t == DType::kU32 || t == DType::kU64;
}

}  // namespace kiln

#endif  // KILN_BASE_DTYPE_H_
