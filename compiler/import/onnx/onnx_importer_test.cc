// Tests for the ONNX importer: small hand-built ModelProtos checked op by op,
// error messages, and the real models in .cache/models (skipped when absent).
#include "compiler/import/onnx/onnx_importer.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "compiler/import/onnx/const_eval.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace kiln::onnx_import {
namespace {

// Hand-built and mutated graphs omit graph output types (and put constant
// inputs in initializers only), which ONNX's checker rejects: they are
// imported with it off. The ONNX node tests keep it on (OnnxChecker covers
// what it rejects).
StatusOr<std::unique_ptr<ir::Module>> ImportUnchecked(const void* data, size_t size, ImportOptions o = {}) {
  o.onnx_checker = false;
  return ImportOnnxBytes(data, size, o);
}

using ir::Operation;
using ir::Type;
using ir::Value;
using Shape = std::vector<int64_t>;

constexpr int kF = onnx::TensorProto_DataType_FLOAT;
constexpr int kI64 = onnx::TensorProto_DataType_INT64;
constexpr int kI32 = onnx::TensorProto_DataType_INT32;

// --- ModelProto construction ---------------------------------------------------
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 13) {
    m_.set_ir_version(7);
    auto* o = m_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    g_ = m_.mutable_graph();
    g_->set_name("test");
  }
  // dims: -1 = symbolic dim "N".
  void Input(const std::string& name, int elem, const Shape& dims) {
    auto* vi = g_->add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* sh = tt->mutable_shape();
    for (int64_t d : dims) {
      auto* dim = sh->add_dim();
      if (d < 0) dim->set_dim_param("N");
      else dim->set_dim_value(d);
    }
  }
  void Output(const std::string& name) { g_->add_output()->set_name(name); }
  static onnx::TensorProto Tensor(const std::string& name, int elem, const Shape& dims,
                                  const std::vector<double>& vals, bool raw = false) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(elem);
    for (int64_t d : dims) t.add_dims(d);
    std::string bytes;
    for (double v : vals) {
      if (elem == kF) {
        float f = static_cast<float>(v);
        if (raw) bytes.append(reinterpret_cast<const char*>(&f), 4);
        else t.add_float_data(f);
      } else if (elem == kI64) {
        int64_t i = static_cast<int64_t>(v);
        if (raw) bytes.append(reinterpret_cast<const char*>(&i), 8);
        else t.add_int64_data(i);
      } else if (elem == kI32) {
        int32_t i = static_cast<int32_t>(v);
        if (raw) bytes.append(reinterpret_cast<const char*>(&i), 4);
        else t.add_int32_data(i);
      }
    }
    if (raw) t.set_raw_data(bytes);
    return t;
  }
  void Init(const std::string& name, int elem, const Shape& dims, const std::vector<double>& vals,
            bool raw = false) {
    *g_->add_initializer() = Tensor(name, elem, dims, vals, raw);
  }
  void InitI64(const std::string& name, const std::vector<int64_t>& vals) {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(kI64);
    t->add_dims(static_cast<int64_t>(vals.size()));
    for (int64_t v : vals) t->add_int64_data(v);
  }
  onnx::NodeProto* Node(const std::string& op, const std::vector<std::string>& ins,
                        const std::vector<std::string>& outs, const std::string& name = "") {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  static void AttrI(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void AttrF(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(v);
  }
  static void AttrS(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void AttrInts(onnx::NodeProto* n, const std::string& name, const Shape& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void AttrT(onnx::NodeProto* n, const std::string& name, const onnx::TensorProto& t) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    *a->mutable_t() = t;
  }
  static void AttrG(onnx::NodeProto* n, const std::string& name, const onnx::GraphProto& g) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto_AttributeType_GRAPH);
    *a->mutable_g() = g;
  }
  const onnx::GraphProto& graph() const { return m_.graph(); }
  // A Constant node producing `out`.
  void Const(const std::string& out, int elem, const Shape& dims, const std::vector<double>& vals) {
    AttrT(Node("Constant", {}, {out}), "value", Tensor("", elem, dims, vals));
  }
  std::string Bytes() const { return m_.SerializeAsString(); }
  // Hand-built graphs omit graph output types, which ONNX's checker
  // requires: it is off here (CheckerTest covers it).
  StatusOr<std::unique_ptr<ir::Module>> Import(ImportOptions o = {}) const {
    o.onnx_checker = false;
    std::string b = Bytes();
    return ImportOnnxBytes(b.data(), b.size(), o);
  }
  onnx::ModelProto& model() { return m_; }

 private:
  onnx::ModelProto m_;
  onnx::GraphProto* g_;
};

bool FileExists(const std::string& p) { return std::ifstream(p).good(); }

// --- IR inspection ---------------------------------------------------------------
Operation* Main(ir::Module& m) { return m.LookupFunction("main"); }
ir::Block* Body(ir::Module& m) { return Main(m)->region(0)->block(0); }
Value* Result(ir::Module& m, unsigned i = 0) { return Body(m)->terminator()->operand(i); }
std::vector<Operation*> Ops(ir::Module& m, const std::string& name = "") {
  std::vector<Operation*> r;
  for (auto& op : Body(m)->ops())
    if (!op->is("func.return") && (name.empty() || op->name() == name)) r.push_back(op.get());
  return r;
}
std::map<std::string, int> Histogram(ir::Module& m) {
  std::map<std::string, int> h;
  for (Operation* op : Ops(m)) h[op->name()]++;
  return h;
}
std::string HistogramStr(ir::Module& m) {
  std::string s;
  for (auto& kv : Histogram(m)) s += kv.first + "=" + std::to_string(kv.second) + " ";
  return s;
}
std::vector<double> Values(Value* v) {
  const ir::DenseElements* d = v->defining_op() && v->defining_op()->is("tensor.constant")
                                   ? v->defining_op()->dense_attr("value")
                                   : nullptr;
  EXPECT_NE(d, nullptr) << "not a constant";
  std::vector<double> r;
  if (!d) return r;
  for (int64_t i = 0; i < d->type.num_elements(); ++i) r.push_back(ReadElementAsDouble(*d, i));
  return r;
}
std::string TypeStr(Value* v) { return v->type().ToString(); }

std::unique_ptr<ir::Module> MustImport(const ModelBuilder& b, const ImportOptions& o = {}) {
  auto r = b.Import(o);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return nullptr;
  Status v = ir::Verify(*r.value());
  EXPECT_TRUE(v.ok()) << v.ToString();
  return std::move(r.value());
}

// ---------------------------------------------------------------------------
TEST(OnnxImporter, FunctionSignatureAndLocs) {
  ModelBuilder b;
  b.Input("a", kF, {2, 3});
  b.Input("w", kF, {2, 3});  // also an initializer: a constant, not an argument
  b.Init("w", kF, {2, 3}, {1, 2, 3, 4, 5, 6});
  b.Input("c", kF, {3});
  b.Node("Add", {"a", "w"}, {"s"}, "add_node");
  b.Node("Mul", {"s", "c"}, {"y"});  // unnamed → "Mul_1"
  b.Output("y");
  b.Output("s");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  Operation* f = Main(*m);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->str_attr("sym_name"), "main");
  ir::Block* body = Body(*m);
  ASSERT_EQ(body->num_arguments(), 2u);
  EXPECT_EQ(TypeStr(body->argument(0)), "tensor<2x3xf32>");
  EXPECT_EQ(TypeStr(body->argument(1)), "tensor<3xf32>");
  auto names = std::get<std::shared_ptr<ir::AttrList>>(f->attr("arg_names")->value);
  ASSERT_EQ(names->size(), 2u);
  EXPECT_EQ(std::get<std::string>((*names)[0].value), "a");
  EXPECT_EQ(std::get<std::string>((*names)[1].value), "c");
  auto rnames = std::get<std::shared_ptr<ir::AttrList>>(f->attr("result_names")->value);
  ASSERT_EQ(rnames->size(), 2u);
  EXPECT_EQ(std::get<std::string>((*rnames)[0].value), "y");
  EXPECT_EQ(std::get<std::string>((*rnames)[1].value), "s");
  auto adds = Ops(*m, "tensor.add");
  ASSERT_EQ(adds.size(), 1u);
  EXPECT_EQ(adds[0]->loc(), "add_node");
  auto muls = Ops(*m, "tensor.mul");
  ASSERT_EQ(muls.size(), 1u);
  EXPECT_EQ(muls[0]->loc(), "Mul_1");
  EXPECT_EQ(Result(*m, 0), muls[0]->result());
  EXPECT_EQ(Result(*m, 1), adds[0]->result());
  Value* w = adds[0]->operand(1);
  EXPECT_EQ(w->defining_op()->loc(), "w");
  EXPECT_EQ(Values(w), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  std::string text = ir::PrintModule(*m);
  EXPECT_NE(text.find("tensor.add"), std::string::npos) << text;
}

// PaddleOCR cls: Shape → Cast → Slice → Cast, Constant → Cast, Concat → Reshape.
TEST(OnnxImporter, FoldsShapeArithmeticChain) {
  ModelBuilder b(9);
  b.Input("x", kF, {-1, 200, 1, 1});
  b.Node("GlobalAveragePool", {"x"}, {"gap"});
  b.Node("Shape", {"gap"}, {"shp"});
  ModelBuilder::AttrI(b.Node("Cast", {"shp"}, {"shp32"}), "to", onnx::TensorProto_DataType_INT32);
  auto* sl = b.Node("Slice", {"shp32"}, {"n"});
  ModelBuilder::AttrInts(sl, "axes", {0});
  ModelBuilder::AttrInts(sl, "starts", {0});
  ModelBuilder::AttrInts(sl, "ends", {1});
  b.Const("c200", kI32, {1}, {200});
  ModelBuilder::AttrI(b.Node("Cast", {"n"}, {"n64"}), "to", kI64);
  ModelBuilder::AttrI(b.Node("Cast", {"c200"}, {"c64"}), "to", kI64);
  ModelBuilder::AttrI(b.Node("Concat", {"n64", "c64"}, {"newshape"}), "axis", 0);
  b.Node("Reshape", {"gap", "newshape"}, {"y"});
  b.Output("y");
  // Missing override: error names the input and the dim.
  auto err = b.Import();
  ASSERT_FALSE(err.ok());
  EXPECT_EQ(err.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(err.status().message().find("input 'x'"), std::string::npos) << err.status().message();
  EXPECT_NE(err.status().message().find("dynamic dim 0 ('N')"), std::string::npos) << err.status().message();
  EXPECT_NE(err.status().message().find("--input-shape=x=?x200x1x1"), std::string::npos) << err.status().message();

  ImportOptions o;
  ASSERT_TRUE(ParseInputShapeFlag("x=1x200x1x1", &o).ok());
  auto m = MustImport(b, o);
  ASSERT_TRUE(m);
  EXPECT_EQ(HistogramStr(*m), "tensor.reduce=1 tensor.reshape=1 ");
  EXPECT_EQ(TypeStr(Result(*m)), "tensor<1x200xf32>");
  Operation* red = Ops(*m, "tensor.reduce")[0];
  EXPECT_EQ(red->str_attr("kind"), "mean");
  EXPECT_EQ(red->ints_attr("axes"), (Shape{2, 3}));
  EXPECT_TRUE(red->bool_attr("keepdims"));
  EXPECT_EQ(TypeStr(red->result()), "tensor<1x200x1x1xf32>");
}

TEST(OnnxImporter, ParseInputShapeFlag) {
  ImportOptions o;
  EXPECT_TRUE(ParseInputShapeFlag("in:0=1x3x48x192", &o).ok());
  EXPECT_EQ(o.input_shapes["in:0"], (Shape{1, 3, 48, 192}));
  EXPECT_FALSE(ParseInputShapeFlag("x=1xx2", &o).ok());
  EXPECT_FALSE(ParseInputShapeFlag("x", &o).ok());
  EXPECT_FALSE(ParseInputShapeFlag("x=1x-2", &o).ok());
}

TEST(OnnxImporter, ConstantFoldingArithmetic) {
  ModelBuilder b(13);
  b.Input("x", kF, {5});
  b.Const("start", kI64, {}, {0});
  b.Const("limit", kI64, {}, {5});
  b.Const("delta", kI64, {}, {1});
  b.Node("Range", {"start", "limit", "delta"}, {"r"});      // [0 1 2 3 4]
  b.Const("two", kI64, {}, {2});
  b.Node("Mul", {"r", "two"}, {"r2"});                      // [0 2 4 6 8]
  b.Node("Sub", {"r2", "two"}, {"r3"});                     // [-2 0 2 4 6]
  b.Node("Div", {"r3", "two"}, {"r4"});                     // [-1 0 1 2 3]
  b.Const("three", kI64, {}, {3});
  b.Node("Equal", {"r4", "three"}, {"eq"});                  // [f f f f t]
  b.Const("idx", kI64, {2}, {-1, 0});
  b.Node("Gather", {"r4", "idx"}, {"g"});                    // [3 -1]
  b.Const("cshape", kI64, {1}, {2});
  auto* cos = b.Node("ConstantOfShape", {"cshape"}, {"ones"});
  ModelBuilder::AttrT(cos, "value", ModelBuilder::Tensor("", kF, {1}, {1.5}));
  ModelBuilder::AttrI(b.Node("Cast", {"eq"}, {"eqf"}), "to", kF);
  b.Node("Add", {"x", "eqf"}, {"y"});
  b.Output("y");
  b.Output("g");
  b.Output("ones");
  b.Output("r4");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(HistogramStr(*m), "tensor.add=1 tensor.constant=4 ");
  Operation* add = Ops(*m, "tensor.add")[0];
  EXPECT_EQ(Values(add->operand(1)), (std::vector<double>{0, 0, 0, 0, 1}));
  EXPECT_EQ(TypeStr(add->operand(1)), "tensor<5xf32>");
  EXPECT_EQ(Values(Result(*m, 1)), (std::vector<double>{3, -1}));
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<2xi64>");
  EXPECT_EQ(Values(Result(*m, 2)), (std::vector<double>{1.5, 1.5}));
  EXPECT_EQ(Values(Result(*m, 3)), (std::vector<double>{-1, 0, 1, 2, 3}));
}

TEST(OnnxImporter, FoldsFloatArithmeticInF32) {
  ModelBuilder b(13);
  b.Const("a", kF, {2}, {0.1, 1e8});
  b.Const("c", kF, {}, {0.2});
  b.Node("Add", {"a", "c"}, {"y"});
  b.Node("Sqrt", {"y"}, {"z"});
  b.Output("y");
  b.Output("z");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  std::vector<double> y = Values(Result(*m, 0));
  EXPECT_EQ(y[0], static_cast<double>(0.1f + 0.2f));
  EXPECT_EQ(y[1], static_cast<double>(1e8f + 0.2f));
  EXPECT_EQ(Values(Result(*m, 1))[0], static_cast<double>(std::sqrt(0.1f + 0.2f)));
}

TEST(OnnxImporter, Conv2DAutoPadGroupBias) {
  ModelBuilder b(13);
  b.Input("x", kF, {1, 4, 7, 9});
  b.Init("w", kF, {8, 2, 3, 3}, std::vector<double>(8 * 2 * 9, 0.5));
  b.Init("bias", kF, {8}, std::vector<double>(8, 1.0));
  auto* c = b.Node("Conv", {"x", "w", "bias"}, {"y"}, "conv");
  ModelBuilder::AttrS(c, "auto_pad", "SAME_UPPER");
  ModelBuilder::AttrInts(c, "strides", {2, 2});
  ModelBuilder::AttrI(c, "group", 2);
  auto* c2 = b.Node("Conv", {"x", "w"}, {"y2"}, "conv_lower");
  ModelBuilder::AttrS(c2, "auto_pad", "SAME_LOWER");
  ModelBuilder::AttrInts(c2, "strides", {2, 2});
  ModelBuilder::AttrI(c2, "group", 2);
  auto* c3 = b.Node("Conv", {"x", "w"}, {"y3"}, "conv_pads");
  ModelBuilder::AttrInts(c3, "pads", {1, 0, 2, 1});
  ModelBuilder::AttrInts(c3, "dilations", {2, 1});
  ModelBuilder::AttrI(c3, "group", 2);
  b.Output("y");
  b.Output("y2");
  b.Output("y3");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  auto convs = Ops(*m, "tensor.conv2d");
  ASSERT_EQ(convs.size(), 3u);
  // ceil(7/2)=4, ceil(9/2)=5; pad totals: (4-1)*2+3-7=2, (5-1)*2+3-9=2.
  EXPECT_EQ(TypeStr(convs[0]->result()), "tensor<1x8x4x5xf32>");
  EXPECT_EQ(convs[0]->num_operands(), 3u);
  EXPECT_EQ(convs[0]->ints_attr("pads"), (Shape{1, 1, 1, 1}));
  EXPECT_EQ(convs[0]->ints_attr("strides"), (Shape{2, 2}));
  EXPECT_EQ(convs[0]->ints_attr("dilations"), (Shape{1, 1}));
  EXPECT_EQ(convs[0]->int_attr("group"), 2);
  EXPECT_EQ(convs[1]->num_operands(), 2u);
  EXPECT_EQ(convs[1]->ints_attr("pads"), (Shape{1, 1, 1, 1}));
  // H: 7+1+2-(2*2+1)=5 → 6; W: 9+0+1-3=7 → 8.
  EXPECT_EQ(TypeStr(convs[2]->result()), "tensor<1x8x6x8xf32>");
  EXPECT_EQ(convs[2]->ints_attr("pads"), (Shape{1, 0, 2, 1}));
  EXPECT_EQ(convs[2]->ints_attr("dilations"), (Shape{2, 1}));
  // SAME_LOWER with an odd total puts the extra pad first.
  ModelBuilder b2(13);
  b2.Input("x", kF, {1, 1, 6, 6});
  b2.Init("w", kF, {1, 1, 2, 2}, {1, 1, 1, 1});
  auto* c4 = b2.Node("Conv", {"x", "w"}, {"y"});
  ModelBuilder::AttrS(c4, "auto_pad", "SAME_LOWER");
  b2.Output("y");
  auto m2 = MustImport(b2);
  ASSERT_TRUE(m2);
  EXPECT_EQ(Ops(*m2, "tensor.conv2d")[0]->ints_attr("pads"), (Shape{1, 1, 0, 0}));
  EXPECT_EQ(TypeStr(Result(*m2)), "tensor<1x1x6x6xf32>");
}

TEST(OnnxImporter, Conv1DBecomesConv2D) {
  ModelBuilder b(13);
  b.Input("x", kF, {1, 1, 1280});
  b.Init("w", kF, {257, 1, 512}, std::vector<double>(257 * 512, 0.25));
  auto* c = b.Node("Conv", {"x", "w"}, {"y"}, "stft");
  ModelBuilder::AttrInts(c, "strides", {160});
  ModelBuilder::AttrInts(c, "pads", {0, 0});
  ModelBuilder::AttrInts(c, "kernel_shape", {512});
  b.Output("y");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(HistogramStr(*m), "tensor.constant=1 tensor.conv2d=1 tensor.reshape=2 ");
  Operation* conv = Ops(*m, "tensor.conv2d")[0];
  EXPECT_EQ(TypeStr(conv->operand(0)), "tensor<1x1x1x1280xf32>");
  EXPECT_EQ(TypeStr(conv->operand(1)), "tensor<257x1x1x512xf32>");
  EXPECT_TRUE(conv->operand(1)->defining_op()->is("tensor.constant"));  // reshape folded
  EXPECT_EQ(conv->ints_attr("strides"), (Shape{1, 160}));
  EXPECT_EQ(conv->ints_attr("pads"), (Shape{0, 0, 0, 0}));
  EXPECT_EQ(TypeStr(conv->result()), "tensor<1x257x1x5xf32>");  // (1280-512)/160+1
  EXPECT_EQ(TypeStr(Result(*m)), "tensor<1x257x5xf32>");
}

TEST(OnnxImporter, BatchNormFoldsToMulAdd) {
  ModelBuilder b(9);
  b.Input("x", kF, {1, 2, 3, 3});
  b.Init("scale", kF, {2}, {4, 3});
  b.Init("bias", kF, {2}, {1, -1});
  b.Init("mean", kF, {2}, {0.5, 2});
  b.Init("var", kF, {2}, {3, 8});
  auto* bn = b.Node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn");
  ModelBuilder::AttrF(bn, "epsilon", 1.0f);
  b.Output("y");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(HistogramStr(*m), "tensor.add=1 tensor.constant=2 tensor.mul=1 ");
  Operation* mul = Ops(*m, "tensor.mul")[0];
  Operation* add = Ops(*m, "tensor.add")[0];
  EXPECT_EQ(mul->loc(), "bn");
  EXPECT_EQ(TypeStr(mul->operand(1)), "tensor<2x1x1xf32>");
  // mul = scale / sqrt(var + eps) = [4/2, 3/3]; add = bias - mean * mul.
  EXPECT_EQ(Values(mul->operand(1)), (std::vector<double>{2, 1}));
  EXPECT_EQ(Values(add->operand(1)), (std::vector<double>{0, -3}));
  EXPECT_EQ(add->operand(0), mul->result());
  EXPECT_EQ(TypeStr(Result(*m)), "tensor<1x2x3x3xf32>");
}

TEST(OnnxImporter, GemmFoldsTransposeAndAlphaIntoConstantB) {
  ModelBuilder b(13);
  b.Input("a", kF, {4, 2});
  b.Init("B", kF, {3, 2}, {1, 2, 3, 4, 5, 6});  // [N, K] with transB
  b.Init("C", kF, {3}, {10, 20, 30});
  auto* g = b.Node("Gemm", {"a", "B", "C"}, {"y"}, "fc");
  ModelBuilder::AttrI(g, "transB", 1);
  ModelBuilder::AttrF(g, "alpha", 2.0f);
  ModelBuilder::AttrF(g, "beta", 0.5f);
  b.Output("y");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(HistogramStr(*m), "tensor.add=1 tensor.constant=2 tensor.matmul=1 ");
  Operation* mm = Ops(*m, "tensor.matmul")[0];
  EXPECT_EQ(TypeStr(mm->operand(1)), "tensor<2x3xf32>");
  EXPECT_EQ(Values(mm->operand(1)), (std::vector<double>{2, 6, 10, 4, 8, 12}));
  Operation* add = Ops(*m, "tensor.add")[0];
  EXPECT_EQ(Values(add->operand(1)), (std::vector<double>{5, 10, 15}));
  EXPECT_EQ(TypeStr(Result(*m)), "tensor<4x3xf32>");
}

TEST(OnnxImporter, ClipVariants) {
  {  // opset < 11: attributes
    ModelBuilder b(9);
    b.Input("x", kF, {4});
    auto* c = b.Node("Clip", {"x"}, {"y"});
    ModelBuilder::AttrF(c, "min", 0.0f);
    ModelBuilder::AttrF(c, "max", 6.0f);
    b.Output("y");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    Operation* op = Ops(*m, "tensor.clamp")[0];
    EXPECT_EQ(op->float_attr("min"), 0.0);
    EXPECT_EQ(op->float_attr("max"), 6.0);
  }
  {  // opset 13: constant inputs; missing max → +inf
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    b.Init("lo", kF, {}, {-1});
    b.Node("Clip", {"x", "lo"}, {"y"});
    b.Output("y");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(HistogramStr(*m), "tensor.clamp=1 ");
    Operation* op = Ops(*m, "tensor.clamp")[0];
    EXPECT_EQ(op->float_attr("min"), -1.0);
    EXPECT_TRUE(std::isinf(op->float_attr("max")) && op->float_attr("max") > 0);
  }
  {  // opset 13: data-dependent min (melspectrogram) → max/min binaries
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    b.Node("ReduceMax", {"x"}, {"mx"});
    ModelBuilder::AttrI(b.model().mutable_graph()->mutable_node(0), "keepdims", 0);
    b.Init("hi", kF, {}, {100});
    b.Node("Clip", {"x", "mx", "hi"}, {"y"});
    b.Output("y");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(HistogramStr(*m), "tensor.constant=1 tensor.max=1 tensor.min=1 tensor.reduce=1 ");
    EXPECT_EQ(TypeStr(Ops(*m, "tensor.reduce")[0]->result()), "tensor<f32>");
    EXPECT_EQ(TypeStr(Result(*m)), "tensor<4xf32>");
  }
  {  // no bounds → identity
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    b.Node("Clip", {"x"}, {"y"});
    b.Output("y");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(Result(*m), Body(*m)->argument(0));
  }
}

TEST(OnnxImporter, ReshapeFlattenSqueezeUnsqueeze) {
  ModelBuilder b(13);
  b.Input("x", kF, {2, 3, 4});
  b.InitI64("s1", {0, -1});
  b.Node("Reshape", {"x", "s1"}, {"r1"});  // [2, 12]
  b.InitI64("s2", {4, 0, 0});
  auto* rz = b.Node("Reshape", {"r1", "s2"}, {"r2"});  // allowzero=0: [4, 12, ?] invalid → use valid
  (void)rz;
  b.Output("r1");
  b.InitI64("ax", {0, 3});
  b.Node("Unsqueeze", {"x", "ax"}, {"u"});  // [1, 2, 3, 1, 4]
  b.InitI64("sq", {-2});
  b.Node("Squeeze", {"u", "sq"}, {"q"});  // [1, 2, 3, 4]
  b.Node("Squeeze", {"u"}, {"q2"});       // [2, 3, 4]
  auto* fl = b.Node("Flatten", {"u"}, {"f"});
  ModelBuilder::AttrI(fl, "axis", -2);  // [6, 4]
  b.Output("u");
  b.Output("q");
  b.Output("q2");
  b.Output("f");
  // r2 is invalid (0 copies dim 2 of r1, which has rank 2): error mentions it.
  auto err = b.Import();
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("Reshape copies dim 2"), std::string::npos) << err.status().message();
  b.model().mutable_graph()->mutable_node(1)->set_input(1, "s1");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<2x12xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<1x2x3x1x4xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 2)), "tensor<1x2x3x4xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 3)), "tensor<2x3x4xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 4)), "tensor<6x4xf32>");
  for (Operation* op : Ops(*m)) EXPECT_TRUE(op->is("tensor.reshape")) << op->name();
  // allowzero = 1 keeps the literal 0.
  ModelBuilder b2(14);
  b2.Input("x", kF, {0, 3});
  b2.InitI64("s", {3, 0});
  ModelBuilder::AttrI(b2.Node("Reshape", {"x", "s"}, {"y"}), "allowzero", 1);
  b2.Output("y");
  auto m2 = MustImport(b2);
  ASSERT_TRUE(m2);
  EXPECT_EQ(TypeStr(Result(*m2)), "tensor<3x0xf32>");
}

TEST(OnnxImporter, SliceClampsNegativeIndicesAndSteps) {
  ModelBuilder b(13);
  b.Input("x", kF, {10, 4});
  const int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  b.InitI64("s1", {-3});
  b.InitI64("e1", {kMax});
  b.InitI64("a0", {0});
  b.Node("Slice", {"x", "s1", "e1", "a0"}, {"y1"});  // rows 7..9
  b.InitI64("s2", {-1, 100});
  b.InitI64("e2", {kMin, -100});
  b.InitI64("a2", {0, 1});
  b.InitI64("st2", {-2, -1});
  b.Node("Slice", {"x", "s2", "e2", "a2", "st2"}, {"y2"});  // rows 9,7,5,3,1; cols 3..0
  b.InitI64("s3", {5});
  b.InitI64("e3", {2});
  b.Node("Slice", {"x", "s3", "e3"}, {"y3"});  // empty
  b.Output("y1");
  b.Output("y2");
  b.Output("y3");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  auto sl = Ops(*m, "tensor.slice");
  ASSERT_EQ(sl.size(), 3u);
  EXPECT_EQ(TypeStr(sl[0]->result()), "tensor<3x4xf32>");
  EXPECT_EQ(sl[0]->ints_attr("starts"), (Shape{7, 0}));
  EXPECT_EQ(sl[0]->ints_attr("strides"), (Shape{1, 1}));
  EXPECT_EQ(TypeStr(sl[1]->result()), "tensor<5x4xf32>");
  EXPECT_EQ(sl[1]->ints_attr("starts"), (Shape{9, 3}));
  EXPECT_EQ(sl[1]->ints_attr("strides"), (Shape{-2, -1}));
  EXPECT_EQ(TypeStr(sl[2]->result()), "tensor<0x4xf32>");
  // Constant folding of a strided slice gives exact values.
  ModelBuilder c(10);
  c.Init("d", kF, {6}, {0, 1, 2, 3, 4, 5});
  c.InitI64("s", {-1});
  c.InitI64("e", {-7});
  c.InitI64("a", {0});
  c.InitI64("st", {-2});
  c.Node("Slice", {"d", "s", "e", "a", "st"}, {"y"});
  c.Output("y");
  auto mc = MustImport(c);
  ASSERT_TRUE(mc);
  EXPECT_EQ(Values(Result(*mc)), (std::vector<double>{5, 3, 1}));
}

TEST(OnnxImporter, SoftmaxByOpset) {
  for (int opset : {11, 13}) {
    ModelBuilder b(opset);
    b.Input("x", kF, {2, 3, 4});
    ModelBuilder::AttrI(b.Node("Softmax", {"x"}, {"y"}), "axis", 1);
    b.Output("y");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    Operation* sm = Ops(*m, "tensor.softmax")[0];
    EXPECT_FALSE(sm->bool_attr("log"));
    if (opset == 11) {
      EXPECT_EQ(HistogramStr(*m), "tensor.reshape=2 tensor.softmax=1 ");
      EXPECT_EQ(TypeStr(sm->result()), "tensor<2x12xf32>");
      EXPECT_EQ(sm->int_attr("axis"), 1);
    } else {
      EXPECT_EQ(HistogramStr(*m), "tensor.softmax=1 ");
      EXPECT_EQ(sm->int_attr("axis"), 1);
    }
    EXPECT_EQ(TypeStr(Result(*m)), "tensor<2x3x4xf32>");
  }
}

TEST(OnnxImporter, MatMulRank1Promotion) {
  ModelBuilder b(13);
  b.Input("v", kF, {4});
  b.Input("m", kF, {2, 4, 3});
  b.Input("w", kF, {3});
  b.Node("MatMul", {"v", "m"}, {"y"});  // [2, 3]
  b.Node("MatMul", {"m", "w"}, {"z"});  // [2, 4]
  b.Output("y");
  b.Output("z");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  auto mms = Ops(*m, "tensor.matmul");
  ASSERT_EQ(mms.size(), 2u);
  EXPECT_EQ(TypeStr(mms[0]->operand(0)), "tensor<1x4xf32>");
  EXPECT_EQ(TypeStr(mms[0]->result()), "tensor<2x1x3xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<2x3xf32>");
  EXPECT_EQ(TypeStr(mms[1]->operand(1)), "tensor<3x1xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<2x4xf32>");
}

TEST(OnnxImporter, ReduceAxesByOpset) {
  {
    ModelBuilder b(13);
    b.Input("x", kF, {2, 3, 4});
    ModelBuilder::AttrInts(b.Node("ReduceMean", {"x"}, {"a"}), "axes", {-1, 0});
    b.InitI64("ax", {1});
    ModelBuilder::AttrI(b.Node("ReduceSum", {"x", "ax"}, {"s"}), "keepdims", 0);
    ModelBuilder::AttrI(b.Node("ReduceSum", {"x"}, {"n"}), "noop_with_empty_axes", 1);
    b.Node("ReduceMax", {"x"}, {"all"});
    b.Output("a");
    b.Output("s");
    b.Output("n");
    b.Output("all");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    auto rs = Ops(*m, "tensor.reduce");
    ASSERT_EQ(rs.size(), 3u);
    EXPECT_EQ(rs[0]->ints_attr("axes"), (Shape{0, 2}));
    EXPECT_EQ(rs[0]->str_attr("kind"), "mean");
    EXPECT_EQ(TypeStr(rs[0]->result()), "tensor<1x3x1xf32>");
    EXPECT_EQ(rs[1]->str_attr("kind"), "sum");
    EXPECT_FALSE(rs[1]->bool_attr("keepdims", true));
    EXPECT_EQ(TypeStr(rs[1]->result()), "tensor<2x4xf32>");
    EXPECT_EQ(Result(*m, 2), Body(*m)->argument(0));
    EXPECT_EQ(rs[2]->ints_attr("axes"), (Shape{0, 1, 2}));
    EXPECT_EQ(TypeStr(rs[2]->result()), "tensor<1x1x1xf32>");
  }
  {  // opset 18: axes as input for every reduce
    ModelBuilder b(18);
    b.Input("x", kF, {2, 3});
    b.InitI64("ax", {1});
    b.Node("ReduceMean", {"x", "ax"}, {"a"});
    b.Output("a");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(TypeStr(Result(*m)), "tensor<2x1xf32>");
  }
}

TEST(OnnxImporter, PoolingCeilModeAndGlobal) {
  ModelBuilder b(13);
  b.Input("x", kF, {1, 2, 5, 5});
  auto* p = b.Node("MaxPool", {"x"}, {"a"});
  ModelBuilder::AttrInts(p, "kernel_shape", {2, 2});
  ModelBuilder::AttrInts(p, "strides", {2, 2});
  ModelBuilder::AttrI(p, "ceil_mode", 1);
  auto* q = b.Node("AveragePool", {"x"}, {"b"});
  ModelBuilder::AttrInts(q, "kernel_shape", {3, 3});
  ModelBuilder::AttrInts(q, "strides", {2, 2});
  ModelBuilder::AttrInts(q, "pads", {1, 1, 1, 1});
  ModelBuilder::AttrI(q, "count_include_pad", 1);
  b.Node("GlobalAveragePool", {"x"}, {"g"});
  b.Output("a");
  b.Output("b");
  b.Output("g");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  auto ps = Ops(*m, "tensor.pool2d");
  ASSERT_EQ(ps.size(), 2u);
  EXPECT_EQ(ps[0]->str_attr("kind"), "max");
  EXPECT_EQ(TypeStr(ps[0]->result()), "tensor<1x2x3x3xf32>");
  EXPECT_EQ(ps[0]->ints_attr("kernel"), (Shape{2, 2}));
  EXPECT_FALSE(ps[0]->bool_attr("count_include_pad", true));
  EXPECT_EQ(ps[1]->str_attr("kind"), "avg");
  EXPECT_EQ(TypeStr(ps[1]->result()), "tensor<1x2x3x3xf32>");
  EXPECT_EQ(ps[1]->ints_attr("pads"), (Shape{1, 1, 1, 1}));
  EXPECT_TRUE(ps[1]->bool_attr("count_include_pad"));
  EXPECT_EQ(TypeStr(Result(*m, 2)), "tensor<1x2x1x1xf32>");
  // ceil_mode: a window that would start in the right padding is dropped.
  ModelBuilder c(13);
  c.Input("x", kF, {1, 1, 4, 4});
  auto* r = c.Node("MaxPool", {"x"}, {"y"});
  ModelBuilder::AttrInts(r, "kernel_shape", {2, 2});
  ModelBuilder::AttrInts(r, "strides", {2, 2});
  ModelBuilder::AttrInts(r, "pads", {0, 0, 1, 1});
  ModelBuilder::AttrI(r, "ceil_mode", 1);
  c.Output("y");
  auto mc = MustImport(c);
  ASSERT_TRUE(mc);
  EXPECT_EQ(TypeStr(Result(*mc)), "tensor<1x1x2x2xf32>");
}

TEST(OnnxImporter, MiscOps) {
  ModelBuilder b(13);
  b.Input("x", kF, {2, 3});
  b.Input("i", kI64, {4});
  b.Init("slope", kF, {3}, {0.1, 0.2, 0.3});
  ModelBuilder::AttrInts(b.Node("Transpose", {"x"}, {"t"}), "perm", {1, 0});
  ModelBuilder::AttrI(b.Node("Gather", {"x", "i"}, {"g"}), "axis", 1);  // [2, 4]
  b.InitI64("pads", {0, 1, 0, 2});
  auto* pad = b.Node("Pad", {"x", "pads"}, {"p"});  // [2, 6]
  ModelBuilder::AttrS(pad, "mode", "reflect");
  b.InitI64("eshape", {4, 1, 3});
  b.Node("Expand", {"x", "eshape"}, {"e"});  // [4, 2, 3]
  b.InitI64("reps", {2, 1});
  b.Node("Tile", {"x", "reps"}, {"tl"});  // [4, 3]
  b.Node("Greater", {"x", "slope"}, {"gt"});
  b.Node("Where", {"gt", "x", "slope"}, {"w"});
  b.Node("PRelu", {"x", "slope"}, {"pr"});
  auto* hs = b.Node("HardSigmoid", {"x"}, {"hs"});
  ModelBuilder::AttrF(hs, "alpha", 0.1666666716f);
  b.Node("Dropout", {"x"}, {"d"});
  b.Node("Identity", {"d"}, {"id"});
  b.Node("Erf", {"id"}, {"erf"});
  b.Node("Concat", {"x", "x"}, {"cat"});
  ModelBuilder::AttrI(b.model().mutable_graph()->mutable_node(b.model().graph().node_size() - 1), "axis", -1);
  auto* sp = b.Node("Split", {"x"}, {"s0", "s1", "s2"});
  ModelBuilder::AttrI(sp, "axis", 1);
  for (const char* o : {"t", "g", "p", "e", "tl", "gt", "w", "pr", "hs", "erf", "cat", "s2"}) b.Output(o);
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<3x2xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<2x4xf32>");
  Operation* p = Ops(*m, "tensor.pad")[0];
  EXPECT_EQ(TypeStr(p->result()), "tensor<2x6xf32>");
  EXPECT_EQ(p->ints_attr("pads"), (Shape{0, 1, 0, 2}));
  EXPECT_EQ(p->str_attr("mode"), "reflect");
  EXPECT_EQ(TypeStr(Result(*m, 3)), "tensor<4x2x3xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 4)), "tensor<4x3xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 5)), "tensor<2x3xi1>");
  EXPECT_EQ(TypeStr(Result(*m, 6)), "tensor<2x3xf32>");
  EXPECT_TRUE(Result(*m, 6)->defining_op()->is("tensor.select"));
  EXPECT_EQ(TypeStr(Result(*m, 7)), "tensor<2x3xf32>");
  Operation* h = Result(*m, 8)->defining_op();
  EXPECT_TRUE(h->is("tensor.hard_sigmoid"));
  EXPECT_EQ(h->float_attr("alpha"), static_cast<double>(0.1666666716f));
  EXPECT_EQ(h->float_attr("beta"), 0.5);
  EXPECT_EQ(Result(*m, 9)->defining_op()->operand(0), Body(*m)->argument(0));
  EXPECT_EQ(TypeStr(Result(*m, 10)), "tensor<2x6xf32>");
  Operation* s2 = Result(*m, 11)->defining_op();
  EXPECT_TRUE(s2->is("tensor.slice"));
  EXPECT_EQ(s2->ints_attr("starts"), (Shape{0, 2}));
  EXPECT_EQ(TypeStr(Result(*m, 11)), "tensor<2x1xf32>");
}

TEST(OnnxImporter, FoldsTileAndPadOfConstants) {
  ModelBuilder b(13);
  b.Init("d", kI64, {2}, {7, 8});
  b.InitI64("reps", {3});
  b.Node("Tile", {"d", "reps"}, {"t"});
  b.InitI64("pads", {1, 2});
  auto* p = b.Node("Pad", {"d", "pads"}, {"p"});
  ModelBuilder::AttrS(p, "mode", "edge");
  b.Output("t");
  b.Output("p");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(Values(Result(*m, 0)), (std::vector<double>{7, 8, 7, 8, 7, 8}));
  EXPECT_EQ(Values(Result(*m, 1)), (std::vector<double>{7, 7, 8, 8, 8}));
}

TEST(OnnxImporter, RawAndTypedInitializersAgree) {
  ModelBuilder b(13);
  b.Init("raw", kF, {3}, {1.5, -2, 3.25}, /*raw=*/true);
  b.Init("typed", kF, {3}, {1.5, -2, 3.25});
  b.Init("raw64", kI64, {2}, {-5, 1LL << 40}, /*raw=*/true);
  b.Output("raw");
  b.Output("typed");
  b.Output("raw64");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(Values(Result(*m, 0)), Values(Result(*m, 1)));
  EXPECT_EQ(Values(Result(*m, 2)), (std::vector<double>{-5, static_cast<double>(1LL << 40)}));
  EXPECT_EQ(TypeStr(Result(*m, 2)), "tensor<2xi64>");
}

// --- errors --------------------------------------------------------------------------
TEST(OnnxImporter, UnsupportedOpError) {
  ModelBuilder b(13);
  b.Input("x", kF, {1, 2, 3});
  b.Node("StringNormalizer", {"x"}, {"y"}, "strnorm_1");
  b.Output("y");
  auto r = b.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), "unsupported ONNX op 'StringNormalizer' (node 'strnorm_1', domain '')");
  ModelBuilder c(13);
  c.Input("x", kF, {1});
  auto* n = c.Node("FusedGemm", {"x"}, {"y"});
  n->set_domain("com.microsoft");
  c.Output("y");
  auto r2 = c.Import();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().message(),
            "unsupported ONNX op 'FusedGemm' (node 'FusedGemm_0', domain 'com.microsoft')");
}

TEST(OnnxImporter, UnsupportedDTypeError) {
  ModelBuilder b(13);
  b.Input("x", kF, {2});
  ModelBuilder::AttrI(b.Node("Cast", {"x"}, {"y"}, "to_str"), "to", onnx::TensorProto_DataType_STRING);
  b.Output("y");
  auto r = b.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r.status().message(), "node 'to_str' (Cast): unsupported ONNX dtype STRING");
  ModelBuilder c(13);
  auto* t = c.model().mutable_graph()->add_initializer();
  t->set_name("c64");
  t->set_data_type(onnx::TensorProto_DataType_COMPLEX64);
  t->add_dims(1);
  t->add_float_data(0);
  t->add_float_data(0);
  c.Node("Identity", {"c64"}, {"y"}, "id");
  c.Output("y");
  auto r2 = c.Import();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kUnimplemented);
  EXPECT_EQ(r2.status().message(), "initializer 'c64': unsupported ONNX dtype COMPLEX64");
}

TEST(OnnxImporter, TruncatedOrGarbageBytesAreDataLoss) {
  ModelBuilder b(13);
  b.Input("x", kF, {2, 3});
  b.Init("w", kF, {2, 3}, std::vector<double>(6, 1.0), true);
  b.Node("Add", {"x", "w"}, {"y"});
  b.Output("y");
  std::string bytes = b.Bytes();
  for (size_t cut : {bytes.size() - 1, bytes.size() / 2, size_t{3}}) {
    auto r = ImportUnchecked(bytes.data(), cut, {});
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status().ToString();
    EXPECT_EQ(r.status().message().rfind("failed to parse ONNX model", 0), 0u) << r.status().message();
  }
  const char garbage[] = "\xff\xff\xff\xff garbage";
  auto r = ImportUnchecked(garbage, sizeof(garbage), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "failed to parse ONNX model");
  auto nf = ImportOnnxFile("/nonexistent/model.onnx", {});
  EXPECT_EQ(nf.status().code(), StatusCode::kNotFound);
}

// Random byte mutations of a model that uses many ops: the importer returns a
// Status (any) and never crashes, hangs or allocates without bound.
// ONNX's checker runs on every import (ImportOptions::onnx_checker): what
// it rejects is an InvalidArgument with its message, never a module. Also
// the importer's own bounds: the opset and the rank of a graph input.
TEST(OnnxChecker, RejectsMalformedGraphs) {
  auto typed_output = [](ModelBuilder& b, const std::string& name, const Shape& dims) {
    b.Output(name);
    auto* tt = b.model().mutable_graph()->mutable_output(b.model().graph().output_size() - 1)
                   ->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kF);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  };
  {  // Two nodes write one tensor: not SSA.
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    b.Node("Relu", {"x"}, {"y"});
    b.Node("Neg", {"x"}, {"y"});
    typed_output(b, "y", {4});
    std::string bytes = b.Bytes();
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("single static assignment"), std::string::npos) << r.status().message();
  }
  {  // The same graph with one writer passes the checker and imports.
    ModelBuilder b(13);
    b.Input("x", kF, {4});
    b.Node("Relu", {"x"}, {"y"});
    typed_output(b, "y", {4});
    std::string bytes = b.Bytes();
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), {});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
  }
  {  // An opset no ONNX release defines.
    ModelBuilder b(999);
    b.Input("x", kF, {4});
    b.Node("Relu", {"x"}, {"y"});
    typed_output(b, "y", {4});
    std::string bytes = b.Bytes();
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("opset 999"), std::string::npos) << r.status().message();
  }
  {  // A rank-9 input: more than the runtime's KILN_MAX_RANK.
    ModelBuilder b(13);
    b.Input("x", kF, Shape(9, 1));
    b.Node("Relu", {"x"}, {"y"});
    typed_output(b, "y", Shape(9, 1));
    std::string bytes = b.Bytes();
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), {});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("input 'x' has rank 9"), std::string::npos) << r.status().message();
  }
}

TEST(OnnxImporter, MutatedModelsNeverCrash) {
  ModelBuilder b(13);
  b.Input("x", kF, {1, 2, 4, 4});
  b.Init("w", kF, {2, 1, 3, 3}, std::vector<double>(18, 0.5), true);
  b.Init("s", kF, {2}, {1, 2});
  b.InitI64("shape", {1, -1});
  b.InitI64("starts", {1});
  b.InitI64("ends", {3});
  b.InitI64("axes", {2});
  auto* c = b.Node("Conv", {"x", "w"}, {"c"});
  ModelBuilder::AttrI(c, "group", 2);
  ModelBuilder::AttrInts(c, "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", {"c", "s", "s", "s", "s"}, {"bn"});
  b.Node("Slice", {"bn", "starts", "ends", "axes"}, {"sl"});
  b.Node("Shape", {"sl"}, {"shp"});
  b.Node("Reshape", {"sl", "shape"}, {"r"});
  b.Node("Softmax", {"r"}, {"sm"});
  auto* p = b.Node("MaxPool", {"bn"}, {"mp"});
  ModelBuilder::AttrInts(p, "kernel_shape", {2, 2});
  b.Output("sm");
  b.Output("mp");
  b.Output("shp");
  const std::string bytes = b.Bytes();
  ASSERT_TRUE(ImportUnchecked(bytes.data(), bytes.size(), {}).ok());
  uint32_t seed = 12345;
  auto rnd = [&seed]() { seed = seed * 1664525u + 1013904223u; return seed >> 8; };
  const int kIters = getenv("KILN_MUTATIONS") ? atoi(getenv("KILN_MUTATIONS")) : 3000;
  int ok = 0;
  for (int iter = 0; iter < kIters; ++iter) {
    std::string m = bytes;
    int flips = 1 + rnd() % 4;
    for (int i = 0; i < flips; ++i) m[rnd() % m.size()] = static_cast<char>(rnd());
    auto r = ImportUnchecked(m.data(), m.size(), {});
    ok += r.ok();
  }
  std::cout << "[ mutations ] " << ok << "/" << kIters << " still imported\n";
}

// --- ONNX backend node tests (libonnx-testdata) ---------------------------------------
// Every node test whose ops the importer claims must import, or fail with
// kUnimplemented (an attribute value or dtype not supported). Then its
// inputs from test_data_set_0 are turned into initializers: where the whole
// graph folds to constants, the folded values must match the reference
// outputs (this checks the constant folder and the lowering's semantics).
std::string NodeTestRoot() {
  for (const char* d : {"/usr/share/libonnx-testdata/data/node", "/usr/include/onnx/backend/test/data/node"})
    if (FileExists(std::string(d) + "/test_abs/model.onnx")) return d;
  return "";
}

bool ReadProto(const std::string& path, google::protobuf::MessageLite* msg) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return msg->ParseFromString(bytes);
}

// Converts a TensorProto through the importer (an initializer that is also
// the graph output).
StatusOr<ir::DenseElements> TensorToDenseForTest(const onnx::TensorProto& t) {
  ModelBuilder b(13);
  onnx::TensorProto c = t;
  c.set_name("t");
  *b.model().mutable_graph()->add_initializer() = c;
  b.Output("t");
  auto r = b.Import();
  if (!r.ok()) return r.take_status();
  Value* v = Result(*r.value());
  return *v->defining_op()->dense_attr("value");
}

TEST(OnnxNodeTests, ImportAndFoldAgainstReference) {
  std::string root = NodeTestRoot();
  if (root.empty()) GTEST_SKIP() << "ONNX node test data not installed (libonnx-testdata)";
  std::vector<std::string> ops = SupportedOnnxOps();
  std::set<std::string> supported(ops.begin(), ops.end());
  std::vector<std::string> dirs;
  if (DIR* d = opendir(root.c_str())) {
    while (dirent* e = readdir(d)) if (e->d_name[0] != '.') dirs.push_back(e->d_name);
    closedir(d);
  }
  std::sort(dirs.begin(), dirs.end());
  int claimed = 0, imported = 0, folded = 0, matched = 0;
  std::string unimplemented, failures;
  for (const std::string& name : dirs) {
    std::string dir = root + "/" + name;
    onnx::ModelProto model;
    if (!ReadProto(dir + "/model.onnx", &model)) continue;
    bool all = model.graph().node_size() > 0;
    for (const auto& node : model.graph().node())
      all &= (node.domain().empty() || node.domain() == "ai.onnx") && supported.count(node.op_type());
    if (!all) continue;
    ++claimed;
    // Sequence/optional inputs need their structure (--sequence-input); the
    // e2e harness (tests/e2e/onnx_node_test.cc) gives it from the test data.
    bool composite_input = false;
    for (const auto& in : model.graph().input()) composite_input |= !in.type().has_tensor_type();
    if (composite_input) continue;
    std::string bytes = model.SerializeAsString();
    auto r = ImportOnnxBytes(bytes.data(), bytes.size(), {});
    if (!r.ok()) {
      std::string line = "  " + name + ": " + r.status().ToString() + "\n";
      (r.status().code() == StatusCode::kUnimplemented ? unimplemented : failures) += line;
      continue;
    }
    ++imported;
    Status v = ir::Verify(*r.value());
    if (!v.ok()) failures += "  " + name + ": verify: " + v.ToString() + "\n";
    // Constant inputs.
    onnx::ModelProto cm = model;
    auto* g = cm.mutable_graph();
    std::set<std::string> inits;
    for (const auto& t : g->initializer()) inits.insert(t.name());
    int k = 0;
    bool have_inputs = true;
    for (const auto& out : model.graph().output())
      have_inputs &= out.type().has_tensor_type();  // sequences/optionals: onnx_node_test.cc
    for (const auto& in : model.graph().input()) {
      if (inits.count(in.name())) continue;
      if (!in.type().has_tensor_type()) { have_inputs = false; break; }
      onnx::TensorProto t;
      if (!ReadProto(dir + "/test_data_set_0/input_" + std::to_string(k++) + ".pb", &t)) { have_inputs = false; break; }
      t.set_name(in.name());
      // ONNX's test data stores bfloat16 as UINT16 bits (numpy has no bfloat16).
      if (in.type().tensor_type().elem_type() == onnx::TensorProto_DataType_BFLOAT16 &&
          t.data_type() == onnx::TensorProto_DataType_UINT16)
        t.set_data_type(onnx::TensorProto_DataType_BFLOAT16);
      *g->add_initializer() = t;
    }
    if (!have_inputs) continue;
    g->clear_input();
    std::string cbytes = cm.SerializeAsString();
    auto c = ImportUnchecked(cbytes.data(), cbytes.size(), {});
    if (!c.ok()) { failures += "  " + name + " (constant inputs): " + c.status().ToString() + "\n"; continue; }
    ir::Module& m = *c.value();
    Operation* ret = Body(m)->terminator();
    bool all_const = true;
    for (Value* res : ret->operands())
      all_const &= res->defining_op() && res->defining_op()->is("tensor.constant");
    if (!all_const) continue;
    ++folded;
    bool ok = true;
    std::string why;
    for (unsigned i = 0; i < ret->num_operands() && ok; ++i) {
      onnx::TensorProto want;
      if (!ReadProto(dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb", &want)) { ok = false; why = "no output"; break; }
      const bool bf16 = i < static_cast<unsigned>(model.graph().output_size()) &&
                        model.graph().output(static_cast<int>(i)).type().tensor_type().elem_type() ==
                            onnx::TensorProto_DataType_BFLOAT16;
      if (bf16 && want.data_type() == onnx::TensorProto_DataType_UINT16)
        want.set_data_type(onnx::TensorProto_DataType_BFLOAT16);
      auto wd = TensorToDenseForTest(want);
      if (!wd.ok()) { ok = false; why = wd.status().ToString(); break; }
      const ir::DenseElements& got = *ret->operand(i)->defining_op()->dense_attr("value");
      if (got.type.shape != wd.value().type.shape || got.type.dtype != wd.value().type.dtype) {
        ok = false;
        why = "type " + got.type.ToString() + " want " + wd.value().type.ToString();
        break;
      }
      for (int64_t j = 0; j < got.type.num_elements(); ++j) {
        double a = ReadElementAsDouble(got, j), b = ReadElementAsDouble(wd.value(), j);
        // bf16: ONNX 1.12's reference truncates f32, Kiln rounds to nearest
        // even; they differ by at most one bf16 step (2^-7 relative). These
        // tests' expected outputs are hard-coded to 4 decimals in ONNX's test
        // generator: checked at ONNX's backend-test rtol (1e-3).
        static const std::set<std::string> kFourDecimals = {
            "test_gridsample_bicubic", "test_roialign_aligned_false", "test_roialign_aligned_true"};
        const double rtol = bf16 ? 0x1p-7 : kFourDecimals.count(name) ? 1e-3 : 1e-5;
        bool same = (std::isnan(a) && std::isnan(b)) || a == b ||
                    std::fabs(a - b) <= 1e-6 + rtol * std::fabs(b);
        if (!same) {
          ok = false;
          why = "element " + std::to_string(j) + ": got " + std::to_string(a) + " want " + std::to_string(b);
          break;
        }
      }
    }
    if (ok) ++matched;
    else failures += "  " + name + " (folded): " + why + "\n";
  }
  std::cout << "[ node tests ] claimed " << claimed << ", imported " << imported << ", folded "
            << folded << ", folded and matched " << matched << "\n";
  std::cout << "[ node tests ] kUnimplemented:\n" << unimplemented;
  EXPECT_TRUE(failures.empty()) << failures;
  EXPECT_GT(matched, 100);
}

// --- real models ---------------------------------------------------------------------
#ifndef KILN_MODELS_DIR
#define KILN_MODELS_DIR ".cache/models"
#endif

struct RealModel {
  const char* file;
  std::map<std::string, Shape> shapes;
  const char* result_type;
};

void CheckRealModel(const RealModel& rm) {
  std::string path = std::string(KILN_MODELS_DIR) + "/" + rm.file;
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path << " (run scripts/setup.sh)";
  ImportOptions o;
  for (auto& kv : rm.shapes) o.input_shapes[kv.first] = kv.second;
  auto r = ImportOnnxFile(path, o);
  ASSERT_TRUE(r.ok()) << rm.file << ": " << r.status().ToString();
  ir::Module& m = *r.value();
  Status v = ir::Verify(m);
  EXPECT_TRUE(v.ok()) << v.ToString();
  EXPECT_EQ(TypeStr(Result(m)), rm.result_type) << rm.file;
  std::map<std::string, int> h = Histogram(m);
  std::cout << "[ op histogram ] " << rm.file << ": " << HistogramStr(m) << "\n";
  // Shape arithmetic must have folded away: no int64 non-constant ops, no
  // host-only ops left behind.
  for (Operation* op : Ops(m)) {
    if (op->is("tensor.constant")) continue;
    EXPECT_NE(op->result()->type().dtype, DType::kI64) << rm.file << ": " << op->name() << " at " << op->loc();
    EXPECT_FALSE(op->loc().empty()) << op->name();
    for (Value* operand : op->operands())
      EXPECT_TRUE(operand->type().is_tensor());
  }
  for (const char* gone : {"tensor.cast", "tensor.gather", "tensor.concat"})
    EXPECT_EQ(h.count(gone), 0u) << rm.file << " kept " << gone;
  // Every constant is used (dead constants removed).
  for (Operation* op : Ops(m, "tensor.constant")) EXPECT_FALSE(op->result()->use_empty());
}

TEST(OnnxImporterModels, PaddleOcrCls) {
  CheckRealModel({"ch_ppocr_mobile_v2.0_cls_infer.onnx", {{"x", {1, 3, 48, 192}}}, "tensor<1x2xf32>"});
  std::string path = std::string(KILN_MODELS_DIR) + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  if (!FileExists(path)) return;
  auto r = ImportOnnxFile(path, {{{"x", {1, 3, 48, 192}}}});
  ASSERT_TRUE(r.ok());
  auto h = Histogram(*r.value());
  EXPECT_EQ(h["tensor.conv2d"], 53);
  EXPECT_EQ(h["tensor.softmax"], 1);
  EXPECT_EQ(h["tensor.slice"], 0);
  EXPECT_EQ(h["tensor.hard_sigmoid"], 9);
  EXPECT_EQ(h["tensor.clamp"], 18);
  EXPECT_EQ(h["tensor.reduce"], 10);
  // Without the override the error names the input and suggests the flag.
  auto e = ImportOnnxFile(path, {});
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.status().message().find("input 'x' has a dynamic dim 0"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("--input-shape=x=?x3x?x?"), std::string::npos) << e.status().message();
}

TEST(OnnxImporterModels, Melspectrogram) {
  CheckRealModel({"melspectrogram.onnx", {{"input", {1, 1280}}}, "tensor<1x1x5x32xf32>"});
}

TEST(OnnxImporterModels, Embedding) {
  CheckRealModel({"embedding_model.onnx", {{"input_1", {1, 76, 32, 1}}}, "tensor<1x1x1x96xf32>"});
}

TEST(OnnxImporterModels, WakewordHeads) {
  CheckRealModel({"alexa_v0.1.onnx", {}, "tensor<1x1xf32>"});
  CheckRealModel({"hey_mycroft_v0.1.onnx", {}, "tensor<1x1xf32>"});
  CheckRealModel({"hey_rhasspy_v0.1.onnx", {}, "tensor<1x1xf32>"});
  CheckRealModel({"weather_v0.1.onnx", {}, "tensor<1x1xf32>"});
  CheckRealModel({"timer_v0.1.onnx", {}, "tensor<1x7xf32>"});
}

TEST(OnnxImporterModels, WakewordHeadsWithOverride) {
  CheckRealModel({"alexa_v0.1.onnx", {{"onnx::Flatten_0", {1, 16, 96}}}, "tensor<1x1xf32>"});
  CheckRealModel({"weather_v0.1.onnx", {{"onnx::Flatten_0", {1, 22, 96}}}, "tensor<1x1xf32>"});
  CheckRealModel({"timer_v0.1.onnx", {{"onnx::Flatten_0", {1, 34, 96}}}, "tensor<1x7xf32>"});
}

// Minimal .npy reader (format 1.0, little-endian '<f4'/'<i8', C order).
bool ReadNpy(const std::string& path, Shape* shape, std::vector<double>* values, std::string* descr) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return false;
  size_t hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
  std::string header = bytes.substr(10, hlen);
  size_t d = header.find("'descr': '");
  if (d == std::string::npos) return false;
  *descr = header.substr(d + 10, 3);
  size_t sp = header.find("'shape': (");
  if (sp == std::string::npos) return false;
  shape->clear();
  std::stringstream ss(header.substr(sp + 10, header.find(')', sp) - sp - 10));
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(" ") == std::string::npos) continue;
    shape->push_back(std::stoll(tok));
  }
  int64_t n = 1;
  for (int64_t x : *shape) n *= x;
  const char* data = bytes.data() + 10 + hlen;
  size_t es = *descr == "<f4" ? 4 : *descr == "<i8" ? 8 : 0;
  if (es == 0 || bytes.size() < 10 + hlen + n * es) return false;
  values->resize(n);
  for (int64_t i = 0; i < n; ++i) {
    if (es == 4) { float v; std::memcpy(&v, data + 4 * i, 4); (*values)[i] = v; }
    else { int64_t v; std::memcpy(&v, data + 8 * i, 8); (*values)[i] = static_cast<double>(v); }
  }
  return true;
}

#ifndef KILN_GOLDEN_DIR
#define KILN_GOLDEN_DIR "tests/golden"
#endif

// End-to-end check of the lowering without a runtime: the golden input
// becomes an initializer, the whole model folds on the host (const_eval.h),
// and the folded output must match ONNX Runtime's.
void CheckGoldenByFolding(const std::string& golden) {
  std::string dir = std::string(KILN_GOLDEN_DIR) + "/" + golden;
  std::ifstream mt(dir + "/model.txt");
  std::string model_file;
  if (!(mt >> model_file)) GTEST_SKIP() << "no golden data in " << dir;
  std::string path = std::string(KILN_MODELS_DIR) + "/" + model_file;
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path;
  onnx::ModelProto model;
  ASSERT_TRUE(ReadProto(path, &model));
  auto* g = model.mutable_graph();
  std::set<std::string> inits;
  for (const auto& t : g->initializer()) inits.insert(t.name());
  int k = 0;
  for (const auto& in : g->input()) {
    if (inits.count(in.name())) continue;
    Shape shape;
    std::vector<double> vals;
    std::string descr;
    ASSERT_TRUE(ReadNpy(dir + "/input_" + std::to_string(k++) + ".npy", &shape, &vals, &descr));
    ASSERT_EQ(descr, "<f4");
    *g->add_initializer() = ModelBuilder::Tensor(in.name(), kF, shape, vals, /*raw=*/true);
  }
  g->clear_input();
  std::string bytes = model.SerializeAsString();
  auto r = ImportUnchecked(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Value* res = Result(*r.value());
  ASSERT_TRUE(res->defining_op()->is("tensor.constant")) << golden << ": did not fold";
  Shape want_shape;
  std::vector<double> want, got = Values(res);
  std::string descr;
  ASSERT_TRUE(ReadNpy(dir + "/output_0.npy", &want_shape, &want, &descr));
  ASSERT_EQ(res->type().shape, want_shape);
  double max_err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double err = std::fabs(got[i] - want[i]);
    max_err = std::max(max_err, err);
    EXPECT_LE(err, 1e-4 + 1e-3 * std::fabs(want[i])) << golden << " element " << i;
  }
  std::cout << "[ golden ] " << golden << ": " << want.size() << " values, max |err| " << max_err
            << ", first " << got[0] << " (ORT " << want[0] << ")\n";
}

TEST(OnnxImporterGolden, FoldedModelsMatchOnnxRuntime) {
  for (const char* g : {"cls_upright", "cls_rotated", "melspectrogram", "embedding_model", "alexa_v0.1",
                        "hey_mycroft_v0.1", "hey_rhasspy_v0.1", "weather_v0.1", "timer_v0.1"}) {
    SCOPED_TRACE(g);
    CheckGoldenByFolding(g);
  }
}

TEST(OnnxImporterModels, TruncatedRealModelIsDataLoss) {
  std::string path = std::string(KILN_MODELS_DIR) + "/embedding_model.onnx";
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path;
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto r = ImportUnchecked(bytes.data(), bytes.size() / 2, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "failed to parse ONNX model");
}


// --- control flow: If, Loop, Scan, LSTM ----------------------------------------------
constexpr int kBool = onnx::TensorProto_DataType_BOOL;

ir::DenseElements DenseF(const Shape& s, const std::vector<double>& v) {
  return MakeDenseFromDoubles(Type::Tensor(DType::kF32, s), v);
}
ir::DenseElements DenseI(DType dt, const Shape& s, const std::vector<int64_t>& v) {
  return MakeDenseFromInts(Type::Tensor(dt, s), v);
}
std::vector<double> ToVec(const ir::DenseElements& d) {
  std::vector<double> r;
  for (int64_t i = 0; i < d.type.num_elements(); ++i) r.push_back(ReadElementAsDouble(d, i));
  return r;
}
// Runs @main of `m` on the host (const_eval.h InterpretFunction).
std::vector<std::vector<double>> Eval(ir::Module& m, const std::vector<ir::DenseElements>& args) {
  auto r = InterpretFunction(Main(m), args);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<std::vector<double>> out;
  if (r.ok())
    for (auto& d : r.value()) out.push_back(ToVec(d));
  return out;
}
// Ops named `name` anywhere (nested regions included).
int CountDeep(ir::Module& m, const std::string& name) {
  int n = 0;
  Main(m)->Walk([&](Operation* op) { n += op->name() == name; });
  return n;
}
std::string PrintIR(ir::Module& m) { return ir::PrintModule(m); }

// then: y = x + x (captures x); else: y = x * w (w: a subgraph initializer).
ModelBuilder IfModel(const Shape& else_shape = {2}) {
  ModelBuilder b(13);
  b.Input("c", kBool, {});
  b.Input("x", kF, {2});
  ModelBuilder then_b, else_b;
  then_b.Node("Add", {"x", "x"}, {"t"});
  then_b.Output("t");
  int64_t count = 1;
  for (int64_t d : else_shape) count *= d;
  std::vector<double> w(count, 3.0);
  else_b.Init("w", kF, else_shape, w);
  else_b.Node("Mul", {"x", "w"}, {"e"});
  else_b.Output("e");
  auto* n = b.Node("If", {"c"}, {"y"}, "if_0");
  ModelBuilder::AttrG(n, "then_branch", then_b.graph());
  ModelBuilder::AttrG(n, "else_branch", else_b.graph());
  b.Node("Relu", {"y"}, {"z"});
  b.Output("z");
  return b;
}

TEST(OnnxImporter, PadWithRuntimeConstantValue) {
  // x = [1, 2, 3] padded by 2 before and cropped by 1 after, with the fill
  // value a graph input v = -7: [-7, -7, 1, 2]. The fill is a select on the
  // (constant) mask of the elements taken from x.
  ModelBuilder b(13);
  b.Input("x", kF, {3});
  b.Input("v", kF, {});
  b.InitI64("pads", {2, -1});
  b.Node("Pad", {"x", "pads", "v"}, {"p"});
  b.Output("p");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<4xf32>");
  EXPECT_TRUE(Result(*m, 0)->defining_op()->is("tensor.select"));
  auto out = Eval(*m, {MakeDenseFromDoubles(Type::Tensor(DType::kF32, {3}), {1, 2, 3}),
                       MakeDenseFromDoubles(Type::Tensor(DType::kF32, {}), {-7})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], (std::vector<double>{-7, -7, 1, 2}));
}

TEST(OnnxControlFlow, IfOnDataBecomesScfIf) {
  ModelBuilder b = IfModel();
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  auto h = Histogram(*m);
  EXPECT_EQ(h["tensor.extract"], 1) << HistogramStr(*m);
  EXPECT_EQ(h["scf.if"], 1);
  Operation* op = Ops(*m, "scf.if")[0];
  EXPECT_EQ(op->loc(), "if_0");
  EXPECT_EQ(op->operand(0)->type().kind, ir::TypeKind::kI1);
  EXPECT_TRUE(op->operand(0)->defining_op()->is("tensor.extract"));
  ASSERT_EQ(op->num_regions(), 2u);
  EXPECT_EQ(TypeStr(op->result(0)), "tensor<2xf32>");
  // then: tensor.add of the captured argument %x, yielded.
  ir::Block* then_b = op->region(0)->block(0);
  EXPECT_EQ(then_b->num_arguments(), 0u);
  EXPECT_TRUE(then_b->terminator()->is("scf.yield"));
  Operation* add = then_b->terminator()->operand(0)->defining_op();
  ASSERT_TRUE(add && add->is("tensor.add"));
  EXPECT_EQ(add->operand(0), Body(*m)->argument(1));
  EXPECT_EQ(add->loc(), "if_0/then/Add_0");
  ir::Block* else_b = op->region(1)->block(0);
  EXPECT_TRUE(else_b->terminator()->is("scf.yield"));
  std::cout << PrintIR(*m);
  // Host evaluation of both paths.
  auto t = Eval(*m, {DenseI(DType::kBool, {}, {1}), DenseF({2}, {1, -2})});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0], (std::vector<double>{2, 0}));
  auto e = Eval(*m, {DenseI(DType::kBool, {}, {0}), DenseF({2}, {1, -2})});
  EXPECT_EQ(e[0], (std::vector<double>{3, 0}));
}

TEST(OnnxControlFlow, IfOnConstantIsInlined) {
  for (int c : {0, 1}) {
    ModelBuilder b = IfModel();
    b.model().mutable_graph()->mutable_input()->DeleteSubrange(0, 1);
    b.Init("c", kBool, {}, {});
    auto* t = b.model().mutable_graph()->mutable_initializer(0);
    t->add_int32_data(c);
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(CountDeep(*m, "scf.if"), 0);
    EXPECT_EQ(CountDeep(*m, "tensor.extract"), 0);
    auto h = Histogram(*m);
    EXPECT_EQ(h[c ? "tensor.add" : "tensor.mul"], 1) << HistogramStr(*m);
    EXPECT_EQ(Ops(*m, c ? "tensor.add" : "tensor.mul")[0]->loc(), c ? "if_0/then/Add_0" : "if_0/else/Mul_0");
  }
  // --constant-input fixes the graph input the same way.
  ImportOptions o;
  ASSERT_TRUE(ParseConstantInputFlag("c=true", &o).ok());
  auto m = MustImport(IfModel(), o);
  ASSERT_TRUE(m);
  EXPECT_EQ(CountDeep(*m, "scf.if"), 0);
  EXPECT_EQ(Main(*m)->strs_attr("arg_names"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(Eval(*m, {DenseF({2}, {4, 5})})[0], (std::vector<double>{8, 10}));
}

TEST(OnnxControlFlow, IfBranchesWithDifferentShapesAreUnimplemented) {
  // An ill-formed branch is reported from inside it.
  auto r = IfModel({3}).Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(),
            "INVALID_ARGUMENT: node 'if_0/else/Mul_0' (Mul): shapes [2] and [3] do not broadcast");
  // then [2], else [2,2].
  auto r2 = IfModel({2, 2}).Import();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r2.status().message().find("node 'if_0' (If): If branches produce different types for output 0"),
            std::string::npos) << r2.status().message();
}

TEST(OnnxControlFlow, ParseConstantInputFlag) {
  ImportOptions o;
  EXPECT_TRUE(ParseConstantInputFlag("sr=16000", &o).ok());
  EXPECT_EQ(o.constant_inputs["sr"], (std::vector<double>{16000}));
  EXPECT_TRUE(ParseConstantInputFlag("v=1,-2.5,3e2", &o).ok());
  EXPECT_EQ(o.constant_inputs["v"], (std::vector<double>{1, -2.5, 300}));
  for (const char* bad : {"sr", "=1", "sr=", "sr=1,", "sr=x", "sr=1,,2"})
    EXPECT_EQ(ParseConstantInputFlag(bad, &o).code(), StatusCode::kInvalidArgument) << bad;
  // Wrong element count, unknown input.
  ImportOptions o2;
  o2.constant_inputs["x"] = {1, 2, 3};
  EXPECT_EQ(IfModel().Import(o2).status().code(), StatusCode::kInvalidArgument);
  ImportOptions o3;
  o3.constant_inputs["nope"] = {1};
  EXPECT_EQ(IfModel().Import(o3).status().code(), StatusCode::kInvalidArgument);
}

// Loop body: y_out = y_in + x (x captured), optional scan output y_out, and
// a condition output (Identity(cond_in) or y_out < limit).
ModelBuilder LoopModel(bool m_input, bool scan, bool data_cond, bool iter_in_body = false) {
  ModelBuilder b(13);
  if (m_input) b.Input("M", kI64, {});
  else b.Init("M", kI64, {}, {4});
  b.Input("x", kF, {2});
  b.Input("y0", kF, {2});
  b.Init("cond0", kBool, {}, {});
  b.model().mutable_graph()->mutable_initializer(b.model().graph().initializer_size() - 1)->add_int32_data(1);
  ModelBuilder body;
  body.Input("i", kI64, {});
  body.Input("cin", kBool, {});
  body.Input("yin", kF, {2});
  body.Node("Add", {"yin", "x"}, {"yout"});
  if (iter_in_body) {
    body.Node("Cast", {"i"}, {"fi"});
    ModelBuilder::AttrI(body.model().mutable_graph()->mutable_node(1), "to", kF);
    body.Node("Add", {"yout", "fi"}, {"yout2"});
  }
  std::string yo = iter_in_body ? "yout2" : "yout";
  if (data_cond) {
    body.Init("limit", kF, {}, {10});
    body.Node("ReduceSum", {yo}, {"s"});
    ModelBuilder::AttrI(body.model().mutable_graph()->mutable_node(body.model().graph().node_size() - 1), "keepdims", 0);
    body.Node("Less", {"s", "limit"}, {"cout"});
  } else {
    body.Node("Identity", {"cin"}, {"cout"});
  }
  body.Output("cout");
  body.Output(yo);
  if (scan) {
    body.Node("Neg", {yo}, {"sc"});
    body.Output("sc");
  }
  std::vector<std::string> outs = {"y"};
  if (scan) outs.push_back("ys");
  auto* n = b.Node("Loop", {"M", "cond0", "y0"}, outs, "loop_0");
  ModelBuilder::AttrG(n, "body", body.graph());
  for (auto& o : outs) b.Output(o);
  return b;
}

TEST(OnnxControlFlow, LoopWithTripCountBecomesScfFor) {
  auto m = MustImport(LoopModel(false, false, false));
  ASSERT_TRUE(m);
  EXPECT_EQ(Histogram(*m)["scf.for"], 1) << HistogramStr(*m);
  Operation* op = Ops(*m, "scf.for")[0];
  // No counter: the body does not read the iteration number.
  ASSERT_EQ(op->num_operands(), 4u);
  EXPECT_EQ(op->operand(1)->defining_op()->name(), "arith.constant");
  EXPECT_EQ(op->operand(1)->defining_op()->int_attr("value"), 4);
  ir::Block* body = op->region(0)->block(0);
  EXPECT_EQ(body->num_arguments(), 2u);
  EXPECT_EQ(body->argument(0)->type().kind, ir::TypeKind::kIndex);
  std::cout << PrintIR(*m);
  auto r = Eval(*m, {DenseF({2}, {1, 2}), DenseF({2}, {10, 20})});
  EXPECT_EQ(r[0], (std::vector<double>{14, 28}));
}

TEST(OnnxControlFlow, LoopScanOutputsAccumulateInScfFor) {
  auto m = MustImport(LoopModel(false, true, false, /*iter_in_body=*/true));
  ASSERT_TRUE(m);
  EXPECT_EQ(Histogram(*m)["scf.for"], 1) << HistogramStr(*m);
  Operation* op = Ops(*m, "scf.for")[0];
  // iter_args: counter, y, scan accumulator [4, 2].
  ASSERT_EQ(op->num_results(), 3u);
  EXPECT_EQ(TypeStr(op->result(0)), "tensor<i64>");
  EXPECT_EQ(TypeStr(op->result(2)), "tensor<4x2xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<4x2xf32>");
  auto r = Eval(*m, {DenseF({2}, {1, 2}), DenseF({2}, {0, 0})});
  // y_k = y_{k-1} + x + k
  EXPECT_EQ(r[0], (std::vector<double>{10, 14}));
  EXPECT_EQ(r[1], (std::vector<double>{-1, -2, -3, -5, -6, -9, -10, -14}));
}

TEST(OnnxControlFlow, LoopWithDynamicTripCountExtractsIt) {
  auto m = MustImport(LoopModel(true, false, false));
  ASSERT_TRUE(m);
  Operation* op = Ops(*m, "scf.for")[0];
  EXPECT_TRUE(op->operand(1)->defining_op()->is("tensor.extract"));
  auto r = Eval(*m, {DenseI(DType::kI64, {}, {3}), DenseF({2}, {1, 2}), DenseF({2}, {0, 0})});
  EXPECT_EQ(r[0], (std::vector<double>{3, 6}));
  // Scan outputs need a static trip count.
  auto e = LoopModel(true, true, false).Import();
  EXPECT_EQ(e.status().code(), StatusCode::kUnimplemented);
}

TEST(OnnxControlFlow, LoopWithDataDependentConditionBecomesScfWhile) {
  auto m = MustImport(LoopModel(false, false, true));
  ASSERT_TRUE(m);
  EXPECT_EQ(Histogram(*m)["scf.while"], 1) << HistogramStr(*m);
  EXPECT_EQ(Histogram(*m).count("scf.for"), 0u);
  Operation* op = Ops(*m, "scf.while")[0];
  ASSERT_EQ(op->num_regions(), 2u);
  EXPECT_TRUE(op->region(0)->block(0)->terminator()->is("scf.condition"));
  EXPECT_TRUE(op->region(1)->block(0)->terminator()->is("scf.yield"));
  std::cout << PrintIR(*m);
  // Stops at the trip count (4) or once sum(y) >= 10.
  EXPECT_EQ(Eval(*m, {DenseF({2}, {1, 2}), DenseF({2}, {0, 0})})[0], (std::vector<double>{4, 8}));
  EXPECT_EQ(Eval(*m, {DenseF({2}, {0.5, 0.5}), DenseF({2}, {0, 0})})[0], (std::vector<double>{2, 2}));
  // Everything constant: evaluated at import.
  ImportOptions o;
  o.constant_inputs["x"] = {1, 2};
  o.constant_inputs["y0"] = {0, 0};
  auto c = MustImport(LoopModel(false, false, true), o);
  ASSERT_TRUE(c);
  EXPECT_EQ(CountDeep(*c, "scf.while") + CountDeep(*c, "scf.for"), 0);
  EXPECT_EQ(Values(Result(*c)), (std::vector<double>{4, 8}));
}

TEST(OnnxControlFlow, LoopNeedingImportTimeConstantsIsUnrolled) {
  // The body slices with the iteration number (test_loop11's pattern): the
  // slice needs constant starts, so the 3 trips are unrolled.
  ModelBuilder b(13);
  b.Init("M", kI64, {}, {3});
  b.Input("y0", kF, {1});
  b.Init("x", kF, {5}, {1, 2, 3, 4, 5});
  ModelBuilder body;
  body.Input("i", kI64, {});
  body.Input("cin", kBool, {});
  body.Input("yin", kF, {1});
  body.Node("Identity", {"cin"}, {"cout"});
  body.Init("one", kI64, {}, {1});
  body.Node("Add", {"i", "one"}, {"end"});
  ModelBuilder::AttrInts(body.Node("Unsqueeze", {"i"}, {"s"}), "axes", {0});
  ModelBuilder::AttrInts(body.Node("Unsqueeze", {"end"}, {"e"}), "axes", {0});
  body.Node("Slice", {"x", "s", "e"}, {"sl"});
  body.Node("Add", {"yin", "sl"}, {"yout"});
  body.Output("cout");
  body.Output("yout");
  body.Output("yout");
  body.model().mutable_opset_import(0)->set_version(11);
  b.model().mutable_opset_import(0)->set_version(11);
  auto* n = b.Node("Loop", {"M", "", "y0"}, {"y", "ys"}, "loop");
  ModelBuilder::AttrG(n, "body", body.graph());
  b.Output("y");
  b.Output("ys");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(CountDeep(*m, "scf.for") + CountDeep(*m, "scf.while"), 0) << HistogramStr(*m);
  EXPECT_EQ(Histogram(*m)["tensor.add"], 3);
  auto r = Eval(*m, {DenseF({1}, {-2})});
  EXPECT_EQ(r[0], (std::vector<double>{4}));
  EXPECT_EQ(r[1], (std::vector<double>{-1, 1, 4}));
}

TEST(OnnxControlFlow, ScanBecomesScfForWithGather) {
  for (int reverse : {0, 1}) {
    ModelBuilder b(11);
    b.Input("s0", kF, {2});
    b.Input("xs", kF, {2, 3});  // scanned along axis 1
    ModelBuilder body;
    body.Input("sin", kF, {2});
    body.Input("xt", kF, {2});
    body.Node("Add", {"sin", "xt"}, {"sout"});
    body.Node("Identity", {"sout"}, {"yt"});
    body.Output("sout");
    body.Output("yt");
    auto* n = b.Node("Scan", {"s0", "xs"}, {"s", "ys"}, "scan");
    ModelBuilder::AttrG(n, "body", body.graph());
    ModelBuilder::AttrI(n, "num_scan_inputs", 1);
    ModelBuilder::AttrInts(n, "scan_input_axes", {1});
    ModelBuilder::AttrInts(n, "scan_input_directions", {reverse});
    ModelBuilder::AttrInts(n, "scan_output_axes", {-1});
    b.Output("s");
    b.Output("ys");
    auto m = MustImport(b);
    ASSERT_TRUE(m);
    EXPECT_EQ(Histogram(*m)["scf.for"], 1) << HistogramStr(*m);
    EXPECT_EQ(CountDeep(*m, "tensor.gather"), 1);
    EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<2x3xf32>");
    auto r = Eval(*m, {DenseF({2}, {0, 100}), DenseF({2, 3}, {1, 2, 3, 4, 5, 6})});
    EXPECT_EQ(r[0], (std::vector<double>{6, 115}));
    if (!reverse) EXPECT_EQ(r[1], (std::vector<double>{1, 3, 6, 104, 109, 115}));
    else EXPECT_EQ(r[1], (std::vector<double>{3, 5, 6, 106, 111, 115}));
  }
}

TEST(OnnxControlFlow, LstmUnrollLimit) {
  ModelBuilder b(14);
  b.Input("X", kF, {513, 1, 2});
  b.Init("W", kF, {1, 4, 2}, std::vector<double>(8, 0.1));
  b.Init("R", kF, {1, 4, 1}, std::vector<double>(4, 0.1));
  auto* n = b.Node("LSTM", {"X", "W", "R"}, {"", "yh"}, "lstm");
  ModelBuilder::AttrI(n, "hidden_size", 1);
  b.Output("yh");
  auto r = b.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("LSTM over 513 steps"), std::string::npos) << r.status().message();
}

// Random byte mutations of a model with If, Loop, Scan and LSTM: the importer
// returns a Status and never crashes; whatever it imports verifies.
TEST(OnnxControlFlow, MutatedModelsNeverCrash) {
  ModelBuilder b = IfModel();  // y = If(c) {x + x} {x * w}, z = relu(y)
  b.Init("M", kI64, {}, {3});
  ModelBuilder body;
  body.Input("i", kI64, {});
  body.Input("cin", kBool, {});
  body.Input("yin", kF, {2});
  body.Node("Add", {"yin", "x"}, {"yout"});
  body.Node("Identity", {"cin"}, {"cout"});
  body.Output("cout");
  body.Output("yout");
  body.Output("yout");
  ModelBuilder::AttrG(b.Node("Loop", {"M", "", "z"}, {"ly", "lys"}, "loop"), "body", body.graph());
  ModelBuilder sbody;
  sbody.Input("s", kF, {2});
  sbody.Input("t", kF, {2});
  sbody.Node("Add", {"s", "t"}, {"s2"});
  sbody.Output("s2");
  sbody.Output("s2");
  auto* scan = b.Node("Scan", {"ly", "lys"}, {"ss", "sys"}, "scan");
  ModelBuilder::AttrG(scan, "body", sbody.graph());
  ModelBuilder::AttrI(scan, "num_scan_inputs", 1);
  b.Input("X", kF, {2, 1, 3});
  b.Init("W", kF, {1, 8, 3}, std::vector<double>(24, 0.1), true);
  b.Init("R", kF, {1, 8, 2}, std::vector<double>(16, -0.2), true);
  b.Init("B", kF, {1, 16}, std::vector<double>(16, 0.05));
  ModelBuilder::AttrI(b.Node("LSTM", {"X", "W", "R", "B"}, {"Y", "Yh"}, "lstm"), "hidden_size", 2);
  b.Output("sys");
  b.Output("Y");
  b.Output("Yh");
  const std::string bytes = b.Bytes();
  auto base = ImportUnchecked(bytes.data(), bytes.size(), {});
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  ASSERT_TRUE(ir::Verify(*base.value()).ok()) << ir::Verify(*base.value()).ToString();
  EXPECT_EQ(CountDeep(*base.value(), "scf.if"), 1);
  EXPECT_EQ(CountDeep(*base.value(), "scf.for"), 2);
  uint32_t seed = 777;
  auto rnd = [&seed]() { seed = seed * 1664525u + 1013904223u; return seed >> 8; };
  const int kIters = getenv("KILN_MUTATIONS") ? atoi(getenv("KILN_MUTATIONS")) : 3000;
  int ok = 0;
  for (int iter = 0; iter < kIters; ++iter) {
    std::string m = bytes;
    int flips = 1 + rnd() % 4;
    for (int i = 0; i < flips; ++i) m[rnd() % m.size()] = static_cast<char>(rnd());
    auto r = ImportUnchecked(m.data(), m.size(), {});
    if (!r.ok()) continue;
    ++ok;
    Status v = ir::Verify(*r.value());
    EXPECT_TRUE(v.ok()) << "mutation " << iter << ": " << v.ToString();
  }
  std::cout << "[ mutations ] " << ok << "/" << kIters << " still imported\n";
}

// The ONNX node tests of the control-flow ops: each must match its reference
// with the inputs made constants (folded at import), and, where the model
// imports with its inputs as arguments, when the imported (unfolded) IR is
// evaluated on the host.
TEST(OnnxNodeTests, ControlFlowMatchesReference) {
  std::string root = NodeTestRoot();
  if (root.empty()) GTEST_SKIP() << "ONNX node test data not installed (libonnx-testdata)";
  const char* names[] = {"test_if", "test_loop11", "test_scan9_sum", "test_scan_sum",
                         "test_lstm_defaults", "test_lstm_with_initial_bias",
                         "test_lstm_batchwise", "test_lstm_with_peepholes",
                         "test_range_float_type_positive_delta_expanded",
                         "test_range_int32_type_negative_delta_expanded"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    std::string dir = root + "/" + name;
    onnx::ModelProto model;
    ASSERT_TRUE(ReadProto(dir + "/model.onnx", &model));
    std::vector<onnx::TensorProto> inputs, outputs;
    for (int k = 0;; ++k) {
      onnx::TensorProto t;
      if (!ReadProto(dir + "/test_data_set_0/input_" + std::to_string(k) + ".pb", &t)) break;
      inputs.push_back(t);
    }
    for (int k = 0;; ++k) {
      onnx::TensorProto t;
      if (!ReadProto(dir + "/test_data_set_0/output_" + std::to_string(k) + ".pb", &t)) break;
      outputs.push_back(t);
    }
    auto compare = [&](const std::vector<ir::DenseElements>& got, const char* how) {
      ASSERT_EQ(got.size(), outputs.size());
      double max_err = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        auto want = TensorToDenseForTest(outputs[i]);
        ASSERT_TRUE(want.ok());
        ASSERT_EQ(got[i].type, want.value().type) << how;
        for (int64_t j = 0; j < got[i].type.num_elements(); ++j) {
          double a = ReadElementAsDouble(got[i], j), b = ReadElementAsDouble(want.value(), j);
          max_err = std::max(max_err, std::fabs(a - b));
          EXPECT_LE(std::fabs(a - b), 1e-5 + 1e-5 * std::fabs(b)) << how << " output " << i << " element " << j;
        }
      }
      std::cout << "[ control flow ] " << name << " (" << how << "): max |err| " << max_err << "\n";
    };
    // 1. Inputs as constants: the whole model folds.
    onnx::ModelProto cm = model;
    auto* g = cm.mutable_graph();
    for (size_t k = 0; k < inputs.size(); ++k) {
      onnx::TensorProto t = inputs[k];
      t.set_name(model.graph().input(static_cast<int>(k)).name());
      *g->add_initializer() = t;
    }
    g->clear_input();
    std::string cb = cm.SerializeAsString();
    auto c = ImportUnchecked(cb.data(), cb.size(), {});
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE(ir::Verify(*c.value()).ok());
    std::vector<ir::DenseElements> folded;
    for (Value* v : Body(*c.value())->terminator()->operands()) {
      ASSERT_TRUE(v->defining_op() && v->defining_op()->is("tensor.constant")) << "did not fold";
      folded.push_back(*v->defining_op()->dense_attr("value"));
    }
    compare(folded, "folded");
    // 2. Inputs as arguments, evaluated on the host.
    std::string bytes = model.SerializeAsString();
    auto r = ImportUnchecked(bytes.data(), bytes.size(), {});
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().ToString();
      std::cout << "[ control flow ] " << name << " with argument inputs: " << r.status().ToString() << "\n";
      continue;
    }
    ASSERT_TRUE(ir::Verify(*r.value()).ok());
    std::vector<ir::DenseElements> args;
    for (auto& t : inputs) {
      auto d = TensorToDenseForTest(t);
      ASSERT_TRUE(d.ok());
      args.push_back(d.value());
    }
    auto run = InterpretFunction(Main(*r.value()), args);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    compare(run.value(), "interpreted");
  }
}

// --- real models with control flow ----------------------------------------------------
struct Golden {
  std::vector<ir::DenseElements> inputs, outputs;
  std::string model;
};
bool LoadGolden(const std::string& name, Golden* g) {
  std::string dir = std::string(KILN_GOLDEN_DIR) + "/" + name;
  std::ifstream mt(dir + "/model.txt");
  if (!(mt >> g->model)) return false;
  for (int io = 0; io < 2; ++io)
    for (int k = 0;; ++k) {
      Shape shape;
      std::vector<double> vals;
      std::string descr;
      if (!ReadNpy(dir + (io ? "/output_" : "/input_") + std::to_string(k) + ".npy", &shape, &vals, &descr)) break;
      (io ? g->outputs : g->inputs)
          .push_back(MakeDenseFromDoubles(Type::Tensor(descr == "<i8" ? DType::kI64 : DType::kF32, shape), vals));
    }
  return !g->inputs.empty();
}
double MaxErr(const std::vector<ir::DenseElements>& got, const std::vector<ir::DenseElements>& want) {
  EXPECT_EQ(got.size(), want.size());
  double m = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_EQ(got[i].type.shape, want[i].type.shape) << "output " << i;
    if (got[i].type.shape != want[i].type.shape) return INFINITY;
    for (int64_t j = 0; j < got[i].type.num_elements(); ++j)
      m = std::max(m, std::fabs(ReadElementAsDouble(got[i], j) - ReadElementAsDouble(want[i], j)));
  }
  return m;
}

TEST(OnnxImporterModels, HeyJarvisIfOnDataBecomesScfIf) {
  Golden gd;
  if (!LoadGolden("hey_jarvis_v0.1", &gd)) GTEST_SKIP() << "no golden data";
  std::string path = std::string(KILN_MODELS_DIR) + "/" + gd.model;
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path;
  auto r = ImportOnnxFile(path, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ir::Module& m = *r.value();
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m).ToString();
  std::cout << "[ op histogram ] " << gd.model << ": " << HistogramStr(m) << "\n";
  auto h = Histogram(m);
  EXPECT_EQ(h["scf.if"], 1);
  EXPECT_EQ(h["tensor.extract"], 1);
  Operation* op = Ops(m, "scf.if")[0];
  EXPECT_EQ(op->loc(), "If_32");
  EXPECT_EQ(TypeStr(op->result(0)), "tensor<1x1xf32>");
  EXPECT_EQ(TypeStr(op->operand(0)->defining_op()->operand(0)), "tensor<1x1xi1>");
  // then: the verifier network (3 matmuls) on the captured input; else: p1.
  int then_matmuls = 0;
  for (auto& o : op->region(0)->block(0)->ops()) then_matmuls += o->is("tensor.matmul");
  EXPECT_EQ(then_matmuls, 3);
  EXPECT_EQ(op->region(1)->block(0)->ops().size(), 1u);  // just the yield of an outer value
  auto run = InterpretFunction(Main(m), gd.inputs);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  double err = MaxErr(run.value(), gd.outputs);
  std::cout << "[ golden ] hey_jarvis_v0.1 (scf.if, host-evaluated): max |err| " << err << "\n";
  EXPECT_LE(err, 1e-4);
  // The golden input as a constant: the condition folds and the model with it.
  CheckGoldenByFolding("hey_jarvis_v0.1");
}

const std::map<std::string, Shape> kSileroShapes = {{"input", {1, 512}}, {"h", {2, 1, 64}}, {"c", {2, 1, 64}}};

TEST(OnnxImporterModels, SileroVadIfOnSrBecomesScfIf) {
  Golden gd;
  if (!LoadGolden("silero_vad", &gd)) GTEST_SKIP() << "no golden data";
  std::string path = std::string(KILN_MODELS_DIR) + "/" + gd.model;
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path;
  ImportOptions o;
  o.input_shapes = kSileroShapes;
  auto r = ImportOnnxFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ir::Module& m = *r.value();
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m).ToString();
  std::cout << "[ op histogram ] " << gd.model << ": " << HistogramStr(m) << "\n";
  auto h = Histogram(m);
  EXPECT_EQ(h["scf.if"], 1);
  EXPECT_EQ(CountDeep(m, "scf.if"), 1);  // the nested Ifs test shapes: folded and inlined
  EXPECT_EQ(h["tensor.extract"], 1);
  Operation* op = Ops(m, "scf.if")[0];
  EXPECT_EQ(op->loc(), "If_25");
  ASSERT_EQ(op->num_results(), 3u);
  EXPECT_EQ(TypeStr(op->result(0)), "tensor<1x1xf32>");
  EXPECT_EQ(TypeStr(op->result(1)), "tensor<2x1x64xf32>");
  EXPECT_EQ(TypeStr(op->result(2)), "tensor<2x1x64xf32>");
  EXPECT_EQ(Main(m)->strs_attr("arg_names"), (std::vector<std::string>{"input", "sr", "h", "c"}));
  auto run = InterpretFunction(Main(m), gd.inputs);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  double err = MaxErr(run.value(), gd.outputs);
  std::cout << "[ golden ] silero_vad (scf.if on sr, host-evaluated): max |err| " << err << "\n";
  EXPECT_LE(err, 1e-4);
}

TEST(OnnxImporterModels, SileroVadSpecializedToSr16000) {
  Golden gd;
  if (!LoadGolden("silero_vad", &gd)) GTEST_SKIP() << "no golden data";
  std::string path = std::string(KILN_MODELS_DIR) + "/" + gd.model;
  if (!FileExists(path)) GTEST_SKIP() << "model not present: " << path;
  ASSERT_EQ(ReadElementAsInt(gd.inputs[1], 0), 16000);
  ImportOptions o;
  o.input_shapes = kSileroShapes;
  ASSERT_TRUE(ParseConstantInputFlag("sr=16000", &o).ok());
  auto r = ImportOnnxFile(path, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ir::Module& m = *r.value();
  ASSERT_TRUE(ir::Verify(m).ok()) << ir::Verify(m).ToString();
  std::cout << "[ op histogram ] silero_vad --constant-input=sr=16000: " << HistogramStr(m) << "\n";
  EXPECT_EQ(CountDeep(m, "scf.if"), 0);
  EXPECT_EQ(CountDeep(m, "tensor.extract"), 0);
  EXPECT_EQ(Main(m)->strs_attr("arg_names"), (std::vector<std::string>{"input", "h", "c"}));
  for (Operation* op : Ops(m)) EXPECT_EQ(op->num_regions(), 0u) << op->name();
  auto run = InterpretFunction(Main(m), {gd.inputs[0], gd.inputs[2], gd.inputs[3]});
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  double err = MaxErr(run.value(), gd.outputs);
  std::cout << "[ golden ] silero_vad sr=16000 (host-evaluated): max |err| " << err << "\n";
  EXPECT_LE(err, 1e-4);
  // Every input a constant: the model folds at import and matches ORT.
  ImportOptions all = o;
  const char* names[] = {"input", "sr", "h", "c"};
  for (int i = 0; i < 4; ++i) all.constant_inputs[names[i]] = ToVec(gd.inputs[i]);
  auto f = ImportOnnxFile(path, all);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<ir::DenseElements> folded;
  for (Value* v : Body(*f.value())->terminator()->operands()) {
    ASSERT_TRUE(v->defining_op()->is("tensor.constant")) << "did not fold";
    folded.push_back(*v->defining_op()->dense_attr("value"));
  }
  double ferr = MaxErr(folded, gd.outputs);
  std::cout << "[ golden ] silero_vad folded at import: max |err| " << ferr << " (output "
            << ReadElementAsDouble(folded[0], 0) << ", ORT " << ReadElementAsDouble(gd.outputs[0], 0) << ")\n";
  EXPECT_LE(ferr, 1e-4);
}

// --- sequences and optionals (onnx_sequence.cc) ------------------------------------------
// A graph input of type sequence(tensor(elem)) (optional(...) when `optional`).
void SeqInput(ModelBuilder& b, const std::string& name, int elem, bool optional = false) {
  auto* vi = b.model().mutable_graph()->add_input();
  vi->set_name(name);
  onnx::TypeProto* t = vi->mutable_type();
  if (optional) t = t->mutable_optional_type()->mutable_elem_type();
  t->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(elem);
}
std::vector<std::string> ResultNames(ir::Module& m) { return Main(m)->strs_attr("result_names"); }
std::vector<std::string> ArgNames(ir::Module& m) { return Main(m)->strs_attr("arg_names"); }

TEST(OnnxSequence, ParseSequenceInputFlag) {
  ImportOptions o;
  ASSERT_TRUE(ParseSequenceInputFlag("s=[2x3,scalar,4]", &o).ok());
  EXPECT_TRUE(o.sequence_inputs["s"].present);
  EXPECT_EQ(o.sequence_inputs["s"].element_shapes, (std::vector<Shape>{{2, 3}, {}, {4}}));
  ASSERT_TRUE(ParseSequenceInputFlag("e=[]", &o).ok());
  EXPECT_TRUE(o.sequence_inputs["e"].element_shapes.empty());
  ASSERT_TRUE(ParseSequenceInputFlag("n=none", &o).ok());
  EXPECT_FALSE(o.sequence_inputs["n"].present);
  for (const char* bad : {"s", "=[]", "s=", "s=2x3", "s=[2x3,]", "s=[2xx3]", "s=[,]", "s=[a]"})
    EXPECT_EQ(ParseSequenceInputFlag(bad, &o).code(), StatusCode::kInvalidArgument) << bad;
}

// Construct / Insert / At / Length / Erase on runtime tensors: only the
// element lists change; the results are the original values.
TEST(OnnxSequence, SequenceOpsRearrangeElementsAtImport) {
  ModelBuilder b(13);
  b.Input("a", kF, {2});
  b.Input("b", kF, {3});
  b.Const("c", kF, {1}, {7});
  b.Const("zero", kI64, {}, {0});
  b.Const("last", kI64, {}, {-1});
  b.Node("SequenceConstruct", {"a", "b"}, {"s"});
  b.Node("SequenceInsert", {"s", "c", "zero"}, {"s2"}, "ins");  // [c, a, b]
  b.Node("SequenceAt", {"s2", "last"}, {"at"});                  // b
  b.Node("SequenceLength", {"s2"}, {"len"});                     // 3
  b.Node("SequenceErase", {"s2", "zero"}, {"s3"});               // [a, b]
  b.Node("Relu", {"at"}, {"r"});
  b.Output("s3");
  b.Output("len");
  b.Output("r");
  auto m = MustImport(b);
  ASSERT_TRUE(m);
  EXPECT_EQ(ArgNames(*m), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ResultNames(*m), (std::vector<std::string>{"s3.0", "s3.1", "len", "r"}));
  EXPECT_EQ(Result(*m, 0), Body(*m)->argument(0));
  EXPECT_EQ(Result(*m, 1), Body(*m)->argument(1));
  EXPECT_EQ(Values(Result(*m, 2)), (std::vector<double>{3}));
  EXPECT_EQ(TypeStr(Result(*m, 2)), "tensor<i64>");
  auto h = Histogram(*m);
  EXPECT_EQ(h["tensor.relu"], 1) << HistogramStr(*m);
  EXPECT_EQ(Ops(*m, "tensor.relu")[0]->operand(0), Body(*m)->argument(1));
  auto out = Eval(*m, {DenseF({2}, {1, 2}), DenseF({3}, {-1, 0, 5})});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[3], (std::vector<double>{0, 0, 5}));
}

TEST(OnnxSequence, PositionOutOfRangeOrRuntimeIsAnErrorNamingTheNode) {
  ModelBuilder b(13);
  b.Input("a", kF, {2});
  b.Const("five", kI64, {}, {5});
  b.Node("SequenceConstruct", {"a"}, {"s"});
  b.Node("SequenceAt", {"s", "five"}, {"at"}, "at_5");
  b.Output("at");
  auto r = b.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(),
            "INVALID_ARGUMENT: node 'at_5' (SequenceAt): SequenceAt position 5 is out of range for a "
            "sequence of 1");
  ModelBuilder b2(13);
  b2.Input("a", kF, {2});
  b2.Input("p", kI64, {});
  b2.Node("SequenceConstruct", {"a"}, {"s"});
  b2.Node("SequenceAt", {"s", "p"}, {"at"}, "at_p");
  b2.Output("at");
  auto r2 = b2.Import();
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(r2.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r2.status().message().find("node 'at_p' (SequenceAt): input 'position' must be a constant"),
            std::string::npos) << r2.status().message();
  // A tensor op on a sequence.
  ModelBuilder b3(13);
  b3.Input("a", kF, {2});
  b3.Node("SequenceConstruct", {"a"}, {"s"});
  b3.Node("Relu", {"s"}, {"r"}, "relu");
  b3.Output("r");
  auto r3 = b3.Import();
  ASSERT_FALSE(r3.ok());
  EXPECT_EQ(r3.status().ToString(),
            "INVALID_ARGUMENT: node 'relu' (Relu): input 's' is a sequence of 1 [tensor<2xf32>]; this op "
            "takes tensors");
}

// test_loop13_seq in small: each trip appends x[0 : i+1]; trip count 3 gives
// [1], [1, 2], [1, 2, 3] (hand-derived), each its own static shape.
ModelBuilder SeqLoopModel() {
  ModelBuilder b(13);
  b.Input("M", kI64, {});
  b.Input("cond", kBool, {});
  auto* e = b.Node("SequenceEmpty", {}, {"s0"});
  ModelBuilder::AttrI(e, "dtype", kF);
  ModelBuilder body;
  body.Input("i", kI64, {});
  body.Input("cin", kBool, {});
  SeqInput(body, "sin", kF);
  body.Node("Identity", {"cin"}, {"cout"});
  body.Const("x", kF, {5}, {1, 2, 3, 4, 5});
  body.Const("one", kI64, {}, {1});
  body.Const("start", kI64, {1}, {0});
  body.Node("Add", {"i", "one"}, {"end"});
  body.Const("axes", kI64, {1}, {0});
  body.Node("Unsqueeze", {"end", "axes"}, {"end1"});
  body.Node("Slice", {"x", "start", "end1"}, {"piece"});
  body.Node("SequenceInsert", {"sin", "piece"}, {"sout"});
  body.Output("cout");
  body.Output("sout");
  auto* out = body.model().mutable_graph()->mutable_output(1)->mutable_type();
  out->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(kF);
  auto* n = b.Node("Loop", {"M", "cond", "s0"}, {"res"}, "loop");
  ModelBuilder::AttrG(n, "body", body.graph());
  b.Output("res");
  return b;
}

TEST(OnnxSequence, LoopCarryingASequenceIsUnrolledWhenSpecialized) {
  ImportOptions o;
  ASSERT_TRUE(ParseConstantInputFlag("M=3", &o).ok());
  ASSERT_TRUE(ParseConstantInputFlag("cond=true", &o).ok());
  auto m = MustImport(SeqLoopModel(), o);
  ASSERT_TRUE(m);
  EXPECT_EQ(CountDeep(*m, "scf.for") + CountDeep(*m, "scf.while"), 0);
  EXPECT_EQ(ResultNames(*m), (std::vector<std::string>{"res.0", "res.1", "res.2"}));
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<1xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 2)), "tensor<3xf32>");
  EXPECT_EQ(Values(Result(*m, 0)), (std::vector<double>{1}));
  EXPECT_EQ(Values(Result(*m, 1)), (std::vector<double>{1, 2}));
  EXPECT_EQ(Values(Result(*m, 2)), (std::vector<double>{1, 2, 3}));
  // cond = false: zero trips, an empty sequence, no results.
  ImportOptions o2;
  o2.constant_inputs = {{"M", {3}}, {"cond", {0}}};
  auto m2 = MustImport(SeqLoopModel(), o2);
  ASSERT_TRUE(m2);
  EXPECT_TRUE(ResultNames(*m2).empty());
}

TEST(OnnxSequence, LoopCarryingASequenceWithRuntimeTripCountIsAnError) {
  auto r = SeqLoopModel().Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("node 'loop' (Loop): a Loop that carries a sequence or optional is "
                                      "unrolled at import: its trip count M (given: runtime)"),
            std::string::npos)
      << r.status().message();
}

// If on a runtime condition whose branches give sequences of the same
// structure: an scf.if with one result per element.
ModelBuilder SeqIfModel(bool else_two) {
  ModelBuilder b(13);
  b.Input("c", kBool, {});
  b.Input("x", kF, {2});
  ModelBuilder then_b, else_b;
  then_b.Node("Add", {"x", "x"}, {"t"});
  then_b.Node("SequenceConstruct", {"t"}, {"ts"});
  then_b.Output("ts");
  else_b.Const("w", kF, {2}, {3, 3});
  else_b.Node("Mul", {"x", "w"}, {"e"});
  if (else_two) else_b.Node("SequenceConstruct", {"e", "e"}, {"es"});
  else else_b.Node("SequenceConstruct", {"e"}, {"es"});
  else_b.Output("es");
  auto* n = b.Node("If", {"c"}, {"s"}, "if_0");
  ModelBuilder::AttrG(n, "then_branch", then_b.graph());
  ModelBuilder::AttrG(n, "else_branch", else_b.graph());
  b.Output("s");
  return b;
}

TEST(OnnxSequence, IfWithSequenceOutputsBecomesScfIfPerElement) {
  auto m = MustImport(SeqIfModel(false));
  ASSERT_TRUE(m);
  EXPECT_EQ(CountDeep(*m, "scf.if"), 1);
  Operation* op = Ops(*m, "scf.if")[0];
  EXPECT_EQ(op->num_results(), 1u);
  EXPECT_EQ(TypeStr(op->result(0)), "tensor<2xf32>");
  EXPECT_EQ(ResultNames(*m), (std::vector<std::string>{"s.0"}));
  EXPECT_EQ(Eval(*m, {DenseI(DType::kBool, {}, {1}), DenseF({2}, {1, -2})})[0], (std::vector<double>{2, -4}));
  EXPECT_EQ(Eval(*m, {DenseI(DType::kBool, {}, {0}), DenseF({2}, {1, -2})})[0], (std::vector<double>{3, -6}));
  // Different lengths: an error naming the node (no crash), unless the
  // condition is fixed at compile time.
  auto r = SeqIfModel(true).Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(r.status().message().find("node 'if_0' (If): If with a condition known only at run time: the "
                                      "branches give output 0 ('s') different structures (then sequence "
                                      "of 1 [tensor<2xf32>], else sequence of 2"),
            std::string::npos)
      << r.status().message();
  ImportOptions o;
  o.constant_inputs["c"] = {0};
  auto m2 = MustImport(SeqIfModel(true), o);
  ASSERT_TRUE(m2);
  EXPECT_EQ(ResultNames(*m2), (std::vector<std::string>{"s.0", "s.1"}));
  EXPECT_EQ(Result(*m2, 0), Result(*m2, 1));
  EXPECT_EQ(Eval(*m2, {DenseF({2}, {1, -2})})[1], (std::vector<double>{3, -6}));
}

// Optionals: presence folds; an empty optional output has no result; a
// sequence graph input's elements are arguments NAME.k.
TEST(OnnxSequence, OptionalsAndSequenceInputs) {
  ModelBuilder b(16);
  SeqInput(b, "os", kF, /*optional=*/true);
  b.Input("x", kF, {2});
  b.Const("one", kI64, {}, {1});
  b.Node("OptionalHasElement", {"os"}, {"has"});
  b.Node("OptionalGetElement", {"os"}, {"seq"});
  b.Node("SequenceAt", {"seq", "one"}, {"second"});
  b.Node("Add", {"second", "x"}, {"sum"});
  auto* opt = b.Node("Optional", {}, {"none"});
  auto* a = opt->add_attribute();
  a->set_name("type");
  a->set_type(onnx::AttributeProto_AttributeType_TYPE_PROTO);
  a->mutable_tp()->mutable_tensor_type()->set_elem_type(kF);
  b.Node("Optional", {"x"}, {"some"});
  b.Node("OptionalHasElement", {"none"}, {"has_none"});
  for (const char* o : {"has", "sum", "none", "some", "has_none", "seq"}) b.Output(o);
  // Without a structure for 'os': an error naming it.
  auto r = b.Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("input 'os' is an optional; Kiln fixes its structure at compile time"),
            std::string::npos) << r.status().message();
  ImportOptions o;
  ASSERT_TRUE(ParseSequenceInputFlag("os=[scalar,2]", &o).ok());
  auto m = MustImport(b, o);
  ASSERT_TRUE(m);
  EXPECT_EQ(ArgNames(*m), (std::vector<std::string>{"os.0", "os.1", "x"}));
  EXPECT_EQ(ResultNames(*m), (std::vector<std::string>{"has", "sum", "some", "has_none", "seq.0", "seq.1"}));
  EXPECT_EQ(Values(Result(*m, 0)), (std::vector<double>{1}));
  EXPECT_EQ(Values(Result(*m, 3)), (std::vector<double>{0}));
  EXPECT_EQ(Result(*m, 2), Body(*m)->argument(2));
  EXPECT_EQ(Result(*m, 5), Body(*m)->argument(1));
  auto out = Eval(*m, {DenseF({}, {9}), DenseF({2}, {1, 2}), DenseF({2}, {10, 20})});
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[1], (std::vector<double>{11, 22}));
  // An empty optional input: OptionalHasElement folds to false and
  // OptionalGetElement is an error naming the node.
  ImportOptions none;
  ASSERT_TRUE(ParseSequenceInputFlag("os=none", &none).ok());
  auto r2 = b.Import(none);
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.status().ToString().find("(OptionalGetElement): OptionalGetElement of an empty optional ('os')"),
            std::string::npos) << r2.status().ToString();
}

// Random byte mutations of models with sequences, optionals, a Loop carrying a
// sequence and an If with sequence outputs: errors, never a crash, and every
// imported module verifies.
TEST(OnnxSequence, MutatedModelsNeverCrash) {
  ImportOptions o;
  o.constant_inputs = {{"M", {3}}, {"cond", {1}}};
  struct Case { std::string bytes; ImportOptions opts; };
  std::vector<Case> cases = {{SeqLoopModel().Bytes(), o}, {SeqIfModel(false).Bytes(), {}}};
  for (const Case& c : cases) {
    auto base = ImportUnchecked(c.bytes.data(), c.bytes.size(), c.opts);
    ASSERT_TRUE(base.ok()) << base.status().ToString();
    uint32_t seed = 4242;
    auto rnd = [&seed]() { seed = seed * 1664525u + 1013904223u; return seed >> 8; };
    const int kIters = getenv("KILN_MUTATIONS") ? atoi(getenv("KILN_MUTATIONS")) : 2000;
    int ok = 0;
    for (int iter = 0; iter < kIters; ++iter) {
      std::string m = c.bytes;
      int flips = 1 + rnd() % 4;
      for (int i = 0; i < flips; ++i) m[rnd() % m.size()] = static_cast<char>(rnd());
      auto r = ImportUnchecked(m.data(), m.size(), c.opts);
      if (!r.ok()) continue;
      ++ok;
      Status v = ir::Verify(*r.value());
      EXPECT_TRUE(v.ok()) << "mutation " << iter << ": " << v.ToString();
    }
    std::cout << "[ mutations ] " << ok << "/" << kIters << " still imported\n";
  }
}

// SequenceMap: the body inlined once per element; a tensor extra input is
// passed whole, a sequence one element by element (lengths must agree).
TEST(OnnxSequence, SequenceMapInlinesTheBodyPerElement) {
  auto model = [](bool second_seq_short) {
    ModelBuilder b(17);
    b.Input("a", kF, {2});
    b.Input("b", kF, {3});
    b.Input("k", kF, {});
    b.Node("SequenceConstruct", {"a", "b"}, {"s"});
    if (second_seq_short) b.Node("SequenceConstruct", {"k"}, {"extra"});
    else b.Node("Identity", {"k"}, {"extra"});
    ModelBuilder body;
    body.Input("x", kF, {});
    body.Input("y", kF, {});
    body.model().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
    body.Node("Mul", {"x", "y"}, {"z"});
    body.Output("z");
    auto* n = b.Node("SequenceMap", {"s", "extra"}, {"out"}, "map");
    ModelBuilder::AttrG(n, "body", body.graph());
    b.Output("out");
    return b;
  };
  auto m = MustImport(model(false));
  ASSERT_TRUE(m);
  EXPECT_EQ(ResultNames(*m), (std::vector<std::string>{"out.0", "out.1"}));
  EXPECT_EQ(TypeStr(Result(*m, 0)), "tensor<2xf32>");
  EXPECT_EQ(TypeStr(Result(*m, 1)), "tensor<3xf32>");
  EXPECT_EQ(Result(*m, 0)->defining_op()->loc(), "map/elem0/Mul_0");
  auto out = Eval(*m, {DenseF({2}, {1, 2}), DenseF({3}, {3, 4, 5}), DenseF({}, {-2})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (std::vector<double>{-2, -4}));
  EXPECT_EQ(out[1], (std::vector<double>{-6, -8, -10}));
  auto r = model(true).Import();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().ToString(),
            "INVALID_ARGUMENT: node 'map' (SequenceMap): SequenceMap input 1 has 1 elements, input 0 has 2");
}

}  // namespace
}  // namespace kiln::onnx_import
