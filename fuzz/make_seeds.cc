// kiln-fuzz-seeds OUT_DIR MODULE.kiln...: writes the SPIR-V layout fuzzer's
// seeds (fuzz_layout.h) from real modules: one file per entry point of each
// executable, OUT_DIR/<module>_<executable>_<entry>.bin, holding the
// entry point's declared layout and the executable's SPIR-V words. Modules
// that do not load are reported and skipped (exit status 1 if none loaded).
#include <cstdio>
#include <string>
#include <vector>

#include "fuzz/fuzz_layout.h"
#include "vm/module.h"

int main(int argc, char** argv) {
  using namespace kiln;
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR MODULE.kiln...\n", argv[0]);
    return 2;
  }
  int loaded = 0, written = 0;
  for (int a = 2; a < argc; ++a) {
    auto module = vm::Module::LoadFromFile(argv[a]);
    if (!module.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[a], module.status().ToString().c_str());
      continue;
    }
    ++loaded;
    const format::Module* def = module.value()->def();
    if (!def->executables()) continue;
    for (flatbuffers::uoffset_t i = 0; i < def->executables()->size(); ++i) {
      const format::Executable* exe = def->executables()->Get(i);
      for (flatbuffers::uoffset_t e = 0; e < exe->entry_points()->size(); ++e) {
        const format::EntryPoint* ep = exe->entry_points()->Get(e);
        hal::EntryPointInfo info;
        info.binding_count = ep->bindings() ? ep->bindings()->size() : 0;
        for (uint32_t b = 0; b < info.binding_count; ++b) {
          info.binding_readonly.push_back(ep->bindings()->Get(b)->readonly());
        }
        if (ep->binding_kinds()) {
          for (uint32_t b = 0; b < ep->binding_kinds()->size(); ++b)
            info.binding_kinds.push_back(static_cast<hal::BindingKind>(ep->binding_kinds()->Get(b)));
        }
        info.push_constant_bytes = ep->push_constant_bytes();
        if (ep->specialization()) {
          info.specialization.assign(ep->specialization()->begin(), ep->specialization()->end());
        }
        std::vector<uint8_t> bytes =
            fuzz::EncodeLayoutInput(info, exe->spirv()->data(), exe->spirv()->size());
        std::string path = std::string(argv[1]) + "/" + std::string(module.value()->name()) +
                           "_" + std::to_string(i) + "_" + std::to_string(e) + ".bin";
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
          std::fprintf(stderr, "%s: cannot write\n", path.c_str());
          if (f) std::fclose(f);
          return 1;
        }
        std::fclose(f);
        ++written;
      }
    }
  }
  std::printf("kiln-fuzz-seeds: %d modules, %d SPIR-V seeds\n", loaded, written);
  return loaded ? 0 : 1;
}
