#!/bin/sh
# test-device-choice.sh — the default OpenCL device is the first GPU of any platform (then an
# accelerator, then a CPU), whatever order the ICD loader returns the platforms in; --device N
# keeps counting in the listing order; a platform whose driver is missing or whose
# clGetDeviceIDs fails does not stop metacl, and `metacl devices` shows the failure.
#
# The platforms come from private ICD directories (OCL_ICD_VENDORS): PoCL (a CPU device) and
# oclgrind (a simulator whose device type is "accelerator, GPU, CPU, default": it counts as a
# GPU), a .icd naming a missing library, and tests/fake-icd.c (libmcl-fake-icd.so, built by
# make check), whose clGetDeviceIDs fails with CL_OUT_OF_RESOURCES. ocl-icd reads a directory
# in readdir order and then sorts platforms by their GPU count unless OCL_ICD_PLATFORM_SORT=none;
# with "none" the .icd file names are varied until PoCL comes first, so the test sees a GPU
# that is not device 0. Running kernels on oclgrind is slow: the one run there is stopped once
# it has said which device its context opened; the other runs use PoCL, whose program is
# cached.
#
# SKIP (77) only when PoCL or oclgrind is not installed, or metacl has no OpenCL backend.
set -u
. "${METACL_SRCDIR:-.}/tests/cli-lib.sh"
METACL=${METACL:-./metacl}
BLD=${METACL_BUILDDIR:-.}
unset METACL_DEVICE METACL_BACKEND METACL_SYNC OCL_ICD_FILENAMES OPENCL_VENDOR_PATH

if "$METACL" devices --json 2>/dev/null | grep -q '"opencl":null'; then
    echo "test-device-choice: metacl built without OpenCL: SKIP"; exit 77
fi
POCL_ICD=
for f in /etc/OpenCL/vendors/pocl*.icd; do [ -f "$f" ] && POCL_ICD=$f && break; done
OCLGRIND_LIB=
for f in /usr/lib/oclgrind/liboclgrind-rt-icd.so /usr/lib/*/oclgrind/liboclgrind-rt-icd.so \
         /usr/local/lib/oclgrind/liboclgrind-rt-icd.so; do
    [ -f "$f" ] && OCLGRIND_LIB=$f && break
done
if [ -z "$POCL_ICD" ] || [ -z "$OCLGRIND_LIB" ]; then
    echo "test-device-choice: needs PoCL (pocl-opencl-icd: ${POCL_ICD:-absent}) and oclgrind" \
         "(${OCLGRIND_LIB:-absent}): SKIP"
    exit 77
fi
FAKE_LIB=$BLD/tests/.libs/libmcl-fake-icd.so
case $FAKE_LIB in /*) ;; *) FAKE_LIB=$(pwd)/$FAKE_LIB ;; esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/metacl-devchoice.XXXXXX") || exit 1
trap 'rm -rf "$TMP"' EXIT

# devices_in DIR [VAR=VALUE...]: `metacl devices` with the ICDs of DIR only, into $LAST_OUT
devices_in() {
    _d=$1; shift
    check "metacl devices with the ICDs of $(ls "$_d" | tr '\n' ' ')" 0 \
        env OCL_ICD_VENDORS="$_d" "$@" "$METACL" devices
}
# the device line of `metacl devices` for index N
dev_line() { printf '%s\n' "$LAST_OUT" | grep "^  opencl $1[ (]"; }
# is_default N: the line of device N carries the default mark
is_default() { dev_line "$1" | grep -q "^  opencl $1 (default)"; }
# the index of the first device whose line contains $1 (empty if none)
index_of() { printf '%s\n' "$LAST_OUT" | grep "^  opencl [0-9]" | grep -i "$1" | head -n 1 | sed 's/^  opencl \([0-9]*\).*/\1/'; }
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; printf '%s\n' "$LAST_OUT" | sed 's/^/    /'; }

# 1. PoCL and oclgrind, PoCL's platform first (loader sorting off, file names varied until
#    the directory's order puts PoCL first).
found=
for names in "a b" "b a" "pocl oclgrind" "oclgrind pocl" "1 2" "2 1" "x y" "y x" "p q" "q p"; do
    set -- $names
    rm -rf "$TMP/two"; mkdir "$TMP/two"
    # (both creation orders: some file systems list the newest entry first)
    case $1 in
    [a1xp]*|pocl) cp "$POCL_ICD" "$TMP/two/$1.icd"; echo "$OCLGRIND_LIB" >"$TMP/two/$2.icd" ;;
    *) echo "$OCLGRIND_LIB" >"$TMP/two/$2.icd"; cp "$POCL_ICD" "$TMP/two/$1.icd" ;;
    esac
    out=$(OCL_ICD_VENDORS="$TMP/two" OCL_ICD_PLATFORM_SORT=none "$METACL" devices 2>&1)
    case $(printf '%s\n' "$out" | grep '^  platform 0 ') in
    *"Portable Computing Language"*) found=1; break ;;
    esac
done
if [ -z "$found" ]; then
    echo "FAIL: no file names made the ICD loader list PoCL before oclgrind"; fail=$((fail + 1))
else
    devices_in "$TMP/two" OCL_ICD_PLATFORM_SORT=none
    pocl=$(index_of "Portable Computing Language"); grind=$(index_of "oclgrind")
    if [ "$pocl" = 0 ] && [ -n "$grind" ]; then ok; else bad "PoCL is device 0 and oclgrind listed (pocl=$pocl, oclgrind=$grind)"; fi
    if [ -n "$grind" ] && is_default "$grind"; then ok; else bad "PoCL first: the oclgrind device (the GPU) is the default"; fi
    expect_text "the oclgrind device is typed GPU" "GPU"
    # the check must be able to fail: PoCL, device 0, is not marked
    if is_default 0; then bad "device 0 (PoCL, a CPU) is marked the default"; else ok; fi
    # JSON: one default, the oclgrind device
    check "devices --json (PoCL first)" 0 env OCL_ICD_VENDORS="$TMP/two" OCL_ICD_PLATFORM_SORT=none "$METACL" devices --json
    if printf '%s\n' "$LAST_OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
devs = d["opencl"]
defs = [x for x in devs if x["default"]]
assert len(defs) == 1, defs
assert "GPU" in defs[0]["type"] and defs[0]["index"] != 0, defs[0]
assert devs[0]["type"] == "CPU", devs[0]
assert [p["error"] for p in d["opencl_platforms"]] == [None, None], d["opencl_platforms"]
'; then ok; else bad "devices --json: one default, the GPU, not device 0"; fi
    # a context opened without --device is on the oclgrind device: one run on it, stopped as
    # soon as it says which device it opened (its program builds in about a second; the
    # simulated training would take far longer)
    : >"$TMP/grind.err"
    OCL_ICD_VENDORS="$TMP/two" OCL_ICD_PLATFORM_SORT=none XDG_CACHE_HOME="$TMP/cache" \
        "$METACL" selftest --backend opencl --steps 1 >/dev/null 2>"$TMP/grind.err" &
    pid=$!
    i=0
    while [ $i -lt 600 ] && ! grep -qs "OpenCL device" "$TMP/grind.err" && kill -0 $pid 2>/dev/null; do
        sleep 0.1; i=$((i + 1))
    done
    kill $pid 2>/dev/null; wait $pid 2>/dev/null
    LAST_OUT=$(cat "$TMP/grind.err")
    expect_text "a context opened by default is on the oclgrind device" "OpenCL device $grind: Oclgrind"
    # --device 0 keeps meaning the first device listed: PoCL (a cheap run: its program is cached)
    check "selftest --device 0 (PoCL first)" 0 env OCL_ICD_VENDORS="$TMP/two" OCL_ICD_PLATFORM_SORT=none \
        "$METACL" selftest --backend opencl --device 0 --steps 2
    expect_text "--device 0 is the first device listed, PoCL" "OpenCL device 0:"
    expect_text "... on PoCL's platform" "platform Portable Computing Language"
fi
# the loader's own order (GPUs first): the default is still the oclgrind device
devices_in "$TMP/two"
grind=$(index_of "oclgrind")
if [ -n "$grind" ] && is_default "$grind"; then ok; else bad "loader-sorted: the oclgrind device is the default"; fi

# 2. PoCL only: the default is PoCL's CPU device, and a run opens it.
mkdir "$TMP/pocl"; cp "$POCL_ICD" "$TMP/pocl/"
devices_in "$TMP/pocl"
if is_default 0 && dev_line 0 | grep -q "CPU"; then ok; else bad "PoCL alone: its CPU device is the default"; fi
check "selftest on the default device, PoCL alone" 0 env OCL_ICD_VENDORS="$TMP/pocl" \
    "$METACL" selftest --backend opencl --steps 2
expect_text "the run names its device" "OpenCL device 0:"
expect_text "... a CPU" "(CPU; platform Portable Computing Language"

# 3. PoCL next to a .icd naming a missing library and the fake driver whose clGetDeviceIDs
#    fails: metacl still works on PoCL, and `metacl devices` shows the failing platform.
mkdir "$TMP/broken"; cp "$POCL_ICD" "$TMP/broken/"
echo "/nonexistent/libmetacl-missing-driver.so" >"$TMP/broken/missing.icd"
if [ -f "$FAKE_LIB" ]; then
    echo "$FAKE_LIB" >"$TMP/broken/fake.icd"
    devices_in "$TMP/broken"
    expect_text "the failing platform is listed with its error" "clGetDeviceIDs failed: CL_OUT_OF_RESOURCES"
    expect_text "... by name" "metacl fake broken platform"
    pocl=$(index_of "Portable Computing Language")
    if [ -n "$pocl" ] && is_default "$pocl"; then ok; else bad "with a broken platform: PoCL is the default"; fi
    check "devices --json with a broken platform" 0 env OCL_ICD_VENDORS="$TMP/broken" "$METACL" devices --json
    if printf '%s\n' "$LAST_OUT" | python3 -c '
import json, sys
d = json.load(sys.stdin)
errs = {p["name"]: p["error"] for p in d["opencl_platforms"]}
assert errs.get("metacl fake broken platform") == "CL_OUT_OF_RESOURCES", errs
assert len(d["opencl"]) == 1 and d["opencl"][0]["default"], d["opencl"]
'; then ok; else bad "devices --json: the broken platform's error, PoCL the default"; fi
    check "selftest with a broken platform installed" 0 env OCL_ICD_VENDORS="$TMP/broken" \
        "$METACL" selftest --backend opencl --steps 2
    expect_text "... runs on PoCL" "platform Portable Computing Language"
    # the broken platform alone: no device, a clear error naming it
    mkdir "$TMP/only-broken"; echo "$FAKE_LIB" >"$TMP/only-broken/fake.icd"
    check "selftest with only the broken platform" 1 env OCL_ICD_VENDORS="$TMP/only-broken" \
        "$METACL" selftest --backend opencl --steps 2
    expect_text "the error names the broken platform's failure" "clGetDeviceIDs failed with CL_OUT_OF_RESOURCES"
else
    echo "FAIL: $FAKE_LIB is missing (make check builds it)"; fail=$((fail + 1))
fi
# the missing library alone is skipped by the loader: PoCL still runs
rm -f "$TMP/broken/fake.icd"
check "selftest next to a .icd naming a missing library" 0 env OCL_ICD_VENDORS="$TMP/broken" \
    "$METACL" selftest --backend opencl --steps 2

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
