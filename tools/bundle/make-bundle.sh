#!/bin/bash
# make-bundle.sh -- assemble the relocatable metacl bundle (doc/bundle.md): a folder that runs
# metacl and the OpenCL test programs on any x86-64 Linux with only a GPU driver installed.
#
#   tools/bundle/make-bundle.sh --build WORKDIR [--srcdir DIR] [--out DIR] [--tarball FILE] [--jobs N]
#       copy the source (a git checkout: its tracked and untracked-not-ignored files, so local
#       edits are in; else a plain copy, unconfigured) to WORKDIR/src, configure it in
#       WORKDIR/build with --disable-native --with-mpi=no --enable-opencl=yes, build metacl and
#       the four test programs, then assemble as below. `make bundle` runs this.
#   tools/bundle/make-bundle.sh --from-build BUILDDIR [--srcdir DIR] [--out DIR] [--tarball FILE]
#       assemble from a build that exists (fast; tests/test-bundle.sh uses it). Its configure
#       flags are recorded in the manifest as they are (-march=native, MPI and the test hooks
#       included, when that build has them).
#   common: --out DIR (default ./bundle; replaced), --tarball FILE (also write FILE, a .tar.gz
#       unpacking to metacl-bundle/), --no-strip (keep the debug information of our binaries).
#
# The folder: run (the wrapper, tools/bundle/bundle-run.sh), bin/ (the real ELF files, not libtool's
# wrapper scripts: metacl, test-ops, test-srwm, test-opencl, test-backends-mlp), lib/ (libmetacl,
# every library they need as ldd resolves it on this machine -- CLBlast, the ICD loader, libc
# and the dynamic loader included -- and the rest of glibc's libraries, so that a driver that
# needs libpthread or librt gets the bundle's glibc, not a host one of another version),
# tools/ (gpu-check.sh, gpu-ab.sh and the PyTorch twins of the benchmarks), README.md (doc/bundle.md) and
# MANIFEST.txt (versions, build flags, git commit, every file with its package and role).
# RPATH/RUNPATH entries are removed (patchelf): the loader searches the bundle's lib/ only
# because run says so (--library-path).
set -euo pipefail

me=make-bundle.sh
die() { echo "$me: $*" >&2; exit 1; }
say() { echo "$me: $*"; }

usage() {
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

srcdir=$(cd "$(dirname "$0")/../.." && pwd -P)
mode='' work='' builddir='' out=bundle tarball='' strip=1 jobs=2
while [ $# -gt 0 ]; do
    case $1 in
    --build) [ $# -ge 2 ] || die "--build needs a directory"; mode=build work=$2; shift 2 ;;
    --from-build) [ $# -ge 2 ] || die "--from-build needs a directory"; mode=from builddir=$2; shift 2 ;;
    --srcdir) [ $# -ge 2 ] || die "--srcdir needs a directory"; srcdir=$(cd "$2" && pwd -P); shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a directory"; out=$2; shift 2 ;;
    --tarball) [ $# -ge 2 ] || die "--tarball needs a file name"; tarball=$2; shift 2 ;;
    --no-strip) strip=0; shift ;;
    --jobs) [ $# -ge 2 ] || die "--jobs needs a number"; jobs=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
    esac
done
[ -n "$mode" ] || die "give --build WORKDIR or --from-build BUILDDIR (--help)"
# is DIR the top of a git checkout (not a folder inside another one, such as make distcheck's)?
git_top() { [ "$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$1" && pwd -P)" ]; }
[ "$(uname -m)" = x86_64 ] || die "the bundle is for x86-64 Linux; this machine is $(uname -m)"
for t in ldd objdump tar sha256sum; do
    command -v "$t" >/dev/null || die "$t is needed (Debian: binutils, libc-bin, tar, coreutils)"
done

# ------------------------------------------------------------------ --build: a pristine build
if [ "$mode" = build ]; then
    mkdir -p "$work"
    work=$(cd "$work" && pwd -P)
    case $work/ in "$srcdir"/*)
        # inside the source tree: it must be ignored there, or it would copy itself
        if git_top "$srcdir" && ! git -C "$srcdir" check-ignore -q "$work"; then
            die "$work is inside $srcdir and not ignored by git"
        fi ;;
    esac
    copy=$work/src
    mkdir -p "$copy"
    say "copying the source of $srcdir to $copy"
    if git_top "$srcdir"; then
        # tracked + untracked-not-ignored files that exist (a deleted tracked file is skipped);
        # tar keeps their times, so a rebuild after an edit recompiles what changed
        (cd "$srcdir" && git ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
            tar --null -T - -cf -) | tar -C "$copy" -xf -
    else
        (cd "$srcdir" && tar -cf - --exclude=./.git --exclude='./build-san*' --exclude='./metacl-*' \
            --exclude=./bundle --exclude=./bundle-build --exclude='*.o' --exclude='*.lo' \
            --exclude=.libs --exclude=.deps .) | tar -C "$copy" -xf -
        if [ -f "$copy/config.status" ]; then
            (cd "$copy" && make distclean >/dev/null) || rm -f "$copy/config.status"
        fi
    fi
    if [ ! -x "$copy/configure" ]; then
        say "autoreconf -fi in $copy"
        (cd "$copy" && autoreconf -fi) || die "autoreconf failed"
    fi
    builddir=$work/build
    mkdir -p "$builddir"
    if [ ! -f "$builddir/config.status" ]; then
        say "configuring $builddir: --disable-native --with-mpi=no --enable-opencl=yes"
        (cd "$builddir" && "$copy/configure" --disable-native --with-mpi=no --enable-opencl=yes \
            > configure.out) || { tail -n 30 "$builddir/configure.out" >&2; die "configure failed"; }
    fi
    say "building metacl and the test programs in $builddir (make -j$jobs)"
    make -C "$builddir" -j"$jobs" metacl tests/test-ops tests/test-srwm tests/test-opencl \
        tests/test-backends-mlp || die "the build failed"
else
    [ -d "$builddir" ] || die "no build directory $builddir"
    builddir=$(cd "$builddir" && pwd -P)
fi

# ------------------------------------------------------------------ assemble
[ -f "$builddir/config.status" ] || die "$builddir is not a configured build (no config.status)"
grep -q '^#define MCL_HAVE_OPENCL 1' "$builddir/config.h" ||
    die "$builddir was built without the OpenCL backend: the bundle needs it (configure --enable-opencl=yes)"

is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 7f454c46 ]; }

# the real ELF file of a program of the build (libtool leaves a wrapper script in its place)
real_elf() {
    local p=$1 d b
    d=$(dirname "$p") b=$(basename "$p")
    for c in "$p" "$d/.libs/$b" "$d/.libs/lt-$b"; do
        if [ -f "$c" ] && is_elf "$c"; then echo "$c"; return 0; fi
    done
    return 1
}

PROGRAMS="metacl tests/test-ops tests/test-srwm tests/test-opencl tests/test-backends-mlp"
stage="$out.tmp.$$"
rm -rf "$stage"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/tools"
for p in $PROGRAMS; do
    elf=$(real_elf "$builddir/$p") || die "$builddir/$p is not built (make $p)"
    cp "$elf" "$stage/bin/$(basename "$p")"
done
libmetacl=$(ls "$builddir"/.libs/libmetacl.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$libmetacl" ] || die "no $builddir/.libs/libmetacl.so.* (is the build shared?)"
soname() { objdump -p "$1" | awk '$1 == "SONAME" {print $2}'; }
cp "$libmetacl" "$stage/lib/$(soname "$libmetacl")"

# Every library the programs need, as this machine's loader resolves it (libmetacl from the
# build). ldd lists the closure; the interpreter line is the dynamic loader.
deps=$stage/deps.txt
: > "$deps"
for f in "$stage"/bin/*; do
    LD_LIBRARY_PATH="$builddir/.libs" ldd "$f" > "$stage/ldd.out" 2>&1 || {
        cat "$stage/ldd.out" >&2; die "ldd $f failed"; }
    if grep -q 'not found' "$stage/ldd.out"; then
        grep 'not found' "$stage/ldd.out" >&2; die "$f needs libraries that are not found"
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// && $2 ~ /^\(/ {print "LOADER", $1}' \
        "$stage/ldd.out" >> "$deps"
done
interp=
libcdir=
while read -r name path; do
    case $name in
    LOADER) interp=$path; cp -L "$path" "$stage/lib/ld-linux-x86-64.so.2" ;;
    libmetacl.so.*) ;;
    *) [ -e "$stage/lib/$name" ] || cp -L "$path" "$stage/lib/$name"
       [ "$name" = libc.so.6 ] && libcdir=$(dirname "$path") ;;
    esac
done < <(sort -u "$deps")
[ -n "$interp" ] || die "ldd named no dynamic loader"
[ -n "$libcdir" ] || die "ldd named no libc.so.6"
case $(basename "$interp") in
ld-linux-x86-64.so.2) ;;
*) die "unexpected dynamic loader $interp (x86-64 glibc expected)" ;;
esac
# The rest of glibc, from libc's directory: a driver (or a library it needs) that links
# libpthread, libdl, librt, libm ... must get them from the same glibc as the bundle's libc.
GLIBC_LIBS="libc.so.6 libm.so.6 libmvec.so.1 libdl.so.2 libpthread.so.0 librt.so.1 libutil.so.1
libresolv.so.2 libanl.so.1 libnsl.so.1 libBrokenLocale.so.1 libthread_db.so.1 libc_malloc_debug.so.0
libnss_files.so.2 libnss_dns.so.2 libnss_compat.so.2 libnss_hesiod.so.2"
for l in $GLIBC_LIBS; do
    [ -e "$stage/lib/$l" ] || { [ -e "$libcdir/$l" ] && cp -L "$libcdir/$l" "$stage/lib/$l"; } || true
done
rm -f "$deps" "$stage/ldd.out"

# No RPATH/RUNPATH: a DT_RPATH is searched before --library-path and would reach past the
# bundle; a DT_RUNPATH after it, where it would only hide a missing library.
# (objdump's output is taken whole before grep reads it: under pipefail, `objdump | grep -q`
# fails whenever grep exits at its first match while objdump still writes, SIGPIPE, and the
# entry was then left in place at random — seen once in distcheck.)
for f in "$stage"/bin/* "$stage"/lib/*; do
    dyn=$(objdump -p "$f")
    if grep -Eq '^ *(RPATH|RUNPATH) ' <<<"$dyn"; then
        if command -v patchelf >/dev/null; then
            patchelf --remove-rpath "$f"
        else
            die "$f has an RPATH/RUNPATH and patchelf is not installed (Debian: apt-get install patchelf)"
        fi
    fi
done
if [ "$strip" = 1 ]; then
    command -v strip >/dev/null || die "strip is needed (binutils), or --no-strip"
    strip --strip-unneeded "$stage"/bin/* "$stage/lib/$(soname "$libmetacl")"
fi

# The wrapper, the GPU check with the PyTorch scripts it runs, the README.
cp "$srcdir/tools/bundle/bundle-run.sh" "$stage/run"
chmod 755 "$stage/run"
cp "$srcdir/tools/bundle/gpu-check.sh" "$stage/tools/gpu-check.sh"
chmod 755 "$stage/tools/gpu-check.sh"
# two builds timed against each other (gpu-ab.sh), with the comparison it runs (bench-ab.py and
# the statistics of bench-shared.py and t975.py, which it loads from its own folder)
cp "$srcdir/tools/bundle/gpu-ab.sh" "$stage/tools/gpu-ab.sh"
cp "$srcdir/tools/scripts/bench-ab.py" "$srcdir/tools/scripts/bench-shared.py" \
    "$srcdir/tools/scripts/t975.py" "$stage/tools/"
chmod 755 "$stage/tools/gpu-ab.sh"
mkdir -p "$stage/tools/torch"
for b in acl oct smn lm; do cp "$srcdir/tools/torch/bench-$b-torch.py" "$stage/tools/torch/"; done
cp "$srcdir/tools/torch/bench_common.py" "$srcdir/tools/torch/metanet_torch.py" "$stage/tools/torch/"
cp "$srcdir/doc/bundle.md" "$stage/README.md"
# CLBlast's GEMM tuners (Debian's clblast-utils), when installed here: `gpu-check.sh --tune`
# runs them on a GPU machine. They need only libraries the bundle has (libclblast, libOpenCL,
# libstdc++, libc).
for t in clblast_tuner_xgemm_direct clblast_tuner_xgemm; do
    p=$(command -v "$t" 2>/dev/null) || continue
    cp "$p" "$stage/bin/$t"
    chmod 755 "$stage/bin/$t"
done

# The bundle must start: metacl --version through the bundle's loader, with no driver.
version=$(env -u LD_LIBRARY_PATH "$stage/run" --no-driver metacl --version 2>&1) ||
    { echo "$version" >&2; die "the assembled bundle does not start: $stage/run metacl --version failed"; }

# ------------------------------------------------------------------ the manifest
mk=$builddir/Makefile
mkvar() { sed -n "s/^$1 = //p;T;q" "$mk"; }
commit=unknown
if git_top "$srcdir"; then
    commit=$(git -C "$srcdir" rev-parse HEAD)
    [ -z "$(git -C "$srcdir" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
        commit="$commit (with uncommitted changes)"
fi
conf_args=$(cd "$builddir" && ./config.status --config 2>/dev/null || echo unknown)
osname=$( (. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}") || echo unknown)
glibc=$("$stage/lib/libc.so.6" 2>/dev/null | head -n 1 || true)
grep -q '^#define MCL_HAVE_MPI 1' "$builddir/config.h" && mpi=yes || mpi=no
case " $(mkvar MCL_CFLAGS) " in *" -march=native "*) native="yes: runs only on CPUs with this one's instruction set";; *) native=no;; esac
grep -q '^#define MCL_TEST_HOOKS 1' "$builddir/config.h" && hooks=yes || hooks=no

# the Debian package of each library and its summary, when dpkg knows the file
declare -A pkg_of=() origin=()
while read -r name path; do origin[$name]=$path; done < <(
    for f in "$stage"/bin/*; do LD_LIBRARY_PATH="$builddir/.libs" ldd "$f"; done |
        awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// && $2 ~ /^\(/ {print "ld-linux-x86-64.so.2", $1}' | sort -u)
for l in $GLIBC_LIBS; do [ -n "${origin[$l]:-}" ] || origin[$l]=$libcdir/$l; done
if command -v dpkg >/dev/null; then
    paths=()
    for n in "${!origin[@]}"; do
        p=${origin[$n]}
        r=$(readlink -f "$p")
        paths+=("$p" "$r")
        case $r in /usr/lib/*) paths+=("${r#/usr}") ;; /lib/*) paths+=("/usr$r") ;; esac
    done
    while IFS= read -r line; do
        pk=${line%%: *} f=${line#*: }
        pk=${pk%%,*}
        for n in "${!origin[@]}"; do
            p=${origin[$n]} r=$(readlink -f "${origin[$n]}")
            case $f in "$p"|"$r"|"${r#/usr}"|"/usr$r") pkg_of[$n]=$pk ;; esac
        done
    done < <(dpkg -S "${paths[@]}" 2>/dev/null | grep -v '^diversion' || true)
fi
pkgline() { # package (version): summary
    local pk=${pkg_of[$1]:-}
    [ -n "$pk" ] || { echo "-"; return; }
    dpkg-query -W -f '${Package} ${Version}: ${binary:Summary}\n' "$pk" 2>/dev/null | head -n 1 || echo "$pk"
}
# "NEEDED-NAME FILE" for every file of the bundle, once
for f in "$stage"/bin/* "$stage"/lib/*; do
    objdump -p "$f" 2>/dev/null | awk -v f="${f#"$stage"/}" '$1 == "NEEDED" {print $2, f}'
done > "$stage/needed.txt"
needed_by() { # the bundle's files whose NEEDED names $1 (the first 6, then a count)
    awk -v n="$1" '$1 == n {c++; if (c <= 6) s = s (s == "" ? "" : " ") $2}
        END {if (c > 6) s = s " and " (c - 6) " more"; print s}' "$stage/needed.txt"
}
role() {
    case $1 in
    ld-linux-x86-64.so.2) echo "the dynamic loader (glibc): run starts every program through it" ;;
    libc.so.6) echo "the C library (glibc)" ;;
    libmetacl.so.*) echo "metacl's library, built from this source; the OpenCL kernels are embedded in it" ;;
    libOpenCL.so.1) echo "the OpenCL ICD loader (ocl-icd): loads the driver named by run's vendor folder" ;;
    libclblast.so.*) echo "CLBlast: the OpenCL backend's matrix products" ;;
    libgomp.so.*) echo "GNU OpenMP runtime: the reference backend's threads" ;;
    libstdc++.so.*|libgcc_s.so.*) echo "C++/GCC runtime (CLBlast)" ;;
    libpng16.so.*|libz.so.*) echo "PNG and zlib: data sets, checkpoints" ;;
    libcjson.so.*) echo "cJSON: stroke data sets, configs" ;;
    libcairo.so.*) echo "cairo: the CLI's figures (PNG/SVG/PDF)" ;;
    libmpi.so.*|libopen-*.so.*) echo "Open MPI (this build has the MPI path)" ;;
    *) case " $(echo $GLIBC_LIBS) " in
       *" $1 "*) echo "glibc, for a driver that links it" ;;
       *) echo "needed by a library above" ;;
       esac ;;
    esac
}
prog_role() {
    case $1 in
    metacl) echo "the metacl CLI" ;;
    test-ops) echo "differential op tests, reference vs OpenCL (--family F)" ;;
    test-srwm) echo "SRWM op tests on both backends" ;;
    test-opencl) echo "OpenCL backend tests: Philox on the device, program cache, device choice, OOM" ;;
    test-backends-mlp) echo "60 MLP training steps on both backends, compared" ;;
    *) echo "-" ;;
    esac
}
{
    echo "metacl bundle: relocatable programs for x86-64 Linux (README.md; start them with ./run)"
    echo "created:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "metacl:         $(echo "$version" | paste -sd ';' - | sed 's/;/; /g')"
    echo "git commit:     $commit"
    echo "source:         $srcdir"
    echo "build:          $builddir ($mode)"
    echo "configure:      $conf_args"
    echo "CC:             $(mkvar CC) ($($(mkvar CC) --version 2>/dev/null | head -n 1))"
    echo "CFLAGS:         $(mkvar CFLAGS) $(mkvar MCL_CFLAGS) $(mkvar OPENMP_CFLAGS)"
    echo "march=native:   $native"
    echo "MPI:            $mpi"
    echo "test hooks:     $hooks"
    echo "stripped:       $([ $strip = 1 ] && echo yes || echo no)"
    echo "build host:     $osname, $(uname -m), ${glibc:-glibc ?}"
    echo
    echo "bin/ (the real ELF files; run PROG starts bin/PROG)"
    for f in "$stage"/bin/*; do
        n=$(basename "$f")
        printf '  %-22s %9s  %s\n    sha256 %s\n' "$n" "$(stat -c %s "$f")" "$(prog_role "$n")" \
            "$(sha256sum "$f" | cut -d' ' -f1)"
    done
    echo
    echo "lib/ (file, bytes, role; Debian package and version; needed by; sha256)"
    for f in "$stage"/lib/*; do
        n=$(basename "$f")
        printf '  %-26s %9s  %s\n' "$n" "$(stat -c %s "$f")" "$(role "$n")"
        case $n in libmetacl.so.*) echo "    package: built from this source" ;;
                   *) echo "    package: $(pkgline "$n"), from ${origin[$n]:-?}" ;; esac
        nb=$(needed_by "$n")
        echo "    needed by: ${nb:-(no file of the bundle: loaded by run, or for a driver)}"
        echo "    sha256 $(sha256sum "$f" | cut -d' ' -f1)"
    done
    echo
    echo "tools/: gpu-check.sh and gpu-ab.sh (doc/gpu.md; gpu-ab.sh's bench-ab.py and bench-shared.py) and the PyTorch twins of metacl bench: $(cd "$stage/tools" && ls torch/*.py | tr '\n' ' ')"
} > "$stage/MANIFEST.txt"
rm -f "$stage/needed.txt"

# ------------------------------------------------------------------ into place
rm -rf "$out"
mv "$stage" "$out"
trap - EXIT
say "bundle: $out ($(du -sh "$out" | cut -f1), $(ls "$out/lib" | wc -l) libraries)"
if [ -n "$tarball" ]; then
    parent=$(cd "$(dirname "$out")" && pwd -P)
    base=$(basename "$out")
    tar -C "$parent" --owner=0 --group=0 --numeric-owner \
        --transform "s,^$base,metacl-bundle," -czf "$tarball.tmp" "$base"
    mv "$tarball.tmp" "$tarball"
    say "tarball: $tarball ($(stat -c %s "$tarball") bytes; unpacks to metacl-bundle/)"
fi
