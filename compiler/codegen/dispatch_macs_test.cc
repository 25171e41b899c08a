// DispatchMacs against hand-derived counts (one multiply-add per filter tap
// per output element; see dispatch_macs.h).
#include "compiler/codegen/dispatch_macs.h"

#include <gtest/gtest.h>

#include "compiler/codegen/codegen_test_util.h"

namespace kiln::codegen {
namespace {

using testing::DispatchBuilder;
using testing::F32;
using testing::Ints;

TEST(DispatchMacsTest, GroupedConvWithEpilogue) {
  // x [1,4,8,8], w [6,2,3,3] (group 2), stride 1, pad 1 -> y [1,6,8,8]:
  // 6*8*8 = 384 outputs, each 2*3*3 = 18 taps: 6912. The add/relu count 0.
  DispatchBuilder b({F32({1, 4, 8, 8}), F32({6, 2, 3, 3}), F32({1, 6, 1, 1})}, {F32({1, 6, 8, 8})});
  auto* cv = b.Op("tensor.conv2d", {b.arg(0), b.arg(1)}, F32({1, 6, 8, 8}),
                  {{"strides", Ints({1, 1})}, {"pads", Ints({1, 1, 1, 1})},
                   {"dilations", Ints({1, 1})}, {"group", 2}});
  auto* ad = b.Op("tensor.add", {cv, b.arg(2)}, F32({1, 6, 8, 8}));
  ir::Operation* d = b.Return({b.Op("tensor.relu", {ad}, F32({1, 6, 8, 8}))});
  EXPECT_EQ(DispatchMacs(d), 6912u);
}

TEST(DispatchMacsTest, BatchedMatmul) {
  // [2,3,5] x [5,7] -> [2,3,7]: 42 outputs * K=5 = 210.
  DispatchBuilder b({F32({2, 3, 5}), F32({5, 7})}, {F32({2, 3, 7})});
  ir::Operation* d = b.Return({b.Op("tensor.matmul", {b.arg(0), b.arg(1)}, F32({2, 3, 7}))});
  EXPECT_EQ(DispatchMacs(d), 210u);
}

TEST(DispatchMacsTest, ConvTranspose) {
  // x [1,3,4,4], w [3,2,2,2], stride 2 -> y [1,2,8,8]: each of the 48 input
  // elements feeds 2*2*2 = 8 outputs: 384 (= 128 outputs * 3 taps).
  DispatchBuilder b({F32({1, 3, 4, 4}), F32({3, 2, 2, 2})}, {F32({1, 2, 8, 8})});
  ir::Operation* d = b.Return({b.Op("tensor.conv_transpose", {b.arg(0), b.arg(1)}, F32({1, 2, 8, 8}),
                                    {{"strides", Ints({2, 2})}, {"pads", Ints({0, 0, 0, 0})},
                                     {"dilations", Ints({1, 1})}, {"output_padding", Ints({0, 0})},
                                     {"group", 1}})});
  EXPECT_EQ(DispatchMacs(d), 384u);
}

TEST(DispatchMacsTest, ElementwiseAndReductionsCountZero) {
  DispatchBuilder b({F32({4, 16}), F32({4, 16})}, {F32({4, 1})});
  auto* ad = b.Op("tensor.add", {b.arg(0), b.arg(1)}, F32({4, 16}));
  ir::Operation* d = b.Return({b.Op("tensor.reduce", {ad}, F32({4, 1}),
                                    {{"kind", ir::Attribute(std::string("sum"))},
                                     {"axes", Ints({1})}, {"keepdims", ir::Attribute(true)}})});
  EXPECT_EQ(DispatchMacs(d), 0u);
}

}  // namespace
}  // namespace kiln::codegen
