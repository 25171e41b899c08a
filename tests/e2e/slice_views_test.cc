// --slice-views through the whole pipeline and the runtime: a contiguous,
// 256-byte-aligned slice becomes a view of its source (no dispatch, no
// copy), and the dispatch that reads it is bound at the view's offset.
// Expected values are derived by hand from the input.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// x: 4 rows of 64; s = rows 1 and 2 (bytes [256, 768) of x); y = s + s.
const char* kRows = R"(
"func.func"() ({
^bb0(%x: tensor<4x64xf32>):
  %s = "tensor.slice"(%x) {starts = [1, 0]} : (tensor<4x64xf32>) -> tensor<2x64xf32>
  %y = "tensor.add"(%s, %s) : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  "func.return"(%y, %s) : (tensor<2x64xf32>, tensor<2x64xf32>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(SliceViewsTest, ContiguousSliceIsAViewOfItsSource) {
  Session s;
  backend::EmitReport report;
  ASSERT_EQ(s.Load(kRows, false, &report), "");
  EXPECT_EQ(report.dispatches, 1) << "the add only; the slice is a view";
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = static_cast<float>(i) * 0.5f - 7;
  std::vector<HostTensor> out;
  kiln_device_stats_t d{};
  ASSERT_EQ(s.Invoke("main", {F32({4, 64}, x)}, &out, &d), "");
  ASSERT_EQ(out.size(), 2u);
  std::vector<float> y = Values(out[0]), rows = Values(out[1]);
  ASSERT_EQ(y.size(), 128u);
  ASSERT_EQ(rows.size(), 128u);
  for (int i = 0; i < 128; ++i) {
    EXPECT_EQ(y[i], 2 * x[64 + i]) << i;
    EXPECT_EQ(rows[i], x[64 + i]) << i;
  }
  EXPECT_EQ(d.dispatches, 1u);
  EXPECT_EQ(ValidationMessages(), 0u);
}

}  // namespace
}  // namespace kiln::e2e
