#!/usr/bin/env bash
# Issue 13 item 5's table, in one run, for the models of issue 13 (PP-OCR det
# and rec, cls, embedding, melspectrogram; docs/architecture.md, "Measuring
# memory").
#
#   scripts/memory_report.sh [--models=det,rec,cls,embedding,melspectrogram]
#                            [--rounds=3] [--reps=3] [--min-time=0.2] [--no-latency]
#                            [--compile-flag=--fuse-pad ...] [--build=DIR]
#
# For each model, with the golden inputs and input shapes of tests/golden/
# (the same models, shapes and compile flags as scripts/bench.sh):
#   - kiln-compile --report: the transient arena against its liveness lower
#     bound (transient_live_peak_bytes: the most transient bytes live at one
#     step of the compiled schedule; arena/bound is the goal's ratio, <= 1.05),
#     the barriers' byte coverage (barrier_bytes, and ranges that run to the
#     end of a buffer of unknown length), the host-read barriers and theirs;
#   - kiln-run --repeat=2 --stats-steady (the second invoke): dispatches,
#     copies and copy bytes, device_peak_bytes, barriers recorded;
#   - latency: kiln-bench's median synchronous invoke, --rounds rounds, each
#     running every model once (interleaved, so all see the same load); the
#     table shows the median of the rounds.
# --compile-flag passes a flag to kiln-compile (repeatable), e.g. --fuse-pad.
# Needs a Release build (cmake --build --preset default) and node. For lavapipe
# figures without validation: VK_INSTANCE_LAYERS= KILN_VALIDATION=0 in the
# environment. Timings on a shared machine drift 20-40% between runs: compare
# only numbers from one run.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
command -v node >/dev/null || { echo "memory_report.sh: node not found (scripts/setup.sh installs it)" >&2; exit 1; }
exec node "$root/scripts/memory_report.mjs" "$@"
