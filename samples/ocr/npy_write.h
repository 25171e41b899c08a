// Minimal .npy writer (NumPy format 1.0, little-endian float32, C order),
// for kiln-ocr --dump: the tensors fed to each model and what Kiln returned.
#ifndef KILN_SAMPLES_OCR_NPY_WRITE_H_
#define KILN_SAMPLES_OCR_NPY_WRITE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ocr {

// Writes `data` (product(shape) floats) to `path`. Returns false with *error
// set when the file cannot be written or the sizes disagree.
bool WriteNpyF32(const std::string& path, const std::vector<int64_t>& shape, const float* data,
                 size_t count, std::string* error);

}  // namespace ocr

#endif  // KILN_SAMPLES_OCR_NPY_WRITE_H_
