#!/usr/bin/env bash
# Runs Kiln's Vulkan tests and the model benchmark on a Linux x86-64 machine
# with a real GPU that has no build tools of ours: the binaries are built and
# staged here, then run there.
#
#   scripts/device/linux_gpu.sh stage [--build=build/default] [--candidate-compiler=PATH]
#                                  [--candidate-flags='FLAGS']
#                                  # here: writes .dev/pkg.tar.xz
#   scripts/device/linux_gpu.sh run OUT_DIR [--rounds=3] [--budget=S] [--no-tests]   # there, in the repo root
#
# stage: strips kiln-test, kiln-bench, kiln-compile, kiln-bundle and the
# Vulkan gtest binaries of the build, copies the shared libraries they need
# that a plain Ubuntu/Debian image lacks (Google Benchmark, protobuf, the
# ONNX protos), the Khronos validation layer (library and manifest) and the
# host-made ONNX node bundle, into one xz tarball. The target machine also
# needs the Vulkan loader (libvulkan1; docs/device.md), the repository's
# tests/golden, and the models in .cache/models (scripts/setup.sh).
#
# run: with validation and synchronization validation on (KILN_VALIDATION=1,
# any message fails the test): the node bundle and the golden bundle (made
# there from tests/golden) through kiln-test, then the Vulkan gtests; then for
# each real model of scripts/bench.mjs: kiln-compile, kiln-bench
# --per-dispatch (timestamp queries, validation off), and --rounds rounds of
# kiln-bench interleaved with ONNX Runtime (scripts/device/bench_ort.py,
# Python onnxruntime, CPU, 1 thread). Logs go to OUT_DIR/log.txt, the raw
# benchmark outputs to OUT_DIR/bench.tar.gz; summarize them here with
# With --candidate-compiler (another build's kiln-compile, e.g. a branch with
# new schedules), the conv-heavy models are also compiled by it and the two
# modules are benchmarked interleaved (A/B on the same GPU). --candidate-flags
# adds kiln-compile flags to the candidate's compiles (without
# --candidate-compiler, the candidate is this build's own kiln-compile), e.g.
# --candidate-flags=--unroll-in-module compares the conv blocks unrolled in
# the module with the default, unrolled by the driver. Steps stop starting once
# --budget seconds (default 480) have passed, so the run ends inside a
# machine's time limit. VK_DRIVER_FILES picks the driver (default: the first
# NVIDIA or other ICD manifest found).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
mode="${1:-}"; shift || true

gtests=(hal/cts/kiln_hal_cts_test hal/vulkan/kiln_hal_vulkan_test hal/kiln_hal_profiling_test
  runtime/kiln_allocator_test runtime/kiln_ownership_test runtime/kiln_async_test
  runtime/kiln_c_api_test runtime/kiln_api_info_test vm/kiln_vm_ownership_vulkan_test
  vm/kiln_vm_hal_module_vulkan_test tests/stress/kiln_multi_module_stress_test
  tests/e2e/kiln_elision_correctness_test tests/e2e/kiln_replay_test
  tests/e2e/kiln_async_invoke_test tests/e2e/kiln_output_storage_test
  tests/e2e/kiln_resource_lifetime_test)

if [ "$mode" = stage ]; then
  build="$root/build/default"
  extra=""; cflags=""
  for a in "$@"; do
    case "$a" in
      --build=*) build="${a#--build=}" ;;
      --candidate-compiler=*) extra="${a#--candidate-compiler=}" ;;
      --candidate-flags=*) cflags="${a#--candidate-flags=}" ;;
    esac
  done
  [ -n "$cflags" ] && [ -z "$extra" ] && extra="$build/compiler/tools/kiln-compile"
  s="$(mktemp -d)"; mkdir -p "$s/bin" "$s/lib" "$s/layer"
  for b in tools/kiln-test/kiln-test tools/kiln-test/kiln-bundle tools/kiln-bench \
           compiler/tools/kiln-compile "${gtests[@]}"; do
    strip -o "$s/bin/$(basename "$b")" "$build/$b" || exit 1
  done
  for l in libbenchmark.so.1debian libprotobuf.so.32 libonnx_proto.so.1 libonnx.so.1 libVkLayer_khronos_validation.so; do
    cp -L "/usr/lib/x86_64-linux-gnu/$l" "$s/lib/" || exit 1
  done
  [ -n "$extra" ] && { strip -o "$s/bin/kiln-compile-candidate" "$extra" || exit 1; }
  [ -n "$cflags" ] && echo "$cflags" > "$s/bin/candidate-flags"
  cp /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json "$s/layer/"
  cp -r "$build/tools/kiln-test/node_bundle" "$s/node_bundle"
  mkdir -p "$root/.dev"
  tar -C "$s" -cf - . | xz -T2 -6 > "$root/.dev/pkg.tar.xz" || exit 1
  rm -rf "$s"
  ls -la "$root/.dev/pkg.tar.xz"
  exit 0
fi

[ "$mode" = run ] || { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2; }
out="${1:?run needs OUT_DIR}"; shift
rounds=3; budget=480; tests=1
for a in "$@"; do
  case "$a" in
    --rounds=*) rounds="${a#--rounds=}" ;; --budget=*) budget="${a#--budget=}" ;; --no-tests) tests=0 ;;
  esac
done
mkdir -p "$out"; log="$out/log.txt"; : > "$log"
say() { echo "$*" | tee -a "$log"; }
k=/tmp/kiln-gpu; rm -rf "$k"; mkdir -p "$k"
xz -dc "$root/.dev/pkg.tar.xz" | tar -C "$k" -xf - || { say "cannot unpack .dev/pkg.tar.xz"; exit 1; }
export LD_LIBRARY_PATH="$k/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${VK_DRIVER_FILES:-}" ]; then
  for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/*.json; do
    [ -e "$j" ] && { export VK_DRIVER_FILES="$j"; break; }
  done
fi
export VK_LAYER_PATH="$k/layer" MESA_SHADER_CACHE_DISABLE=true
# NVIDIA's driver (libnvidia-tls) needs static TLS at every dlopen; a test
# binary that creates and destroys many instances exhausts glibc's surplus
# ("cannot allocate memory in static TLS block", then "Found no drivers").
export GLIBC_TUNABLES="${GLIBC_TUNABLES:-glibc.rtld.optional_static_tls=4096}"
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
validation_env=(KILN_VALIDATION=1 VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
  VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT)
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }
# The tests get at most half of the budget, so the benchmarks always run.
left_tests() { echo $(( budget / 2 - ($(date +%s) - start) )); }
say "driver: ${VK_DRIVER_FILES:-none}; $(nvidia-smi -L 2>/dev/null | head -1)"

step() {  # step NAME TIMEOUT CMD...: runs CMD with validation, logs its tail and status
  local name="$1" t="$2"; shift 2
  if [ "$(left_tests)" -lt 10 ]; then say "SKIPPED $name: budget spent"; return; fi
  [ "$t" -gt "$(left_tests)" ] && t=$(left_tests)
  local t0=$(date +%s)
  env "${validation_env[@]}" timeout "$t" "$@" > "$k/step.log" 2>&1
  local rc=$?
  local msgs; msgs=$(grep -c 'kiln: vulkan validation' "$k/step.log")
  { grep -E '^\[  (PASSED|FAILED) |^\[  FAILED|passed, .* failed|^FAIL |^FAILED|tests? ran|error' "$k/step.log" | tail -25
    echo "== $name: exit $rc, $(( $(date +%s) - t0 )) s, validation messages: $msgs"; } | tee -a "$log"
  [ "$msgs" != 0 ] && grep -m5 'kiln: vulkan validation' "$k/step.log" | tee -a "$log"
  [ "$rc" != 0 ] && grep -v 'vulkan loader' "$k/step.log" | grep -B2 -A8 'Failure' | head -40 >> "$log"
  return 0
}

if [ "$tests" = 1 ]; then
# The golden bundle compiles on the CPU while the node bundle runs.
(cd "$root" && timeout 200 "$k/bin/kiln-bundle" --golden-root=tests/golden --models=.cache/models \
   --out="$k/golden_bundle" > "$k/golden_make.log" 2>&1; echo "exit $?" >> "$k/golden_make.log") &
step node_bundle 150 "$k/bin/kiln-test" "$k/bin/../node_bundle" --device=vulkan
wait; tail -2 "$k/golden_make.log" | tee -a "$log"
step golden_bundle 120 "$k/bin/kiln-test" "$k/golden_bundle" --stats
[ -e /work/main ] || { mkdir -p /work && ln -s "$root" /work/main; }  # KILN_SOURCE_DIR of the e2e tests
for g in "${gtests[@]}"; do
  step "$(basename "$g")" 90 "$k/bin/$(basename "$g")" --gtest_brief=1
done
fi

# Benchmarks (validation off: it changes timings).
b="$k/bench"; mkdir -p "$b"
summarize() {  # summarize NAME A B: median over rounds of kiln-bench JSONs NAME.A.r.json and NAME.B.r.json
  python3 - "$b" "$@" "$rounds" <<'PY'
import json, re, statistics, sys
b, name, x, y, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def ms(tag, r):
    f = f'{b}/{name}.{tag}.{r}.json'
    t = open(f).read()
    if tag == 'ort':
        return json.loads(t)['median_ms']
    d = json.loads(re.sub(r':\s*-?(nan|inf|infinity)\s*([,}\n])', r': null\2', t, flags=re.I))
    row = [x for x in d['benchmarks'] if x.get('aggregate_name') == 'median'][0]
    return row['real_time'] * {'ns': 1e-6, 'us': 1e-3, 'ms': 1, 's': 1e3}[row['time_unit']]
def med(tag):
    try:
        return statistics.median(ms(tag, r) for r in range(1, rounds + 1))
    except Exception:
        return float('nan')
p, q = med(x), med(y)
print(f'{x} {p:.3f} ms, {y} {q:.3f} ms, {x}/{y} {p / q:.3f}')
PY
}
while read -r name dir; do
  [ "$(left)" -lt 30 ] && { say "SKIPPED bench $name: budget spent"; continue; }
  g="$root/tests/golden/$dir"; model="$root/.cache/models/$(head -1 "$g/model.txt")"
  shapes=(); inputs=(); feeds=(); i=0
  while read -r line; do
    [ -z "$line" ] && continue
    n="${line% \[*}"; dims="${line##*\[}"; dims="${dims%%\]*}"
    [ -n "$dims" ] && shapes+=("--input-shape=$n=${dims//,/x}")
    inputs+=("--input=@$g/input_$i.npy"); feeds+=("$n=@$g/input_$i.npy"); i=$((i + 1))
  done < "$g/inputs.txt"
  echo "$model" > "$b/$name.model"; echo "${shapes[*]}" > "$b/$name.cmdline"; echo "${inputs[*]}" > "$b/$name.inputs"
  "$k/bin/kiln-compile" "$model" -o "$b/$name.kiln" "${shapes[@]}" > "$b/$name.compile.log" 2>&1 < /dev/null \
    || { say "bench $name: compile failed"; tail -3 "$b/$name.compile.log" | tee -a "$log"; continue; }
  timeout 60 "$k/bin/kiln-bench" --module="$b/$name.kiln" "${inputs[@]}" --per-dispatch \
    --per-dispatch-format=tsv --per-dispatch-invokes=10 > "$b/$name.per_dispatch.tsv" 2> "$b/$name.per_dispatch.err" < /dev/null
  for r in $(seq "$rounds"); do
    timeout 60 "$k/bin/kiln-bench" --module="$b/$name.kiln" "${inputs[@]}" \
      '--benchmark_filter=^invoke/[^/]*/main/real_time$' --benchmark_repetitions=3 \
      --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true --benchmark_format=json \
      > "$b/$name.kiln.$r.json" 2> "$b/$name.kiln.$r.err" < /dev/null
    timeout 60 python3 "$root/scripts/device/bench_ort.py" "$model" --reps=3 --min-time=0.2 "${feeds[@]}" \
      > "$b/$name.ort.$r.json" 2> "$b/$name.ort.$r.err" < /dev/null
  done
  say "bench $name: $(summarize "$name" kiln ort)"
done <<'EOF'
cls cls_upright
embedding embedding_model
rec rec_line
det det_text
melspectrogram melspectrogram
alexa alexa_v0.1
hey_jarvis hey_jarvis_v0.1
silero_vad silero_vad
EOF
if [ -x "$k/bin/kiln-compile-candidate" ]; then
  for name in cls rec det embedding; do
    [ "$(left)" -lt 30 ] && { say "SKIPPED candidate $name: budget spent"; continue; }
    [ -e "$b/$name.kiln" ] || continue
    args=$(grep -o -- '--input-shape=[^ ]*' "$b/$name.cmdline" | tr '\n' ' ')
    inputs=$(cat "$b/$name.inputs")
    "$k/bin/kiln-compile-candidate" "$(cat "$b/$name.model")" -o "$b/$name.candidate.kiln" $args \
      $(cat "$k/bin/candidate-flags" 2>/dev/null) \
      > "$b/$name.candidate.compile.log" 2>&1 || { say "candidate $name: compile failed"; tail -3 "$b/$name.candidate.compile.log" | tee -a "$log"; continue; }
    timeout 60 "$k/bin/kiln-bench" --module="$b/$name.candidate.kiln" $inputs --per-dispatch \
      --per-dispatch-format=tsv --per-dispatch-invokes=10 > "$b/$name.candidate.per_dispatch.tsv" 2>&1
    for r in $(seq "$rounds"); do
      for tag in main candidate; do
        mod="$b/$name.kiln"; [ $tag = candidate ] && mod="$b/$name.candidate.kiln"
        timeout 60 "$k/bin/kiln-bench" --module="$mod" $inputs \
          '--benchmark_filter=^invoke/[^/]*/main/real_time$' --benchmark_repetitions=3 \
          --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true --benchmark_format=json \
          > "$b/$name.$tag.$r.json" 2> "$b/$name.$tag.$r.err"
      done
    done
    say "candidate $name: $(summarize "$name" main candidate)"
  done
fi
tar -C "$b" -czf "$out/bench.tar.gz" --exclude='*.kiln' . 2>/dev/null
say "total $(( $(date +%s) - start )) s"
