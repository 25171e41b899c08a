#include "vm/testing/test_modules.h"

#include <cstring>

#include "vm/isa.h"
#include "vm/testing/module_builder.h"

namespace kiln::vm::testing {

std::vector<uint8_t> BuildVaddModule(const uint32_t* vadd_spirv, size_t word_count,
                                     bool async_end) {
  ModuleBuilder b("vadd_test");
  auto imp = [&](const char* name) { return static_cast<uint16_t>(b.AddHalImport(name)); };
  const uint16_t kAlloc = imp("hal.allocator.allocate");
  const uint16_t kAllocInit = imp("hal.allocator.allocate_initialized");
  const uint16_t kCbCreate = imp("hal.command_buffer.create");
  const uint16_t kExeLookup = imp("hal.executable.lookup");
  const uint16_t kPush = imp("hal.command_buffer.push_constants");
  const uint16_t kDispatch = imp("hal.command_buffer.dispatch");
  const uint16_t kBarrier = imp("hal.command_buffer.barrier");
  const uint16_t kFill = imp("hal.command_buffer.fill");
  const uint16_t kCopy = imp("hal.command_buffer.copy");
  const uint16_t kExec = imp(async_end ? "hal.command_buffer.execute"
                                       : "hal.command_buffer.execute_and_wait");
  const uint16_t kViewCreate = imp("hal.buffer_view.create");
  const uint16_t kViewBuffer = imp("hal.buffer_view.buffer");
  const uint16_t kViewOffset = imp("hal.buffer_view.offset");
  const uint16_t kSubspan = imp("hal.buffer.subspan");

  std::vector<uint8_t> bias(kVaddCount * 4);
  for (int i = 0; i < kVaddCount; ++i) {
    float v = static_cast<float>(i) + 0.5f;
    std::memcpy(bias.data() + 4 * i, &v, 4);
  }
  const uint16_t kBiasSegment = static_cast<uint16_t>(b.AddRodata("bias", bias));
  const char kMsg[] = "i32 arithmetic is broken";
  const uint16_t kMsgSegment = static_cast<uint16_t>(
      b.AddRodata("msg", std::vector<uint8_t>(kMsg, kMsg + sizeof(kMsg) - 1)));
  const uint16_t kBiasGlobal = static_cast<uint16_t>(b.AddGlobal("bias"));

  EntryPointDesc ep;
  ep.name = "main";
  ep.debug_name = "dispatch_0_vadd";
  ep.bindings = {{0, 0, true}, {0, 1, true}, {0, 2, false}};
  ep.push_constant_bytes = 4;
  ep.workgroup_size = {64, 1, 1};
  b.AddExecutable(std::vector<uint32_t>(vadd_spirv, vadd_spirv + word_count), {ep},
                  {"Add_0"});

  using R = Reg;
  // __init: upload the bias constant into a device-local global.
  {
    BytecodeEncoder e;
    e.Rodata(0, kBiasSegment);
    e.CallImport(kAllocInit, {R::Ref(0)}, {R::Ref(1)});
    e.GlobalStoreRef(1, kBiasGlobal);
    e.Ret({});
    int init = b.AddFunction("__init", {}, {}, 0, 2, e, /*exported=*/false);
    b.SetInitializer(init);
  }
  // main
  {
    BytecodeEncoder e;
    std::vector<std::pair<uint32_t, std::string>> debug;
    const int32_t bytes = kVaddCount * 4;
    e.ConstI32(0, bytes);
    e.ConstI32(1, 0);
    e.ConstI32(2, 1);
    e.ConstI32(3, kVaddCount);
    e.ConstI32(4, (kVaddCount + 63) / 64);
    e.ConstI32(5, bytes / 2);
    e.ConstI32(6, 0x3f800000);  // 1.0f
    e.ConstI32(7, 16);
    e.ConstI32(8, 32);
    e.ConstI32(9, 8);
    e.CallImport(kAlloc, {R::I32(0), R::I32(1)}, {R::Ref(2)});  // temp, device local
    e.CallImport(kAlloc, {R::I32(0), R::I32(2)}, {R::Ref(3)});  // c, host visible
    e.CallImport(kAlloc, {R::I32(0), R::I32(2)}, {R::Ref(7)});  // d, host visible
    e.CallImport(kCbCreate, {}, {R::Ref(4)});
    e.CallImport(kExeLookup, {R::I32(1)}, {R::Ref(5)});
    e.GlobalLoadRef(6, kBiasGlobal);
    debug.push_back({e.offset(), "Add_0"});
    e.CallImport(kPush, {R::Ref(4), R::I32(3)}, {});
    e.CallImport(kDispatch,
                 {R::Ref(4), R::Ref(5), R::I32(1), R::I32(4), R::I32(2), R::I32(2),  //
                  R::Ref(0), R::I32(1), R::I32(1),                                   // a
                  R::Ref(1), R::I32(1), R::I32(1),                                   // b
                  R::Ref(2), R::I32(1), R::I32(0)},                                  // temp
                 {});
    e.CallImport(kBarrier, {R::Ref(4), R::Ref(2), R::I32(1), R::I32(0)}, {});
    debug.push_back({e.offset(), "Add_1"});
    e.CallImport(kPush, {R::Ref(4), R::I32(3)}, {});
    e.CallImport(kDispatch,
                 {R::Ref(4), R::Ref(5), R::I32(1), R::I32(4), R::I32(2), R::I32(2),  //
                  R::Ref(2), R::I32(1), R::I32(0),                                   // temp
                  R::Ref(6), R::I32(1), R::I32(1),                                   // bias
                  R::Ref(3), R::I32(1), R::I32(0)},                                  // c
                 {});
    debug.push_back({e.offset(), "Fill_2"});
    e.CallImport(kFill, {R::Ref(4), R::Ref(7), R::I32(1), R::I32(0), R::I32(6)}, {});
    e.CallImport(kBarrier, {R::Ref(4), R::Ref(7), R::I32(1), R::I32(0)}, {});
    e.CallImport(kViewBuffer, {R::Ref(0)}, {R::Ref(12)});
    e.CallImport(kViewOffset, {R::Ref(0)}, {R::I32(10)});
    e.CallImport(kCopy, {R::Ref(4), R::Ref(12), R::I32(10), R::Ref(7), R::I32(1), R::I32(5)},
                 {});
    e.CallImport(kBarrier, {R::Ref(4)}, {});
    if (async_end) {
      e.CallImport(kExec, {R::Ref(4), R::I32(2)}, {});  // i2 = 1: final
    } else {
      e.CallImport(kExec, {R::Ref(4)}, {});
    }
    e.CallImport(kViewCreate, {R::Ref(3), R::I32(1), R::I32(2), R::I32(2), R::I32(3)},
                 {R::Ref(8)});
    e.CallImport(kViewCreate, {R::Ref(7), R::I32(1), R::I32(2), R::I32(2), R::I32(3)},
                 {R::Ref(9)});
    e.CallImport(kSubspan, {R::Ref(3), R::I32(7), R::I32(8)}, {R::Ref(10)});
    e.CallImport(kViewCreate, {R::Ref(10), R::I32(1), R::I32(2), R::I32(2), R::I32(9)},
                 {R::Ref(11)});
    e.Ret({R::Ref(8), R::Ref(9), R::Ref(11)});
    TensorDesc t{"", DType::kF32, {kVaddCount}};
    TensorDesc a = t, bb = t, c = t, d = t;
    a.name = "a";
    bb.name = "b";
    c.name = "c";
    d.name = "d";
    TensorDesc small{"e", DType::kF32, {8}};
    b.AddFunction("main", {a, bb}, {c, d, small}, 11, 13, e, true, debug);
  }
  // i32_only: (7 * 6 - 2 == 40) else FAIL.
  {
    BytecodeEncoder e;
    Label ok = e.NewLabel(), bad = e.NewLabel();
    e.ConstI32(0, 7);
    e.ConstI32(1, 6);
    e.ConstI32(2, 2);
    e.ConstI32(3, 40);
    e.MulI32(4, 0, 1);
    e.SubI32(4, 4, 2);
    e.CmpEqI32(5, 4, 3);
    e.CondBr(5, ok, bad);
    e.Bind(bad);
    e.ConstI32(6, 7);
    e.Fail(6, kMsgSegment);
    e.Bind(ok);
    e.Ret({});
    b.AddFunction("i32_only", {}, {}, 7, 0, e);
  }
  return b.Finish();
}

}  // namespace kiln::vm::testing
