// CTS: compute dispatches of real shaders (shaders/vadd.comp, scale.comp,
// texels.comp: a uniform texel buffer binding),
// a dependent two-dispatch chain with a ranged barrier, binding rules and
// executable creation errors.
#include "hal/cts/cts_test_base.h"

namespace kiln::hal::cts {
namespace {

class DispatchTest : public CtsTest {};

uint32_t Groups(uint32_t n) { return (n + 63) / 64; }

TEST_P(DispatchTest, VaddComputesEveryElement) {
  constexpr uint32_t kN = 1000;  // not a multiple of the workgroup size (64)
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> vadd, CreateVadd());
  ASSERT_EQ(vadd->entry_point_count(), 1u);
  EXPECT_EQ(vadd->entry_point(0).binding_count, 3u);
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> a, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> b, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  // c has one extra element the shader must not touch (i < count guard).
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> c, device()->AllocateBuffer((kN + 4) * 4, MemoryKind::kHostVisible));
  std::vector<float> av(kN), bv(kN), sentinel(kN + 4, -1.0f);
  for (uint32_t i = 0; i < kN; ++i) {
    av[i] = static_cast<float>(i);
    bv[i] = static_cast<float>(2 * i + 1);
  }
  KILN_ASSERT_OK(WriteFloats(a.get(), 0, av));
  KILN_ASSERT_OK(WriteFloats(b.get(), 0, bv));
  KILN_ASSERT_OK(WriteFloats(c.get(), 0, sentinel));

  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  BufferBinding bindings[3] = {{a.get(), 0, 0}, {b.get(), 0, 0}, {c.get(), 0, kN * 4}};
  const uint32_t groups[3] = {Groups(kN), 1, 1};
  const uint32_t count = kN;
  KILN_ASSERT_OK(cb->Dispatch(vadd.get(), 0, groups, &count, 4, bindings, 3));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));

  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> cv, ReadFloats(c.get(), 0, kN + 4));
  for (uint32_t i = 0; i < kN; ++i) {
    ASSERT_EQ(cv[i], static_cast<float>(3 * i + 1)) << "element " << i;  // i + (2i + 1)
  }
  for (uint32_t i = kN; i < kN + 4; ++i) EXPECT_EQ(cv[i], -1.0f) << "element " << i;
  EXPECT_EQ(device()->stats().dispatches, 1u);
  EXPECT_EQ(device()->stats().barriers, 0u);
}

TEST_P(DispatchTest, ScaleUsesPushConstants) {
  constexpr uint32_t kN = 130;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> src, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  std::vector<float> in(kN);
  for (uint32_t i = 0; i < kN; ++i) in[i] = static_cast<float>(4 * i) - 100.0f;
  KILN_ASSERT_OK(WriteFloats(src.get(), 0, in));
  struct { float scale; uint32_t count; } push = {0.25f, kN};
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  BufferBinding bindings[2] = {{src.get(), 0, 0}, {dst.get(), 0, 0}};
  const uint32_t groups[3] = {Groups(kN), 1, 1};
  KILN_ASSERT_OK(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), bindings, 2));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> out, ReadFloats(dst.get(), 0, kN));
  for (uint32_t i = 0; i < kN; ++i) {
    ASSERT_EQ(out[i], static_cast<float>(i) - 25.0f) << "element " << i;  // (4i - 100) / 4
  }
}

TEST_P(DispatchTest, DependentChainWithRangedBarrier) {
  // Layout of one 16 KiB host-visible arena (offsets are 256-aligned, which
  // satisfies every minStorageBufferOffsetAlignment Vulkan allows):
  //   a: [0, 4000)   b: [4096, 8096)   c: [8192, 12192)   d: [12288, 16288)
  // vadd: c = a + b; barrier on exactly c's range; scale: d = c * 3.
  constexpr uint32_t kN = 1000;
  constexpr uint64_t kBytes = kN * 4;
  constexpr uint64_t kA = 0, kB = 4096, kC = 8192, kD = 12288;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> vadd, CreateVadd());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> arena, device()->AllocateBuffer(16384, MemoryKind::kHostVisible));
  std::vector<float> av(kN), bv(kN), zeros(kN, 0.0f);
  for (uint32_t i = 0; i < kN; ++i) {
    av[i] = static_cast<float>(i % 97);
    bv[i] = static_cast<float>(1000 - i);
  }
  KILN_ASSERT_OK(WriteFloats(arena.get(), kA, av));
  KILN_ASSERT_OK(WriteFloats(arena.get(), kB, bv));
  KILN_ASSERT_OK(WriteFloats(arena.get(), kC, zeros));
  KILN_ASSERT_OK(WriteFloats(arena.get(), kD, zeros));
  // d is bound through a subspan to exercise allocation offsets.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> d, device()->CreateSubspan(arena.get(), kD, kBytes));

  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  const uint32_t groups[3] = {Groups(kN), 1, 1};
  BufferBinding vadd_bindings[3] = {
      {arena.get(), kA, kBytes}, {arena.get(), kB, kBytes}, {arena.get(), kC, kBytes}};
  const uint32_t count = kN;
  KILN_ASSERT_OK(cb->Dispatch(vadd.get(), 0, groups, &count, 4, vadd_bindings, 3));
  BufferBarrier barrier{arena.get(), kC, kBytes};
  KILN_ASSERT_OK(cb->Barrier(&barrier, 1));
  BufferBinding scale_bindings[2] = {{arena.get(), kC, kBytes}, {d.get(), 0, 0}};
  struct { float scale; uint32_t count; } push = {3.0f, kN};
  KILN_ASSERT_OK(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), scale_bindings, 2));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));

  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> cv, ReadFloats(arena.get(), kC, kN));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> dv, ReadFloats(d.get(), 0, kN));
  for (uint32_t i = 0; i < kN; ++i) {
    const float sum = static_cast<float>(i % 97 + 1000 - i);
    ASSERT_EQ(cv[i], sum) << "c[" << i << "]";
    ASSERT_EQ(dv[i], sum * 3.0f) << "d[" << i << "]";
  }
  const Stats& stats = device()->stats();
  EXPECT_EQ(stats.dispatches, 2u);
  EXPECT_EQ(stats.barriers, 1u);
  EXPECT_EQ(stats.submissions, 1u);
  EXPECT_EQ(stats.device_allocations, 1u);
}

TEST_P(DispatchTest, ResubmitSeesNewInputs) {
  constexpr uint32_t kN = 64;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> src, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(kN * 4, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  BufferBinding bindings[2] = {{src.get(), 0, 0}, {dst.get(), 0, 0}};
  const uint32_t groups[3] = {1, 1, 1};
  struct { float scale; uint32_t count; } push = {2.0f, kN};
  KILN_ASSERT_OK(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), bindings, 2));
  KILN_ASSERT_OK(cb->End());
  for (int round = 1; round <= 3; ++round) {
    std::vector<float> in(kN, static_cast<float>(round * 10));
    KILN_ASSERT_OK(WriteFloats(src.get(), 0, in));
    KILN_ASSERT_OK(SubmitAndWait(cb.get()));
    KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> out, ReadFloats(dst.get(), 0, kN));
    for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(out[i], round * 20.0f) << "round " << round;
  }
  EXPECT_EQ(device()->stats().dispatches, 1u);
  EXPECT_EQ(device()->stats().submissions, 3u);
}

TEST_P(DispatchTest, CommandBufferRetainsExecutable) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> src, device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(256, MemoryKind::kHostVisible));
  KILN_ASSERT_OK(WriteFloats(src.get(), 0, std::vector<float>(64, 1.5f)));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  {
    KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
    BufferBinding bindings[2] = {{src.get(), 0, 0}, {dst.get(), 0, 0}};
    const uint32_t groups[3] = {1, 1, 1};
    struct { float scale; uint32_t count; } push = {-2.0f, 64};
    KILN_ASSERT_OK(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), bindings, 2));
  }  // our executable reference is gone
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> out, ReadFloats(dst.get(), 0, 64));
  for (float v : out) ASSERT_EQ(v, -3.0f);
}

TEST_P(DispatchTest, MisalignedBindingOffsetIsInvalidArgument) {
  const uint32_t alignment = device()->info().min_storage_buffer_offset_alignment;
  if (alignment <= 4) GTEST_SKIP() << "minStorageBufferOffsetAlignment is " << alignment;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(1024, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  const uint32_t groups[3] = {1, 1, 1};
  struct { float scale; uint32_t count; } push = {1.0f, 4};
  // Direct misaligned offset.
  BufferBinding direct[2] = {{buffer.get(), 4, 64}, {buffer.get(), 512, 64}};
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), direct, 2),
                   kInvalidArgument);
  // Offset 0 of a subspan that starts at a misaligned allocation offset.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> view, device()->CreateSubspan(buffer.get(), 4, 128));
  BufferBinding through_view[2] = {{buffer.get(), 256, 64}, {view.get(), 0, 64}};
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), through_view, 2),
                   kInvalidArgument);
  EXPECT_EQ(device()->stats().dispatches, 0u);
  // Aligned offsets pass.
  BufferBinding aligned[2] = {{buffer.get(), alignment, 64}, {buffer.get(), 512, 64}};
  KILN_EXPECT_OK(cb->Dispatch(scale.get(), 0, groups, &push, sizeof(push), aligned, 2));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
}

// A uniform texel buffer binding (BindingKind::kUniformTexelBuffer): the
// shader reads 16-byte texels of the bound range, not of the buffer's start;
// a second dispatch binding the same range reuses the view.
TEST_P(DispatchTest, TexelBufferBindingReadsTexelsOfItsRange) {
  constexpr uint32_t kN = 100;  // texels; not a multiple of the workgroup size
  constexpr uint64_t kSrc = 256, kBytes = kN * 16;
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> texels, CreateTexels());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> arena, device()->AllocateBuffer(4096, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> dst, device()->AllocateBuffer(2 * kN * 4, MemoryKind::kHostVisible));
  std::vector<float> before(kSrc / 4, -7.0f), src(kN * 4);
  for (uint32_t i = 0; i < kN; ++i) {
    src[4 * i] = static_cast<float>(i % 7);
    src[4 * i + 1] = 1.0f;
    src[4 * i + 2] = 2.0f;
    src[4 * i + 3] = static_cast<float>(i % 5);
  }
  KILN_ASSERT_OK(WriteFloats(arena.get(), 0, before));
  KILN_ASSERT_OK(WriteFloats(arena.get(), kSrc, src));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  const uint32_t groups[3] = {Groups(kN), 1, 1};
  const uint32_t count = kN;
  for (uint64_t half = 0; half < 2; ++half) {
    BufferBinding bindings[2] = {{arena.get(), kSrc, kBytes}, {dst.get(), half * kN * 4, kN * 4}};
    KILN_ASSERT_OK(cb->Dispatch(texels.get(), 0, groups, &count, 4, bindings, 2));
  }
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
  KILN_ASSERT_OK_AND_ASSIGN(std::vector<float> out, ReadFloats(dst.get(), 0, 2 * kN));
  for (uint32_t i = 0; i < 2 * kN; ++i) {
    const uint32_t t = i % kN;
    ASSERT_EQ(out[i], static_cast<float>(t % 7 + 10 + 200 + 1000 * (t % 5))) << "element " << i;
  }
}

TEST_P(DispatchTest, TexelBindingRulesAreInvalidArgument) {
  // Creation: the declared kinds must match the SPIR-V and be known; a
  // texel binding is read-only.
  KILN_EXPECT_CODE(CreateTexels({BindingKind::kStorageBuffer, BindingKind::kStorageBuffer}).status(),
                   kInvalidArgument);
  KILN_EXPECT_CODE(CreateTexels({BindingKind::kUniformTexelBuffer, BindingKind::kUniformTexelBuffer})
                       .status(),
                   kInvalidArgument);
  KILN_EXPECT_CODE(CreateTexels({static_cast<BindingKind>(7), BindingKind::kStorageBuffer}).status(),
                   kInvalidArgument);
  {
    EntryPointInfo entry;
    entry.name = "main";
    entry.binding_count = 2;
    entry.push_constant_bytes = 8;
    entry.workgroup_size[0] = 64;
    entry.binding_kinds = {BindingKind::kUniformTexelBuffer};  // scale.comp's binding 0 is a buffer
    KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {entry}).status(),
                     kInvalidArgument);
  }
  // Dispatch: the range must be whole texels at an aligned offset.
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> texels, CreateTexels());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(4096, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  const uint32_t groups[3] = {1, 1, 1};
  const uint32_t count = 4;
  BufferBinding partial_texel[2] = {{buffer.get(), 0, 20}, {buffer.get(), 2048, 16}};
  KILN_EXPECT_CODE(cb->Dispatch(texels.get(), 0, groups, &count, 4, partial_texel, 2), kInvalidArgument);
  const uint32_t alignment = device()->info().min_texel_buffer_offset_alignment;
  if (alignment > 4) {
    BufferBinding misaligned[2] = {{buffer.get(), 4, 64}, {buffer.get(), 2048, 16}};
    KILN_EXPECT_CODE(cb->Dispatch(texels.get(), 0, groups, &count, 4, misaligned, 2), kInvalidArgument);
  }
  EXPECT_EQ(device()->stats().dispatches, 0u);
  BufferBinding aligned[2] = {{buffer.get(), alignment, 64}, {buffer.get(), 2048, 16}};
  KILN_EXPECT_OK(cb->Dispatch(texels.get(), 0, groups, &count, 4, aligned, 2));
  KILN_ASSERT_OK(cb->End());
  KILN_ASSERT_OK(SubmitAndWait(cb.get()));
}

TEST_P(DispatchTest, RejectsMismatchedDispatchArguments) {
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Executable> scale, CreateScale());
  KILN_ASSERT_OK_AND_ASSIGN(Ref<Buffer> buffer, device()->AllocateBuffer(1024, MemoryKind::kHostVisible));
  KILN_ASSERT_OK_AND_ASSIGN(Ref<CommandBuffer> cb, device()->CreateCommandBuffer());
  const uint32_t groups[3] = {1, 1, 1};
  struct { float scale; uint32_t count; } push = {1.0f, 4};
  BufferBinding ok[2] = {{buffer.get(), 0, 256}, {buffer.get(), 512, 256}};
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 1, groups, &push, 8, ok, 2), kInvalidArgument);
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, 4, ok, 2), kInvalidArgument);
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, nullptr, 8, ok, 2), kInvalidArgument);
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, 8, ok, 1), kInvalidArgument);
  KILN_EXPECT_CODE(cb->Dispatch(nullptr, 0, groups, &push, 8, ok, 2), kInvalidArgument);
  BufferBinding past_end[2] = {{buffer.get(), 0, 256}, {buffer.get(), 768, 512}};
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, 8, past_end, 2), kOutOfRange);
  BufferBinding null_buffer[2] = {{buffer.get(), 0, 256}, {nullptr, 0, 0}};
  KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, groups, &push, 8, null_buffer, 2),
                   kInvalidArgument);
  const uint32_t too_many[3] = {device()->info().max_compute_workgroup_count[0] + 1u, 1, 1};
  if (device()->info().max_compute_workgroup_count[0] < UINT32_MAX) {
    KILN_EXPECT_CODE(cb->Dispatch(scale.get(), 0, too_many, &push, 8, ok, 2), kInvalidArgument);
  }
  EXPECT_EQ(device()->stats().dispatches, 0u);
  KILN_ASSERT_OK(cb->End());
}

TEST_P(DispatchTest, RejectsBadExecutables) {
  EntryPointInfo entry;
  entry.name = "main";
  entry.binding_count = 2;
  entry.push_constant_bytes = 8;
  // Wrong magic.
  std::vector<uint32_t> garbage(kScaleSpirv, kScaleSpirv + kScaleSpirvWordCount);
  garbage[0] = 0xdeadbeefu;
  KILN_EXPECT_CODE(device()->CreateExecutable(garbage.data(), garbage.size(), {entry}),
                   kInvalidArgument);
  // Truncated header, null words, no entry points.
  KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, 3, {entry}), kInvalidArgument);
  KILN_EXPECT_CODE(device()->CreateExecutable(nullptr, 0, {entry}), kInvalidArgument);
  KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {}),
                   kInvalidArgument);
  // An instruction whose word count runs past the end of the module.
  std::vector<uint32_t> overrun(kScaleSpirv, kScaleSpirv + kScaleSpirvWordCount);
  overrun[5] = (0xffffu << 16) | (overrun[5] & 0xffffu);
  KILN_EXPECT_CODE(device()->CreateExecutable(overrun.data(), overrun.size(), {entry}),
                   kInvalidArgument);
  // Unknown entry point name.
  EntryPointInfo missing = entry;
  missing.name = "not_main";
  KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {missing}),
                   kInvalidArgument);
  // Push constants must be a multiple of 4 bytes within the device limit.
  EntryPointInfo odd_push = entry;
  odd_push.push_constant_bytes = 6;
  KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {odd_push}),
                   kInvalidArgument);
  EntryPointInfo huge_push = entry;
  huge_push.push_constant_bytes = device()->info().max_push_constants_size + 4;
  KILN_EXPECT_CODE(device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {huge_push}),
                   kInvalidArgument);
  EntryPointInfo many_bindings = entry;
  many_bindings.binding_count = device()->info().max_bound_storage_buffers + 1;
  if (many_bindings.binding_count != 0) {
    KILN_EXPECT_CODE(
        device()->CreateExecutable(kScaleSpirv, kScaleSpirvWordCount, {many_bindings}),
        kInvalidArgument);
  }
}

KILN_CTS_INSTANTIATE(DispatchTest);

}  // namespace
}  // namespace kiln::hal::cts
