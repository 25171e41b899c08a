// kiln-dump: prints everything in a compiled module.
//
//   kiln-dump model.kiln
//
// The module is loaded and verified exactly as the runtime does (FlatBuffers
// verifier + bytecode verifier), then printed: header (name, version,
// features, size), imports with signatures, functions with ABI reflection
// (argument/result names, dtypes, shapes, ownership), register counts and the
// bytecode disassembly (annotated with debug locations), rodata segments
// (size, file offset and alignment), executables (SPIR-V size, entry points,
// bindings, push-constant bytes, workgroup sizes, source locations), globals
// and the initializer. Errors go to stderr as `error: ...`, exit status 1.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tools/flags.h"
#include "vm/hal_module.h"
#include "vm/isa.h"
#include "vm/module.h"
#include "vm/value.h"

namespace {

using kiln::vm::ByteSpan;
using kiln::vm::DecodedInstruction;
using kiln::vm::Module;

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::string SigText(const kiln::format::TensorSig* sig, bool is_arg) {
  std::vector<int64_t> dims;
  if (sig->shape()) dims.assign(sig->shape()->begin(), sig->shape()->end());
  std::string s = Str(sig->name()) + ": " +
                  kiln::vm::TensorTypeString(static_cast<kiln::DType>(sig->dtype()), dims.data(),
                                             dims.size());
  if (is_arg) {
    s += std::string(" ") + kiln::format::EnumNameOwnership(sig->ownership());
    if (sig->ownership() == kiln::format::Ownership::output_storage) {
      s += " (result " + std::to_string(sig->tied_result()) + ")";
    }
  }
  return s;
}

// Largest power of two (<= 4096) dividing `offset`.
uint64_t Alignment(uint64_t offset) {
  uint64_t a = 1;
  while (a < 4096 && offset % (a * 2) == 0) a *= 2;
  return a;
}

std::string FeatureText(uint32_t f) {
  if (!f) return "none";
  std::string s;
  if (f & 1) s += "async_exports ";
  if (f & 2) s += "multi_module ";
  if (f & ~3u) s += "unknown ";
  s.pop_back();
  return s;
}

void Dump(const Module& m) {
  const kiln::format::Module* def = m.def();
  const uint8_t* base = m.bytes().data;
  std::printf("module: %s\n", m.name().data());
  std::printf("version: %u\n", def->version());
  std::printf("features: 0x%x (%s)\n", static_cast<uint32_t>(def->features()),
              FeatureText(static_cast<uint32_t>(def->features())).c_str());
  std::printf("size: %zu bytes\n", m.bytes().size);

  std::printf("\nimports (%u):\n", m.import_count());
  for (uint32_t i = 0; i < m.import_count(); ++i) {
    std::string_view name = m.import_names()[i];  // NUL-terminated (module bytes)
    const kiln::vm::HalImportInfo* info = kiln::vm::FindHalImport(name);
    std::printf("  #%u %s \"%s\"%s%s\n", i, name.data(),
                m.import_signatures()[i].ToString().c_str(), info ? "  -- " : "",
                info ? kiln::vm::HalImportMeaning(info->id) : "");
  }

  std::vector<std::string> function_names = m.function_names();
  std::vector<std::string> import_names(m.import_names().begin(), m.import_names().end());
  std::printf("\nfunctions (%u):\n", m.function_count());
  for (uint32_t f = 0; f < m.function_count(); ++f) {
    const kiln::vm::FunctionInfo& info = m.function(f);
    const kiln::format::Function* fd = info.def;
    std::printf("  #%u %s%s%s\n", f, info.name.data(), info.exported ? " (exported)" : "",
                static_cast<int>(f) == m.initializer() ? " (initializer)" : "");
    std::printf("    args (%u):\n", info.arg_count);
    for (uint32_t a = 0; a < info.arg_count; ++a) {
      std::printf("      %u %s\n", a, SigText(fd->args()->Get(a), true).c_str());
    }
    std::printf("    results (%u):\n", info.result_count);
    for (uint32_t r = 0; r < info.result_count; ++r) {
      std::printf("      %u %s\n", r, SigText(fd->results()->Get(r), false).c_str());
    }
    // Function.static_commands (vm/static_commands.h, vm/replay.h).
    std::printf("    commands: %s\n", fd->static_commands()
                                           ? (info.replayable ? "static (recorded once, replayed)"
                                                              : "static (not replayed: the module stores global refs)")
                                           : "recorded per invoke");
    std::printf("    registers: %u i32, %u ref\n", info.i32_register_count,
                info.ref_register_count);
    std::printf("    bytecode: %zu bytes at file offset 0x%llx\n", info.code.size,
                static_cast<unsigned long long>(info.code.data - base));
    uint32_t offset = 0;
    DecodedInstruction inst;
    std::string_view last_loc;
    while (offset < info.code.size) {
      kiln::Status s = kiln::vm::DecodeInstruction(info.code, offset, &inst);
      if (!s.ok()) {
        std::printf("      %04x: <error: %s>\n", offset, s.message().c_str());
        break;
      }
      std::string text =
          kiln::vm::DisassembleInstruction(inst, import_names, function_names);
      std::string_view loc = m.DebugLocation(f, offset);
      if (!loc.empty() && loc != last_loc) {
        text += "    // " + std::string(loc);
        last_loc = loc;
      }
      std::printf("      %04x: %s\n", offset, text.c_str());
      offset += inst.length;
    }
    if (fd->debug_offsets() && fd->debug_offsets()->size()) {
      std::printf("    debug locations (%u):\n", fd->debug_offsets()->size());
      for (uint32_t d = 0; d < fd->debug_offsets()->size(); ++d) {
        std::printf("      %04x -> %s\n", fd->debug_offsets()->Get(d),
                    Str(fd->debug_locations()->Get(d)).c_str());
      }
    }
  }

  std::printf("\nrodata (%u):\n", m.rodata_count());
  for (uint32_t i = 0; i < m.rodata_count(); ++i) {
    const kiln::format::RodataSegment* seg = def->rodata()->Get(i);
    ByteSpan span = m.rodata(i);
    uint64_t off = span.data ? static_cast<uint64_t>(span.data - base) : 0;
    std::printf("  #%u %s: %zu bytes at file offset 0x%llx (%llu-byte aligned)\n", i,
                Str(seg->name()).c_str(), span.size, static_cast<unsigned long long>(off),
                static_cast<unsigned long long>(Alignment(off)));
  }

  uint32_t exe_count = def->executables() ? def->executables()->size() : 0;
  std::printf("\nexecutables (%u):\n", exe_count);
  for (uint32_t i = 0; i < exe_count; ++i) {
    const kiln::format::Executable* exe = def->executables()->Get(i);
    std::printf("  #%u SPIR-V: %u words (%u bytes) at file offset 0x%llx\n", i,
                exe->spirv()->size(), exe->spirv()->size() * 4,
                static_cast<unsigned long long>(
                    reinterpret_cast<const uint8_t*>(exe->spirv()->data()) - base));
    if (exe->spirv_f16() && exe->spirv_f16()->size())
      std::printf("     f16-arithmetic SPIR-V (devices with shaderFloat16): %u words (%u bytes)\n",
                  exe->spirv_f16()->size(), exe->spirv_f16()->size() * 4);
    for (uint32_t e = 0; e < exe->entry_points()->size(); ++e) {
      const kiln::format::EntryPoint* ep = exe->entry_points()->Get(e);
      std::string bindings;
      uint32_t nb = ep->bindings() ? ep->bindings()->size() : 0;
      for (uint32_t b = 0; b < nb; ++b) {
        const kiln::format::Binding* bd = ep->bindings()->Get(b);
        bindings += (b ? ", " : "") + std::to_string(bd->set()) + ":" +
                    std::to_string(bd->binding()) + (bd->readonly() ? " ro" : " rw") +
                    (ep->binding_kinds() && b < ep->binding_kinds()->size() &&
                             ep->binding_kinds()->Get(b) == kiln::format::BindingKind::uniform_texel_buffer
                         ? " texels"
                         : "");
      }
      std::string wg;
      if (ep->workgroup_size()) {
        for (uint32_t d = 0; d < ep->workgroup_size()->size(); ++d) {
          wg += (d ? "x" : "") + std::to_string(ep->workgroup_size()->Get(d));
        }
      }
      std::printf("    entry #%u %s%s%s%s\n", e, Str(ep->name()).c_str(),
                  ep->debug_name() ? " (" : "", Str(ep->debug_name()).c_str(),
                  ep->debug_name() ? ")" : "");
      std::printf("      bindings (%u): [%s]\n", nb, bindings.c_str());
      std::printf("      push constants: %u bytes\n", ep->push_constant_bytes());
      std::printf("      workgroup size: %s\n", wg.empty() ? "unspecified" : wg.c_str());
      if (ep->macs()) std::printf("      macs: %llu\n", static_cast<unsigned long long>(ep->macs()));
    }
    if (exe->source_locations() && exe->source_locations()->size()) {
      std::string locs;
      for (uint32_t l = 0; l < exe->source_locations()->size(); ++l) {
        locs += (l ? ", " : "") + Str(exe->source_locations()->Get(l));
      }
      std::printf("    source locations: %s\n", locs.c_str());
    }
  }

  uint32_t global_count = m.global_count();
  std::printf("\nglobals (%u):\n", global_count);
  for (uint32_t i = 0; i < global_count; ++i) {
    const kiln::format::Global* g = def->globals()->Get(i);
    std::printf("  #%u %s (%s)\n", i, Str(g->name()).c_str(), g->is_ref() ? "ref" : "i32");
  }
  int init = m.initializer();
  if (init >= 0) {
    std::printf("\ninitializer: #%d %s\n", init, m.function(init).name.data());
  } else {
    std::printf("\ninitializer: none\n");
  }
}

const kiln::tools::FlagTable kFlags = {
    "kiln-dump",
    "usage: kiln-dump MODEL.kiln\n"
    "Prints a compiled module: schema contents (functions, signatures, executables, rodata)\n"
    "and the bytecode disassembly.",
    {},
    nullptr};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args;
  int exit_code = 0;
  if (!kiln::tools::NormalizeFlags(kFlags, argc, argv, &args, &exit_code)) return exit_code;
  if (args.size() != 1) {
    std::fprintf(stderr, "error: expected one module path\nusage: kiln-dump MODEL.kiln\n");
    return 2;
  }
  auto module = Module::LoadFromFile(args[0].c_str());
  if (!module.ok()) {
    std::fprintf(stderr, "error: %s\n", module.status().ToString().c_str());
    return 1;
  }
  Dump(*module.value());
  return 0;
}
