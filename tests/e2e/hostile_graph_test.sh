#!/usr/bin/env bash
# Odd graphs and hostile tool input (issue: hostile input): each case either
# compiles and runs to the hand-derived result, or fails with `error:` and
# the expected message; never a crash (exit >= 128), never a hang (ctest's
# timeout).
#   hostile_graph_test.sh KILN_COMPILE KILN_RUN WORK_DIR
# Models are written as ONNX text and encoded with protoc (onnx/onnx.proto).
set -u
compile=$1 run=$2 work=$3
mkdir -p "$work"
fails=0
fail() { echo "FAIL [$1] $2"; fails=$((fails + 1)); }
encode() { protoc --encode=onnx.ModelProto -I/usr/include onnx/onnx.proto >"$1"; }
tensor() { # NAME ELEM DIMS... : a value_info with a static tensor type
  local name=$1 elem=$2 dims=""; shift 2
  for d in "$@"; do dims="$dims dim { dim_value: $d }"; done
  echo "{ name: \"$name\" type { tensor_type { elem_type: $elem shape {$dims } } } }"
}
expect_error() { # label, expected substring, command...
  local label=$1 want=$2; shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  { [ $rc -eq 1 ] && grep -q "^error:" <<<"$out" && grep -qF -- "$want" <<<"$out"; } ||
    fail "$label" "rc=$rc (want 1, 'error:' and '$want'): $out"
}
expect_result() { # label, expected result line, run args...
  local label=$1 want=$2; shift 2
  local out rc
  out=$("$run" "$@" 2>&1 | grep -v '^kiln: vulkan loader'); rc=${PIPESTATUS[0]}
  { [ $rc -eq 0 ] && grep -qxF -- "$want" <<<"$out"; } || fail "$label" "rc=$rc, want '$want': $out"
}

# A MatMul with M = 0: an empty result, no dispatch (codegen divided by zero).
{ echo 'ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
  echo 'node { op_type: "MatMul" input: "a" input: "b" output: "y" }'
  echo "input $(tensor a 1 0 4) input $(tensor b 1 4 3) output $(tensor y 1 0 3) }"; } | encode "$work/mm0.onnx"
"$compile" "$work/mm0.onnx" -o "$work/mm0.kiln" || fail "matmul M=0" "does not compile"
expect_result "matmul M=0" "result[0]: tensor<0x3xf32> = []" --module="$work/mm0.kiln" --input=0x4xf32= \
  --input=4x3xf32=1,2,3,4,5,6,7,8,9,10,11,12

# 4,000 chained Adds (y_k = y_{k-1} + x) fuse into dispatch regions of bounded
# size (the recursion of one 4,000-op region overflowed the stack):
# y = 4001 x, exact in f32.
{ echo 'ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
  prev=x
  for i in $(seq 1 4000); do echo "node { op_type: \"Add\" input: \"$prev\" input: \"x\" output: \"t$i\" }"; prev=t$i; done
  echo "input $(tensor x 1 4) output $(tensor t4000 1 4) }"; } | encode "$work/chain.onnx"
"$compile" "$work/chain.onnx" -o "$work/chain.kiln" || fail "chain" "does not compile"
expect_result "chain of 4000 adds" "result[0]: tensor<4xf32> = [4001, 8002, 12003, 16004]" \
  --module="$work/chain.kiln" --input=4xf32=1,2,3,4

# A hand-written dispatch region of 1,100 ops (fusion never makes one):
# a clear error from codegen, not a deep recursion.
{ echo '"func.func"() ({'; echo '^bb0(%x: tensor<4xf32>):'; echo '  %d = "flow.dispatch"(%x) ({'
  echo '  ^bb0(%a: tensor<4xf32>):'; prev=a
  for i in $(seq 1 1100); do echo "    %t$i = \"tensor.relu\"(%$prev) : (tensor<4xf32>) -> tensor<4xf32>"; prev=t$i; done
  echo "    \"flow.return\"(%$prev) : (tensor<4xf32>) -> ()"; echo '  }) {name = "big"} : (tensor<4xf32>) -> tensor<4xf32>'
  echo '  "func.return"(%d) : (tensor<4xf32>) -> ()'; echo '}) {sym_name = "main"} : () -> ()'; } >"$work/big.kir"
expect_error "1,100-op region" "holds 1101 ops, more than the 1024" "$compile" "$work/big.kir" -o "$work/x.kiln"

# Many graph outputs: 8,000 results compile and run (resource-lifetime and
# the emitter once scanned the whole function per result: 55 s for 8,000,
# 8.5 min for 20,000); 20,000 need more VM registers than a function has,
# a clear error instead of a module the loader refuses.
outputs_model() { # N FILE: y_k = x + x for k = 1..N, every y_k a graph output
  { echo 'ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
    for i in $(seq 1 "$1"); do echo "node { op_type: \"Add\" input: \"x\" input: \"x\" output: \"y$i\" }"; done
    echo "input $(tensor x 1 4)"
    for i in $(seq 1 "$1"); do echo "output $(tensor y$i 1 4)"; done; echo '}'; } | encode "$2"
}
outputs_model 8000 "$work/out8000.onnx"
"$compile" "$work/out8000.onnx" -o "$work/out8000.kiln" || fail "8000 outputs" "does not compile"
expect_result "8000 outputs" "result[7999]: tensor<4xf32> = [2, 4, 6, 8]" --module="$work/out8000.kiln" \
  --input=4xf32=1,2,3,4
outputs_model 20000 "$work/out20000.onnx"
expect_error "20000 outputs" "the VM allows 32768 per bank" "$compile" "$work/out20000.onnx" -o "$work/x.kiln"

# A module of 100,001 functions loads (the loader's duplicate-name check was
# quadratic: 12 s) and its main runs.
{ for i in $(seq 0 99999); do
    printf '"func.func"() ({\n^bb0(%%x: tensor<4xf32>):\n  "func.return"(%%x) : (tensor<4xf32>) -> ()\n}) {sym_name = "f%d"} : () -> ()\n' "$i"
  done
  printf '"func.func"() ({\n^bb0(%%x: tensor<4xf32>):\n  %%0 = "tensor.neg"(%%x) : (tensor<4xf32>) -> tensor<4xf32>\n'
  printf '  "func.return"(%%0) : (tensor<4xf32>) -> ()\n}) {sym_name = "main"} : () -> ()\n'; } >"$work/funcs.kir"
"$compile" "$work/funcs.kir" -o "$work/funcs.kiln" || fail "100,001 functions" "does not compile"
expect_result "100,001 functions" "result[0]: tensor<4xf32> = [-1, -2, -3, -4]" --module="$work/funcs.kiln" \
  --input=4xf32=1,2,3,4

# Malformed ONNX: two nodes write one tensor (ONNX's checker); an opset no
# release defines; a rank-9 input.
{ echo 'ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
  echo 'node { op_type: "Relu" input: "x" output: "y" } node { op_type: "Neg" input: "x" output: "y" }'
  echo "input $(tensor x 1 4) output $(tensor y 1 4) }"; } | encode "$work/ssa.onnx"
expect_error "two writers" "single static assignment" "$compile" "$work/ssa.onnx" -o "$work/x.kiln"
{ echo 'ir_version: 7 opset_import { domain: "" version: 999 } graph { name: "g"'
  echo 'node { op_type: "Relu" input: "x" output: "y" }'
  echo "input $(tensor x 1 4) output $(tensor y 1 4) }"; } | encode "$work/opset.onnx"
expect_error "opset 999" "opset 999" "$compile" "$work/opset.onnx" -o "$work/x.kiln"
{ echo 'ir_version: 7 opset_import { domain: "" version: 13 } graph { name: "g"'
  echo 'node { op_type: "Relu" input: "x" output: "y" }'
  echo "input $(tensor x 1 1 1 1 1 1 1 1 1 1) output $(tensor y 1 1 1 1 1 1 1 1 1 1) }"; } | encode "$work/rank.onnx"
expect_error "rank 9" "input 'x' has rank 9" "$compile" "$work/rank.onnx" -o "$work/x.kiln"

# kiln-compile writes its output atomically (a new file renamed over the
# old one: a runtime that maps the old module keeps its bytes).
before=$(stat -c %i "$work/chain.kiln")
"$compile" "$work/chain.onnx" -o "$work/chain.kiln" || fail "recompile" "does not compile"
[ "$(stat -c %i "$work/chain.kiln")" != "$before" ] || fail "atomic output" "the module was rewritten in place"
ls "$work"/chain.kiln.tmp.* >/dev/null 2>&1 && fail "atomic output" "a temporary file was left"

# Tool input: no allocation of an absurd literal, no reading /dev/zero.
expect_error "huge literal" "limit of --input" "$run" --module="$work/chain.kiln" --input=68719476736xf32=0
expect_error "npy from /dev/zero" "not a regular file" "$run" --module="$work/chain.kiln" --input=@/dev/zero

# Context limits from kiln-run: a device-memory budget smaller than the
# model's buffers is a clean RESOURCE_EXHAUSTED; a generous one runs.
expect_error "memory budget" "device memory budget of 16 bytes exceeded" "$run" --module="$work/chain.kiln" \
  --device-memory-budget=16 --input=4xf32=1,2,3,4
expect_result "memory budget, enough" "result[0]: tensor<4xf32> = [4001, 8002, 12003, 16004]" \
  --module="$work/chain.kiln" --device-memory-budget=100000000 --step-budget=1000 --input=4xf32=1,2,3,4

# A module file truncated while kiln-run runs it: kiln-run reads the file
# into memory (tools/module_file.h) instead of mapping it, so the invokes
# after the truncation still run (with a mapping they died of SIGBUS).
cp "$work/chain.kiln" "$work/trunc.kiln"
"$run" --module="$work/trunc.kiln" --repeat=200000 --input=4xf32=1,2,3,4 >"$work/trunc.out" 2>&1 &
pid=$!
sleep 1
if kill -0 $pid 2>/dev/null; then
  : >"$work/trunc.kiln"  # truncate to 0 bytes under the running tool
  sleep 1; kill -0 $pid 2>/dev/null && kill -INT $pid
  wait $pid; rc=$?
  # Still running when interrupted (130), or finished (0): not SIGBUS (135).
  [ $rc -eq 0 ] || [ $rc -eq 130 ] || fail "truncated while running" "rc=$rc: $(tail -3 "$work/trunc.out")"
else
  wait $pid; fail "truncated while running" "kiln-run finished within 1 s: the test did not truncate under it"
fi

if [ $fails -ne 0 ]; then echo "$fails hostile-graph cases failed"; exit 1; fi
echo "hostile graphs: all cases handled"
