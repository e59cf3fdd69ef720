#!/bin/sh
# test-opencl-teardown.sh — an OpenCL error in the middle of a run ends the process with exit 1
# and the error message, never with a signal: a kernel directory whose norm.cl starts with a NUL
# byte builds a program without the norm kernels, so step 1 fails at clCreateKernel. The backend
# must finish its queue and release CLBlast's cache, kernels, program, buffers, queue and context
# in that order (src/opencl/backend.c ocl_destroy); before that fix PoCL's compiler threads
# crashed the process at exit (SIGSEGV/SIGABRT) in some of the runs, so the run is repeated 5
# times, each with METACL_NO_CACHE=1 (the program really is built). Skipped (77) without an
# OpenCL device (`metacl devices --json` lists none).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-opencl-teardown.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"

case "$("$METACL" devices --json 2>/dev/null)" in
*'"opencl":[{'*) ;;
*) echo "no OpenCL device: skipped"; exit 77 ;;
esac
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
trap 'rm -rf "$TMP"' EXIT
prepare_hershey "$TMP/data"
cp -r "$SRCDIR/kernels" "$TMP/kern" && chmod -R u+w "$TMP/kern" &&
    printf '\000' | dd of="$TMP/kern/norm.cl" bs=1 count=1 conv=notrunc 2>/dev/null ||
    { echo "FAIL: cannot make the corrupted kernel directory"; exit 1; }
tiny_conf "$TMP/tiny.conf" "$TMP/data"
for i in 1 2 3 4 5; do
    check "corrupted kernels, run $i: exit 1" 1 env METACL_NO_CACHE=1 METACL_KERNEL_DIR="$TMP/kern" \
        "$METACL" train acl --config "$TMP/tiny.conf" --backend opencl --out "$TMP/run$i" --quiet
    expect_text "run $i: names the OpenCL failure" "OpenCL"
done
# the intact kernels still work (the test breaks only what it means to)
check "intact kernels: exit 0" 0 env METACL_NO_CACHE=1 "$METACL" train acl --config "$TMP/tiny.conf" \
    --backend opencl --out "$TMP/ok" --quiet --set train.steps=2
echo "test-opencl-teardown: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
