#!/bin/sh
# test-layout.sh — the dependency rules of doc/architecture.md hold: every #include "x.h" of a
# source directory resolves to a header in that directory or in one it may use. A header
# found in a directory it may not use is a FAIL (e.g. the engine including the OpenCL
# backend, the data code including a model).
set -u
src=${METACL_SRCDIR:-.}
cd "$src" || exit 1
fail=0 pass=0
# allowed(dir) -> the directories whose headers dir may include (besides itself)
allowed() {
    case $1 in
    src/common) echo "" ;;
    src/ref|src/ref/naive) echo "src/common src/ref src/ref/naive" ;;
    src/opencl) echo "src/common" ;;
    src/nn) echo "src/common" ;;
    src/data) echo "src/common" ;;
    src/data/prepare) echo "src/common src/data" ;;
    src/dist) echo "src/common" ;;
    src/learn) echo "src/common src/nn src/data src/dist" ;;
    src/models) echo "src/common src/nn src/data src/learn src/models/acl src/models/oct src/models/smn" ;;
    src/models/*) echo "src/common src/nn src/data src/learn" ;; # a family never includes another
    *) echo "" ;;
    esac
}
# where(header) -> the directory holding it (empty if none of ours: system or generated)
where() {
    for d in src/common src/ref src/ref/naive src/opencl src/nn src/data src/data/prepare \
             src/dist src/learn src/models src/models/acl src/models/oct src/models/smn tools/cli; do
        [ -f "$d/$1" ] && { echo "$d"; return; }
    done
}
check_dir() { # $1 = directory, $2 = deliberately wrong allowance (for the self-test) or ""
    dir=$1
    ok=$(allowed "$dir")
    [ -n "${2:-}" ] && ok=$2
    bad=0
    for f in "$dir"/*.c "$dir"/*.h; do
        [ -f "$f" ] || continue
        for h in $(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f"); do
            hd=$(where "$h")
            [ -z "$hd" ] && continue
            [ "$hd" = "$dir" ] && continue
            case " $ok " in *" $hd "*) continue ;; esac
            echo "FAIL: $f includes $h from $hd (allowed: ${ok:-nothing else})"
            bad=1
        done
    done
    return $bad
}
for d in src/common src/ref src/ref/naive src/opencl src/nn src/data src/data/prepare src/dist \
         src/learn src/models src/models/acl src/models/oct src/models/smn; do
    [ -d "$d" ] || continue
    if check_dir "$d" ""; then pass=$((pass + 1)); echo "ok: $d"; else fail=$((fail + 1)); fi
done
# the checker must catch a violation: src/learn with no allowance includes src/data headers
if check_dir src/learn "src/common" >/dev/null; then
    echo "FAIL: a forbidden include is not detected"; fail=$((fail + 1))
else
    echo "ok: a forbidden include is detected"; pass=$((pass + 1))
fi
# no engine file but backends.c names a backend constructor
if grep -l 'mcl_opencl_backend_create' src/common/*.c | grep -v 'src/common/backends.c' >/dev/null; then
    echo "FAIL: an engine file other than backends.c names the OpenCL backend"; fail=$((fail + 1))
else
    echo "ok: only src/common/backends.c names the backends"; pass=$((pass + 1))
fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
