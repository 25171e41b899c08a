// libFuzzer target: the load-time SPIR-V layout check
// (hal/vulkan/spirv_layout_check.h) on arbitrary words against an
// arbitrary declared layout (input format: fuzz_layout.h), with lavapipe's
// compute limits. Errors are expected; crashes and sanitizer reports are
// findings. On OK the reported invocations must fit the limit.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "fuzz/fuzz_layout.h"
#include "hal/vulkan/spirv_layout_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln;
  hal::EntryPointInfo entry;
  std::vector<uint32_t> words;
  if (!fuzz::DecodeLayoutInput(data, size, &entry, &words)) return 0;
  HostVector<hal::EntryPointInfo> entries;
  entries.push_back(entry);
  hal::vulkan::SpirvLimits limits;
  limits.max_workgroup_size[0] = limits.max_workgroup_size[1] = limits.max_workgroup_size[2] = 1024;
  limits.max_workgroup_invocations = 1024;
  HostVector<uint32_t> invocations;
  Status s = hal::vulkan::CheckSpirvLayout(words.data(), words.size(), entries, limits,
                                           &invocations);
  if (s.ok() && (invocations.size() != 1 || invocations[0] == 0 || invocations[0] > 1024)) {
    abort();  // the check accepted a workgroup size outside the limits
  }
  return 0;
}
