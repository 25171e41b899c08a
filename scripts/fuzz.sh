#!/usr/bin/env bash
# Builds the libFuzzer targets (preset fuzz: clang, -fsanitize=fuzzer,address,
# undefined), generates their seed corpora from real models, and runs each
# target for SECONDS, printing execs, exec/s, coverage (cov/ft), corpus size and
# findings. Exit status 1 when any target found a crash, leak, timeout or OOM.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#     SECONDS   per target (default 60)
#     TARGET    module spirv_layout onnx_import npy input_spec (default: all)
#   KILN_FUZZ_JOBS=2      targets run at once (default 1)
#   KILN_FUZZ_WORK=DIR    corpora, findings and logs (default build/fuzz/work)
#
# Seeds (regenerated when missing, under $KILN_FUZZ_WORK/seeds; never
# committed): modules compiled by build/default's kiln-compile from
# .cache/models (cls, silero_vad, alexa, hey_rhasspy, melspectrogram) plus
# kiln-make-test-module's test module; the SPIR-V of those modules with each
# entry point's layout (kiln-fuzz-seeds); the small .cache/models ONNX files and
# libonnx-testdata's node models; tests/golden/*/*.npy; a few --input specs.
# Each target's corpus ($KILN_FUZZ_WORK/corpus/TARGET) persists between runs;
# findings go to $KILN_FUZZ_WORK/findings/TARGET/ (crash-*, leak-*, timeout-*,
# oom-*; slow-unit-* for inputs over 10 s, reported but not failing the run);
# reproduce one with build/fuzz/fuzz/kiln_fuzz_TARGET FILE.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

seconds="${1:-60}"
[ $# -gt 0 ] && shift
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(module spirv_layout onnx_import npy input_spec)
jobs="${KILN_FUZZ_JOBS:-1}"
work="${KILN_FUZZ_WORK:-$root/build/fuzz/work}"
bin="$root/build/fuzz/fuzz"
default_bin="$root/build/default"

# --- build -------------------------------------------------------------------
command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
t0=$(date +%s)
cmake --preset default >/dev/null
cmake --build --preset default --target kiln-compile kiln-make-test-module >/dev/null
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
echo "fuzz: build took $(( $(date +%s) - t0 )) s"

# --- seeds -------------------------------------------------------------------
seeds="$work/seeds"
if [ ! -f "$seeds/.done" ]; then
  rm -rf "$seeds"
  mkdir -p "$seeds"/{module,spirv_layout,onnx_import,npy,input_spec}
  "$default_bin/vm/kiln-make-test-module" "$seeds/module/vadd_test.kiln"
  models="$root/.cache/models"
  compile() { # name onnx flags...
    local name="$1" onnx="$models/$2"; shift 2
    if [ -f "$onnx" ]; then
      "$default_bin/compiler/tools/kiln-compile" "$onnx" "$@" -o "$seeds/module/$name.kiln" >/dev/null ||
        echo "fuzz: seed $name did not compile" >&2
    else
      echo "fuzz: $onnx missing (scripts/setup.sh fetches it); seed $name skipped" >&2
    fi
  }
  compile cls ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape=x=1x3x48x192
  compile silero_vad silero_vad.onnx --constant-input=sr=16000 --input-shape=input=1x512 \
    --input-shape=h=2x1x64 --input-shape=c=2x1x64
  compile alexa alexa_v0.1.onnx
  compile hey_rhasspy hey_rhasspy_v0.1.onnx
  compile melspectrogram melspectrogram.onnx --input-shape=input=1x1280
  "$bin/kiln-fuzz-seeds" "$seeds/spirv_layout" "$seeds"/module/*.kiln
  # ONNX: real models up to 1.2 MB, and every node model of libonnx-testdata.
  find "$models" -maxdepth 1 -name '*.onnx' -size -1200k -exec cp {} "$seeds/onnx_import/" \; 2>/dev/null || true
  node=/usr/share/libonnx-testdata/data/node
  if [ -d "$node" ]; then
    for m in "$node"/*/model.onnx; do cp "$m" "$seeds/onnx_import/$(basename "$(dirname "$m")").onnx"; done
  fi
  for f in "$root"/tests/golden/*/*.npy; do
    cp "$f" "$seeds/npy/$(basename "$(dirname "$f")")_$(basename "$f")"
  done
  i=0
  for spec in "2x2xf32=1,2,3,4" "1x16x96xf32=0.5" "3xi64=-1,0,9223372036854775807" "f16=1.5" \
              "2xbool=true,false" "4xu8=0,1,254,255" "1x3xf64=1e308,-1e-308,nan" "2xi1=1,0" \
              "0x4xf32=" "2x3xi8=-128,127,0,1,2,3" "i32=7" "2xf32=inf,-inf"; do
    printf '%s' "$spec" > "$seeds/input_spec/spec_$i"; i=$((i + 1))
  done
  touch "$seeds/.done"
fi
for t in module spirv_layout onnx_import npy input_spec; do
  echo "fuzz: seeds $t: $(find "$seeds/$t" -type f | wc -l) files, $(du -sh "$seeds/$t" | cut -f1)"
done

# --- run ---------------------------------------------------------------------
run_target() { # target -> writes $work/logs/target.log
  local t="$1" exe="$bin/kiln_fuzz_$1"
  mkdir -p "$work/corpus/$t" "$work/findings/$t" "$work/logs"
  local extra=()
  # Real modules are up to ~1 MB; mutations may grow them a little.
  [ "$t" = module ] && extra+=(-max_len=2000000)
  [ "$t" = onnx_import ] && extra+=(-max_len=1300000)
  set +e
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=1:allocator_may_return_null=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$exe" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="$work/findings/$t/" "${extra[@]}" \
      "$work/corpus/$t" "$seeds/$t" >"$work/logs/$t.log" 2>&1
  echo $? >"$work/logs/$t.rc"
  set -e
}

summary() { # target
  local t="$1" log="$work/logs/$1.log" line execs rate findings
  line=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  findings=$(find "$work/findings/$t" -type f ! -name 'slow-unit-*' | wc -l)
  printf '%-13s execs %-9s exec/s %-6s %s | corpus %s files | findings %s, slow units %s (rc %s)\n' \
    "$t" "$execs" "$rate" "$(echo "$line" | grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo 'cov: ? ft: ?')" \
    "$(find "$work/corpus/$t" -type f | wc -l)" "$findings" \
    "$(find "$work/findings/$t" -type f -name 'slow-unit-*' | wc -l)" "$(cat "$work/logs/$t.rc")"
  if [ "$(cat "$work/logs/$t.rc")" != 0 ]; then
    grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" | head -5
    grep -E 'Test unit written to' "$log" | head -3
  fi
}

echo "fuzz: ${targets[*]}, ${seconds} s each, $jobs at a time (logs: $work/logs)"
pids=()
for t in "${targets[@]}"; do
  [ -x "$bin/kiln_fuzz_$t" ] || { echo "fuzz: no target $t ($bin/kiln_fuzz_$t)" >&2; exit 2; }
  run_target "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$jobs" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done

status=0
for t in "${targets[@]}"; do
  summary "$t"
  [ "$(cat "$work/logs/$t.rc")" = 0 ] || status=1
done
exit "$status"
