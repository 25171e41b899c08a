// Tests of the command-sequence analysis (command_sequence.h) on programs
// lowered to the stream level by the real passes (fuse-dispatch-regions,
// convert-to-stream): straight-line work is static; a device value read on
// the host (tensor.extract -> stream.async.load driving scf.if) or a call is
// not, with the op and its location in the reason.
#include "compiler/analysis/command_sequence.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/pass.h"
#include "compiler/transforms/pipeline.h"

namespace kiln::analysis {
namespace {

std::unique_ptr<ir::Module> ToStream(const char* text) {
  auto m = ir::ParseModule(text, "test.kir");
  EXPECT_TRUE(m.ok()) << m.status().message();
  if (!m.ok()) return nullptr;
  ir::PassContext ctx;
  Status st = transforms::RunPasses(**m, {"fuse-dispatch-regions", "convert-to-stream"}, {}, ctx);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::move(*m);
}

ir::Operation* Function(ir::Module& m, const char* name) {
  for (ir::Operation* f : m.functions())
    if (f->str_attr("sym_name") == name) return f;
  return nullptr;
}

TEST(CommandSequenceTest, StraightLineIsStatic) {
  auto m = ToStream(R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
  %0 = "tensor.mul"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "tensor.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(m);
  CommandSequence cs = AnalyzeCommandSequence(Function(*m, "main"));
  EXPECT_TRUE(cs.is_static) << cs.reason;
  EXPECT_EQ(cs.reason, "");
}

TEST(CommandSequenceTest, HostReadOfDeviceDataIsNotStatic) {
  auto m = ToStream(R"(
"func.func"() ({
^bb0(%c: tensor<1xi1>, %x: tensor<2xf32>):
  %b = "tensor.extract"(%c) : (tensor<1xi1>) -> i1 loc("cond")
  %r = "scf.if"(%b) ({
    %n = "tensor.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "scf.yield"(%n) : (tensor<2xf32>) -> ()
  }, {
    "scf.yield"(%x) : (tensor<2xf32>) -> ()
  }) : (i1) -> tensor<2xf32>
  "func.return"(%r) : (tensor<2xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(m);
  CommandSequence cs = AnalyzeCommandSequence(Function(*m, "main"));
  EXPECT_FALSE(cs.is_static);
  EXPECT_EQ(cs.reason, "stream.async.load at cond (a host read of device data)");
}

TEST(CommandSequenceTest, CallIsNotStatic) {
  auto m = ToStream(R"(
"func.func"() ({
^bb0(%x: tensor<4xf32>):
  %0 = "tensor.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%0) : (tensor<4xf32>) -> ()
}) {sym_name = "helper"} : () -> ()
"func.func"() ({
^bb0(%x: tensor<4xf32>):
  %1 = "func.call"(%x) {callee = @helper} : (tensor<4xf32>) -> tensor<4xf32> loc("call")
  "func.return"(%1) : (tensor<4xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(m);
  CommandSequence helper = AnalyzeCommandSequence(Function(*m, "helper"));
  EXPECT_TRUE(helper.is_static) << helper.reason;
  CommandSequence cs = AnalyzeCommandSequence(Function(*m, "main"));
  EXPECT_FALSE(cs.is_static);
  EXPECT_EQ(cs.reason, "func.call at call (a call runs its own submissions)");
}

TEST(CommandSequenceTest, NotAFunction) {
  EXPECT_FALSE(AnalyzeCommandSequence(nullptr).is_static);
}

}  // namespace
}  // namespace kiln::analysis
