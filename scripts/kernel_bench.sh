#!/usr/bin/env bash
# GMAC/s of single-anchor conv / matmul dispatches, new schedules vs the
# legacy ones (KILN_CODEGEN_SCHEDULES=legacy), interleaved in one run.
#
#   scripts/kernel_bench.sh [ROUNDS] [NAME...]
#
# Writes the benchmark kernels (scripts/gen_kernel_bench.py: 1x1, 3x3,
# 3x3 stride 2, depthwise, matmul; each with a relu epilogue), compiles each
# twice (new, legacy), then runs kiln-bench on new and legacy alternately for
# ROUNDS rounds (default 3) and prints the median time per invoke (each
# round itself a median of 5 kiln-bench repetitions) and
# GMAC/s = MACs / time. The dispatch is the only work in each module, so the
# figure includes one dispatch's submission overhead (~20 us on lavapipe).
# KILN_EXACT_FMA=0 in the environment turns the exact-FMA emulation off at
# run time (lavapipe), as for any module.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${KILN_BUILD:-$root/build/default}"
rounds="${1:-3}"
shift || true
tmp=$(mktemp -d)
python3 "$root/scripts/gen_kernel_bench.py" "$tmp"
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=($(cd "$tmp" && ls *.kir | sed 's/\.kir$//')); fi
for n in "${names[@]}"; do
  "$bin/compiler/tools/kiln-compile" "$tmp/$n.kir" -o "$tmp/$n.new.kiln"
  KILN_CODEGEN_SCHEDULES=legacy "$bin/compiler/tools/kiln-compile" "$tmp/$n.kir" -o "$tmp/$n.old.kiln"
done
run() {  # module args -> median milliseconds per synchronous invoke (5 repetitions)
  # shellcheck disable=SC2046
  "$bin/tools/kiln-bench" --module="$1" $(cat "$2") --benchmark_repetitions=5 \
    --benchmark_min_time=0.1 --benchmark_report_aggregates_only=true --benchmark_format=csv \
    2>/dev/null | grep -v async | grep median |
    awk -F, '{ t = $3; u = $5; gsub(/"/, "", u);
      if (u == "us") t /= 1000; else if (u == "ns") t /= 1e6; printf "%.3f\n", t }'
}
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
printf '%-10s %12s %12s %10s %10s %8s\n' kernel old_ms new_ms old_GMACs new_GMACs speedup
for n in "${names[@]}"; do
  : > "$tmp/$n.old.t"; : > "$tmp/$n.new.t"
  for r in $(seq "$rounds"); do
    run "$tmp/$n.old.kiln" "$tmp/$n.args" >> "$tmp/$n.old.t"
    run "$tmp/$n.new.kiln" "$tmp/$n.args" >> "$tmp/$n.new.t"
  done
  macs=$(cat "$tmp/$n.macs")
  old=$(med < "$tmp/$n.old.t") new=$(med < "$tmp/$n.new.t")
  awk -v n="$n" -v o="$old" -v w="$new" -v m="$macs" 'BEGIN {
    printf "%-10s %12.2f %12.2f %10.3f %10.3f %7.2fx\n", n, o, w, m / o / 1e6, m / w / 1e6, o / w }'
done
rm -rf "$tmp"
