// Verifier tests: one broken program per error kind, with the exact message.
#include "compiler/ir/verifier.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"

namespace kiln::ir {
namespace {

// Wraps `body` (ops of a function with arguments `args`) in a func.func.
std::string Func(const std::string& args, const std::string& body, const std::string& attrs = "") {
  return "\"func.func\"() ({\n^bb0(" + args + "):\n" + body + "\n}) {" + attrs +
         (attrs.empty() ? "" : ", ") + "sym_name = \"f\"} : () -> ()\n";
}

// Parses `text` (must parse) and returns the verifier's message ("" if OK).
std::string VerifyText(const std::string& text) {
  auto m = ParseModule(text, "v.kir");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return "<parse error>";
  Status s = Verify(**m);
  if (!s.ok()) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  }
  return s.ok() ? "" : s.message();
}

const char kRet2[] = "  \"func.return\"(%0) : (tensor<2xf32>) -> ()";

TEST(VerifierTest, ValidProgramsPass) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2x3xf32>, %y: tensor<3xf32>, %c: tensor<2x3xi1>",
                            "  %0 = \"tensor.add\"(%x, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>\n"
                            "  %1 = \"tensor.less\"(%0, %y) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>\n"
                            "  %2 = \"tensor.select\"(%1, %0, %x) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
                            "  %3 = \"tensor.reshape\"(%2) : (tensor<2x3xf32>) -> tensor<6xf32>\n"
                            "  \"func.return\"(%3) : (tensor<6xf32>) -> ()",
                            "arg_names = [\"x\", \"y\", \"c\"], result_names = [\"out\"]")),
            "");
  EXPECT_EQ(VerifyText(Func("%x: tensor<1x4x5x5xf32>, %w: tensor<8x2x3x3xf32>, %b: tensor<8xf32>",
                            "  %0 = \"tensor.conv2d\"(%x, %w, %b) {dilations = [1, 1], group = 2 : i64, pads = [1, 1, 1, 1], strides = [2, 2]} : (tensor<1x4x5x5xf32>, tensor<8x2x3x3xf32>, tensor<8xf32>) -> tensor<1x8x3x3xf32>\n"
                            "  \"func.return\"(%0) : (tensor<1x8x3x3xf32>) -> ()")),
            "");
  EXPECT_EQ(VerifyText(Func("%a: tensor<3x1x2x4xf32>, %b: tensor<5x4x6xf32>",
                            "  %0 = \"tensor.matmul\"(%a, %b) : (tensor<3x1x2x4xf32>, tensor<5x4x6xf32>) -> tensor<3x5x2x6xf32>\n"
                            "  \"func.return\"(%0) : (tensor<3x5x2x6xf32>) -> ()")),
            "");
  // Dispatch with a captured constant-free body; CFG with a loop back edge.
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %c: i1",
                            "  %0 = \"flow.dispatch\"(%x) ({\n"
                            "  ^bb0(%in: tensor<2xf32>):\n"
                            "    %r = \"tensor.relu\"(%in) : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "    \"flow.return\"(%r) : (tensor<2xf32>) -> ()\n"
                            "  }) {name = \"d\"} : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "  \"cf.br\"(%0)[^bb1] : (tensor<2xf32>) -> ()\n"
                            "^bb1(%l: tensor<2xf32>):\n"
                            "  %n = \"tensor.neg\"(%l) : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "  \"cf.cond_br\"(%c, %n, %n)[^bb1, ^bb2] {operand_segments = [1, 1, 1]} : (i1, tensor<2xf32>, tensor<2xf32>) -> ()\n"
                            "^bb2(%o: tensor<2xf32>):\n"
                            "  %u = \"tensor.add\"(%o, %n) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n"
                            "  \"func.return\"(%u) : (tensor<2xf32>) -> ()")),
            "");
}

TEST(VerifierTest, UseBeforeDef) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"tensor.neg\"(%1) : (tensor<2xf32>) -> tensor<2xf32> loc(\"n0\")\n"
                            "  %1 = \"tensor.abs\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.neg' op loc(\"n0\"): operand #0 is used before its definition");
}

TEST(VerifierTest, NotDominating) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %c: i1",
                            "  \"cf.cond_br\"(%c)[^bb1, ^bb2] {operand_segments = [1, 0, 0]} : (i1) -> ()\n"
                            "^bb1:\n"
                            "  %0 = \"tensor.neg\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "  \"func.return\"(%0) : (tensor<2xf32>) -> ()\n"
                            "^bb2:\n"
                            "  \"func.return\"(%0) : (tensor<2xf32>) -> ()")),
            "'func.return' op: operand #0 does not dominate this use");
}

TEST(VerifierTest, ValueFromNestedRegion) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"flow.dispatch\"(%x) ({\n"
                            "  ^bb0(%in: tensor<2xf32>):\n"
                            "    %r = \"tensor.relu\"(%in) : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "    \"flow.return\"(%r) : (tensor<2xf32>) -> ()\n"
                            "  }) {name = \"d\"} : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "  \"func.return\"(%r) : (tensor<2xf32>) -> ()")),
            "'func.return' op: operand #0 is defined in a region that does not enclose this use");
}

TEST(VerifierTest, NullOperand) {
  auto m = ParseModule(Func("%x: tensor<2xf32>", "  %0 = \"tensor.neg\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n" +
                                                     std::string(kRet2)),
                       "v.kir");
  ASSERT_TRUE(m.ok());
  Operation* neg = (*m)->LookupFunction("f")->region(0)->block(0)->ops().front().get();
  neg->SetOperand(0, nullptr);
  EXPECT_EQ(Verify(**m).message(), "'tensor.neg' op: operand #0 is null");
}

TEST(VerifierTest, Terminators) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>", "  %0 = \"tensor.neg\"(%x) : (tensor<2xf32>) -> tensor<2xf32>")),
            "'func.func' op: block #0 of region #0 does not end in a terminator (ends in 'tensor.neg')");
  EXPECT_EQ(VerifyText("\"func.func\"() ({\n^bb0:\n}) {sym_name = \"f\"} : () -> ()"),
            "'func.func' op: block #0 of region #0 is empty (needs a terminator)");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  \"func.return\"(%x) : (tensor<2xf32>) -> ()\n"
                            "  \"func.return\"(%x) : (tensor<2xf32>) -> ()")),
            "'func.return' op: terminator must be the last op of its block");
  EXPECT_EQ(VerifyText("\"func.return\"() : () -> ()"), "'func.return' op: expects parent op 'func.func'");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"flow.dispatch\"(%x) ({\n"
                            "  ^bb0(%in: tensor<2xf32>):\n"
                            "    %r = \"tensor.relu\"(%in) : (tensor<2xf32>) -> tensor<2xf32>\n"
                            "  }) : (tensor<2xf32>) -> tensor<2xf32>\n" + std::string(kRet2))),
            "'flow.dispatch' op: block #0 of region #0 does not end in a terminator (ends in 'tensor.relu')");
}

TEST(VerifierTest, StaticResultTypes) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"test.op\"(%x) : (tensor<2xf32>) -> tensor<?xf32> loc(\"dyn\")\n"
                            "  \"func.return\"(%x) : (tensor<2xf32>) -> ()")),
            "'test.op' op loc(\"dyn\"): result #0 type tensor<?xf32> is not static");
}

TEST(VerifierTest, Elementwise) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2x3xf32>, %y: tensor<4xf32>",
                            "  %0 = \"tensor.add\"(%x, %y) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>\n"
                            "  \"func.return\"(%0) : (tensor<2x3xf32>) -> ()")),
            "'tensor.add' op: operand shapes [2, 3] and [4] are not broadcast-compatible");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2x1xf32>, %y: tensor<3xf32>",
                            "  %0 = \"tensor.mul\"(%x, %y) : (tensor<2x1xf32>, tensor<3xf32>) -> tensor<2x1xf32>\n"
                            "  \"func.return\"(%0) : (tensor<2x1xf32>) -> ()")),
            "'tensor.mul' op: result shape [2, 1] does not match the broadcast shape [2, 3]");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %y: tensor<2xi64>",
                            "  %0 = \"tensor.sub\"(%x, %y) : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.sub' op: operand element types differ: f32 vs i64");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %y: tensor<2xf32>",
                            "  %0 = \"tensor.greater\"(%x, %y) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.greater' op: result element type f32 should be i1");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"tensor.neg\"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.neg' op: expects 1 operands, got 2");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"tensor.select\"(%x, %x, %x) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.select' op: condition must have element type i1");
}

TEST(VerifierTest, Conv2d) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<1x3x5x5xf32>, %w: tensor<8x3x3x3xf32>",
                            "  %0 = \"tensor.conv2d\"(%x, %w) : (tensor<1x3x5x5xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x5x5xf32> loc(\"conv\")\n"
                            "  \"func.return\"(%0) : (tensor<1x8x5x5xf32>) -> ()")),
            "'tensor.conv2d' op loc(\"conv\"): result shape [1, 8, 5, 5] should be [1, 8, 3, 3]");
  EXPECT_EQ(VerifyText(Func("%x: tensor<1x4x5x5xf32>, %w: tensor<8x3x3x3xf32>",
                            "  %0 = \"tensor.conv2d\"(%x, %w) : (tensor<1x4x5x5xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x3x3xf32>\n"
                            "  \"func.return\"(%0) : (tensor<1x8x3x3xf32>) -> ()")),
            "'tensor.conv2d' op: input channels 4 != filter channels 3 * group 1");
  EXPECT_EQ(VerifyText(Func("%x: tensor<1x3x5x5xf32>, %w: tensor<8x3x3x3xf32>, %b: tensor<4xf32>",
                            "  %0 = \"tensor.conv2d\"(%x, %w, %b) : (tensor<1x3x5x5xf32>, tensor<8x3x3x3xf32>, tensor<4xf32>) -> tensor<1x8x3x3xf32>\n"
                            "  \"func.return\"(%0) : (tensor<1x8x3x3xf32>) -> ()")),
            "'tensor.conv2d' op: bias shape [4] should be [8]");
}

TEST(VerifierTest, Matmul) {
  EXPECT_EQ(VerifyText(Func("%a: tensor<2x3xf32>, %b: tensor<4x5xf32>",
                            "  %0 = \"tensor.matmul\"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>\n"
                            "  \"func.return\"(%0) : (tensor<2x5xf32>) -> ()")),
            "'tensor.matmul' op: contraction sizes differ: 3 vs 4");
  EXPECT_EQ(VerifyText(Func("%a: tensor<2x3xf32>, %b: tensor<3x5xf32>",
                            "  %0 = \"tensor.matmul\"(%a, %b) : (tensor<2x3xf32>, tensor<3x5xf32>) -> tensor<2x6xf32>\n"
                            "  \"func.return\"(%0) : (tensor<2x6xf32>) -> ()")),
            "'tensor.matmul' op: result shape [2, 6] should be [2, 5]");
}

TEST(VerifierTest, ReshapeAndConstant) {
  EXPECT_EQ(VerifyText(Func("%a: tensor<2x3xf32>",
                            "  %0 = \"tensor.reshape\"(%a) : (tensor<2x3xf32>) -> tensor<8xf32>\n"
                            "  \"func.return\"(%0) : (tensor<8xf32>) -> ()")),
            "'tensor.reshape' op: element count changes from 6 to 8");
  EXPECT_EQ(VerifyText(Func("%a: tensor<2xf32>",
                            "  %0 = \"tensor.constant\"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<2xf32>\n" +
                                std::string(kRet2))),
            "'tensor.constant' op: value type tensor<3xf32> does not match result type tensor<2xf32>");
  EXPECT_EQ(VerifyText(Func("%a: tensor<2xf32>",
                            "  %0 = \"tensor.constant\"() : () -> tensor<2xf32>\n" + std::string(kRet2))),
            "'tensor.constant' op: requires a dense 'value' attribute");
}

TEST(VerifierTest, FunctionSignature) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %y: tensor<2xi64>, %c: i1",
                            "  \"cf.cond_br\"(%c)[^bb1, ^bb2] {operand_segments = [1, 0, 0]} : (i1) -> ()\n"
                            "^bb1:\n"
                            "  \"func.return\"(%y) : (tensor<2xi64>) -> ()\n"
                            "^bb2:\n"
                            "  \"func.return\"(%x) : (tensor<2xf32>) -> ()")),
            "'func.return' op: operand types (tensor<2xf32>) do not match the function result types (tensor<2xi64>)");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>", "  \"func.return\"(%x) : (tensor<2xf32>) -> ()",
                            "result_names = [\"a\", \"b\"]")),
            "'func.func' op: 'result_names' has 2 entries for 1 results");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>", "  \"func.return\"(%x) : (tensor<2xf32>) -> ()",
                            "arg_names = []")),
            "'func.func' op: 'arg_names' has 0 entries for 1 arguments");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>", "  \"func.return\"(%x) : (tensor<2xf32>) -> ()",
                            "arg_ownership = [\"steal\"]")),
            "'func.func' op: unknown arg_ownership 'steal' (expected borrow or consume)");
  EXPECT_EQ(VerifyText("\"func.func\"() ({\n  \"func.return\"() : () -> ()\n}) : () -> ()"),
            "'func.func' op: requires a 'sym_name' attribute");
}

TEST(VerifierTest, Dispatch) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"flow.dispatch\"(%x) ({\n"
                            "  ^bb0(%in: tensor<3xf32>):\n"
                            "    \"flow.return\"(%in) : (tensor<3xf32>) -> ()\n"
                            "  }) : (tensor<2xf32>) -> tensor<2xf32>\n" + std::string(kRet2))),
            "'flow.dispatch' op: region arguments (tensor<3xf32>) do not match operands (tensor<2xf32>)");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  %0 = \"flow.dispatch\"(%x) ({\n"
                            "  ^bb0(%in: tensor<2xf32>):\n"
                            "    \"flow.return\"() : () -> ()\n"
                            "  }) : (tensor<2xf32>) -> tensor<2xf32>\n" + std::string(kRet2))),
            "'flow.return' op: operand types () do not match the dispatch result types (tensor<2xf32>)");
}

TEST(VerifierTest, Branches) {
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>",
                            "  \"cf.br\"(%x)[^bb1] : (tensor<2xf32>) -> ()\n"
                            "^bb1(%y: tensor<3xf32>):\n"
                            "  \"func.return\"(%y) : (tensor<3xf32>) -> ()")),
            "'cf.br' op: operands (tensor<2xf32>) for successor #0 do not match its arguments (tensor<3xf32>)");
  EXPECT_EQ(VerifyText(Func("%x: tensor<2xf32>, %c: i1",
                            "  \"cf.cond_br\"(%c, %x)[^bb1, ^bb1] : (i1, tensor<2xf32>) -> ()\n"
                            "^bb1:\n"
                            "  \"func.return\"(%x) : (tensor<2xf32>) -> ()")),
            "'cf.cond_br' op: expects 'operand_segments' = [1, n_true, n_false] summing to the operand count");
  // A !stream.resource<*> block argument accepts any resource; a concrete
  // lifetime must match exactly.
  EXPECT_EQ(VerifyText(Func("%x: !stream.resource<external>",
                            "  \"cf.br\"(%x)[^bb1] : (!stream.resource<external>) -> ()\n"
                            "^bb1(%y: !stream.resource<*>):\n"
                            "  \"func.return\"(%y) : (!stream.resource<*>) -> ()")),
            "");
  EXPECT_EQ(VerifyText(Func("%x: !stream.resource<external>",
                            "  \"cf.br\"(%x)[^bb1] : (!stream.resource<external>) -> ()\n"
                            "^bb1(%y: !stream.resource<transient>):\n"
                            "  \"func.return\"(%y) : (!stream.resource<transient>) -> ()")),
            "'cf.br' op: operands (!stream.resource<external>) for successor #0 do not match its arguments "
            "(!stream.resource<transient>)");
}

// scf.while: "before" arguments of type !stream.resource<*> accept any
// resource init; the after region yields the argument types.
TEST(VerifierTest, WhileCarriedResourceTypes) {
  const char* body =
      "  %w = \"scf.while\"(%x) ({\n"
      "  ^bb0(%a: !stream.resource<*>):\n"
      "    \"scf.condition\"(%c, %a) : (i1, !stream.resource<*>) -> ()\n"
      "  }, {\n"
      "  ^bb0(%b: !stream.resource<*>):\n"
      "    \"scf.yield\"(%b) : (!stream.resource<*>) -> ()\n"
      "  }) : (!stream.resource<external>) -> !stream.resource<*>\n"
      "  \"func.return\"(%w) : (!stream.resource<*>) -> ()";
  EXPECT_EQ(VerifyText(Func("%x: !stream.resource<external>, %c: i1", body)), "");
  std::string bad = body;
  bad.replace(bad.find("^bb0(%a: !stream.resource<*>)"), 29, "^bb0(%a: !stream.resource<transient>)");
  bad.replace(bad.find("(i1, !stream.resource<*>)"), 25, "(i1, !stream.resource<transient>)");
  EXPECT_NE(VerifyText(Func("%x: !stream.resource<external>, %c: i1", bad)), "");  // external init, transient arg
}

TEST(VerifierTest, VerifyOpOnNestedOp) {
  auto m = ParseModule(Func("%x: tensor<2xf32>",
                            "  %0 = \"tensor.neg\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n" + std::string(kRet2)),
                       "v.kir");
  ASSERT_TRUE(m.ok());
  Operation* neg = (*m)->LookupFunction("f")->region(0)->block(0)->ops().front().get();
  EXPECT_TRUE(VerifyOp(neg).ok());
}

}  // namespace
}  // namespace kiln::ir
