#include "compiler/backend/shader_dedupe.h"

#include <gtest/gtest.h>

#include <string>

#include "compiler/codegen/codegen.h"

namespace kiln::backend {
namespace {

// A compute shader in the style codegen emits: shapes baked as literals.
std::string Shader(int n, int stride, int local_size = 64) {
  return "#version 450\nlayout(local_size_x = " + std::to_string(local_size) +
         ") in;\n"
         "layout(set = 0, binding = 0) restrict readonly buffer A { float a[]; };\n"
         "layout(set = 0, binding = 1) restrict writeonly buffer R { float r[]; };\n"
         "shared float sh[64];\n"
         "void main() {\n"
         "  uint i = gl_GlobalInvocationID.x;\n"
         "  if (i >= " + std::to_string(n) + "u) return;\n"
         "  sh[gl_LocalInvocationID.x] = a[int(i) * " + std::to_string(stride) + "];\n"
         "  r[i] = sh[gl_LocalInvocationID.x] * 2.0;\n"
         "}\n";
}

std::vector<uint32_t> Compile(const std::string& glsl) {
  auto r = codegen::CompileGlslToSpirv(glsl, "test");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r.value() : std::vector<uint32_t>{};
}

bool HasSpecConstant(const std::vector<uint32_t>& s) {
  for (size_t w = 5; w < s.size() && (s[w] >> 16); w += s[w] >> 16)
    if ((s[w] & 0xffffu) == 50) return true;  // OpSpecConstant
  return false;
}

TEST(ShaderDedupeTest, ShadersDifferingInIntegerConstantsShareOneModule) {
  ShaderDeduper d;
  auto a = d.Add(Compile(Shader(1000, 3)), {});
  auto b = d.Add(Compile(Shader(2000, 5)), {});
  auto a2 = d.Add(Compile(Shader(1000, 3)), {});  // identical: same pipeline
  EXPECT_EQ(d.shader_count(), 1u);
  EXPECT_EQ(a.shader, b.shader);
  EXPECT_NE(a.entry, b.entry);
  EXPECT_EQ(a2.entry, a.entry);
  ASSERT_EQ(d.entry_count(0), 2u);
  std::vector<std::vector<uint32_t>> specs;
  std::vector<uint32_t> shared = d.Finish(0, &specs);
  ASSERT_EQ(specs.size(), 2u);
  // n and stride vary: two specialization constants, each member's values.
  EXPECT_EQ(specs[0], (std::vector<uint32_t>{1000, 3}));
  EXPECT_EQ(specs[1], (std::vector<uint32_t>{2000, 5}));
  EXPECT_TRUE(HasSpecConstant(shared));
  EXPECT_TRUE(codegen::ValidateSpirv(shared).ok()) << codegen::ValidateSpirv(shared).ToString();
}

// The SpecIds a module declares (OpDecorate ... SpecId N), in order.
std::vector<uint32_t> SpecIds(const std::vector<uint32_t>& s) {
  std::vector<uint32_t> ids;
  for (size_t w = 5; w < s.size() && (s[w] >> 16); w += s[w] >> 16)
    if ((s[w] & 0xffffu) == 71 && (s[w] >> 16) == 4 && s[w + 2] == 1) ids.push_back(s[w + 3]);
  return ids;
}

// Dispatches with an f16-arithmetic variant (codegen CompiledDispatch::
// spirv_f16) share an executable when both their modules differ only in
// constants: the variant is specialized too, its SpecIds after the main
// module's, and each member's one list of values holds both.
TEST(ShaderDedupeTest, VariantsAreSpecializedAfterTheMainModule) {
  auto variant = [](int n, int stride, const char* scale) {
    std::string g = Shader(n, stride);
    g.replace(g.find("* 2.0"), 5, std::string("* ") + scale);
    return Compile(g);
  };
  ShaderDeduper d;
  auto a = d.Add(Compile(Shader(1000, 3)), {}, variant(1000, 3, "3.0"));
  auto b = d.Add(Compile(Shader(2000, 5)), {}, variant(2000, 5, "3.0"));
  // A variant that differs in more than integer constants, and no variant:
  // both apart.
  auto c = d.Add(Compile(Shader(4000, 9)), {}, variant(4000, 9, "3.0 + 1.0"));
  auto e = d.Add(Compile(Shader(1000, 3)), {});
  EXPECT_EQ(a.shader, b.shader);
  EXPECT_NE(c.shader, a.shader);
  EXPECT_NE(e.shader, a.shader);
  EXPECT_NE(e.shader, c.shader);
  EXPECT_EQ(d.shader_count(), 3u);
  std::vector<std::vector<uint32_t>> specs;
  std::vector<uint32_t> shared_variant;
  std::vector<uint32_t> shared = d.Finish(a.shader, &specs, &shared_variant);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0], (std::vector<uint32_t>{1000, 3, 1000, 3}));
  EXPECT_EQ(specs[1], (std::vector<uint32_t>{2000, 5, 2000, 5}));
  EXPECT_EQ(SpecIds(shared), (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(SpecIds(shared_variant), (std::vector<uint32_t>{3, 4}));
  EXPECT_TRUE(codegen::ValidateSpirv(shared).ok());
  EXPECT_TRUE(codegen::ValidateSpirv(shared_variant).ok()) << codegen::ValidateSpirv(shared_variant).ToString();
  // A group of one keeps its modules as they are.
  std::vector<uint32_t> lone_variant;
  d.Finish(c.shader, &specs, &lone_variant);
  EXPECT_EQ(lone_variant, variant(4000, 9, "3.0 + 1.0"));
  std::vector<uint32_t> none = {1};
  d.Finish(e.shader, &specs, &none);
  EXPECT_TRUE(none.empty());
}

TEST(ShaderDedupeTest, StructureOrTypeDifferencesKeepShadersApart) {
  ShaderDeduper d;
  d.Add(Compile(Shader(1000, 3)), {});
  // Workgroup size: a constant composite (WorkgroupSize) and an execution
  // mode literal, never specialized.
  d.Add(Compile(Shader(1000, 3, 32)), {});
  // Push-constant words differ: the extra key keeps them apart.
  d.Add(Compile(Shader(1000, 3)), {1});
  EXPECT_EQ(d.shader_count(), 3u);
  std::vector<std::vector<uint32_t>> specs;
  std::vector<uint32_t> s = d.Finish(0, &specs);
  EXPECT_EQ(specs, (std::vector<std::vector<uint32_t>>{{}}));
  EXPECT_FALSE(HasSpecConstant(s));
}

TEST(ShaderDedupeTest, MalformedSpirvOnlyMatchesItself) {
  ShaderDeduper d;
  std::vector<uint32_t> junk = {1, 2, 3};
  auto a = d.Add(junk, {});
  auto b = d.Add(junk, {});
  auto c = d.Add({1, 2, 4}, {});
  EXPECT_EQ(a.shader, b.shader);
  EXPECT_NE(a.shader, c.shader);
  std::vector<std::vector<uint32_t>> specs;
  EXPECT_EQ(d.Finish(a.shader, &specs), junk);
}

}  // namespace
}  // namespace kiln::backend
