#!/usr/bin/env bash
# The aarch64 stage of CI: cross-builds the runtime, the tools (kiln-run,
# kiln-test, kiln-bench) and the runtime tests with preset aarch64-runtime
# (flatc and glslangValidator from the host), then runs under
# qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR):
#   - every runtime test without a device (label runtime-unit: ISA, module
#     and bytecode verifiers, topology check, .npy, kiln-test's manifest and
#     comparison): 47 tests, seconds;
#   - with KILN_QEMU_VULKAN=1, the Vulkan subset on lavapipe-arm64 with the
#     validation layer (sync validation) on: the HAL conformance suite and
#     the Vulkan driver tests, and kiln-test on the host-made node bundle
#     (build/default/tools/kiln-test/node_bundle) filtered to
#     KILN_QEMU_BUNDLE_FILTER. Off by default: on Debian 12 (qemu 7.2,
#     Mesa 22.3.6, LLVM 15) lavapipe's vkCreateDevice does not return under
#     qemu-aarch64-static (a 20-line C program that only creates the device
#     ran 20+ minutes), so these runs would only hit their timeouts.
# Needs KILN_CROSS=1 scripts/setup.sh (CI=true implies it) and, for the
# bundle, the host build of scripts/test.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
KILN_CROSS=1 scripts/setup.sh >/dev/null
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
bundle="$root/build/default/tools/kiln-test/node_bundle"
filter="${KILN_QEMU_BUNDLE_FILTER:-^node\\.test_(abs|add|relu|matmul_2d|softmax_axis_1|conv_with_strides_padding)\$}"
cmake --preset aarch64-runtime -DKILN_TEST_BUNDLE="$bundle" -DKILN_TEST_BUNDLE_FILTER="$filter" >/dev/null
cmake --build --preset aarch64-runtime
ctest --preset aarch64-runtime -L runtime-unit
if [ "${KILN_QEMU_VULKAN:-0}" = 1 ]; then
  ctest --preset aarch64-runtime -R '^(Drivers/|VulkanDriverTest|kiln_test\.bundle$)' --timeout 900
fi
