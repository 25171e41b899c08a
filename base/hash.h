// FNV-1a, 64-bit (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/).
// Used for the module integrity check (schemas/kiln_module.fbs: integrity):
// not cryptographic, it catches corrupted or truncated-and-padded files
// before their SPIR-V reaches a driver. Cost: ~1 ns/byte.
#ifndef KILN_BASE_HASH_H_
#define KILN_BASE_HASH_H_

#include <cstddef>
#include <cstdint>

// The fuzz build (KILN_FUZZ) hashes each module input twice (reseal, load):
// libFuzzer's comparison tracing of these byte loops took 40% of the module
// fuzzer's time and adds no useful coverage, so they are not instrumented.
#if defined(KILN_FUZZ) && defined(__clang__)
#define KILN_HASH_NO_COVERAGE __attribute__((noinline, no_sanitize("coverage")))
#else
#define KILN_HASH_NO_COVERAGE
#endif

namespace kiln {

constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;

// Continues a hash `h` over `size` bytes.
KILN_HASH_NO_COVERAGE inline uint64_t Fnv1a64(const void* data, size_t size, uint64_t h = kFnv1a64Offset) {
  const uint8_t* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

// Hash of `size` bytes with the 8 bytes at `skip_offset` read as zero (the
// integrity field itself).
inline uint64_t Fnv1a64Skipping(const uint8_t* data, size_t size, size_t skip_offset) {
  static const uint8_t kZero[8] = {};
  uint64_t h = Fnv1a64(data, skip_offset);
  h = Fnv1a64(kZero, 8, h);
  return Fnv1a64(data + skip_offset + 8, size - skip_offset - 8, h);
}

}  // namespace kiln

#endif  // KILN_BASE_HASH_H_
