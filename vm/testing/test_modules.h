// Test-only modules shared by the VM, C API and tool tests.
#ifndef KILN_VM_TESTING_TEST_MODULES_H_
#define KILN_VM_TESTING_TEST_MODULES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kiln::vm::testing {

// Elements per tensor in the vadd module.
constexpr int kVaddCount = 100;

// Module "vadd_test" exercising every hal import, with one executable (the
// CTS vadd shader: c = a + b, 3 bindings, 4 push-constant bytes, local size 64)
// and a rodata segment "bias" = {0.5, 1.5, 2.5, ...} (bias[i] = i + 0.5).
//
//   __init():  global "bias" = allocate_initialized(rodata "bias")
//   main(a: f32[100], b: f32[100]) -> (c: f32[100], d: f32[100], e: f32[8])
//     c = (a + b) + bias            two dispatches through a device-local temp
//     d = fill(1.0) then copy a[0..50) over the first half
//     e = c[4..12) through hal.buffer.subspan
//   i32_only() -> ()                 pure i32 arithmetic, FAILs if wrong
//
// `async_end`: main ends with hal.command_buffer.execute(cb, final) instead
// of execute_and_wait (submits without blocking; the runtime's timeline does
// the rest), as compiled modules do.
std::vector<uint8_t> BuildVaddModule(const uint32_t* vadd_spirv, size_t word_count,
                                     bool async_end = false);

}  // namespace kiln::vm::testing

#endif  // KILN_VM_TESTING_TEST_MODULES_H_
