// DispatchTimingDevice on the Vulkan driver (validation + sync validation):
// a dependent two-dispatch chain through the decorator computes the right
// values and yields one positive timing per dispatch, in order, naming the
// executable; a command buffer submitted again without re-recording (replay)
// is timed on every submission; Reset reads the timings it would drop.
#include "hal/profiling/dispatch_timing_device.h"

#include <gtest/gtest.h>

#include <vector>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"

namespace kiln::hal {
namespace {

class DispatchTimingDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto inner = CreateDevice("vulkan", DeviceOptions{});
    ASSERT_TRUE(inner.ok()) << inner.status().ToString();
    if (inner.value()->info().timestamp_valid_bits == 0) {
      auto timing = DispatchTimingDevice::Create(inner.value());
      EXPECT_EQ(timing.status().code(), StatusCode::kUnimplemented);
      GTEST_SKIP() << "no timestamps: " << timing.status().ToString();
    }
    auto timing = DispatchTimingDevice::Create(std::move(inner).value());
    ASSERT_TRUE(timing.ok()) << timing.status().ToString();
    device_ = std::move(timing).value();
  }
  void TearDown() override {
    device_.reset();
    EXPECT_EQ(ValidationMessageCount(), 0u);
  }

  Status Submit(CommandBuffer* cb) {
    KILN_ASSIGN_OR_RETURN(Ref<Semaphore> done, device_->CreateSemaphore(0));
    SemaphorePoint signal{done.get(), 1};
    KILN_RETURN_IF_ERROR(device_->QueueExecute(cb, nullptr, 0, &signal, 1));
    return done->Wait(1, 30ull * 1000 * 1000 * 1000);
  }

  Ref<DispatchTimingDevice> device_;
};

#define ASSERT_OK(expr)                                     \
  do {                                                      \
    ::kiln::Status _s = (expr);                             \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)

TEST_F(DispatchTimingDeviceTest, TimesEveryDispatchOfEverySubmission) {
  constexpr uint32_t kN = 4096;
  EntryPointInfo vadd_entry{"main", 3, 4, {64, 1, 1}};
  EntryPointInfo scale_entry{"main", 2, 8, {64, 1, 1}};
  auto vadd = device_->CreateExecutable(::kVaddSpirv, ::kVaddSpirvWordCount, {vadd_entry});
  auto scale = device_->CreateExecutable(::kScaleSpirv, ::kScaleSpirvWordCount, {scale_entry});
  ASSERT_TRUE(vadd.ok() && scale.ok());
  ASSERT_EQ(device_->created_executables().size(), 2u);
  EXPECT_EQ(device_->created_executables()[0].spirv, ::kVaddSpirv);
  EXPECT_EQ(device_->created_executables()[1].executable, scale.value().get());

  auto a = device_->AllocateBuffer(kN * 4, MemoryKind::kHostVisible);
  auto c = device_->AllocateBuffer(kN * 4, MemoryKind::kHostVisible);
  auto d = device_->AllocateBuffer(kN * 4, MemoryKind::kHostVisible);
  ASSERT_TRUE(a.ok() && c.ok() && d.ok());
  std::vector<float> av(kN);
  for (uint32_t i = 0; i < kN; ++i) av[i] = static_cast<float>(i % 100);
  ASSERT_OK(a.value()->Write(0, av.data(), kN * 4));

  auto cb = device_->CreateCommandBuffer();
  ASSERT_TRUE(cb.ok());
  const uint32_t groups[3] = {kN / 64, 1, 1};
  BufferBinding vb[3] = {{a.value().get(), 0, 0}, {a.value().get(), 0, 0}, {c.value().get(), 0, 0}};
  const uint32_t count = kN;
  ASSERT_OK(cb.value()->Dispatch(vadd.value().get(), 0, groups, &count, 4, vb, 3));
  BufferBarrier barrier{c.value().get(), 0, 0};
  ASSERT_OK(cb.value()->Barrier(&barrier, 1));
  BufferBinding sb[2] = {{c.value().get(), 0, 0}, {d.value().get(), 0, 0}};
  struct { float s; uint32_t n; } push = {0.5f, kN};
  ASSERT_OK(cb.value()->Dispatch(scale.value().get(), 0, groups, &push, sizeof(push), sb, 2));
  ASSERT_OK(cb.value()->End());
  for (int round = 0; round < 3; ++round) ASSERT_OK(Submit(cb.value().get()));  // replayed

  std::vector<float> dv(kN);
  ASSERT_OK(d.value()->Read(0, dv.data(), kN * 4));
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(dv[i], static_cast<float>(i % 100)) << i;  // (x + x) / 2

  std::vector<DispatchTiming> timings;
  ASSERT_OK(device_->Collect(&timings));
  ASSERT_EQ(timings.size(), 6u);  // 2 dispatches x 3 submissions
  for (size_t i = 0; i < timings.size(); ++i) {
    EXPECT_EQ(timings[i].submission, i / 2 + 1) << i;
    EXPECT_EQ(timings[i].index, i % 2) << i;
    EXPECT_EQ(timings[i].executable.get(), i % 2 ? scale.value().get() : vadd.value().get()) << i;
    EXPECT_EQ(timings[i].workgroup_count[0], kN / 64);
    EXPECT_GT(timings[i].ns, 0.0) << i;
  }
  EXPECT_EQ(device_->stats().dispatches, 2u);  // forwarded counters: recorded once

  // Reset after a submission reads its timings first; nothing is lost.
  ASSERT_OK(Submit(cb.value().get()));
  ASSERT_OK(cb.value()->Reset());
  timings.clear();
  ASSERT_OK(device_->Collect(&timings));
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0].submission, 4u);
  timings.clear();
  ASSERT_OK(device_->Collect(&timings));
  EXPECT_TRUE(timings.empty());
}

}  // namespace
}  // namespace kiln::hal
