// Unit tests for the IR core (ir.h): building, use lists, RAUW, erase,
// move, clone with regions.
#include "compiler/ir/ir.h"

#include <gtest/gtest.h>

#include "compiler/ir/ops.h"

namespace kiln::ir {
namespace {

Type T(std::vector<int64_t> shape) { return Type::Tensor(DType::kF32, std::move(shape)); }

TEST(TypeTest, ToStringAndElements) {
  EXPECT_EQ(T({1, 3, 48, 192}).ToString(), "tensor<1x3x48x192xf32>");
  EXPECT_EQ(T({}).ToString(), "tensor<f32>");
  EXPECT_EQ(Type::Tensor(DType::kBool, {2}).ToString(), "tensor<2xi1>");
  EXPECT_EQ(Type::Index().ToString(), "index");
  EXPECT_EQ(Type::I1().ToString(), "i1");
  EXPECT_EQ(Type::Resource(Lifetime::kTransient).ToString(), "!stream.resource<transient>");
  EXPECT_EQ(Type::Resource(Lifetime::kUnknown).ToString(), "!stream.resource<*>");
  EXPECT_EQ(Type::Timepoint().ToString(), "!stream.timepoint");
  EXPECT_EQ(T({2, 3}).num_elements(), 6);
  EXPECT_EQ(T({}).num_elements(), 1);
  EXPECT_EQ(T({2, 3}).byte_size(), 24);
}

TEST(DenseTest, Accessors) {
  DenseElements d = MakeDenseF32({2}, {1.5f, -2.0f});
  EXPECT_EQ(d.GetDouble(1), -2.0);
  EXPECT_EQ(d.GetInt(0), 1);
  DenseElements i = MakeDenseI64({3}, {1, -7, 9});
  EXPECT_EQ(i.GetInt(1), -7);
  EXPECT_EQ(i.type.ToString(), "tensor<3xi64>");
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f) << f;
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
}

struct Fixture : ::testing::Test {
  Module m;
  Operation* func = nullptr;
  Block* entry = nullptr;
  void SetUp() override {
    Builder b = Builder::AtEnd(m.body());
    func = b.Create("func.func", {}, {}, {{"sym_name", "main"}}, 1);
    entry = func->region(0)->AddBlock();
    entry->AddArgument(T({4}));
  }
};

TEST_F(Fixture, BuildAndUseLists) {
  Builder b = Builder::AtEnd(entry);
  b.set_loc("n0");
  Value* x = entry->argument(0);
  Operation* add = b.Create("tensor.add", {x, x}, {T({4})});
  Operation* ret = b.Create("func.return", {add->result()}, {});
  EXPECT_EQ(add->loc(), "n0");
  EXPECT_EQ(x->uses().size(), 2u);
  EXPECT_EQ(add->result()->uses().size(), 1u);
  EXPECT_EQ(add->result()->uses()[0].user, ret);
  EXPECT_EQ(add->parent_op(), func);
  EXPECT_EQ(func->parent_op(), nullptr);
  EXPECT_EQ(x->parent_block(), entry);
  EXPECT_EQ(add->result()->parent_block(), entry);
  EXPECT_EQ(add->dialect(), "tensor");
  EXPECT_EQ(m.LookupFunction("main"), func);
  EXPECT_EQ(m.LookupFunction("nope"), nullptr);
  EXPECT_EQ(m.functions().size(), 1u);
  EXPECT_EQ(entry->terminator(), ret);

  add->EraseOperand(0);
  ASSERT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(x->uses()[0].operand_index, 0u);
  add->SetOperands({x, x, x});
  EXPECT_EQ(x->uses().size(), 3u);
}

TEST_F(Fixture, RauwEraseMove) {
  Builder b = Builder::AtEnd(entry);
  Value* x = entry->argument(0);
  Operation* a = b.Create("tensor.neg", {x}, {T({4})});
  Operation* c = b.Create("tensor.abs", {x}, {T({4})});
  Operation* use = b.Create("tensor.add", {a->result(), a->result()}, {T({4})});
  b.Create("func.return", {use->result()}, {});
  a->result()->ReplaceAllUsesWith(c->result());
  EXPECT_TRUE(a->result()->use_empty());
  EXPECT_EQ(use->operand(0), c->result());
  EXPECT_EQ(use->operand(1), c->result());
  EXPECT_EQ(c->result()->uses().size(), 2u);
  a->Erase();
  EXPECT_EQ(x->uses().size(), 1u);
  EXPECT_EQ(entry->ops().size(), 3u);
  // Move the add before the abs and back again.
  use->MoveBefore(c);
  EXPECT_EQ(entry->ops().front().get(), use);
  c->MoveBefore(use);
  EXPECT_EQ(entry->ops().front().get(), c);
  // Builder::Before inserts before the op.
  Builder before = Builder::Before(use);
  Operation* n = before.Create("tensor.relu", {x}, {T({4})});
  EXPECT_EQ(std::next(entry->ops().begin())->get(), n);
  std::unique_ptr<Operation> detached = entry->Remove(n);
  EXPECT_EQ(detached->parent_block(), nullptr);
  EXPECT_EQ(x->uses().size(), 2u);
  detached.reset();
  EXPECT_EQ(x->uses().size(), 1u);
}

TEST_F(Fixture, AttrGetters) {
  Operation* op = Builder::AtEnd(entry).Create(
      "tensor.conv2d", {}, {},
      {{"group", 2}, {"alpha", 0.5}, {"ceil", true}, {"mode", "reflect"},
       {"pads", std::vector<int64_t>{1, 2}}, {"scales", std::vector<double>{0.5}},
       {"names", MakeListAttr({Attribute("a"), Attribute("b")})},
       {"empty", std::vector<int64_t>{}}, {"value", MakeDenseF32({1}, {3.0f})},
       {"callee", SymbolRef{"f"}}});
  EXPECT_EQ(op->int_attr("group"), 2);
  EXPECT_EQ(op->int_attr("missing", 7), 7);
  EXPECT_EQ(op->int_attr("mode", 7), 7);
  EXPECT_EQ(op->float_attr("alpha"), 0.5);
  EXPECT_EQ(op->float_attr("group"), 2.0);
  EXPECT_TRUE(op->bool_attr("ceil"));
  EXPECT_EQ(op->str_attr("mode"), "reflect");
  EXPECT_EQ(op->str_attr("callee"), "f");
  EXPECT_EQ(op->ints_attr("pads"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(op->floats_attr("scales"), (std::vector<double>{0.5}));
  EXPECT_EQ(op->strs_attr("names"), (std::vector<std::string>{"a", "b"}));
  ASSERT_NE(op->list_attr("empty"), nullptr);
  EXPECT_TRUE(op->list_attr("empty")->empty());
  EXPECT_EQ(op->list_attr("pads"), nullptr);
  ASSERT_NE(op->dense_attr("value"), nullptr);
  EXPECT_EQ(op->dense_attr("value")->GetDouble(0), 3.0);
  Attribute copy = *op->attr("names");  // attributes copy
  EXPECT_EQ(std::get<std::shared_ptr<AttrList>>(copy.value)->size(), 2u);
}

TEST_F(Fixture, CloneWithRegionsAndBlocks) {
  Builder b = Builder::AtEnd(entry);
  Value* x = entry->argument(0);
  Operation* disp = b.Create("flow.dispatch", {x}, {T({4})}, {{"name", "d0"}}, 1);
  Block* body = disp->region(0)->AddBlock();
  Value* barg = body->AddArgument(T({4}));
  barg->set_name_hint("in");
  Builder bb = Builder::AtEnd(body);
  Operation* relu = bb.Create("tensor.relu", {barg}, {T({4})});
  // Uses a value from outside the dispatch (captured).
  Operation* add = bb.Create("tensor.add", {relu->result(), x}, {T({4})});
  bb.Create("flow.return", {add->result()}, {});
  // A second block reached by a branch, using a value defined in block 0
  // after it in block order (forward reference for the cloner).
  Block* b1 = disp->region(0)->AddBlock();
  Block* b2 = disp->region(0)->AddBlock();
  Operation* br = Builder::AtEnd(b1).Create("cf.br", {}, {});
  br->AddSuccessor(b2);
  Operation* late = Builder::AtEnd(b2).Create("tensor.neg", {relu->result()}, {T({4})});
  (void)late;

  std::map<Value*, Value*> mapping;
  Value* y = entry->AddArgument(T({4}));
  mapping[x] = y;
  std::unique_ptr<Operation> clone = disp->Clone(mapping);
  EXPECT_EQ(clone->name(), "flow.dispatch");
  EXPECT_EQ(clone->operand(0), y);
  EXPECT_EQ(clone->str_attr("name"), "d0");
  EXPECT_EQ(mapping[disp->result()], clone->result());
  ASSERT_EQ(clone->region(0)->num_blocks(), 3u);
  Block* cbody = clone->region(0)->block(0);
  EXPECT_EQ(cbody->argument(0)->name_hint(), "in");
  EXPECT_EQ(cbody->parent_op(), clone.get());
  Operation* crelu = cbody->ops().front().get();
  EXPECT_EQ(crelu->operand(0), cbody->argument(0));
  Operation* cadd = std::next(cbody->ops().begin())->get();
  EXPECT_EQ(cadd->operand(0), crelu->result());
  EXPECT_EQ(cadd->operand(1), y);  // captured value remapped
  Operation* cbr = clone->region(0)->block(1)->terminator();
  EXPECT_EQ(cbr->successor(0), clone->region(0)->block(2));
  Operation* clate = clone->region(0)->block(2)->terminator();
  EXPECT_EQ(clate->operand(0), crelu->result());
  EXPECT_EQ(x->uses().size(), 2u);  // original untouched
  EXPECT_EQ(y->uses().size(), 2u);
  clone.reset();  // destroying drops every use
  EXPECT_EQ(y->uses().size(), 0u);
}

TEST_F(Fixture, DestroyWithCrossBlockUses) {
  // Block 1 uses a value defined in block 2 (allowed in text order); the
  // module must tear down cleanly (ASan checks this).
  Block* b1 = func->region(0)->AddBlock();
  Block* b2 = func->region(0)->AddBlock();
  Operation* def = Builder::AtEnd(b2).Create("tensor.neg", {entry->argument(0)}, {T({4})});
  Builder::AtEnd(b1).Create("tensor.abs", {def->result()}, {T({4})});
  Builder::AtEnd(b1).Create("tensor.abs", {def->result()}, {T({4})});
}

TEST(OpsTest, Elementwise) {
  EXPECT_TRUE(IsElementwiseOp("tensor.add"));
  EXPECT_TRUE(IsElementwiseOp("tensor.select"));
  EXPECT_TRUE(IsElementwiseOp("tensor.hard_swish"));
  EXPECT_FALSE(IsElementwiseOp("tensor.conv2d"));
  EXPECT_FALSE(IsElementwiseOp("tensor.reshape"));
  EXPECT_TRUE(IsHostSideOp("tensor.constant"));
}

}  // namespace
}  // namespace kiln::ir
