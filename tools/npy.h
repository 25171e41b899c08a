// Minimal .npy reader/writer for the Kiln tools (NumPy format v1.0; v2.0/3.0
// headers are also read).
//
// Supported dtypes: '<f4' f32, '<f8' f64, '<f2' f16, '<i8' i64, '<i4' i32,
// '<i2' i16, '|i1' i8, '|u1' u8, '|b1' bool, '<u2' u16, '<u4' u32, '<u8' u64
// (bf16 has no NumPy dtype: pass it as TYPE=v1,v2,...). C order only: fortran_order
// True, big-endian data or any other dtype is an error. Uses only the C API's
// kiln_dtype_t (no runtime internals).
#ifndef KILN_TOOLS_NPY_H_
#define KILN_TOOLS_NPY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::tools {

// Largest array the tools read from a .npy file or build from an --input
// literal: 2 GiB of element data (a larger request is an error, not an
// attempt to allocate it).
constexpr uint64_t kMaxArrayBytes = uint64_t{1} << 31;

struct NpyArray {
  kiln_dtype_t dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // dense, C order, little-endian
  size_t element_count() const;
};

// Reads `path`. On failure returns false and sets *error (e.g.
// "in.npy: unsupported dtype '>f4' (big-endian)").
bool ReadNpy(const std::string& path, NpyArray* out, std::string* error);
// Parses .npy bytes (`name` is used in messages).
bool ParseNpy(const std::string& name, const std::vector<uint8_t>& bytes, NpyArray* out,
              std::string* error);
// Writes a v1.0 file. Returns false and sets *error on I/O failure or an
// unsupported dtype.
bool WriteNpy(const std::string& path, const NpyArray& array, std::string* error);
// Serializes to .npy bytes (v1.0).
bool SerializeNpy(const NpyArray& array, std::vector<uint8_t>* out, std::string* error);

}  // namespace kiln::tools

#endif  // KILN_TOOLS_NPY_H_
