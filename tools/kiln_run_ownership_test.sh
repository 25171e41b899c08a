#!/bin/bash
# kiln-run's ownership flags on the test modules of vm/testing/ownership_modules.h:
#   --feedback=R:A   the streaming state loop ("stream" step): steady state
#                    with zero device and host allocations (--stats-steady);
#   --output-storage results written into caller storage ("own"
#                    write_output: no copy; ignore_output: one copy);
# plus their usage errors.
# usage: kiln_run_ownership_test.sh KILN_RUN KILN_MAKE_TEST_MODULE WORK_DIR
set -u
RUN=$1 MAKE=$2 WORK=$3
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$WORK}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_ok() {
  local name=$1 pattern=$2; shift 2
  "$@" >out.txt 2>err.txt; local rc=$?
  if [ $rc -ne 0 ]; then fail "$name: exit $rc: $(cat err.txt)"; return; fi
  grep -qE -- "$pattern" out.txt || fail "$name: stdout lacks /$pattern/: $(cat out.txt)"
}
expect_line() { grep -qE -- "$2" out.txt || fail "$1: stdout lacks /$2/: $(cat out.txt)"; }
expect_err() {
  local name=$1 pattern=$2; shift 2
  "$@" >out.txt 2>err.txt; local rc=$?
  if [ $rc -eq 0 ]; then fail "$name: expected failure"; return; fi
  if [ $rc -ge 128 ]; then fail "$name: crashed (exit $rc): $(cat err.txt)"; return; fi
  grep -qE -- "$pattern" err.txt || fail "$name: stderr lacks /$pattern/: $(cat err.txt)"
}

"$MAKE" stream.kiln stream 64 || exit 1
"$MAKE" own.kiln own 64 || exit 1

# Streaming state: next = (x + state) / 2 fed back 10 times from state = 0
# with x = 1: 1 - 2^-10 = 0.999023; y = x + state + x.
expect_ok feedback '^result\[1\]: tensor<64xf32> = \[0.999023, ' \
  "$RUN" --module=stream.kiln --function=step --input=64xf32=1 --input=64xf32=0 \
  --feedback=1:1 --repeat=10 --stats-steady
expect_line feedback '^result\[0\]: tensor<64xf32> = \[2.99805, '
expect_line feedback '^device_allocations: 0$'
expect_line feedback '^host_allocations_invoke: 0$'
expect_line feedback '^copies: 0$'
expect_line feedback '^dispatches: 3$'
# Without feedback the state is borrowed: a new state buffer every call.
expect_ok no_feedback '^device_allocations: 1$' \
  "$RUN" --module=stream.kiln --function=step --input=64xf32=1 --input=64xf32=0 \
  --repeat=3 --stats-steady

# Output storage written in place: no allocation, no copy, even the first time.
expect_ok storage '^result\[0\]: tensor<64xf32> = \[3, 3, ' \
  "$RUN" --module=own.kiln --function=write_output --input=64xf32=1.5 --output-storage --stats
expect_line storage '^device_allocations: 0$'
expect_line storage '^copies: 0$'
expect_ok storage_steady '^host_allocations_invoke: 0$' \
  "$RUN" --module=own.kiln --function=write_output --input=64xf32=1.5 --output-storage \
  --repeat=4 --stats-steady
# A program that ignores the storage: one counted copy into it.
expect_ok storage_copy '^copies: 1$' \
  "$RUN" --module=own.kiln --function=ignore_output --input=64xf32=1.5 --output-storage --stats
expect_line storage_copy '^result\[0\]: tensor<64xf32> = \[3, 3, '
# Written to a file through the storage.
"$RUN" --module=own.kiln --function=write_output --input=64xf32=2 --output-storage \
  --output=@y.npy >out.txt 2>err.txt || fail "storage_file: $(cat err.txt)"
[ -s y.npy ] || fail "storage_file: y.npy not written"

# Usage errors.
expect_err feedback_range 'has 2 results and 2 arguments' \
  "$RUN" --module=stream.kiln --function=step --input=64xf32=1 --input=64xf32=0 --feedback=0:9
expect_err feedback_syntax "bad --feedback '1'" \
  "$RUN" --module=stream.kiln --function=step --input=64xf32=1 --input=64xf32=0 --feedback=1
"$RUN" --help | grep -q -- '--output-storage' || fail "help: --output-storage"
"$RUN" --help | grep -q -- '--feedback=R:A' || fail "help: --feedback"

if [ $failures -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all kiln-run ownership checks passed"
