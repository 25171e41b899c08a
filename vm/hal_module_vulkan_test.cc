// The native hal module on the Vulkan driver: a module whose bytecode
// allocates, fills, copies, dispatches the CTS vadd shader, barriers,
// executes and returns buffer views (vm/testing/test_modules.h).
#include <gtest/gtest.h>

#include <cstring>

#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "vm/context.h"
#include "vm/hal_module.h"
#include "vm/testing/module_builder.h"
#include "vm/testing/test_modules.h"

namespace kiln::vm {
namespace {

using testing::kVaddCount;

class HalModuleVulkanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = hal::CreateDevice("vulkan", hal::DeviceOptions());
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
  }
  void TearDown() override {
    device_.reset();
    EXPECT_EQ(hal::ValidationMessageCount(), 0u);
  }

  Ref<BufferView> Tensor(const std::vector<float>& values) {
    auto buffer = device_->AllocateBuffer(values.size() * 4, hal::MemoryKind::kHostVisible);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE(buffer.value()->Write(0, values.data(), values.size() * 4).ok());
    int64_t dims[] = {static_cast<int64_t>(values.size())};
    return BufferView::Create(std::move(buffer).value(), 0, DType::kF32, dims, 1).value();
  }
  std::vector<float> Read(BufferView* view) {
    std::vector<float> out(view->element_count());
    Status s = view->buffer()->Read(view->byte_offset(), out.data(), out.size() * 4);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  Ref<hal::Device> device_;
};

TEST_F(HalModuleVulkanTest, VaddModuleEndToEnd) {
  std::vector<uint8_t> bytes = testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = Context::Create(device_);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  Status reg = ctx.value()->RegisterModule(module.value());
  ASSERT_TRUE(reg.ok()) << reg.ToString();
  EXPECT_EQ(device_->stats().transfers, 1u);  // the initializer's bias upload

  std::vector<float> a(kVaddCount), b(kVaddCount);
  for (int i = 0; i < kVaddCount; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1000.0f + i;
  }
  Ref<BufferView> ta = Tensor(a), tb = Tensor(b);
  BufferView* args[] = {ta.get(), tb.get()};
  Ref<BufferView> results[3];
  FunctionRef fn = ctx.value()->LookupFunction("main").value();
  hal::Stats before = device_->stats();
  Status s = ctx.value()->Invoke(fn, args, 2, results, 3);
  ASSERT_TRUE(s.ok()) << s.ToString();
  const hal::Stats& after = device_->stats();
  EXPECT_EQ(after.dispatches - before.dispatches, 2u);
  EXPECT_EQ(after.fills - before.fills, 1u);
  EXPECT_EQ(after.copies - before.copies, 1u);
  EXPECT_EQ(after.copy_bytes - before.copy_bytes, kVaddCount * 2u);
  EXPECT_EQ(after.barriers - before.barriers, 3u);
  EXPECT_EQ(after.submissions - before.submissions, 1u);
  EXPECT_EQ(after.device_allocations - before.device_allocations, 3u);
  EXPECT_GT(after.host_allocations_invoke, before.host_allocations_invoke);

  std::vector<float> c = Read(results[0].get());
  std::vector<float> d = Read(results[1].get());
  std::vector<float> e = Read(results[2].get());
  for (int i = 0; i < kVaddCount; ++i) {
    EXPECT_EQ(c[i], a[i] + b[i] + (i + 0.5f)) << i;
    EXPECT_EQ(d[i], i < kVaddCount / 2 ? a[i] : 1.0f) << i;
  }
  for (int i = 0; i < 8; ++i) EXPECT_EQ(e[i], c[4 + i]) << i;
  EXPECT_EQ(results[2]->TypeString(), "tensor<8xf32>");

  // Steady state: the same number of host allocations on every later invoke
  // (register banks are reused; the program's own allocations remain).
  uint64_t h1 = device_->stats().host_allocations_invoke;
  ASSERT_TRUE(ctx.value()->Invoke(fn, args, 2, results, 3).ok());
  uint64_t h2 = device_->stats().host_allocations_invoke;
  ASSERT_TRUE(ctx.value()->Invoke(fn, args, 2, results, 3).ok());
  uint64_t h3 = device_->stats().host_allocations_invoke;
  EXPECT_EQ(h3 - h2, h2 - h1);

  // Pure i32 function in the same module.
  FunctionRef i32_only = ctx.value()->LookupFunction("i32_only").value();
  EXPECT_TRUE(ctx.value()->Invoke(i32_only, nullptr, 0, nullptr, 0).ok());
}

// Errors from natives carry the function, offset, import and location.
TEST_F(HalModuleVulkanTest, NativeErrorsAreAnnotated) {
  testing::ModuleBuilder b("errs");
  uint16_t alloc = static_cast<uint16_t>(b.AddHalImport("hal.allocator.allocate"));
  uint16_t cb_create = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.create"));
  uint16_t copy = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.copy"));
  uint16_t exec = static_cast<uint16_t>(b.AddHalImport("hal.command_buffer.execute_and_wait"));
  uint16_t view = static_cast<uint16_t>(b.AddHalImport("hal.buffer_view.create"));
  {
    BytecodeEncoder e;
    e.ConstI32(0, -4);
    e.ConstI32(1, 0);
    e.CallImport(alloc, {Reg::I32(0), Reg::I32(1)}, {Reg::Ref(0)});
    e.Ret({});
    b.AddFunction("negative_alloc", {}, {}, 2, 1, e, true, {{14, "Alloc_7"}});
  }
  {
    BytecodeEncoder e;
    e.ConstI32(0, 64);
    e.ConstI32(1, 0);
    e.ConstI32(2, 60);
    e.ConstI32(3, 8);
    e.CallImport(alloc, {Reg::I32(0), Reg::I32(1)}, {Reg::Ref(0)});
    e.CallImport(cb_create, {}, {Reg::Ref(1)});
    e.CallImport(copy, {Reg::Ref(1), Reg::Ref(0), Reg::I32(1), Reg::Ref(0), Reg::I32(2),
                        Reg::I32(3)},
                 {});
    e.Ret({});
    b.AddFunction("copy_out_of_range", {}, {}, 4, 2, e);
  }
  {
    BytecodeEncoder e;
    e.CallImport(cb_create, {}, {Reg::Ref(0)});
    e.CallImport(exec, {Reg::Ref(0)}, {});
    e.CallImport(exec, {Reg::Ref(0)}, {});
    e.Ret({});
    b.AddFunction("double_submit", {}, {}, 0, 1, e);
  }
  {
    // View of a command buffer: wrong ref type.
    BytecodeEncoder e;
    e.ConstI32(0, 0);
    e.ConstI32(1, 1);
    e.CallImport(cb_create, {}, {Reg::Ref(0)});
    e.CallImport(view, {Reg::Ref(0), Reg::I32(0), Reg::I32(1), Reg::I32(0)}, {Reg::Ref(1)});
    e.Ret({});
    b.AddFunction("bad_view", {}, {}, 2, 2, e);
  }
  auto bytes = b.Finish();
  auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = Context::Create(device_).value();
  ASSERT_TRUE(ctx->RegisterModule(module.value()).ok());
  auto run = [&](const char* name) {
    return ctx->Invoke(ctx->LookupFunction(name).value(), nullptr, 0, nullptr, 0).ToString();
  };
  EXPECT_EQ(run("negative_alloc"),
            "INVALID_ARGUMENT: negative_alloc@0x000e CALL_IMPORT hal.allocator.allocate "
            "[Alloc_7]: negative allocation size -4");
  EXPECT_EQ(run("copy_out_of_range"),
            "OUT_OF_RANGE: copy_out_of_range@0x0032 CALL_IMPORT hal.command_buffer.copy: copy "
            "target: range [60, 68) exceeds the buffer's 64 bytes");
  EXPECT_EQ(run("double_submit"),
            "FAILED_PRECONDITION: double_submit@0x0012 CALL_IMPORT "
            "hal.command_buffer.execute_and_wait: command buffer was already submitted");
  EXPECT_EQ(run("bad_view"),
            "INVALID_ARGUMENT: bad_view@0x0017 CALL_IMPORT hal.buffer_view.create: buffer: "
            "expected a buffer or buffer view, got command_buffer");
}

// A module may read what the caller lends it, never write it: a dispatch
// that binds a borrowed argument at a binding its entry point does not
// declare read-only is refused at bind time (the bytecode cannot be trusted
// to say so), the argument keeps its bytes, and the context stays usable.
TEST_F(HalModuleVulkanTest, BorrowedArgumentBoundWritableIsRefused) {
  for (bool write_borrowed : {true, false}) {
    testing::ModuleBuilder b("borrow_test");
    auto imp = [&](const char* name) { return static_cast<uint16_t>(b.AddHalImport(name)); };
    const uint16_t kAlloc = imp("hal.allocator.allocate");
    const uint16_t kCbCreate = imp("hal.command_buffer.create");
    const uint16_t kExeLookup = imp("hal.executable.lookup");
    const uint16_t kPush = imp("hal.command_buffer.push_constants");
    const uint16_t kDispatch = imp("hal.command_buffer.dispatch");
    const uint16_t kExec = imp("hal.command_buffer.execute_and_wait");
    testing::EntryPointDesc ep;
    ep.name = "main";
    ep.debug_name = "dispatch_0_vadd";
    ep.bindings = {{0, 0, true}, {0, 1, true}, {0, 2, false}};
    ep.push_constant_bytes = 4;
    ep.workgroup_size = {64, 1, 1};
    b.AddExecutable(std::vector<uint32_t>(kVaddSpirv, kVaddSpirv + kVaddSpirvWordCount), {ep}, {"Add_0"});
    using R = Reg;
    BytecodeEncoder e;
    e.ConstI32(0, kVaddCount * 4);
    e.ConstI32(1, 0);
    e.ConstI32(2, kVaddCount);
    e.ConstI32(3, (kVaddCount + 63) / 64);
    e.ConstI32(4, 1);
    e.CallImport(kAlloc, {R::I32(0), R::I32(4)}, {R::Ref(1)});  // a fresh, writable buffer
    e.CallImport(kCbCreate, {}, {R::Ref(2)});
    e.CallImport(kExeLookup, {R::I32(1)}, {R::Ref(3)});
    e.CallImport(kPush, {R::Ref(2), R::I32(2)}, {});
    // c = a + a, written into `a` itself (borrowed) or into the fresh buffer.
    e.CallImport(kDispatch, {R::Ref(2), R::Ref(3), R::I32(1), R::I32(3), R::I32(4), R::I32(4),
                             R::Ref(0), R::I32(1), R::I32(1), R::Ref(0), R::I32(1), R::I32(1),
                             R::Ref(write_borrowed ? 0 : 1), R::I32(1), R::I32(1)},
                 {});
    e.CallImport(kExec, {R::Ref(2)}, {});
    e.Ret({});
    b.AddFunction("main", {{"a", DType::kF32, {kVaddCount}}}, {}, 5, 4, e, true);
    std::vector<uint8_t> bytes = b.Finish();
    auto module = Module::LoadFromMemory(bytes.data(), bytes.size());
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    auto ctx = Context::Create(device_);
    ASSERT_TRUE(ctx.ok());
    ASSERT_TRUE(ctx.value()->RegisterModule(module.value()).ok());
    std::vector<float> a(kVaddCount, 1.5f);
    Ref<BufferView> ta = Tensor(a);
    BufferView* args[] = {ta.get()};
    FunctionRef fn = ctx.value()->LookupFunction("main").value();
    for (int round = 0; round < 2; ++round) {  // the context stays usable
      Status s = ctx.value()->Invoke(fn, args, 1, nullptr, 0);
      if (write_borrowed) {
        EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
        EXPECT_NE(s.ToString().find("binding 2 is writable but holds a borrowed argument"), std::string::npos)
            << s.ToString();
      } else {
        EXPECT_TRUE(s.ok()) << s.ToString();
      }
      EXPECT_EQ(Read(ta.get()), a);  // the caller's bytes are untouched
    }
  }
}

}  // namespace
}  // namespace kiln::vm
