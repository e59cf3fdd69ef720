#!/bin/sh
# gemm-vs-openblas.sh — compare the reference sgemm with OpenBLAS on the same shapes.
#
# usage: tools/scripts/gemm-vs-openblas.sh [path/to/metacl]        (default: ./metacl)
#   env: THREADS (default 2) threads for both; CC (default gcc) to build the OpenBLAS side.
#
# Runs `metacl bench gemm --json`, then tools/scripts/openblas_gemm.c (built here against OpenBLAS,
# in a temporary directory) with the same shapes, data and timing method, and prints
# GFLOP/s of both and the ratio metacl / OpenBLAS (for the fastest and the median call).
# OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the OpenBLAS run's environment,
# so OpenBLAS picks its kernels for this CPU by itself.
set -eu

METACL=${1:-./metacl}
THREADS=${THREADS:-2}
CC=${CC:-gcc}
here=$(cd "$(dirname "$0")" && pwd)

need_openblas() {
    echo "gemm-vs-openblas: OpenBLAS not found: apt-get install libopenblas-dev" >&2
    exit 1
}

if pkg-config --exists openblas 2>/dev/null; then
    ob_cflags=$(pkg-config --cflags openblas)
    ob_libs=$(pkg-config --libs openblas)
elif ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so '; then
    ob_cflags=""
    ob_libs="-lopenblas"
else
    need_openblas
fi

if [ ! -x "$METACL" ] && ! command -v "$METACL" >/dev/null 2>&1; then
    echo "gemm-vs-openblas: no metacl binary at '$METACL' (give its path as the first argument)" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gemm-vs-openblas.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# shellcheck disable=SC2086 # the flags are word lists
if ! "$CC" -std=c11 -O2 $ob_cflags -o "$tmp/openblas_gemm" "$here/openblas_gemm.c" $ob_libs \
    -lm 2>"$tmp/cc.log"; then
    cat "$tmp/cc.log" >&2
    need_openblas
fi

echo "metacl:   $METACL bench gemm --json --threads $THREADS"
if ! "$METACL" bench gemm --json --threads "$THREADS" >"$tmp/metacl.json"; then
    echo "gemm-vs-openblas: '$METACL bench gemm' failed" >&2
    exit 1
fi
printf 'OpenBLAS: '
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS="$THREADS" \
    "$tmp/openblas_gemm" >"$tmp/openblas.json" 2>"$tmp/openblas.log" || {
    cat "$tmp/openblas.log" >&2
    exit 1
}
cat "$tmp/openblas.log"

# Both files hold one {"ta": .., "tb": .., "M": .., "N": .., "K": .., "gflops_best": ..,
# "gflops_median": ..} per line. Join them on the shape (op(A) op(B) M x N x K).
awk '
function field(line, name,    rest) {
    rest = substr(line, index(line, "\"" name "\":") + length(name) + 3)
    sub(/^[ ]*/, "", rest)
    sub(/[,}].*$/, "", rest)
    return rest + 0
}
/"gflops_best"/ {
    shape = (field($0, "ta") ? "T" : "N") (field($0, "tb") ? "T" : "N") " " field($0, "M") "x" field($0, "N") "x" field($0, "K")
    if (FILENAME == ARGV[1]) {
        order[++n] = shape
        mb[shape] = field($0, "gflops_best"); mm[shape] = field($0, "gflops_median")
    } else {
        ob[shape] = field($0, "gflops_best"); om[shape] = field($0, "gflops_median")
    }
}
END {
    printf "\nGFLOP/s, best call / median call (op(A) op(B) M x N x K, row-major; T: transposed)\n"
    printf "%-19s %19s %19s %15s\n", "shape", "metacl", "OpenBLAS", "metacl/OpenBLAS"
    for (i = 1; i <= n; i++) {
        s = order[i]
        if (!(s in ob)) {
            printf "%-19s %8.1f / %8.1f %19s\n", s, mb[s], mm[s], "missing"
            continue
        }
        printf "%-19s %8.1f / %8.1f %8.1f / %8.1f %6.2f / %6.2f\n", s, mb[s], mm[s], ob[s], om[s],
               (ob[s] > 0 ? mb[s] / ob[s] : 0), (om[s] > 0 ? mm[s] / om[s] : 0)
    }
}' "$tmp/metacl.json" "$tmp/openblas.json"
