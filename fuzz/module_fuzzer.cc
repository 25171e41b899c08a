// libFuzzer target: a module's bytes through the loader, every verifier and
// the interpreter, on the host-memory HAL (hal/host/host_device.h).
//
// Each input is first resealed: when it frames as a FlatBuffer module with
// an integrity field, the FNV-1a 64 hash (schemas/module_integrity.h) is
// recomputed, so a mutation reaches the structure, bytecode and SPIR-V
// checks instead of stopping at the hash. Then, on a fresh host device with
// bounded limits (step budget, device-memory budget, 64 MiB per buffer):
// Module::LoadFromMemory, Context::RegisterModule (imports, executables and
// their SPIR-V layout check, the initializer), and every exported function
// (at most kMaxFunctions) invoked twice (the second may replay a recording)
// with zeroed arguments of its signature's types, consumed where the
// signature says `consume`. Errors are expected; crashes, sanitizer reports
// and leaks are findings. The structure-aware mutator is module_mutator.cc.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "hal/host/host_device.h"
#include "kiln_module_generated.h"
#include "schemas/module_integrity.h"
#include "vm/context.h"
#include "vm/module.h"
#include "vm/value.h"

namespace {

constexpr uint32_t kMaxFunctions = 8;
constexpr uint64_t kMaxArgumentBytes = uint64_t{16} << 20;
constexpr size_t kMaxResults = 64;

// Recomputes the integrity hash of `bytes` in place when they frame as a
// module (size prefix, identifier, FlatBuffers verifier) with the field set.
void Reseal(std::vector<uint8_t>* bytes) {
  if (bytes->size() < 8) return;
  uint32_t prefix = 0;
  std::memcpy(&prefix, bytes->data(), 4);
  if (prefix != bytes->size() - 4) return;
  flatbuffers::Verifier verifier(bytes->data(), bytes->size());
  if (!kiln::format::VerifySizePrefixedModuleBuffer(verifier)) return;
  kiln::format::SealModule(bytes);
}

// Invokes `fn` with zeroed arguments of its signature (skipped when one
// would be larger than kMaxArgumentBytes).
void InvokeWithZeros(kiln::vm::Context* context, kiln::hal::Device* device,
                     kiln::vm::FunctionRef fn) {
  using namespace kiln;
  const vm::FunctionInfo& info = context->function_info(fn);
  const auto* args = info.def->args();
  const auto* results = info.def->results();
  size_t arg_count = args ? args->size() : 0;
  size_t result_count = results ? results->size() : 0;
  if (result_count > kMaxResults) return;
  for (int round = 0; round < 2; ++round) {
    std::vector<Ref<vm::BufferView>> views(arg_count);
    std::vector<vm::InvokeArg> invoke_args(arg_count);
    for (size_t i = 0; i < arg_count; ++i) {
      const format::TensorSig* sig = args->Get(static_cast<flatbuffers::uoffset_t>(i));
      DType dtype = static_cast<DType>(sig->dtype());
      std::vector<int64_t> dims;
      uint64_t bytes = DTypeSize(dtype);
      if (bytes == 0) return;
      if (sig->shape()) {
        for (int64_t d : *sig->shape()) {
          if (d < 0 || (d && bytes > kMaxArgumentBytes / static_cast<uint64_t>(d))) return;
          bytes *= static_cast<uint64_t>(d);
          dims.push_back(d);
        }
      }
      if (bytes > kMaxArgumentBytes) return;
      auto buffer = device->AllocateBuffer(bytes, hal::MemoryKind::kDeviceLocal);
      if (!buffer.ok()) return;
      auto view = vm::BufferView::Create(std::move(buffer).value(), 0, dtype, dims.data(),
                                         dims.size());
      if (!view.ok()) return;
      views[i] = std::move(view).value();
      invoke_args[i].view = views[i].get();
      if (sig->ownership() == format::Ownership::consume) {
        invoke_args[i].consume = true;
        views[i]->Retain();  // the reference the call adopts
      }
    }
    std::vector<Ref<vm::BufferView>> out(result_count);
    (void)context->InvokeEx(fn, invoke_args.data(), arg_count, out.data(), result_count);
    for (auto& r : out) {
      if (r) {  // read the results back like an app would
        std::vector<uint8_t> host(static_cast<size_t>(r->byte_length() < 4096 ? r->byte_length() : 4096));
        (void)r->buffer()->Read(r->byte_offset(), host.data(), host.size());
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kiln;
  // 64-byte aligned, as a module file is mapped (rodata is force_align 64).
  std::vector<uint8_t> bytes(data, data + size);
  Reseal(&bytes);
  void* aligned = HostAllocate(size ? size : 1, 64);
  if (!aligned) return 0;
  if (size) std::memcpy(aligned, bytes.data(), size);
  {
    auto module = vm::Module::LoadFromMemory(aligned, size);
    if (module.ok()) {
      hal::host::HostDeviceOptions options;
      options.max_allocation_bytes = uint64_t{64} << 20;
      // Half the inputs take the f16-arithmetic SPIR-V where a module has it.
      options.shader_float16 = size % 2 == 1;
      Ref<hal::Device> device = hal::host::CreateHostDevice(options).value();
      auto context = vm::Context::Create(device);
      if (context.ok()) {
        vm::Context::Limits limits;
        limits.step_budget = 100000;
        limits.device_memory_budget = uint64_t{256} << 20;
        limits.wait_timeout_ns = 0;
        context.value()->set_limits(limits);
        if (context.value()->RegisterModule(module.value()).ok()) {
          const vm::Module& m = *module.value();
          uint32_t invoked = 0;
          for (uint32_t f = 0; f < m.function_count() && invoked < kMaxFunctions; ++f) {
            if (!m.function(f).exported || static_cast<int>(f) == m.initializer()) continue;
            ++invoked;
            InvokeWithZeros(context.value().get(), device.get(), vm::FunctionRef{0, f});
          }
        }
      }
    }
  }
  HostFree(aligned);
  return 0;
}
