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
//
// Host reads get barriers of their own (device writes -> HOST_READ), also
// decided by --place-barriers: one over exactly the result's bytes before the
// final submission, one over exactly the bytes a stream.async.load reads
// before the submission it waits for; command buffers record no global
// device -> host barrier.
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

// x = [1, 2, 3, 4]: a = -x; the host reads a's element 2 (-3.0f: bits
// 0xc0400000, not 0) as an i32, so the `then` branch runs: -a = [1, 2, 3, 4].
const char kLoadThenBranch[] = R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %a = "stream.async.dispatch"(%x) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %v = "stream.async.load"(%a) {dtype = "i32", offset = 8 : i64} : (!stream.resource<transient>) -> index
  %z = "arith.constant"() {value = 0 : i64} : () -> index
  %c = "arith.cmpi"(%v, %z) {predicate = "ne"} : (index, index) -> i1
  %r = "scf.if"(%c) ({
    %n = "stream.async.dispatch"(%a) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>) -> !stream.resource<transient>
    "scf.yield"(%n) : (!stream.resource<transient>) -> ()
  }, {
    %d = "stream.async.dispatch"(%a, %a) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
    "scf.yield"(%d) : (!stream.resource<transient>) -> ()
  }) : (i1) -> !stream.resource<*>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<*>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

struct Recorded {
  VkBuffer buffer;
  VkDeviceSize offset, size;
  bool host;  // dstAccessMask VK_ACCESS_HOST_READ_BIT: a host-read barrier
};

void Observe(void* user, const VkBufferMemoryBarrier* barriers, uint32_t count) {
  auto* calls = static_cast<std::vector<std::vector<Recorded>>*>(user);
  std::vector<Recorded> call;
  for (uint32_t i = 0; i < count; ++i)
    call.push_back({barriers[i].buffer, barriers[i].offset, barriers[i].size,
                    barriers[i].dstAccessMask == VK_ACCESS_HOST_READ_BIT});
  calls->push_back(call);
}

// Compiles and runs `program` on `input` with the barrier observer on: the
// VkBufferMemoryBarriers of each vkCmdPipelineBarrier go to *calls. Returns
// CompileTextAndRun's error ("" on success).
std::string RunRecordingBarriers(const std::string& program, const HostTensor& input, std::vector<HostTensor>* out,
                                 std::vector<std::vector<Recorded>>* calls) {
  hal::vulkan::SetBufferBarrierObserverForTesting(Observe, calls);
  std::string error = CompileTextAndRun(program, {input}, out);
  hal::vulkan::SetBufferBarrierObserverForTesting(nullptr, nullptr);
  return error;
}

TEST(HalBarrierRanges, ConcatOfThreeProducersBarriersExactlyTheirSubranges) {
  std::vector<std::vector<Recorded>> calls;
  std::vector<HostTensor> out;
  std::string error = RunRecordingBarriers(std::string(kArithExecutables) + kAdd3Executable + kConcatOfThree,
                                           F32({4}, {1, 2, 3, 4}), &out, &calls);
  ASSERT_EQ(error, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{2, 6, 12, 20}));
  // Two barriers in the whole run (uploads and read-backs record none):
  // the one before @add3, with one VkBufferMemoryBarrier per producer, on one
  // buffer (the arena, a buffer of its own: offset 0 in its memory), at the
  // producers' exact bytes; then the host-read barrier before the final
  // submission, over exactly the result's 16 bytes (its own buffer, not the
  // arena).
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_EQ(calls[0].size(), 3u);
  for (const Recorded& r : calls[0]) {
    EXPECT_EQ(r.buffer, calls[0][0].buffer);
    EXPECT_FALSE(r.host);
  }
  std::vector<std::pair<VkDeviceSize, VkDeviceSize>> ranges;
  for (const Recorded& r : calls[0]) ranges.push_back({r.offset, r.size});
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(ranges, (std::vector<std::pair<VkDeviceSize, VkDeviceSize>>{{0, 16}, {256, 16}, {512, 16}}));
  ASSERT_EQ(calls[1].size(), 1u);
  EXPECT_TRUE(calls[1][0].host);
  EXPECT_NE(calls[1][0].buffer, calls[0][0].buffer);
  EXPECT_EQ(calls[1][0].offset, 0u);
  EXPECT_EQ(calls[1][0].size, 16u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

TEST(HalBarrierRanges, HostReadsGetBarriersOverExactlyTheBytesRead) {
  std::vector<std::vector<Recorded>> calls;
  std::vector<HostTensor> out;
  std::string error =
      RunRecordingBarriers(std::string(kArithExecutables) + kLoadThenBranch, F32({4}, {1, 2, 3, 4}), &out, &calls);
  ASSERT_EQ(error, "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), (std::vector<float>{1, 2, 3, 4}));
  // 1. Before the load's submission: a host-read barrier over the 4 bytes
  //    read, byte 8 of %a (%a at arena byte 0; the arena is a buffer of its
  //    own). 2. Before the final submission: one over the result's 16 bytes
  //    (its own buffer). No device barrier: the load's wait orders %a's
  //    write before the branch reads it, and nothing else conflicts.
  ASSERT_EQ(calls.size(), 2u);
  ASSERT_EQ(calls[0].size(), 1u);
  EXPECT_TRUE(calls[0][0].host);
  EXPECT_EQ(calls[0][0].offset, 8u);
  EXPECT_EQ(calls[0][0].size, 4u);
  ASSERT_EQ(calls[1].size(), 1u);
  EXPECT_TRUE(calls[1][0].host);
  EXPECT_NE(calls[1][0].buffer, calls[0][0].buffer);
  EXPECT_EQ(calls[1][0].offset, 0u);
  EXPECT_EQ(calls[1][0].size, 16u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
