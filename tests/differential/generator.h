// Seeded random generator of stream-level Kiln programs (compiler/ir/ops.h,
// "Stream level") for the differential test (differential_test.cc), with a
// host reference interpreter that gives every op value semantics: each op
// produces a fresh value, so a tied (in-place) op whose operand is used later
// is a legal program here; materialize-copy-on-write must make it safe.
// Programs contain region control flow (scf.if, scf.index_switch, scf.for,
// scf.while, nested, with captured and loop-carried values), branches with
// block arguments (cf.br / cf.cond_br) and module globals (util.global*).
#ifndef KILN_TESTS_DIFFERENTIAL_GENERATOR_H_
#define KILN_TESTS_DIFFERENTIAL_GENERATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::difftest {

struct GeneratedProgram {
  uint64_t seed = 0;
  std::string kir;                           // a module: flow.executables + func @main
  std::vector<std::vector<float>> inputs;    // one f32 1-D tensor per argument
  std::vector<bool> consume;                 // per argument: arg_ownership "consume"
  std::vector<std::vector<float>> expected;  // per result, from the host interpreter (first invocation)
  // Per invocation (two, on one context), per result: module globals carry
  // their state from one invocation to the next.
  std::vector<std::vector<std::vector<float>>> expected_runs;
  int tied_ops = 0;                          // tied dispatches/updates/fills/copies generated
  // Constructs generated and how often: "scf.if", "scf.index_switch",
  // "scf.for", "scf.while", "cf.cond_br", "cf.br loop", "util.global",
  // "util.global.load", "util.global.store", "global state update",
  // "device condition".
  std::map<std::string, int> constructs;
};

// Same seed, same program (the generator uses its own PRNG, not <random>'s
// implementation-defined distributions).
GeneratedProgram Generate(uint64_t seed);

}  // namespace kiln::difftest

#endif  // KILN_TESTS_DIFFERENTIAL_GENERATOR_H_
