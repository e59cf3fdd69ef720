#!/bin/sh
# run -- start a program of the metacl bundle through the bundle's own dynamic loader and
# libraries (installed as <bundle>/run by tools/bundle/make-bundle.sh; doc/bundle.md).
#
# usage: run [--icd PATH]... [--no-driver] [--list-libs] PROG [ARGS...]
#        run --show [--icd PATH]...   print the vendor folder and the library path, run nothing
#        run --programs               list the programs in bin/
#
#   PROG           a program of bin/: metacl, test-ops, test-srwm, test-opencl, test-backends-mlp
#   --icd PATH     the OpenCL driver to use (repeatable): a driver's OpenCL library
#                  (libnvidia-opencl.so.1, libpocl.so.2, ...) or an .icd file naming one.
#                  Without it: the .icd files of $OCL_ICD_VENDORS (a folder, an .icd file or a
#                  library) or else of /etc/OpenCL/vendors, and the first of
#                  $METACL_RUN_FALLBACK_ICD (default /usr/local/nvidia/lib64/libnvidia-opencl.so.1
#                  and the usual NVIDIA library folders) that exists, unless an .icd file
#                  names a library of that name already.
#   --no-driver    no OpenCL driver at all (an empty vendor folder)
#   --list-libs    run PROG with the loader's LD_DEBUG report, then print every object loaded
#                  into the process ("libs: CLASS PATH (why)"): bundle (from this folder),
#                  driver (the OpenCL driver that the ICD loader opened, and what it needs from
#                  the host) or OUTSIDE (any other file from the host: the isolation is broken).
#                  Exit status: PROG's, or 3 when PROG succeeded but something is OUTSIDE.
#
# How: <bundle>/lib/ld-linux-x86-64.so.2 --library-path <bundle>/lib[:driver dirs][:$LD_LIBRARY_PATH][:fallback dirs]
# <bundle>/bin/PROG ARGS, with OCL_ICD_VENDORS set to a vendor folder made in a temporary
# directory ($TMPDIR or /tmp; removed at exit), so the bundle itself may be read-only.
# --library-path replaces LD_LIBRARY_PATH for this process and is not inherited by the
# programs it starts; the bundle's lib/ comes first, so libc, libm, libpthread, libstdc++ ...
# are always the bundle's (the loader takes a library whose soname is loaded already), and a
# driver's own dependencies (PoCL's LLVM, NVIDIA's libraries) are found after it, in the
# driver's folder, the host's $LD_LIBRARY_PATH, the folders of the fallback libraries that
# exist, the host's /etc/ld.so.cache and /lib, /usr/lib.
# LD_PRELOAD is dropped (it would load host libraries into the process).
set -eu

me=run
die() { echo "$me: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd -P)
ld=$here/lib/ld-linux-x86-64.so.2

usage() {
    sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"
}

icds=
list_libs=0 show=0 no_driver=0
nl='
'
while [ $# -gt 0 ]; do
    case $1 in
    --icd) [ $# -ge 2 ] || die "--icd needs a path"; icds="$icds$2$nl"; shift 2 ;;
    --icd=*) icds="$icds${1#--icd=}$nl"; shift ;;
    --no-driver) no_driver=1; shift ;;
    --list-libs) list_libs=1; shift ;;
    --show) show=1; shift ;;
    --programs) ls "$here/bin"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    -*) die "unknown option '$1' (run --help)" ;;
    *) break ;;
    esac
done
if [ "$show" = 0 ]; then
    [ $# -ge 1 ] || die "name a program: $(ls "$here/bin" | tr '\n' ' ')(run --help)"
    prog=$1
    shift
    case $prog in */*|.*|'') die "'$prog': name a program of $here/bin" ;; esac
    [ -f "$here/bin/$prog" ] || die "no program '$prog' in $here/bin (there: $(ls "$here/bin" | tr '\n' ' '))"
fi
[ -x "$ld" ] || die "$ld is missing: not a complete bundle"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/metacl-run.XXXXXX") || die "cannot make a temporary directory"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
vendors=$tmp/vendors
mkdir "$vendors"

driver_dirs=
n_icd=0
# add_icd LIB: one .icd file naming LIB (a path is made absolute and must exist; a bare name
# is left to the loader's search, as the host's ICD loader would do)
add_icd() {
    lib=$1
    case $lib in
    */*)
        case $lib in /*) ;; *) lib=$(pwd -P)/$lib ;; esac
        [ -e "$lib" ] || die "OpenCL driver library $lib does not exist"
        d=$(cd "$(dirname "$lib")" && pwd -P)
        case ":$driver_dirs:" in *":$d:"*) ;; *) driver_dirs=$driver_dirs:$d ;; esac ;;
    esac
    n_icd=$((n_icd + 1))
    printf '%s\n' "$lib" > "$vendors/$n_icd-$(basename "$lib").icd"
}
# the library an .icd file names: its first line, blanks trimmed
icd_lib() { sed -n '1{s/^[[:space:]]*//;s/[[:space:]]*$//;p;}' "$1"; }
# add PATH given by the user: an .icd file or a library
add_given() {
    case $1 in
    *.icd) [ -f "$1" ] || die "no .icd file $1"; l=$(icd_lib "$1")
           [ -n "$l" ] || die "$1 names no library"; add_icd "$l" ;;
    *) add_icd "$1" ;;
    esac
}

how=
fallback=${METACL_RUN_FALLBACK_ICD-/usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1}
if [ "$no_driver" = 1 ]; then
    how="none (--no-driver)"
elif [ -n "$icds" ]; then
    old_ifs=$IFS IFS=$nl
    set -f
    for p in $icds; do IFS=$old_ifs; add_given "$p"; done
    set +f
    IFS=$old_ifs
    how="--icd"
else
    src=${OCL_ICD_VENDORS:-/etc/OpenCL/vendors}
    if [ -d "$src" ]; then
        for f in "$src"/*.icd; do
            [ -f "$f" ] || continue
            l=$(icd_lib "$f")
            case $l in
            '') continue ;;
            */*) if [ ! -e "$l" ]; then
                     echo "$me: $f names $l, which does not exist: skipped" >&2
                     continue
                 fi ;;
            esac
            add_icd "$l"
        done
        how="the .icd files of $src"
    elif [ -n "${OCL_ICD_VENDORS:-}" ]; then
        add_given "$OCL_ICD_VENDORS"
        how="OCL_ICD_VENDORS=$OCL_ICD_VENDORS"
    fi
    # The first fallback library that exists is added as well, unless an .icd file names a
    # library of the same name: a GPU image may list only a CPU driver in /etc/OpenCL/vendors
    # while the GPU's OpenCL library is mounted elsewhere (seen on the first GPU machine: one
    # pocl.icd that the bundle could not load, NVIDIA's library in /usr/local/nvidia/lib64,
    # and "no OpenCL platform found"). metacl prefers a GPU among the platforms it gets.
    for f in $fallback; do
        [ -e "$f" ] || continue
        named=0
        for g in "$vendors"/*.icd; do
            [ -f "$g" ] || continue
            [ "$(basename "$(cat "$g")")" = "$(basename "$f")" ] && named=1
        done
        if [ "$named" = 0 ]; then
            add_icd "$f"
            if [ "$n_icd" = 1 ]; then how="$f (no .icd files in $src)"; else how="$how, and $f"; fi
        fi
        break
    done
    if [ "$n_icd" = 0 ]; then
        how="none found"
        echo "$me: no OpenCL driver: no .icd file in $src, and no fallback library (${fallback:-none}) exists; give --icd PATH (only the reference backend is there now)" >&2
    fi
fi

# last, the folders of the fallback libraries that exist: an .icd file naming the NVIDIA
# library by its bare name finds it there even when no other path leads to it
last_dirs=
for f in $fallback; do
    [ -e "$f" ] || continue
    d=$(cd "$(dirname "$f")" && pwd -P)
    case ":$driver_dirs:${LD_LIBRARY_PATH:-}:$last_dirs:" in *":$d:"*) ;; *) last_dirs=$last_dirs:$d ;; esac
done
libpath=$here/lib$driver_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}$last_dirs
OCL_ICD_VENDORS=$vendors
export OCL_ICD_VENDORS
unset LD_PRELOAD

if [ "$show" = 1 ]; then
    echo "bundle:        $here"
    echo "loader:        $ld"
    echo "library path:  $libpath"
    echo "drivers from:  $how"
    for f in "$vendors"/*.icd; do
        [ -f "$f" ] && echo "vendor file:   $(basename "$f"): $(cat "$f")"
    done
    exit 0
fi

if [ "$list_libs" = 0 ]; then
    rc=0
    "$ld" --library-path "$libpath" "$here/bin/$prog" "$@" || rc=$?
    exit "$rc"
fi

# --list-libs: the loader reports every object it maps (LD_DEBUG=files,libs, one file per
# process); the program's own report is the one that names bin/PROG.
rc=0
LD_DEBUG=files,libs LD_DEBUG_OUTPUT=$tmp/ld "$ld" --library-path "$libpath" "$here/bin/$prog" "$@" || rc=$?
report=
for f in "$tmp"/ld.*; do
    [ -f "$f" ] || continue
    if grep -q "needed by $here/bin/$prog \[" "$f"; then report=$f; break; fi
done
if [ -z "$report" ]; then
    echo "libs: no loader report for $prog" >&2
    [ "$rc" = 0 ] && rc=3
    exit "$rc"
fi
outside=0
awk -v B="$here" -v LD="$ld" -v PROG="$here/bin/$prog" '
function base(p) { sub(/.*\//, "", p); return p }
function inside(p) { return index(p, B "/lib/") == 1 || index(p, B "/bin/") == 1 }
# a host object belongs to the driver when the ICD loader opened it, or when it was needed by
# (or opened by) an object of the driver
function driver(p, depth,   b, q) {
    if (depth > 64) return 0
    b = base(p)
    if (!(b in parent)) return 0
    q = parent[b]
    if (dl[b] && q == B "/lib/libOpenCL.so.1") return 1
    if (inside(q) || q == PROG) return 0
    return driver(q, depth + 1)
}
{ sub(/^[ \t]*[0-9]+:[ \t]?/, "") }
/^file=.*;  (needed|dynamically loaded) by / {
    name = $0; sub(/^file=/, "", name); sub(/ \[[0-9]+\];.*/, "", name)
    q = $0; sub(/.* by /, "", q); sub(/ \[[0-9]+\]$/, "", q)
    parent[base(name)] = q
    dl[base(name)] = ($0 ~ /dynamically loaded by/)
    next
}
/^ *trying file=/ { try = $0; sub(/^ *trying file=/, "", try); next }
/^file=.*;  generating link map/ {
    name = $0; sub(/^file=/, "", name); sub(/ \[[0-9]+\];.*/, "", name)
    p = (name ~ /\//) ? name : try
    if (!(p in seen)) { seen[p] = 1; order[++n] = p }
    next
}
/^calling init: / {
    p = substr($0, 15)
    if (!(p in seen)) { seen[p] = 1; order[++n] = p }
}
END {
    printf "libs: bundle  %s (the dynamic loader, started by run)\n", LD
    nb = 1; nd = 0; no = 0
    for (i = 1; i <= n; i++) {
        p = order[i]
        if (p == LD) continue
        b = base(p)
        why = (b in parent) ? ((dl[b] ? "opened by " : "needed by ") parent[b]) : "preloaded"
        if (inside(p)) { printf "libs: bundle  %s\n", p; nb++ }
        else if (driver(p, 0)) { printf "libs: driver  %s (%s)\n", p, why; nd++ }
        else { printf "libs: OUTSIDE %s (%s): a host file that is neither the bundle'"'"'s nor the OpenCL driver'"'"'s\n", p, why; no++ }
    }
    printf "libs: %d from the bundle, %d of the OpenCL driver, %d outside%s\n", nb, nd, no,
        no ? ": ISOLATION BROKEN" : ""
    exit no > 0
}' "$report" || outside=1
if [ "$rc" = 0 ] && [ "$outside" = 1 ]; then rc=3; fi
exit "$rc"
