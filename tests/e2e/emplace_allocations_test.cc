// In-place concat through the whole pipeline and the runtime:
// --emplace-allocations makes each producer dispatch of a contiguous
// tensor.concat write its result straight into its subrange of the target
// (no concat dispatch, no copy). A concat with an operand that cannot be
// placed (an argument) stays one dispatch. Expected values are derived by
// hand from the inputs.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

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
// concatenates two producers (placed: no concat dispatch, no copy), the
// else branch the two borrowed arguments (they cannot be placed: the
// concat stays one dispatch).
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
  EXPECT_EQ(report.dispatches, 3) << "neg and abs, and the else branch's concat";
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
  EXPECT_EQ(d.dispatches, 1u) << "else branch: the concat dispatch";
  EXPECT_EQ(d.copies, 0u);
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


// The concat of kThree written into caller-supplied output storage (a view
// at byte 256 of a [3, 64] batch buffer: its row 1, of which the result
// fills 60 floats): each producer writes its piece straight into the
// caller's buffer (no copy), and no byte outside the view changes.
TEST(EmplaceAllocationsTest, ConcatIntoOutputStorage) {
  std::vector<uint8_t> bytes = CompileKirModule(kThree, "three");
  ASSERT_FALSE(bytes.empty());
  kiln_device_t device = SharedDevice();
  ASSERT_NE(device, nullptr);
  kiln_module_t module = LoadModule(bytes);
  ASSERT_NE(module, nullptr);
  kiln_context_t context = nullptr;
  kiln_function_t fn = nullptr;
  ASSERT_EQ(kiln_context_create(device, &module, 1, &context), nullptr);
  ASSERT_EQ(kiln_context_lookup_function(context, "main", &fn), nullptr);
  std::vector<float> fill(192, 7.0f);
  const int64_t batch_dims[2] = {3, 64}, row_dims[2] = {1, 60}, in_dims[2] = {1, 20};
  kiln_tensor_t batch = nullptr, row = nullptr;
  ASSERT_EQ(kiln_tensor_create(device, KILN_DTYPE_F32, 2, batch_dims, fill.data(), fill.size() * 4, &batch), nullptr);
  ASSERT_EQ(kiln_tensor_create_view(batch, 256, KILN_DTYPE_F32, 2, row_dims, &row), nullptr);
  std::vector<float> x0 = Ramp(20, 0.5f, -4), x1 = Ramp(20, -0.25f, 2), x2 = Ramp(20, 0.75f, -6);
  kiln_tensor_t in[3] = {nullptr, nullptr, nullptr};
  const std::vector<float>* xs[3] = {&x0, &x1, &x2};
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(kiln_tensor_create(device, KILN_DTYPE_F32, 2, in_dims, xs[i]->data(), 80, &in[i]), nullptr);
  kiln_device_stats_t before, after;
  ASSERT_EQ(kiln_device_stats(device, &before), nullptr);
  kiln_invoke_arg_t args[4] = {{in[0], KILN_ARG_BORROW, 0}, {in[1], KILN_ARG_BORROW, 0}, {in[2], KILN_ARG_BORROW, 0},
                               {row, KILN_ARG_OUTPUT_STORAGE, 0}};
  kiln_tensor_t result = nullptr;
  kiln_status_t st = kiln_invoke_ex(context, fn, args, 4, &result, 1);
  ASSERT_EQ(st, nullptr) << kiln_status_message(st);
  ASSERT_EQ(kiln_device_stats(device, &after), nullptr);
  EXPECT_EQ(after.copies - before.copies, 0u) << "a piece was copied instead of written in place";
  EXPECT_EQ(after.dispatches - before.dispatches, 3u);
  std::vector<float> all(192);
  ASSERT_EQ(kiln_tensor_read(batch, all.data(), all.size() * 4), nullptr);
  for (int i = 0; i < 192; ++i) {
    float want = 7.0f;
    if (i >= 64 && i < 84) want = -x0[i - 64];
    else if (i >= 84 && i < 104) want = std::fabs(x1[i - 84]);
    else if (i >= 104 && i < 124) want = x2[i - 104] * x2[i - 104];
    EXPECT_EQ(all[i], want) << "element " << i;
  }
  kiln_tensor_release(result);
  for (kiln_tensor_t t : in) kiln_tensor_release(t);
  kiln_tensor_release(row);
  kiln_tensor_release(batch);
  kiln_context_release(context);
  kiln_module_release(module);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A piece also read before the concat (a shortcut, as PP-OCRv4 rec's
// AveragePool output feeds a conv and the concat): a = -x0 is placed at
// byte 0 and c = a + a reads it there through a view; y = concat(a, |x1|).
const char* kReadBefore = R"(
"func.func"() ({
^bb0(%x0: tensor<1x64xf32>, %x1: tensor<1x64xf32>):
  %a = "tensor.neg"(%x0) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %c = "tensor.reduce"(%a) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x64xf32>) -> tensor<1x1xf32>
  %b = "tensor.abs"(%x1) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %y = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x128xf32>
  "func.return"(%y, %c) : (tensor<1x128xf32>, tensor<1x1xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, PieceReadBeforeTheConcatIsPlaced) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kReadBefore, false, &report), "");
  EXPECT_EQ(report.dispatches, 3);
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(64, 0.25f, -5), x1 = Ramp(64, -0.5f, 9);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({1, 64}, x0), F32({1, 64}, x1)}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> y = Values(out[0]), c = Values(out[1]);
  ASSERT_EQ(y.size(), 128u);
  ASSERT_EQ(c.size(), 1u);
  float sum = 0;  // multiples of 0.25 below 2^10: exact in any order
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(y[i], -x0[i]) << i;
    EXPECT_EQ(y[64 + i], std::fabs(x1[i])) << i;
    sum += -x0[i];
  }
  EXPECT_EQ(c[0], sum);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A piece read again after the concat: a = -x0 is placed at byte 0 of y,
// and z = a * x1 (after the concat) reads it there through a view; nothing
// writes y in between. y = concat(a, |x1|).
const char* kReadAfter = R"(
"func.func"() ({
^bb0(%x0: tensor<1x64xf32>, %x1: tensor<1x64xf32>):
  %a = "tensor.neg"(%x0) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %b = "tensor.abs"(%x1) : (tensor<1x64xf32>) -> tensor<1x64xf32>
  %y = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x128xf32>
  %z = "tensor.mul"(%a, %x1) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  "func.return"(%y, %z) : (tensor<1x128xf32>, tensor<1x64xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, PieceReadAfterTheConcatIsPlaced) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kReadAfter, false, &report), "");
  EXPECT_EQ(report.dispatches, 3) << "neg, abs, mul; no concat dispatch";
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(64, 0.25f, -5), x1 = Ramp(64, -0.5f, 9);
  for (int call = 0; call < 2; ++call) {
    std::vector<HostTensor> out;
    kiln_device_stats_t d{};
    ASSERT_EQ(s.Invoke("main", {F32({1, 64}, x0), F32({1, 64}, x1)}, &out, &d), "");
    ASSERT_EQ(out.size(), 2u);
    std::vector<float> y = Values(out[0]), z = Values(out[1]);
    ASSERT_EQ(y.size(), 128u);
    ASSERT_EQ(z.size(), 64u);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(y[i], -x0[i]) << i;
      EXPECT_EQ(y[64 + i], std::fabs(x1[i])) << i;
      EXPECT_EQ(z[i], -x0[i] * x1[i]) << i;
    }
    EXPECT_EQ(d.dispatches, 3u);
    EXPECT_EQ(d.copies, 0u);
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// The last producer's piece read again after the concat, in an scf.if
// branch that yields both the concat and the read: b = |x1| is placed at
// byte 256 of y (after a = -x0) and z = b * x0 reads it there through a
// view. The view only reads, so y is still written straight into the
// if's result storage (no copy at the yield). The else branch yields
// concat(x1, x0) (arguments: the concat stays a dispatch there) and
// x0 + x1.
const char* kLastReadAfterInIf = R"(
"func.func"() ({
^bb0(%f: tensor<1xi1>, %x0: tensor<1x64xf32>, %x1: tensor<1x64xf32>):
  %p = "tensor.extract"(%f) : (tensor<1xi1>) -> i1
  %r:2 = "scf.if"(%p) ({
    %a = "tensor.neg"(%x0) : (tensor<1x64xf32>) -> tensor<1x64xf32>
    %b = "tensor.abs"(%x1) : (tensor<1x64xf32>) -> tensor<1x64xf32>
    %y = "tensor.concat"(%a, %b) {axis = 1 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x128xf32>
    %z = "tensor.mul"(%b, %x0) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
    "scf.yield"(%y, %z) : (tensor<1x128xf32>, tensor<1x64xf32>) -> ()
  }, {
    %s = "tensor.add"(%x0, %x1) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
    %w = "tensor.concat"(%x1, %x0) {axis = 1 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x128xf32>
    "scf.yield"(%w, %s) : (tensor<1x128xf32>, tensor<1x64xf32>) -> ()
  }) : (i1) -> (tensor<1x128xf32>, tensor<1x64xf32>)
  "func.return"(%r#0, %r#1) : (tensor<1x128xf32>, tensor<1x64xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, LastPieceReadAfterTheConcatInABranchIsPlaced) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kLastReadAfterInIf, false, &report), "");
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(64, 0.25f, -5), x1 = Ramp(64, -0.5f, 9);
  for (int call = 0; call < 2; ++call) {
    std::vector<HostTensor> out;
    kiln_device_stats_t d{};
    ASSERT_EQ(s.Invoke("main", {Flag(true), F32({1, 64}, x0), F32({1, 64}, x1)}, &out, &d), "");
    ASSERT_EQ(out.size(), 2u);
    std::vector<float> y = Values(out[0]), z = Values(out[1]);
    ASSERT_EQ(y.size(), 128u);
    ASSERT_EQ(z.size(), 64u);
    for (int i = 0; i < 64; ++i) {
      EXPECT_EQ(y[i], -x0[i]) << i;
      EXPECT_EQ(y[64 + i], std::fabs(x1[i])) << i;
      EXPECT_EQ(z[i], std::fabs(x1[i]) * x0[i]) << i;
    }
    EXPECT_EQ(d.dispatches, 3u) << "neg, abs, mul: no concat dispatch";
    EXPECT_EQ(d.copies, 0u) << "no copy at the yield";
  }
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {Flag(false), F32({1, 64}, x0), F32({1, 64}, x1)}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> w = Values(out[0]), sum = Values(out[1]);
  ASSERT_EQ(w.size(), 128u);
  ASSERT_EQ(sum.size(), 64u);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(w[i], x1[i]) << i;
    EXPECT_EQ(w[64 + i], x0[i]) << i;
    EXPECT_EQ(sum[i], x0[i] + x1[i]) << i;
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// Piecewise donation (silero_vad's hn with --consume=h): h is consumed and
// y = concat(a, b) is returned, the size of h, so h's buffer can hold y.
// Each piece's producer is placed into y, and y's piece 0 ([0, 256)) is
// written before h's bytes [256, 512) are read (by m, which needs a), but
// each piece only after every read of h's bytes under it. So y still takes
// h's storage and the concat dispatch goes:
//   s0 = sum(h[0]); a = x + s0; m = h[1] + a; s1 = sum(m); b = a + s1
// (s0 and s1 are [1, 1] reductions: a and b do not fuse into them). Values
// are small integers, so every sum is exact in any order. Two invokes, the
// second fed the first's y as h.
const char* kDonatedPieces = R"(
"func.func"() ({
^bb0(%h: tensor<2x64xf32>, %x: tensor<1x64xf32>):
  %h0 = "tensor.slice"(%h) {starts = [0, 0]} : (tensor<2x64xf32>) -> tensor<1x64xf32>
  %h1 = "tensor.slice"(%h) {starts = [1, 0]} : (tensor<2x64xf32>) -> tensor<1x64xf32>
  %s0 = "tensor.reduce"(%h0) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x64xf32>) -> tensor<1x1xf32>
  %a = "tensor.add"(%x, %s0) : (tensor<1x64xf32>, tensor<1x1xf32>) -> tensor<1x64xf32>
  %m = "tensor.add"(%h1, %a) : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<1x64xf32>
  %s1 = "tensor.reduce"(%m) {axes = [1], keepdims = true, kind = "sum"} : (tensor<1x64xf32>) -> tensor<1x1xf32>
  %b = "tensor.add"(%a, %s1) : (tensor<1x64xf32>, tensor<1x1xf32>) -> tensor<1x64xf32>
  %y = "tensor.concat"(%a, %b) {axis = 0 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  "func.return"(%y) : (tensor<2x64xf32>) -> ()
}) {sym_name = "main", arg_ownership = ["consume", "consume"]} : () -> ()
)";

TEST(EmplaceAllocationsTest, ConsumedArgumentHoldsTheTargetPieceByPiece) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kDonatedPieces, false, &report), "");
  // s1 and b run as one workgroup-staged dispatch (fuse-workgroup-stages);
  // s0 stays apart from a, since it reads the consumed h that a's piece is
  // placed into.
  EXPECT_EQ(report.dispatches, 4) << "s0, a, m, s1 + b; no concat dispatch";
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> h(128), x(64);
  for (int i = 0; i < 64; ++i) {
    h[i] = static_cast<float>(i % 5 - 2);
    h[64 + i] = static_cast<float>(i % 7 - 3);
    x[i] = static_cast<float>(i % 3 - 1);
  }
  for (int call = 0; call < 2; ++call) {
    // By hand: the formulas above, in the same float arithmetic (exact).
    float s0 = 0, s1 = 0;
    for (int i = 0; i < 64; ++i) s0 += h[i];
    std::vector<float> want(128);
    for (int i = 0; i < 64; ++i) {
      want[i] = x[i] + s0;
      s1 += h[64 + i] + want[i];
    }
    for (int i = 0; i < 64; ++i) want[64 + i] = want[i] + s1;
    std::vector<HostTensor> out;
    kiln_device_stats_t d{};
    ASSERT_EQ(s.Invoke("main", {F32({2, 64}, h), F32({1, 64}, x)}, &out, &d, /*consume=*/true), "") << call;
    ASSERT_EQ(out.size(), 1u);
    std::vector<float> y = Values(out[0]);
    ASSERT_EQ(y.size(), 128u);
    for (int i = 0; i < 128; ++i) EXPECT_EQ(y[i], want[i]) << "call " << call << " element " << i;
    EXPECT_EQ(d.dispatches, 4u) << call;
    EXPECT_EQ(d.copies, 0u) << call;
    h = y;
  }
  EXPECT_EQ(ValidationMessages(), 0u);
}

// A piece also read through views before the concat (silero_vad's
// Concat_131, a reflect pad written as a concat): x = -x0 ([1, 1, 8]) and
// two reversed slices of it, y = concat(x[3:0:-1], x, x[6:3:-1]) along
// axis 2 ([1, 1, 14]). x is placed at byte 12 of y; the slices read it
// there through a view of y from byte 0 at an element offset, and are
// placed themselves at bytes 0 and 44. By hand:
//   y = [x3, x2, x1, x0 .. x7, x6, x5, x4]
const char* kReflect = R"(
"func.func"() ({
^bb0(%x0: tensor<1x1x8xf32>):
  %x = "tensor.neg"(%x0) : (tensor<1x1x8xf32>) -> tensor<1x1x8xf32>
  %l = "tensor.slice"(%x) {starts = [0, 0, 3], strides = [1, 1, -1]} : (tensor<1x1x8xf32>) -> tensor<1x1x3xf32>
  %r = "tensor.slice"(%x) {starts = [0, 0, 6], strides = [1, 1, -1]} : (tensor<1x1x8xf32>) -> tensor<1x1x3xf32>
  %y = "tensor.concat"(%l, %x, %r) {axis = 2 : i64} : (tensor<1x1x3xf32>, tensor<1x1x8xf32>, tensor<1x1x3xf32>) -> tensor<1x1x14xf32>
  "func.return"(%y) : (tensor<1x1x14xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(EmplaceAllocationsTest, PieceReadThroughViewsAtAnUnalignedOffsetIsPlaced) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kReflect, false, &report), "");
  EXPECT_EQ(report.dispatches, 3) << "neg and the two reversed slices; no concat dispatch";
  EXPECT_EQ(report.ir_copies, 0);
  std::vector<float> x0 = Ramp(8, 0.5f, -1.75f);
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({1, 1, 8}, x0)}, &out, &d), "");
  ASSERT_EQ(out.size(), 1u);
  std::vector<float> y = Values(out[0]);
  ASSERT_EQ(y.size(), 14u);
  const int from[14] = {3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 6, 5, 4};
  for (int i = 0; i < 14; ++i) EXPECT_EQ(y[i], -x0[from[i]]) << i;
  EXPECT_EQ(d.dispatches, 3u);
  EXPECT_EQ(d.copies, 0u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
