#include "hal/testing/alloc_failure_device.h"

#include <new>
#include <utility>

namespace kiln::hal {

StatusOr<Ref<AllocFailureDevice>> AllocFailureDevice::Create(Ref<Device> inner) {
  if (!inner) return InvalidArgumentError("AllocFailureDevice: no device to wrap");
  auto* device = new (std::nothrow) AllocFailureDevice(std::move(inner));
  if (!device) return ResourceExhaustedError("AllocFailureDevice: out of host memory");
  return Ref<AllocFailureDevice>::Adopt(device);
}

StatusOr<Ref<Buffer>> AllocFailureDevice::AllocateBuffer(uint64_t size, MemoryKind kind) {
  uint64_t n = allocations_.fetch_add(1) + 1;
  if (n == fail_at_.load()) {
    refused_.fetch_add(1);
    return ResourceExhaustedError(
        "AllocateBuffer(%llu bytes, %s): out of device memory (injected failure of allocation %llu)",
        static_cast<unsigned long long>(size),
        kind == MemoryKind::kDeviceLocal ? "device-local" : "host-visible",
        static_cast<unsigned long long>(n));
  }
  return inner_->AllocateBuffer(size, kind);
}

}  // namespace kiln::hal
