// In-place dispatches that also read the value they write through another
// operand (IREE's dispatch_aliased_buffer and aliasing_user_provided_output,
// docs/elision-parity.md rows #19 and #2). Each program is compiled by the
// real pipeline with and without elision and run on Vulkan (validation and
// synchronization validation on); both builds must give the hand-derived
// values below, and the copies each call records (kiln_device_stats) must be
// those the passes leave: --elide-async-copies removes the clone of an
// elementwise same-index in-place dispatch (the dispatch then binds one
// buffer three times, declared without `restrict`), and keeps it where the
// aliased operand is read at other indices or after the dispatch.
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// Executables: @addmul (p + q) * q and @add (the shared one) over
// tensor<4xf32>; @dbl p + p and @tr p + transpose(q) over tensor<2x2xf32>.
#define KILN_ALIASED_EXECUTABLES \
  KILN_E2E_ADD_EXECUTABLE \
  "\"flow.executable\"() ({\n" \
  "^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):\n" \
  "  %0 = \"flow.dispatch\"(%a, %b) ({\n" \
  "  ^bb0(%p: tensor<4xf32>, %q: tensor<4xf32>):\n" \
  "    %s = \"tensor.add\"(%p, %q) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n" \
  "    %m = \"tensor.mul\"(%s, %q) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n" \
  "    \"flow.return\"(%m) : (tensor<4xf32>) -> ()\n" \
  "  }) {name = \"addmul\"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>\n" \
  "}) {sym_name = \"addmul\"} : () -> ()\n" \
  "\"flow.executable\"() ({\n" \
  "^bb0(%a: tensor<2x2xf32>):\n" \
  "  %0 = \"flow.dispatch\"(%a) ({\n" \
  "  ^bb0(%p: tensor<2x2xf32>):\n" \
  "    %s = \"tensor.add\"(%p, %p) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n" \
  "    \"flow.return\"(%s) : (tensor<2x2xf32>) -> ()\n" \
  "  }) {name = \"dbl\"} : (tensor<2x2xf32>) -> tensor<2x2xf32>\n" \
  "}) {sym_name = \"dbl\"} : () -> ()\n" \
  "\"flow.executable\"() ({\n" \
  "^bb0(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>):\n" \
  "  %0 = \"flow.dispatch\"(%a, %b) ({\n" \
  "  ^bb0(%p: tensor<2x2xf32>, %q: tensor<2x2xf32>):\n" \
  "    %t = \"tensor.transpose\"(%q) {perm = [1, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>\n" \
  "    %s = \"tensor.add\"(%p, %t) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n" \
  "    \"flow.return\"(%s) : (tensor<2x2xf32>) -> ()\n" \
  "  }) {name = \"tr\"} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>\n" \
  "}) {sym_name = \"tr\"} : () -> ()\n"

// Every function takes a = [1, 2, 3, 4] (borrowed unless it says consume).
//  @aliased (#19): y = a + a (a fresh value the function owns);
//    r = (y + y) * y written in place into y, read through both operands.
//      y = [2, 4, 6, 8]; r = [4, 8, 12, 16] * y = [8, 32, 72, 128]
//    Elided: no copy (r updates y in place). Not elided: the clone (1).
//  @read_after: the same, then z = r + y reads y after the in-place write.
//      z = [8, 32, 72, 128] + [2, 4, 6, 8] = [10, 36, 78, 136]
//    The copy stays in both builds (1): y is read later. A wrong build
//    reads the updated y: z = [16, 64, 144, 256].
//  @transposed: y = a + a as a 2x2 matrix [[2, 4], [6, 8]];
//    r = y + transpose(y) in place: [[4, 10], [10, 16]]. The copy stays in
//    both builds (1): the body reads y at other indices than it writes.
//  @main (#2) (a consumed): calls @callee (module-internal, declared
//    borrow, inferred consume) which computes u = (x + x) * x in place
//    into its argument x, read through both operands:
//      u = [2, 4, 6, 8] * [1, 2, 3, 4] = [2, 8, 18, 32]
//    Elided: the argument is moved through both frames and updated in
//    place, no copy (0). Not elided: the clone in the callee (1).
const char* kAliased = KILN_ALIASED_EXECUTABLES R"(
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %a = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %y = "stream.async.dispatch"(%a, %a) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<transient>
  %r = "stream.async.dispatch"(%y, %y) {entry = @addmul, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "aliased"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %a = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %y = "stream.async.dispatch"(%a, %a) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<transient>
  %r = "stream.async.dispatch"(%y, %y) {entry = @addmul, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %z = "stream.async.dispatch"(%r, %y) {entry = @add, sizes = [16], tied_operands = [-1]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%z) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {sym_name = "read_after"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<2x2xf32>):
  %a = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<2x2xf32>) -> !stream.resource<external>
  %y = "stream.async.dispatch"(%a) {entry = @dbl, sizes = [16], tied_operands = [-1]} : (!stream.resource<external>) -> !stream.resource<transient>
  %r = "stream.async.dispatch"(%y, %y) {entry = @tr, sizes = [16], tied_operands = [0]} : (!stream.resource<transient>, !stream.resource<transient>) -> !stream.resource<transient>
  %e = "stream.tensor.export"(%r) {size = 16 : i64} : (!stream.resource<transient>) -> tensor<2x2xf32>
  "func.return"(%e) : (tensor<2x2xf32>) -> ()
}) {sym_name = "transposed"} : () -> ()
"func.func"() ({
^bb0(%arg0: tensor<4xf32>):
  %x = "stream.tensor.import"(%arg0) {consume = false, size = 16 : i64} : (tensor<4xf32>) -> !stream.resource<external>
  %u = "stream.async.dispatch"(%x, %x) {entry = @addmul, sizes = [16], tied_operands = [0]} : (!stream.resource<external>, !stream.resource<external>) -> !stream.resource<external>
  %e = "stream.tensor.export"(%u) {size = 16 : i64} : (!stream.resource<external>) -> tensor<4xf32>
  "func.return"(%e) : (tensor<4xf32>) -> ()
}) {arg_ownership = ["borrow"], sym_name = "callee", sym_visibility = "private"} : () -> ()
"func.func"() ({
^bb0(%s: tensor<4xf32>):
  %r = "func.call"(%s) {callee = @callee} : (tensor<4xf32>) -> tensor<4xf32>
  "func.return"(%r) : (tensor<4xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume"]} : () -> ()
)";

class AliasedDispatchTest : public ::testing::TestWithParam<bool> {};  // param: elision disabled

TEST_P(AliasedDispatchTest, HandDerivedValuesAndCopies) {
  const bool no_elision = GetParam();
  struct Case {
    const char* function;
    std::vector<int64_t> shape;
    bool consume;
    std::vector<float> want;
    uint64_t copies_elided, copies_not_elided;
  };
  const Case cases[] = {
      {"aliased", {4}, false, {8, 32, 72, 128}, 0, 1},
      {"read_after", {4}, false, {10, 36, 78, 136}, 1, 1},
      {"transposed", {2, 2}, false, {4, 10, 10, 16}, 1, 1},
      {"main", {4}, true, {2, 8, 18, 32}, 0, 1},
  };
  Session s;
  ASSERT_EQ(s.Load(kAliased, no_elision), "");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.function);
    for (int call = 0; call < 2; ++call) {  // a second call reuses cached storage
      std::vector<HostTensor> out;
      kiln_device_stats_t d{};
      ASSERT_EQ(s.Invoke(c.function, {F32(c.shape, {1, 2, 3, 4})}, &out, &d, c.consume), "");
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(Values(out[0]), c.want);
      EXPECT_EQ(d.copies, no_elision ? c.copies_not_elided : c.copies_elided);
    }
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Which bindings are declared `restrict` (CodegenOptions::aliased_bindings:
// those whose bytes overlap a written binding's are not). A tied dispatch
// binds its operand and its result to one range, so those two are never
// restrict; the in-place dispatch that also reads its tied operand binds one
// range three times, and none of the three is. Everything else stays
// restrict (the untied dispatches, which include @add reading `a` twice:
// read-only bindings may overlap each other).
TEST_P(AliasedDispatchTest, AliasedBindingsAreNotRestrict) {
  auto parsed = ir::ParseModule(kAliased, "<aliased>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  driver::CompileOptions options;
  options.pipeline.disable_elision = GetParam();
  std::ostringstream glsl;
  options.emit.glsl_dump = &glsl;
  auto compiled = driver::CompileModule(*parsed.value(), options, nullptr);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  // One dump per dispatch call site: "// ---- <name>\n<glsl>". Per
  // executable name: how many call sites left 0, 1, 2, 3 bindings without
  // `restrict`.
  std::map<std::string, std::vector<int>> non_restrict;
  std::string text = glsl.str();
  for (size_t at = text.find("// ---- "); at != std::string::npos;) {
    size_t next = text.find("// ---- ", at + 1);
    std::string shader = text.substr(at, next == std::string::npos ? std::string::npos : next - at);
    std::string name = shader.substr(8, shader.find('\n') - 8);
    int n = 0;
    for (size_t p = shader.find("layout(set = 0"); p != std::string::npos; p = shader.find("layout(set = 0", p + 1)) {
      size_t eol = shader.find('\n', p);
      if (shader.substr(p, eol - p).find(" restrict ") == std::string::npos) ++n;
    }
    std::vector<int>& counts = non_restrict[name];
    counts.resize(4, 0);
    counts[n]++;
    at = next;
  }
  // addmul runs at three call sites (@aliased, @read_after, @callee).
  // Elided: @aliased and @callee update their value in place through three
  // bindings of one buffer; @read_after writes its copy (operand 0 and the
  // result alias). Not elided: each writes a copy.
  EXPECT_EQ(non_restrict["addmul"], (GetParam() ? std::vector<int>{0, 0, 3, 0} : std::vector<int>{0, 0, 1, 2}));
  EXPECT_EQ(non_restrict["tr"], (std::vector<int>{0, 0, 1, 0}));   // writes its copy
  EXPECT_EQ(non_restrict["add"], (std::vector<int>{3, 0, 0, 0}));  // @aliased, @read_after (2 there)
  EXPECT_EQ(non_restrict["dbl"], (std::vector<int>{1, 0, 0, 0}));
}

INSTANTIATE_TEST_SUITE_P(Elision, AliasedDispatchTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("NoElision") : std::string("Elided");
                         });

}  // namespace
}  // namespace kiln::e2e
