// The --input syntax shared by kiln-run and kiln-bench:
//   @in.npy                   a .npy file (dtype and shape from the file)
//   1x16x96xf32=@in.npy       a .npy file whose dtype/shape must match
//   2x2xf32=1,2,3,4           literal values, row-major (one value splats)
// dtypes: f32 f64 f16 i64 i32 i16 i8 u8 i1 (bool).
#ifndef KILN_TOOLS_INPUT_SPEC_H_
#define KILN_TOOLS_INPUT_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/half.h"
#include "kiln/kiln.h"
#include "tools/npy.h"

namespace kiln::tools {

// Parses one --input value into `out`. On failure returns false and sets
// *error (e.g. "--input type 2x2xf32 has 4 elements, 3 values given"). A
// literal's type may declare at most `max_bytes` of element data (the tools
// use kMaxArrayBytes, 2 GiB; the fuzzer a smaller bound, since filling 2 GiB
// under ASan takes longer than its per-input timeout).
bool ParseInput(const std::string& spec, NpyArray* out, std::string* error,
                uint64_t max_bytes = kMaxArrayBytes);
// "tensor<1x2xf32>".
std::string TypeString(kiln_dtype_t dtype, const std::vector<int64_t>& shape);
// "f32" -> KILN_DTYPE_F32 ("bool" is accepted for i1); INVALID when unknown.
kiln_dtype_t ParseDTypeName(const std::string& s);
// IEEE binary16 <-> binary32 (base/half.h's; round to nearest even).
using ::kiln::FloatToHalf;
using ::kiln::HalfToFloat;

}  // namespace kiln::tools

#endif  // KILN_TOOLS_INPUT_SPEC_H_
