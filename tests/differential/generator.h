// Seeded random generator of stream-level Kiln programs (compiler/ir/ops.h,
// "Stream level") for the differential test (differential_test.cc), with a
// host reference interpreter that gives every op value semantics: each op
// produces a fresh value, so a tied (in-place) op whose operand is used later
// is a legal program here; materialize-copy-on-write must make it safe.
#ifndef KILN_TESTS_DIFFERENTIAL_GENERATOR_H_
#define KILN_TESTS_DIFFERENTIAL_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::difftest {

struct GeneratedProgram {
  uint64_t seed = 0;
  std::string kir;                           // a module: flow.executables + func @main
  std::vector<std::vector<float>> inputs;    // one f32 1-D tensor per argument
  std::vector<bool> consume;                 // per argument: arg_ownership "consume"
  std::vector<std::vector<float>> expected;  // per result, from the host interpreter
  int tied_ops = 0;                          // tied dispatches/updates/fills/copies generated
};

// Same seed, same program (the generator uses its own PRNG, not <random>'s
// implementation-defined distributions).
GeneratedProgram Generate(uint64_t seed);

}  // namespace kiln::difftest

#endif  // KILN_TESTS_DIFFERENTIAL_GENERATOR_H_
