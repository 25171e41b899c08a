#!/bin/bash
# End-to-end checks of kiln-run and kiln-dump on the vadd test module.
# usage: tools_test.sh KILN_RUN KILN_DUMP KILN_MAKE_TEST_MODULE WORK_DIR
set -u
RUN=$1 DUMP=$2 MAKE=$3 WORK=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$WORK}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_ok NAME PATTERN CMD...: exit 0 and stdout matches PATTERN (grep -E;
# "-" checks the exit status only).
expect_ok() {
  local name=$1 pattern=$2; shift 2
  "$@" >out.txt 2>err.txt; local rc=$?
  if [ $rc -ne 0 ]; then fail "$name: exit $rc: $(cat err.txt)"; return; fi
  [ "$pattern" = "-" ] && return
  grep -qE -- "$pattern" out.txt || fail "$name: stdout lacks /$pattern/: $(cat out.txt)"
}
# expect_err NAME PATTERN CMD...: non-zero exit (not a crash), stderr starts
# with "error:" and matches PATTERN.
expect_err() {
  local name=$1 pattern=$2; shift 2
  "$@" >out.txt 2>err.txt; local rc=$?
  if [ $rc -eq 0 ]; then fail "$name: expected failure"; return; fi
  if [ $rc -ge 128 ]; then fail "$name: crashed (exit $rc): $(cat err.txt)"; return; fi
  grep -q '^error:' err.txt || fail "$name: stderr lacks 'error:': $(cat err.txt)"
  grep -qE -- "$pattern" err.txt || fail "$name: stderr lacks /$pattern/: $(cat err.txt)"
}

"$MAKE" vadd.kiln || exit 1
N=100
A="100xf32=1"
B="100xf32=2"

# Results printed; c = a + b + (i + 0.5), d = [a[:50], 1...], e = c[4:12).
expect_ok print 'result\[0\]: tensor<100xf32> = \[3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, \.\.\.\]' \
  "$RUN" --module=vadd.kiln --input=$A --input=$B
grep -q '^result\[2\]: tensor<8xf32> = \[7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5\]$' out.txt ||
  fail "print: result[2]: $(cat out.txt)"
expect_ok print_full 'result\[0\]: tensor<100xf32> = \[3.5, .*, 102.5\]' \
  "$RUN" --module=vadd.kiln --input=$A --input=$B --print-full

# Stats: one key: value line per counter.
expect_ok stats '^dispatches: 2$' "$RUN" --module=vadd.kiln --input=$A --input=$B --stats
for k in device_allocations device_bytes_allocated device_peak_bytes copies copy_bytes \
         transfers fills barriers submissions host_allocations_invoke; do
  grep -qE "^$k: [0-9]+$" out.txt || fail "stats: missing $k"
done
grep -q '^device_allocations: 3$' out.txt || fail "stats: device_allocations"
grep -q '^transfers: 0$' out.txt || fail "stats: transfers (the upload happens at load)"
expect_ok repeat '^dispatches: 6$' "$RUN" --module=vadd.kiln --input=$A --input=$B --stats --repeat=3
expect_ok steady '^dispatches: 2$' "$RUN" --module=vadd.kiln --input=$A --input=$B --stats-steady --repeat=3
expect_ok device '^device: ' "$RUN" --module=vadd.kiln --input=$A --input=$B --print-device
expect_ok i32_only - "$RUN" --module=vadd.kiln --function=i32_only

# .npy round trip: write results, feed result 0 back as input (typed and not).
expect_ok output '^result\[2\]' "$RUN" --module=vadd.kiln --input=$A --input=$B \
  --output=@c.npy --output=@d.npy
[ -s c.npy ] && [ -s d.npy ] || fail "output: npy files not written"
# c2 = c + d + bias = (3.5 + i) + 1 + (i + 0.5) (d is all 1: a was); e = c2[4:12).
expect_ok npy_in '^result\[2\]: tensor<8xf32> = \[13, 15, 17, 19, 21, 23, 25, 27\]$' \
  "$RUN" --module=vadd.kiln --input=@c.npy --input=100xf32=@d.npy --output=@c2.npy --output=@d2.npy

# Errors: never a crash, always "error:".
expect_err missing_module 'cannot open module' "$RUN" --module=nope.kiln --input=$A --input=$B
head -c 200 vadd.kiln > cut.kiln
expect_err truncated_module 'DATA_LOSS' "$RUN" --module=cut.kiln --input=$A --input=$B
head -c 4096 /dev/urandom > garbage.kiln
expect_err garbage_module 'DATA_LOSS' "$RUN" --module=garbage.kiln
expect_err missing_npy 'missing.npy: cannot open' "$RUN" --module=vadd.kiln --input=@missing.npy --input=$B
echo "not numpy" > bad.npy
expect_err bad_npy 'bad.npy: not a .npy file' "$RUN" --module=vadd.kiln --input=@bad.npy --input=$B
expect_err wrong_shape "argument 1 'b': expected tensor<100xf32>, got tensor<99xf32>" \
  "$RUN" --module=vadd.kiln --input=$A --input=99xf32=0
expect_err wrong_dtype "argument 0 'a': expected tensor<100xf32>, got tensor<100xi32>" \
  "$RUN" --module=vadd.kiln --input=100xi32=1 --input=$B
expect_err npy_type_mismatch 'has dtype f32, --input says tensor<100xi32>' \
  "$RUN" --module=vadd.kiln --input=100xi32=@c.npy --input=$B
expect_err arity "takes 2 inputs \(a: tensor<100xf32>, b: tensor<100xf32>\), 1 given" \
  "$RUN" --module=vadd.kiln --input=$A
expect_err literal_count 'has 4 elements, 3 values given' \
  "$RUN" --module=vadd.kiln --input=2x2xf32=1,2,3 --input=$B
expect_err literal_value "bad f32 value 'abc'" "$RUN" --module=vadd.kiln --input=2xf32=abc,1 --input=$B
expect_err bad_type "unknown dtype 'q7'" "$RUN" --module=vadd.kiln --input=2xq7=1 --input=$B
expect_err bad_function "no exported function 'nope'" "$RUN" --module=vadd.kiln --function=nope
expect_err bad_device 'NOT_FOUND' "$RUN" --module=vadd.kiln --device-name=no-such-gpu --input=$A --input=$B
expect_err bad_driver 'NOT_FOUND' "$RUN" --module=vadd.kiln --device=nope --input=$A --input=$B
expect_err no_module '--module is required' "$RUN"
expect_err unknown_flag "unknown flag '--bogus'" "$RUN" --bogus
# Flags: the nearest flag is suggested; `--flag value` equals `--flag=value`;
# --help gives every flag a described line; --version; .onnx modules.
expect_err near_flag "unknown flag '--modul' \(did you mean --module\?\)" "$RUN" --modul=vadd.kiln
expect_err near_flag2 "did you mean --device-index\?" "$RUN" --device-idx=0
expect_err no_value "--repeat needs a value" "$RUN" --module=vadd.kiln --repeat
expect_ok space_form 'result\[0\]: tensor<100xf32> = \[3.5,' \
  "$RUN" --module vadd.kiln --input $A --input $B
expect_ok run_version '^kiln-run [0-9]+\.[0-9]+\.[0-9]+ \(Kiln API [0-9]+\)$' "$RUN" --version
expect_ok dump_version '^kiln-dump [0-9]+\.[0-9]+\.[0-9]+ \(Kiln API [0-9]+\)$' "$DUMP" --version
for tool in "$RUN" "$DUMP"; do
  "$tool" --help >help.txt 2>&1 || fail "$tool --help: exit $?"
  # Every flag line ("  --name[=VALUE]   text") has a description.
  n=$(grep -cE '^  -' help.txt)
  d=$(grep -cE '^  -[^ ]+ *( [A-Z][^ ]*)? {2,}[a-zA-Z(]' help.txt)
  [ "$n" -ge 2 ] && [ "$n" = "$d" ] || fail "$tool --help: $d of $n flag lines described: $(cat help.txt)"
done
grep -qE '^  --device-index=N +pick device N' <("$RUN" --help) || fail "kiln-run --help: --device-index"
touch model.onnx
expect_err onnx_module 'run kiln-compile first' "$RUN" --module=model.onnx

# kiln-dump.
expect_ok dump '^module: vadd_test$' "$DUMP" vadd.kiln
for p in '^version: 1$' '^features: 0x0 \(none\)$' \
         '#5 hal.command_buffer.dispatch "rriiii\*rii_"' \
         '#1 main \(exported\)' '0 a: tensor<100xf32> borrow' '2 e: tensor<8xf32>' \
         'registers: 11 i32, 13 ref' 'CALL_IMPORT hal.command_buffer.dispatch\(r4, r5, i1' \
         '// Add_0' '#0 bias: 400 bytes at file offset 0x[0-9a-f]+ \(64-byte aligned\)' \
         'entry #0 main \(dispatch_0_vadd\)' 'bindings \(3\): \[0:0 ro, 0:1 ro, 0:2 rw\]' \
         'push constants: 4 bytes' 'workgroup size: 64x1x1' 'source locations: Add_0' \
         '#0 bias \(ref\)' '^initializer: #0 __init$' 'FAIL i6, rodata#1'; do
  grep -qE -- "$p" out.txt || fail "dump: missing /$p/"
done
expect_err dump_garbage 'DATA_LOSS' "$DUMP" garbage.kiln
expect_err dump_missing 'cannot open module' "$DUMP" nope.kiln

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all tool checks passed"
