// Small edits of a SPIR-V binary that glslang cannot express from GLSL.
//
// SPIR-V binary layout (SPIR-V 1.3 spec, section 2.3): a 5-word header, then
// instructions, each starting with a word holding (word count << 16) | opcode.
// Each helper leaves the binary unchanged when it meets anything it does not
// expect, so its output is at least as valid as its input.
#ifndef KILN_COMPILER_CODEGEN_SPIRV_EDIT_H_
#define KILN_COMPILER_CODEGEN_SPIRV_EDIT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::codegen {

// Sets FunctionControl DontInline (and clears Inline) on every OpFunction
// whose OpName starts with `name_prefix` (glslang names a GLSL function by its
// mangled signature, e.g. "kiln_fma(f1;f1;f1;"). spirv-opt's inliner then
// keeps one copy of the body instead of one per call site; Vulkan drivers
// still inline it after specialization (Mesa's spirv_to_nir inlines every
// function), so only the module gets smaller. Returns how many functions were
// marked; 0 on a malformed binary (it is then left unchanged).
int MarkFunctionsDontInline(std::vector<uint32_t>* spirv, const std::string& name_prefix);

// glslang passes every GLSL function argument through a Function-storage
// variable: per call, one OpVariable and one OpStore per argument, and the
// callee loads from the pointer. For each DontInline function whose
// parameters are pointers the body only loads from, this makes the parameters
// values: the callee's loads become OpCopyObject, each call passes the value
// stored last (in the same block) into the argument variable, and variables
// used only that way are deleted with their stores and names. Run after
// spirv-opt (whose passes would keep the variables alive otherwise). Returns
// the number of calls rewritten; on anything unexpected (an argument whose
// stored value is not found in the calling block, a parameter used other
// than by a plain load) the binary is left unchanged and 0 is returned.
int PassArgumentsByValue(std::vector<uint32_t>* spirv);

}  // namespace kiln::codegen

#endif  // KILN_COMPILER_CODEGEN_SPIRV_EDIT_H_
