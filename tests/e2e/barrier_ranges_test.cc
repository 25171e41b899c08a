// The barriers a compiled program records, read back as the exact
// VkBufferMemoryBarriers the Vulkan HAL hands to vkCmdPipelineBarrier
// (hal/vulkan/vulkan_command_buffer.h's test observer). --place-barriers
// (compiler/transforms/place_barriers.h) decides them; the backend writes
// them out.
//
// The program is a concat of three producers as the emplace pass leaves it:
// three dispatches write disjoint 16-byte subranges of one buffer (the
// arena: the plan puts the three live values at its bytes 0, 256 and 512),
// then one dispatch reads all three. The three writes need no barrier
// between them; the reader needs exactly one, naming exactly those three
// subranges (not the whole arena). Validation and synchronization
// validation stay silent, and the result is the hand-derived one.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hal/vulkan/vulkan_command_buffer.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// @add3: p + q + r over tensor<4xf32>; with @neg, @add and @mul
// (kArithExecutables).
const char kAdd3Executable[] = R"(
"flow.executable"() ({
^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>):
  %0 = "flow.dispatch"(%a, %b, %c) ({
  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>, %r: tensor<4xf32>):
    %s = "tensor.add"(%p, %q) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %t = "tensor.add"(%s, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "flow.return"(%t) : (tensor<4xf32>) -> ()
  }) {name = "add3"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
}) {sym_name = "add3"} : () -> ()
)";

// x = [1, 2, 3, 4]: a = -x, b = x + x, c = x * x;
// a + b + c = x + x * x = [2, 6, 12, 20].
const char kConcatOfThree[] = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %a = "stream.async.dispatch"(%x) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %b = "stream.async.dispatch"(%x, %x) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<transient>
  %c = "stream.async.dispatch"(%x, %x) {entry = @mul, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<transient>
  %s = "stream.async.dispatch"(%a, %b, %c) {entry = @add3, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%s) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

struct Recorded {
  VkBuffer buffer;
  VkDeviceSize offset, size;
};

void Observe(void* user, const VkBufferMemoryBarrier* barriers, uint32_t count) {
  auto* calls = static_cast<std::vector<std::vector<Recorded>>*>(user);
  std::vector<Recorded> call;
  for (uint32_t i = 0; i < count; ++i) call.push_back({barriers[i].buffer, barriers[i].offset, barriers[i].size});
  calls->push_back(call);
}

TEST(HalBarrierRanges, ConcatOfThreeProducersBarriersExactlyTheirSubranges) {
  std::vector<std::vector<Recorded>> calls;
  hal::vulkan::SetBufferBarrierObserverForTesting(Observe, &calls);
  std::vector<HostTensor> out;
  std::string error = CompileTextAndRun(std::string(kArithExecutables) + kAdd3Executable + kConcatOfThree,
                                        {F32({4}, {1, 2, 3, 4})}, &out);
  hal::vulkan::SetBufferBarrierObserverForTesting(nullptr, nullptr);
  ASSERT_EQ(error, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 6, 12, 20}));
  // One barrier in the whole run (uploads and read-backs record none): the
  // one before @add3, with one VkBufferMemoryBarrier per producer, on one
  // buffer (the arena, a buffer of its own: offset 0 in its memory), at the
  // producers' exact bytes.
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0].size(), 3u);
  for (const Recorded& r : calls[0]) EXPECT_EQ(r.buffer, calls[0][0].buffer);
  std::vector<std::pair<VkDeviceSize, VkDeviceSize>> ranges;
  for (const Recorded& r : calls[0]) ranges.push_back({r.offset, r.size});
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(ranges, (std::vector<std::pair<VkDeviceSize, VkDeviceSize>>{{0, 16}, {256, 16}, {512, 16}}));
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
