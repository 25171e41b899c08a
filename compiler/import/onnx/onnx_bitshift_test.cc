// ONNX BitShift import (onnx_bitshift.cc): the op each direction becomes,
// constant folding against hand-derived values (wrapping to the dtype's
// width, a shift of the width or more giving 0), and the errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/import/onnx/onnx_importer.h"
#include "compiler/ir/verifier.h"

namespace kiln::onnx_import {
namespace {

constexpr int kU8 = onnx::TensorProto_DataType_UINT8;
constexpr int kU32 = onnx::TensorProto_DataType_UINT32;
constexpr int kF = onnx::TensorProto_DataType_FLOAT;

// Y = BitShift(X, S) with `direction` (none when empty); X and S are graph
// inputs of `elem` and shape [n], or initializers when `xs`/`ss` are given.
onnx::ModelProto Model(int elem, const std::string& direction, int n,
                       const std::vector<uint64_t>& xs = {}, const std::vector<uint64_t>& ss = {}) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(11);
  auto* g = m.mutable_graph();
  g->set_name("bitshift_test");
  auto add = [&](const char* name, const std::vector<uint64_t>& v) {
    if (v.empty()) {
      auto* in = g->add_input();
      in->set_name(name);
      auto* tt = in->mutable_type()->mutable_tensor_type();
      tt->set_elem_type(elem);
      tt->mutable_shape()->add_dim()->set_dim_value(n);
      return;
    }
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(elem);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (uint64_t x : v) {
      if (elem == kU32) t->add_uint64_data(x);
      else t->add_int32_data(static_cast<int32_t>(x));
    }
  };
  add("X", xs);
  add("S", ss);
  auto* node = g->add_node();
  node->set_op_type("BitShift");
  node->set_name("shift");
  node->add_input("X");
  node->add_input("S");
  node->add_output("Y");
  if (!direction.empty()) {
    auto* a = node->add_attribute();
    a->set_name("direction");
    a->set_type(onnx::AttributeProto_AttributeType_STRING);
    a->set_s(direction);
  }
  g->add_output()->set_name("Y");
  return m;
}

StatusOr<std::unique_ptr<ir::Module>> Import(const onnx::ModelProto& m) {
  std::string b = m.SerializeAsString();
  return ImportOnnxBytes(b.data(), b.size(), ImportOptions());
}

// The ops of main's body, by name.
std::vector<std::string> OpNames(ir::Module& m) {
  std::vector<std::string> names;
  for (auto& f : m.body()->ops())
    for (auto& op : f->region(0)->block(0)->ops()) names.push_back(op->name());
  return names;
}

TEST(OnnxBitShift, DirectionsBecomeShiftOps) {
  for (const char* dir : {"LEFT", "RIGHT"}) {
    auto r = Import(Model(kU32, dir, 3));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(ir::Verify(*r.value()).ok());
    std::vector<std::string> ops = OpNames(*r.value());
    std::string want = std::string("tensor.shift_") + (dir[0] == 'L' ? "left" : "right");
    EXPECT_NE(std::find(ops.begin(), ops.end(), want), ops.end()) << dir;
  }
}

// u8: 200 << 1 = 400 mod 256 = 144; 1 << 8 = 0 (the width); 3 << 2 = 12.
// u32: 4294967295 >> 31 = 1; 16 >> 4 = 1; 5 >> 40 = 0.
TEST(OnnxBitShift, FoldsHandDerivedValues) {
  struct Case {
    int elem;
    const char* dir;
    std::vector<uint64_t> x, s, want;
  };
  const Case cases[] = {
      {kU8, "LEFT", {200, 1, 3}, {1, 8, 2}, {144, 0, 12}},
      {kU32, "RIGHT", {4294967295u, 16, 5}, {31, 4, 40}, {1, 1, 0}},
  };
  for (const Case& c : cases) {
    auto r = Import(Model(c.elem, c.dir, 3, c.x, c.s));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ir::Operation* ret = nullptr;
    for (auto& f : r.value()->body()->ops()) ret = f->region(0)->block(0)->terminator();
    ASSERT_NE(ret, nullptr);
    ir::Operation* def = ret->operand(0)->defining_op();
    ASSERT_TRUE(def && def->is("tensor.constant")) << c.dir;
    const ir::DenseElements& d = *def->dense_attr("value");
    for (size_t i = 0; i < c.want.size(); ++i)
      EXPECT_EQ(static_cast<uint64_t>(d.GetInt(static_cast<int64_t>(i))), c.want[i]) << c.dir << " " << i;
  }
}

TEST(OnnxBitShift, ErrorsNameTheNode) {
  // ONNX's checker already refuses a BitShift without 'direction'.
  auto missing = Import(Model(kU32, "", 2));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("'direction'"), std::string::npos) << missing.status().message();
  auto bad = Import(Model(kU32, "UP", 2));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("must be \"LEFT\" or \"RIGHT\", got \"UP\""), std::string::npos)
      << bad.status().message();
  auto fl = Import(Model(kF, "LEFT", 2));
  ASSERT_FALSE(fl.ok());
  EXPECT_NE(fl.status().message().find("unsigned integers, got f32"), std::string::npos) << fl.status().message();
}

}  // namespace
}  // namespace kiln::onnx_import
