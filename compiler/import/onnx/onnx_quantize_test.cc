// Tests for the ONNX quantization ops (onnx_quantize.cc) against hand-derived
// values, through the host interpreter. The ONNX node tests
// (test_quantizelinear*, test_qlinear*, test_*integer*) check them on Vulkan
// (tests/e2e/onnx_node_test.cc).
#include <gtest/gtest.h>

#include "compiler/import/onnx/onnx_test_model.h"
#include "compiler/ir/printer.h"

namespace kiln::onnx_import::testing {
namespace {

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kU8 = onnx::TensorProto_DataType_UINT8;
constexpr int kI8 = onnx::TensorProto_DataType_INT8;
constexpr int kI32 = onnx::TensorProto_DataType_INT32;

TEST(OnnxQuantize, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  // x / 2 = [0.5, 1.5, 2.5, -3, 300] → round half even [0, 2, 2, -3, 300],
  // + zp 10 → [10, 12, 12, 7, 310] → saturated to u8: [10, 12, 12, 7, 255].
  NodeModel m("QuantizeLinear", {{kF, {5}, {1, 3, 5, -6, 600}}, {kF, {}, {2}}, {kU8, {}, {10}}}, 1);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.dtype, DType::kU8);
  EXPECT_EQ(Values(out[0]), (std::vector<double>{10, 12, 12, 7, 255}));
}

TEST(OnnxQuantize, QuantizeLinearPerAxisInt8) {
  // x [2, 2], axis 0: row 0 / 1 + 0, row 1 / 4 - 1: [[-200, 7], [-2, 8]] →
  // [[-128 (saturated), 7], [-0.5 → -0 - 1 = -1, 2 - 1 = 1]].
  NodeModel m("QuantizeLinear",
              {{kF, {2, 2}, {-200, 7, -2, 8}}, {kF, {2}, {1, 4}}, {kI8, {2}, {0, -1}}}, 1);
  m.Int("axis", 0);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-128, 7, -1, 1}));
}

TEST(OnnxQuantize, DequantizeLinearPerAxis) {
  // axis 1: column 0 (x - 1) * 0.5, column 1 (x - 3) * 2.
  NodeModel m("DequantizeLinear", {{kU8, {2, 2}, {1, 3, 5, 0}}, {kF, {2}, {0.5, 2}}, {kU8, {2}, {1, 3}}}, 1);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 0, 2, -6}));
}

TEST(OnnxQuantize, DynamicQuantizeLinear) {
  // min(0, -1) = -1, max(0, 1.55) = 1.55: scale = 2.55 / 255 = 0.01,
  // zp = round(1 / 0.01) = 100; y = round(x / 0.01) + 100.
  NodeModel m("DynamicQuantizeLinear", {{kF, {3}, {-1, 0.5, 1.55}}}, 3);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 3u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{0, 150, 255}));
  EXPECT_NEAR(Values(out[1])[0], 0.01, 1e-8);
  EXPECT_EQ(Values(out[2]), (std::vector<double>{100}));
}

TEST(OnnxQuantize, MatMulIntegerPerRowZeroPoint) {
  // A - [1; 2] (per row) = [[1, 2], [-2, 0]]; B - 1 = [[0, 1], [2, 3]]:
  // [[4, 7], [0, -2]].
  NodeModel m("MatMulInteger",
              {{kU8, {2, 2}, {2, 3, 0, 2}}, {kU8, {2, 2}, {1, 2, 3, 4}}, {kU8, {2}, {1, 2}}, {kU8, {}, {1}}}, 1);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.dtype, DType::kI32);
  EXPECT_EQ(Values(out[0]), (std::vector<double>{4, 7, 0, -2}));
}

TEST(OnnxQuantize, ConvIntegerPadsTheShiftedInputWithZero) {
  // x - 5 = [[-4, 1], [0, 2]] (2x2), w = 1 (1x1 kernel replaced by 2x2 ones),
  // pads 1: the padding is 0 after the zero-point shift, so each output is
  // the sum of the shifted window: corners -4, 1, 0, 2; edges -4+1, -4+0, 1+2,
  // 0+2; centre -1.
  NodeModel m("ConvInteger",
              {{kU8, {1, 1, 2, 2}, {1, 6, 5, 7}}, {kU8, {1, 1, 2, 2}, {1, 1, 1, 1}}, {kU8, {}, {5}}}, 1);
  m.Ints("pads", {1, 1, 1, 1});
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(out[0].type.shape, (std::vector<int64_t>{1, 1, 3, 3}));
  EXPECT_EQ(Values(out[0]), (std::vector<double>{-4, -3, 1, -4, -1, 3, 0, 2, 2}));
}

TEST(OnnxQuantize, QLinearConvGroupedWithBias) {
  // group 2, 1x1 kernels: channel c = (x_c - 0) * w_c + B_c, then * (1 * 1 /
  // 2) + 1: channel 0: (4 * 3 + 2) / 2 + 1 = 8; channel 1: (5 * 1 - 2) / 2 =
  // 1.5 → 2 (half to even) + 1 = 3.
  NodeModel m("QLinearConv",
              {{kU8, {1, 2, 1, 1}, {4, 5}}, {kF, {}, {1}}, {kU8, {}, {0}}, {kI8, {2, 1, 1, 1}, {3, 1}},
               {kF, {}, {1}}, {kI8, {}, {0}}, {kF, {}, {2}}, {kU8, {}, {1}}, {kI32, {2}, {2, -2}}},
              1);
  m.Int("group", 2);
  std::string err;
  auto out = m.Run(&err);
  ASSERT_EQ(out.size(), 1u) << err;
  EXPECT_EQ(Values(out[0]), (std::vector<double>{8, 3}));
}

TEST(OnnxQuantize, UnsupportedIsAClearError) {
  NodeModel m("QuantizeLinear", {{kF, {4}, {1, 2, 3, 4}}, {kF, {}, {1}}}, 1);
  m.Int("block_size", 2);
  auto r = m.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'n' (QuantizeLinear): block quantization"), std::string::npos)
      << r.status().ToString();
}

// A QDQ convolution (onnx_qdq_conv.cc): DQ(x u8) -> Conv(DQ(w i8 per
// channel), DQ(b i32)) -> Q(u8). x - zp = [0, 10]; channel 0: 3 * x + 4 =
// [4, 34], times (0.5 * 0.25) / 0.25 = 0.5 -> [2, 17] + 100; channel 1:
// -4 * x - 2 = [-2, -42], times (0.5 * 0.5) / 0.25 = 1 -> [-2, -42] + 100.
// With the bias scale s_x * s_w it runs on the integers (the requantization
// multipliers [0.5, 1] appear as one constant); with another bias scale
// (0.3 for channel 1: not QLinearConv's) it must not: DequantizeLinear's f32
// path gives (-0.6 + [0, -10]) / 0.25 = [-2.4, -42.4] -> the same codes.
onnx::ModelProto QdqConvModel(float bias_scale1) {
  onnx::ModelProto m;
  m.set_ir_version(9);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto init = [&](const char* name, int dtype, std::vector<int64_t> dims, std::vector<double> v) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(dtype);
    for (int64_t d : dims) t->add_dims(d);
    for (double x : v) {
      if (dtype == kF) t->add_float_data(static_cast<float>(x));
      else t->add_int32_data(static_cast<int32_t>(x));
    }
  };
  auto node = [&](const char* op, std::vector<std::string> ins, const char* out, int64_t axis = -100) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    if (axis != -100) {
      auto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto_AttributeType_INT);
      a->set_i(axis);
    }
  };
  auto* in = g->add_input();
  in->set_name("xq");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(kU8);
  for (int64_t d : {1, 1, 1, 2}) in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  init("sx", kF, {}, {0.5});
  init("zx", kU8, {}, {10});
  init("wq", kI8, {2, 1, 1, 1}, {3, -4});
  init("sw", kF, {2}, {0.25, 0.5});
  init("zw", kI8, {2}, {0, 0});
  init("bq", kI32, {2}, {4, -2});
  init("sb", kF, {2}, {0.125, bias_scale1});
  init("sy", kF, {}, {0.25});
  init("zy", kU8, {}, {100});
  node("DequantizeLinear", {"xq", "sx", "zx"}, "x");
  node("DequantizeLinear", {"wq", "sw", "zw"}, "w", 0);
  node("DequantizeLinear", {"bq", "sb"}, "b", 0);
  node("Conv", {"x", "w", "b"}, "c");
  node("QuantizeLinear", {"c", "sy", "zy"}, "y");
  g->add_output()->set_name("y");
  return m;
}

TEST(OnnxQuantize, QdqConvRunsOnItsIntegersOnlyWithQLinearConvsBiasScale) {
  for (float sb1 : {0.25f, 0.3f}) {
    std::string bytes = QdqConvModel(sb1).SerializeAsString();
    ImportOptions o;
    o.onnx_checker = false;
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_TRUE(ir::Verify(*r.value()).ok());
    const std::string text = ir::PrintModule(*r.value());
    EXPECT_EQ(text.find("dense<[0.5, 1.0]>") != std::string::npos, sb1 == 0.25f) << "bias scale " << sb1 << "\n" << text;
    auto out = InterpretFunction(r.value()->functions()[0],
                                 {MakeDenseFromDoubles(ir::Type::Tensor(DType::kU8, {1, 1, 1, 2}), {10, 20})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(Values(out.value()[0]), (std::vector<double>{102, 117, 98, 58})) << "bias scale " << sb1;
  }
}

}  // namespace
}  // namespace kiln::onnx_import::testing
