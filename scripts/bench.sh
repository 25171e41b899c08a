#!/usr/bin/env bash
# Kiln vs ONNX Runtime on every real model, interleaved (docs/architecture.md,
# "Measuring speed").
#
#   scripts/bench.sh [--rounds=5] [--reps=3] [--min-time=0.3] [--models=cls,det,...|none]
#                    [--profile-invokes=10] [--no-profile] [--out=FILE.tsv] [--build=DIR]
#                    [MODEL.onnx --input-shape=NAME=D0xD1x... ...] ...
#
# For each model: compiles it with kiln-compile (the golden input shapes of
# tests/golden/<dir>/), profiles its dispatches once (kiln-bench --per-dispatch:
# dispatches per invoke and the conv/matmul GMAC/s), then runs --rounds rounds,
# each a Kiln measurement (kiln-bench: --reps repetitions of synchronous
# kiln_invoke filling --min-time seconds each; their median) followed by the
# same measurement of InferenceSession.run (scripts/bench_ort.mjs,
# onnxruntime-node, CPU, 1 thread). Reported: the median of the rounds for
# each side and their ratio. Inputs are the golden inputs; an extra .onnx
# model gets seeded uniform [-1, 1] float32 inputs of the shapes given (one
# --input-shape per graph input, after the model's path).
#
# Output: a table on stdout and a TSV (default build/default/bench/bench.tsv;
# columns in scripts/bench.mjs TSV_COLUMNS). Needs a Release build
# (cmake --build --preset default), node and onnxruntime-node
# (scripts/setup.sh installs it into .cache/ort; KILN_ORT_DIR overrides).
# Timings on a shared machine drift 20-40% between runs: compare only numbers
# from one run (the rounds interleave Kiln and ORT so both see the same load).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
case "${1:-}" in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
esac
command -v node >/dev/null || { echo "bench.sh: node not found (scripts/setup.sh installs it)" >&2; exit 1; }
exec node "$root/scripts/bench.mjs" "$@"
