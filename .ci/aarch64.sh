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
#     failing when over the budget written in that script.
# Needs KILN_CROSS=1 scripts/setup.sh (CI=true implies it) and the host build
# of scripts/test.sh (for the bundle).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
KILN_CROSS=1 scripts/setup.sh >/dev/null
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
bundle="$root/build/default/tools/kiln-test/node_bundle"
[ -f "$bundle/manifest.txt" ] || { echo "error: no $bundle (run scripts/test.sh first)" >&2; exit 1; }
cmake --preset aarch64-runtime -DKILN_TEST_BUNDLE="$bundle" \
  -DKILN_TEST_BUNDLE_FILTER="${KILN_QEMU_BUNDLE_FILTER:-}" >/dev/null
cmake --build --preset aarch64-runtime
ctest --preset aarch64-runtime -L 'runtime-unit|vulkan'
# The runtime's footprint on aarch64 against its budget (fails over it).
scripts/size_report.sh
