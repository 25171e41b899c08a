#!/usr/bin/env bash
# Bad input never crashes the tools: every case must exit 1 with a message
# starting with `error:` (a crash exits >= 128, an abort 134, a segfault 139).
#   bad_input_test.sh KILN_COMPILE KILN_RUN KILN_DUMP WORK_DIR SOURCE_DIR
set -u
compile=$1 run=$2 dump=$3 work=$4 src=$5
node=/usr/share/libonnx-testdata/data/node
mkdir -p "$work"
fails=0
expect_error() { # label, expected substring, command...
  local label=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  if [ $rc -ne 1 ] || ! grep -q "^error:" <<<"$out" || ! grep -qF -- "$want" <<<"$out"; then
    echo "FAIL [$label] rc=$rc (want 1, 'error:' and '$want'): $out"
    fails=$((fails + 1))
  fi
}

# A real module to damage: ONNX's Relu node test, input x: [3,4,5] f32.
"$compile" "$node/test_relu/model.onnx" -o "$work/relu.kiln" || { echo "FAIL: cannot compile test_relu"; exit 1; }
vals=$(seq -s, -30 29)
"$run" --module="$work/relu.kiln" --input="3x4x5xf32=$vals" >"$work/ok.txt" 2>&1 || { echo "FAIL: good module does not run"; cat "$work/ok.txt"; exit 1; }
grep -q "tensor<3x4x5xf32>" "$work/ok.txt" || { echo "FAIL: unexpected output"; cat "$work/ok.txt"; exit 1; }

size=$(stat -c %s "$work/relu.kiln")
# Truncations at every small length and a spread of larger ones.
for len in 0 1 2 3 4 7 8 12 16 24 32 64 100 $((size / 4)) $((size / 2)) $((size - 64)) $((size - 1)); do
  head -c "$len" "$work/relu.kiln" >"$work/trunc.kiln"
  expect_error "truncated to $len" "" "$run" --module="$work/trunc.kiln" --input="3x4x5xf32=$vals"
  expect_error "dump truncated to $len" "" "$dump" "$work/trunc.kiln"
done
# Garbled: flip one byte at 300 seeded positions; each must either still run
# correctly-shaped (a byte in weights or padding) or fail with error:, never crash.
RANDOM=1234
for i in $(seq 1 300); do
  cp "$work/relu.kiln" "$work/garbled.kiln"
  pos=$(( (RANDOM * 32768 + RANDOM) % size ))
  printf "$(printf '\\x%02x' $((RANDOM % 256)))" | dd of="$work/garbled.kiln" bs=1 seek="$pos" conv=notrunc status=none
  out=$("$run" --module="$work/garbled.kiln" --input="3x4x5xf32=$vals" 2>&1); rc=$?
  if [ $rc -ge 128 ] || { [ $rc -ne 0 ] && ! grep -q "^error:" <<<"$out"; }; then
    echo "FAIL [garbled byte $pos] rc=$rc: $out"; fails=$((fails + 1))
  fi
  "$dump" "$work/garbled.kiln" >/dev/null 2>&1; rc=$?
  [ $rc -ge 128 ] && { echo "FAIL [dump garbled byte $pos] rc=$rc"; fails=$((fails + 1)); }
done
# Random bytes.
for i in $(seq 1 50); do
  head -c $((i * 97)) /dev/urandom >"$work/random.kiln"
  expect_error "random $i" "" "$run" --module="$work/random.kiln"
done
# Wrong file identifier with a valid size prefix.
printf '\x10\x00\x00\x00\x0c\x00\x00\x00XXXX\x00\x00\x00\x00\x00\x00\x00\x00' >"$work/ident.kiln"
expect_error "file identifier" "" "$run" --module="$work/ident.kiln"
# Missing module file.
expect_error "missing file" "" "$run" --module="$work/does-not-exist.kiln"
# Shape / dtype / arity mismatches at the API.
expect_error "shape mismatch" "expected" "$run" --module="$work/relu.kiln" --input="2x2xf32=1,2,3,4"
expect_error "dtype mismatch" "expected" "$run" --module="$work/relu.kiln" --input="3x4x5xi32=$vals"
expect_error "arity" "inputs" "$run" --module="$work/relu.kiln"
# Unsupported ONNX op (a training-only op, which Kiln does not claim): named, with the node.
expect_error "unsupported op" "unsupported ONNX op 'Momentum' (node 'Momentum_0'" "$compile" "$node/test_momentum/model.onnx" -o "$work/x.kiln"
# String tensors are not supported: the error names the input and the dtype.
expect_error "string input" "input 'x': unsupported ONNX dtype STRING" "$compile" "$node/test_strnormalizer_export_monday_casesensintive_lower/model.onnx" -o "$work/x.kiln"
# Not an ONNX file at all.
head -c 1000 /dev/urandom >"$work/garbage.onnx"
expect_error "garbage onnx" "" "$compile" "$work/garbage.onnx" -o "$work/x.kiln"
# A wrong --input-shape name lists the graph's real inputs (test_relu: x).
expect_error "input-shape name" "--input-shape names 'y', which is not a graph input (graph inputs: 'x')" \
  "$compile" "$node/test_relu/model.onnx" --input-shape=y=3x4x5 -o "$work/x.kiln"
# An unknown --precision is named, with the ones there are.
expect_error "precision" "bad --precision 'f8' (want f32 or f16)" \
  "$compile" "$node/test_relu/model.onnx" --precision=f8 -o "$work/x.kiln"
# kiln-compile's flags: space form, --version, suggestions, described --help.
"$compile" "$node/test_relu/model.onnx" --input-shape x=3x4x5 -o "$work/relu_space.kiln" >/dev/null 2>&1 &&
  cmp -s "$work/relu.kiln" "$work/relu_space.kiln" ||
  { echo "FAIL [space form] '--input-shape x=3x4x5 -o F' differs from the = form"; fails=$((fails + 1)); }
"$compile" --version | grep -qE '^kiln-compile [0-9]+\.[0-9]+\.[0-9]+ \(Kiln API [0-9]+\)$' ||
  { echo "FAIL [compile --version]"; fails=$((fails + 1)); }
out=$("$compile" "$node/test_relu/model.onnx" --input-shap=x=3x4x5 -o "$work/x.kiln" 2>&1); rc=$?
{ [ $rc -eq 2 ] && grep -q "unknown flag '--input-shap' (did you mean --input-shape?)" <<<"$out"; } ||
  { echo "FAIL [compile near flag] rc=$rc: $out"; fails=$((fails + 1)); }
help=$("$compile" --help)
n=$(grep -cE '^  -' <<<"$help"); d=$(grep -cE '^  -[^ ]+ *( [A-Z][^ ]*)? {2,}[a-zA-Z(]' <<<"$help")
{ [ "$n" -ge 10 ] && [ "$n" = "$d" ]; } || { echo "FAIL [compile --help] $d of $n flags described"; fails=$((fails + 1)); }

if [ $fails -ne 0 ]; then echo "$fails bad-input cases failed"; exit 1; fi
echo "bad input: all cases gave a clear error"
