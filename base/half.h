// IEEE 754 binary16 ("half", f16) <-> binary32 conversions, shared by the
// compiler (f16 constants, constant folding, printing) and the tools (f16
// tensors in kiln-run and kiln-test). Header-only: the runtime's tools use it
// without linking the compiler.
#ifndef KILN_BASE_HALF_H_
#define KILN_BASE_HALF_H_

#include <cstdint>
#include <cstring>

namespace kiln {

// Exact (every half is a float): subnormals are normalized, Inf stays Inf,
// a NaN keeps its sign and payload (shifted into the f32 mantissa).
inline float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3FF;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Rounds to the nearest half, ties to even (IEEE 754's default rounding, and
// what ONNX Runtime's Cast to float16 does). Overflow (|f| >= 65520) gives
// +-Inf; values below half the smallest subnormal give +-0; subnormal results
// are rounded the same way; Inf stays Inf; a NaN stays a NaN with its sign and
// the top bits of its payload (quiet bit set when those bits are all zero).
inline uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t exp = (x >> 23) & 0xFFu;
  uint32_t mant = x & 0x7FFFFFu;
  if (exp == 0xFF) {  // Inf / NaN
    return static_cast<uint16_t>(sign | 0x7C00u | (mant ? (0x200u | (mant >> 13)) : 0u));
  }
  const int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1F) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow -> Inf
  if (e <= 0) {                                                 // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half_mant = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;  // may become the smallest normal
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | half);
}

}  // namespace kiln

#endif  // KILN_BASE_HALF_H_
