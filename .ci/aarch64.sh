#!/usr/bin/env bash
# The aarch64 stage of CI: cross-builds the runtime, the tools (kiln-run,
# kiln-test, kiln-bench, kiln-dump) and the runtime tests with preset
# aarch64-runtime (flatc and glslangValidator from the host), then runs under
# qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR), lavapipe-arm64 with
# the validation layer (sync validation) on:
#   - every runtime test: labels runtime-unit (ISA, module and bytecode
#     verifiers, topology check, .npy, flags, kiln-test's manifest and
#     comparison) and vulkan (HAL conformance suite, Vulkan driver, VM + HAL,
#     ownership, C API, async/fences, multi-module stress);
#   - kiln-test on the ONNX node bundle made by the host build
#     (build/default/tools/kiln-test/node_bundle, ctest kiln_test.bundle):
#     all of it, or KILN_QEMU_BUNDLE_FILTER;
#   - scripts/size_report.sh: the bytes the runtime adds to a minimal app,
#     failing when over the budget written in that script; then the same for
#     the code-only build (KILN_STATUS_MESSAGES=OFF) against its own budget,
#     whose app must compute sigmoid(0) = 0.5 on the node bundle's
#     test_sigmoid module and fail that module with one byte inverted with
#     DATA_LOSS.
# Needs KILN_CROSS=1 scripts/setup.sh (CI=true implies it) and the host build
# of scripts/test.sh (for the bundle).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
KILN_CROSS=1 scripts/setup.sh >/dev/null
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
bundle="$root/build/default/tools/kiln-test/node_bundle"
[ -f "$bundle/manifest.txt" ] || { echo "error: no $bundle (run scripts/test.sh first)" >&2; exit 1; }
# Left out by default (KILN_QEMU_BUNDLE_FILTER overrides): the 13 node tests
# with an f16 input (names with FLOAT16/float16). Under qemu-aarch64 with
# lavapipe for aarch64 each crashes with SIGSEGV inside the driver's shader
# JIT, not in Kiln: gdb-multiarch on `qemu-aarch64 -g` shows the fault in
# libLLVM-15.so.1, llvm::SelectionDAG::LegalizeTypes() <- SelectionDAGISel
# <- MCJIT::emitObject, while llvmpipe compiles the shader's f16 -> f32
# conversion for aarch64 (reproduce: kiln-test BUNDLE
# --filter='test_cast_FLOAT16_to_FLOAT$'; a whole-bundle run dies at the
# first). A driver (LLVM 15 AArch64 backend) defect; the 13 pass on x86
# lavapipe in the default stage (OnnxNodeTest and kiln_test.node_bundle).
# The other new dtypes (f64, bf16, i16, u16, u32, u64: 29 tests) run here.
default_filter='^(?!node\.test_.*(FLOAT16|float16))'
cmake --preset aarch64-runtime -DKILN_TEST_BUNDLE="$bundle" \
  -DKILN_TEST_BUNDLE_FILTER="${KILN_QEMU_BUNDLE_FILTER:-$default_filter}" >/dev/null
cmake --build --preset aarch64-runtime
ctest --preset aarch64-runtime -L 'runtime-unit|vulkan'
# The runtime's footprint on aarch64 against its budget (fails over it).
scripts/size_report.sh
# The code-only build (statuses without messages, base/status.h): its
# footprint against its own budget, and the app run on real modules: the
# minimal app feeds zeros, so test_sigmoid's first result is sigmoid(0) = 0.5;
# a garbled module must fail with the code's name as its message.
codes_build="$root/build/aarch64-size-codes"
KILN_SIZE_STATUS_MESSAGES=OFF scripts/size_report.sh "$codes_build" \
  "$bundle/node.test_sigmoid/module.kiln" | tee "$codes_build.log"
grep -q 'result\[0\]\[0\] = 0.500000$' "$codes_build.log" ||
  { echo "error: the code-only app did not compute sigmoid(0) = 0.5" >&2; exit 1; }
# The garbled module: test_sigmoid's with its middle byte inverted (the
# module's integrity hash covers every byte, so loading must fail).
garbled="$codes_build/garbled.kiln"
python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) // 2] ^= 0xFF; open(sys.argv[2], "wb").write(d)' \
  "$bundle/node.test_sigmoid/module.kiln" "$garbled"
if err=$(VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json \
         qemu-aarch64-static -L / "$codes_build/size/app.stripped" "$garbled" 2>&1); then
  echo "error: the code-only app loaded a garbled module" >&2; exit 1
fi
[ "$err" = "error: DATA_LOSS" ] ||
  { echo "error: the code-only app's error for a garbled module is '$err', not 'error: DATA_LOSS'" >&2; exit 1; }
echo "  code-only build: sigmoid(0) = 0.5, and a garbled module fails with DATA_LOSS"
