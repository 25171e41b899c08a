// Element types end to end through the C API: a tensor-level program on f16
// (or u16, bf16) tensors compiled by the default pipeline, run on Vulkan and
// compared with hand-derived values; and a module whose shaders need a
// device feature the device lacks, refused at context creation with an
// error naming the feature (KILN_VULKAN_DISABLE_FEATURES stands in for a
// device without it).
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/ir/parser.h"
#include "compiler/tools/compile_driver.h"
#include "hal/driver.h"
#include "hal/profiling/dispatch_timing_device.h"
#include "kiln_module_generated.h"
#include "runtime/kiln_internal.h"
#include "include/kiln/kiln.h"
#include "tests/e2e/e2e_util.h"

namespace kiln::e2e {
namespace {

// y = x * x + x on f16, rounded once to f16 at the store (f32 arithmetic in
// between; every step below is exact in f32):
//   x = 1.5 -> 3.75; x = -2 -> 2; x = 0.25 -> 0.3125;
//   x = 45 -> 2070, an f16 (spacing 2 in [2048, 4096));
//   x = 46.5 -> 2208.75 -> the f16 2208 (nearest, spacing 2: 2208.75 is 0.75
//   above 2208 and 1.25 below 2210);
//   x = 300 -> 90300 -> past the largest f16 (65504) -> +inf.
const char* kF16Program = R"(
"func.func"() ({
^bb0(%x: tensor<6xf16>):
  %0 = "tensor.mul"(%x, %x) : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>
  %1 = "tensor.add"(%0, %x) : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>
  "func.return"(%1) : (tensor<6xf16>) -> ()
}) {sym_name = "main"} : () -> ()
)";

// IEEE binary16 bits of the values above (sign | exponent+15 << 10 | mantissa).
constexpr uint16_t kHalf1p5 = 0x3e00, kHalfM2 = 0xc000, kHalf0p25 = 0x3400, kHalf45 = 0x51a0,
                   kHalf46p5 = 0x51d0, kHalf300 = 0x5cb0;
constexpr uint16_t kHalf3p75 = 0x4380, kHalf2 = 0x4000, kHalf0p3125 = 0x3500, kHalf2070 = 0x680b,
                   kHalf2208 = 0x6850, kHalfInf = 0x7c00;

HostTensor F16Bits(std::vector<int64_t> shape, const std::vector<uint16_t>& bits) {
  HostTensor t;
  t.dtype = KILN_DTYPE_F16;
  t.shape = std::move(shape);
  t.data.resize(bits.size() * 2);
  std::memcpy(t.data.data(), bits.data(), t.data.size());
  return t;
}

TEST(DTypeTest, F16ProgramThroughTheCApi) {
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F16), 2u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F16), "f16");
  HostTensor x = F16Bits({6}, {kHalf1p5, kHalfM2, kHalf0p25, kHalf45, kHalf46p5, kHalf300});
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kF16Program, {x}, &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype, KILN_DTYPE_F16);
  HostTensor want = F16Bits({6}, {kHalf3p75, kHalf2, kHalf0p3125, kHalf2070, kHalf2208, kHalfInf});
  EXPECT_EQ(out[0].data, want.data);  // bit-exact
  EXPECT_EQ(Compare(out[0], want, 0, 0), "");
}

// u16 and u32 arithmetic above the signed range, and bf16 stored from f32:
//   u16: 65535 - 1 = 65534; u32: 4000000000 / 3 = 1333333333 (unsigned);
//   bf16(3.14159274) = 3.140625 (bits 0x4049, the f32's top half rounded).
const char* kUnsignedProgram = R"(
"func.func"() ({
^bb0(%a: tensor<1xu16>, %b: tensor<1xu32>, %f: tensor<1xf32>):
  %one = "tensor.constant"() {value = dense<[1]> : tensor<1xu16>} : () -> tensor<1xu16>
  %three = "tensor.constant"() {value = dense<[3]> : tensor<1xu32>} : () -> tensor<1xu32>
  %0 = "tensor.sub"(%a, %one) : (tensor<1xu16>, tensor<1xu16>) -> tensor<1xu16>
  %1 = "tensor.div"(%b, %three) : (tensor<1xu32>, tensor<1xu32>) -> tensor<1xu32>
  %2 = "tensor.cast"(%f) : (tensor<1xf32>) -> tensor<1xbf16>
  "func.return"(%0, %1, %2) : (tensor<1xu16>, tensor<1xu32>, tensor<1xbf16>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(DTypeTest, UnsignedAndBf16ThroughTheCApi) {
  HostTensor a, b;
  a.dtype = KILN_DTYPE_U16;
  a.shape = {1};
  a.data = {0xff, 0xff};
  b.dtype = KILN_DTYPE_U32;
  b.shape = {1};
  uint32_t big = 4000000000u;
  b.data.resize(4);
  std::memcpy(b.data.data(), &big, 4);
  HostTensor f = F32({1}, {3.14159274f});
  std::vector<HostTensor> out;
  ASSERT_EQ(CompileTextAndRun(kUnsignedProgram, {a, b, f}, &out), "");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].dtype, KILN_DTYPE_U16);
  EXPECT_EQ(out[0].data, (std::vector<uint8_t>{0xfe, 0xff}));
  EXPECT_EQ(out[1].dtype, KILN_DTYPE_U32);
  uint32_t q;
  std::memcpy(&q, out[1].data.data(), 4);
  EXPECT_EQ(q, 1333333333u);
  EXPECT_EQ(out[2].dtype, KILN_DTYPE_BF16);
  EXPECT_EQ(out[2].data, (std::vector<uint8_t>{0x49, 0x40}));
}

// y = (a + b) - a on f16: one fused elementwise dispatch, which gets an
// f16-arithmetic variant (compiler/codegen/f16_arithmetic.h). The runtime
// builds its pipeline from that variant where the device has shaderFloat16
// (lavapipe does) and from the f32 one where it does not
// (KILN_VULKAN_DISABLE_FEATURES=shaderFloat16). Hand-derived:
//   f16 arithmetic: 2048 + 1 = 2049 -> 2048 (halfway, to even), - 2048 = 0;
//                   1 + 2048 -> 2048, - 1 = 2047.
//   f32 arithmetic: 1 and 2048, each rounded once at the store (exact).
// llvmpipe (lavapipe) evaluates float16_t at f32 precision, so there both
// pipelines give the f32 results; which SPIR-V the pipeline was created from
// is checked directly, through the device's record of its executables
// (hal::DispatchTimingDevice, as kiln-bench --per-dispatch uses it).
const char* kF16RoundingProgram = R"(
"func.func"() ({
^bb0(%a: tensor<2xf16>, %b: tensor<2xf16>):
  %0 = "tensor.add"(%a, %b) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  %1 = "tensor.sub"(%0, %a) : (tensor<2xf16>, tensor<2xf16>) -> tensor<2xf16>
  "func.return"(%1) : (tensor<2xf16>) -> ()
}) {sym_name = "main"} : () -> ()
)";

TEST(DTypeTest, F16ArithmeticIsChosenPerDevice) {
  auto parsed = ir::ParseModule(kF16RoundingProgram, "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto bytes = driver::CompileModule(*parsed.value(), driver::CompileOptions());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  constexpr uint16_t kHalf1 = 0x3c00, kHalf2048 = 0x6800, kHalf0 = 0x0000, kHalf2047 = 0x67ff;
  // Runs the module on a device created with `disable` features left off;
  // returns the result's f16 bits (empty, with a failure, on error) and
  // sets `*from_f16` when the pipeline came from the f16-arithmetic SPIR-V.
  auto run = [&](const char* disable, bool* from_f16) {
    std::vector<uint16_t> bits;
    *from_f16 = false;
    if (disable) {
      EXPECT_EQ(setenv("KILN_VULKAN_DISABLE_FEATURES", disable, 1), 0);
    }
    kiln_instance_t instance = nullptr;
    kiln_device_t device = nullptr;
    kiln_status_t s = kiln_instance_create(&instance);
    if (!s) s = kiln_device_create(instance, "vulkan", nullptr, -1, &device);
    unsetenv("KILN_VULKAN_DISABLE_FEATURES");
    kiln_module_t module = nullptr;
    kiln_context_t context = nullptr;
    kiln_function_t fn = nullptr;
    kiln_tensor_t args[2] = {nullptr, nullptr}, result = nullptr;
    const int64_t dims[1] = {2};
    const uint16_t a[2] = {kHalf2048, kHalf1}, b[2] = {kHalf1, kHalf2048};
    hal::DispatchTimingDevice* recorder = nullptr;
    if (!s) {
      auto wrapped = hal::DispatchTimingDevice::Create(device->device);
      EXPECT_TRUE(wrapped.ok()) << wrapped.status().ToString();
      if (wrapped.ok()) {
        recorder = static_cast<hal::DispatchTimingDevice*>(wrapped.value().get());
        device->device = std::move(wrapped).value();
      }
    }
    if (!s) s = kiln_module_load_from_memory(instance, bytes.value().data(), bytes.value().size(), &module);
    if (!s) s = kiln_context_create(device, &module, 1, &context);
    if (!s && recorder) {
      const format::Executable* exe = module->module->def()->executables()->Get(0);
      EXPECT_EQ(recorder->created_executables().size(), 1u);
      for (const hal::CreatedExecutable& c : recorder->created_executables())
        *from_f16 = exe->spirv_f16() && c.spirv == exe->spirv_f16()->data();
    }
    if (!s) s = kiln_context_lookup_function(context, "main", &fn);
    if (!s) s = kiln_tensor_create(device, KILN_DTYPE_F16, 1, dims, a, sizeof(a), &args[0]);
    if (!s) s = kiln_tensor_create(device, KILN_DTYPE_F16, 1, dims, b, sizeof(b), &args[1]);
    if (!s) s = kiln_invoke(context, fn, args, 2, &result, 1);
    bits.resize(2);
    if (!s) s = kiln_tensor_read(result, bits.data(), 4);
    if (s) {
      ADD_FAILURE() << kiln_status_message(s);
      kiln_status_free(s);
      bits.clear();
    }
    kiln_tensor_release(result);
    for (kiln_tensor_t t : args) kiln_tensor_release(t);
    kiln_context_release(context);
    kiln_module_release(module);
    kiln_device_release(device);
    kiln_instance_release(instance);
    return bits;
  };
  bool widens_f16 = false;
  {
    auto hal_device = hal::CreateDevice("vulkan", hal::DeviceOptions{});
    if (!hal_device.ok()) GTEST_SKIP() << "no Vulkan device";
    bool float16 = false;
    for (const HostString& f : hal_device.value()->info().features) float16 |= f == "shaderFloat16";
    if (!float16) GTEST_SKIP() << "the device has no shaderFloat16";
    widens_f16 = std::string(hal_device.value()->info().name.c_str()).find("llvmpipe") != std::string::npos;
  }
  const std::vector<uint16_t> f16_result = {kHalf0, kHalf2047}, f32_result = {kHalf1, kHalf2048};
  bool from_f16 = false;
  EXPECT_EQ(run(nullptr, &from_f16), widens_f16 ? f32_result : f16_result);
  EXPECT_TRUE(from_f16);
  // Without shaderFloat16 the f16 SPIR-V would be refused at context
  // creation ("needs the device feature 'shaderFloat16'"): the f32 one runs.
  EXPECT_EQ(run("shaderFloat16", &from_f16), f32_result);
  EXPECT_FALSE(from_f16);

  // Without the variant (kiln-compile --no-f16-arithmetic), f32 everywhere.
  // CompileModule lowers the module it is given in place: compile a fresh
  // parse of the program.
  driver::CompileOptions no_variant;
  no_variant.emit.codegen.f16_arithmetic_variants = false;
  parsed = ir::ParseModule(kF16RoundingProgram, "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  bytes = driver::CompileModule(*parsed.value(), no_variant);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(run(nullptr, &from_f16), f32_result);
  EXPECT_FALSE(from_f16);
}

// A device without 16-bit storage refuses the f16 module when the context
// is created, naming the feature; no shader reaches the driver.
TEST(DTypeTest, MissingDeviceFeatureIsNamedAtLoad) {
  auto parsed = ir::ParseModule(kF16Program, "<test>");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  auto bytes = driver::CompileModule(*parsed.value(), driver::CompileOptions());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();

  ASSERT_EQ(setenv("KILN_VULKAN_DISABLE_FEATURES", "shaderInt8,storageBuffer16BitAccess", 1), 0);
  kiln_instance_t instance = nullptr;
  kiln_device_t device = nullptr;
  kiln_status_t s = kiln_instance_create(&instance);
  if (!s) s = kiln_device_create(instance, "vulkan", nullptr, -1, &device);
  unsetenv("KILN_VULKAN_DISABLE_FEATURES");
  if (s) {
    std::string m = kiln_status_message(s);
    kiln_status_free(s);
    kiln_instance_release(instance);
    GTEST_SKIP() << "no Vulkan device: " << m;
  }
  kiln_module_t module = nullptr;
  s = kiln_module_load_from_memory(instance, bytes.value().data(), bytes.value().size(), &module);
  ASSERT_EQ(s, nullptr) << kiln_status_message(s);
  kiln_context_t context = nullptr;
  s = kiln_context_create(device, &module, 1, &context);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(kiln_status_code(s), KILN_STATUS_UNIMPLEMENTED);
  std::string message = kiln_status_message(s);
  EXPECT_NE(message.find("'storageBuffer16BitAccess'"), std::string::npos) << message;
  EXPECT_NE(message.find("capability 4433"), std::string::npos) << message;  // StorageBuffer16BitAccess
  kiln_status_free(s);
  EXPECT_EQ(context, nullptr);
  kiln_module_release(module);
  kiln_device_release(device);
  kiln_instance_release(instance);
}

}  // namespace
}  // namespace kiln::e2e
