// LowerTimeline (compiler/transforms/lower_timeline.h) on textual stream IR:
// the printed result is checked op by op; must-not-act and error cases too.
#include "compiler/transforms/lower_timeline.h"

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace kiln::transforms {
namespace {

struct Lowered {
  Status status;
  std::string text;
  int regions = 0, awaits = 0;
};

Lowered Lower(const char* kir) {
  Lowered out;
  auto parsed = ir::ParseModule(kir, "<test>");
  if (!parsed.ok()) {
    out.status = parsed.status();
    return out;
  }
  for (ir::Operation* f : parsed.value()->functions()) {
    out.status = LowerTimeline(f, &out.regions, &out.awaits);
    if (!out.status.ok()) return out;
  }
  out.text = ir::PrintModule(*parsed.value());
  return out;
}

// Two regions, a join and an await: bodies move out in order, results and
// captures become the yielded / captured values, every timeline op goes.
TEST(LowerTimelineTest, InlinesRegionsAndDropsTimepoints) {
  Lowered l = Lower(R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<external>, %arg1: !stream.resource<constant>):
  %2:2 = "stream.async.execute"(%arg0, %arg1) ({
  ^bb0(%x_r1: !stream.resource<external>, %c_r1: !stream.resource<constant>):
    %d_r1 = "stream.async.dispatch"(%x_r1, %c_r1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<constant>) -> !stream.resource<transient> loc("first")
    "stream.yield"(%d_r1) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [0, 2]} : (!stream.resource<external>, !stream.resource<constant>) -> (!stream.resource<transient>, !stream.timepoint)
  %3 = "stream.timepoint.immediate"() : () -> !stream.timepoint
  %4:2 = "stream.async.execute"(%3, %2#1, %arg0) ({
  ^bb0(%x_r2: !stream.resource<external>):
    %s_r2 = "stream.async.splat"() {pattern = 0 : i64, size = 16 : i64} : () -> !stream.resource<transient> loc("second")
    %d_r2 = "stream.async.dispatch"(%x_r2, %s_r2) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<transient>) -> !stream.resource<transient> loc("third")
    "stream.yield"(%d_r2) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [2, 1]} : (!stream.timepoint, !stream.timepoint, !stream.resource<external>) -> (!stream.resource<transient>, !stream.timepoint)
  %5 = "stream.timepoint.join"(%2#1, %4#1) : (!stream.timepoint, !stream.timepoint) -> !stream.timepoint
  %6:2 = "stream.timepoint.await"(%5, %2#0, %4#0) : (!stream.timepoint, !stream.resource<transient>, !stream.resource<transient>) -> (!stream.resource<transient>, !stream.resource<transient>)
  %7 = "stream.async.dispatch"(%6#0, %6#1) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient> loc("fourth")
  "func.return"(%7) : (!stream.resource<transient>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(l.status.ok()) << l.status.message();
  EXPECT_EQ(l.regions, 2);
  EXPECT_EQ(l.awaits, 1);
  EXPECT_EQ(l.text.find("stream.timepoint"), std::string::npos) << l.text;
  EXPECT_EQ(l.text.find("stream.async.execute"), std::string::npos) << l.text;
  EXPECT_EQ(l.text.find("stream.yield"), std::string::npos) << l.text;
  // Program order kept: first, second, third, fourth.
  size_t p1 = l.text.find("loc(\"first\")"), p2 = l.text.find("loc(\"second\")"),
         p3 = l.text.find("loc(\"third\")"), p4 = l.text.find("loc(\"fourth\")");
  ASSERT_NE(p4, std::string::npos) << l.text;
  EXPECT_LT(p1, p2);
  EXPECT_LT(p2, p3);
  EXPECT_LT(p3, p4);
  // The captures are the function arguments; the last dispatch reads the
  // two region results directly.
  EXPECT_NE(l.text.find("\"stream.async.dispatch\"(%arg0, %arg1)"), std::string::npos) << l.text;
  EXPECT_NE(l.text.find("\"stream.async.dispatch\"(%0, %2)"), std::string::npos) << l.text;
}

// Must not act: a function without timeline ops is left as it is.
TEST(LowerTimelineTest, LeavesProgramsWithoutTimelineOpsAlone) {
  const char* kir = R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<external>):
  %0 = "stream.async.dispatch"(%arg0) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  "func.return"(%0) : (!stream.resource<transient>) -> ()
}) {sym_name = "main"} : () -> ()
)";
  auto parsed = ir::ParseModule(kir, "<test>");
  ASSERT_TRUE(parsed.ok());
  std::string before = ir::PrintModule(*parsed.value());
  Lowered l = Lower(kir);
  ASSERT_TRUE(l.status.ok()) << l.status.message();
  EXPECT_EQ(l.regions, 0);
  EXPECT_EQ(l.awaits, 0);
  EXPECT_EQ(l.text, before);
}

// Timepoints carried through control flow: an scf.if yielding each branch's
// region timepoint, an scf.for carrying one, an scf.while forwarding one and
// a cf block argument. Each becomes an immediate where it was used (queue
// order already orders the work it stood for); the other carried values
// keep their positions.
TEST(LowerTimelineTest, TimepointsThroughControlFlowBecomeImmediates) {
  Lowered l = Lower(R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<external>, %c: i1, %n: index):
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r:2 = "scf.if"(%c) ({
    %a:2 = "stream.async.execute"(%arg0) ({
    ^bb0(%x: !stream.resource<external>):
      %d = "stream.async.dispatch"(%x) {entry = @neg, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient> loc("then")
      "stream.yield"(%d) : (!stream.resource<transient>) -> ()
    }) {operand_segments = [0, 1]} : (!stream.resource<external>) -> (!stream.resource<transient>, !stream.timepoint)
    "scf.yield"(%a#1, %a#0) : (!stream.timepoint, !stream.resource<transient>) -> ()
  }, {
    %b = "stream.async.splat"() {pattern = 0 : i64, size = 16 : i64} : () -> !stream.resource<transient> loc("else")
    %t = "stream.timepoint.immediate"() : () -> !stream.timepoint
    "scf.yield"(%t, %b) : (!stream.timepoint, !stream.resource<transient>) -> ()
  }) : (i1) -> (!stream.timepoint, !stream.resource<transient>)
  %w = "stream.timepoint.await"(%r#0, %r#1) : (!stream.timepoint, !stream.resource<transient>) -> !stream.resource<transient>
  %f:2 = "scf.for"(%lb, %n, %st, %r#0, %w) ({
  ^bb0(%iv: index, %tp: !stream.timepoint, %v: !stream.resource<transient>):
    %e:2 = "stream.async.execute"(%tp, %v) ({
    ^bb0(%y: !stream.resource<transient>):
      %u = "stream.async.dispatch"(%y) {entry = @neg, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>) -> !stream.resource<transient> loc("body")
      "stream.yield"(%u) : (!stream.resource<transient>) -> ()
    }) {operand_segments = [1, 1]} : (!stream.timepoint, !stream.resource<transient>) -> (!stream.resource<transient>, !stream.timepoint)
    "scf.yield"(%e#1, %e#0) : (!stream.timepoint, !stream.resource<transient>) -> ()
  }) : (index, index, index, !stream.timepoint, !stream.resource<transient>) -> (!stream.timepoint, !stream.resource<transient>)
  %z = "stream.timepoint.await"(%f#0, %f#1) : (!stream.timepoint, !stream.resource<transient>) -> !stream.resource<transient>
  %h:2 = "scf.while"(%f#0, %z) ({
  ^bb0(%wt: !stream.timepoint, %wv: !stream.resource<transient>):
    %k = "arith.constant"() {value = false} : () -> i1
    "scf.condition"(%k, %wt, %wv) : (i1, !stream.timepoint, !stream.resource<transient>) -> ()
  }, {
  ^bb0(%at: !stream.timepoint, %av: !stream.resource<transient>):
    "scf.yield"(%at, %av) : (!stream.timepoint, !stream.resource<transient>) -> ()
  }) : (!stream.timepoint, !stream.resource<transient>) -> (!stream.timepoint, !stream.resource<transient>)
  "cf.br"(%h#0, %h#1)[^bb1] : (!stream.timepoint, !stream.resource<transient>) -> ()
^bb1(%bt: !stream.timepoint, %bv: !stream.resource<transient>):
  %q = "stream.timepoint.await"(%bt, %bv) : (!stream.timepoint, !stream.resource<transient>) -> !stream.resource<transient>
  "func.return"(%q) : (!stream.resource<transient>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  ASSERT_TRUE(l.status.ok()) << l.status.message();
  EXPECT_EQ(l.regions, 2);
  EXPECT_EQ(l.awaits, 3);
  EXPECT_EQ(l.text.find("stream.timepoint"), std::string::npos) << l.text;
  EXPECT_NE(l.text.find("-> !stream.resource<transient>\n"), std::string::npos) << l.text;
  // Each construct keeps exactly its resource: one result, one yield operand.
  EXPECT_NE(l.text.find("\"scf.if\"(%arg1)"), std::string::npos) << l.text;
  EXPECT_NE(l.text.find("(index, index, index, !stream.resource<transient>) -> !stream.resource<transient>"),
            std::string::npos) << l.text;
  EXPECT_NE(l.text.find("(!stream.resource<transient>) -> !stream.resource<transient>"), std::string::npos)
      << l.text;
  EXPECT_NE(l.text.find("^bb1(%"), std::string::npos) << l.text;
}

// A timepoint that leaves the function (a result) has no ABI: exported
// functions signal fences instead (kiln_invoke_async). An error naming its
// user, not a crash.
TEST(LowerTimelineTest, EscapingTimepointIsAnError) {
  Lowered l = Lower(R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<external>):
  %0:2 = "stream.async.execute"(%arg0) ({
  ^bb0(%x_r3: !stream.resource<external>):
    %d_r3 = "stream.async.dispatch"(%x_r3) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
    "stream.yield"(%d_r3) : (!stream.resource<transient>) -> ()
  }) {operand_segments = [0, 1]} : (!stream.resource<external>) -> (!stream.resource<transient>, !stream.timepoint)
  "func.return"(%0#1) : (!stream.timepoint) -> ()
}) {sym_name = "main"} : () -> ()
)");
  EXPECT_EQ(l.status.code(), StatusCode::kUnimplemented);
  EXPECT_NE(l.status.message().find("used by 'func.return'"), std::string::npos) << l.status.message();
}

// Malformed regions are rejected with a message.
TEST(LowerTimelineTest, BadOperandSegmentsAreAnError) {
  Lowered l = Lower(R"(
"func.func"() ({
^bb0(%arg0: !stream.resource<external>):
  %0:2 = "stream.async.execute"(%arg0) ({
  ^bb0(%x_r4: !stream.resource<external>):
    "stream.yield"(%x_r4) : (!stream.resource<external>) -> ()
  }) {operand_segments = [1, 1]} : (!stream.resource<external>) -> (!stream.resource<external>, !stream.timepoint)
  "func.return"(%0#0) : (!stream.resource<external>) -> ()
}) {sym_name = "main"} : () -> ()
)");
  EXPECT_EQ(l.status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(l.status.message().find("operand_segments"), std::string::npos) << l.status.message();
}

}  // namespace
}  // namespace kiln::transforms
