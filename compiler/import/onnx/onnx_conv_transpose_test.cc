// Tests for the ONNX ConvTranspose importer (onnx_conv_transpose.cc): values
// derived by hand, checked through the host interpreter (const_eval.h, whose
// conv_transpose kernel is a scatter independent of codegen's gather); the
// pads and shapes ONNX leaves implicit; errors naming the node. The ONNX node
// tests (test_convtranspose_*) are checked against their data by
// onnx_importer_test.cc (folded on the host) and tests/e2e/onnx_node_test.cc
// (on Vulkan).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <string>
#include <vector>

#include "compiler/import/onnx/const_eval.h"
#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/verifier.h"

namespace kiln::onnx_import {
namespace {

using Shape = std::vector<int64_t>;
constexpr int kF = onnx::TensorProto_DataType_FLOAT;

// A graph with one ConvTranspose node "ct": Y = ConvTranspose(X, W[, B]);
// X is a graph input, W and B initializers.
struct CtModel {
  onnx::ModelProto m;
  onnx::NodeProto* node;
  CtModel(const Shape& x, const Shape& w, const std::vector<float>& wv, const std::vector<float>& bias = {}) {
    m.set_ir_version(7);
    m.add_opset_import()->set_version(11);
    auto* g = m.mutable_graph();
    g->set_name("ct");
    auto* in = g->add_input();
    in->set_name("X");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kF);
    for (int64_t d : x) tt->mutable_shape()->add_dim()->set_dim_value(d);
    Init("W", w, wv);
    node = g->add_node();
    node->set_op_type("ConvTranspose");
    node->set_name("ct");
    node->add_input("X");
    node->add_input("W");
    if (!bias.empty()) {
      Init("B", {static_cast<int64_t>(bias.size())}, bias);
      node->add_input("B");
    }
    node->add_output("Y");
    g->add_output()->set_name("Y");
  }
  void Init(const std::string& name, const Shape& dims, const std::vector<float>& v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kF);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
  }
  CtModel& Ints(const std::string& name, const Shape& v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }
  CtModel& Int(const std::string& name, int64_t v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
    return *this;
  }
  CtModel& Str(const std::string& name, const std::string& v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
    return *this;
  }
  StatusOr<std::unique_ptr<ir::Module>> Import() const {
    std::string bytes = m.SerializeAsString();
    ImportOptions o;
    o.onnx_checker = false;  // hand-built: no graph output types
    return ImportOnnxBytes(bytes.data(), bytes.size(), o);
  }
};

ir::Operation* TheOp(ir::Module& m) {
  for (ir::Operation* f : m.functions())
    for (auto& op : f->region(0)->block(0)->ops())
      if (op->is("tensor.conv_transpose")) return op.get();
  return nullptr;
}

// Imports, verifies, and runs the host interpreter (InterpretFunction) on X = `x`.
std::vector<double> Interpret(const CtModel& cm, const Shape& xshape, const std::vector<double>& x, Shape* yshape) {
  auto r = cm.Import();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  Status v = ir::Verify(*r.value());
  EXPECT_TRUE(v.ok()) << v.ToString();
  ir::Operation* func = r.value()->functions()[0];
  auto out = InterpretFunction(func, {MakeDenseFromDoubles(ir::Type::Tensor(DType::kF32, xshape), x)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const ir::DenseElements& y = out.value()[0];
  *yshape = y.type.shape;
  std::vector<double> r2;
  for (int64_t i = 0; i < y.type.num_elements(); ++i) r2.push_back(ReadElementAsDouble(y, i));
  return r2;
}

TEST(OnnxConvTranspose, OneDimHandDerived) {
  // X = [1, 2, 3], W = [1, 10, 100], stride 2: input i lands at 2i + k.
  //   i=0: o0 += 1,  o1 += 10, o2 += 100
  //   i=1: o2 += 2,  o3 += 20, o4 += 200
  //   i=2: o4 += 3,  o5 += 30, o6 += 300
  // Unpadded (2*(3-1) + 3 = 7): [1, 10, 102, 20, 203, 30, 300].
  // pads [1, 0] drop o0; output_padding [1] appends o7, which no tap
  // reaches; bias 0.5 everywhere: 6 - 0 + 1 = 7 outputs.
  CtModel cm({1, 1, 3}, {1, 1, 3}, {1, 10, 100}, {0.5f});
  cm.Ints("strides", {2}).Ints("pads", {1, 0}).Ints("output_padding", {1});
  Shape ys;
  std::vector<double> y = Interpret(cm, {1, 1, 3}, {1, 2, 3}, &ys);
  EXPECT_EQ(ys, (Shape{1, 1, 7}));
  EXPECT_EQ(y, (std::vector<double>{10.5, 102.5, 20.5, 203.5, 30.5, 300.5, 0.5}));
}

TEST(OnnxConvTranspose, GroupedSameUpperAndLowerHandDerived) {
  // group 2, one channel per group: X = [1 | 2] (1x1 each),
  // W[0] = [[1, 2], [3, 4]], W[1] = [[5, 6], [7, 8]].
  // Unpadded, channel 0 = 1 * W[0], channel 1 = 2 * W[1] = [[10, 12], [14, 16]].
  const std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8};
  Shape ys;
  CtModel plain({1, 2, 1, 1}, {2, 1, 2, 2}, w);
  plain.Int("group", 2);
  EXPECT_EQ(Interpret(plain, {1, 2, 1, 1}, {1, 2}, &ys), (std::vector<double>{1, 2, 3, 4, 10, 12, 14, 16}));
  EXPECT_EQ(ys, (Shape{1, 2, 2, 2}));
  // SAME_*: output 1x1 (input * stride); the total pad 1 per dim goes to the
  // end for SAME_UPPER (keeps [0][0]) and to the begin for SAME_LOWER
  // (keeps [1][1]).
  CtModel upper({1, 2, 1, 1}, {2, 1, 2, 2}, w);
  upper.Int("group", 2).Str("auto_pad", "SAME_UPPER");
  EXPECT_EQ(Interpret(upper, {1, 2, 1, 1}, {1, 2}, &ys), (std::vector<double>{1, 10}));
  EXPECT_EQ(ys, (Shape{1, 2, 1, 1}));
  CtModel lower({1, 2, 1, 1}, {2, 1, 2, 2}, w);
  lower.Int("group", 2).Str("auto_pad", "SAME_LOWER");
  EXPECT_EQ(Interpret(lower, {1, 2, 1, 1}, {1, 2}, &ys), (std::vector<double>{4, 16}));
}

TEST(OnnxConvTranspose, OutputShapeGivesPads) {
  // X 3x3, kernel 3x3, strides [3, 2]: unpadded H = 3*2 + 3 = 9, W = 2*2 + 3 = 7.
  // output_shape [8, 6]: total pads 1 and 1; NOTSET puts the odd one first.
  std::vector<float> w(2 * 9, 1.0f);
  CtModel a({1, 1, 3, 3}, {1, 2, 3, 3}, w);
  a.Ints("strides", {3, 2}).Ints("output_shape", {8, 6});
  auto r = a.Import();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ir::Operation* op = TheOp(*r.value());
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->ints_attr("pads"), (Shape{1, 1, 0, 0}));
  EXPECT_EQ(op->result()->type().shape, (Shape{1, 2, 8, 6}));
  // The same with SAME_UPPER: the odd pad goes last.
  CtModel b({1, 1, 3, 3}, {1, 2, 3, 3}, w);
  b.Ints("strides", {3, 2}).Ints("output_shape", {1, 2, 8, 6}).Str("auto_pad", "SAME_UPPER");
  r = b.Import();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(TheOp(*r.value())->ints_attr("pads"), (Shape{0, 0, 1, 1}));
  // Larger than unpadded ([10, 8]): no pads, the surplus is output_padding.
  CtModel c({1, 1, 3, 3}, {1, 2, 3, 3}, w);
  c.Ints("strides", {3, 2}).Ints("output_shape", {10, 8}).Ints("kernel_shape", {3, 3});
  r = c.Import();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  op = TheOp(*r.value());
  EXPECT_EQ(op->ints_attr("pads"), (Shape{0, 0, 0, 0}));
  EXPECT_EQ(op->ints_attr("output_padding"), (Shape{1, 1}));
  EXPECT_EQ(op->result()->type().shape, (Shape{1, 2, 10, 8}));
  EXPECT_TRUE(ir::Verify(*r.value()).ok());
}

TEST(OnnxConvTranspose, ThreeDimsAndValid) {
  // 2x2x2 input, 2x2x2 kernel, stride 2: each input fills its own 2x2x2 block.
  std::vector<float> w(8);
  for (int i = 0; i < 8; ++i) w[i] = static_cast<float>(i);
  CtModel cm({1, 1, 2, 2, 2}, {1, 1, 2, 2, 2}, w);
  cm.Ints("strides", {2, 2, 2}).Str("auto_pad", "VALID");
  Shape ys;
  std::vector<double> y = Interpret(cm, {1, 1, 2, 2, 2}, {1, 0, 0, 0, 0, 0, 0, 10}, &ys);
  ASSERT_EQ(ys, (Shape{1, 1, 4, 4, 4}));
  // y[0, 0, d, h, w] = x[d/2, h/2, w/2] * w[d%2, h%2, w%2].
  EXPECT_EQ(y[0 * 16 + 1 * 4 + 1], 3);        // x[0,0,0] = 1 * w[0,1,1] = 3
  EXPECT_EQ(y[3 * 16 + 3 * 4 + 2], 10 * 6);   // x[1,1,1] = 10 * w[1,1,0] = 6
  EXPECT_EQ(y[2 * 16 + 0 * 4 + 0], 0);        // x[1,0,0] = 0
}

TEST(OnnxConvTranspose, ErrorsNameTheNode) {
  std::vector<float> w(3 * 2 * 4, 1.0f);
  // X has 4 channels, W expects 3.
  CtModel mismatch({1, 4, 5, 5}, {3, 2, 2, 2}, w);
  auto r = mismatch.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("node 'ct' (ConvTranspose): channels mismatch"), std::string::npos)
      << r.status().message();
  CtModel kernel({1, 3, 5, 5}, {3, 2, 2, 2}, w);
  kernel.Ints("kernel_shape", {3, 3});
  r = kernel.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'ct' (ConvTranspose): kernel_shape [3,3] disagrees"),
            std::string::npos)
      << r.status().message();
  CtModel bias({1, 3, 5, 5}, {3, 2, 2, 2}, w, {0, 0, 0});  // M = 2
  r = bias.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bias must be [2]"), std::string::npos) << r.status().message();
  CtModel pad({1, 3, 2, 2}, {3, 2, 2, 2}, w);  // unpadded 3x3; pads 2+2 leave -1
  pad.Ints("pads", {2, 0, 2, 0});
  r = pad.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("is not positive"), std::string::npos) << r.status().message();
  CtModel four_d({1, 1, 2, 2, 2, 2}, {1, 1, 1, 1, 1, 1}, {1});
  r = four_d.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("4 spatial dims is not supported"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace kiln::onnx_import
