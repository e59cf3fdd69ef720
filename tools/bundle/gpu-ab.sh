#!/bin/bash
# gpu-ab.sh -- two builds of metacl timed against each other on one machine (a GPU machine's
# device call, doc/gpu.md "Before and after on the GPU"): the benchmarks of bundle A and
# bundle B run alternately, round after round, so both see the same machine; then
# tools/scripts/bench-ab.py turns the records into per-round speed-ups with a 95 % interval.
#
# usage: gpu-ab.sh A B [--out DIR] [--rounds N] [--reps R] [--benches LIST] [--only LIST]
#                  [--env-a K=V]... [--env-b K=V]... [--backend opencl|ref]
#
#   A, B           the two builds: bundle tarballs (make bundle's metacl-bundle.tar.gz) or
#                  unpacked bundle folders; the same one twice with --env-a / --env-b compares
#                  two settings of one build
#   --out DIR      where bench-ab.txt, bundles.txt and (with python3) bench-ab.json and
#                  bench-ab.md go (default $OUT)
#   --rounds N     rounds (default 5, 1..30); each round runs every bench of A, then of B
#   --reps R       timed repetitions per bench run (default 3)
#   --benches L    comma-separated benches of `metacl bench` (default acl,oct,smn,lm)
#   --only L       passed to every bench as --only L (so with one bench in --benches)
#   --env-a/-b K=V an environment variable for A's (B's) runs only; repeatable
#   --backend B    the backend of every bench (default opencl)
#
# bench-ab.txt holds one `metacl bench --json` record per line, preceded by the build's tag and
# the round ("TAG ROUND JSON"); the tags are the bundles' commits (12 hex digits, from their
# MANIFEST.txt), or "a" and "b" when the two are the same commit. A bench run that fails is
# noted on stderr and left out (bench-ab.py compares the rounds both builds have).
# Exit status: 0; 1 when a bundle cannot be unpacked or no record was written; 2 on bad
# arguments.
set -u
me=gpu-ab
die() { echo "$me: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; }
here=$(cd "$(dirname "$0")" && pwd -P)
out=${OUT:-} rounds=5 reps=3 benches=acl,oct,smn,lm only='' backend=opencl
env_a=() env_b=() builds=()
while [ $# -gt 0 ]; do
    case $1 in
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a number"; rounds=$2; shift 2 ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps=$2; shift 2 ;;
    --benches) [ $# -ge 2 ] || die "--benches needs a list"; benches=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs a list"; only=$2; shift 2 ;;
    --env-a) [ $# -ge 2 ] || die "--env-a needs K=V"; env_a+=("$2"); shift 2 ;;
    --env-b) [ $# -ge 2 ] || die "--env-b needs K=V"; env_b+=("$2"); shift 2 ;;
    --backend) [ $# -ge 2 ] || die "--backend needs ref or opencl"; backend=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) die "unknown option '$1' (--help)" ;;
    *) builds+=("$1"); shift ;;
    esac
done
[ ${#builds[@]} = 2 ] || die "give two builds, A and B (bundle tarballs or folders; --help)"
case $rounds in [1-9]|[12][0-9]|30) ;; *) die "--rounds takes a number from 1 to 30" ;; esac
case $reps in ''|*[!0-9]*|0) die "--reps takes a positive number" ;; esac
case $backend in opencl|ref) ;; *) die "--backend: opencl or ref" ;; esac
case ,$benches, in *,,*) die "--benches: an empty name in '$benches'" ;; esac
for b in ${benches//,/ }; do
    case $b in acl|oct|smn|lm) ;; *) die "--benches: '$b' is not acl, oct, smn or lm" ;; esac
done
for kv in "${env_a[@]}" "${env_b[@]}"; do
    case $kv in [A-Za-z_]*=*) ;; *) die "--env-a/--env-b take K=V, not '$kv'" ;; esac
done
[ -n "$out" ] || die "give --out DIR (or set \$OUT)"
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd -P)
work=$(mktemp -d "${TMPDIR:-/tmp}/metacl-gpu-ab.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache # a program cache of their own, shared by both builds' runs

# unpack: a tarball into work/X, a folder as it is -> the bundle folder
bundle_of() { # src X
    if [ -d "$1" ]; then
        (cd "$1" && pwd -P)
    else
        mkdir -p "$work/$2" && tar -xzf "$1" -C "$work/$2" || return 1
        local d
        for d in "$work/$2"/*/; do [ -x "$d/run" ] && { (cd "$d" && pwd -P); return 0; }; done
        return 1
    fi
}
A=$(bundle_of "${builds[0]}" a) && [ -x "$A/run" ] || { echo "$me: ${builds[0]}: no bundle there" >&2; exit 1; }
B=$(bundle_of "${builds[1]}" b) && [ -x "$B/run" ] || { echo "$me: ${builds[1]}: no bundle there" >&2; exit 1; }
commit() { awk '/^git commit:/ {print substr($3, 1, 12); exit}' "$1/MANIFEST.txt" 2>/dev/null; }
ta=$(commit "$A") tb=$(commit "$B")
if [ -z "$ta" ] || [ -z "$tb" ] || [ "$ta" = "$tb" ]; then ta=a tb=b; fi
{
    echo "A $ta ${builds[0]} ${env_a[*]:-}"
    echo "B $tb ${builds[1]} ${env_b[*]:-}"
} > "$out/bundles.txt"
echo "$me: A = $ta (${builds[0]}${env_a[*]:+, ${env_a[*]}}), B = $tb (${builds[1]}${env_b[*]:+, ${env_b[*]}}); $rounds rounds of $benches, $reps reps"

lines=$out/bench-ab.txt
: > "$lines"
onlyarg=()
[ -n "$only" ] && onlyarg=(--only "$only")
for ((r = 1; r <= rounds; r++)); do
    for side in a b; do
        if [ $side = a ]; then dir=$A tag=$ta envs=("${env_a[@]}"); else dir=$B tag=$tb envs=("${env_b[@]}"); fi
        for b in ${benches//,/ }; do
            rec=$(env "${envs[@]}" timeout 300 "$dir/run" metacl bench "$b" --backend "$backend" --json \
                      --reps "$reps" "${onlyarg[@]}" 2>"$work/err" | grep '^{"bench"' | tail -n 1)
            if [ -n "$rec" ]; then
                printf '%s %d %s\n' "$tag" "$r" "$rec" >> "$lines"
            else
                echo "$me: round $r, $tag, bench $b wrote no record: $(tail -n 1 "$work/err")" >&2
            fi
        done
    done
    echo "$me: round $r of $rounds done"
done
[ -s "$lines" ] || { echo "$me: no record was written" >&2; exit 1; }
ab=$here/../scripts/bench-ab.py
[ -f "$ab" ] || ab=$here/bench-ab.py
if command -v python3 >/dev/null && [ -f "$ab" ]; then
    python3 "$ab" "$lines" --a "$ta" --b "$tb" --json > "$out/bench-ab.json" &&
        python3 "$ab" "$lines" --a "$ta" --b "$tb" | tee "$out/bench-ab.md"
fi
exit 0
