// Structure-aware libFuzzer mutator for Kiln modules (module_fuzzer.cc).
//
// A byte-level mutation of a module almost always breaks the FlatBuffer
// framing, so the loader rejects it in the FlatBuffers verifier and nothing
// deeper is reached. This mutator unpacks the module with FlatBuffers'
// object API (this file alone includes a kiln_module_generated.h built with
// --gen-object-api), changes one thing the later checks look at, packs it
// again (size-prefixed, identifier "KILN") and reseals the integrity hash:
//  - bytecode: libFuzzer's own byte mutations on one function's bytecode,
//    or one 16-bit operand set to an interesting value (0, 1, -1, a
//    register or import count), or an instruction-sized chunk copied from
//    another function; register counts;
//  - signatures and ownership: an argument's or result's dtype, a dim,
//    ownership, tied_result; an argument dropped or duplicated; export and
//    static_commands flags; the initializer index;
//  - imports: a name swapped with another import's, the signature string
//    mutated, an import dropped or duplicated;
//  - SPIR-V: libFuzzer's byte mutations on the words, or one word set to an
//    interesting value; entry point bindings (set, binding, readonly),
//    push-constant bytes, workgroup size, specialization values;
//  - rodata: bytes mutated, a segment shrunk or dropped; globals' is_ref.
// Inputs that do not unpack, one time in eight, and outputs larger than
// max_size fall back to LLVMFuzzerMutate on the whole buffer (the fuzzer's
// harness reseals those too).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "kiln_module_generated.h"  // the object-API variant (see CMakeLists.txt)
#include "schemas/module_integrity.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {

using namespace kiln::format;
using Rng = std::minstd_rand;

uint32_t Pick(Rng& rng, size_t n) { return n ? static_cast<uint32_t>(rng() % n) : 0; }

// libFuzzer's mutations on a byte vector, growing it by at most `grow`.
template <typename T>
void MutateVector(std::vector<T>* v, size_t grow) {
  size_t bytes = v->size() * sizeof(T);
  std::vector<uint8_t> buf(bytes + grow + sizeof(T));
  if (bytes) std::memcpy(buf.data(), v->data(), bytes);
  size_t n = LLVMFuzzerMutate(buf.data(), bytes, bytes + grow);
  v->resize(n / sizeof(T));
  if (!v->empty()) std::memcpy(v->data(), buf.data(), v->size() * sizeof(T));
}

uint32_t Interesting(Rng& rng, uint32_t hint) {
  static const uint32_t kValues[] = {0, 1, 2, 3, 4, 7, 8, 16, 63, 64, 127, 128, 255, 256,
                                     0x7fff, 0x8000, 0xffff, 0x10000, 0x7fffffff, 0x80000000u,
                                     0xffffffffu};
  switch (rng() % 4) {
    case 0: return hint;
    case 1: return hint + 1;
    case 2: return hint ? hint - 1 : 0;
    default: return kValues[Pick(rng, sizeof(kValues) / sizeof(kValues[0]))];
  }
}

void MutateBytecode(ModuleT* m, Rng& rng) {
  if (m->functions.empty()) return;
  FunctionT& f = *m->functions[Pick(rng, m->functions.size())];
  switch (rng() % 6) {
    case 0:
    case 1:
      MutateVector(&f.bytecode, 16);
      break;
    case 2: {  // one 16-bit operand word (instructions are 16-bit aligned)
      if (f.bytecode.size() < 2) break;
      size_t at = Pick(rng, f.bytecode.size() / 2) * 2;
      uint32_t hint = rng() % 2 ? f.ref_register_count : static_cast<uint32_t>(m->imports.size());
      uint16_t v = static_cast<uint16_t>(Interesting(rng, hint));
      std::memcpy(&f.bytecode[at], &v, 2);
      break;
    }
    case 3: {  // a chunk of another function's bytecode spliced in
      const FunctionT& g = *m->functions[Pick(rng, m->functions.size())];
      if (g.bytecode.size() < 2) break;
      size_t from = Pick(rng, g.bytecode.size() / 2) * 2;
      size_t len = std::min<size_t>(g.bytecode.size() - from, 2 + 2 * Pick(rng, 12));
      size_t at = Pick(rng, f.bytecode.size() / 2 + 1) * 2;
      std::vector<uint8_t> chunk(g.bytecode.begin() + from, g.bytecode.begin() + from + len);
      if (rng() % 2 && at + len <= f.bytecode.size()) {
        std::copy(chunk.begin(), chunk.end(), f.bytecode.begin() + at);
      } else {
        f.bytecode.insert(f.bytecode.begin() + std::min(at, f.bytecode.size()), chunk.begin(),
                          chunk.end());
      }
      break;
    }
    case 4:
      f.i32_register_count = Interesting(rng, f.i32_register_count);
      break;
    default:
      f.ref_register_count = Interesting(rng, f.ref_register_count);
      break;
  }
}

void MutateSig(TensorSigT* sig, Rng& rng, size_t result_count) {
  switch (rng() % 5) {
    case 0: sig->dtype = static_cast<DType>(rng() % 15); break;
    case 1:
      if (!sig->shape.empty()) {
        int64_t& d = sig->shape[Pick(rng, sig->shape.size())];
        static const int64_t kDims[] = {0, 1, 2, -1, 1 << 20, INT64_MAX, INT64_MIN};
        // Wrap on purpose: d + 1 must not be signed overflow (UBSan runs here).
        d = rng() % 2 ? static_cast<int64_t>(static_cast<uint64_t>(d) + 1) : kDims[Pick(rng, 7)];
      } else {
        sig->shape.push_back(rng() % 8);
      }
      break;
    case 2:
      if (rng() % 2 && !sig->shape.empty()) {
        sig->shape.pop_back();
      } else {
        sig->shape.push_back(rng() % 4 + 1);
      }
      break;
    case 3: sig->ownership = static_cast<Ownership>(rng() % 4); break;
    default:
      sig->tied_result = static_cast<int32_t>(Pick(rng, result_count + 2)) - 1;
      break;
  }
}

void MutateSignatures(ModuleT* m, Rng& rng) {
  if (m->functions.empty()) return;
  FunctionT& f = *m->functions[Pick(rng, m->functions.size())];
  switch (rng() % 7) {
    case 0:
    case 1:
      if (!f.args.empty()) MutateSig(f.args[Pick(rng, f.args.size())].get(), rng, f.results.size());
      break;
    case 2:
      if (!f.results.empty()) {
        MutateSig(f.results[Pick(rng, f.results.size())].get(), rng, f.results.size());
      }
      break;
    case 3:
      if (!f.args.empty() && rng() % 2) {
        f.args.erase(f.args.begin() + Pick(rng, f.args.size()));
      } else if (!f.args.empty()) {
        f.args.push_back(std::make_unique<TensorSigT>(*f.args[Pick(rng, f.args.size())]));
      }
      break;
    case 4: f.exported = !f.exported; break;
    case 5: f.static_commands = !f.static_commands; break;
    default:
      m->initializer = static_cast<int32_t>(Pick(rng, m->functions.size() + 2)) - 1;
      break;
  }
}

void MutateImports(ModuleT* m, Rng& rng) {
  if (m->imports.empty()) return;
  size_t i = Pick(rng, m->imports.size());
  switch (rng() % 4) {
    case 0: {
      size_t j = Pick(rng, m->imports.size());
      std::swap(m->imports[i]->name, m->imports[j]->name);
      break;
    }
    case 1: {
      std::string& s = m->imports[i]->signature;
      std::vector<uint8_t> v(s.begin(), s.end());
      MutateVector(&v, 4);
      s.assign(v.begin(), v.end());
      break;
    }
    case 2: m->imports.erase(m->imports.begin() + i); break;
    default: m->imports.push_back(std::make_unique<ImportT>(*m->imports[i])); break;
  }
}

void MutateExecutables(ModuleT* m, Rng& rng) {
  if (m->executables.empty()) return;
  ExecutableT& e = *m->executables[Pick(rng, m->executables.size())];
  int which = rng() % 8;
  if (which >= 3 && e.entry_points.empty()) which = 0;
  // The f16-arithmetic variant (chosen on devices with shaderFloat16): the
  // seeds' models have none, so one is sometimes made from the f32 SPIR-V.
  if (which < 3 && e.spirv_f16.empty() && rng() % 8 == 0) e.spirv_f16 = e.spirv;
  std::vector<uint32_t>& spirv = !e.spirv_f16.empty() && rng() % 2 ? e.spirv_f16 : e.spirv;
  switch (which) {
    case 0:
      MutateVector(&spirv, 8);
      break;
    case 1:
    case 2:
      if (!spirv.empty()) {
        uint32_t& w = spirv[Pick(rng, spirv.size())];
        w = rng() % 2 ? (w & 0xffff0000u) | (Interesting(rng, w & 0xffff) & 0xffff)
                      : Interesting(rng, w);
      }
      break;
    default: {
      EntryPointT& ep = *e.entry_points[Pick(rng, e.entry_points.size())];
      switch (which) {
        case 3:
          if (!ep.bindings.empty()) {
            Binding& b = ep.bindings[Pick(rng, ep.bindings.size())];
            switch (rng() % 3) {
              case 0: b = Binding(Interesting(rng, b.set()), b.binding(), b.readonly()); break;
              case 1: b = Binding(b.set(), Interesting(rng, b.binding()), b.readonly()); break;
              default: b = Binding(b.set(), b.binding(), !b.readonly()); break;
            }
          }
          break;
        case 4:
          if (!ep.bindings.empty() && rng() % 2) {
            ep.bindings.pop_back();
          } else {
            ep.bindings.push_back(Binding(0, static_cast<uint32_t>(ep.bindings.size()), false));
          }
          break;
        case 5: ep.push_constant_bytes = Interesting(rng, ep.push_constant_bytes); break;
        case 6:
          if (!ep.workgroup_size.empty()) {
            uint32_t& w = ep.workgroup_size[Pick(rng, ep.workgroup_size.size())];
            w = Interesting(rng, w);
          }
          break;
        default:
          if (!ep.specialization.empty() && rng() % 2) {
            uint32_t& s = ep.specialization[Pick(rng, ep.specialization.size())];
            s = Interesting(rng, s);
          } else {
            ep.specialization.push_back(Interesting(rng, 64));
          }
          break;
      }
    }
  }
}

void MutateData(ModuleT* m, Rng& rng) {
  switch (rng() % 5) {
    case 0:
    case 1:
      if (!m->rodata.empty()) MutateVector(&m->rodata[Pick(rng, m->rodata.size())]->data, 64);
      break;
    case 3:  // shrinks weights: smaller modules run faster
      if (!m->rodata.empty()) {
        std::vector<uint8_t>& d = m->rodata[Pick(rng, m->rodata.size())]->data;
        d.resize(Pick(rng, d.size() / 16 + 1));
      }
      break;
    case 2:
      if (!m->rodata.empty()) m->rodata.erase(m->rodata.begin() + Pick(rng, m->rodata.size()));
      break;
    default:
      if (!m->globals.empty()) {
        GlobalT& g = *m->globals[Pick(rng, m->globals.size())];
        g.is_ref = !g.is_ref;
      }
      break;
  }
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  Rng rng(seed);
  bool framed = size >= 8;
  if (framed) {
    uint32_t prefix = 0;
    std::memcpy(&prefix, data, 4);
    framed = prefix == size - 4;
  }
  if (framed) {
    flatbuffers::Verifier verifier(data, size);
    framed = VerifySizePrefixedModuleBuffer(verifier);
  }
  if (!framed || rng() % 8 == 0) return LLVMFuzzerMutate(data, size, max_size);

  ModuleT m;
  GetSizePrefixedModule(data)->UnPackTo(&m);
  switch (rng() % 5) {
    case 0: MutateBytecode(&m, rng); break;
    case 1: MutateSignatures(&m, rng); break;
    case 2: MutateImports(&m, rng); break;
    case 3: MutateExecutables(&m, rng); break;
    default: MutateData(&m, rng); break;
  }
  m.integrity = 1;  // stored (not the default), then sealed below
  flatbuffers::FlatBufferBuilder fbb(size + 1024);
  fbb.FinishSizePrefixed(Module::Pack(fbb, &m), ModuleIdentifier());
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  if (out.size() > max_size || !SealModule(&out)) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
