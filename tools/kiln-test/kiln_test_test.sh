#!/usr/bin/env bash
# kiln-test on a small bundle of ONNX node tests made by kiln-bundle:
#   kiln_test_test.sh KILN_BUNDLE KILN_TEST WORKDIR
# Checks: every test passes with the summary line; a corrupted expected
# output fails (exit 1, a FAIL line naming the element); --filter; a
# skip-listed test is counted as skipped; --junit; --stats; bad bundles exit 2.
set -euo pipefail
bundler="$1" runner="$2" work="$3"
rm -rf "$work"; mkdir -p "$work"
fail() { echo "FAILED: $*" >&2; exit 1; }

# test_abs/test_add/test_relu pass on the host; test_batchnorm_epsilon_training_mode
# is in onnx_node_skips.txt (written as skipped).
"$bundler" --onnx-node --filter='^node\.test_(abs|add|relu|batchnorm_epsilon_training_mode)$' --out="$work/b" \
  | tee "$work/bundle.log"
grep -q '^kiln-bundle: 4 tests (1 skipped)' "$work/bundle.log" || fail "bundle counts"
head -2 "$work/b/manifest.txt" | grep -q '^kiln-test-bundle 1$' || fail "manifest header"

"$runner" "$work/b" --stats --junit="$work/ok.xml" > "$work/ok.log" 2>&1 || { cat "$work/ok.log"; fail "clean bundle"; }
cat "$work/ok.log"
grep -q '^PASS node.test_abs (' "$work/ok.log" || fail "PASS line"
grep -q '^SKIP node.test_batchnorm_epsilon_training_mode: BatchNormalization in training mode' "$work/ok.log" || fail "SKIP line"
grep -q '^  stats: load_ms=.* dispatches=[1-9]' "$work/ok.log" || fail "--stats line"
[ "$(tail -1 "$work/ok.log")" = "3 passed, 0 failed, 1 skipped" ] || fail "summary"
grep -q 'tests="4" failures="0"' "$work/ok.xml" || fail "junit counts"
grep -q '<skipped message="BatchNormalization' "$work/ok.xml" || fail "junit skipped"

"$runner" "$work/b" --filter='abs|relu' > "$work/filter.log"
[ "$(tail -1 "$work/filter.log")" = "2 passed, 0 failed" ] || fail "--filter summary: $(tail -1 "$work/filter.log")"
[ "$("$runner" "$work/b" --list | wc -l)" = 4 ] || fail "--list"

# abs(x) != x for the test's negative inputs: expecting the input must fail.
cp "$work/b/node.test_abs/input_0.npy" "$work/b/node.test_abs/expected_0.npy"
set +e
"$runner" "$work/b" --junit="$work/bad.xml" > "$work/bad.log" 2>&1
rc=$?
set -e
cat "$work/bad.log"
[ "$rc" = 1 ] || fail "corrupted expected output: exit $rc, want 1"
grep -q '^FAIL node.test_abs: result 0: element [0-9]*: got' "$work/bad.log" || fail "FAIL line"
[ "$(tail -1 "$work/bad.log")" = "2 passed, 1 failed, 1 skipped" ] || fail "failing summary"
grep -q 'failures="1"' "$work/bad.xml" || fail "junit failure"

# Unreadable bundles: exit 2 with an error naming the problem.
mkdir -p "$work/empty"
set +e
"$runner" "$work/empty" 2> "$work/e1.log"; rc1=$?
printf 'kiln-test-bundle 1\ntest x dir=x inputs=1\n' > "$work/empty/manifest.txt"
"$runner" "$work/empty" 2> "$work/e2.log"; rc2=$?
"$runner" "$work/b" --filter='(' 2> "$work/e3.log"; rc3=$?
set -e
[ "$rc1" = 2 ] && grep -q 'cannot read .*manifest.txt' "$work/e1.log" || fail "missing manifest"
[ "$rc2" = 2 ] && grep -q 'manifest.txt:2: x: needs' "$work/e2.log" || fail "bad manifest"
[ "$rc3" = 2 ] && grep -q 'bad regular expression' "$work/e3.log" || fail "bad filter"
echo "kiln_test_test: ok"
