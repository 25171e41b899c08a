// Context limits from the C API (kiln_context_create_with_options): a step
// budget bounds a program that never returns (in an invocation and in an
// initializer), and a device-memory budget bounds a program that allocates
// without end. Each limit gives RESOURCE_EXHAUSTED, leaves the context
// usable, and leaks nothing (the device's live bytes come back).
#include "kiln/kiln.h"
#include "runtime/kiln_status_test_util.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hal/driver.h"
#include "vm/isa.h"
#include "vm/testing/module_builder.h"

namespace {

using kiln::vm::BytecodeEncoder;
using kiln::vm::Label;
using kiln::vm::Reg;
using kiln_test::Str;

// Module "hostile":
//   spin()            loops forever (BR to itself)
//   hoard(n: i32 in a constant) allocates 64 KiB device buffers 16 times,
//                     keeping each in its own register (1 MiB live)
//   ok()              returns at once
// `spin_in_init`: the initializer is spin's loop.
std::vector<uint8_t> HostileModule(bool spin_in_init) {
  kiln::vm::testing::ModuleBuilder b("hostile");
  const uint16_t kAlloc = static_cast<uint16_t>(b.AddHalImport("hal.allocator.allocate"));
  auto spin = [] {
    BytecodeEncoder e;
    Label top = e.NewLabel();
    e.Bind(top);
    e.Br(top);
    return e;
  };
  if (spin_in_init) {
    BytecodeEncoder e = spin();
    b.SetInitializer(b.AddFunction("__init", {}, {}, 0, 1, e, /*exported=*/false));
  }
  {
    BytecodeEncoder e = spin();
    b.AddFunction("spin", {}, {}, 0, 1, e, true);
  }
  {
    BytecodeEncoder e;
    e.ConstI32(0, 64 << 10);
    e.ConstI32(1, 0);  // device local
    for (uint16_t r = 0; r < 16; ++r) e.CallImport(kAlloc, {Reg::I32(0), Reg::I32(1)}, {Reg::Ref(r)});
    e.Ret({});
    b.AddFunction("hoard", {}, {}, 2, 16, e, true);
  }
  {
    BytecodeEncoder e;
    e.Ret({});
    b.AddFunction("ok", {}, {}, 0, 1, e, true);
  }
  return b.Finish();
}

class LimitsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(Str(kiln_instance_create(&instance_)), "OK");
    ASSERT_EQ(Str(kiln_device_create(instance_, "vulkan", nullptr, -1, &device_)), "OK");
  }
  void TearDown() override {
    if (context_) kiln_context_release(context_);
    if (module_) kiln_module_release(module_);
    kiln_device_release(device_);
    kiln_instance_release(instance_);
    EXPECT_EQ(kiln::hal::ValidationMessageCount(), 0u);
  }
  std::string Create(bool spin_in_init, const kiln_context_options_t* options) {
    bytes_ = HostileModule(spin_in_init);
    EXPECT_EQ(Str(kiln_module_load_from_memory(instance_, bytes_.data(), bytes_.size(), &module_)), "OK");
    return Str(kiln_context_create_with_options(device_, &module_, 1, options, &context_));
  }
  std::string Invoke(const char* name) {
    kiln_function_t fn = nullptr;
    EXPECT_EQ(Str(kiln_context_lookup_function(context_, name, &fn)), "OK");
    return Str(kiln_invoke(context_, fn, nullptr, 0, nullptr, 0));
  }
  uint64_t LiveBytes() {
    kiln_device_stats_t stats = {};
    stats.struct_size = sizeof(stats);
    EXPECT_EQ(Str(kiln_device_stats(device_, &stats)), "OK");
    return stats.device_bytes_live;
  }

  std::vector<uint8_t> bytes_;
  kiln_instance_t instance_ = nullptr;
  kiln_device_t device_ = nullptr;
  kiln_module_t module_ = nullptr;
  kiln_context_t context_ = nullptr;
};

TEST_F(LimitsTest, StepBudgetEndsALoopThatNeverReturns) {
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options);
  options.step_budget = 100000;
  ASSERT_EQ(Create(false, &options), "OK");
  for (int round = 0; round < 2; ++round) {  // the context stays usable
    std::string s = Invoke("spin");
    EXPECT_NE(s.find("RESOURCE_EXHAUSTED"), std::string::npos) << s;
    EXPECT_NE(s.find("step budget of 100000 branches and calls exhausted"), std::string::npos) << s;
    EXPECT_EQ(Invoke("ok"), "OK");
  }
}

TEST_F(LimitsTest, StepBudgetEndsAnInitializerThatNeverReturns) {
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options);
  options.step_budget = 1000;
  std::string s = Create(true, &options);
  EXPECT_NE(s.find("RESOURCE_EXHAUSTED"), std::string::npos) << s;
  EXPECT_NE(s.find("initializer"), std::string::npos) << s;
  EXPECT_EQ(context_, nullptr);
}

TEST_F(LimitsTest, DeviceMemoryBudgetStopsAnAllocatingProgram) {
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options);
  options.device_memory_budget = 512 << 10;  // 8 of hoard's 16 buffers
  ASSERT_EQ(Create(false, &options), "OK");
  uint64_t before = LiveBytes();
  for (int round = 0; round < 2; ++round) {
    std::string s = Invoke("hoard");
    EXPECT_NE(s.find("RESOURCE_EXHAUSTED"), std::string::npos) << s;
    EXPECT_NE(s.find("device memory budget of 524288 bytes exceeded"), std::string::npos) << s;
    EXPECT_EQ(LiveBytes(), before) << "the failed invocation's buffers were freed";
    EXPECT_EQ(Invoke("ok"), "OK");
  }
  // Without a budget the same program runs and frees its 1 MiB.
  kiln_context_release(context_);
  context_ = nullptr;
  ASSERT_EQ(Str(kiln_context_create_with_options(device_, &module_, 1, nullptr, &context_)), "OK");
  EXPECT_EQ(Invoke("hoard"), "OK");
  EXPECT_EQ(LiveBytes(), before);
}

// A caller compiled against the header before wait_timeout_ns was appended
// passes the shorter struct: accepted, and its limits hold.
TEST_F(LimitsTest, OptionsFromBeforeTheWaitTimeoutAreAccepted) {
  kiln_context_options_t options = {};
  options.struct_size = offsetof(kiln_context_options_t, wait_timeout_ns);
  options.step_budget = 100000;
  options.wait_timeout_ns = 1;  // beyond the caller's struct: never read
  EXPECT_EQ(Create(false, &options), "OK");
  EXPECT_EQ(Invoke("spin").rfind("RESOURCE_EXHAUSTED", 0), 0u);
}

// The budget counts the context's own allocations, not the device's: 1 MiB
// the app holds on the device does not stop a context with a 512 KiB budget
// from allocating 8 of hoard's 64 KiB buffers, and a second context on the
// same device has a budget of its own.
TEST_F(LimitsTest, DeviceMemoryBudgetIsPerContext) {
  int64_t dims[] = {256 << 10};  // f32: 1 MiB
  kiln_tensor_t app_memory = nullptr;
  ASSERT_EQ(Str(kiln_tensor_create(device_, KILN_DTYPE_F32, 1, dims, nullptr, 0, &app_memory)), "OK");
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options);
  options.device_memory_budget = 512 << 10;
  ASSERT_EQ(Create(false, &options), "OK");
  kiln_context_t second = nullptr;
  ASSERT_EQ(Str(kiln_context_create_with_options(device_, &module_, 1, &options, &second)), "OK");
  const std::string want =
      "device memory budget of 524288 bytes exceeded: 524288 live, 65536 more requested";
  std::string s = Invoke("hoard");
  EXPECT_NE(s.find(want), std::string::npos) << s;
  kiln_function_t fn = nullptr;
  ASSERT_EQ(Str(kiln_context_lookup_function(second, "hoard", &fn)), "OK");
  s = Str(kiln_invoke(second, fn, nullptr, 0, nullptr, 0));
  EXPECT_NE(s.find(want), std::string::npos) << s;
  kiln_context_release(second);
  kiln_tensor_release(app_memory);
}

TEST_F(LimitsTest, UnknownOptionsSizeIsRefused) {
  kiln_context_options_t options = {};
  options.struct_size = sizeof(options) + 8;
  std::string s = Create(false, &options);
  EXPECT_NE(s.find("INVALID_ARGUMENT"), std::string::npos) << s;
  EXPECT_NE(s.find("struct_size"), std::string::npos) << s;
}

}  // namespace
