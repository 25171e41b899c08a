// SpliceExactFma on hal/cts's vadd shader (no fma: left alone), on vadd with
// its add turned into an f32 fma (rewritten into a call of one appended
// function, per body, and still accepted by the load-time layout check), and
// on malformed input. codegen_vulkan_test's ExactFmaSpliceTest runs the
// bodies through spirv-val and on lavapipe against C's fmaf.
#include "hal/vulkan/exact_fma_splice.h"

#include <gtest/gtest.h>

#include <vector>

#include "hal/cts/vadd_spirv.h"
#include "hal/vulkan/spirv_layout_check.h"

namespace kiln::hal::vulkan {
namespace {

constexpr uint32_t kOpExtInstImport = 11, kOpExtInst = 12, kOpCapability = 17, kOpFAdd = 129,
                   kOpFunction = 54, kOpFunctionCall = 57;

std::vector<uint32_t> Vadd() { return {std::begin(kVaddSpirv), std::end(kVaddSpirv)}; }

// vadd.comp's declared layout (spirv_layout_check_test.cc).
HostVector<EntryPointInfo> VaddLayout() {
  EntryPointInfo e;
  e.name = "main";
  e.binding_count = 3;
  e.push_constant_bytes = 4;
  e.binding_readonly = {1, 1, 0};
  HostVector<EntryPointInfo> v;
  v.push_back(e);
  return v;
}

int Count(const uint32_t* w, size_t n, uint32_t op, uint32_t operand_k = 0, uint32_t value = 0) {
  int c = 0;
  for (size_t i = 5; i < n; i += w[i] >> 16)
    c += (w[i] & 0xffffu) == op && (operand_k == 0 || w[i + operand_k] == value);
  return c;
}

// vadd with `c = a + b` made `c = fma(a, b, b)`.
std::vector<uint32_t> VaddWithFma() {
  std::vector<uint32_t> w = Vadd();
  uint32_t glsl = 0;
  for (size_t i = 5; i < w.size(); i += w[i] >> 16)
    if ((w[i] & 0xffffu) == kOpExtInstImport) glsl = w[i + 1];
  EXPECT_NE(glsl, 0u) << "vadd imports no GLSL.std.450";
  for (size_t i = 5; i < w.size(); i += w[i] >> 16) {
    if ((w[i] & 0xffffu) != kOpFAdd) continue;
    const uint32_t type = w[i + 1], result = w[i + 2], x = w[i + 3], y = w[i + 4];
    const uint32_t fma[] = {(8u << 16) | kOpExtInst, type, result, glsl, 50, x, y, y};
    w.erase(w.begin() + static_cast<long>(i), w.begin() + static_cast<long>(i) + 5);
    w.insert(w.begin() + static_cast<long>(i), std::begin(fma), std::end(fma));
    return w;
  }
  ADD_FAILURE() << "vadd has no OpFAdd";
  return w;
}

TEST(ExactFmaSplice, LeavesAModuleWithoutFmaAlone) {
  std::vector<uint32_t> w = Vadd();
  HostVector<uint32_t> out;
  uint32_t spliced = 7;
  ASSERT_TRUE(SpliceExactFma(w.data(), w.size(), ExactFmaBody::kFloat64, &out, &spliced).ok());
  EXPECT_EQ(spliced, 0u);
  EXPECT_TRUE(out.empty());
}

TEST(ExactFmaSplice, RewritesEachFmaIntoACallOfOneAppendedFunction) {
  std::vector<uint32_t> w = VaddWithFma();
  ASSERT_EQ(Count(w.data(), w.size(), kOpExtInst, 4, 50), 1);
  SpirvLimits limits;
  limits.max_workgroup_size[0] = limits.max_workgroup_size[1] = limits.max_workgroup_size[2] = 1024;
  limits.max_workgroup_invocations = 1024;
  for (ExactFmaBody body : {ExactFmaBody::kFloat64, ExactFmaBody::kFloat64Exact, ExactFmaBody::kFloat32}) {
    SCOPED_TRACE(static_cast<int>(body));
    HostVector<uint32_t> out;
    uint32_t spliced = 0;
    ASSERT_TRUE(SpliceExactFma(w.data(), w.size(), body, &out, &spliced).ok());
    EXPECT_EQ(spliced, 1u);
    EXPECT_EQ(Count(out.data(), out.size(), kOpExtInst, 4, 50), 0);  // no Fma left
    EXPECT_EQ(Count(out.data(), out.size(), kOpFunctionCall), 1);
    EXPECT_EQ(Count(out.data(), out.size(), kOpFunction), Count(w.data(), w.size(), kOpFunction) + 1);
    EXPECT_EQ(Count(out.data(), out.size(), kOpCapability, 1, 10), body == ExactFmaBody::kFloat32 ? 0 : 1);
    EXPECT_GT(out[3], w[3]);  // new ids above the old bound
    Status s = CheckSpirvLayout(out.data(), out.size(), VaddLayout(), limits);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
}

TEST(ExactFmaSplice, RefusesMalformedWords) {
  std::vector<uint32_t> w = VaddWithFma();
  HostVector<uint32_t> out;
  uint32_t spliced = 0;
  std::vector<uint32_t> bad_magic = w;
  bad_magic[0] = 0;
  EXPECT_FALSE(SpliceExactFma(bad_magic.data(), bad_magic.size(), ExactFmaBody::kFloat64, &out, &spliced).ok());
  std::vector<uint32_t> zero_length = w;
  zero_length[5] = 0;  // the first instruction's word count
  EXPECT_FALSE(SpliceExactFma(zero_length.data(), zero_length.size(), ExactFmaBody::kFloat64, &out, &spliced).ok());
  std::vector<uint32_t> overlong = w;
  overlong.back() = (2u << 16) | (overlong.back() & 0xffffu);  // OpFunctionEnd claims 2 words
  EXPECT_FALSE(SpliceExactFma(overlong.data(), overlong.size(), ExactFmaBody::kFloat64, &out, &spliced).ok());
  EXPECT_EQ(spliced, 0u);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace kiln::hal::vulkan
