#!/bin/sh
# test-ops-break.sh -- proves that the op test runner can fail.
#
# METACL_TEST_BREAK=OP perturbs OP's output: the reference forward's (by the runner) with
# --backend ref, the OpenCL backend's own (by the backend) with --backend opencl. Each run must
# exit 1 and report the op as FAIL in the right column. Checked for add (the simplest op) and
# for grad_preproc and smn_write (the Sparse Meta Networks ops, whose written set and gradient
# oracle checks run besides the table's). Exit 0 when all do, 1 otherwise.
# TEST_OPS overrides the binary. Otherwise: $METACL_BUILDDIR/tests/test-ops when the test
# harness exports METACL_BUILDDIR, else ./tests/test-ops (automake runs tests from the build
# directory), else the binary next to this script (run by hand from elsewhere).
#
# METACL_TEST_BREAK is a test hook, compiled in only with configure --enable-test-hooks; make
# check lists this test only in such a build (and exports METACL_HAVE_TEST_HOOKS=1). Told that
# the hooks are absent (METACL_HAVE_TEST_HOOKS=0), it exits 77 (skip).

if [ "${METACL_HAVE_TEST_HOOKS:-1}" = 0 ]; then
    echo "test-ops-break: no test hooks in this build (configure --enable-test-hooks): skipped"
    exit 77
fi

if [ -z "${TEST_OPS:-}" ]; then
    if [ -n "${METACL_BUILDDIR:-}" ] && [ -x "$METACL_BUILDDIR/tests/test-ops" ]; then
        TEST_OPS=$METACL_BUILDDIR/tests/test-ops
    elif [ -x ./tests/test-ops ]; then
        TEST_OPS=./tests/test-ops
    else
        TEST_OPS=$(dirname "$0")/test-ops
    fi
fi

# expect_break OP MODE COLUMN: the broken op must make the run exit 1 with a FAIL in COLUMN.
expect_break() {
    out=$(METACL_TEST_BREAK=$1 "$TEST_OPS" --backend "$2" -o "$1" 2>&1)
    rc=$?
    printf '%s\n' "$out"
    if [ "$2" = opencl ] && [ "$rc" -eq 77 ]; then
        echo "test-ops-break: no OpenCL device: the OpenCL part is not checked"
        return 0
    fi
    if [ "$rc" -ne 1 ]; then
        echo "test-ops-break: FAILED: --backend $2 with METACL_TEST_BREAK=$1 exited $rc, want 1"
        return 1
    fi
    if ! printf '%s\n' "$out" | grep -q "^FAIL $1 .*\[$3\]"; then
        echo "test-ops-break: FAILED: --backend $2 with METACL_TEST_BREAK=$1 printed no FAIL in [$3]"
        return 1
    fi
    echo "test-ops-break: $1, --backend $2: the broken op was reported in [$3]"
}

# expect_fresh_break: a copy of the kernels whose relu backward, when it stores into a fresh
# gradient buffer, skips the elements with a <= 0 (the lazy zeroing then leaves them unwritten,
# NaN under the runner's METACL_DEBUG_POISON) must make the fresh-buffer check FAIL relu in
# [opencl bwd].
expect_fresh_break() {
    src=${METACL_SRCDIR:-$(dirname "$0")/..}/kernels
    tmp=$(mktemp -d) || return 1
    cp "$src"/*.cl "$tmp"/ || { rm -rf "$tmp"; return 1; }
    sed 's/ga\[ga_off + i\] = a\[a_off + i\] > 0.0f ? g\[g_off + i\] : 0.0f;/if (a[a_off + i] > 0.0f) ga[ga_off + i] = g[g_off + i];/' \
        "$src/activation.cl" >"$tmp/activation.cl"
    if cmp -s "$src/activation.cl" "$tmp/activation.cl"; then
        echo "test-ops-break: FAILED: could not break relu_bwd's fresh store (kernel text changed?)"
        rm -rf "$tmp"
        return 1
    fi
    out=$(METACL_KERNEL_DIR=$tmp METACL_NO_CACHE=1 "$TEST_OPS" --backend opencl -o relu 2>&1)
    rc=$?
    rm -rf "$tmp"
    printf '%s\n' "$out"
    if [ "$rc" -eq 77 ]; then
        echo "test-ops-break: no OpenCL device: the fresh-buffer check is not checked"
        return 0
    fi
    if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "^FAIL relu .*\[opencl bwd\]: .*fresh buffers"; then
        echo "test-ops-break: FAILED: a relu_bwd that leaves fresh elements unwritten was not caught (exit $rc)"
        return 1
    fi
    echo "test-ops-break: the unwritten fresh gradient elements were reported in [opencl bwd]"
}

status=0
for op in add grad_preproc smn_write; do
    # reference only: the runner perturbs the reference forward output
    expect_break "$op" ref "ref fwd" || status=1
    # with OpenCL: the OpenCL backend perturbs its own output, the differential check must see it
    expect_break "$op" opencl "diff" || status=1
done
# the fresh-buffer check of the lazy zeroing
expect_fresh_break || status=1
[ "$status" -eq 0 ] && echo "test-ops-break: ok"
exit "$status"
