// Shader sharing across dispatches through specialization constants.
//
// Codegen bakes shapes, strides and offsets into each shader as integer
// constants, so dispatches of the same schedule on different shapes compile
// to SPIR-V that differs only in the values of some 32-bit integer
// OpConstants. ShaderDeduper groups such shaders: one SPIR-V module per group
// in which every constant whose value differs between members becomes an
// OpSpecConstant (SpecId 1, 2, ...; SpecId 0 stays reserved for the runtime,
// which sets it to its exact-FMA choice), and one entry point per member carrying that member's
// values (schemas/kiln_module.fbs EntryPoint.specialization). The driver
// substitutes the values at pipeline creation, so each pipeline compiles to
// the code of the member's original shader: the module shrinks, the kernels
// do not change.
//
// Shaders share only where their constants coincide alike: glslang and
// spirv-opt give equal values one constant, so a value that equals another
// in one shader but not in the other (an output width equal to a loop's
// trip count) changes the instruction stream and keeps them apart. On the
// golden models this costs next to nothing (cls 33 -> 34 executables when
// the conv blocks became loops, det 56 -> 55); matching per use of a
// constant would remove it.
//
// A constant is kept as it is (and must then be equal across the group)
// where SPIR-V requires a constant instruction or where specializing it
// could change a type: array lengths, members of constant composites,
// indices into structures in access chains, scope and memory-semantics
// operands, and operands of OpExecutionModeId / OpDecorateId.
#ifndef KILN_COMPILER_BACKEND_SHADER_DEDUPE_H_
#define KILN_COMPILER_BACKEND_SHADER_DEDUPE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "base/status.h"

namespace kiln::backend {

class ShaderDeduper {
 public:
  struct Placement {
    uint32_t shader = 0;  // index of the shared shader (an Executable)
    uint32_t entry = 0;   // member (entry point) within it
  };
  // Adds one dispatch's validated SPIR-V; a shader equal to an earlier one,
  // constants included, gets that one's placement. `extra_key` must be equal for
  // dispatches that may share (e.g. push-constant words); shaders that share
  // also share their bindings and workgroup size, which the SPIR-V declares.
  // `variant`: the dispatch's f16-arithmetic SPIR-V (codegen
  // CompiledDispatch::spirv_f16), or empty. Members of a group have equal
  // variants up to their constants too, and the variant is specialized the
  // same way (its SpecIds follow the main module's).
  Placement Add(const std::vector<uint32_t>& spirv, const std::vector<uint32_t>& extra_key,
                const std::vector<uint32_t>& variant = {});

  uint32_t shader_count() const { return static_cast<uint32_t>(groups_.size()); }
  uint32_t entry_count(uint32_t shader) const {
    return static_cast<uint32_t>(groups_[shader].member_values.size());
  }
  // The shared SPIR-V of `shader`: the first member's module with each
  // varying constant turned into a specialization constant. `specializations`
  // receives, per member, the values of SpecId 1..N (empty when the group has
  // one member or nothing varies). `variant` (optional) receives the shared
  // variant (empty when the group has none), whose varying constants take
  // the SpecIds after the main module's: the entry point's one list of
  // values serves whichever module the runtime creates its pipeline from
  // (a SpecId a module does not declare is ignored, as Vulkan specifies).
  std::vector<uint32_t> Finish(uint32_t shader, std::vector<std::vector<uint32_t>>* specializations,
                               std::vector<uint32_t>* variant = nullptr) const;

 private:
  struct Group {
    std::vector<uint32_t> spirv;                       // the first member's
    std::vector<size_t> value_words;                   // word index of each candidate constant's value
    std::vector<uint32_t> constant_ids;                // result id of each candidate constant
    std::vector<uint32_t> variant;                     // the first member's f16 variant, or empty
    std::vector<size_t> variant_value_words;
    std::vector<uint32_t> variant_constant_ids;
    std::vector<std::vector<uint32_t>> member_values;  // per member: main candidates, then the variant's
  };
  std::vector<Group> groups_;
  std::map<std::vector<uint32_t>, uint32_t> by_key_;
};

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_SHADER_DEDUPE_H_
