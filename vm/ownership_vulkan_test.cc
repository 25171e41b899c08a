// Buffer ownership in the VM on the Vulkan driver (vm/context.h): aliased
// results free exactly once, consume/adoption (take_or_allocate,
// take_or_clone), output storage, allocate_cached, multi-module linking and
// calls, and exact steady-state counts. Frees are proven with
// Stats::device_bytes_live; double frees and leaks by the sanitizer build.
#include <gtest/gtest.h>

#include <cstring>

#include "hal/cts/scale_spirv.h"
#include "hal/cts/vadd_spirv.h"
#include "hal/driver.h"
#include "vm/context.h"
#include "vm/testing/module_builder.h"
#include "vm/testing/ownership_modules.h"

namespace kiln::vm {
namespace {

constexpr int kN = 64;
constexpr uint64_t kBytes = kN * 4;

testing::TestShaders Shaders() {
  return testing::TestShaders{kVaddSpirv, kVaddSpirvWordCount, kScaleSpirv, kScaleSpirvWordCount};
}

class OwnershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto device = hal::CreateDevice("vulkan", hal::DeviceOptions());
    ASSERT_TRUE(device.ok()) << device.status().ToString();
    device_ = std::move(device).value();
    ctx_ = Context::Create(device_).value();
  }
  void TearDown() override {
    ctx_.reset();
    modules_.clear();
    // Everything the context allocated (caches, globals, results) is gone.
    EXPECT_EQ(device_->stats().device_bytes_live, 0u);
    device_.reset();
    EXPECT_EQ(hal::ValidationMessageCount(), 0u);
  }
  void Register(const std::vector<uint8_t>& bytes) {
    bytes_.push_back(bytes);
    auto module = Module::LoadFromMemory(bytes_.back().data(), bytes_.back().size());
    ASSERT_TRUE(module.ok()) << module.status().ToString();
    Status s = ctx_->RegisterModule(module.value());
    ASSERT_TRUE(s.ok()) << s.ToString();
    modules_.push_back(module.value());
  }
  FunctionRef Fn(const char* name) {
    auto f = ctx_->LookupFunction(name);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return f.ok() ? f.value() : FunctionRef{};
  }
  Ref<BufferView> Tensor(float fill, int n = kN, DType dtype = DType::kF32) {
    std::vector<float> v(static_cast<size_t>(n), fill);
    auto buffer = device_->AllocateBuffer(v.size() * 4, hal::MemoryKind::kHostVisible);
    EXPECT_TRUE(buffer.ok());
    EXPECT_TRUE(buffer.value()->Write(0, v.data(), v.size() * 4).ok());
    int64_t dims[] = {n};
    return BufferView::Create(std::move(buffer).value(), 0, dtype, dims, 1).value();
  }
  Ref<BufferView> Iota(float base) {
    Ref<BufferView> t = Tensor(0);
    std::vector<float> v(kN);
    for (int i = 0; i < kN; ++i) v[i] = base + static_cast<float>(i);
    EXPECT_TRUE(t->buffer()->Write(t->byte_offset(), v.data(), kBytes).ok());
    return t;
  }
  std::vector<float> Read(const BufferView* view) {
    std::vector<float> out(view->element_count());
    Status s = view->buffer()->Read(view->byte_offset(), out.data(), out.size() * 4);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }
  uint64_t Live() const { return device_->stats().device_bytes_live; }
  uint64_t Allocs() const { return device_->stats().device_allocations; }
  uint64_t Copies() const { return device_->stats().copies; }
  uint64_t HostAllocs() const { return device_->stats().host_allocations_invoke; }

  Ref<hal::Device> device_;
  Ref<Context> ctx_;
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<Ref<Module>> modules_;
};

// --- 1. aliased results ------------------------------------------------------

TEST_F(OwnershipTest, AliasedResultsFreeExactlyOnce) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  struct Case {
    const char* fn;
    uint64_t allocations, bytes;  // what one invocation allocates
    bool aliased;                 // both results hold one allocation
    float a, b;
  } cases[] = {{"same_twice", 1, kBytes, true, 1, 1},
               {"two_subviews", 1, 2 * kBytes, true, 1, 2},
               {"subspans", 1, 2 * kBytes, true, 1, 2},
               {"distinct", 2, 2 * kBytes, false, 1, 2}};
  for (const Case& c : cases) {
    for (int order = 0; order < 2; ++order) {
      SCOPED_TRACE(std::string(c.fn) + (order ? " release b first" : " release a first"));
      uint64_t live0 = Live(), allocs0 = Allocs();
      Ref<BufferView> r[2];
      Status s = ctx_->Invoke(Fn(c.fn), nullptr, 0, r, 2);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(Allocs() - allocs0, c.allocations);
      EXPECT_EQ(Live() - live0, c.bytes);
      EXPECT_EQ(r[0]->root() == r[1]->root(), c.aliased);
      if (std::string(c.fn) == "same_twice") {
        EXPECT_EQ(r[0].get(), r[1].get());
      }
      EXPECT_EQ(Read(r[0].get())[kN - 1], c.a);
      EXPECT_EQ(Read(r[1].get())[0], c.b);
      EXPECT_FALSE(r[0]->Overlaps(*r[1]) && std::string(c.fn) != "same_twice");
      r[order].reset();
      // An aliased allocation stays alive through the other result.
      EXPECT_EQ(Live() - live0, c.aliased ? c.bytes : kBytes);
      EXPECT_EQ(Read(r[1 - order].get())[1], order ? c.a : c.b);
      r[1 - order].reset();
      EXPECT_EQ(Live(), live0);
    }
  }
  // The argument returned twice: no allocation, the caller's view itself.
  Ref<BufferView> x = Tensor(5);
  Ref<BufferView> r[2];
  uint64_t allocs0 = Allocs();
  BufferView* args[] = {x.get()};
  ASSERT_TRUE(ctx_->Invoke(Fn("passthrough"), args, 1, r, 2).ok());
  EXPECT_EQ(Allocs(), allocs0);
  EXPECT_EQ(r[0].get(), x.get());
  EXPECT_EQ(r[1].get(), x.get());
  EXPECT_EQ(x->refcount(), 3);
}

// --- 2. consume ----------------------------------------------------------------

TEST_F(OwnershipTest, ConsumedExclusiveArgumentIsAdoptedInPlace) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> x = Tensor(1);
  hal::Buffer* storage = x->buffer();
  EXPECT_TRUE(ctx_->IsExclusive(x.get()));
  uint64_t allocs0 = Allocs(), live0 = Live();
  InvokeArg arg{x.release(), true};  // hand over the only reference
  Ref<BufferView> y;
  Status s = ctx_->InvokeEx(Fn("steal"), &arg, 1, &y, 1);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Allocs(), allocs0);  // no allocation: x's storage became y
  EXPECT_EQ(Live(), live0);
  EXPECT_EQ(y->buffer(), storage);
  EXPECT_EQ(Read(y.get())[7], 3.0f);
  EXPECT_EQ(y->refcount(), 1);
  EXPECT_EQ(storage->refcount(), 1);  // only y holds it: it can round-trip
  EXPECT_TRUE(ctx_->IsExclusive(y.get()));

  // Round trip: y back in as a consumed argument, again no allocation.
  hal::Buffer* storage2 = y->buffer();
  InvokeArg again{y.release(), true};
  Ref<BufferView> z;
  ASSERT_TRUE(ctx_->InvokeEx(Fn("steal"), &again, 1, &z, 1).ok());
  EXPECT_EQ(Allocs(), allocs0);
  EXPECT_EQ(z->buffer(), storage2);
  z.reset();
  EXPECT_EQ(Live(), live0 - kBytes);  // freed exactly once, by the last holder
}

TEST_F(OwnershipTest, ConsumedSharedOrBorrowedArgumentIsNotWritten) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> x = Tensor(1);
  // Borrowed: the callee allocates; x keeps its bytes.
  uint64_t allocs0 = Allocs();
  BufferView* borrowed[] = {x.get()};
  Ref<BufferView> y;
  ASSERT_TRUE(ctx_->Invoke(Fn("steal"), borrowed, 1, &y, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 1u);
  EXPECT_NE(y->root(), x->root());
  EXPECT_EQ(Read(x.get())[0], 1.0f);
  EXPECT_EQ(Read(y.get())[0], 3.0f);
  y.reset();
  // Consumed while the test keeps another reference: shared, so not taken.
  x->Retain();
  InvokeArg arg{x.get(), true};
  ASSERT_TRUE(ctx_->InvokeEx(Fn("steal"), &arg, 1, &y, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 2u);
  EXPECT_EQ(Read(x.get())[0], 1.0f);
  EXPECT_EQ(x->refcount(), 1);  // the consumed reference was released
  // Another view of the same buffer also makes it shared.
  Ref<BufferView> alias = BufferView::CreateSubview(*x, 0, DType::kF32, x->dims(), 1).value();
  x->Retain();
  InvokeArg arg2{x.get(), true};
  ASSERT_TRUE(ctx_->InvokeEx(Fn("steal"), &arg2, 1, &y, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 3u);
  EXPECT_EQ(Read(alias.get())[0], 1.0f);
}

TEST_F(OwnershipTest, TakeOrCloneCopiesOnlyWhenShared) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> x = Iota(0);
  // Shared (borrowed): one counted copy into a new buffer, x untouched.
  uint64_t copies0 = Copies(), allocs0 = Allocs();
  BufferView* args[] = {x.get()};
  Ref<BufferView> y;
  ASSERT_TRUE(ctx_->Invoke(Fn("patch"), args, 1, &y, 1).ok());
  EXPECT_EQ(Copies() - copies0, 1u);
  EXPECT_EQ(Allocs() - allocs0, 1u);
  std::vector<float> yv = Read(y.get()), xv = Read(x.get());
  EXPECT_EQ(yv[3], 7.0f);
  EXPECT_EQ(yv[4], 4.0f);
  EXPECT_EQ(xv[3], 3.0f);
  y.reset();
  // Owned: updated in place, no copy, no allocation.
  hal::Buffer* storage = x->buffer();
  InvokeArg arg{x.release(), true};
  ASSERT_TRUE(ctx_->InvokeEx(Fn("patch"), &arg, 1, &y, 1).ok());
  EXPECT_EQ(Copies() - copies0, 1u);
  EXPECT_EQ(Allocs() - allocs0, 1u);
  EXPECT_EQ(y->buffer(), storage);
  yv = Read(y.get());
  EXPECT_EQ(yv[0], 7.0f);
  EXPECT_EQ(yv[63], 63.0f);
}

// --- 3. output storage ---------------------------------------------------------

TEST_F(OwnershipTest, OutputStorageIsWrittenInPlace) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> x = Iota(1);
  // A batch buffer [4, N]; storage = row 3 through a chain c -> b -> a.
  Ref<BufferView> a = Tensor(-1, 4 * kN);
  int64_t rows2[] = {2, kN}, row[] = {kN};
  Ref<BufferView> b = BufferView::CreateSubview(*a, 2 * kBytes, DType::kF32, rows2, 2).value();
  Ref<BufferView> c = BufferView::CreateSubview(*b, kBytes, DType::kF32, row, 1).value();
  EXPECT_EQ(c->buffer(), a->buffer());  // resolved to the root storage
  EXPECT_EQ(c->byte_offset(), 3 * kBytes);
  uint64_t copies0 = Copies(), allocs0 = Allocs();
  BufferView* storage[] = {c.get()};
  Ref<BufferView> y;
  InvokeArg arg{x.get(), false};
  Status s = ctx_->InvokeEx(Fn("write_output"), &arg, 1, &y, 1, storage);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(y.get(), c.get());  // the caller's view is the result
  EXPECT_EQ(Copies(), copies0);
  EXPECT_EQ(Allocs(), allocs0);
  std::vector<float> batch = Read(a.get());
  EXPECT_EQ(batch[3 * kN + 5], 12.0f);  // (1 + 5) * 2
  EXPECT_EQ(batch[2 * kN + 5], -1.0f);  // other rows untouched
  EXPECT_EQ(batch[kN - 1], -1.0f);

  // A program that ignores the storage: the runtime copies (counted).
  s = ctx_->InvokeEx(Fn("ignore_output"), &arg, 1, &y, 1, storage);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(y.get(), c.get());
  EXPECT_EQ(Copies() - copies0, 1u);
  EXPECT_EQ(Read(c.get())[2], 6.0f);

  // Storage of another shape with enough bytes: a typed view of it.
  int64_t two[] = {2, kN / 2};
  Ref<BufferView> shaped = BufferView::CreateSubview(*a, 0, DType::kF32, two, 2).value();
  BufferView* storage2[] = {shaped.get()};
  ASSERT_TRUE(ctx_->InvokeEx(Fn("write_output"), &arg, 1, &y, 1, storage2).ok());
  EXPECT_NE(y.get(), shaped.get());
  EXPECT_TRUE(y->SameStorageAndType(*y));
  EXPECT_EQ(y->root(), a->root());
  EXPECT_EQ(y->root_offset(), 0u);
  EXPECT_EQ(y->TypeString(), "tensor<64xf32>");
  EXPECT_EQ(Read(a.get())[1], 4.0f);
}

TEST_F(OwnershipTest, OutputStorageValidation) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> a = Tensor(0, 4 * kN);
  int64_t row[] = {kN}, half[] = {kN / 2};
  Ref<BufferView> row1 = BufferView::CreateSubview(*a, kBytes, DType::kF32, row, 1).value();
  Ref<BufferView> row1b = BufferView::CreateSubview(*a, kBytes + 8, DType::kF32, row, 1).value();
  Ref<BufferView> small = BufferView::CreateSubview(*a, 0, DType::kF32, half, 1).value();
  Ref<BufferView> ints = BufferView::CreateSubview(*a, 0, DType::kI32, row, 1).value();
  Ref<BufferView> y;
  auto run = [&](const char* fn, BufferView* x, BufferView* st) {
    InvokeArg arg{x, false};
    BufferView* storage[] = {st};
    return ctx_->InvokeEx(Fn(fn), &arg, 1, &y, 1, storage).ToString();
  };
  EXPECT_EQ(run("write_output", row1.get(), row1b.get()),
            "FAILED_PRECONDITION: argument 0 'x' overlaps the output storage of result 0 'y' "
            "(bytes [256, 512) and [264, 520) of one allocation)");
  EXPECT_EQ(run("write_output", row1.get(), small.get()),
            "INVALID_ARGUMENT: output storage for result 0 'y': tensor<32xf32> (128 bytes) is "
            "smaller than tensor<64xf32> (256 bytes)");
  EXPECT_EQ(run("write_output", row1.get(), ints.get()),
            "INVALID_ARGUMENT: output storage for result 0 'y': tensor<64xi32> has dtype i32, "
            "the result is tensor<64xf32>");
  EXPECT_FALSE(y);
  // Two results with overlapping storage.
  Ref<BufferView> r[2];
  BufferView* both[] = {row1.get(), row1b.get()};
  EXPECT_EQ(ctx_->InvokeEx(Fn("distinct"), nullptr, 0, r, 2, both).ToString(),
            "FAILED_PRECONDITION: the output storage of result 1 'b' overlaps the output storage "
            "of result 0 'a'");
  // A consumed argument is released even when validation fails.
  Ref<BufferView> x = Tensor(1);
  x->Retain();
  InvokeArg consumed{x.get(), true};
  BufferView* storage[] = {small.get()};
  EXPECT_FALSE(ctx_->InvokeEx(Fn("write_output"), &consumed, 1, &y, 1, storage).ok());
  EXPECT_EQ(x->refcount(), 1);
}

// --- allocate_cached -------------------------------------------------------------

TEST_F(OwnershipTest, AllocateCachedIsNeverReusedWhileHeld) {
  Register(testing::BuildOwnershipModule(Shaders(), kN));
  Ref<BufferView> x = Iota(0);
  BufferView* args[] = {x.get()};
  Ref<BufferView> y1, y2, y3, y4;
  uint64_t allocs0 = Allocs();
  ASSERT_TRUE(ctx_->Invoke(Fn("cached"), args, 1, &y1, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 1u);
  // y1 still held by the app: the slot's second buffer, y1 keeps its values.
  ASSERT_TRUE(ctx_->Invoke(Fn("cached"), args, 1, &y2, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 2u);
  EXPECT_NE(y1->root(), y2->root());
  EXPECT_EQ(ctx_->cached_buffer_count(), 2u);
  // Both held: a third buffer replaces one of them in the slot; neither
  // held result changes.
  ASSERT_TRUE(ctx_->Invoke(Fn("cached"), args, 1, &y3, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 3u);
  EXPECT_NE(y3->root(), y1->root());
  EXPECT_NE(y3->root(), y2->root());
  EXPECT_EQ(ctx_->cached_buffer_count(), 2u);
  EXPECT_EQ(Read(y1.get())[9], 18.0f);
  EXPECT_EQ(Read(y2.get())[9], 18.0f);
  // Released: the next call reuses a buffer of the slot (no allocation),
  // and one still held by the app (y3) is never handed out.
  y1.reset();
  y2.reset();
  ASSERT_TRUE(ctx_->Invoke(Fn("cached"), args, 1, &y4, 1).ok());
  EXPECT_EQ(Allocs() - allocs0, 3u);  // reused
  EXPECT_NE(y4->root(), y3->root());
  EXPECT_EQ(Read(y4.get())[9], 18.0f);
}

// --- 5. streaming state loop: exact steady-state counts ----------------------

TEST_F(OwnershipTest, StreamingStateLoopAllocatesNothingInSteadyState) {
  Register(testing::BuildStreamModule(Shaders(), kN));
  FunctionRef step = Fn("step");
  Ref<BufferView> x = Iota(0);
  Ref<BufferView> state = Tensor(0);
  std::vector<float> expect_state(kN, 0.0f);
  for (int iter = 0; iter < 6; ++iter) {
    hal::Stats before = device_->stats();
    InvokeArg args[] = {{x.get(), false}, {state.release(), true}};
    Ref<BufferView> r[2];
    Status s = ctx_->InvokeEx(step, args, 2, r, 2);
    ASSERT_TRUE(s.ok()) << s.ToString();
    const hal::Stats& after = device_->stats();
    std::vector<float> y = Read(r[0].get()), next = Read(r[1].get());
    for (int i = 0; i < kN; ++i) {
      float tmp = static_cast<float>(i) + expect_state[i];
      ASSERT_EQ(y[i], tmp + static_cast<float>(i)) << iter << " " << i;
      expect_state[i] = tmp * 0.5f;
      ASSERT_EQ(next[i], expect_state[i]) << iter << " " << i;
    }
    EXPECT_EQ(after.dispatches - before.dispatches, 3u);
    EXPECT_EQ(after.submissions - before.submissions, 1u);
    EXPECT_EQ(after.barriers - before.barriers, 2u);
    EXPECT_EQ(after.copies - before.copies, 0u);
    if (iter == 0) {
      // The state tensor was adopted; the arena and y are allocated once.
      EXPECT_EQ(after.device_allocations - before.device_allocations, 2u);
    } else {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 0u) << iter;
      EXPECT_EQ(after.host_allocations_invoke - before.host_allocations_invoke, 0u) << iter;
    }
    state = std::move(r[1]);  // fed back, consumed next time
  }
}

// --- 4. multi-module -------------------------------------------------------------

TEST_F(OwnershipTest, MultiModulePipelinePassesViewsWithoutCopies) {
  for (const auto& bytes : testing::BuildPipelineModules(Shaders(), kN)) Register(bytes);
  EXPECT_EQ(ctx_->module_count(), 4u);
  FunctionRef main = Fn("driver.main");
  EXPECT_EQ(main.module, 3u);
  EXPECT_EQ(Fn("mel.main").module, 0u);
  Ref<BufferView> x = Iota(1);
  Ref<BufferView> s = Iota(100);
  std::vector<float> sv(kN);
  for (int i = 0; i < kN; ++i) sv[i] = 100.0f + static_cast<float>(i);
  for (int iter = 0; iter < 5; ++iter) {
    hal::Stats before = device_->stats();
    InvokeArg args[] = {{x.get(), false}, {s.release(), true}};
    Ref<BufferView> r[3];
    Status st = ctx_->InvokeEx(main, args, 2, r, 3);
    ASSERT_TRUE(st.ok()) << st.ToString();
    const hal::Stats& after = device_->stats();
    std::vector<float> h = Read(r[0].get()), e = Read(r[1].get()), s2 = Read(r[2].get());
    for (int i = 0; i < kN; ++i) {
      testing::PipelineExpected want =
          testing::PipelineReference(1.0f + static_cast<float>(i), sv[i], i);
      ASSERT_EQ(h[i], want.h) << iter << " " << i;
      ASSERT_EQ(e[i], want.e) << iter << " " << i;
      ASSERT_EQ(s2[i], want.s2) << iter << " " << i;
      sv[i] = want.s2;
    }
    EXPECT_EQ(after.copies - before.copies, 0u);
    EXPECT_EQ(after.transfers - before.transfers, 0u);
    EXPECT_EQ(after.dispatches - before.dispatches, 4u);
    EXPECT_EQ(after.submissions - before.submissions, 3u);
    if (iter == 0) {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 2u);  // mel m, head h
    } else {
      EXPECT_EQ(after.device_allocations - before.device_allocations, 0u) << iter;
      EXPECT_EQ(after.host_allocations_invoke - before.host_allocations_invoke, 0u) << iter;
    }
    s = std::move(r[2]);
  }
}

TEST_F(OwnershipTest, MultiModuleLinkErrors) {
  auto modules = testing::BuildPipelineModules(Shaders(), kN);
  auto load = [&](const std::vector<uint8_t>& bytes) {
    bytes_.push_back(bytes);
    return Module::LoadFromMemory(bytes_.back().data(), bytes_.back().size()).value();
  };
  // The driver before the modules it imports.
  EXPECT_EQ(ctx_->RegisterModule(load(modules[3])).ToString(),
            "NOT_FOUND: module 'driver': unknown import 0 'mel.main': neither a function of the "
            "native hal module nor an export of a module registered before it (registered: none)");
  Register(modules[0]);
  auto importer = [&](const std::string& name, const std::string& sig) {
    testing::ModuleBuilder b("bad");
    b.AddImport(name, sig);
    BytecodeEncoder e;
    e.Ret({});
    b.AddFunction("f", {}, {}, 0, 1, e);
    return ctx_->RegisterModule(load(b.Finish())).ToString();
  };
  EXPECT_EQ(importer("mel.main", "r_r:64xf32->32xf32"),
            "FAILED_PRECONDITION: module 'bad': import 0 'mel.main' expects (tensor<64xf32>) -> "
            "(tensor<32xf32>), module 'mel' exports main(x: tensor<64xf32>) -> (m: "
            "tensor<64xf32>)");
  EXPECT_EQ(importer("mel.main", "rr_r"),
            "FAILED_PRECONDITION: module 'bad': import 0 'mel.main' expects 2 argument(s) and 1 "
            "result(s) (signature 'rr_r'), module 'mel' exports main(x: tensor<64xf32>) -> (m: "
            "tensor<64xf32>)");
  EXPECT_EQ(importer("mel.main", "ri_r"),
            "FAILED_PRECONDITION: module 'bad': import 0 'mel.main' expects 2 argument(s) and 1 "
            "result(s) (signature 'ri_r'), module 'mel' exports main(x: tensor<64xf32>) -> (m: "
            "tensor<64xf32>) (imports of bytecode functions take and return only tensors: ref "
            "registers, no repeated group)");
  EXPECT_EQ(importer("mel.nope", "r_r"),
            "NOT_FOUND: module 'bad': import 0 'mel.nope': module 'mel' exports no function "
            "'nope' (exports: main)");
  EXPECT_EQ(importer("emb.main", "r_r"),
            "NOT_FOUND: module 'bad': unknown import 0 'emb.main': neither a function of the "
            "native hal module nor an export of a module registered before it (registered: "
            "'mel')");
  // Untyped but matching counts links.
  EXPECT_EQ(importer("mel.main", "r_r"), "OK");
}

TEST_F(OwnershipTest, MultiModuleRuntimeTypeErrorsAreAnnotated) {
  for (const auto& bytes : testing::BuildPipelineModules(Shaders(), kN)) Register(bytes);
  // An untyped import handed a wrong-shaped view fails at the call.
  testing::ModuleBuilder b("caller");
  uint16_t mel = static_cast<uint16_t>(b.AddImport("mel.main", "r_r"));
  BytecodeEncoder e;
  e.CallImport(mel, {Reg::Ref(0)}, {Reg::Ref(1)});
  e.Ret({Reg::Ref(1)});
  b.AddFunction("f", {{"x", DType::kF32, {8}}}, {{"y", DType::kF32, {64}}}, 0, 2, e);
  Register(b.Finish());
  Ref<BufferView> x = Tensor(1, 8);
  BufferView* args[] = {x.get()};
  Ref<BufferView> y;
  EXPECT_EQ(ctx_->Invoke(Fn("caller.f"), args, 1, &y, 1).ToString(),
            "INVALID_ARGUMENT: f@0x0000 CALL_IMPORT mel.main: argument 0 'x' of 'mel.main': "
            "expected tensor<64xf32>, got tensor<8xf32>");
}

}  // namespace
}  // namespace kiln::vm
