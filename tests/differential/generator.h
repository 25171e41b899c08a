// Seeded random generator of stream-level Kiln programs (compiler/ir/ops.h,
// "Stream level") for the differential test (differential_test.cc), with a
// host reference interpreter that gives every op value semantics: each op
// produces a fresh value, so a tied (in-place) op whose operand is used later
// is a legal program here; materialize-copy-on-write must make it safe.
// Programs contain region control flow (scf.if, scf.index_switch, scf.for,
// scf.while, nested, with captured and loop-carried values), branches with
// block arguments (cf.br / cf.cond_br), module globals (util.global*) and
// calls (func.call) into a generated callee module with borrowed and consumed
// arguments, dispatches that read or write subranges (concats, nested ones
// included, slices at element offsets, strided slices, constant pads), and
// transfers between "host" and "gpu" under a unified,
// discrete or absent device topology; the host reference runs the callee's
// body with value semantics.
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
  // The callee module (compiled with module name "lib"), or empty: flow.executables
  // and 1-3 exported functions f0..f2 that @main calls as @lib.f<i> (func.call of
  // a func.func {import = true} declaration in `kir`). In half of the programs
  // with callees, f0..f2 are functions of `kir` itself instead, called as
  // @f<i> (calls within one module), and this is empty; in half of those
  // (by seed) they are module-internal (sym_visibility = "private"), so
  // --infer-argument-ownership may make their borrowed arguments consumed.
  std::string lib_kir;
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
  // "device condition", "func.call", "call borrow operand", "call consume
  // operand", "call consume operand read later", "call consume operand dead
  // after", "call in a region or branch", "call result passed to a call",
  // "call result returned", "call result stored to a global", "call to an
  // internal function", "transfer
  // unified" / "transfer discrete" / "transfer (no topology)" (the module's
  // kiln.topology), "transfer round trip", "fill between transfer legs" (the
  // source filled in place after the first leg, the transferred value read
  // after the fill), "global slice read after update", "global await read
  // after update" (a view of a loaded global read after its in-place update),
  // "concat of producers made for it", "concat of earlier values", "nested
  // concat", "slice dispatch at an element offset", "strided slice
  // dispatch", "constant pad", "concat piece visible after the concat".
  std::map<std::string, int> constructs;
};

// Same seed, same program (the generator uses its own PRNG, not <random>'s
// implementation-defined distributions).
GeneratedProgram Generate(uint64_t seed);

}  // namespace kiln::difftest

#endif  // KILN_TESTS_DIFFERENTIAL_GENERATOR_H_
