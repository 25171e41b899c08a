// Sealing and checking the module integrity hash (Module.integrity in
// kiln_module.fbs): FNV-1a 64 over the whole size-prefixed buffer with the
// field's own 8 bytes read as zero. Shared by the compiler's emitter, test
// module builders and the VM loader so all three agree byte for byte.
#ifndef KILN_SCHEMAS_MODULE_INTEGRITY_H_
#define KILN_SCHEMAS_MODULE_INTEGRITY_H_

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/hash.h"
#include "kiln_module_generated.h"

namespace kiln::format {

// Address of the integrity field inside a verified size-prefixed module, or
// nullptr when the field is absent.
inline const uint8_t* IntegrityField(const uint8_t* size_prefixed) {
  const Module* m = GetSizePrefixedModule(size_prefixed);
  return reinterpret_cast<const flatbuffers::Table*>(m)->GetAddressOf(Module::VT_INTEGRITY);
}

// Hash of `size` bytes with the field at `field` read as zero.
inline uint64_t ComputeIntegrity(const uint8_t* data, size_t size, const uint8_t* field) {
  return Fnv1a64Skipping(data, size, static_cast<size_t>(field - data));
}

// Writes the hash into a freshly built module. The builder must have stored
// the field (a non-default placeholder, e.g. integrity = 1). Returns false
// when the field is missing.
inline bool SealModule(std::vector<uint8_t>* bytes) {
  const uint8_t* field = IntegrityField(bytes->data());
  if (!field) return false;
  uint64_t h = ComputeIntegrity(bytes->data(), bytes->size(), field);
  std::memcpy(bytes->data() + (field - bytes->data()), &h, sizeof(h));
  return true;
}

}  // namespace kiln::format

#endif  // KILN_SCHEMAS_MODULE_INTEGRITY_H_
