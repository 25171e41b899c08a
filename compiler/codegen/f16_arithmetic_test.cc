// Which dispatches get an f16-arithmetic variant (f16_arithmetic.h), and
// what the variant is: float16_t arithmetic behind the Float16 capability,
// while the default SPIR-V stays free of it. The variant's results are
// checked on Vulkan by codegen_vulkan_test (f16_add_sub_rounds_per_op).
#include "compiler/codegen/f16_arithmetic.h"

#include <gtest/gtest.h>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/codegen_test_util.h"

namespace kiln::codegen {
namespace {

using testing::DispatchBuilder;

constexpr uint32_t kCapabilityFloat16 = 9;

// True when `spirv` declares OpCapability Float16.
bool DeclaresFloat16(const std::vector<uint32_t>& spirv) {
  for (size_t at = 5; at < spirv.size() && (spirv[at] >> 16); at += spirv[at] >> 16)
    if ((spirv[at] & 0xffffu) == 17 && spirv[at + 1] == kCapabilityFloat16) return true;
  return false;
}

ir::Type F16(testing::Shape s = {8}) { return ir::Type::Tensor(DType::kF16, std::move(s)); }

TEST(F16Arithmetic, AllF16ElementwiseGetsAVariant) {
  DispatchBuilder b({F16(), F16({1})}, {F16()});
  auto* e = b.Op("tensor.expand", {b.arg(1)}, F16());
  auto* m = b.Op("tensor.mul", {b.arg(0), e}, F16());
  auto* r = b.Op("tensor.relu", {m}, F16());
  auto* c = b.Op("tensor.clamp", {r}, F16(), {{"max", ir::Attribute(6.0)}});
  ir::Operation* d = b.Return({c});
  EXPECT_TRUE(F16ArithmeticApplies(d));
  auto compiled = CompileDispatch(d, {});
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const CompiledDispatch& cd = compiled.value();
  ASSERT_FALSE(cd.spirv_f16.empty());
  EXPECT_TRUE(ValidateSpirv(cd.spirv_f16).ok());
  EXPECT_TRUE(DeclaresFloat16(cd.spirv_f16));
  EXPECT_FALSE(DeclaresFloat16(cd.spirv));  // runs on 16-bit storage alone

  CodegenOptions off;
  off.f16_arithmetic_variants = false;  // kiln-compile --no-f16-arithmetic
  auto plain = CompileDispatch(d, off);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_TRUE(plain.value().spirv_f16.empty());
  EXPECT_EQ(plain.value().spirv, cd.spirv);
}

TEST(F16Arithmetic, MustNotActOnOtherRegions) {
  {  // an f32 operand: mixed precision stays f32
    DispatchBuilder b({F16(), ir::Type::Tensor(DType::kF32, {8})}, {F16()});
    auto* x = b.Op("tensor.cast", {b.arg(1)}, F16());
    EXPECT_FALSE(F16ArithmeticApplies(b.Return({b.Op("tensor.add", {b.arg(0), x}, F16())})));
  }
  {  // a transcendental op: Vulkan gives f16 built-ins no precision bound
    DispatchBuilder b({F16()}, {F16()});
    EXPECT_FALSE(F16ArithmeticApplies(b.Return({b.Op("tensor.exp", {b.arg(0)}, F16())})));
  }
  {  // a reduction keeps f32 accumulation
    DispatchBuilder b({F16()}, {F16({1})});
    auto* r = b.Op("tensor.reduce", {b.arg(0)}, F16({1}),
                   {{"kind", ir::Attribute(std::string("sum"))},
                    {"axes", ir::Attribute(std::vector<int64_t>{0})}});
    ir::Operation* d = b.Return({r});
    EXPECT_FALSE(F16ArithmeticApplies(d));
    auto compiled = CompileDispatch(d, {});
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    EXPECT_TRUE(compiled.value().spirv_f16.empty());
  }
  {  // only data movement: nothing to compute in f16
    DispatchBuilder b({F16({2, 4})}, {F16()});
    EXPECT_FALSE(F16ArithmeticApplies(b.Return({b.Op("tensor.reshape", {b.arg(0)}, F16())})));
  }
  {  // f32 elementwise
    auto f32 = ir::Type::Tensor(DType::kF32, {8});
    DispatchBuilder b({f32, f32}, {f32});
    EXPECT_FALSE(F16ArithmeticApplies(b.Return({b.Op("tensor.add", {b.arg(0), b.arg(1)}, f32)})));
  }
  EXPECT_FALSE(F16ArithmeticApplies(nullptr));
}

}  // namespace
}  // namespace kiln::codegen
