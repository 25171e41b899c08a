// Test-only helper: builds small Kiln modules with FlatBufferBuilder so VM,
// runtime and tool tests stay short.
//
//   testing::ModuleBuilder b("m");
//   int alloc = b.AddHalImport("hal.allocator.allocate");
//   BytecodeEncoder e; ... e.Ret({Reg::Ref(0)});
//   b.AddFunction("main", {{"x", DType::kF32, {4}}}, {{"y", DType::kF32, {4}}},
//                 /*i32=*/4, /*ref=*/4, e);
//   std::vector<uint8_t> bytes = b.Finish();  // size-prefixed, identifier KILN
#ifndef KILN_VM_TESTING_MODULE_BUILDER_H_
#define KILN_VM_TESTING_MODULE_BUILDER_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "vm/isa.h"

namespace kiln::vm::testing {

struct TensorDesc {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint8_t ownership = 0;   // format::Ownership
  int tied_result = -1;
};

struct BindingDesc {
  uint32_t set = 0;
  uint32_t binding = 0;
  bool readonly = false;
};

struct EntryPointDesc {
  std::string name = "main";
  std::string debug_name;
  std::vector<BindingDesc> bindings;
  uint32_t push_constant_bytes = 0;
  std::vector<uint32_t> workgroup_size = {1, 1, 1};
};

class ModuleBuilder {
 public:
  explicit ModuleBuilder(std::string name) : name_(std::move(name)) {}

  // Import with an explicit signature; returns its ordinal.
  int AddImport(const std::string& name, const std::string& signature);
  // Import of the native hal module with the signature from hal_imports.def.
  int AddHalImport(const std::string& name);
  // Returns the function ordinal. `encoder` is finished (must succeed).
  int AddFunction(const std::string& name, std::vector<TensorDesc> args,
                  std::vector<TensorDesc> results, uint32_t i32_count, uint32_t ref_count,
                  BytecodeEncoder& encoder, bool exported = true,
                  std::vector<std::pair<uint32_t, std::string>> debug = {});
  int AddFunctionBytes(const std::string& name, std::vector<TensorDesc> args,
                       std::vector<TensorDesc> results, uint32_t i32_count, uint32_t ref_count,
                       std::vector<uint8_t> bytecode, bool exported = true,
                       std::vector<std::pair<uint32_t, std::string>> debug = {});
  int AddRodata(const std::string& name, std::vector<uint8_t> data);
  int AddExecutable(std::vector<uint32_t> spirv, std::vector<EntryPointDesc> entry_points,
                    std::vector<std::string> source_locations = {});
  int AddGlobal(const std::string& name, bool is_ref = true);
  void SetInitializer(int function) { initializer_ = function; }
  void SetVersion(uint32_t version) { version_ = version; }
  void SetFeatures(uint32_t features) { features_ = features; }
  // Marks function `name` static_commands (vm/static_commands.h).
  void SetStaticCommands(const std::string& name) { static_commands_.insert(name); }

  // Serializes the module (size-prefixed, file identifier "KILN").
  std::vector<uint8_t> Finish() const;

 private:
  struct Function {
    std::string name;
    std::vector<TensorDesc> args, results;
    uint32_t i32_count, ref_count;
    std::vector<uint8_t> bytecode;
    bool exported;
    std::vector<std::pair<uint32_t, std::string>> debug;
  };
  struct Executable {
    std::vector<uint32_t> spirv;
    std::vector<EntryPointDesc> entry_points;
    std::vector<std::string> source_locations;
  };
  std::string name_;
  uint32_t version_ = 1;
  uint32_t features_ = 0;
  int initializer_ = -1;
  std::vector<std::pair<std::string, std::string>> imports_;
  std::vector<Function> functions_;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> rodata_;
  std::vector<Executable> executables_;
  std::vector<std::pair<std::string, bool>> globals_;
  std::set<std::string> static_commands_;
};

}  // namespace kiln::vm::testing

#endif  // KILN_VM_TESTING_MODULE_BUILDER_H_
