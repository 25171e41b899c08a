// Opt-in pad fusion through the whole pipeline and the runtime
// (compiler/transforms/fuse_pad.cc, kiln-compile --fuse-pad): a constant
// pad of a dispatch's result whose interior is one contiguous range of the
// padded tensor becomes two border fills, and the producer writes the
// interior in place (--emplace-allocations): no pad dispatch, no copy. Each
// program is compiled with and without the flag and both must give the
// values derived by hand from the inputs. A pad with a strided interior
// (H/W padding of NCHW) becomes one fill of the padded tensor, and the
// producer writes the interior rows at the target's strides
// (result_strides), whatever its schedule (elementwise, conv, matmul).
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/half.h"
#include "compiler/ir/parser.h"
#include "hal/vulkan/vulkan_command_buffer.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

struct Compiled {
  std::string error;
  backend::EmitReport report;
  std::vector<HostTensor> out;
  kiln_device_stats_t delta{};
};

// Compiles `kir` (tensor level) with the default pipeline, --fuse-pad when
// `fuse`, and runs main on `inputs`.
Compiled CompileAndInvoke(const char* kir, bool fuse, const std::vector<HostTensor>& inputs) {
  Compiled r;
  auto parsed = ir::ParseModule(kir, "<fuse_pad_test>");
  if (!parsed.ok()) {
    r.error = "parse: " + parsed.status().message();
    return r;
  }
  driver::CompileOptions options;
  options.pipeline.fuse_pad = fuse;
  auto compiled = driver::CompileModule(*parsed.value(), options, &r.report);
  if (!compiled.ok()) {
    r.error = "compile: " + compiled.status().message();
    return r;
  }
  r.error = RunModule(compiled.value(), inputs, &r.out, &r.delta);
  return r;
}

// y = pad(-x) on its outer dimension: one row of 12 zeros before and two
// after, [2,3,4] -> [5,3,4]. The interior is bytes [48, 144) of 240.
const char* kZeroPad = R"(
"func.func"() ({
^bb0(%x: tensor<2x3x4xf32>):
  %a = "tensor.neg"(%x) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [1, 0, 0, 2, 0, 0], value = 0.0 : f64} : (tensor<2x3x4xf32>) -> tensor<5x3x4xf32>
  "func.return"(%y) : (tensor<5x3x4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, ZeroPadOfADispatchResult) {
  std::vector<float> x = Ramp(24, 0.5f, -5);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kZeroPad, fuse, {F32({2, 3, 4}, x)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 1u);
    std::vector<float> y = Values(r.out[0]);
    ASSERT_EQ(y.size(), 60u);
    for (int i = 0; i < 60; ++i) {
      const float want = i >= 12 && i < 36 ? -x[i - 12] : 0.0f;
      EXPECT_EQ(y[i], want) << "element " << i;
    }
    EXPECT_EQ(r.report.dispatches, fuse ? 1 : 2);
    EXPECT_EQ(r.delta.dispatches, fuse ? 1u : 2u) << "the pad dispatch goes";
    EXPECT_EQ(r.delta.fills, fuse ? 2u : 0u) << "one fill per border range";
    EXPECT_EQ(r.delta.copies, 0u) << "the producer writes the interior in place";
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// y = pad(x * x) by 3 before and 5 after on the last dimension of [1,10],
// value 3.5, returned and also read by s = sum(y) (a reduce: an anchor of
// its own, so the pad stays a dispatch without the flag; an elementwise
// consumer would take the pad into its dispatch as the anchor of an
// epilogue, which --fuse-pad leaves alone). The interior starts at byte
// 12: the producer is bound from byte 0 of the target and writes at
// element offset 3.
const char* kConstantPad = R"(
"func.func"() ({
^bb0(%x: tensor<1x10xf32>):
  %a = "tensor.mul"(%x, %x) : (tensor<1x10xf32>, tensor<1x10xf32>) -> tensor<1x10xf32>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [0, 3, 0, 5], value = 3.5 : f64} : (tensor<1x10xf32>) -> tensor<1x18xf32>
  %s = "tensor.reduce"(%y) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x18xf32>) -> tensor<1x1xf32>
  "func.return"(%y, %s) : (tensor<1x18xf32>, tensor<1x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, ConstantPadReturnedAndRead) {
  std::vector<float> x = Ramp(10, 0.75f, -3);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kConstantPad, fuse, {F32({1, 10}, x)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 2u);
    std::vector<float> y = Values(r.out[0]), s = Values(r.out[1]);
    ASSERT_EQ(y.size(), 18u);
    ASSERT_EQ(s.size(), 1u);
    float sum = 0;  // multiples of 1/16 below 2^8: exact in any order
    for (int i = 0; i < 18; ++i) {
      const float want = i >= 3 && i < 13 ? x[i - 3] * x[i - 3] : 3.5f;
      EXPECT_EQ(y[i], want) << "element " << i;
      sum += want;
    }
    EXPECT_EQ(s[0], sum);
    EXPECT_EQ(r.delta.dispatches, fuse ? 2u : 3u) << "mul and reduce; the pad dispatch goes";
    EXPECT_EQ(r.delta.fills, fuse ? 2u : 0u);
    EXPECT_EQ(r.delta.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// H/W padding of NCHW ([1,2,3,3] -> [1,2,5,5], value 3.5): the interior
// rows are strided in the target. With --fuse-pad: one fill of the 200
// bytes, then neg writes element (c,h,w) at 6 + c*25 + h*5 + w.
const char* kStridedPad = R"(
"func.func"() ({
^bb0(%x: tensor<1x2x3x3xf32>):
  %a = "tensor.neg"(%x) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 3.5 : f64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  "func.return"(%y) : (tensor<1x2x5x5xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, StridedInteriorIsPlaced) {
  std::vector<float> x = Ramp(18, 0.5f, -4);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kStridedPad, fuse, {F32({1, 2, 3, 3}, x)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 1u);
    std::vector<float> y = Values(r.out[0]);
    ASSERT_EQ(y.size(), 50u);
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 5; ++w) {
          const bool inside = h >= 1 && h < 4 && w >= 1 && w < 4;
          const float want = inside ? -x[c * 9 + (h - 1) * 3 + (w - 1)] : 3.5f;
          EXPECT_EQ(y[c * 25 + h * 5 + w], want) << c << "," << h << "," << w;
        }
    EXPECT_EQ(r.delta.dispatches, fuse ? 1u : 2u) << "the pad dispatch goes";
    EXPECT_EQ(r.delta.fills, fuse ? 1u : 0u) << "one fill of the padded tensor";
    EXPECT_EQ(r.delta.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A reshape between the producer and a strided pad ([6,4] -> [1,2,3,4],
// folded away at the stream level): the strides would index the pad's
// dimensions, not the producer's, so the pad stays a dispatch (a remark
// says why) and the values are the same.
const char* kReshapedPad = R"(
"func.func"() ({
^bb0(%x: tensor<6x4xf32>):
  %a = "tensor.neg"(%x) : (tensor<6x4xf32>) -> tensor<6x4xf32>
  %r = "tensor.reshape"(%a) : (tensor<6x4xf32>) -> tensor<1x2x3x4xf32>
  %y = "tensor.pad"(%r) {mode = "constant", pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 0.0 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x5x6xf32>
  "func.return"(%y) : (tensor<1x2x5x6xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, ReshapedProducerIsLeftAlone) {
  std::vector<float> x = Ramp(24, 0.5f, -6);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kReshapedPad, fuse, {F32({6, 4}, x)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 1u);
    std::vector<float> y = Values(r.out[0]);
    ASSERT_EQ(y.size(), 60u);
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 6; ++w) {
          const bool inside = h >= 1 && h < 4 && w >= 1 && w < 5;
          const float want = inside ? -x[c * 12 + (h - 1) * 4 + (w - 1)] : 0.0f;
          EXPECT_EQ(y[c * 30 + h * 6 + w], want) << c << "," << h << "," << w;
        }
    EXPECT_EQ(r.delta.dispatches, 2u);
    EXPECT_EQ(r.delta.fills, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The barriers around a strided placement, read back as the
// VkBufferMemoryBarriers the Vulkan HAL records: [1,2,3,3] padded by 1 on
// H and W (3.5, 200 bytes) then summed by a reduce. The fill writes the
// whole target; the producer's binding is its hull (elements 6 to 43:
// bytes [24, 176)) from the 256-byte boundary before it, so [0, 176) of
// the target. One barrier over the fill's 200 bytes before the producer
// (write after write), one over exactly the producer's 176 bound bytes
// before the reduce (its read of the border after the fill is ordered by
// the first), then the host-read barrier over the sum's 4 bytes.
const char* kStridedPadSummed = R"(
"func.func"() ({
^bb0(%x: tensor<1x2x3x3xf32>):
  %a = "tensor.neg"(%x) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 3.5 : f64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  %s = "tensor.reduce"(%y) {axes = [0, 1, 2, 3], keepdims = true, kind = "sum"} : (tensor<1x2x5x5xf32>) -> tensor<1x1x1x1xf32>
  "func.return"(%s) : (tensor<1x1x1x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

struct Barrier {
  VkBuffer buffer;
  VkDeviceSize offset, size;
};

void ObserveBarriers(void* user, const VkBufferMemoryBarrier* barriers, uint32_t count) {
  auto* calls = static_cast<std::vector<std::vector<Barrier>>*>(user);
  calls->emplace_back();
  for (uint32_t i = 0; i < count; ++i) calls->back().push_back({barriers[i].buffer, barriers[i].offset, barriers[i].size});
}

TEST(FusePadTest, StridedPlacementBarriersCoverTheFillThenTheHull) {
  std::vector<float> x = Ramp(18, 0.5f, -4);
  std::vector<std::vector<Barrier>> calls;
  hal::vulkan::SetBufferBarrierObserverForTesting(ObserveBarriers, &calls);
  Compiled r = CompileAndInvoke(kStridedPadSummed, true, {F32({1, 2, 3, 3}, x)});
  hal::vulkan::SetBufferBarrierObserverForTesting(nullptr, nullptr);
  ASSERT_EQ(r.error, "");
  ASSERT_EQ(r.out.size(), 1u);
  float sum = 3.5f * 32;  // 50 elements, 18 interior; multiples of 1/2: exact in any order
  for (float v : x) sum -= v;
  EXPECT_EQ(Values(r.out[0]), std::vector<float>{sum});
  EXPECT_EQ(r.delta.dispatches, 2u);
  EXPECT_EQ(r.delta.fills, 1u);
  ASSERT_EQ(calls.size(), 3u);
  ASSERT_EQ(calls[0].size(), 1u);
  ASSERT_EQ(calls[1].size(), 1u);
  EXPECT_EQ(calls[0][0].size, 200u) << "the fill's bytes, before the producer";
  EXPECT_EQ(calls[1][0].buffer, calls[0][0].buffer);
  EXPECT_EQ(calls[1][0].offset, calls[0][0].offset) << "the target starts 256-aligned: the hull's binding too";
  EXPECT_EQ(calls[1][0].size, 176u) << "the producer's bound hull, before the reduce";
  ASSERT_EQ(calls[2].size(), 1u);
  EXPECT_EQ(calls[2][0].size, 4u) << "the host reads the sum";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A strided pad whose result a consumed argument could hold unplaced (%b
// is read by the reduce after the producer, before the pad): placed anyway
// (a strided update has no copy to keep; the result takes storage of its
// own), and the values stay right.
const char* kBesideConsumed = R"(
"func.func"() ({
^bb0(%b: tensor<1x2x5x5xf32>, %x: tensor<1x2x3x3xf32>):
  %n = "tensor.neg"(%x) : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %z = "tensor.reduce"(%b) {axes = [2, 3], keepdims = true, kind = "sum"} : (tensor<1x2x5x5xf32>) -> tensor<1x2x1x1xf32>
  %y = "tensor.pad"(%n) {mode = "constant", pads = [0, 0, 1, 1, 0, 0, 1, 1], value = 3.5 : f64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  "func.return"(%y, %z) : (tensor<1x2x5x5xf32>, tensor<1x2x1x1xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume", "borrow"]} : () -> ()
)";

TEST(FusePadTest, StridedPlacementBesideAConsumedArgument) {
  std::vector<float> b = Ramp(50, 0.5f, -10), x = Ramp(18, 0.25f, -2);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kBesideConsumed, fuse, {F32({1, 2, 5, 5}, b), F32({1, 2, 3, 3}, x)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 2u);
    std::vector<float> y = Values(r.out[0]), z = Values(r.out[1]);
    ASSERT_EQ(y.size(), 50u);
    ASSERT_EQ(z.size(), 2u);
    for (int c = 0; c < 2; ++c) {
      float sum = 0;  // multiples of 1/2 below 2^8: exact in any order
      for (int i = 0; i < 25; ++i) sum += b[c * 25 + i];
      EXPECT_EQ(z[c], sum) << c;
      for (int h = 0; h < 5; ++h)
        for (int w = 0; w < 5; ++w) {
          const bool inside = h >= 1 && h < 4 && w >= 1 && w < 4;
          const float want = inside ? -x[c * 9 + (h - 1) * 3 + (w - 1)] : 3.5f;
          EXPECT_EQ(y[c * 25 + h * 5 + w], want) << c << "," << h << "," << w;
        }
    }
    EXPECT_EQ(r.delta.dispatches, fuse ? 2u : 3u);
    EXPECT_EQ(r.delta.fills, fuse ? 1u : 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The anchor schedules write through the strided mapping too: a 1x1
// conv2d (weights [[1, 2], [-1, 3]], no bias) padded by zeros on H and W
// then read by a reduce (sum over H and W: border zeros add nothing), a
// matmul [4,8] x [8,4] padded by 1 on both dimensions with 0.5, and a
// reduce (sum of x over W, [1,2,3,1]) padded by 1 on W with -1. All values
// are small integers or halves: exact in any summation order.
const char* kAnchorProducers = R"(
"func.func"() ({
^bb0(%x: tensor<1x2x3x4xf32>, %a: tensor<4x8xf32>, %b: tensor<8x4xf32>):
  %w = "tensor.constant"() {value = dense<[1.0, 2.0, -1.0, 3.0]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %c = "tensor.conv2d"(%x, %w) {dilations = [1, 1], group = 1 : i64, pads = [0, 0, 0, 0], strides = [1, 1]} : (tensor<1x2x3x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x4xf32>
  %y = "tensor.pad"(%c) {mode = "constant", pads = [0, 0, 2, 1, 0, 0, 1, 2], value = 0.0 : f64} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x7xf32>
  %s = "tensor.reduce"(%y) {axes = [2, 3], keepdims = true, kind = "sum"} : (tensor<1x2x6x7xf32>) -> tensor<1x2x1x1xf32>
  %m = "tensor.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %z = "tensor.pad"(%m) {mode = "constant", pads = [1, 1, 1, 1], value = 0.5 : f64} : (tensor<4x4xf32>) -> tensor<6x6xf32>
  %q = "tensor.reduce"(%x) {axes = [3], keepdims = true, kind = "sum"} : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x1xf32>
  %v = "tensor.pad"(%q) {mode = "constant", pads = [0, 0, 0, 1, 0, 0, 0, 1], value = -1.0 : f64} : (tensor<1x2x3x1xf32>) -> tensor<1x2x3x3xf32>
  "func.return"(%y, %s, %z, %v) : (tensor<1x2x6x7xf32>, tensor<1x2x1x1xf32>, tensor<6x6xf32>, tensor<1x2x3x3xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, ConvMatmulAndReduceWriteStrided) {
  std::vector<float> x = Ramp(24, 1.0f, -7), a = Ramp(32, 0.5f, -4), b = Ramp(32, 1.0f, -16);
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kAnchorProducers, fuse, {F32({1, 2, 3, 4}, x), F32({4, 8}, a), F32({8, 4}, b)});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 4u);
    std::vector<float> y = Values(r.out[0]), s = Values(r.out[1]), z = Values(r.out[2]), v = Values(r.out[3]);
    ASSERT_EQ(v.size(), 18u);
    for (int c = 0; c < 2; ++c)
      for (int h = 0; h < 3; ++h)
        for (int j = 0; j < 3; ++j) {
          float want = -1.0f;
          if (j == 1) {
            want = 0;
            for (int k = 0; k < 4; ++k) want += x[c * 12 + h * 4 + k];
          }
          EXPECT_EQ(v[c * 9 + h * 3 + j], want) << "reduce " << c << "," << h << "," << j;
        }
    ASSERT_EQ(y.size(), 84u);
    ASSERT_EQ(s.size(), 2u);
    ASSERT_EQ(z.size(), 36u);
    const float w[2][2] = {{1, 2}, {-1, 3}};
    for (int o = 0; o < 2; ++o) {
      float sum = 0;
      for (int h = 0; h < 6; ++h)
        for (int v = 0; v < 7; ++v) {
          const bool inside = h >= 2 && h < 5 && v >= 1 && v < 5;
          float want = 0;
          if (inside)
            for (int i = 0; i < 2; ++i) want += w[o][i] * x[i * 12 + (h - 2) * 4 + (v - 1)];
          EXPECT_EQ(y[o * 42 + h * 7 + v], want) << "conv " << o << "," << h << "," << v;
          sum += want;
        }
      EXPECT_EQ(s[o], sum) << "reduce " << o;
    }
    for (int i = 0; i < 6; ++i)
      for (int j = 0; j < 6; ++j) {
        float want = 0.5f;
        if (i >= 1 && i < 5 && j >= 1 && j < 5) {
          want = 0;
          for (int k = 0; k < 8; ++k) want += a[(i - 1) * 8 + k] * b[k * 4 + (j - 1)];
        }
        EXPECT_EQ(z[i * 6 + j], want) << "matmul " << i << "," << j;
      }
    EXPECT_EQ(r.delta.dispatches, fuse ? 4u : 7u) << "conv, two reduces, matmul; the three pad dispatches go";
    EXPECT_EQ(r.delta.fills, fuse ? 3u : 0u);
    EXPECT_EQ(r.delta.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Strided i8 and f16: [1,2,2,3] padded on W by 1 before and 2 after (i8,
// value -3, pattern 0xFDFDFDFD, 2x2x6 = 24 bytes) and [1,2,2,3] f16 padded
// on H by 1 after and W by 1 before (value 1.5, [1,2,3,4] = 48 bytes).
const char* kStridedSmallTypes = R"(
"func.func"() ({
^bb0(%x: tensor<1x2x2x3xi8>, %h: tensor<1x2x2x3xf16>):
  %a = "tensor.add"(%x, %x) : (tensor<1x2x2x3xi8>, tensor<1x2x2x3xi8>) -> tensor<1x2x2x3xi8>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [0, 0, 0, 1, 0, 0, 0, 2], value = -3.0 : f64} : (tensor<1x2x2x3xi8>) -> tensor<1x2x2x6xi8>
  %b = "tensor.neg"(%h) : (tensor<1x2x2x3xf16>) -> tensor<1x2x2x3xf16>
  %z = "tensor.pad"(%b) {mode = "constant", pads = [0, 0, 0, 1, 0, 0, 1, 0], value = 1.5 : f64} : (tensor<1x2x2x3xf16>) -> tensor<1x2x3x4xf16>
  "func.return"(%y, %z) : (tensor<1x2x2x6xi8>, tensor<1x2x3x4xf16>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, StridedI8AndF16) {
  HostTensor x, h;
  x.dtype = KILN_DTYPE_I8;
  x.shape = {1, 2, 2, 3};
  for (int i = 0; i < 12; ++i) x.data.push_back(static_cast<uint8_t>(static_cast<int8_t>(i * 5 - 27)));
  h.dtype = KILN_DTYPE_F16;
  h.shape = {1, 2, 2, 3};
  for (int i = 0; i < 12; ++i) {
    const uint16_t v = FloatToHalf(static_cast<float>(i) * 0.75f - 4.0f);  // exact in f16
    h.data.push_back(static_cast<uint8_t>(v & 0xFF));
    h.data.push_back(static_cast<uint8_t>(v >> 8));
  }
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kStridedSmallTypes, fuse, {x, h});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 2u);
    ASSERT_EQ(r.out[0].element_count(), 24);
    ASSERT_EQ(r.out[1].element_count(), 24);
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 6; ++j) {
          const double want = j >= 1 && j < 4 ? 2.0 * x.At(c * 6 + i * 3 + j - 1) : -3.0;  // |2x| <= 56: no wrap
          EXPECT_EQ(r.out[0].At(c * 12 + i * 6 + j), want) << "i8 " << c << "," << i << "," << j;
        }
    for (int c = 0; c < 2; ++c)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
          const double want = i < 2 && j >= 1 ? -h.At(c * 6 + i * 3 + j - 1) : 1.5;
          EXPECT_EQ(r.out[1].At(c * 12 + i * 4 + j), want) << "f16 " << c << "," << i << "," << j;
        }
    EXPECT_EQ(r.delta.dispatches, fuse ? 2u : 4u);
    EXPECT_EQ(r.delta.fills, fuse ? 2u : 0u);
    EXPECT_EQ(r.delta.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The fill pattern is the pad value's element bytes repeated: an i8 pad
// of -3 (pattern 0xFDFDFDFD; interior bytes [4, 12) of 16) and an f16 pad
// of 1.5 (0x3E00 twice; interior bytes [4, 16) of 20).
const char* kSmallTypes = R"(
"func.func"() ({
^bb0(%x: tensor<1x8xi8>, %h: tensor<1x6xf16>):
  %a = "tensor.add"(%x, %x) : (tensor<1x8xi8>, tensor<1x8xi8>) -> tensor<1x8xi8>
  %y = "tensor.pad"(%a) {mode = "constant", pads = [0, 4, 0, 4], value = -3.0 : f64} : (tensor<1x8xi8>) -> tensor<1x16xi8>
  %b = "tensor.neg"(%h) : (tensor<1x6xf16>) -> tensor<1x6xf16>
  %z = "tensor.pad"(%b) {mode = "constant", pads = [0, 2, 0, 2], value = 1.5 : f64} : (tensor<1x6xf16>) -> tensor<1x10xf16>
  "func.return"(%y, %z) : (tensor<1x16xi8>, tensor<1x10xf16>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(FusePadTest, I8AndF16Patterns) {
  HostTensor x, h;
  x.dtype = KILN_DTYPE_I8;
  x.shape = {1, 8};
  for (int i = 0; i < 8; ++i) x.data.push_back(static_cast<uint8_t>(static_cast<int8_t>(i * 7 - 25)));
  h.dtype = KILN_DTYPE_F16;
  h.shape = {1, 6};
  for (int i = 0; i < 6; ++i) {
    const uint16_t v = FloatToHalf(static_cast<float>(i) * 0.75f - 2.0f);  // exact in f16
    h.data.push_back(static_cast<uint8_t>(v & 0xFF));
    h.data.push_back(static_cast<uint8_t>(v >> 8));
  }
  for (bool fuse : {false, true}) {
    SCOPED_TRACE(fuse ? "--fuse-pad" : "default");
    Compiled r = CompileAndInvoke(kSmallTypes, fuse, {x, h});
    ASSERT_EQ(r.error, "");
    ASSERT_EQ(r.out.size(), 2u);
    ASSERT_EQ(r.out[0].element_count(), 16);
    ASSERT_EQ(r.out[1].element_count(), 10);
    for (int i = 0; i < 16; ++i) {
      const double want = i >= 4 && i < 12 ? 2.0 * x.At(i - 4) : -3.0;  // |2x| <= 50: no i8 wrap
      EXPECT_EQ(r.out[0].At(i), want) << "i8 element " << i;
    }
    for (int i = 0; i < 10; ++i) {
      const double want = i >= 2 && i < 8 ? -h.At(i - 2) : 1.5;
      EXPECT_EQ(r.out[1].At(i), want) << "f16 element " << i;
    }
    EXPECT_EQ(r.delta.dispatches, fuse ? 2u : 4u);
    EXPECT_EQ(r.delta.fills, fuse ? 4u : 0u);
    EXPECT_EQ(r.delta.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
