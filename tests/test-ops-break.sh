#!/bin/sh
# test-ops-break.sh -- proves that the op test runner can fail.
#
# METACL_TEST_BREAK=add makes tests/test-ops perturb add's reference forward output; the run
# must then exit 1 and print FAIL. Exit 0 when it does, 1 when the runner missed the break.
# TEST_OPS overrides the binary. Otherwise: $METACL_BUILDDIR/tests/test-ops when the test
# harness exports METACL_BUILDDIR, else ./tests/test-ops (automake runs tests from the build
# directory), else the binary next to this script (run by hand from elsewhere).

if [ -z "${TEST_OPS:-}" ]; then
    if [ -n "${METACL_BUILDDIR:-}" ] && [ -x "$METACL_BUILDDIR/tests/test-ops" ]; then
        TEST_OPS=$METACL_BUILDDIR/tests/test-ops
    elif [ -x ./tests/test-ops ]; then
        TEST_OPS=./tests/test-ops
    else
        TEST_OPS=$(dirname "$0")/test-ops
    fi
fi

out=$(METACL_TEST_BREAK=add "$TEST_OPS" -o add 2>&1)
rc=$?
printf '%s\n' "$out"

if [ "$rc" -ne 1 ]; then
    echo "test-ops-break: FAILED: '$TEST_OPS -o add' with METACL_TEST_BREAK=add exited $rc, want 1"
    exit 1
fi
if ! printf '%s\n' "$out" | grep -q FAIL; then
    echo "test-ops-break: FAILED: '$TEST_OPS -o add' with METACL_TEST_BREAK=add printed no FAIL"
    exit 1
fi
echo "test-ops-break: ok (the broken op was reported)"
exit 0
