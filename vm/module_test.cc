#include "vm/module.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "vm/context.h"
#include "vm/testing/module_builder.h"

namespace kiln::vm {
namespace {

using testing::ModuleBuilder;
using testing::TensorDesc;

// Host-memory buffer: enough of hal::Buffer for device-free tests.
class HostBuffer : public hal::Buffer {
 public:
  explicit HostBuffer(uint64_t size) : data_(size) {}
  uint64_t size() const override { return data_.size(); }
  hal::MemoryKind memory_kind() const override { return hal::MemoryKind::kHostVisible; }
  hal::Buffer* allocation() override { return this; }
  uint64_t allocation_offset() const override { return 0; }
  Status Write(uint64_t offset, const void* data, uint64_t length) override {
    std::memcpy(data_.data() + offset, data, length);
    return OkStatus();
  }
  Status Read(uint64_t offset, void* data, uint64_t length) override {
    std::memcpy(data, data_.data() + offset, length);
    return OkStatus();
  }

 private:
  std::vector<uint8_t> data_;
};

Ref<BufferView> MakeView(DType dtype, std::vector<int64_t> shape) {
  uint64_t n = DTypeSize(dtype);
  for (int64_t d : shape) n *= d;
  Ref<hal::Buffer> buffer = MakeRef<HostBuffer>(n);
  return BufferView::Create(buffer, 0, dtype, shape.data(), shape.size()).value();
}

const TensorDesc kX{"x", DType::kF32, {2, 3}};

// main(x) -> x, after summing 1..10 into i1 with a loop:
//   i0 = 1; i1 = 0; i2 = 11; i3 = 1
//   loop: i1 += i0; i0 += i3; i4 = i0 < i2; COND_BR i4, loop, done
//   done: RET r0
std::vector<uint8_t> LoopModule() {
  ModuleBuilder b("loop");
  BytecodeEncoder f;
  Label floop = f.NewLabel(), fdone = f.NewLabel(), fend = f.NewLabel();
  f.ConstI32(0, 1);
  f.ConstI32(1, 0);
  f.ConstI32(2, 11);
  f.ConstI32(3, 1);
  f.Bind(floop);
  f.AddI32(1, 1, 0);
  f.AddI32(0, 0, 3);
  f.CmpLtI32(4, 0, 2);
  f.CondBr(4, floop, fdone);
  f.Bind(fdone);
  f.MulI32(5, 1, 1);
  f.SubI32(6, 2, 3);
  f.CmpEqI32(7, 1, 1);
  f.MovI32(8, 1);
  f.CmpNzRef(9, 0);
  f.MovRef(1, 0);
  f.ConstRefZero(0);
  f.CmpNzRef(10, 0);
  f.Nop();
  f.Br(fend);
  f.Bind(fend);
  f.Ret({Reg::Ref(1)});
  b.AddFunction("main", {kX}, {kX}, 11, 2, f);
  return b.Finish();
}

// A module using rodata, globals, CALL and FAIL (a richer fuzz seed).
std::vector<uint8_t> FailModule() {
  ModuleBuilder b("m");
  int msg = b.AddRodata("msg", {'b', 'a', 'd'});
  int g = b.AddGlobal("saved");
  BytecodeEncoder h;
  h.MovRef(1, 0);
  h.Ret({Reg::Ref(1)});
  int helper = b.AddFunction("helper", {kX}, {kX}, 0, 2, h, false);
  BytecodeEncoder e;
  Label fail = e.NewLabel(), ok = e.NewLabel();
  e.GlobalStoreRef(0, static_cast<uint16_t>(g));
  e.Call(static_cast<uint16_t>(helper), {Reg::Ref(0)}, {Reg::Ref(1)});
  e.GlobalLoadRef(2, static_cast<uint16_t>(g));
  e.ConstI32(1, 7);
  e.CmpEqI32(2, 0, 1);
  e.CondBr(2, fail, ok);
  e.Bind(ok);
  e.Ret({Reg::Ref(2)});
  e.Bind(fail);
  e.Fail(1, static_cast<uint16_t>(msg));
  b.AddFunction("main", {kX}, {kX}, 3, 3, e, true, {{0, "node_a"}});
  b.AddImport("hal.buffer.subspan", "rii_r");
  return b.Finish();
}

TEST(ModuleTest, LoadVerifyAndRunI32Program) {
  std::vector<uint8_t> bytes = LoopModule();
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_EQ(module.value()->name(), "loop");
  auto ctx = Context::Create(nullptr);
  ASSERT_TRUE(ctx.ok());
  ASSERT_TRUE(ctx.value()->RegisterModule(module.value()).ok());
  auto fn = ctx.value()->LookupFunction("main");
  ASSERT_TRUE(fn.ok());
  Ref<BufferView> x = MakeView(DType::kF32, {2, 3});
  BufferView* args[] = {x.get()};
  Ref<BufferView> result;
  Status s = ctx.value()->Invoke(fn.value(), args, 1, &result, 1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.get(), x.get());
  const auto& regs = ctx.value()->i32_registers_for_testing();
  EXPECT_EQ(regs[0], 11);
  EXPECT_EQ(regs[1], 55);
  EXPECT_EQ(regs[5], 3025);
  EXPECT_EQ(regs[6], 10);
  EXPECT_EQ(regs[7], 1);
  EXPECT_EQ(regs[8], 55);
  EXPECT_EQ(regs[9], 1);
  EXPECT_EQ(regs[10], 0);
  // The frame released its refs: only `x` and `result` hold the view.
  EXPECT_EQ(x->refcount(), 2);

  // Steady state: a second invoke makes no host allocation.
  uint64_t before = HostAllocationCount();
  ASSERT_TRUE(ctx.value()->Invoke(fn.value(), args, 1, &result, 1).ok());
  EXPECT_EQ(HostAllocationCount(), before);
}

TEST(ModuleTest, ArgumentChecks) {
  std::vector<uint8_t> bytes = LoopModule();
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
  auto ctx = Context::Create(nullptr).value();
  ASSERT_TRUE(ctx->RegisterModule(module).ok());
  FunctionRef fn = ctx->LookupFunction("main").value();
  Ref<BufferView> result;
  EXPECT_EQ(ctx->Invoke(fn, nullptr, 0, &result, 1).ToString(),
            "INVALID_ARGUMENT: function 'main' expects 1 arguments, got 0");
  Ref<BufferView> wrong_shape = MakeView(DType::kF32, {3, 2});
  BufferView* a1[] = {wrong_shape.get()};
  EXPECT_EQ(ctx->Invoke(fn, a1, 1, &result, 1).ToString(),
            "INVALID_ARGUMENT: argument 0 'x': expected tensor<2x3xf32>, got tensor<3x2xf32>");
  Ref<BufferView> wrong_dtype = MakeView(DType::kI32, {2, 3});
  BufferView* a2[] = {wrong_dtype.get()};
  EXPECT_EQ(ctx->Invoke(fn, a2, 1, &result, 1).ToString(),
            "INVALID_ARGUMENT: argument 0 'x': expected tensor<2x3xf32>, got tensor<2x3xi32>");
  BufferView* a3[] = {nullptr};
  EXPECT_EQ(ctx->Invoke(fn, a3, 1, &result, 1).ToString(),
            "INVALID_ARGUMENT: argument 0 'x': expected tensor<2x3xf32>, got null");
  EXPECT_EQ(ctx->Invoke(fn, a1, 1, nullptr, 0).ToString(),
            "INVALID_ARGUMENT: function 'main' returns 1 results, 0 result slots given");
  EXPECT_EQ(ctx->LookupFunction("nope").status().ToString(),
            "NOT_FOUND: no exported function 'nope' (exported: main)");
}

TEST(ModuleTest, FailCallGlobalsAndDebugLocations) {
  ModuleBuilder b("m");
  int msg = b.AddRodata("msg", {'b', 'a', 'd', ' ', 'x'});
  int g = b.AddGlobal("saved");
  // helper(x) -> x via CALL.
  BytecodeEncoder h;
  h.MovRef(1, 0);
  h.Ret({Reg::Ref(1)});
  int helper = b.AddFunction("helper", {kX}, {kX}, 0, 2, h, /*exported=*/false);
  // main(x): store x in a global, call helper, reload; FAIL when i0 == 7.
  BytecodeEncoder e;
  Label fail = e.NewLabel(), ok = e.NewLabel();
  e.GlobalStoreRef(0, static_cast<uint16_t>(g));
  e.Call(static_cast<uint16_t>(helper), {Reg::Ref(0)}, {Reg::Ref(1)});
  e.GlobalLoadRef(2, static_cast<uint16_t>(g));
  e.ConstI32(1, 7);
  e.CmpEqI32(2, 0, 1);
  e.CondBr(2, fail, ok);
  e.Bind(ok);
  e.Ret({Reg::Ref(2)});
  e.Bind(fail);
  uint32_t fail_offset = e.offset();
  e.Fail(1, static_cast<uint16_t>(msg));
  b.AddFunction("main", {kX}, {kX}, 3, 3, e, true, {{0, "node_a"}, {fail_offset, "node_b"}});
  // always_fail(): i0 = 0 -> FAIL 0 maps to INTERNAL.
  BytecodeEncoder f;
  f.ConstI32(0, 0);
  f.Fail(0, static_cast<uint16_t>(msg));
  b.AddFunction("always_fail", {}, {}, 1, 1, f);
  std::vector<uint8_t> bytes = b.Finish();

  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = Context::Create(nullptr).value();
  ASSERT_TRUE(ctx->RegisterModule(module.value()).ok());
  Ref<BufferView> x = MakeView(DType::kF32, {2, 3});
  BufferView* args[] = {x.get()};
  Ref<BufferView> result;
  Status s = ctx->Invoke(ctx->LookupFunction("main").value(), args, 1, &result, 1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(result.get(), x.get());
  EXPECT_EQ(ctx->LookupFunction("helper").status().code(), StatusCode::kNotFound);
  Status f2 = ctx->Invoke(ctx->LookupFunction("always_fail").value(), nullptr, 0, nullptr, 0);
  EXPECT_EQ(f2.ToString(), "INTERNAL: always_fail@0x0007 FAIL: bad x");
}

TEST(ModuleTest, FailCarriesCodeAndDebugLocation) {
  ModuleBuilder b("m");
  int msg = b.AddRodata("msg", {'o', 'o', 'p', 's'});
  BytecodeEncoder e;
  e.ConstI32(0, 8);  // kOutOfRange
  uint32_t at = e.offset();
  e.Fail(0, static_cast<uint16_t>(msg));
  b.AddFunction("f", {}, {}, 1, 1, e, true, {{0, "Conv_0"}, {at, "Relu_1"}});
  std::vector<uint8_t> bytes = b.Finish();
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
  auto ctx = Context::Create(nullptr).value();
  ASSERT_TRUE(ctx->RegisterModule(module).ok());
  EXPECT_EQ(ctx->Invoke(ctx->LookupFunction("f").value(), nullptr, 0, nullptr, 0).ToString(),
            "OUT_OF_RANGE: f@0x0007 FAIL [Relu_1]: oops");
  EXPECT_EQ(module->DebugLocation(0, 3), "Conv_0");
}

TEST(ModuleTest, InitializerRunsAtRegistration) {
  ModuleBuilder b("m");
  int msg = b.AddRodata("msg", {'i', 'n', 'i', 't'});
  BytecodeEncoder e;
  e.ConstI32(0, 6);
  e.Fail(0, static_cast<uint16_t>(msg));
  int init = b.AddFunction("__init", {}, {}, 1, 1, e, false);
  b.SetInitializer(init);
  std::vector<uint8_t> bytes = b.Finish();
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
  auto ctx = Context::Create(nullptr).value();
  EXPECT_EQ(ctx->RegisterModule(module).ToString(),
            "FAILED_PRECONDITION: module 'm': initializer: __init@0x0007 FAIL: init");
  EXPECT_EQ(ctx->module_count(), 0u);
}

TEST(ModuleTest, ImportResolution) {
  {
    ModuleBuilder b("m");
    b.AddImport("hal.nope", "_r");
    BytecodeEncoder e;
    e.Ret({});
    b.AddFunction("f", {}, {}, 0, 0, e);
    auto bytes = b.Finish();
    auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
    auto ctx = Context::Create(nullptr).value();
    EXPECT_EQ(ctx->RegisterModule(module).ToString(),
              "NOT_FOUND: module 'm': unknown import 0 'hal.nope' (not a function of the native "
              "hal module)");
  }
  {
    ModuleBuilder b("m");
    b.AddImport("hal.allocator.allocate", "i_r");
    BytecodeEncoder e;
    e.Ret({});
    b.AddFunction("f", {}, {}, 0, 0, e);
    auto bytes = b.Finish();
    auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
    auto ctx = Context::Create(nullptr).value();
    EXPECT_EQ(ctx->RegisterModule(module).ToString(),
              "INVALID_ARGUMENT: module 'm': import 0 'hal.allocator.allocate': signature 'i_r' "
              "does not match the native 'ii_r'");
  }
  {
    // A hal call without a device fails at run time with the location.
    ModuleBuilder b("m");
    int imp = b.AddHalImport("hal.command_buffer.create");
    BytecodeEncoder e;
    e.CallImport(static_cast<uint16_t>(imp), {}, {Reg::Ref(0)});
    e.Ret({});
    b.AddFunction("f", {}, {}, 0, 1, e);
    auto bytes = b.Finish();
    auto module = Module::LoadFromMemory(bytes.data(), bytes.size()).value();
    auto ctx = Context::Create(nullptr).value();
    ASSERT_TRUE(ctx->RegisterModule(module).ok());
    EXPECT_EQ(ctx->Invoke(ctx->LookupFunction("f").value(), nullptr, 0, nullptr, 0).ToString(),
              "FAILED_PRECONDITION: f@0x0000 CALL_IMPORT hal.command_buffer.create: the context "
              "has no device");
  }
}

TEST(ModuleTest, BytecodeVerifierErrorNamesFunction) {
  ModuleBuilder b("m");
  BytecodeEncoder e;
  e.ConstI32(0, 1);
  e.Ret({Reg::Ref(3)});
  b.AddFunction("main", {}, {}, 1, 1, e);
  auto bytes = b.Finish();
  EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
            "DATA_LOSS: module 'm': function 'main': offset 0x0007 (RET): register r3 out of "
            "range (function has 1 ref registers)");
}

TEST(ModuleTest, HeaderChecks) {
  {
    ModuleBuilder b("m");
    b.SetFeatures(0x100);
    auto bytes = b.Finish();
    EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
              "DATA_LOSS: module 'm': unknown feature bits 0x100");
  }
  {
    ModuleBuilder b("m");
    b.SetFeatures(0x1);
    auto bytes = b.Finish();
    EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
              "UNIMPLEMENTED: module 'm': module uses unsupported features 0x1 (async_exports)");
  }
  {
    ModuleBuilder b("m");
    b.SetFeatures(0x2);  // multi_module: supported
    auto bytes = b.Finish();
    EXPECT_TRUE(Module::LoadFromMemory(bytes.data(), bytes.size()).ok());
  }
  {
    ModuleBuilder b("m");
    b.SetVersion(7);
    auto bytes = b.Finish();
    EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
              "DATA_LOSS: module 'm': unsupported module version 7 (this runtime reads version 1)");
  }
  {
    auto bytes = LoopModule();
    bytes[8] = 'X';
    EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
              "DATA_LOSS: not a Kiln module: file identifier 'XILN', expected 'KILN'");
  }
  {
    EXPECT_EQ(Module::LoadFromMemory("abc", 3).status().ToString(),
              "DATA_LOSS: not a Kiln module: 3 bytes is too small");
  }
  {
    ModuleBuilder b("m");
    BytecodeEncoder e;
    e.Ret({});
    b.AddFunction("f", {{"x", DType::kF32, {-1}}}, {}, 0, 1, e);
    auto bytes = b.Finish();
    EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().ToString(),
              "DATA_LOSS: module 'm': function 'f': argument 0 'x': invalid dim -1");
  }
}

TEST(ModuleTest, TruncatedAtEveryLengthIsAnError) {
  auto bytes = LoopModule();
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    auto m = Module::LoadFromMemory(cut.data(), cut.size());
    ASSERT_FALSE(m.ok()) << n;
    EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << n;
  }
  // Trailing garbage breaks the size prefix too.
  bytes.push_back(0);
  EXPECT_EQ(Module::LoadFromMemory(bytes.data(), bytes.size()).status().code(),
            StatusCode::kDataLoss);
}

// KILN_FUZZ_ITERATIONS=N (default 2000) and KILN_FUZZ_SEED run longer
// campaigns locally, e.g. under ASan.
TEST(ModuleTest, RandomBytesAndMutationsNeverCrash) {
  const char* iters_env = std::getenv("KILN_FUZZ_ITERATIONS");
  const char* seed_env = std::getenv("KILN_FUZZ_SEED");
  const int iterations = iters_env ? std::atoi(iters_env) : 2000;
  uint32_t seed = seed_env ? static_cast<uint32_t>(std::atoi(seed_env)) : 42;
  auto next = [&] { seed = seed * 1664525u + 1013904223u; return seed >> 8; };
  for (int c = 0; c < 1000; ++c) {
    std::vector<uint8_t> bytes(next() % 512);
    for (auto& b : bytes) b = static_cast<uint8_t>(next());
    if (bytes.size() >= 12 && (c % 2)) {  // half get a plausible header
      uint32_t n = static_cast<uint32_t>(bytes.size() - 4);
      std::memcpy(bytes.data(), &n, 4);
      std::memcpy(bytes.data() + 8, "KILN", 4);
    }
    EXPECT_FALSE(Module::LoadFromMemory(bytes.data(), bytes.size()).ok());
  }
  // Single-byte mutations of a valid module: must load or fail cleanly, and a
  // module that loads must run or fail cleanly.
  std::vector<std::vector<uint8_t>> corpus = {LoopModule(), FailModule()};
  for (int c = 0; c < iterations; ++c) {
    auto bytes = corpus[c % corpus.size()];
    int flips = 1 + static_cast<int>(next() % 3);
    for (int k = 0; k < flips; ++k) {
      bytes[next() % bytes.size()] ^= static_cast<uint8_t>(1u << (next() % 8));
    }
    auto m = Module::LoadFromMemory(bytes.data(), bytes.size());
    if (!m.ok()) continue;
    auto ctx = Context::Create(nullptr).value();
    if (!ctx->RegisterModule(m.value()).ok()) continue;
    for (uint32_t f = 0; f < m.value()->function_count(); ++f) {
      const auto& imports = m.value()->import_names();
      (void)Disassemble(m.value()->function(f).code, std::vector<std::string>(imports.begin(), imports.end()));
    }
  }
}

TEST(ModuleTest, LoadFromFileAndUnalignedMemory) {
  auto bytes = LoopModule();
  char path[] = "/tmp/kiln_module_test_XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  auto m = Module::LoadFromFile(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(m.value()->is_mapped());
  EXPECT_EQ(m.value()->function(0).name, "main");
  unlink(path);
  EXPECT_EQ(Module::LoadFromFile("/nonexistent/x.kiln").status().code(), StatusCode::kNotFound);

  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::memcpy(shifted.data() + 1, bytes.data(), bytes.size());
  auto u = Module::LoadFromMemory(shifted.data() + 1, bytes.size());
  ASSERT_TRUE(u.ok()) << u.status().ToString();
}

}  // namespace
}  // namespace kiln::vm

namespace kiln::vm {
namespace {

// Function.static_commands is checked on the bytecode at load
// (vm/static_commands.h): a host read of device data, a CALL or a global
// store in a function marked static refuses the module; an allowed body
// loads and is replayable unless another function stores global refs.
std::vector<uint8_t> StaticModule(const char* import, bool call, bool other_stores_global) {
  using testing::ModuleBuilder;
  ModuleBuilder b("s");
  int g = b.AddGlobal("pool");
  BytecodeEncoder h;
  h.MovRef(1, 0);
  h.Ret({Reg::Ref(1)});
  int helper = b.AddFunction("helper", {{"x", DType::kF32, {4}}}, {{"y", DType::kF32, {4}}}, 1, 2, h);
  BytecodeEncoder e;
  e.GlobalLoadRef(1, static_cast<uint16_t>(g));
  if (import) {
    int k = b.AddHalImport(import);
    if (std::string(import) == "hal.buffer.load") {
      e.ConstI32(0, 0);
      e.ConstI32(1, 4);
      e.CallImport(static_cast<uint16_t>(k), {Reg::Ref(1), Reg::I32(0), Reg::I32(1)}, {Reg::I32(2)});
    } else {
      e.CallImport(static_cast<uint16_t>(k), {}, {Reg::Ref(2)});
    }
  }
  if (call) e.Call(static_cast<uint16_t>(helper), {Reg::Ref(0)}, {Reg::Ref(0)});
  e.Ret({Reg::Ref(0)});
  b.AddFunction("main", {{"x", DType::kF32, {4}}}, {{"y", DType::kF32, {4}}}, 3, 3, e);
  if (other_stores_global) {
    BytecodeEncoder s;
    s.GlobalStoreRef(0, static_cast<uint16_t>(g));
    s.Ret({});
    b.AddFunction("store", {{"x", DType::kF32, {4}}}, {}, 1, 1, s);
  }
  b.SetStaticCommands("main");
  return b.Finish();
}

TEST(ModuleTest, StaticCommandsAreCheckedAtLoad) {
  {
    std::vector<uint8_t> bytes = StaticModule("hal.command_buffer.create", false, false);
    auto m = Module::LoadFromMemory(bytes.data(), bytes.size());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_TRUE(m.value()->function(static_cast<uint32_t>(m.value()->FindFunction("main"))).replayable);
    EXPECT_FALSE(m.value()->function(static_cast<uint32_t>(m.value()->FindFunction("helper"))).replayable);
  }
  {
    std::vector<uint8_t> bytes = StaticModule("hal.command_buffer.create", false, true);
    auto m = Module::LoadFromMemory(bytes.data(), bytes.size());
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_FALSE(m.value()->function(static_cast<uint32_t>(m.value()->FindFunction("main"))).replayable)
        << "another function stores a global ref";
  }
  {
    std::vector<uint8_t> bytes = StaticModule("hal.buffer.load", false, false);
    auto m = Module::LoadFromMemory(bytes.data(), bytes.size());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find(
                  "CALL_IMPORT hal.buffer.load is not allowed in a function marked static_commands"),
              std::string::npos)
        << m.status().message();
  }
  {
    std::vector<uint8_t> bytes = StaticModule(nullptr, true, false);
    auto m = Module::LoadFromMemory(bytes.data(), bytes.size());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("CALL is not allowed in a function marked static_commands"),
              std::string::npos)
        << m.status().message();
  }
}

}  // namespace
}  // namespace kiln::vm
