#!/usr/bin/env bash
# Sets up, builds and runs every test (unit, lit, HAL conformance, ONNX node
# tests, real-model goldens, bad-input tests), with the Vulkan validation
# layers on for every Vulkan test.
#
#   scripts/test.sh            default preset (RelWithDebInfo)
#   KILN_PRESET=asan scripts/test.sh -L runtime   ASan+UBSan build, runtime tests only
# Extra arguments are passed to ctest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
preset="${KILN_PRESET:-default}"

"$root/scripts/setup.sh"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset" "$@"
