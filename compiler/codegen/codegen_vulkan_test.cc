// Runs every dispatch of codegen_test_cases.h on the Vulkan device (lavapipe
// in CI, validation layer forced on by the CMake test environment) and
// compares the results with the naive C++ references of codegen_test_util.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "compiler/codegen/codegen.h"
#include "compiler/codegen/codegen_test_cases.h"
#include "hal/driver.h"
#include "hal/vulkan/exact_fma_splice.h"

namespace kiln::codegen {
namespace {

using testing::AllCases;
using testing::Case;
using testing::T;

std::vector<uint8_t> ToBytes(const T& t, DType dt) {
  std::vector<uint8_t> out(t.v.size() * DTypeSize(dt));
  for (size_t i = 0; i < t.v.size(); ++i) {
    double v = t.v[i];
    uint8_t* p = out.data() + i * DTypeSize(dt);
    switch (dt) {
      case DType::kF32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DType::kI32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
      case DType::kI64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
      case DType::kI8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
      case DType::kI16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
      case DType::kU16: { uint16_t x = static_cast<uint16_t>(v); std::memcpy(p, &x, 2); break; }
      case DType::kU32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
      case DType::kU64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
      case DType::kF64: std::memcpy(p, &v, 8); break;
      case DType::kF16: { uint16_t h = ir::FloatToHalf(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      case DType::kBF16: { uint16_t h = ir::FloatToBF16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      default: *p = static_cast<uint8_t>(v); break;  // u8, i1
    }
  }
  return out;
}

double FromBytes(const uint8_t* p, DType dt) {
  switch (dt) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kI32: { int32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::kI64: { int64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case DType::kI8: { int8_t x; std::memcpy(&x, p, 1); return x; }
    case DType::kI16: { int16_t x; std::memcpy(&x, p, 2); return x; }
    case DType::kU16: { uint16_t x; std::memcpy(&x, p, 2); return x; }
    case DType::kU32: { uint32_t x; std::memcpy(&x, p, 4); return x; }
    case DType::kU64: { uint64_t x; std::memcpy(&x, p, 8); return static_cast<double>(x); }
    case DType::kF64: { double x; std::memcpy(&x, p, 8); return x; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return ir::HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return ir::BF16ToFloat(h); }
    default: return *p;
  }
}

class CodegenVulkanTest : public ::testing::TestWithParam<int> {
 protected:
  static void SetUpTestSuite() {
    auto d = hal::CreateDevice("vulkan", hal::DeviceOptions{});
    if (!d.ok()) {
      std::fprintf(stderr, "no Vulkan device: %s\n", d.status().ToString().c_str());
      return;
    }
    device_ = new Ref<hal::Device>(std::move(d.value()));
  }
  static void TearDownTestSuite() {
    delete device_;
    device_ = nullptr;
  }
  static Ref<hal::Device>* device_;
};
Ref<hal::Device>* CodegenVulkanTest::device_ = nullptr;

TEST_P(CodegenVulkanTest, MatchesReference) {
  if (!device_) GTEST_SKIP() << "no Vulkan device";
  hal::Device* dev = device_->get();
  uint64_t messages_before = hal::ValidationMessageCount();
  Case c = AllCases()[GetParam()]();
  SCOPED_TRACE(c.name);
  auto compiled = CompileDispatch(c.dispatch, c.options);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  const CompiledDispatch& cd = compiled.value();

  // Both SPIR-V variants where codegen made an f16-arithmetic one and the
  // device can run it (f16_arithmetic.h), each against its own expectation.
  bool float16 = false;
  for (const HostString& f : dev->info().features) float16 |= f == "shaderFloat16";
  struct Variant {
    const char* name;
    const std::vector<uint32_t>* spirv;
    const std::vector<T>* expected;
  };
  // llvmpipe runs float16_t operations at f32 precision and rounds only at
  // the store, so there the variant's results are the f32 variant's.
  const bool widens_f16 = std::string(dev->info().name.c_str()).find("llvmpipe") != std::string::npos;
  std::vector<Variant> variants = {{"f32 arithmetic", &cd.spirv, &c.expected}};
  if (!cd.spirv_f16.empty() && float16)
    variants.push_back({"f16 arithmetic", &cd.spirv_f16,
                        c.expected_f16.empty() || widens_f16 ? &c.expected : &c.expected_f16});
  if (!c.expected_f16.empty()) {
    EXPECT_FALSE(cd.spirv_f16.empty()) << "no f16-arithmetic variant";
  }
  // A conv or conv-transpose register block also runs unrolled in the module (kiln-compile
  // --unroll-in-module), which must give the same results.
  CompiledDispatch unrolled;
  if (cd.glsl.find("// schedule: conv-tiled") != std::string::npos ||
      cd.glsl.find("// schedule: conv-transpose-") != std::string::npos) {
    CodegenOptions o = c.options;
    o.unroll_in_module = true;
    auto u = CompileDispatch(c.dispatch, o);
    ASSERT_TRUE(u.ok()) << u.status().ToString();
    unrolled = std::move(u.value());
    EXPECT_NE(unrolled.spirv, cd.spirv);
    variants.push_back({"unrolled in module", &unrolled.spirv, &c.expected});
  }
  for (const Variant& variant : variants) {
    SCOPED_TRACE(variant.name);
    hal::EntryPointInfo ep;
    ep.name = cd.entry_point;
    ep.binding_count = cd.binding_count;
    for (bool r : cd.binding_readonly) ep.binding_readonly.push_back(r ? 1 : 0);
    for (uint8_t k : cd.binding_kinds) ep.binding_kinds.push_back(static_cast<hal::BindingKind>(k));
    ep.push_constant_bytes = static_cast<uint32_t>(cd.push_constants.size() * 4);
    for (int i = 0; i < 3; ++i) ep.workgroup_size[i] = cd.workgroup_size[i];
    auto exe = dev->CreateExecutable(variant.spirv->data(), variant.spirv->size(), {ep});
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();

    std::vector<Ref<hal::Buffer>> buffers;
    std::vector<hal::BufferBinding> bindings;
    auto add_buffer = [&](const std::vector<uint8_t>& bytes, size_t size) {
      auto b = dev->AllocateBuffer(std::max<size_t>(size, 16), hal::MemoryKind::kHostVisible);
      EXPECT_TRUE(b.ok()) << b.status().ToString();
      if (!b.ok()) return false;
      if (!bytes.empty()) {
        EXPECT_TRUE(b.value()->Write(0, bytes.data(), bytes.size()).ok());
      }
      hal::BufferBinding bb;
      bb.buffer = b.value().get();
      bb.offset = 0;
      bb.length = size;  // exactly the tensor's bytes (codegen.h contract)
      bindings.push_back(bb);
      buffers.push_back(std::move(b.value()));
      return true;
    };
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      std::vector<uint8_t> bytes = ToBytes(c.inputs[i], c.input_dtypes[i]);
      ASSERT_TRUE(add_buffer(bytes, bytes.size()));
    }
    for (size_t k = 0; k < c.expected.size(); ++k) {
      size_t size = c.expected[k].v.size() * DTypeSize(c.result_dtypes[k]);
      std::vector<uint8_t> poison(size, 0xcd);
      ASSERT_TRUE(add_buffer(poison, size));
    }

    auto cmd = dev->CreateCommandBuffer();
    ASSERT_TRUE(cmd.ok()) << cmd.status().ToString();
    ASSERT_TRUE(cmd.value()
                    ->Dispatch(exe.value().get(), 0, cd.workgroup_count,
                               cd.push_constants.empty() ? nullptr : cd.push_constants.data(),
                               ep.push_constant_bytes, bindings.data(),
                               static_cast<uint32_t>(bindings.size()))
                    .ok());
    ASSERT_TRUE(cmd.value()->End().ok());
    auto sem = dev->CreateSemaphore(0);
    ASSERT_TRUE(sem.ok()) << sem.status().ToString();
    hal::SemaphorePoint signal{sem.value().get(), 1};
    Status st = dev->QueueExecute(cmd.value().get(), nullptr, 0, &signal, 1);
    ASSERT_TRUE(st.ok()) << st.ToString();
    st = sem.value()->Wait(1, 30ull * 1000 * 1000 * 1000);
    ASSERT_TRUE(st.ok()) << st.ToString();

    for (size_t k = 0; k < c.expected.size(); ++k) {
      const T& want = (*variant.expected)[k];
      DType dt = c.result_dtypes[k];
      std::vector<uint8_t> got(want.v.size() * DTypeSize(dt));
      hal::Buffer* out = buffers[c.inputs.size() + k].get();
      ASSERT_TRUE(out->Read(0, got.data(), got.size()).ok());
      int bad = 0;
      for (size_t i = 0; i < want.v.size(); ++i) {
        double g = FromBytes(got.data() + i * DTypeSize(dt), dt), w = want.v[i];
        bool ok = (std::isnan(g) && std::isnan(w)) || g == w ||
                  std::abs(g - w) <= c.rtol * std::abs(w) + c.atol;
        if (!ok && ++bad <= 5) {
          ADD_FAILURE() << c.name << " result " << k << " element " << i << ": got " << g
                        << ", want " << w;
        }
      }
      EXPECT_EQ(bad, 0) << c.name << " result " << k << ": " << bad << " mismatches\n" << cd.glsl;
    }
  }
  EXPECT_EQ(hal::ValidationMessageCount(), messages_before) << "Vulkan validation messages";
}

// The runtime's exact-FMA splice (hal/vulkan/exact_fma_splice.h) on real
// codegen output: every dot-product dispatch has f32 fma() calls to rewrite,
// and each body gives SPIR-V that spirv-val accepts. A dispatch without
// fma() (an add) is left alone.
TEST(ExactFmaSpliceTest, RewritesFmaIntoValidSpirv) {
  int seen = 0;
  for (auto& f : AllCases()) {
    Case c = f();
    const bool dot = c.name == "matmul_exact_fma" || c.name == "conv_exact_fma" ||
                     c.name == "matmul_exact_fma_midpoints";
    if (!dot && c.name != "grid_fold") continue;
    SCOPED_TRACE(c.name);
    ++seen;
    auto compiled = CompileDispatch(c.dispatch, c.options);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    const std::vector<uint32_t>& words = compiled.value().spirv;
    for (auto body : {hal::vulkan::ExactFmaBody::kFloat64, hal::vulkan::ExactFmaBody::kFloat64Exact,
                      hal::vulkan::ExactFmaBody::kFloat32}) {
      HostVector<uint32_t> out;
      uint32_t spliced = 0;
      ASSERT_TRUE(hal::vulkan::SpliceExactFma(words.data(), words.size(), body, &out, &spliced).ok());
      EXPECT_EQ(spliced > 0, dot);
      if (!spliced) {
        EXPECT_TRUE(out.empty());
        continue;
      }
      EXPECT_GT(out.size(), words.size());
      Status valid = ValidateSpirv(std::vector<uint32_t>(out.begin(), out.end()));
      EXPECT_TRUE(valid.ok()) << valid.ToString();
    }
  }
  EXPECT_EQ(seen, 4);
}

// Runs one case with a single f32 result on `dev`; its bit patterns.
// `exact_fma`: the entry point's EntryPointInfo::exact_fma.
std::vector<uint32_t> RunF32Case(hal::Device* dev, const Case& c, const CompiledDispatch& cd,
                                 bool exact_fma = true) {
  std::vector<uint32_t> result;
  hal::EntryPointInfo ep;
  ep.exact_fma = exact_fma;
  ep.name = cd.entry_point;
  ep.binding_count = cd.binding_count;
  for (int i = 0; i < 3; ++i) ep.workgroup_size[i] = cd.workgroup_size[i];
  auto exe = dev->CreateExecutable(cd.spirv.data(), cd.spirv.size(), {ep});
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return result;
  std::vector<Ref<hal::Buffer>> buffers;
  std::vector<hal::BufferBinding> bindings;
  auto add = [&](const std::vector<uint8_t>& bytes) {
    auto b = dev->AllocateBuffer(bytes.size(), hal::MemoryKind::kHostVisible);
    EXPECT_TRUE(b.ok() && b.value()->Write(0, bytes.data(), bytes.size()).ok());
    bindings.push_back({b.value().get(), 0, bytes.size()});
    buffers.push_back(std::move(b.value()));
  };
  for (const T& in : c.inputs) add(ToBytes(in, DType::kF32));
  add(std::vector<uint8_t>(c.expected[0].v.size() * 4, 0xcd));
  auto cmd = dev->CreateCommandBuffer();
  auto sem = dev->CreateSemaphore(0);
  EXPECT_TRUE(cmd.ok() && sem.ok());
  EXPECT_TRUE(cmd.value()->Dispatch(exe.value().get(), 0, cd.workgroup_count, nullptr, 0,
                                    bindings.data(), static_cast<uint32_t>(bindings.size())).ok());
  EXPECT_TRUE(cmd.value()->End().ok());
  hal::SemaphorePoint signal{sem.value().get(), 1};
  EXPECT_TRUE(dev->QueueExecute(cmd.value().get(), nullptr, 0, &signal, 1).ok());
  EXPECT_TRUE(sem.value()->Wait(1, 30ull * 1000 * 1000 * 1000).ok());
  result.resize(c.expected[0].v.size());
  EXPECT_TRUE(buffers.back()->Read(0, result.data(), result.size() * 4).ok());
  return result;
}

// codegen_test_cases.h's matmul_exact_fma_midpoints, its compiled shader
// and the bit patterns of its expected (fused) results.
struct MidpointCase {
  Case c{""};
  StatusOr<CompiledDispatch> compiled = InternalError("not compiled");
  std::vector<uint32_t> want;
};
MidpointCase LoadMidpointCase() {
  MidpointCase m;
  for (auto& f : AllCases()) {
    Case k = f();
    if (k.name == "matmul_exact_fma_midpoints") m.c = std::move(k);
  }
  if (m.c.name.empty()) return m;
  m.compiled = CompileDispatch(m.c.dispatch, m.c.options);
  for (double v : m.c.expected[0].v) {
    float x = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &x, 4);
    m.want.push_back(u);
  }
  return m;
}

// matmul_exact_fma_midpoints on the device with each body the runtime can
// splice (KILN_EXACT_FMA, read at device creation): kFloat64Exact equals the
// fused chain bit for bit; the f64 sum rounded to f32 (the default body) and
// the f32 emulation miss some of these cases, which shows the case can fail.
TEST(ExactFmaSpliceTest, MidpointCasesOnTheDevice) {
  MidpointCase m = LoadMidpointCase();
  ASSERT_EQ(m.c.name, "matmul_exact_fma_midpoints");
  ASSERT_TRUE(m.compiled.ok()) << m.compiled.status().ToString();
  const Case& c = m.c;
  const auto& compiled = m.compiled;
  const std::vector<uint32_t>& want = m.want;
  const char* saved = std::getenv("KILN_EXACT_FMA");
  const std::string restore = saved ? saved : "";
  struct Run {
    const char* env;
    bool exact;
  };
  for (Run run : {Run{"exact", true}, Run{"1", false}, Run{"f32", false}}) {
    SCOPED_TRACE(run.env);
    setenv("KILN_EXACT_FMA", run.env, 1);
    auto d = hal::CreateDevice("vulkan", hal::DeviceOptions{});
    if (!d.ok()) GTEST_SKIP() << "no Vulkan device";
    bool cpu = false, f64 = false;
    for (const HostString& f : d.value()->info().features) f64 |= f == "shaderFloat64";
    cpu = std::string(d.value()->info().name.c_str()).find("llvmpipe") != std::string::npos;
    if (!cpu || !f64) GTEST_SKIP() << "needs lavapipe (splits fma(), has shaderFloat64)";
    std::vector<uint32_t> got = RunF32Case(d.value().get(), c, compiled.value());
    ASSERT_EQ(got.size(), want.size());
    int misses = 0;
    for (size_t i = 0; i < got.size(); ++i) misses += got[i] != want[i];
    if (run.exact)
      EXPECT_EQ(misses, 0);
    else
      EXPECT_GT(misses, 0);
  }
  if (saved)
    setenv("KILN_EXACT_FMA", restore.c_str(), 1);
  else
    unsetenv("KILN_EXACT_FMA");
}

// An entry point whose module says it may round twice
// (EntryPointInfo::exact_fma = false, compiler/transforms/mark_exact_fma.cc)
// is not spliced on a device that splices: on lavapipe with the exact body
// it gives the driver's own split multiply-add, bit for bit what the same
// shader gives with the emulation off (KILN_EXACT_FMA=0), and misses
// midpoint cases; the same entry point marked exact equals fmaf.
TEST(ExactFmaSpliceTest, EntryPointsThatMayRoundTwiceAreNotSpliced) {
  MidpointCase m = LoadMidpointCase();
  ASSERT_EQ(m.c.name, "matmul_exact_fma_midpoints");
  ASSERT_TRUE(m.compiled.ok()) << m.compiled.status().ToString();
  const Case& c = m.c;
  const auto& compiled = m.compiled;
  const std::vector<uint32_t>& want = m.want;
  const char* saved = std::getenv("KILN_EXACT_FMA");
  const std::string restore = saved ? saved : "";
  std::vector<uint32_t> split, marked_split, marked_exact;
  for (const char* env : {"0", "exact"}) {
    setenv("KILN_EXACT_FMA", env, 1);
    auto d = hal::CreateDevice("vulkan", hal::DeviceOptions{});
    if (!d.ok()) GTEST_SKIP() << "no Vulkan device";
    bool f64 = false;
    for (const HostString& f : d.value()->info().features) f64 |= f == "shaderFloat64";
    const bool cpu = std::string(d.value()->info().name.c_str()).find("llvmpipe") != std::string::npos;
    if (!cpu || !f64) GTEST_SKIP() << "needs lavapipe (splits fma(), has shaderFloat64)";
    if (std::string(env) == "0") {
      split = RunF32Case(d.value().get(), c, compiled.value(), true);
    } else {
      marked_split = RunF32Case(d.value().get(), c, compiled.value(), false);
      marked_exact = RunF32Case(d.value().get(), c, compiled.value(), true);
    }
  }
  if (saved)
    setenv("KILN_EXACT_FMA", restore.c_str(), 1);
  else
    unsetenv("KILN_EXACT_FMA");
  ASSERT_EQ(split.size(), want.size());
  EXPECT_EQ(marked_split, split);
  EXPECT_EQ(marked_exact, want);
  int misses = 0;
  for (size_t i = 0; i < split.size(); ++i) misses += split[i] != want[i];
  EXPECT_GT(misses, 0);
}

std::string CaseName(const ::testing::TestParamInfo<int>& info) {
  return AllCases()[info.param]().name;
}

INSTANTIATE_TEST_SUITE_P(AllCases, CodegenVulkanTest,
                         ::testing::Range(0, static_cast<int>(AllCases().size())), CaseName);

}  // namespace
}  // namespace kiln::codegen
