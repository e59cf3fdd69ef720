#!/bin/sh
# test-cli.sh — the metacl command line: exit codes (0 ok, 1 runtime, 2 usage) and messages.
# METACL points at the binary (set by the Makefile); default ./metacl.
METACL=${METACL:-./metacl}
# check / expect_text and the pass/fail counters (METACL_SRCDIR: set by the Makefile)
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"

echo "test-cli: binary $METACL (no randomness: no seed)"
check "no arguments is a usage error" 2 "$METACL"
expect_text "usage text" "usage: metacl"
check "help" 0 "$METACL" help
expect_text "help lists devices" "devices"
check "version" 0 "$METACL" version
expect_text "version string" "metacl "
check "unknown command" 2 "$METACL" frobnicate
expect_text "names the command" "frobnicate"
check "devices" 0 "$METACL" devices
expect_text "devices lists the reference backend" "ref"
check "devices --json" 0 "$METACL" devices --json
expect_text "json has the ref entry" '"ref"'
check "devices bad flag" 2 "$METACL" devices --bogus
expect_text "names the flag" "--bogus"
check "bench without a name" 2 "$METACL" bench
check "bench unknown" 2 "$METACL" bench nosuch
expect_text "names the benchmark" "nosuch"
check "bench gemm bad flag" 2 "$METACL" bench gemm --nope
check "bench acl bad flag" 2 "$METACL" bench acl --nope
expect_text "names the flag" "--nope"
check "bench acl unknown workload" 2 "$METACL" bench acl --only srwm,nosuch
expect_text "names the workload" "nosuch"
check "bench acl reps 0" 2 "$METACL" bench acl --reps 0
check "bench acl missing value" 2 "$METACL" bench acl --reps
check "bench acl unknown backend" 2 "$METACL" bench acl --backend cuda
check "bench acl srwm runs" 0 "$METACL" bench acl --backend ref --only srwm --reps 1 --json
expect_text "bench acl json" '"name":"srwm"'
check "bench smn unknown workload" 2 "$METACL" bench smn --only smn_wcst_window,nosuch
expect_text "names the workload" "nosuch"
check "bench smn wcst window runs" 0 "$METACL" bench smn --backend ref --only smn_wcst_window --reps 1 --json
expect_text "bench smn json" '"name":"smn_wcst_window"'
expect_text "bench smn json has the window memory" '"log_bytes_sparse":'
expect_text "bench smn json has the dense figure" '"log_bytes_dense":'
check "bench smn table" 0 "$METACL" bench smn --backend ref --only smn_wcst_window --reps 1
expect_text "bench smn prints the memory under the table" "smn_wcst_window: window log before the gradient step:"
check "bench lm unknown workload" 2 "$METACL" bench lm --only lm_eval_static,nosuch
expect_text "names the workload" "nosuch"
check "bench lm static evaluation runs" 0 "$METACL" bench lm --backend ref --only lm_eval_static --reps 1 --json
expect_text "bench lm json" '"name":"lm_eval_static"'
expect_text "bench lm json has the throughput" '"bytes_per_s":'
check "bench lm table" 0 "$METACL" bench lm --backend ref --only lm_eval_static --reps 1
expect_text "bench lm prints the throughput under the table" "lm_eval_static: 128 bytes per iteration:"
check "selftest bad flag" 2 "$METACL" selftest --wat
check "selftest bad number" 2 "$METACL" selftest --steps abc
check "selftest steps out of range" 2 "$METACL" selftest --steps 0
check "selftest runs and learns" 0 "$METACL" selftest --steps 120
expect_text "selftest reports ok" "selftest: ok"
# An unwritable OpenCL kernel cache directory (XDG_CACHE_HOME is a file): PoCL would find no
# device; metacl says what is wrong and runs without a cache (when a device exists at all)
case "$("$METACL" devices --json 2>/dev/null)" in
*'"opencl":[{'*)
    CACHE_FILE=test-cli.cachefile.$$
    : >"$CACHE_FILE"
    check "unwritable cache: devices still listed" 0 env XDG_CACHE_HOME="$PWD/$CACHE_FILE" "$METACL" devices --json
    expect_text "unwritable cache: a device" '"device":"'
    expect_text "unwritable cache: says what is wrong" "is not writable"
    expect_text "unwritable cache: falls back" "running without a kernel cache"
    rm -f "$CACHE_FILE" ;;
*) echo "no OpenCL device: unwritable-cache check skipped" ;;
esac
# The harness itself must be able to fail: a command that exits 1 where 0 is expected.
saved_fail=$fail
check "deliberate mismatch (must be counted as a failure)" 0 sh -c 'exit 1' >/dev/null
if [ "$fail" -eq $((saved_fail + 1)) ]; then
    fail=$saved_fail; pass=$((pass + 1))
else
    echo "FAIL: the harness did not catch a deliberate mismatch"; fail=$((fail + 1))
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
