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
log="$root/build/$preset/ctest-output.log"
set +e
ctest --preset "$preset" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# ONNX's backend node tests (libonnx-testdata): how many pass on Vulkan, out
# of every test ONNX ships (a skipped or unclaimed test does not count).
node_root=/usr/share/libonnx-testdata/data/node
if grep -q 'OnnxNodeTest' "$log" && [ -d "$node_root" ]; then
  passed=$(grep -cE 'OnnxNodeTest\.MatchesReference/.* Passed' "$log" || true)
  total=$(find "$node_root" -mindepth 1 -maxdepth 1 -type d | wc -l)
  echo "node tests: $passed/$total pass"
fi
exit "$rc"
