#!/bin/sh
# test-ops-break.sh -- proves that the op test runner can fail.
#
# METACL_TEST_BREAK=OP perturbs OP's output: the reference forward's (by the runner) with
# --backend ref, the OpenCL backend's own (by the backend) with --backend opencl. Each run must
# exit 1 and report the op as FAIL in the right column. Checked for add (the simplest op), for
# grad_preproc and smn_write (the Sparse Meta Networks ops, whose written set and gradient
# oracle checks run besides the table's) and for rel_attn (Transformer-XL attention: its
# gradient oracle, thread and public-wrapper checks run besides the table's). Two copies of the
# kernels with one deliberate bug each must fail too: a relu backward that leaves fresh
# gradient elements unwritten, and a rel_attn backward with a wrong dr. An op taken out of a
# backend's bwd_fresh_aware table (METACL_TEST_UNLIST) must be named by the check of unlisted
# backwards that ask for fresh gradients. Exit 0 when all do, 1 otherwise.
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

# expect_kernel_break FILE SED OP PATTERN WHAT: a copy of the kernels with the sed script SED
# applied to kernels/FILE (it must change the file) must make `test-ops --backend opencl -o OP`
# exit 1 with an output line matching PATTERN (grep). WHAT names the broken code.
expect_kernel_break() {
    src=${METACL_SRCDIR:-$(dirname "$0")/..}/kernels
    tmp=$(mktemp -d) || return 1
    cp "$src"/*.cl "$tmp"/ || { rm -rf "$tmp"; return 1; }
    sed "$2" "$src/$1" >"$tmp/$1"
    if cmp -s "$src/$1" "$tmp/$1"; then
        echo "test-ops-break: FAILED: could not make $5 (kernel text changed?)"
        rm -rf "$tmp"
        return 1
    fi
    out=$(METACL_KERNEL_DIR=$tmp METACL_NO_CACHE=1 "$TEST_OPS" --backend opencl -o "$3" 2>&1)
    rc=$?
    rm -rf "$tmp"
    printf '%s\n' "$out"
    if [ "$rc" -eq 77 ]; then
        echo "test-ops-break: no OpenCL device: $5 is not checked"
        return 0
    fi
    if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "$4"; then
        echo "test-ops-break: FAILED: $5 was not caught (exit $rc)"
        return 1
    fi
    echo "test-ops-break: $5 was caught"
}

# The fresh-buffer check of the lazy zeroing: a relu backward that, when it stores into a fresh
# gradient buffer, skips the elements with a <= 0 (the lazy zeroing then leaves them unwritten,
# NaN under the runner's METACL_DEBUG_POISON) must FAIL relu in [opencl bwd].
expect_fresh_break() {
    expect_kernel_break activation.cl \
        's/ga\[ga_off + i\] = a\[a_off + i\] > 0.0f ? g\[g_off + i\] : 0.0f;/if (a[a_off + i] > 0.0f) ga[ga_off + i] = g[g_off + i];/' \
        relu "^FAIL relu .*\[opencl bwd\]: .*fresh buffers" \
        "a relu_bwd that leaves fresh elements unwritten"
}

# The check that every backward asking mcl_*_grad_fresh is in its backend's bwd_fresh_aware:
# with METACL_TEST_UNLIST=ref:inorm_relu (then opencl:inorm_relu) that backend treats the op as
# unlisted, and its backward must FAIL with the message that names it.
expect_unlisted_break() {
    for mode in ref opencl; do
        out=$(METACL_TEST_UNLIST=$mode:inorm_relu "$TEST_OPS" --backend "$mode" -o inorm_relu 2>&1)
        rc=$?
        if [ "$mode" = opencl ] && [ "$rc" -eq 77 ]; then
            echo "test-ops-break: no OpenCL device: the OpenCL table's check is not checked"
            continue
        fi
        if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "^FAIL inorm_relu .*\[$mode bwd\]: .*is not in bwd_fresh_aware"; then
            printf '%s\n' "$out" | tail -5
            echo "test-ops-break: FAILED: --backend $mode with METACL_TEST_UNLIST=$mode:inorm_relu exited $rc, want 1 and the unlisted-backward message"
            return 1
        fi
        echo "test-ops-break: inorm_relu taken out of the $mode table was reported"
    done
}

# A wrong gradient the forward cannot show: rel_attn's dr kernel skipping the first query at
# each distance d >= M (it drops the pairs with key 0: d < M + i instead of d <= M + i) must
# FAIL rel_attn in [opencl bwd] on the gradient of r (gin[4]), against the reference backward.
expect_rel_attn_dr_break() {
    expect_kernel_break attention.cl \
        's/if (i >= 0 && d < T && d <= M + i && (win == 0 || d <= win)) {/if (i >= 0 \&\& d < T \&\& d < M + i \&\& (win == 0 || d <= win)) {/' \
        rel_attn "^FAIL rel_attn .*\[opencl bwd\]: gin\[4\]" \
        "a rel_attn dr kernel that skips the first query at each distance"
}

# test-naive's same-bits check of a fused op against its ops in a row: conv_inorm_pool_relu's
# bias gradient compared with conv2d's moved by one float step must FAIL there.
expect_naive_break() {
    naive=$(dirname "$TEST_OPS")/test-naive
    out=$(METACL_TEST_BREAK=conv_inorm_pool_relu "$naive" 2>&1)
    rc=$?
    if [ "$rc" -ne 1 ] || ! printf '%s\n' "$out" | grep -q "the gradient of bias differs"; then
        printf '%s\n' "$out" | tail -5
        echo "test-ops-break: FAILED: test-naive with METACL_TEST_BREAK=conv_inorm_pool_relu exited $rc, want 1 and a bias gradient that differs"
        return 1
    fi
    echo "test-ops-break: test-naive caught the planted bias gradient of conv_inorm_pool_relu"
}

status=0
for op in add grad_preproc smn_write rel_attn conv_inorm_pool_relu; do
    # reference only: the runner perturbs the reference forward output
    expect_break "$op" ref "ref fwd" || status=1
    # with OpenCL: the OpenCL backend perturbs its own output, the differential check must see it
    expect_break "$op" opencl "diff" || status=1
done
# the fresh-buffer check of the lazy zeroing
expect_fresh_break || status=1
# the check of the backends' bwd_fresh_aware tables
expect_unlisted_break || status=1
# test-naive's same-bits check of conv_inorm_pool_relu
expect_naive_break || status=1
# a wrong backward kernel, caught by the OpenCL backward against the reference's
expect_rel_attn_dr_break || status=1
[ "$status" -eq 0 ] && echo "test-ops-break: ok"
exit "$status"
