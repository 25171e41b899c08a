// libFuzzer target: the --input parser of kiln-run and kiln-bench
// (tools/input_spec.h ParseInput), e.g. "2x2xf32=1,2,3,4". Specs naming a
// file ('@') are skipped: the file reader is the npy target's. Errors are
// expected; crashes and sanitizer reports are findings.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "tools/input_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spec(reinterpret_cast<const char*>(data), size);
  if (spec.find('@') != std::string::npos) return 0;
  kiln::tools::NpyArray array;
  std::string error;
  // 64 MiB instead of the tools' 2 GiB: a 2 GiB splat is legal but takes
  // longer than the 30 s per-input timeout to fill under ASan (a timeout
  // finding of the 1-hour run: 2x2x11x16x86x116x69xf32, 1.94 GB).
  if (!kiln::tools::ParseInput(spec, &array, &error, uint64_t{64} << 20) && error.empty()) {
    abort();  // a failure must say why
  }
  return 0;
}
