// libFuzzer target: the .npy parser of the tools (tools/npy.h ParseNpy).
// Errors are expected; crashes, sanitizer reports and allocations past the
// tools' 2 GiB cap are findings. On success the data must match the shape.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  kiln::tools::NpyArray array;
  std::string error;
  if (kiln::tools::ParseNpy("fuzz.npy", bytes, &array, &error)) {
    if (array.data.size() > size) abort();  // more data than the file holds
  } else if (error.empty()) {
    abort();  // a failure must say why
  }
  return 0;
}
