// kiln-make-test-module OUT.kiln: writes the vadd test module
// (vm/testing/test_modules.h) for the kiln-run / kiln-dump tests.
#include <cstdio>

#include "hal/cts/vadd_spirv.h"
#include "vm/testing/test_modules.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-make-test-module OUT.kiln\n");
    return 2;
  }
  std::vector<uint8_t> bytes =
      kiln::vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  FILE* f = std::fopen(argv[1], "wb");
  if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    std::fprintf(stderr, "error: cannot write %s\n", argv[1]);
    return 1;
  }
  std::fclose(f);
  return 0;
}
