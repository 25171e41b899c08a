#include "npy_write.h"

#include <cstdio>

namespace ocr {

bool WriteNpyF32(const std::string& path, const std::vector<int64_t>& shape, const float* data,
                 size_t count, std::string* error) {
  size_t n = 1;
  std::string dims;
  for (size_t i = 0; i < shape.size(); ++i) {
    n *= static_cast<size_t>(shape[i]);
    dims += (i ? ", " : "") + std::to_string(shape[i]);
  }
  if (shape.size() == 1) dims += ",";  // a one-element tuple
  if (n != count) {
    *error = path + ": " + std::to_string(count) + " values for a shape of " + std::to_string(n);
    return false;
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  // magic (6) + version (2) + header length (2) + header + '\n', padded to 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = "cannot write " + path;
    return false;
  }
  const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xff),
                                static_cast<unsigned char>(header.size() >> 8)};
  bool ok = std::fwrite(magic, 1, 8, f) == 8 && std::fwrite(len, 1, 2, f) == 2 &&
            std::fwrite(header.data(), 1, header.size(), f) == header.size() &&
            std::fwrite(data, sizeof(float), count, f) == count;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) *error = "cannot write " + path;
  return ok;
}

}  // namespace ocr
