// The context's allocation cache (vm/context.h): buffers kept per (module,
// function, slot) across invocations, so results and state that round trip
// allocate nothing in steady state (hal.allocate_cached, output storage,
// donated storage).
#include "vm/context.h"

namespace kiln::vm {

bool Context::IsCached(const hal::Buffer* buffer) const {
  for (const CacheEntry& e : cache_) {
    if (e.buffer.get() == buffer) return true;
  }
  return false;
}

StatusOr<Ref<hal::Buffer>> Context::AllocateCached(uint32_t m, uint32_t function, int32_t slot,
                                                   uint64_t size, hal::MemoryKind kind) {
  uint64_t alloc = size ? size : 4;
  // Up to kBuffersPerSlot buffers per slot (double buffering): a streaming
  // result the app hands back as the next call's consumed argument still
  // holds one buffer while this call writes the other, so state that round
  // trips allocates nothing in steady state even when it cannot be updated
  // in place (it ping-pongs between the two).
  constexpr int kBuffersPerSlot = 2;
  CacheEntry* replace = nullptr;
  int buffers = 0;
  for (CacheEntry& e : cache_) {
    if (e.module != m || e.function != function || e.slot != slot) continue;
    ++buffers;
    // Held by nobody but the slot and in-flight work of this context (which
    // every later submission is queue-ordered after): reuse it.
    bool free = e.buffer->refcount() ==
                1 + hal_.InFlightHolders(e.buffer.get()) + RecordingHolders(e.buffer.get());
    if (free && e.buffer->size() >= size && e.buffer->memory_kind() == kind) return e.buffer;
    if (!replace || free) replace = &e;  // prefer replacing one nobody holds (too small)
  }
  CountHostAllocation();
  KILN_ASSIGN_OR_RETURN(Ref<hal::Buffer> buffer, hal_.AllocateCharged(alloc, kind));
  if (replace && buffers >= kBuffersPerSlot) {
    replace->buffer = buffer;  // the old one is freed when its last holder lets go
    return buffer;
  }
  if (cache_.size() == cache_.capacity()) CountHostAllocation();
  cache_.push_back(CacheEntry{m, function, slot, buffer});
  return buffer;
}

}  // namespace kiln::vm
