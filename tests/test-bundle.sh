#!/bin/sh
# test-bundle.sh — the relocatable bundle (doc/bundle.md), assembled from this build by
# tools/bundle/make-bundle.sh --from-build (the fast mode; `make bundle` builds its own), moved to
# another folder and started from / with LD_LIBRARY_PATH unset:
#   - run metacl devices lists the OpenCL device, and an op family passes on it (test-ops
#     --backend opencl --family activation);
#   - every object in the process but the OpenCL driver's comes from the bundle, the dynamic
#     loader and libc included: run --list-libs says so, and the loader's own LD_DEBUG report
#     is checked here independently (no host file with the name of a bundled library);
#   - the bundle is left unchanged and the temporary vendor folder is removed;
#   - --icd (an .icd file, a library), the fallback driver path (METACL_RUN_FALLBACK_ICD, which
#     stands for /usr/local/nvidia/lib64/libnvidia-opencl.so.1) and "no driver";
#   - the checks fail on a bundle with a library deleted (libc.so.6; libclblast.so.1).
# SKIP (77) only when there is no OpenCL device (or no OpenCL backend in this build).
set -u
src=${METACL_SRCDIR:-.}
bld=${METACL_BUILDDIR:-.}
pass=0 fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit $?
}

if ! grep -q '^#define MCL_HAVE_OPENCL 1' "$bld/config.h" 2>/dev/null; then
    echo "test-bundle: built without the OpenCL backend: SKIP"; exit 77
fi
if grep -Eq '^CFLAGS = .*-fsanitize=address' "$bld/Makefile" 2>/dev/null; then
    # A bundle is made from a plain build (make bundle configures its own). In an ASan build
    # the sanitizer's interceptor is the caller of every dlopen, so the loader's report cannot
    # tell the driver that the ICD loader opened from any other host library.
    echo "test-bundle: an AddressSanitizer build (its dlopen interceptor hides who opened the driver): SKIP"; exit 77
fi
if [ "$(uname -m)" != x86_64 ]; then
    echo "test-bundle: the bundle is for x86-64 Linux: SKIP"; exit 77
fi
if ! "$bld/metacl" devices 2>&1 | grep -q '^  opencl [0-9]'; then
    echo "test-bundle: no OpenCL device: SKIP"; exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-bundle.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# ---------------------------------------------------------------- assemble, then move it
if "$src/tools/bundle/make-bundle.sh" --from-build "$bld" --srcdir "$src" --out "$tmp/made" \
        --tarball "$tmp/made.tar.gz" > "$tmp/make.log" 2>&1; then
    ok "make-bundle.sh --from-build assembled a bundle: $(tail -n 2 "$tmp/make.log" | tr '\n' ' ')"
else
    cat "$tmp/make.log"; bad "make-bundle.sh --from-build failed"; finish
fi
if tar -tzf "$tmp/made.tar.gz" | grep -qx 'metacl-bundle/run'; then
    ok "the tarball unpacks to metacl-bundle/"
else
    bad "the tarball has no metacl-bundle/run"
fi
mkdir -p "$tmp/elsewhere"
mv "$tmp/made" "$tmp/elsewhere/bundle"
B=$tmp/elsewhere/bundle

missing=
for f in run MANIFEST.txt README.md tools/gpu-check.sh tools/torch/bench-acl-torch.py tools/torch/bench_common.py tools/torch/metanet_torch.py \
         lib/ld-linux-x86-64.so.2 lib/libc.so.6 lib/libm.so.6 lib/libpthread.so.0 lib/libOpenCL.so.1 \
         lib/libclblast.so.1 lib/libmetacl.so.0 lib/libstdc++.so.6 lib/libgomp.so.1; do
    [ -e "$B/$f" ] || missing="$missing $f"
done
for p in metacl test-ops test-srwm test-opencl test-backends-mlp; do
    if [ "$(head -c 4 "$B/bin/$p" 2>/dev/null | od -An -tx1 | tr -d ' \n')" != 7f454c46 ]; then
        missing="$missing bin/$p(an ELF file)"
    fi
done
[ -z "$missing" ] && ok "the bundle has run, the manifest, the tools, the loader, libc, the ICD loader, CLBlast and the five programs as ELF files" ||
    bad "missing from the bundle:$missing"
rp=
for f in "$B"/bin/* "$B"/lib/*; do
    objdump -p "$f" 2>/dev/null | grep -Eq '^ *(RPATH|RUNPATH) ' && rp="$rp ${f#"$B"/}"
done
[ -z "$rp" ] && ok "no RPATH/RUNPATH in the bundle" || bad "RPATH/RUNPATH left in:$rp"
grep -q '^git commit: ' "$B/MANIFEST.txt" && grep -q 'libclblast.so.1' "$B/MANIFEST.txt" &&
    ok "MANIFEST.txt records the commit and the libraries" || bad "MANIFEST.txt lacks the commit or the library list"

# ---------------------------------------------------------------- run it
T=$tmp/tmpdir
mkdir -p "$T"
# R ...: start the bundle's run from /, without the host's library path or preloads; the vendor
# folder goes to $T, which must be empty afterwards
R() { (cd / && env -u LD_LIBRARY_PATH -u LD_PRELOAD TMPDIR="$T" "$@"); }
find "$B" -exec ls -ld --time-style=+%s.%N {} + 2>/dev/null | sort > "$tmp/before.txt"

out=$(R "$B/run" metacl devices 2>&1); rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q '^  opencl 0'; then
    ok "run metacl devices lists the OpenCL device: $(printf '%s\n' "$out" | grep '^  opencl 0' | cut -c1-100)"
else
    printf '%s\n' "$out"; bad "run metacl devices (exit $rc) lists no OpenCL device"
fi

R "$B/run" --list-libs test-ops --backend opencl --family activation > "$tmp/ops.out" 2>&1; rc=$?
if [ $rc -eq 0 ] && grep -Eq '^[0-9]+ passed, 0 failed' "$tmp/ops.out"; then
    ok "run test-ops --backend opencl --family activation: $(grep -E '^[0-9]+ passed' "$tmp/ops.out")"
else
    cat "$tmp/ops.out"; bad "run --list-libs test-ops --backend opencl --family activation exited $rc"
fi

# the table of run --list-libs: the loader and libc from the bundle, the driver from the host,
# nothing else outside; every bundle path inside $B, no driver file named like a bundled one
check_table() { # $1 = bundle, $2 = the output of run --list-libs; prints problems, exit 1 if any
    awk -v B="$1" '
    function base(p) { sub(/.*\//, "", p); return p }
    /^libs: / { rows++ }
    /^libs: bundle / { if (index($3, B "/") != 1) { print "bundle row outside " B ": " $3; bad = 1 }
                       if ($3 == B "/lib/ld-linux-x86-64.so.2") loader = 1
                       if ($3 == B "/lib/libc.so.6") libc = 1
                       if ($3 == B "/lib/libOpenCL.so.1") icd = 1 }
    /^libs: driver / { drv++; if (index($3, B "/") == 1) { print "driver row inside the bundle: " $3; bad = 1 }
                       d[++nd] = $3 }
    /^libs: OUTSIDE / { print "outside: " $3; bad = 1 }
    END {
        if (!rows) { print "no libs: table"; exit 1 }
        if (!loader) { print "the loader is not the bundle'"'"'s"; bad = 1 }
        if (!libc) { print "libc is not the bundle'"'"'s"; bad = 1 }
        if (!icd) { print "the ICD loader is not the bundle'"'"'s"; bad = 1 }
        if (!drv) { print "no OpenCL driver was loaded"; bad = 1 }
        for (i = 1; i <= nd; i++) {
            f = B "/lib/" base(d[i])
            if ((getline line < f) >= 0) { close(f); print "driver file named like a bundled library: " d[i]; bad = 1 }
        }
        exit bad
    }' "$2"
}
if problems=$(check_table "$B" "$tmp/ops.out"); then
    ok "run --list-libs: $(grep -E '^libs: [0-9]+ from' "$tmp/ops.out" | cut -c7-) (loader, libc, ICD loader from the bundle)"
else
    grep '^libs:' "$tmp/ops.out"; bad "run --list-libs table: $problems"
fi

# independently of run's own report: the loader's LD_DEBUG=files report of a run, read here.
# Every object it initialised is in the bundle unless the complete bundle has no library of
# its name (the driver and what it needs); libc is the bundle's.
ld_report() { # $1 = bundle, $2 = debug file prefix, $3 = lib/ of the complete bundle
    f=$(grep -l "needed by $1/bin/metacl \[" "$2".* 2>/dev/null | head -n 1)
    [ -n "$f" ] || { echo "no loader report"; return 1; }
    awk -v B="$1" -v REF="$3" '
    function base(p) { sub(/.*\//, "", p); return p }
    /calling init: / { p = $0; sub(/.*calling init: /, "", p); n++
        if (base(p) == "libc.so.6") libc = p
        if (index(p, B "/") != 1) { f = REF "/" base(p)
            if ((getline line < f) >= 0) { close(f); print "host file with a bundled name: " p; bad = 1 } } }
    END { if (n < 5) { print "only " n " objects in the report"; bad = 1 }
          if (libc != B "/lib/libc.so.6") { print "libc from " libc; bad = 1 }
          exit bad }' "$f"
}
rm -f "$tmp"/dbg.*
R env LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/dbg" "$B/run" metacl devices > /dev/null 2>&1
if problems=$(ld_report "$B" "$tmp/dbg" "$B/lib"); then
    ok "the loader's own report: every object of metacl devices but the driver's is the bundle's, libc too"
else
    bad "the loader's report: $problems"
fi

mkdir -p "$tmp/novendors"
# the driver that was used, for --icd and the fallback below
drvlib=$(awk '/^libs: driver .*\(opened by .*\/lib\/libOpenCL\.so\.1\)$/ {print $3; exit}' "$tmp/ops.out")
icdfile=
for f in /etc/OpenCL/vendors/*.icd; do [ -f "$f" ] && { icdfile=$f; break; }; done
if [ -n "$icdfile" ]; then
    R "$B/run" --icd "$icdfile" metacl devices 2>&1 | grep -q '^  opencl 0' &&
        ok "run --icd $icdfile finds the device" || bad "run --icd $icdfile finds no device"
fi
if [ -n "$drvlib" ]; then
    R "$B/run" --icd "$drvlib" metacl devices 2>&1 | grep -q '^  opencl 0' &&
        ok "run --icd $drvlib (a library) finds the device" || bad "run --icd $drvlib finds no device"
    out=$(R env OCL_ICD_VENDORS="$tmp/novendors" METACL_RUN_FALLBACK_ICD="$tmp/nothing.so $drvlib" \
          "$B/run" metacl devices 2>&1)
    printf '%s\n' "$out" | grep -q '^  opencl 0' &&
        ok "no .icd files: the first fallback library that exists is used (as /usr/local/nvidia/lib64/libnvidia-opencl.so.1 would be)" ||
        { printf '%s\n' "$out"; bad "the fallback driver library was not used"; }
    # an .icd file that names a driver the bundle cannot load (the first GPU machine had only
    # such a pocl.icd) must not hide the fallback library that exists
    mkdir -p "$tmp/badvendors"
    echo "libpocl.so.2.12.0" > "$tmp/badvendors/pocl.icd"           # a bare name, as seen there
    echo "$tmp/nothing-here/libOther.so" > "$tmp/badvendors/other.icd" # a path that is not there
    out=$(R env OCL_ICD_VENDORS="$tmp/badvendors" METACL_RUN_FALLBACK_ICD="$drvlib" \
          "$B/run" metacl devices 2>&1)
    printf '%s\n' "$out" | grep -q '^  opencl 0' &&
        ok "an .icd file naming a driver that does not load: the fallback library is used too" ||
        { printf '%s\n' "$out"; bad "an .icd file naming a missing driver hid the fallback library"; }
    # ... and one that names the fallback library already does not get it twice (two platforms)
    mkdir -p "$tmp/samevendors"
    basename "$drvlib" > "$tmp/samevendors/drv.icd"
    n=$(R env OCL_ICD_VENDORS="$tmp/samevendors" METACL_RUN_FALLBACK_ICD="$drvlib" "$B/run" --show 2>&1 |
        grep -c '^vendor file:')
    [ "$n" = 1 ] && ok "an .icd file naming the fallback library: one vendor file, not two" ||
        bad "an .icd file naming the fallback library: $n vendor files"
else
    bad "run --list-libs named no driver library opened by the ICD loader"
fi
out=$(R env OCL_ICD_VENDORS="$tmp/novendors" METACL_RUN_FALLBACK_ICD= "$B/run" metacl devices 2>&1); rc=$?
if [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -q 'no OpenCL driver' && ! printf '%s\n' "$out" | grep -q '^  opencl 0'; then
    ok "no driver anywhere: run says so and metacl runs with the reference backend only"
else
    printf '%s\n' "$out"; bad "no driver anywhere (exit $rc)"
fi
R "$B/run" --icd "$tmp/nothing.so" metacl devices > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "run --icd with a missing file fails (exit 2)" || bad "run --icd with a missing file exited $rc"

find "$B" -exec ls -ld --time-style=+%s.%N {} + 2>/dev/null | sort > "$tmp/after.txt"
if cmp -s "$tmp/before.txt" "$tmp/after.txt"; then
    ok "the bundle is unchanged by the runs (it may be read-only)"
else
    diff "$tmp/before.txt" "$tmp/after.txt" | head; bad "the runs changed the bundle"
fi
if [ -z "$(ls -A "$T")" ]; then
    ok "no temporary vendor folder is left in \$TMPDIR"
else
    ls -la "$T"; bad "run left files in \$TMPDIR"
fi

# ---------------------------------------------------------------- gpu-ab.sh: two builds alternated
# the tarball against the moved folder (the same commit: tags a and b), B with another setting
ab=$tmp/ab
if R bash "$src/tools/bundle/gpu-ab.sh" "$tmp/made.tar.gz" "$B" --rounds 2 --reps 1 --benches oct \
        --only attn_C0 --env-b METACL_OCL_BIAS_ONE_CHUNKS=1 --out "$ab" > "$tmp/ab.out" 2>&1 &&
   [ "$(cut -d' ' -f1,2 "$ab/bench-ab.txt" | tr '\n' ';')" = "a 1;b 1;a 2;b 2;" ] &&
   python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))
w = c["workloads"]
assert (c["a"], c["b"], c["rounds"]) == ("a", "b", 2), c
assert [(r["bench"], r["name"], r["rounds"]) for r in w] == [("oct", "attn_C0", 2)], w
assert w[0]["ci95"] is not None and w[0]["verdict"] in ("tie", "A faster", "B faster"), w' "$ab/bench-ab.json"; then
    ok "gpu-ab.sh: 2 rounds of A and B alternated (a 1, b 1, a 2, b 2), one comparison row with its interval"
else
    cat "$tmp/ab.out"; bad "gpu-ab.sh on the bundle"
fi
R bash "$src/tools/bundle/gpu-ab.sh" "$tmp/made.tar.gz" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && ok "gpu-ab.sh with one build: a usage error (exit 2)" || bad "gpu-ab.sh with one build exited $rc"

# ---------------------------------------------------------------- the checks can fail
for lib in libc.so.6 libclblast.so.1; do
    C=$tmp/broken-$lib
    cp -a "$B" "$C"
    rm -f "$C/lib/$lib"
    R "$C/run" --list-libs metacl devices > "$tmp/broken.out" 2>&1; rc=$?
    if [ $rc -ne 0 ] && grep -q "^libs: OUTSIDE .*/$lib " "$tmp/broken.out" && ! check_table "$C" "$tmp/broken.out" > /dev/null; then
        ok "without lib/$lib: run --list-libs fails (exit $rc) and names the host's $lib"
    else
        grep '^libs:' "$tmp/broken.out"; bad "without lib/$lib: run --list-libs exited $rc and the table passed"
    fi
    rm -f "$tmp"/dbg.*
    R env LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/dbg" "$C/run" metacl devices > /dev/null 2>&1
    if ld_report "$C" "$tmp/dbg" "$B/lib" > /dev/null; then
        bad "without lib/$lib: the loader-report check passed"
    else
        ok "without lib/$lib: the loader-report check fails"
    fi
    rm -rf "$C"
done
finish
