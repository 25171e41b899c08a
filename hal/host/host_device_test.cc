// The host-memory HAL: buffers, copies and fills really happen on host
// memory; dispatches are checked as the Vulkan HAL checks them; semaphores
// never block; and the VM runs the vadd test module on it end to end (the
// parts that need no shader: fills, copies, subspans, the initializer's
// upload, stats).
#include "hal/host/host_device.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hal/cts/vadd_spirv.h"
#include "vm/context.h"
#include "vm/module.h"
#include "vm/testing/test_modules.h"

namespace kiln::hal::host {
namespace {

class HostDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = CreateHostDevice();
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
  }
  Ref<Buffer> Allocate(uint64_t size) {
    auto buffer = device_->AllocateBuffer(size, MemoryKind::kDeviceLocal);
    EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
    return buffer.ok() ? std::move(buffer).value() : Ref<Buffer>();
  }
  StatusOr<Ref<Executable>> CreateVadd(uint32_t bindings = 3, uint32_t push_bytes = 4) {
    EntryPointInfo entry;
    entry.name = "main";
    entry.binding_count = bindings;
    entry.push_constant_bytes = push_bytes;
    entry.workgroup_size[0] = 64;
    HostVector<EntryPointInfo> entries;
    entries.push_back(entry);
    return device_->CreateExecutable(kVaddSpirv, kVaddSpirvWordCount, entries);
  }
  Status Submit(CommandBuffer* cb, uint64_t value) {
    if (!semaphore_) semaphore_ = device_->CreateSemaphore(0).value();
    SemaphorePoint signal{semaphore_.get(), value};
    return device_->QueueExecute(cb, nullptr, 0, &signal, 1);
  }
  Ref<Device> device_;
  Ref<Semaphore> semaphore_;
};

TEST_F(HostDeviceTest, BuffersAreZeroedHostMemoryWithBoundsChecks) {
  Ref<Buffer> buffer = Allocate(20);
  EXPECT_EQ(buffer->size(), 20u);
  EXPECT_EQ(device_->stats().device_bytes_live, 32u);  // rounded up to 16
  std::vector<uint8_t> bytes(20, 0xff);
  ASSERT_TRUE(buffer->Read(0, bytes.data(), 20).ok());
  EXPECT_EQ(bytes, std::vector<uint8_t>(20, 0));
  uint32_t v = 0x01020304;
  ASSERT_TRUE(buffer->Write(16, &v, 4).ok());
  EXPECT_EQ(buffer->Write(17, &v, 4).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(buffer->Read(UINT64_MAX, &v, 4).code(), StatusCode::kOutOfRange);

  // A subspan sees the parent's bytes at its offset and retains the parent.
  Ref<Buffer> sub = device_->CreateSubspan(buffer.get(), 16, 4).value();
  EXPECT_EQ(sub->allocation(), buffer.get());
  EXPECT_EQ(sub->allocation_offset(), 16u);
  uint32_t read = 0;
  ASSERT_TRUE(sub->Read(0, &read, 4).ok());
  EXPECT_EQ(read, v);
  EXPECT_EQ(device_->CreateSubspan(buffer.get(), 16, 5).status().code(), StatusCode::kOutOfRange);
  buffer.reset();
  ASSERT_TRUE(sub->Read(0, &read, 4).ok());
  sub.reset();
  EXPECT_EQ(device_->stats().device_bytes_live, 0u);

  // Requests above the cap fail cleanly instead of allocating.
  auto huge = device_->AllocateBuffer(uint64_t{1} << 40, MemoryKind::kDeviceLocal);
  EXPECT_EQ(huge.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(HostDeviceTest, CopiesAndFillsRunInRecordedOrder) {
  Ref<Buffer> a = Allocate(16), b = Allocate(16);
  const uint8_t src[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  ASSERT_TRUE(a->Write(0, src, 16).ok());
  Ref<CommandBuffer> cb = device_->CreateCommandBuffer().value();
  ASSERT_TRUE(cb->FillBuffer(b.get(), 0, 16, 0xabababab).ok());
  ASSERT_TRUE(cb->CopyBuffer(a.get(), 4, b.get(), 8, 4).ok());
  ASSERT_TRUE(cb->FillBuffer(b.get(), 12, 4, 0x04030201).ok());
  // Rejected like the Vulkan HAL: out of range, misaligned fill, overlap.
  EXPECT_EQ(cb->CopyBuffer(a.get(), 8, b.get(), 0, 9).code(), StatusCode::kOutOfRange);
  EXPECT_EQ(cb->FillBuffer(b.get(), 2, 4, 0).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cb->CopyBuffer(a.get(), 0, a.get(), 4, 8).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(cb->Retains(a.get()));
  ASSERT_TRUE(cb->End().ok());
  EXPECT_EQ(cb->FillBuffer(b.get(), 0, 4, 0).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Submit(cb.get(), 1).ok());
  EXPECT_TRUE(semaphore_->Wait(1, 0).ok());
  uint8_t out[16];
  ASSERT_TRUE(b->Read(0, out, 16).ok());
  const uint8_t want[16] = {0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab, 0xab,
                            5,    6,    7,    8,    1,    2,    3,    4};
  EXPECT_EQ(std::memcmp(out, want, 16), 0);
  EXPECT_EQ(device_->stats().copies, 1u);
  EXPECT_EQ(device_->stats().fills, 2u);
  ASSERT_TRUE(cb->Reset().ok());
  EXPECT_FALSE(cb->Retains(a.get()));
}

TEST_F(HostDeviceTest, DispatchChecksLikeTheVulkanHal) {
  auto executable = CreateVadd();
  ASSERT_TRUE(executable.ok()) << executable.status().ToString();
  Ref<Buffer> x = Allocate(256), y = Allocate(256), z = Allocate(256);
  Ref<CommandBuffer> cb = device_->CreateCommandBuffer().value();
  uint32_t n = 64;
  BufferBinding bindings[3] = {{x.get(), 0, 0}, {y.get(), 0, 0}, {z.get(), 0, 0}};
  uint32_t groups[3] = {1, 1, 1};
  EXPECT_TRUE(cb->Dispatch(executable.value().get(), 0, groups, &n, 4, bindings, 3).ok());
  EXPECT_EQ(device_->stats().dispatches, 1u);
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 1, groups, &n, 4, bindings, 3).code(),
            StatusCode::kInvalidArgument);  // entry point
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, groups, &n, 4, bindings, 2).code(),
            StatusCode::kInvalidArgument);  // binding count
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, groups, &n, 8, bindings, 3).code(),
            StatusCode::kInvalidArgument);  // push constants
  uint32_t too_many[3] = {65536, 1, 1};
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, too_many, &n, 4, bindings, 3).code(),
            StatusCode::kInvalidArgument);
  uint32_t past_2_32[3] = {65535, 65535, 2};  // 64 invocations each
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, past_2_32, &n, 4, bindings, 3).code(),
            StatusCode::kInvalidArgument);
  BufferBinding out_of_range[3] = {{x.get(), 0, 0}, {y.get(), 128, 256}, {z.get(), 0, 0}};
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, groups, &n, 4, out_of_range, 3).code(),
            StatusCode::kOutOfRange);
  BufferBinding misaligned[3] = {{x.get(), 4, 16}, {y.get(), 0, 0}, {z.get(), 0, 0}};
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, groups, &n, 4, misaligned, 3).code(),
            StatusCode::kInvalidArgument);
  BufferBinding empty[3] = {{x.get(), 256, 0}, {y.get(), 0, 0}, {z.get(), 0, 0}};
  EXPECT_EQ(cb->Dispatch(executable.value().get(), 0, groups, &n, 4, empty, 3).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(device_->stats().dispatches, 1u);
}

TEST_F(HostDeviceTest, CreateExecutableRunsTheSpirvLayoutCheck) {
  // vadd binds 3 buffers: a layout declaring 2 leaves binding 2 undeclared.
  EXPECT_EQ(CreateVadd(/*bindings=*/2).status().code(), StatusCode::kInvalidArgument);
  // Its push-constant block is 4 bytes; 0 declared is too small.
  EXPECT_EQ(CreateVadd(3, /*push_bytes=*/0).status().code(), StatusCode::kInvalidArgument);
  std::vector<uint32_t> garbled(kVaddSpirv, kVaddSpirv + kVaddSpirvWordCount);
  garbled[0] = 0x12345678;  // magic
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 3;
  entry.push_constant_bytes = 4;
  HostVector<EntryPointInfo> entries;
  entries.push_back(entry);
  EXPECT_EQ(device_->CreateExecutable(garbled.data(), garbled.size(), entries).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(CreateVadd().ok());
}

TEST_F(HostDeviceTest, SemaphoresNeverBlock) {
  Ref<Semaphore> s = device_->CreateSemaphore(5).value();
  EXPECT_EQ(s->Query().value(), 5u);
  EXPECT_TRUE(s->Wait(5, UINT64_MAX).ok());
  // Unreached with no pending work: DEADLINE_EXCEEDED at once, even unbounded.
  EXPECT_EQ(s->Wait(6, UINT64_MAX).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(s->Signal(5).code(), StatusCode::kInvalidArgument);  // must advance
  EXPECT_TRUE(s->Signal(7).ok());
  EXPECT_TRUE(s->Wait(6, 0).ok());
  EXPECT_TRUE(s->WaitUnused(0).ok());
}

TEST_F(HostDeviceTest, SubmissionWaitingOnAHostSignalRunsWhenSignalled) {
  Ref<Buffer> b = Allocate(16);
  Ref<Semaphore> gate = device_->CreateSemaphore(0).value();
  Ref<Semaphore> done = device_->CreateSemaphore(0).value();
  Ref<CommandBuffer> cb = device_->CreateCommandBuffer().value();
  ASSERT_TRUE(cb->FillBuffer(b.get(), 0, 16, 0x11111111).ok());
  ASSERT_TRUE(cb->End().ok());
  SemaphorePoint wait{gate.get(), 1}, signal{done.get(), 1};
  ASSERT_TRUE(device_->QueueExecute(cb.get(), &wait, 1, &signal, 1).ok());
  // Queued: nothing ran, waits time out at once, the command buffer is busy.
  uint32_t v = 0;
  ASSERT_TRUE(b->Read(0, &v, 4).ok());
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(done->Wait(1, UINT64_MAX).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(device_->WaitIdle(UINT64_MAX).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(gate->WaitUnused(0).code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(cb->Reset().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(done->Signal(1).code(), StatusCode::kInvalidArgument);  // scheduled by the queue
  EXPECT_EQ(device_->QueueExecute(cb.get(), nullptr, 0, nullptr, 0).code(),
            StatusCode::kFailedPrecondition);
  // A later submission with no waits still runs after it (queue order).
  Ref<CommandBuffer> later = device_->CreateCommandBuffer().value();
  ASSERT_TRUE(later->FillBuffer(b.get(), 0, 4, 0x22222222).ok());
  ASSERT_TRUE(later->End().ok());
  ASSERT_TRUE(device_->QueueExecute(later.get(), nullptr, 0, nullptr, 0).ok());
  ASSERT_TRUE(gate->Signal(1).ok());
  EXPECT_TRUE(done->Wait(1, 0).ok());
  EXPECT_TRUE(device_->WaitIdle(0).ok());
  ASSERT_TRUE(b->Read(0, &v, 4).ok());
  EXPECT_EQ(v, 0x22222222u);
  ASSERT_TRUE(b->Read(4, &v, 4).ok());
  EXPECT_EQ(v, 0x11111111u);
  EXPECT_TRUE(cb->Reset().ok());
}

// The VM on the host device: the vadd test module loads (its SPIR-V passes
// the layout check), its initializer uploads, and main's fill + copy and
// subspan give the bytes the Vulkan HAL gives (vm/hal_module_vulkan_test.cc);
// c = a + b + bias is a shader's work, which the host device does not run.
TEST_F(HostDeviceTest, VmRunsTheVaddModule) {
  std::vector<uint8_t> bytes = vm::testing::BuildVaddModule(kVaddSpirv, kVaddSpirvWordCount);
  auto module = vm::Module::LoadFromMemory(bytes.data(), bytes.size());
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto ctx = vm::Context::Create(device_);
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  Status reg = ctx.value()->RegisterModule(module.value());
  ASSERT_TRUE(reg.ok()) << reg.ToString();
  const int n = vm::testing::kVaddCount;
  std::vector<float> a(n), b(n);
  for (int i = 0; i < n; ++i) a[i] = static_cast<float>(i), b[i] = 1000.0f + i;
  auto tensor = [&](const std::vector<float>& values) {
    Ref<Buffer> buffer = Allocate(values.size() * 4);
    EXPECT_TRUE(buffer->Write(0, values.data(), values.size() * 4).ok());
    int64_t dims[] = {static_cast<int64_t>(values.size())};
    return vm::BufferView::Create(buffer, 0, DType::kF32, dims, 1).value();
  };
  Ref<vm::BufferView> ta = tensor(a), tb = tensor(b);
  vm::BufferView* args[] = {ta.get(), tb.get()};
  Ref<vm::BufferView> results[3];
  vm::FunctionRef fn = ctx.value()->LookupFunction("main").value();
  Stats before = device_->stats();
  Status s = ctx.value()->Invoke(fn, args, 2, results, 3);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(device_->stats().dispatches - before.dispatches, 2u);
  EXPECT_EQ(device_->stats().copies - before.copies, 1u);
  std::vector<float> d(n);
  ASSERT_TRUE(results[1]->buffer()->Read(results[1]->byte_offset(), d.data(), n * 4).ok());
  for (int i = 0; i < n; ++i) EXPECT_EQ(d[i], i < n / 2 ? a[i] : 1.0f) << i;
  EXPECT_EQ(results[2]->TypeString(), "tensor<8xf32>");
  for (auto& r : results) r.reset();
  EXPECT_TRUE(ctx.value()->Invoke(ctx.value()->LookupFunction("i32_only").value(), nullptr, 0,
                                  nullptr, 0)
                  .ok());
}

}  // namespace
}  // namespace kiln::hal::host
