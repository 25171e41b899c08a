// In-place concat through the whole pipeline and the runtime: a contiguous
// tensor.concat becomes updates into one target (--convert-to-stream), and
// --emplace-allocations makes each producer dispatch write its result
// straight into its subrange (no concat dispatch, no copy). Sources that
// cannot be placed (arguments) are copied. Expected values are derived by
// hand from the inputs.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

std::vector<float> Ramp(int n, float scale, float bias) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i) * scale + bias;
  return v;
}

// y = concat(-x0, |x1|, x2 * x2) along axis 1, each piece 20 floats (80
// bytes): the pieces start at bytes 0, 80 and 160, so the second and third
// producers are bound from byte 0 of the result and write at element
// offsets 20 and 40. y is returned (the caller's result storage).
const char* kThree = R"(
"func.func"() ({
^bb0(%x0: tensor<1x20xf32>, %x1: tensor<1x20xf32>, %x2: tensor<1x20xf32>):
  %a = "tensor.neg"(%x0) : (tensor<1x20xf32>) -> tensor<1x20xf32>
  %b = "tensor.abs"(%x1) : (tensor<1x20xf32>) -> tensor<1x20xf32>
  %c = "tensor.mul"(%x2, %x2) : (tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x20xf32>
  %y = "tensor.concat"(%a, %b, %c) {axis = 1 : i64} : (tensor<1x20xf32>, tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x60xf32>
  "func.return"(%y) : (tensor<1x60xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, ThreeProducersWriteIntoTheirSubranges) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kThree, false, &report), "");
  EXPECT_EQ(report.dispatches, 3) << "the three producers; no concat dispatch";
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(20, 0.5f, -4), x1 = Ramp(20, -0.25f, 2), x2 = Ramp(20, 0.75f, -6);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({1, 20}, x0), F32({1, 20}, x1), F32({1, 20}, x2)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 60u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(y[i], -x0[i]) << i;
    EXPECT_EQ(y[20 + i], std::fabs(x1[i])) << i;
    EXPECT_EQ(y[40 + i], x2[i] * x2[i]) << i;
  }
  EXPECT_EQ(d.dispatches, 3u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// y = concat(concat(-x0, |x1|), x2 * x2) along axis 1, pieces of 64 floats
// (256 bytes: every subrange starts on a binding boundary, no element
// offset). The inner concat is taken into the outer target: 3 dispatches,
// no copy.
const char* kNested = R"(
"func.func"() ({
^bb0(%x0: tensor<1x64xf32>, %x1: tensor<1x64xf32>, %x2: tensor<1x64xf32>):
  %a = "tensor.neg"(%x0) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = "tensor.abs"(%x1) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %ab = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x128xf32>
  %c = "tensor.mul"(%x2, %x2) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  %y = "tensor.concat"(%ab, %c) {axis = 1 : i64} : (tensor<1x128xf32>, tensor<1x64xf32>) -> tensor<1x192xf32>
  "func.return"(%y) : (tensor<1x192xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, NestedConcatIsOneTarget) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kNested, false, &report), "");
  EXPECT_EQ(report.dispatches, 3);
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(64, 0.5f, -9), x1 = Ramp(64, -0.25f, 5), x2 = Ramp(64, 0.125f, -3);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({1, 64}, x0), F32({1, 64}, x1), F32({1, 64}, x2)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 192u);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(y[i], -x0[i]) << i;
    EXPECT_EQ(y[64 + i], std::fabs(x1[i])) << i;
    EXPECT_EQ(y[128 + i], x2[i] * x2[i]) << i;
  }
  EXPECT_EQ(d.dispatches, 3u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A concat in each branch of an scf.if on a device flag: the then branch
// concatenates two producers (placed: no copy), the else branch the two
// arguments (borrowed: copied, 2 copies).
const char* kInIf = R"(
"func.func"() ({
^bb0(%f: tensor<1xi1>, %x0: tensor<1x20xf32>, %x1: tensor<1x20xf32>):
  %p = "tensor.extract"(%f) : (tensor<1xi1>) -> i1
  %r = "scf.if"(%p) ({
    %a = "tensor.neg"(%x0) : (tensor<1x20xf32>) -> tensor<1x20xf32>
    %b = "tensor.abs"(%x1) : (tensor<1x20xf32>) -> tensor<1x20xf32>
    %y = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x40xf32>
    "scf.yield"(%y) : (tensor<1x40xf32>) -> ()
  }, {
    %z = "tensor.concat"(%x1, %x0) {axis = 1 : i64} : (tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x40xf32>
    "scf.yield"(%z) : (tensor<1x40xf32>) -> ()
  }) : (i1) -> tensor<1x40xf32>
  "func.return"(%r) : (tensor<1x40xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

HostTensor Flag(bool on) {
  HostTensor t;
  t.dtype = KILN_DTYPE_BOOL;
  t.shape = {1};
  t.data = {static_cast<uint8_t>(on ? 1 : 0)};
  return t;
}

TEST(EmplaceAllocationsTest, ConcatInsideScfIf) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kInIf, false, &report), "");
  EXPECT_EQ(report.dispatches, 2) << "neg and abs; no concat dispatch";
  std::vector<float> x0 = Ramp(20, 0.5f, -4), x1 = Ramp(20, -0.25f, 2);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {Flag(true), F32({1, 20}, x0), F32({1, 20}, x1)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 40u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(y[i], -x0[i]) << i;
    EXPECT_EQ(y[20 + i], std::fabs(x1[i])) << i;
  }
  EXPECT_EQ(d.dispatches, 2u);
  EXPECT_EQ(d.copies, 0u) << "then branch: both producers placed";
  ASSERT_EQ(s.Invoke("main", {Flag(false), F32({1, 20}, x0), F32({1, 20}, x1)}, &out, &d), "");
  y = Values(out[0]);
  ASSERT_EQ(y.size(), 40u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(y[i], x1[i]) << i;
    EXPECT_EQ(y[20 + i], x0[i]) << i;
  }
  EXPECT_EQ(d.dispatches, 0u);
  EXPECT_EQ(d.copies, 2u) << "else branch: two borrowed arguments copied";
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A concat in a loop body: 3 trips of acc = concat(-acc[20:40], 2 * acc[0:20])
// (each half read through a slice of the carried value). Both producers
// write into the body's target; no concat dispatch runs.
const char* kInLoop = R"(
"func.func"() ({
^bb0(%x: tensor<1x40xf32>):
  %lb = "arith.constant"() {value = 0 : i64} : () -> index
  %ub = "arith.constant"() {value = 3 : i64} : () -> index
  %st = "arith.constant"() {value = 1 : i64} : () -> index
  %r = "scf.for"(%lb, %ub, %st, %x) ({
  ^bb0(%iv: index, %acc: tensor<1x40xf32>):
    %lo = "tensor.slice"(%acc) {starts = [0, 0]} : (tensor<1x40xf32>) -> tensor<1x20xf32>
    %hi = "tensor.slice"(%acc) {starts = [0, 20]} : (tensor<1x40xf32>) -> tensor<1x20xf32>
    %a = "tensor.neg"(%hi) : (tensor<1x20xf32>) -> tensor<1x20xf32>
    %b = "tensor.add"(%lo, %lo) : (tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x20xf32>
    %y = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x20xf32>, tensor<1x20xf32>) -> tensor<1x40xf32>
    "scf.yield"(%y) : (tensor<1x40xf32>) -> ()
  }) : (index, index, index, tensor<1x40xf32>) -> tensor<1x40xf32>
  "func.return"(%r) : (tensor<1x40xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, ConcatInsideLoop) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kInLoop, false, &report), "");
  std::vector<float> x = Ramp(40, 0.5f, -7);
  std::vector<float> want = x;
  for (int trip = 0; trip < 3; ++trip) {
    std::vector<float> next(40);
    for (int i = 0; i < 20; ++i) {
      next[i] = -want[20 + i];
      next[20 + i] = want[i] + want[i];
    }
    want = next;
  }
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({1, 40}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Values(out[0]), want);
  EXPECT_EQ(d.dispatches, 6u) << "two producers per trip; no concat dispatch";
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
