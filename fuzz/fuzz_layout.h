// The input format of the SPIR-V layout fuzzer (spirv_layout_fuzzer.cc),
// shared with the seed writer (make_seeds.cc):
//   byte 0       binding_count (0..15 used: value % 16)
//   byte 1       push_constant_bytes / 4 (value % 40, so up to 156 bytes)
//   bytes 2-3    binding_readonly bits, little-endian (bit b: binding b)
//   byte 4       specialization value count (value % 4)
//   bytes 5-6    binding kind bits, little-endian (bit b: binding b is a
//                uniform texel buffer, hal::BindingKind)
//   byte 7       reserved (0)
//   then         4 bytes per specialization value, then the SPIR-V words
// Entry point name "main" (what Kiln's codegen emits).
#ifndef KILN_FUZZ_FUZZ_LAYOUT_H_
#define KILN_FUZZ_FUZZ_LAYOUT_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hal/api.h"

namespace kiln::fuzz {

constexpr size_t kLayoutHeaderBytes = 8;

// Decodes `data` into `entry` and the SPIR-V words; false when too short.
inline bool DecodeLayoutInput(const uint8_t* data, size_t size, hal::EntryPointInfo* entry,
                              std::vector<uint32_t>* words) {
  if (size < kLayoutHeaderBytes) return false;
  entry->name = "main";
  entry->binding_count = data[0] % 16;
  entry->push_constant_bytes = (data[1] % 40) * 4;
  uint32_t readonly = data[2] | (uint32_t{data[3]} << 8);
  entry->binding_readonly.clear();
  for (uint32_t b = 0; b < entry->binding_count; ++b) {
    entry->binding_readonly.push_back((readonly >> b) & 1);
  }
  uint32_t texel = data[5] | (uint32_t{data[6]} << 8);
  entry->binding_kinds.clear();
  for (uint32_t b = 0; b < entry->binding_count; ++b) {
    entry->binding_kinds.push_back((texel >> b) & 1 ? hal::BindingKind::kUniformTexelBuffer
                                                    : hal::BindingKind::kStorageBuffer);
  }
  uint32_t spec = data[4] % 4;
  size_t at = kLayoutHeaderBytes;
  entry->specialization.clear();
  for (uint32_t i = 0; i < spec && at + 4 <= size; ++i, at += 4) {
    uint32_t v;
    std::memcpy(&v, data + at, 4);
    entry->specialization.push_back(v);
  }
  words->resize((size - at) / 4);
  if (!words->empty()) std::memcpy(words->data(), data + at, words->size() * 4);
  return true;
}

// The inverse, for seeds.
inline std::vector<uint8_t> EncodeLayoutInput(const hal::EntryPointInfo& entry,
                                              const uint32_t* words, size_t count) {
  std::vector<uint8_t> out(kLayoutHeaderBytes, 0);
  out[0] = static_cast<uint8_t>(entry.binding_count);
  out[1] = static_cast<uint8_t>(entry.push_constant_bytes / 4);
  uint32_t readonly = 0;
  for (size_t b = 0; b < entry.binding_readonly.size() && b < 16; ++b) {
    if (entry.binding_readonly[b]) readonly |= 1u << b;
  }
  out[2] = static_cast<uint8_t>(readonly);
  out[3] = static_cast<uint8_t>(readonly >> 8);
  uint32_t texel = 0;
  for (size_t b = 0; b < entry.binding_kinds.size() && b < 16; ++b) {
    if (entry.binding_kinds[b] == hal::BindingKind::kUniformTexelBuffer) texel |= 1u << b;
  }
  out[5] = static_cast<uint8_t>(texel);
  out[6] = static_cast<uint8_t>(texel >> 8);
  uint32_t spec = entry.specialization.size() < 3 ? static_cast<uint32_t>(entry.specialization.size()) : 3;
  out[4] = static_cast<uint8_t>(spec);
  for (uint32_t i = 0; i < spec; ++i) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(&entry.specialization[i]);
    out.insert(out.end(), p, p + 4);
  }
  const uint8_t* w = reinterpret_cast<const uint8_t*>(words);
  out.insert(out.end(), w, w + count * 4);
  return out;
}

}  // namespace kiln::fuzz

#endif  // KILN_FUZZ_FUZZ_LAYOUT_H_
