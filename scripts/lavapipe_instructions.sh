#!/usr/bin/env bash
# Instructions per steady-state invoke on lavapipe, counted by callgrind: a
# deterministic speed figure for A/B comparisons on a shared machine, where
# timings drift 20-40% between runs (docs/architecture.md, "Measuring speed").
#
#   scripts/lavapipe_instructions.sh MODULE.kiln INPUT_SPEC [REPEAT]
#
# Runs `kiln-run --module=MODULE --input=INPUT_SPEC --repeat=REPEAT` (default
# 3) under valgrind's callgrind with LP_NUM_THREADS=0, so lavapipe runs every
# shader on its queue thread, validation off. kiln-run turns instrumentation
# on only around the invokes after the first (client requests), so pipeline
# creation and the first invoke are not counted. Prints, per invoke:
#   host       the calling thread (Kiln's VM, HAL and the Vulkan calls)
#   device     every other thread: lavapipe's queue thread executing the
#              command buffer (the JIT-compiled shaders, barriers, copies)
# Instruction counts measure work, not time: a load that misses the cache
# counts as one. Use them to compare two builds of the same model.
# Needs valgrind (scripts/setup.sh installs it) and a build (KILN_BUILD,
# default build/default). Takes about 1 minute for cls, 5 for PP-OCRv4 rec.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -ge 2 ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
module=$1 input=$2 repeat=${3:-3}
build=${KILN_BUILD:-$root/build/default}
command -v valgrind >/dev/null || { echo "lavapipe_instructions.sh: valgrind not found" >&2; exit 1; }
icd=/usr/share/vulkan/icd.d/lvp_icd.$(uname -m).json
[ -f "$icd" ] || { echo "lavapipe_instructions.sh: no lavapipe ICD ($icd)" >&2; exit 1; }
# kiln-run runs in a scratch directory: make an @file input absolute.
case "$input" in *@*) f=${input#*@}; input="${input%%@*}@$(realpath "$f")" ;; esac
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$out" && VK_DRIVER_FILES="$icd" VK_INSTANCE_LAYERS= KILN_VALIDATION=0 LP_NUM_THREADS=0 \
  valgrind --tool=callgrind --instr-atstart=no --separate-threads=yes \
  "$build/tools/kiln-run" --module="$(realpath "$module")" --input="$input" --repeat="$repeat" \
  > run.log 2>&1) || { cat "$out/run.log" >&2; exit 1; }
invokes=$((repeat - 1))
# Client-request dumps (callgrind.out.PID.N-TT) hold the calling thread per
# invoke; the dump at exit (callgrind.out.PID-TT) every thread's remainder.
sum() { (cd "$out" && ls | grep -E "$1" | xargs -r cat) | awk '/^totals:/{s+=$2} END{print s+0}'; }
host=$(sum '^callgrind\.out\.[0-9]+\.[0-9]+-[0-9]+$')
device=$(sum '^callgrind\.out\.[0-9]+-[0-9]+$')
echo "module $(basename "$module"): $invokes invokes counted"
echo "host   instructions per invoke: $((host / invokes))"
echo "device instructions per invoke: $((device / invokes))"
