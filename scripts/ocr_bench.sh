#!/usr/bin/env bash
# Latency of kiln-ocr vs @gutenye/ocr-node on one image, interleaved runs.
#
#   scripts/ocr_bench.sh DET.kiln CLS.kiln REC.kiln IMAGE [ROUNDS]
#
# Each round runs kiln-ocr once (the image twice in one process; the second,
# warm pass is reported) and then scripts/ocr_reference.mjs once (--repeat=2,
# the second run reported), so both see the same machine load. Prints every
# round's stage times and the medians. Wall-clock only: the processes' setup
# (device, pipelines, ORT sessions) is excluded from both.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
det="$1" cls="$2" rec="$3" img="$4" rounds="${5:-3}"
bin="${KILN_BUILD:-$root/build/default}"
keys="$root/.cache/models/ppocr_keys_v1.txt"
tmp=$(mktemp -d)
for r in $(seq "$rounds"); do
  "$bin/samples/ocr/kiln-ocr" --det="$det" --cls="$cls" --rec="$rec" --keys="$keys" \
    "$img" "$img" 2>&1 >/dev/null | grep '^time' | tail -1 | tee -a "$tmp/kiln"
  node "$root/scripts/ocr_reference.mjs" "$img" --repeat=2 2>&1 >/dev/null | grep '^time' | tail -1 \
    | tee -a "$tmp/ref"
done
med() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
field() { sed -E "s/.*$1 ([0-9.]+) ms.*/\\1/"; }
echo "median of $rounds rounds (ms):"
printf '  kiln-ocr: det %s  cls %s  rec %s  total %s\n' \
  "$(field 'det' < "$tmp/kiln" | med)" "$(field 'cls' < "$tmp/kiln" | med)" \
  "$(field 'rec' < "$tmp/kiln" | med)" "$(field 'total' < "$tmp/kiln" | med)"
printf '  ocr-node: det %s  cls -  rec %s  total %s\n' \
  "$(field 'det' < "$tmp/ref" | med)" "$(field 'rec' < "$tmp/ref" | med)" \
  "$(field 'total' < "$tmp/ref" | med)"
rm -rf "$tmp"
