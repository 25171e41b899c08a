// IEEE 754 binary16 ("half", f16) to binary32 conversion, shared by the
// compiler (f16 constants, printing) and the tools (f16 tensors in kiln-run
// and kiln-test). Header-only: the runtime's tools use it without linking the
// compiler.
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

}  // namespace kiln

#endif  // KILN_BASE_HALF_H_
