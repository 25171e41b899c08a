// The load-time check of an executable's SPIR-V against the layout its module
// declares, run before any driver sees the words (docs/security.md).
//
// A module's integrity hash stops accidents, not a crafted module: SPIR-V
// that spirv-val accepts but that names a binding the declared descriptor set
// layout lacks (binding 131072, descriptor set 1) crashed lavapipe inside
// vkCreateComputePipelines. This is a small reflection pass over the words,
// not SPIRV-Tools (the runtime does not link it), in the spirit of
// SPIRV-Reflect's descriptor walk. It checks:
//  - the stream: magic, id bound (<= kMaxSpirvIdBound), every instruction's
//    word count, every id the check reads below the bound, the Logical
//    addressing model, and no capability that allows raw pointers
//    (Addresses, Kernel, Linkage, PhysicalStorageBufferAddresses,
//    VariablePointers*);
//  - storage classes: a variable or pointer type is Input, Workgroup,
//    Private, Function, PushConstant, StorageBuffer or UniformConstant;
//    nothing else (no Uniform blocks, no physical pointers);
//  - descriptors: every StorageBuffer variable is a Block struct (one
//    descriptor, no arrays), every UniformConstant variable a texel buffer
//    (a sampled 32-bit float image of dimension Buffer, format Unknown or
//    Rgba32f: GLSL's samplerBuffer; no storage images, samplers or arrays),
//    each at descriptor set 0 and a binding below every entry point's
//    binding_count that every entry point declares of that kind
//    (EntryPointInfo::binding_kinds); a binding the module declares read-only is
//    NonWritable (the variable or every member of its block) and no store,
//    atomic write, memory copy or function argument reaches it through a
//    pointer derived from it (access chains, copies, selects, phis);
//  - push constants: at most one PushConstant block, whose size (member
//    Offset plus size, scalars, vectors and strided arrays) fits every entry
//    point's push_constant_bytes;
//  - the entry point: each EntryPointInfo names a GLCompute OpEntryPoint,
//    whose interface ids are global variables, Input ones BuiltIn; its
//    workgroup size (LocalSize, LocalSizeId, or the WorkgroupSize built-in,
//    with the entry point's specialization values applied) is within
//    `limits` in every dimension and in total invocations.
// Errors: kInvalidArgument, naming the instruction's word offset and the
// rule. Cost: O(words) time, 20 bytes per id of the bound in host memory
// (through the allocator hook), freed before returning.
#ifndef KILN_HAL_VULKAN_SPIRV_LAYOUT_CHECK_H_
#define KILN_HAL_VULKAN_SPIRV_LAYOUT_CHECK_H_

#include <cstddef>
#include <cstdint>

#include "hal/api.h"

namespace kiln::hal::vulkan {

// Largest id bound accepted (SPIR-V's own universal limit is 4,194,303;
// Kiln's shaders stay far below).
constexpr uint32_t kMaxSpirvIdBound = 1u << 20;

struct SpirvLimits {
  uint32_t max_workgroup_size[3] = {0, 0, 0};  // VkPhysicalDeviceLimits::maxComputeWorkGroupSize
  uint32_t max_workgroup_invocations = 0;      // ...::maxComputeWorkGroupInvocations

  SpirvLimits() = default;
  explicit SpirvLimits(const DeviceInfo& info) : max_workgroup_invocations(
      info.max_compute_workgroup_invocations) {
    for (int d = 0; d < 3; ++d) max_workgroup_size[d] = info.max_compute_workgroup_size[d];
  }
};

// Checks `count` words of SPIR-V against `entries` (the module's declared
// layout) and `limits`. OK or kInvalidArgument with the reason. On OK and
// when non-null, `invocations` gets one entry per entry point: the
// invocations in one workgroup as the SPIR-V declares it (the dispatch-size
// check bounds workgroup counts with it).
Status CheckSpirvLayout(const uint32_t* words, size_t count,
                        const HostVector<EntryPointInfo>& entries, const SpirvLimits& limits,
                        HostVector<uint32_t>* invocations = nullptr);

}  // namespace kiln::hal::vulkan

#endif  // KILN_HAL_VULKAN_SPIRV_LAYOUT_CHECK_H_
