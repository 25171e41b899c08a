#include "vm/static_commands.h"

#include <cstring>

namespace kiln::vm {

namespace {

bool AllowedImport(std::string_view name) {
  static const char* const kAllowed[] = {
      "hal.buffer_view.buffer",        "hal.buffer_view.offset",
      "hal.buffer_view.create",        "hal.executable.lookup",
      "hal.command_buffer.create",     "hal.command_buffer.push_constants",
      "hal.command_buffer.dispatch",   "hal.command_buffer.barrier",
      "hal.command_buffer.copy",       "hal.command_buffer.fill",
      "hal.command_buffer.execute",    "hal.buffer_view.output_storage",
      "hal.allocator.allocate_cached", "hal.buffer_view.take_or_allocate",
      "hal.buffer_view.take_or_clone", "hal.command_buffer.host_barrier",
  };
  for (const char* a : kAllowed) {
    if (name == a) return true;
  }
  return false;
}

}  // namespace

Status CheckStaticCommands(ByteSpan code, const std::string_view* import_names, size_t import_count) {
  DecodedInstruction inst;
  for (uint32_t pc = 0; pc < code.size; pc += inst.length) {
    KILN_RETURN_IF_ERROR(DecodeInstruction(code, pc, &inst));
    switch (inst.opcode) {
      case Opcode::CALL_IMPORT: {
        uint32_t k = inst.operands[0].value;
        std::string_view name = k < import_count ? import_names[k] : "(out of range)";
        if (k < import_count && AllowedImport(name)) break;
        return DataLossError(
            "offset 0x%04x: CALL_IMPORT %.*s is not allowed in a function marked static_commands",
            pc, static_cast<int>(name.size()), name.data());
      }
      case Opcode::CALL:
      case Opcode::GLOBAL_STORE_REF:
        return DataLossError("offset 0x%04x: %s is not allowed in a function marked static_commands",
                             pc, inst.info->name);
      default:
        break;
    }
  }
  return OkStatus();
}

bool StoresGlobalRef(ByteSpan code) {
  DecodedInstruction inst;
  for (uint32_t pc = 0; pc < code.size; pc += inst.length) {
    if (!DecodeInstruction(code, pc, &inst).ok()) return true;
    if (inst.opcode == Opcode::GLOBAL_STORE_REF) return true;
  }
  return false;
}

}  // namespace kiln::vm
