// kiln-make-test-module OUT.kiln [KIND [N]]: writes a test module for the
// kiln-run / kiln-dump tests.
//   vadd    (default) the vadd module (vm/testing/test_modules.h)
//   own     the ownership module "own" (vm/testing/ownership_modules.h), f32[N]
//   stream  the streaming state loop "stream" (step), f32[N]
// N defaults to 64.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "vm/testing/ownership_modules.h"
#include "vm/testing/test_modules.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    std::fprintf(stderr, "usage: kiln-make-test-module OUT.kiln [vadd|own|stream [N]]\n");
    return 2;
  }
  const char* kind = argc > 2 ? argv[2] : "vadd";
  int n = argc > 3 ? std::atoi(argv[3]) : 64;
  if (n <= 0 || n % 4 != 0 || n > (1 << 20)) {
    std::fprintf(stderr, "error: N must be a positive multiple of 4 (at most 2^20)\n");
    return 2;
  }
  kiln::vm::testing::TestShaders shaders{kVaddSpirv, kVaddSpirvWordCount, kScaleSpirv,
                                         kScaleSpirvWordCount};
  std::vector<uint8_t> bytes;
  if (!std::strcmp(kind, "vadd")) {
    bytes = kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  } else if (!std::strcmp(kind, "own")) {
    bytes = kiln::vm::testing::BuildOwnershipModule(shaders, n);
  } else if (!std::strcmp(kind, "stream")) {
    bytes = kiln::vm::testing::BuildStreamModule(shaders, n);
  } else {
    std::fprintf(stderr, "error: unknown module kind '%s' (vadd, own, stream)\n", kind);
    return 2;
  }
  FILE* f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::fprintf(stderr, "error: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fclose(f);
  return 0;
}
