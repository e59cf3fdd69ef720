#!/bin/sh
# tests/test-oclgrind.sh -- every OpenCL kernel under oclgrind, the simulator that checks what
# GPUs punish (`make check-oclgrind` runs this script alone; `make check` runs it too).
#
# For every op family, `test-ops --backend opencl --family F --small 2000` (every op of
# ops.def, forward and backward, on its small and ragged cases: an op left without a case
# FAILS) runs under
#     oclgrind --data-races --check-api --log LOG
# which reports out-of-bounds reads and writes (always on), data races in global and local
# memory, barrier divergence and OpenCL API misuse. The family fails when test-ops fails or
# when the simulator's log is not empty. CLBlast's GEMM, batched GEMM and its pad/transpose
# kernels run there too, with our shapes (the matmul and conv families).
#
# Not used: --uninitialized. Debian's oclgrind 21.10 mistracks host writes and copies (see
# doc/opencl-backend.md, "Checking kernels under oclgrind"), crashes on several families
# and changes their results (shape, embed, srwm, attention, smn fail with the plugin loaded
# and pass without it), so its reports cannot decide anything. Reads of memory an op never
# wrote are caught instead by the runner's own checks: NaN-poisoned fresh buffers
# (METACL_DEBUG_POISON) and guard regions around every tensor.
#
# The check can fail, and proves it first: a copy of kernels/ with one planted out-of-bounds
# read (relu_fwd reads a million elements past its input) and one planted race (the
# work-group sum of common.cl without its loop barrier) must each be reported.
#
# Exit 77 (SKIP) only when oclgrind is not installed, this build has no OpenCL, or it is an
# AddressSanitizer build (oclgrind preloads its runtime, which ASan refuses).
set -u

srcdir=${METACL_SRCDIR:-$(dirname "$0")/..}
builddir=${METACL_BUILDDIR:-.}
TEST_OPS=${TEST_OPS:-$builddir/tests/test-ops}
SMALL=${METACL_OCLGRIND_SMALL:-2000}

if ! command -v oclgrind >/dev/null 2>&1; then
    echo "test-oclgrind: oclgrind is not installed (Debian: apt-get install oclgrind) (SKIP)"
    exit 77
fi
if ! grep -q '^#define MCL_HAVE_OPENCL' "$builddir/config.h" 2>/dev/null; then
    echo "test-oclgrind: this build has no OpenCL backend (SKIP)"
    exit 77
fi

if grep -Eq '^CFLAGS = .*-fsanitize=address' "$builddir/Makefile" 2>/dev/null; then
    # oclgrind runs the program with its runtime preloaded, which AddressSanitizer refuses
    # (its runtime must come first); the plain build of the same source runs this check.
    echo "test-oclgrind: an AddressSanitizer build cannot run under oclgrind's preloaded runtime (SKIP)"
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/metacl-oclgrind.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
# The program cache is keyed by platform, so oclgrind's binary never mixes with PoCL's; a
# private cache keeps the run independent of the user's.
XDG_CACHE_HOME=$tmp/cache
export XDG_CACHE_HOME

# run_sim LOG ARGS...: test-ops under the simulator; prints the test-ops summary line.
run_sim() {
    log=$1
    shift
    rm -f "$log"
    oclgrind --data-races --check-api --log "$log" "$TEST_OPS" --backend opencl "$@" \
        >"$log.out" 2>&1
    rc=$?
    touch "$log"
    return $rc
}

# check LABEL LOGNAME ARGS...: one test-ops run under the simulator; prints one line, and
# sets fail=1 when test-ops fails or the simulator reported anything.
check() {
    label=$1
    name=$2
    shift 2
    start=$(date +%s)
    run_sim "$tmp/$name.log" "$@"
    rc=$?
    secs=$(($(date +%s) - start))
    summary=$(tail -n 1 "$tmp/$name.log.out")
    reports=$(grep -c . "$tmp/$name.log")
    if [ "$rc" -eq 0 ] && [ "$reports" -eq 0 ]; then
        echo "test-oclgrind: $label: $summary, no simulator reports (${secs} s)"
    else
        echo "test-oclgrind: FAIL: $label: test-ops exit $rc ($summary), $reports lines of simulator reports:"
        head -n 60 "$tmp/$name.log"
        grep -E '^FAIL' "$tmp/$name.log.out" | head -n 20
        fail=1
    fi
}

# 1. The check can fail: planted bugs are reported.
mkdir -p "$tmp/planted"
cp "$srcdir"/kernels/*.cl "$tmp/planted/"
cp -r "$tmp/planted" "$tmp/oob" && cp -r "$tmp/planted" "$tmp/race"
sed -i 's/    float x = a\[a_off + i\];\(.*\)$/    float x = a[a_off + i + 1048576];\1/' "$tmp/oob/activation.cl"
# the loop barrier of mcl_group_sum (the first barrier of common.cl)
sed -i '0,/        barrier(CLK_LOCAL_MEM_FENCE);/{/        barrier(CLK_LOCAL_MEM_FENCE);/d}' "$tmp/race/common.cl"
if cmp -s "$tmp/oob/activation.cl" "$tmp/planted/activation.cl" ||
   cmp -s "$tmp/race/common.cl" "$tmp/planted/common.cl"; then
    echo "test-oclgrind: FAIL: could not plant the bugs (kernels changed? update the sed lines)"
    exit 1
fi
fail=0
METACL_KERNEL_DIR=$tmp/oob run_sim "$tmp/oob.log" -o relu --small 100
if grep -qi 'invalid read' "$tmp/oob.log"; then
    echo "test-oclgrind: the planted out-of-bounds read is reported: ok"
else
    echo "test-oclgrind: FAIL: a planted out-of-bounds read in relu_fwd was not reported"
    cat "$tmp/oob.log" "$tmp/oob.log.out"
    fail=1
fi
METACL_KERNEL_DIR=$tmp/race run_sim "$tmp/race.log" -o sum_last --small 100
if grep -qi 'data race' "$tmp/race.log"; then
    echo "test-oclgrind: the planted race is reported: ok"
else
    echo "test-oclgrind: FAIL: a planted race (mcl_group_sum without its barrier) was not reported"
    cat "$tmp/race.log" "$tmp/race.log.out"
    fail=1
fi

# The simulator's own problems that the backend works around (tests/oclgrind-repro.c): say
# whether they still reproduce, so that a newer oclgrind shows when a workaround can go.
repro=$builddir/tests/oclgrind-repro
if [ -x "$repro" ]; then
    oclgrind --uninitialized --log "$tmp/store.log" "$repro" store >/dev/null 2>&1
    if grep -q 'Uninitialized' "$tmp/store.log"; then
        echo "test-oclgrind: oclgrind still mistracks host stores (--uninitialized reports stored data): the fill_f32/copy_fwd path of buffers.c is still needed"
    else
        echo "test-oclgrind: note: this oclgrind tracks host stores; --uninitialized may now be usable"
    fi
    if oclgrind "$repro" select >/dev/null 2>&1; then
        echo "test-oclgrind: note: this oclgrind picks vector words right; rng.cl's bit selects are no longer needed for it"
    else
        echo "test-oclgrind: oclgrind still picks the wrong vector word (rng.cl keeps its bit selects)"
    fi
fi

# 2. Every family, clean.
families=$("$TEST_OPS" --families | awk '{print $1}')
if [ -z "$families" ]; then
    echo "test-oclgrind: FAIL: test-ops --families printed nothing"
    exit 1
fi
for f in $families; do
    check "$f" "$f" --family "$f" --small "$SMALL"
done

# 3. CLBlast's indirect path (Xgemm with its copy, pad and transpose kernels, in the context's
# temporary GEMM buffer), which only products of 160^3 and more take otherwise: the matmul
# family and conv2d (whose GEMMs work on the scratch buffer) again with every product sent
# there (METACL_TEST_GEMM_INDIRECT, a test hook: builds with --enable-test-hooks only).
if [ "${METACL_HAVE_TEST_HOOKS:-0}" = 1 ]; then
    METACL_TEST_GEMM_INDIRECT=1
    export METACL_TEST_GEMM_INDIRECT
    check "matmul through CLBlast's indirect path" indirect --family matmul --small 300
    check "conv2d through CLBlast's indirect path" indirect-conv -o conv2d --small 300
    unset METACL_TEST_GEMM_INDIRECT
else
    echo "test-oclgrind: CLBlast's indirect path not checked: this build has no test hooks (configure --enable-test-hooks)"
fi

# 4. The bias gradients as a GPU sums them: oclgrind counts as a CPU device, whose bias
# gradients of up to 8 chunks of 64 rows take one launch (mcl_ocl_bias_one_launch), so the
# small cases never reach the two-pass kernels there (bias_add_bwd_part, bias_gelu_bwd_part,
# bias_add2_bwd_part, bias_dropout_relu_bwd_part with bias_add_bwd_sum); a GPU takes them
# above one chunk. The families of the bias ops again with the GPU's limit.
METACL_OCL_BIAS_ONE_CHUNKS=1
export METACL_OCL_BIAS_ONE_CHUNKS
for f in elementwise activation dropout; do
    check "$f with a GPU's bias-gradient passes" "gpu-bias-$f" --family "$f" --small "$SMALL"
done
unset METACL_OCL_BIAS_ONE_CHUNKS
exit $fail
