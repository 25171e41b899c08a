#include "vm/staged_copy.h"

namespace kiln::vm {

Status CopyStaged(hal::Device* device, hal::Buffer* buffer, uint64_t offset, void* host, uint64_t length, bool to_device,
                  const hal::SemaphorePoint& signal, hal::Buffer* reuse, uint64_t timeout_ns) {
  // Bounded: first wait (at most the timeout) for what is queued ahead, so the
  // copy itself waits on nothing and its command buffer is never left
  // pending past a failed wait.
  if (timeout_ns != UINT64_MAX) KILN_RETURN_IF_ERROR(device->WaitIdle(timeout_ns));
  Ref<hal::Buffer> staging = Ref<hal::Buffer>::Retain(reuse);
  if (!staging) {
    KILN_ASSIGN_OR_RETURN(staging, device->AllocateBuffer(length, hal::MemoryKind::kHostVisible));
  }
  if (to_device) KILN_RETURN_IF_ERROR(staging->Write(0, host, length));
  KILN_ASSIGN_OR_RETURN(Ref<hal::CommandBuffer> cb, device->CreateCommandBuffer());
  KILN_RETURN_IF_ERROR(to_device ? cb->CopyBuffer(staging.get(), 0, buffer, offset, length)
                                 : cb->CopyBuffer(buffer, offset, staging.get(), 0, length));
  // The host reads the staging buffer after a download, nothing after an
  // upload (it cannot map `buffer`).
  const hal::BufferBarrier read = {staging.get(), 0, length};
  KILN_RETURN_IF_ERROR(cb->HostReadBarrier(&read, to_device ? 0 : 1));
  KILN_RETURN_IF_ERROR(cb->End());
  KILN_RETURN_IF_ERROR(device->QueueExecute(cb.get(), nullptr, 0, &signal, 1));
  KILN_RETURN_IF_ERROR(signal.semaphore->Wait(signal.value, UINT64_MAX));
  // The command buffer is destroyed on return: let the queue finish with the
  // submission first (a signalled semaphore says the copy is done, not that
  // the driver's queue thread is; lavapipe's crashed when it was freed).
  KILN_RETURN_IF_ERROR(device->WaitIdle());
  // A transfer, not one of the program's copies (which elision counts).
  device->stats().copies--;
  device->stats().transfers++;
  return to_device ? OkStatus() : staging->Read(0, host, length);
}

}  // namespace kiln::vm
