#!/bin/sh
# test-ops-break.sh -- proves that the op test runner can fail.
#
# METACL_TEST_BREAK=add makes tests/test-ops perturb add's reference forward output; the run
# must then exit 1 and print FAIL. Exit 0 when it does, 1 when the runner missed the break.
# TEST_OPS overrides the binary; automake runs tests from the build directory, so the default
# is ./tests/test-ops there.

TEST_OPS=${TEST_OPS:-./tests/test-ops}
if [ ! -x "$TEST_OPS" ]; then
    # run by hand from another directory: the binary next to this script
    TEST_OPS=$(dirname "$0")/test-ops
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
