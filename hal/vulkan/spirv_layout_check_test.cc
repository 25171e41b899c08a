// CheckSpirvLayout on real glslang output (hal/cts's vadd and scale
// shaders) and on targeted mutations of it: each crafted module of the
// hostile-input issue (a binding of 131072, descriptor set 1, a write to a
// read-only binding, raw pointers, an oversized workgroup) is refused with
// the rule it breaks, and word-level mutations never crash the check.
#include "hal/vulkan/spirv_layout_check.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/texels_spirv.h"
#include "hal/cts/vadd_spirv.h"

namespace kiln::hal::vulkan {
namespace {

constexpr uint32_t kOpCapability = 17, kOpDecorate = 71, kOpMemberDecorate = 72,
                   kOpVariable = 59, kOpTypeImage = 25;

std::vector<uint32_t> Vadd() { return {std::begin(kVaddSpirv), std::end(kVaddSpirv)}; }

// vadd.comp's declared layout: a, b read-only, c written; 4 push-constant
// bytes; workgroup 64x1x1.
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

SpirvLimits Limits(uint32_t size_x = 1024, uint32_t invocations = 1024) {
  SpirvLimits l;
  l.max_workgroup_size[0] = size_x;
  l.max_workgroup_size[1] = 1024;
  l.max_workgroup_size[2] = 64;
  l.max_workgroup_invocations = invocations;
  return l;
}

std::string Check(const std::vector<uint32_t>& w, const HostVector<EntryPointInfo>& layout,
                  const SpirvLimits& limits = Limits()) {
  Status s = CheckSpirvLayout(w.data(), w.size(), layout, limits);
  return s.ok() ? "OK" : s.ToString();
}

// Index of word `k` of the first instruction with opcode `op` whose operand
// word `match_k` equals `match` (match_k 0: any).
size_t Find(const std::vector<uint32_t>& w, uint32_t op, uint32_t match_k, uint32_t match,
            uint32_t k) {
  for (size_t at = 5; at < w.size(); at += w[at] >> 16) {
    if ((w[at] & 0xffff) == op && (match_k == 0 || w[at + match_k] == match)) return at + k;
  }
  ADD_FAILURE() << "no instruction " << op;
  return 0;
}

TEST(SpirvLayoutCheck, AcceptsTheShadersAsDeclared) {
  EXPECT_EQ(Check(Vadd(), VaddLayout()), "OK");
  std::vector<uint32_t> scale(std::begin(kScaleSpirv), std::end(kScaleSpirv));
  HostVector<EntryPointInfo> layout = VaddLayout();
  layout[0].binding_count = 2;
  layout[0].push_constant_bytes = 8;
  layout[0].binding_readonly = {1, 0};
  EXPECT_EQ(Check(scale, layout), "OK");
  layout[0].push_constant_bytes = 4;  // scale's block is {float, uint}: 8 bytes
  EXPECT_NE(Check(scale, layout).find("push-constant block is 8 bytes; the layout declares 4"),
            std::string::npos);
}

TEST(SpirvLayoutCheck, RefusesBindingsOutsideTheDeclaredLayout) {
  HostVector<EntryPointInfo> two = VaddLayout();
  two[0].binding_count = 2;
  EXPECT_NE(Check(Vadd(), two).find("has binding 2; the layout declares bindings 0..1"), std::string::npos);

  std::vector<uint32_t> w = Vadd();
  w[Find(w, kOpDecorate, 2, 33 /*Binding*/, 3)] = 131072;
  EXPECT_NE(Check(w, VaddLayout()).find("has binding 131072"), std::string::npos);

  w = Vadd();
  w[Find(w, kOpDecorate, 2, 34 /*DescriptorSet*/, 3)] = 1;
  EXPECT_NE(Check(w, VaddLayout()).find("descriptor set 1; the layout declares set 0 only"),
            std::string::npos);
}

TEST(SpirvLayoutCheck, RefusesWritesToReadOnlyBindings) {
  HostVector<EntryPointInfo> layout = VaddLayout();
  layout[0].binding_readonly = {1, 1, 1};  // c (written) declared read-only
  EXPECT_NE(Check(Vadd(), layout).find("binding 2 is declared read-only but its block is not NonWritable"),
            std::string::npos);
  // Decorated NonWritable (writeonly's NonReadable turned into NonWritable),
  // but the shader still stores through it.
  std::vector<uint32_t> w = Vadd();
  size_t nr = Find(w, kOpMemberDecorate, 3, 25 /*NonReadable*/, 3);
  w[nr] = 24;  // NonWritable
  EXPECT_NE(Check(w, layout).find("writes through a read-only binding"), std::string::npos);
}

TEST(SpirvLayoutCheck, RefusesRawPointersAndOtherStorageClasses) {
  std::vector<uint32_t> w = Vadd();
  w[Find(w, kOpCapability, 1, 1 /*Shader*/, 1)] = 5347;  // PhysicalStorageBufferAddresses
  EXPECT_NE(Check(w, VaddLayout()).find("capability 5347"), std::string::npos);
  w = Vadd();
  w[Find(w, kOpVariable, 3, 12 /*StorageBuffer*/, 3)] = 2;  // Uniform
  EXPECT_NE(Check(w, VaddLayout()).find("storage class 2"), std::string::npos);
}

// texels.comp: binding 0 a samplerBuffer (UniformConstant), binding 1 a
// storage buffer. Accepted only as declared; a storage image, an image of
// another dimension, or a descriptor set other than 0 is refused.
TEST(SpirvLayoutCheck, TexelBuffersOnlyAsDeclared) {
  std::vector<uint32_t> w(std::begin(kTexelsSpirv), std::end(kTexelsSpirv));
  HostVector<EntryPointInfo> layout = VaddLayout();
  layout[0].binding_count = 2;
  layout[0].binding_readonly = {1, 0};
  layout[0].binding_kinds = {BindingKind::kUniformTexelBuffer, BindingKind::kStorageBuffer};
  EXPECT_EQ(Check(w, layout), "OK");
  HostVector<EntryPointInfo> as_buffers = layout;
  as_buffers[0].binding_kinds.clear();
  EXPECT_NE(Check(w, as_buffers).find("texel buffer"), std::string::npos) << Check(w, as_buffers);
  HostVector<EntryPointInfo> both_texels = layout;
  both_texels[0].binding_kinds[1] = BindingKind::kUniformTexelBuffer;
  EXPECT_NE(Check(w, both_texels).find("storage buffer"), std::string::npos) << Check(w, both_texels);

  std::vector<uint32_t> m = w;
  m[Find(m, kOpTypeImage, 0, 0, 7)] = 2;  // Sampled 2: a storage image
  EXPECT_NE(Check(m, layout).find("not a 32-bit float sampled texel buffer"), std::string::npos);
  m = w;
  m[Find(m, kOpTypeImage, 0, 0, 3)] = 1;  // Dim 2D
  EXPECT_NE(Check(m, layout).find("not a 32-bit float sampled texel buffer"), std::string::npos);
  m = w;
  size_t var = Find(m, kOpVariable, 3, 0 /*UniformConstant*/, 2);
  for (size_t at = 5; at < m.size(); at += m[at] >> 16)
    if ((m[at] & 0xffff) == kOpDecorate && m[at + 1] == m[var] && m[at + 2] == 34 /*DescriptorSet*/)
      m[at + 3] = 1;
  EXPECT_NE(Check(m, layout).find("texel buffer"), std::string::npos);
  EXPECT_NE(Check(m, layout).find("descriptor set 1"), std::string::npos);
}

TEST(SpirvLayoutCheck, RefusesWorkgroupsBeyondTheDeviceLimits) {
  EXPECT_NE(Check(Vadd(), VaddLayout(), Limits(32)).find("workgroup size 64x1x1 of 'main' exceeds"),
            std::string::npos);
  EXPECT_NE(Check(Vadd(), VaddLayout(), Limits(1024, 32)).find("workgroup of 64 invocations"),
            std::string::npos);
}

TEST(SpirvLayoutCheck, RefusesMalformedStreams) {
  std::vector<uint32_t> w = Vadd();
  w[3] = 0;  // id bound
  EXPECT_NE(Check(w, VaddLayout()).find("id bound 0"), std::string::npos);
  w = Vadd();
  w[5] = (0xffffu << 16) | kOpCapability;
  EXPECT_NE(Check(w, VaddLayout()).find("past the module's end"), std::string::npos);
  // An OpEntryPoint (opcode 15) of 2 words: too few for the words the check reads.
  w = Vadd();
  for (size_t at = 5; at < w.size(); at += w[at] >> 16) {
    if ((w[at] & 0xffffu) == 15) {
      w[at] = (2u << 16) | 15u;
      break;
    }
  }
  EXPECT_NE(Check(w, VaddLayout()).find("opcode 15 of 2 words: too few"), std::string::npos);
  w = Vadd();
  w.resize(4);
  EXPECT_NE(Check(w, VaddLayout()).find("header alone is 5"), std::string::npos);
  HostVector<EntryPointInfo> other = VaddLayout();
  other[0].name = "other";
  EXPECT_NE(Check(Vadd(), other).find("no GLCompute entry point 'other'"), std::string::npos);
}

// Every single-word mutation (random word, random value) either passes or is
// refused; none crashes or reads out of bounds (run under ASan in CI).
TEST(SpirvLayoutCheck, SurvivesWordMutations) {
  std::mt19937 rng(17);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::vector<uint32_t> w = Vadd();
    size_t at = rng() % w.size();
    uint32_t kind = rng() % 3;
    w[at] = kind == 0 ? rng() : kind == 1 ? w[at] ^ (1u << (rng() % 32)) : rng() % 64;
    refused += Check(w, VaddLayout()) != "OK";
  }
  EXPECT_GT(refused, 300);  // the check is not vacuous on mutated input
}

}  // namespace
}  // namespace kiln::hal::vulkan
