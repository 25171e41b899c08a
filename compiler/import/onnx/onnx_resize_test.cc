// Tests for ONNX Resize / Upsample import (onnx_resize.cc) and the per-axis
// taps (resize_taps.cc): hand-derived tap tables and values (the imported
// function runs on the host through const_eval.h's InterpretFunction, whose
// tensor.resize kernel is the contract codegen implements), output shapes,
// constant folding of the sizes chain, and errors naming the node.
// Device parity with ONNX Runtime is covered by ONNX's node tests
// (tests/e2e/onnx_node_test.cc).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <string>
#include <vector>

#include "compiler/import/onnx/const_eval.h"
#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/import/onnx/resize_taps.h"
#include "compiler/ir/verifier.h"

namespace kiln::onnx_import {
namespace {

using Shape = std::vector<int64_t>;
constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;
constexpr int kI32 = onnx::TensorProto_DataType_INT32;

// A one-graph model: input X, constants, nodes.
class Model {
 public:
  explicit Model(int opset) {
    m_.set_ir_version(8);
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g_ = m_.mutable_graph();
    g_->set_name("resize_test");
  }
  void Input(const std::string& name, int elem, const Shape& dims) {
    auto* tt = g_->add_input();
    tt->set_name(name);
    auto* t = tt->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void Output(const std::string& name) { g_->add_output()->set_name(name); }
  void Init(const std::string& name, int elem, const Shape& dims, const std::vector<double>& v) {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    for (int64_t d : dims) t->add_dims(d);
    for (double x : v) {
      if (elem == kF) t->add_float_data(static_cast<float>(x));
      else if (elem == kI64) t->add_int64_data(static_cast<int64_t>(x));
      else t->add_int32_data(static_cast<int32_t>(x));
    }
  }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& ins,
                        const std::string& out, const std::string& name) {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  }
  static void S(onnx::NodeProto* n, const char* k, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void I(onnx::NodeProto* n, const char* k, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void F(onnx::NodeProto* n, const char* k, float v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
  }
  static void Ints(onnx::NodeProto* n, const char* k, const Shape& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void Floats(onnx::NodeProto* n, const char* k, const std::vector<float>& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(onnx::AttributeProto_AttributeType_FLOATS);
    for (float x : v) a->add_floats(x);
  }
  StatusOr<std::unique_ptr<ir::Module>> Import() const {
    std::string b = m_.SerializeAsString();
    ImportOptions o;
    o.onnx_checker = false;  // hand-built: no graph output types
    return ImportOnnxBytes(b.data(), b.size(), o);
  }

 private:
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

ir::Operation* Main(ir::Module& m) { return m.LookupFunction("main"); }

// Imports `m` (must succeed and verify) and runs it on the host with X = x.
std::vector<double> RunHost(const Model& model, const Shape& xshape, const std::vector<double>& x,
                        Shape* yshape, int x_elem = kF) {
  auto r = model.Import();
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  ir::Module& m = *r.value();
  Status v = ir::Verify(m);
  EXPECT_TRUE(v.ok()) << v.ToString();
  DType dt = x_elem == kF ? DType::kF32 : DType::kI32;
  auto out = InterpretFunction(Main(m), {MakeDenseFromDoubles(ir::Type::Tensor(dt, xshape), x)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  const ir::DenseElements& y = out.value()[0];
  *yshape = y.type.shape;
  std::vector<double> r2;
  for (int64_t i = 0; i < y.type.num_elements(); ++i) r2.push_back(ReadElementAsDouble(y, i));
  return r2;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << "element " << i;
}

int CountOps(ir::Module& m, const std::string& name) {
  int n = 0;
  Main(m)->Walk([&](ir::Operation* op) { n += op->name() == name; });
  return n;
}

// --- taps ----------------------------------------------------------------------------

// half_pixel, linear, 2 → 4: x_original = (o + 0.5) / 2 - 0.5 = -0.25, 0.25,
// 0.75, 1.25, clamped to [0, 1]; taps (x1, w1; x2, w2) with x2 = min(x1 + 1, 1)
// and w = 1 - distance, except 0.5 and 0.5 where x1 == x2 (ONNX Runtime):
// (0, 1; 1, 0), (0, .75; 1, .25), (0, .25; 1, .75), (1, .5; 1, .5).
TEST(ResizeTaps, LinearHalfPixelUpsample) {
  ResizeAxisSpec s;
  s.mode = ResizeMode::kLinear;
  s.in_len = 2;
  s.out_len = 4;
  s.scale = 2.0f;
  s.length_resized = 4.0f;
  ResizeAxisTaps t = ComputeResizeAxisTaps(s);
  ASSERT_EQ(t.taps, 2);
  EXPECT_FALSE(t.unit_weights);
  EXPECT_EQ(t.index, (std::vector<int32_t>{0, 1, 0, 1, 0, 1, 1, 1}));
  EXPECT_EQ(t.weight, (std::vector<float>{1.0f, 0.0f, 0.75f, 0.25f, 0.25f, 0.75f, 0.5f, 0.5f}));
}

// Nearest round_prefer_floor, half_pixel, 4 → 3 (scale 0.75): x_original =
// (o + 0.5) / 0.75 - 0.5 = 0.1667, 1.5, 2.8333 → 0, 1 (1.5 prefers floor), 3.
TEST(ResizeTaps, NearestRoundPreferFloorIsAGather) {
  ResizeAxisSpec s;
  s.in_len = 4;
  s.out_len = 3;
  s.scale = 0.75f;
  s.length_resized = 3.0f;
  ResizeAxisTaps t = ComputeResizeAxisTaps(s);
  ASSERT_EQ(t.taps, 1);
  EXPECT_TRUE(t.unit_weights);
  EXPECT_EQ(t.index, (std::vector<int32_t>{0, 1, 3}));
  s.nearest = ResizeNearestMode::kRoundPreferCeil;  // 1.5 → 2
  EXPECT_EQ(ComputeResizeAxisTaps(s).index, (std::vector<int32_t>{0, 2, 3}));
}

// Resize-10 / Upsample nearest (kSimple): asymmetric x_original = o / 0.6 =
// 0, 1.667, 3.333; downsampling takes the ceiling: 0, 2, 4.
TEST(ResizeTaps, LegacyNearestDownsampleTakesCeiling) {
  ResizeAxisSpec s;
  s.coord = ResizeCoordMode::kAsymmetric;
  s.nearest = ResizeNearestMode::kSimple;
  s.in_len = 5;
  s.out_len = 3;
  s.scale = 0.6f;
  s.length_resized = 3.0f;
  EXPECT_EQ(ComputeResizeAxisTaps(s).index, (std::vector<int32_t>{0, 2, 4}));
}

// A scale-1 axis is copied; linear at integral coordinates collapses to a gather.
TEST(ResizeTaps, TrivialAxesSimplify) {
  ResizeAxisSpec s;
  s.mode = ResizeMode::kCubic;
  s.in_len = s.out_len = 7;
  s.length_resized = 7.0f;
  EXPECT_EQ(ComputeResizeAxisTaps(s).taps, 0);
  s.mode = ResizeMode::kLinear;
  s.coord = ResizeCoordMode::kAsymmetric;
  s.in_len = 6;
  s.out_len = 3;
  s.scale = 0.5f;  // x_original = 0, 2, 4
  s.length_resized = 3.0f;
  ResizeAxisTaps t = ComputeResizeAxisTaps(s);
  EXPECT_EQ(t.taps, 1);
  EXPECT_EQ(t.index, (std::vector<int32_t>{0, 2, 4}));
}

// --- import + host evaluation -----------------------------------------------------------

// X(r, c) = 1 + c + 2r is linear, so bilinear resampling at the clamped
// half_pixel coordinates t = 0, .25, .75, 1 gives Y(i, j) = 1 + t_j + 2 t_i.
TEST(OnnxResize, LinearHalfPixelValues) {
  Model m(13);
  m.Input("X", kF, {1, 1, 2, 2});
  m.Init("scales", kF, {4}, {1, 1, 2, 2});
  Model::S(m.Node("Resize", {"X", "", "scales"}, "Y", "rs"), "mode", "linear");
  m.Output("Y");
  Shape ys;
  std::vector<double> y = RunHost(m, {1, 1, 2, 2}, {1, 2, 3, 4}, &ys);
  EXPECT_EQ(ys, (Shape{1, 1, 4, 4}));
  const double t[4] = {0, 0.25, 0.75, 1};
  std::vector<double> want;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(1 + t[j] + 2 * t[i]);
  ExpectNear(y, want);
}

// Upsample-7 (scales attribute) nearest [1, 1, 2, 3]: each element repeated
// 2 x 3 (asymmetric, truncated coordinates).
TEST(OnnxResize, Upsample7Nearest) {
  Model m(7);
  m.Input("X", kF, {1, 1, 2, 2});
  auto* n = m.Node("Upsample", {"X"}, "Y", "up");
  Model::S(n, "mode", "nearest");
  Model::Floats(n, "scales", {1, 1, 2, 3});
  m.Output("Y");
  Shape ys;
  std::vector<double> y = RunHost(m, {1, 1, 2, 2}, {1, 2, 3, 4}, &ys);
  EXPECT_EQ(ys, (Shape{1, 1, 4, 6}));
  ExpectNear(y, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
}

// Resize-10 nearest downsample 0.6 on [1..5] (ceiling rule: indices 0, 2, 4)
// versus Resize-13 nearest_mode=floor asymmetric (indices 0, 1, 3).
TEST(OnnxResize, Opset10DiffersFromFloorMode) {
  for (int opset : {10, 13}) {
    Model m(opset);
    m.Input("X", kF, {1, 5});
    m.Init("scales", kF, {2}, {1, 0.6});
    auto* n = m.Node("Resize", opset == 10 ? std::vector<std::string>{"X", "scales"}
                                           : std::vector<std::string>{"X", "", "scales"},
                     "Y", "rs");
    Model::S(n, "mode", "nearest");
    if (opset == 13) {
      Model::S(n, "coordinate_transformation_mode", "asymmetric");
      Model::S(n, "nearest_mode", "floor");
    }
    m.Output("Y");
    Shape ys;
    std::vector<double> y = RunHost(m, {1, 5}, {10, 11, 12, 13, 14}, &ys);
    EXPECT_EQ(ys, (Shape{1, 3}));
    if (opset == 10) ExpectNear(y, {10, 12, 14});
    else ExpectNear(y, {10, 11, 13});
  }
}

// tf_crop_and_resize, linear, roi [0.5, 1.5] on the last axis of [1, 2, 3, 4],
// 3 outputs: x_original = 0.5 * 3 + o * 1 * 3 / 2 = 1.5, 3, 4.5 → 2.5, 4, and
// extrapolation_value 9 (4.5 > 3).
TEST(OnnxResize, TfCropAndResizeExtrapolates) {
  Model m(13);
  m.Input("X", kF, {1, 4});
  m.Init("roi", kF, {4}, {0, 0.5, 1, 1.5});
  m.Init("sizes", kI64, {2}, {1, 3});
  auto* n = m.Node("Resize", {"X", "roi", "", "sizes"}, "Y", "crop");
  Model::S(n, "mode", "linear");
  Model::S(n, "coordinate_transformation_mode", "tf_crop_and_resize");
  Model::F(n, "extrapolation_value", 9);
  m.Output("Y");
  Shape ys;
  ExpectNear(RunHost(m, {1, 4}, {1, 2, 3, 4}, &ys), {2.5, 4, 9});
}

// Antialiased linear downsampling by 2 (opset 18) of [1..8]: x_original =
// 2o + 0.5, the triangle filter stretched to 4 taps: weights (1, 3, 3, 1) / 8
// on indices 2o-1 .. 2o+2 (edge-clamped): (1+3*1+3*2+3)/8 = 1.625, 3.5, 5.5,
// (6+3*7+3*8+8)/8 = 7.375.
TEST(OnnxResize, AntialiasLinear) {
  Model m(18);
  m.Input("X", kF, {1, 8});
  m.Init("scales", kF, {2}, {1, 0.5});
  auto* n = m.Node("Resize", {"X", "", "scales"}, "Y", "aa");
  Model::S(n, "mode", "linear");
  Model::I(n, "antialias", 1);
  m.Output("Y");
  Shape ys;
  ExpectNear(RunHost(m, {1, 8}, {1, 2, 3, 4, 5, 6, 7, 8}, &ys), {1.625, 3.5, 5.5, 7.375});
}

// Nearest on i32 is an exact gather (no weight operand).
TEST(OnnxResize, NearestInt32) {
  Model m(13);
  m.Input("X", kI32, {1, 3});
  m.Init("sizes", kI64, {2}, {1, 6});
  Model::S(m.Node("Resize", {"X", "", "", "sizes"}, "Y", "rs"), "mode", "nearest");
  m.Output("Y");
  auto r = m.Import();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  int weighted = 0;
  Main(*r.value())->Walk([&](ir::Operation* op) {
    if (op->is("tensor.resize")) weighted += op->num_operands() == 3;
  });
  EXPECT_EQ(weighted, 0);
  Shape ys;
  // half_pixel 3 → 6: x_original = -0.25, 0.25, 0.75, 1.25, 1.75, 2.25 → 0, 0, 1, 1, 2, 2.
  ExpectNear(RunHost(m, {1, 3}, {-7, 100000, 3}, &ys, kI32), {-7, -7, 100000, 100000, 3, 3});
}

// keep_aspect_ratio_policy with sizes [7, 7] on axes [2, 3] of 5 x 8:
// scales 1.4 and 0.875; not_larger takes 0.875 → round(4.375) = 4,
// round(7) = 7; not_smaller takes 1.4 → 7, round(11.2) = 11.
TEST(OnnxResize, KeepAspectRatioPolicy) {
  for (const char* policy : {"not_larger", "not_smaller"}) {
    Model m(18);
    m.Input("X", kF, {1, 1, 5, 8});
    m.Init("sizes", kI64, {2}, {7, 7});
    auto* n = m.Node("Resize", {"X", "", "", "sizes"}, "Y", "rs");
    Model::S(n, "mode", "nearest");
    Model::Ints(n, "axes", {2, 3});
    Model::S(n, "keep_aspect_ratio_policy", policy);
    m.Output("Y");
    auto r = m.Import();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ir::Operation* ret = Main(*r.value())->region(0)->block(0)->terminator();
    EXPECT_EQ(ret->operand(0)->type().shape,
              std::string(policy) == "not_larger" ? (Shape{1, 1, 4, 7}) : (Shape{1, 1, 7, 11}))
        << policy;
  }
}

// sizes computed by Shape → Slice → Mul → Concat of a static shape fold at
// import into the constant Resize reads.
TEST(OnnxResize, SizesChainFolds) {
  Model m(13);
  m.Input("X", kF, {1, 3, 4, 5});
  m.Init("starts", kI64, {1}, {2});
  m.Init("ends", kI64, {1}, {4});
  m.Init("two", kI64, {1}, {2});
  m.Init("nc", kI64, {2}, {1, 3});
  m.Node("Shape", {"X"}, "shape", "shape");
  m.Node("Slice", {"shape", "starts", "ends"}, "hw", "slice");
  m.Node("Mul", {"hw", "two"}, "hw2", "mul");
  auto* c = m.Node("Concat", {"nc", "hw2"}, "sizes", "concat");
  Model::I(c, "axis", 0);
  Model::S(m.Node("Resize", {"X", "", "", "sizes"}, "Y", "rs"), "mode", "nearest");
  m.Output("Y");
  auto r = m.Import();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ir::Module& mod = *r.value();
  EXPECT_EQ(CountOps(mod, "tensor.resize"), 1);
  EXPECT_EQ(CountOps(mod, "tensor.concat"), 0);
  EXPECT_EQ(Main(mod)->region(0)->block(0)->terminator()->operand(0)->type().shape,
            (Shape{1, 3, 8, 10}));
}

// --- errors -------------------------------------------------------------------------------

Status ImportError(const Model& m) {
  auto r = m.Import();
  return r.ok() ? OkStatus() : r.status();
}

TEST(OnnxResize, RuntimeSizesIsAnErrorNamingTheNode) {
  Model m(13);
  m.Input("X", kF, {1, 1, 2, 2});
  m.Input("sizes", kI64, {4});
  Model::S(m.Node("Resize", {"X", "", "", "sizes"}, "Y", "my_resize"), "mode", "nearest");
  m.Output("Y");
  Status s = ImportError(m);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("my_resize"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("'sizes'"), std::string::npos) << s.ToString();
}

TEST(OnnxResize, RuntimeScalesIsAnErrorNamingTheNode) {
  Model m(13);
  m.Input("X", kF, {1, 1, 2, 2});
  m.Input("scales", kF, {4});
  Model::S(m.Node("Resize", {"X", "", "scales"}, "Y", "rs_scales"), "mode", "linear");
  m.Output("Y");
  Status s = ImportError(m);
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
  EXPECT_NE(s.message().find("rs_scales"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("'scales'"), std::string::npos) << s.ToString();
}

TEST(OnnxResize, BadInputsAreErrorsNamingTheNode) {
  {  // both scales and sizes
    Model m(13);
    m.Input("X", kF, {1, 4});
    m.Init("scales", kF, {2}, {1, 2});
    m.Init("sizes", kI64, {2}, {1, 8});
    m.Node("Resize", {"X", "", "scales", "sizes"}, "Y", "both");
    m.Output("Y");
    Status s = ImportError(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("'both'"), std::string::npos) << s.ToString();
  }
  {  // wrong scales length
    Model m(13);
    m.Input("X", kF, {1, 4});
    m.Init("scales", kF, {3}, {1, 2, 2});
    m.Node("Resize", {"X", "", "scales"}, "Y", "len");
    m.Output("Y");
    Status s = ImportError(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("'len'"), std::string::npos) << s.ToString();
  }
  {  // Upsample scale below 1
    Model m(9);
    m.Input("X", kF, {1, 4});
    m.Init("scales", kF, {2}, {1, 0.5});
    m.Node("Upsample", {"X", "scales"}, "Y", "up");
    m.Output("Y");
    Status s = ImportError(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("'up'"), std::string::npos) << s.ToString();
  }
  {  // linear on i32
    Model m(13);
    m.Input("X", kI32, {1, 4});
    m.Init("scales", kF, {2}, {1, 2});
    Model::S(m.Node("Resize", {"X", "", "scales"}, "Y", "int_linear"), "mode", "linear");
    m.Output("Y");
    Status s = ImportError(m);
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << s.ToString();
    EXPECT_NE(s.message().find("'int_linear'"), std::string::npos) << s.ToString();
  }
  {  // unknown coordinate_transformation_mode
    Model m(13);
    m.Input("X", kF, {1, 4});
    m.Init("scales", kF, {2}, {1, 2});
    auto* n = m.Node("Resize", {"X", "", "scales"}, "Y", "ctm");
    Model::S(n, "coordinate_transformation_mode", "sideways");
    m.Output("Y");
    Status s = ImportError(m);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("sideways"), std::string::npos) << s.ToString();
  }
}

}  // namespace
}  // namespace kiln::onnx_import
