// Bytecode emission and FlatBuffer serialization: the last step of
// kiln-compile. Input: a module at the stream level (compiler/ir/ops.h):
// flow.executable ops holding dispatch bodies, and func.func bodies made of
// stream.tensor.import/export, stream.async.{constant, dispatch, clone,
// transfer, splat, fill, copy, update, slice, alloca} and func.return.
// Control flow (scf.*, cf.*), globals and calls are not emitted yet (an
// kUnimplemented error names the op). Output: the bytes of a size-prefixed
// `model.kiln` (schemas/kiln_module.fbs), sealed with its integrity hash.
//
// What it decides, ahead of time:
//  - constant pool: every used tensor.constant is packed into one 256-byte
//    aligned rodata segment, uploaded once by the module initializer into a
//    device buffer held in global 0;
//  - memory planning of transients: dispatch results that do not escape share
//    one arena buffer (transient_planner.h) allocated per invocation; results
//    that escape get their own host-visible buffers (external lifetime);
//  - tied results and slices are views of their operand's allocation; a
//    result that aliases an argument is returned as a view of the caller's
//    buffer;
//  - barriers: a buffer barrier covering exactly the byte ranges of the
//    hazard (read-after-write, write-after-write, write-after-read on reused
//    arena bytes) is recorded only where one is needed;
//  - one command buffer per invocation, submitted once.
#ifndef KILN_COMPILER_BACKEND_EMIT_MODULE_H_
#define KILN_COMPILER_BACKEND_EMIT_MODULE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "compiler/codegen/codegen.h"
#include "compiler/ir/ir.h"

namespace kiln::backend {

struct EmitOptions {
  std::string module_name = "module";
  codegen::CodegenOptions codegen;
  // When set, every generated GLSL shader is written here.
  std::ostream* glsl_dump = nullptr;
};

// Statistics of the emitted module (kiln-compile --stats-compile).
struct EmitReport {
  int dispatches = 0;
  int executables = 0;        // shared SPIR-V modules (shader_dedupe.h)
  int entry_points = 0;       // distinct (shader, specialization) pairs: pipelines
  int64_t constant_bytes = 0;
  int64_t arena_bytes = 0;    // planned transient arena of `main`
  int64_t unplanned_transient_bytes = 0;  // sum of transient sizes (no reuse)
  // The most transient bytes live at one step of a function's schedule (the
  // arena's lower bound: no plan of that schedule needs less), the largest
  // over the functions (--schedule-allocation's live_bytes_peak).
  int64_t live_bytes_peak = 0;
  // stream.resource.* ops from --resource-lifetime, and how many deallocas /
  // releases dropped registers of a caller allocation (the rest end arena
  // lifetimes in the transient plan).
  int deallocas = 0, retains = 0, releases = 0, dropped_registers = 0;
  // Copy commands in the module's functions, counted where they are written
  // (once per op, not per execution): those of IR copy ops
  // (stream.async.clone, transfer, update, copy). The backend adds none of
  // its own: emission fails (kInternal) where a value is not in the storage
  // it must flow into. The runtime's own copies (take_or_clone of a consumed
  // argument the caller still shares) are not counted.
  int ir_copies = 0;
  // Result copies that a group of results of one value shares
  // (--materialize-result-copies' `shared_result`; not in ir_copies): made
  // only into output storage the caller supplies, or where the results
  // sharing the copy are all in the caller's output storage. kiln_invoke
  // without output storage makes none of them.
  int output_storage_copies = 0;
};

// Errors: kUnimplemented for ops that cannot be lowered (named, with loc);
// codegen errors are passed through.
StatusOr<std::vector<uint8_t>> EmitModule(ir::Module& module, const EmitOptions& options,
                                          EmitReport* report = nullptr);

}  // namespace kiln::backend

#endif  // KILN_COMPILER_BACKEND_EMIT_MODULE_H_
