// The runtime's check of Function.static_commands (schemas/kiln_module.fbs).
//
// The compiler marks a function static when its command sequence does not
// depend on run-time values (compiler/analysis/command_sequence.h); the VM
// then records its command buffer once per argument binding set and replays
// it (vm/replay.h). A module is untrusted input, so the loader checks the
// claim on the bytecode itself: a static function may only
//   - compute i32 values (constants, arithmetic, moves, compares, branches);
//   - load globals and rodata (GLOBAL_STORE_REF is refused: global refs may
//     only change in the initializer);
//   - call these native imports: buffer_view.buffer / offset / create,
//     executable.lookup, command_buffer.create / push_constants / dispatch /
//     barrier / host_barrier / copy / fill / execute, and the ownership imports
//     buffer_view.output_storage, allocator.allocate_cached,
//     buffer_view.take_or_allocate, buffer_view.take_or_clone.
// No CALL or import of a bytecode function, no host read of device data
// (hal.buffer.load), no blocking execute_and_wait, no fresh allocation
// (allocator.allocate, allocate_initialized, buffer.subspan). FAIL is
// allowed: an invocation that fails stores no recording.
// Everything such a function binds is then an argument, an output storage,
// a global, or a buffer returned by an ownership import, which is exactly
// what the replay path compares.
#ifndef KILN_VM_STATIC_COMMANDS_H_
#define KILN_VM_STATIC_COMMANDS_H_

#include <string>
#include <vector>

#include "base/status.h"
#include "vm/isa.h"

namespace kiln::vm {

// OK when `code` (already verified by VerifyBytecode) meets the rules above;
// kDataLoss "offset 0x0012: CALL_IMPORT hal.buffer.load is not allowed in a
// function marked static_commands" otherwise. `import_names` are the
// module's imports by index. Cost: one pass over the bytecode.
Status CheckStaticCommands(ByteSpan code, const std::string_view* import_names, size_t import_count);

// Whether `code` stores a global ref (GLOBAL_STORE_REF).
bool StoresGlobalRef(ByteSpan code);

}  // namespace kiln::vm

#endif  // KILN_VM_STATIC_COMMANDS_H_
