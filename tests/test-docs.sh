#!/bin/sh
# test-docs.sh — the public-API example printed in doc/api.md is exactly the program
# doc/examples/srwm-layer.c that make check builds, and it gives the same numbers on the
# reference and (when a device exists) the OpenCL backend.
set -u
src=${METACL_SRCDIR:-.}
bld=${METACL_BUILDDIR:-.}
fail=0
body=$(sed -n '/^#include <stdio.h>/,$p' "$src/doc/examples/srwm-layer.c")
snippet=$(awk '/^```c$/{on=1; next} /^```$/{if(on){exit}} on' "$src/doc/api.md")
if [ "$body" = "$snippet" ]; then
    echo "ok: doc/api.md shows doc/examples/srwm-layer.c verbatim"
else
    echo "FAIL: doc/api.md's example differs from doc/examples/srwm-layer.c"; fail=1
fi
# the same comparison must fail on a changed copy
if [ "$body" = "$(printf '%s\n' "$snippet" | sed 's/1e-5f/1e-4f/')" ]; then
    echo "FAIL: a changed snippet is not detected"; fail=1
else
    echo "ok: a changed snippet is detected"
fi
ex="$bld/doc/examples/srwm-layer"
ref=$("$ex" ref) || { echo "FAIL: $ex ref exited $?"; exit 1; }
echo "$ref"
ocl=$("$ex" opencl); rc=$?
if [ $rc -eq 77 ]; then
    echo "no OpenCL device: OpenCL run skipped"
elif [ $rc -ne 0 ]; then
    echo "FAIL: $ex opencl exited $rc"; fail=1
else
    echo "$ocl"
    # float32 with other summation orders: agree to 2e-5 (numbers are O(1))
    if printf '%s\n%s\n' "$ref" "$ocl" | awk -F'= ' 'NR==1{split($2,a," ")} NR==2{split($2,b," "); for(i=1;i<=4;i++){d=a[i]-b[i]; if(d<0)d=-d; if(d>2e-5) bad=1}} END{exit bad}'; then
        echo "ok: reference and OpenCL agree"
    else
        echo "FAIL: reference and OpenCL differ"; fail=1
    fi
fi
[ $fail -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
