#!/bin/sh
# test-kernel-align.sh — no kernel reads or writes memory through a pointer cast to a wider
# vector type (float2 *, int4 *, ...) than the pointer it came from.
#
# Why: a vector access (ld.shared.v2.f32 on NVIDIA) needs the vector's alignment, but a
# `__local float *` or `__global float *` argument only promises the alignment of a float.
# NVIDIA's OpenCL faulted on exactly that (attn_kv_fwd's `(__local float2 *)lf`, first GPU
# run, doc/gpu.md): the whole context then failed with CL_OUT_OF_RESOURCES. PoCL and oclgrind
# accepted it. Declare the argument with the vector type (the runtime then aligns it), use
# vload/vstore, or keep the components in separate scalar arrays.
# Self-test: a planted cast must be found (the check can fail).
set -u
src=${METACL_SRCDIR:-$(dirname "$0")/..}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-kernel-align.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# casts such as (__local float2 *), (__global const int4 *), (float4 *) in kernel sources
pattern='\( *((__|)(local|global|private|constant) +)?(const +)?(u?char|u?short|u?int|u?long|half|float|double)(2|3|4|8|16) *\*+ *\)'

check() { # FILES... -> the offending lines in $tmp/hits; returns 1 when there are any
    ! grep -nE "$pattern" "$@" >"$tmp/hits"
}

fail=0
n=$(ls "$src"/kernels/*.cl | wc -l)
[ "$n" -ge 10 ] || { echo "FAIL: found only $n kernel files in $src/kernels"; exit 1; }
if check "$src"/kernels/*.cl; then
    echo "PASS: no pointer cast to a vector type in $n kernel files"
else
    echo "FAIL: pointer casts to a vector type (an alignment the pointer does not promise):"
    sed 's/^/  /' "$tmp/hits"
    fail=1
fi

# self-test: the cast that faulted on NVIDIA, and two other spellings, must be caught
printf '%s\n' '    __local float2 *zrow = (__local float2 *)lf;' >"$tmp/planted1.cl"
printf '%s\n' '    const float4 v = *((__global const float4 *)(x + 4 * i));' >"$tmp/planted2.cl"
printf '%s\n' '    int2 *p = (int2*)buf;' >"$tmp/planted3.cl"
for f in "$tmp"/planted*.cl; do
    if check "$f" >/dev/null; then
        echo "FAIL: self-test: the planted cast in $(basename "$f") was not caught: $(cat "$f")"
        fail=1
    fi
done
# and a plain scalar cast or a vector argument must not be
printf '%s\n' '    __local int *li = (__local int *)lf;' '__kernel void k(__local float2 *buf) {}' \
    >"$tmp/clean.cl"
check "$tmp/clean.cl" >/dev/null || { echo "FAIL: self-test: a scalar cast was reported"; fail=1; }
[ $fail = 0 ] && echo "PASS: self-test (3 planted casts caught, scalar casts and vector arguments not)"
exit $fail
