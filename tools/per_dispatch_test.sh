#!/bin/bash
# kiln-bench --per-dispatch on a small real model (tests/golden/conv_transpose:
# four ConvTranspose branches with Relu/Sigmoid epilogues), under the
# validation layers with synchronization validation (ctest's environment).
# Checks against independent sources: the dispatch count of kiln-run --stats,
# the entry point names of kiln-dump, and MACs derived by hand from the ONNX
# shapes (tests/golden/README.md).
# usage: per_dispatch_test.sh KILN_COMPILE KILN_BENCH KILN_RUN KILN_DUMP SOURCE_DIR WORK_DIR
set -u
COMPILE=$1 BENCH=$2 RUN=$3 DUMP=$4 SRC=$5 WORK=$6
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$WORK}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
G=$SRC/tests/golden/conv_transpose
IN=(--input=@$G/input_0.npy --input=@$G/input_1.npy)

# kiln-bench's flags as the other tools' (tools_test.sh): --version, every
# --help flag line described, the nearest flag suggested.
"$BENCH" --version | grep -qE '^kiln-bench [0-9]+\.[0-9]+\.[0-9]+ \(Kiln API [0-9]+\)$' ||
  fail "kiln-bench --version: $("$BENCH" --version 2>&1)"
"$BENCH" --help >help.txt 2>&1 || fail "kiln-bench --help: exit $?"
n=$(grep -cE '^  -' help.txt); d=$(grep -cE '^  -[^ ]+ *( [A-Z][^ ]*)? {2,}[a-zA-Z(]' help.txt)
{ [ "$n" -ge 5 ] && [ "$n" = "$d" ]; } || fail "kiln-bench --help: $d of $n flag lines described"
out=$("$BENCH" --modul=m.kiln 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "unknown flag '--modul' (did you mean --module?)" <<<"$out"; } ||
  fail "kiln-bench near flag: rc=$rc: $out"

"$COMPILE" "$G/model.onnx" -o m.kiln --input-shape=x=1x24x10x12 --input-shape=z=1x4x7 \
  2>err.txt || { echo "FAIL: kiln-compile: $(cat err.txt)"; exit 1; }

"$BENCH" --module=m.kiln "${IN[@]}" --per-dispatch --per-dispatch-format=tsv \
  --per-dispatch-invokes=3 >tsv.txt 2>err.txt
rc=$?
if [ $rc -ne 0 ]; then
  # A device without timestamps must say so clearly; nothing else is allowed.
  if grep -q "no timestamp queries" err.txt; then echo "SKIP: $(cat err.txt)"; exit 77; fi
  echo "FAIL: kiln-bench --per-dispatch: exit $rc: $(cat err.txt)"; exit 1
fi
grep -q "vulkan validation" err.txt && fail "validation messages: $(cat err.txt)"
[ "$(head -1 tsv.txt)" = "$(printf 'kind\tms\tcalls\tmacs\tgmac_s\tname\tnodes')" ] || fail "header: $(head -1 tsv.txt)"

# Every dispatch row has a positive time; the calls add up to the total.
awk -F'\t' '$1 == "dispatch" && !($2 > 0) { print "FAIL: non-positive time: " $0; bad = 1 }
            END { exit bad }' tsv.txt || failures=$((failures + 1))
calls=$(awk -F'\t' '$1 == "dispatch" { s += $3 } END { print s }' tsv.txt)
total=$(awk -F'\t' '$1 == "all" { print $3 }' tsv.txt)
[ "$calls" = "$total" ] || fail "rows have $calls calls, total says $total"

# The same count as the runtime's own counter for one invocation.
"$RUN" --module=m.kiln "${IN[@]}" --stats >stats.txt 2>err.txt || fail "kiln-run: $(cat err.txt)"
expected=$(awk '/^dispatches:/ { print $2 }' stats.txt)
[ -n "$expected" ] && [ "$calls" = "$expected" ] || fail "profiled $calls dispatches, kiln-run --stats says '$expected'"

# Names: exactly the module's entry points (a static program dispatches each).
"$DUMP" m.kiln | sed -nE 's/^ *entry #[0-9]+ [^ ]+ \((.*)\)$/\1/p' | sort >dump_names.txt
awk -F'\t' '$1 == "dispatch" { print $6 }' tsv.txt | sort >profile_names.txt
[ -s dump_names.txt ] || fail "kiln-dump listed no entry points"
cmp -s dump_names.txt profile_names.txt || fail "names differ: $(diff dump_names.txt profile_names.txt)"
# Every row names its ONNX nodes.
awk -F'\t' '$1 == "dispatch" && ($7 == "" || $7 == "-") { print "FAIL: no nodes: " $0; bad = 1 }
            END { exit bad }' tsv.txt || failures=$((failures + 1))

# MACs, by hand from the model's shapes (scripts/gen_conv_transpose_golden.mjs;
# ConvTranspose: every input element meets (M/group) * prod(K) filter taps):
#   up1 (y_det): x [1,24,10,12], W0 [24,24,2,2]:    2880 * 24*4 = 276480
#   up2 (y_det): up1 [1,24,20,24], W1 [24,1,2,2]:  11520 *  1*4 =  46080
#   y_grp:       x, W2 [24,2,3,3] (group 12):       2880 *  2*9 =  51840
#   y_dw:        x, W3 [24,1,3,3] (group 24):       2880 *  1*9 =  25920
#   y_1d:        z [1,4,7], W4 [4,3,4]:               28 *  3*4 =    336
# total 400656
macs=$(awk -F'\t' '$1 == "conv_matmul" { print $4 }' tsv.txt)
[ "$macs" = "400656" ] || fail "conv/matmul MACs $macs, want 400656 (see the comment)"
awk -F'\t' '$1 == "dispatch" && $4 > 0 && !($5 > 0) { print "FAIL: MACs but no GMAC/s: " $0; bad = 1 }
            END { exit bad }' tsv.txt || failures=$((failures + 1))

# The human-readable table.
"$BENCH" --module=m.kiln "${IN[@]}" --per-dispatch --per-dispatch-invokes=2 >table.txt 2>err.txt \
  || fail "table: $(cat err.txt)"
grep -q "conv/matmul" table.txt && grep -q "^totals over 2 invocations" table.txt \
  || fail "table lacks totals: $(cat table.txt)"
# A bad format is a usage error, not a crash.
"$BENCH" --module=m.kiln "${IN[@]}" --per-dispatch --per-dispatch-format=csv >/dev/null 2>err.txt
[ $? -eq 2 ] && grep -q "per-dispatch-format" err.txt || fail "bad format: $(cat err.txt)"

# A program with data-dependent control flow (silero_vad: an If on a
# device-computed value, so more than one submission per invoke), when the
# model is fetched: every dispatch of every submission is timed.
S=$SRC/.cache/models/silero_vad.onnx SG=$SRC/tests/golden/silero_vad
if [ -f "$S" ]; then
  SIN=(--input=@$SG/input_0.npy --input=@$SG/input_1.npy --input=@$SG/input_2.npy --input=@$SG/input_3.npy)
  "$COMPILE" "$S" -o s.kiln --input-shape=input=1x512 --input-shape=h=2x1x64 --input-shape=c=2x1x64 \
    2>err.txt || fail "kiln-compile silero: $(cat err.txt)"
  "$BENCH" --module=s.kiln "${SIN[@]}" --per-dispatch --per-dispatch-format=tsv \
    --per-dispatch-invokes=2 >stsv.txt 2>err.txt || fail "silero --per-dispatch: $(cat err.txt)"
  grep -q "vulkan validation" err.txt && fail "silero: validation messages: $(cat err.txt)"
  "$RUN" --module=s.kiln "${SIN[@]}" --stats >sstats.txt 2>err.txt || fail "kiln-run silero: $(cat err.txt)"
  scalls=$(awk -F'\t' '$1 == "dispatch" { s += $3 } END { print s }' stsv.txt)
  sexpected=$(awk '/^dispatches:/ { print $2 }' sstats.txt)
  ssubmissions=$(awk '/^submissions:/ { print $2 }' sstats.txt)
  [ "$scalls" = "$sexpected" ] || fail "silero: profiled $scalls dispatches, kiln-run --stats says '$sexpected'"
  [ "${ssubmissions:-0}" -gt 1 ] || echo "note: silero ran in $ssubmissions submission(s)"
else
  echo "note: $S not fetched; the control-flow case is skipped"
fi

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; cat tsv.txt; exit 1; fi
echo "per-dispatch: $calls dispatches profiled, names and MACs match"
