#include "vm/testing/module_builder.h"

#include "schemas/module_integrity.h"

#include <cstdio>
#include <cstdlib>

#include "kiln_module_generated.h"
#include "vm/hal_module.h"

namespace kiln::vm::testing {

int ModuleBuilder::AddImport(const std::string& name, const std::string& signature) {
  imports_.push_back({name, signature});
  return static_cast<int>(imports_.size() - 1);
}

int ModuleBuilder::AddHalImport(const std::string& name) {
  const HalImportInfo* info = FindHalImport(name);
  if (!info) {
    std::fprintf(stderr, "ModuleBuilder: unknown hal import %s\n", name.c_str());
    std::abort();
  }
  return AddImport(name, info->signature);
}

int ModuleBuilder::AddFunction(const std::string& name, std::vector<TensorDesc> args,
                               std::vector<TensorDesc> results, uint32_t i32_count,
                               uint32_t ref_count, BytecodeEncoder& encoder, bool exported,
                               std::vector<std::pair<uint32_t, std::string>> debug) {
  auto bytes = encoder.Finish();
  if (!bytes.ok()) {
    std::fprintf(stderr, "ModuleBuilder: %s\n", bytes.status().ToString().c_str());
    std::abort();
  }
  return AddFunctionBytes(name, std::move(args), std::move(results), i32_count, ref_count,
                          std::move(bytes).value(), exported, std::move(debug));
}

int ModuleBuilder::AddFunctionBytes(const std::string& name, std::vector<TensorDesc> args,
                                    std::vector<TensorDesc> results, uint32_t i32_count,
                                    uint32_t ref_count, std::vector<uint8_t> bytecode,
                                    bool exported,
                                    std::vector<std::pair<uint32_t, std::string>> debug) {
  functions_.push_back(Function{name, std::move(args), std::move(results), i32_count, ref_count,
                                std::move(bytecode), exported, std::move(debug)});
  return static_cast<int>(functions_.size() - 1);
}

int ModuleBuilder::AddRodata(const std::string& name, std::vector<uint8_t> data) {
  rodata_.push_back({name, std::move(data)});
  return static_cast<int>(rodata_.size() - 1);
}

int ModuleBuilder::AddExecutable(std::vector<uint32_t> spirv,
                                 std::vector<EntryPointDesc> entry_points,
                                 std::vector<std::string> source_locations) {
  executables_.push_back(
      Executable{std::move(spirv), std::move(entry_points), std::move(source_locations)});
  return static_cast<int>(executables_.size() - 1);
}

int ModuleBuilder::AddGlobal(const std::string& name, bool is_ref) {
  globals_.push_back({name, is_ref});
  return static_cast<int>(globals_.size() - 1);
}

std::vector<uint8_t> ModuleBuilder::Finish() const {
  flatbuffers::FlatBufferBuilder fbb;
  auto sigs = [&](const std::vector<TensorDesc>& descs) {
    std::vector<flatbuffers::Offset<format::TensorSig>> out;
    for (const TensorDesc& d : descs) {
      out.push_back(format::CreateTensorSigDirect(
          fbb, d.name.c_str(), static_cast<format::DType>(d.dtype), &d.shape,
          static_cast<format::Ownership>(d.ownership), d.tied_result));
    }
    return fbb.CreateVector(out);
  };
  std::vector<flatbuffers::Offset<format::Import>> imports;
  for (const auto& [name, sig] : imports_) {
    imports.push_back(format::CreateImportDirect(fbb, name.c_str(), sig.c_str()));
  }
  std::vector<flatbuffers::Offset<format::Function>> functions;
  for (const Function& f : functions_) {
    auto name = fbb.CreateString(f.name);
    auto args = sigs(f.args);
    auto results = sigs(f.results);
    auto code = fbb.CreateVector(f.bytecode);
    std::vector<uint32_t> offsets;
    std::vector<flatbuffers::Offset<flatbuffers::String>> locs;
    for (const auto& [o, l] : f.debug) {
      offsets.push_back(o);
      locs.push_back(fbb.CreateString(l));
    }
    auto dbg_off = f.debug.empty() ? 0 : fbb.CreateVector(offsets);
    auto dbg_loc = f.debug.empty() ? 0 : fbb.CreateVector(locs);
    functions.push_back(format::CreateFunction(fbb, name, f.exported, args, results, f.i32_count,
                                               f.ref_count, code, dbg_off, dbg_loc,
                                               static_commands_.count(f.name) != 0));
  }
  std::vector<flatbuffers::Offset<format::RodataSegment>> rodata;
  for (const auto& [name, data] : rodata_) {
    auto n = fbb.CreateString(name);
    fbb.ForceVectorAlignment(data.size(), 1, 64);
    auto d = fbb.CreateVector(data);
    rodata.push_back(format::CreateRodataSegment(fbb, n, d));
  }
  std::vector<flatbuffers::Offset<format::Executable>> executables;
  for (const Executable& e : executables_) {
    std::vector<flatbuffers::Offset<format::EntryPoint>> eps;
    for (const EntryPointDesc& ep : e.entry_points) {
      std::vector<format::Binding> bindings;
      for (const BindingDesc& b : ep.bindings) bindings.emplace_back(b.set, b.binding, b.readonly);
      eps.push_back(format::CreateEntryPointDirect(
          fbb, ep.name.c_str(), ep.debug_name.empty() ? nullptr : ep.debug_name.c_str(),
          &bindings, ep.push_constant_bytes, &ep.workgroup_size));
    }
    std::vector<flatbuffers::Offset<flatbuffers::String>> locs;
    for (const std::string& l : e.source_locations) locs.push_back(fbb.CreateString(l));
    executables.push_back(format::CreateExecutableDirect(fbb, &e.spirv, &eps, &locs));
  }
  std::vector<flatbuffers::Offset<format::Global>> globals;
  for (const auto& [name, is_ref] : globals_) {
    globals.push_back(format::CreateGlobalDirect(fbb, name.c_str(), is_ref));
  }
  auto root = format::CreateModuleDirect(fbb, name_.c_str(), version_,
                                         static_cast<format::Features>(features_), &imports,
                                         &functions, &rodata, &executables, &globals, initializer_,
                                         /*integrity=*/1);
  format::FinishSizePrefixedModuleBuffer(fbb, root);
  std::vector<uint8_t> out(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  format::SealModule(&out);
  return out;
}

}  // namespace kiln::vm::testing
