// Liveness (liveness.h) on hand-written bodies; every expected step, hull and
// live set is derived by hand from the numbered ops (steps in the comments).
#include "compiler/analysis/liveness.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/ir/parser.h"

namespace kiln::analysis {
namespace {

struct Parsed {
  std::unique_ptr<ir::Module> module;
  ir::Operation* func = nullptr;
  // Values by their name in the text: the defining op's "name" attribute
  // for results, or the block argument's position.
  ir::Value* Result(const std::string& name) const {
    ir::Value* found = nullptr;
    Walk(func->region(0), [&](ir::Operation* op) {
      if (op->str_attr("name") == name) found = op->result(0);
    });
    return found;
  }
  template <typename F>
  static void Walk(ir::Region* r, F&& f) {
    for (auto& b : r->blocks())
      for (auto& op : b->ops()) {
        f(op.get());
        for (unsigned i = 0; i < op->num_regions(); ++i) Walk(op->region(i), f);
      }
  }
  ir::Block* Block(unsigned i) const { return func->region(0)->block(i); }
};

Parsed Parse(const char* text) {
  Parsed p;
  auto m = ir::ParseModule(text, "liveness_test.kir");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return p;
  p.module = std::move(*m);
  p.func = p.module->functions().at(0);
  return p;
}

void ExpectHull(const Liveness& l, ir::Value* key, int first, int last) {
  ASSERT_NE(key, nullptr);
  std::optional<Liveness::Interval> h = l.Hull(key);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->first, first);
  EXPECT_EQ(h->last, last);
}

TEST(LivenessTest, StraightLine) {
  Parsed p = Parse(R"(
"func.func"() ({
^bb0(%arg: tensor<4xf32>):
  %a = "test.def"() {name = "a"} : () -> tensor<4xf32>
  %b = "test.use"(%a) {name = "b"} : (tensor<4xf32>) -> tensor<4xf32>
  %c = "test.use"(%arg) {name = "c"} : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%b) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  Liveness l(p.func);
  // Steps: a 0, b 1, c 2, return 3.
  EXPECT_EQ(l.num_steps(), 4);
  ExpectHull(l, p.Result("a"), 0, 1);
  ExpectHull(l, p.Result("b"), 1, 3);
  ExpectHull(l, p.Result("c"), 2, 2);  // defined, never used
  EXPECT_EQ(l.LastUse(p.Result("a")), 1);
  EXPECT_EQ(l.LastUse(p.Result("c")), -1);
  ir::Value* arg = p.Block(0)->argument(0);
  EXPECT_EQ(l.DefStep(arg), 0);
  ExpectHull(l, arg, 2, 2);  // the entry's argument: no edge writes it
  EXPECT_TRUE(l.LiveIn(p.Block(0)).empty());
  EXPECT_EQ(l.BlockSteps(p.Block(0)).first, 0);
  EXPECT_EQ(l.BlockSteps(p.Block(0)).last, 3);
}

TEST(LivenessTest, IfElse) {
  Parsed p = Parse(R"(
"func.func"() ({
^bb0(%c: i1):
  %a = "test.def"() {name = "a"} : () -> tensor<4xf32>
  %x = "test.def"() {name = "x"} : () -> tensor<4xf32>
  %r = "scf.if"(%c) ({
    %n = "test.use"(%a) {name = "n"} : (tensor<4xf32>) -> tensor<4xf32>
    "scf.yield"(%n) : (tensor<4xf32>) -> ()
  }, {
    "scf.yield"(%x) : (tensor<4xf32>) -> ()
  }) {name = "r"} : (i1) -> tensor<4xf32>
  "func.return"(%r) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  Liveness l(p.func);
  // Steps: a 0, x 1, scf.if 2, n 3, yield 4, yield 5, return 6.
  ir::Operation* if_op = p.Result("r")->defining_op();
  EXPECT_EQ(l.StepOf(if_op), 2);
  EXPECT_EQ(l.RegionEnd(if_op), 5);
  ExpectHull(l, p.Result("a"), 0, 3);  // no loop: the use counts where it is
  ExpectHull(l, p.Result("x"), 1, 5);
  ExpectHull(l, p.Result("n"), 3, 4);
  ExpectHull(l, p.Result("r"), 2, 6);
}

TEST(LivenessTest, ForCarriedValue) {
  Parsed p = Parse(R"(
"func.func"() ({
^bb0(%lb: index, %ub: index, %s: index):
  %init = "test.def"() {name = "init"} : () -> tensor<4xf32>
  %w = "test.def"() {name = "w"} : () -> tensor<4xf32>
  %r = "scf.for"(%lb, %ub, %s, %init) ({
  ^bb0(%i: index, %acc: tensor<4xf32>):
    %n = "test.use"(%acc, %w) {name = "n"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "scf.yield"(%n) : (tensor<4xf32>) -> ()
  }) {name = "r"} : (index, index, index, tensor<4xf32>) -> tensor<4xf32>
  %z = "test.def"() {name = "z"} : () -> tensor<4xf32>
  "func.return"(%r, %z) : (tensor<4xf32>, tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  Liveness l(p.func);
  // Steps: init 0, w 1, scf.for 2, n 3, yield 4, z 5, return 6.
  ir::Operation* loop = p.Result("r")->defining_op();
  EXPECT_EQ(l.RegionEnd(loop), 4);
  // %w is defined before the loop and read by every trip: its use counts
  // at the loop's end, so nothing defined in the loop may share its bytes.
  EXPECT_EQ(l.UseStep(p.Result("n")->defining_op(), l.DefStep(p.Result("w"))), 4);
  EXPECT_EQ(l.LastUse(p.Result("w")), 4);
  ExpectHull(l, p.Result("w"), 1, 4);
  // The carried value is written at the loop and by each trip's yield.
  ir::Value* acc = loop->region(0)->block(0)->argument(1);
  EXPECT_EQ(l.DefStep(acc), 2);
  ExpectHull(l, acc, 2, 4);
  // %n is defined inside the loop: its use by the yield is not extended.
  ExpectHull(l, p.Result("n"), 3, 4);
  ExpectHull(l, p.Result("init"), 0, 2);  // read by the scf.for itself
  ExpectHull(l, p.Result("r"), 2, 6);
  ExpectHull(l, p.Result("z"), 5, 6);
}

TEST(LivenessTest, CfLoopBackEdge) {
  Parsed p = Parse(R"(
"func.func"() ({
^bb0(%c: i1):
  %a = "test.def"() {name = "a"} : () -> tensor<4xf32>
  %w = "test.def"() {name = "w"} : () -> tensor<4xf32>
  "cf.br"(%a)[^bb1] : (tensor<4xf32>) -> ()
^bb1(%x: tensor<4xf32>):
  %y = "test.use"(%x, %w) {name = "y"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  "cf.cond_br"(%c, %y)[^bb1, ^bb2] {operand_segments = [1, 1, 0]} : (i1, tensor<4xf32>) -> ()
^bb2:
  "func.return"() : () -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  Liveness l(p.func);
  // Steps: a 0, w 1, cf.br 2 | y 3, cf.cond_br 4 | return 5.
  ir::Block* bb0 = p.Block(0);
  ir::Block* bb1 = p.Block(1);
  ir::Block* bb2 = p.Block(2);
  ir::Value* c = bb0->argument(0);
  ir::Value* w = p.Result("w");
  ir::Value* x = bb1->argument(0);
  EXPECT_EQ(l.BlockSteps(bb1).first, 3);
  EXPECT_EQ(l.BlockSteps(bb1).last, 4);
  // %w and %c are read on every trip around the back edge: live into and
  // out of the loop block, and out of the entry.
  EXPECT_EQ(l.LiveIn(bb1), (std::set<ir::Value*>{c, w}));
  EXPECT_EQ(l.LiveOut(bb1), (std::set<ir::Value*>{c, w}));
  EXPECT_EQ(l.LiveOut(bb0), (std::set<ir::Value*>{c, w}));
  EXPECT_TRUE(l.LiveIn(bb2).empty());
  EXPECT_TRUE(l.LiveOut(bb2).empty());
  ExpectHull(l, w, 1, 4);
  ExpectHull(l, p.Result("a"), 0, 2);
  // %x is written by both edges into ^bb1 (steps 2 and 4), read at 3; each
  // trip redefines it, so it is not live into ^bb1.
  ExpectHull(l, x, 2, 4);
  EXPECT_FALSE(l.LiveIn(bb1).count(x));
  ExpectHull(l, p.Result("y"), 3, 4);
}

TEST(LivenessTest, ValueUsedOnlyInNestedRegion) {
  Parsed p = Parse(R"(
"func.func"() ({
^bb0(%lb: index, %ub: index, %s: index):
  %v = "test.def"() {name = "v"} : () -> tensor<4xf32>
  "cf.br"()[^bb1] : () -> ()
^bb1:
  "scf.for"(%lb, %ub, %s) ({
  ^bb0(%i: index):
    "test.use"(%v) : (tensor<4xf32>) -> ()
    "scf.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %after = "test.def"() {name = "after"} : () -> tensor<4xf32>
  "func.return"(%after) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  Liveness l(p.func);
  // Steps: v 0, cf.br 1 | scf.for 2, use 3, yield 4, after 5, return 6.
  ir::Value* v = p.Result("v");
  EXPECT_TRUE(l.LiveOut(p.Block(0)).count(v));
  EXPECT_TRUE(l.LiveIn(p.Block(1)).count(v));
  EXPECT_FALSE(l.LiveOut(p.Block(1)).count(v));
  ExpectHull(l, v, 0, 4);  // through the loop's last step, not past it
  EXPECT_EQ(l.LastUse(v), 4);
  ExpectHull(l, p.Result("after"), 5, 6);  // may reuse %v's bytes
}

TEST(LivenessTest, KeysGroupValues) {
  // A key function maps an in-place update to the storage it writes: the
  // key lives from the first definition to the last use of either value.
  Parsed p = Parse(R"(
"func.func"() ({
^bb0:
  %a = "test.def"() {name = "a"} : () -> tensor<4xf32>
  %t = "test.def"() {name = "t"} : () -> tensor<4xf32>
  %b = "test.update"(%a) {name = "b"} : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%b) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(p.func);
  ir::Value* a = p.Result("a");
  ir::Value* b = p.Result("b");
  Liveness l(p.func, [&](ir::Value* v) -> ir::Value* {
    if (v == b) return a;
    return v->type().is_tensor() ? v : nullptr;
  });
  // Steps: a 0, t 1, update 2, return 3.
  EXPECT_EQ(l.KeyOf(b), a);
  ExpectHull(l, a, 0, 3);
  EXPECT_FALSE(l.Hull(b).has_value());
  ExpectHull(l, p.Result("t"), 1, 1);
}

TEST(LivenessTest, NullFunction) {
  Liveness l(nullptr);
  EXPECT_EQ(l.num_steps(), 0);
  EXPECT_EQ(l.StepOf(nullptr), -1);
}

}  // namespace
}  // namespace kiln::analysis
