#!/bin/sh
# bench-mpi.sh — data-parallel ACL meta-training on this machine: steps per second with 1 and
# N MPI ranks (OMP_NUM_THREADS=1 per rank, the global batch fixed: strong scaling), the time
# per step spent in collectives (the gradient exchange), the parallel efficiency, and the
# gradient bytes per step (the inputs of doc/distributed.md's cost model).
#
#   tools/scripts/bench-mpi.sh [--ranks "1 2"] [--steps S] [--config NAME] [--json]
#
# Run from a build directory (./metacl) built with --with-mpi; the hershey and hanzi sets must
# be prepared (./metacl data prepare all). Each configuration runs once after a 3-step warm-up
# run; the numbers are wall-clock times of this machine, so run it on an idle machine.
set -eu
RANKS="1 2"
STEPS=30
CONFIG=acl-quick
JSON=0
while [ $# -gt 0 ]; do
    case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --config) CONFIG=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-mpi.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
case $STEPS in ''|*[!0-9]*) echo "bench-mpi.sh: --steps wants a number" >&2; exit 2 ;; esac
# a config NAME: data/configs/NAME.conf of this source tree
case $CONFIG in */*|*.conf) ;; *) [ -f "$(dirname "$0")/../../data/configs/$CONFIG.conf" ] && CONFIG="$(dirname "$0")/../../data/configs/$CONFIG.conf" ;; esac
METACL=${METACL:-./metacl}
[ -x "$METACL" ] || { echo "bench-mpi.sh: no $METACL here (run from the build directory or set METACL)" >&2; exit 1; }
MPIRUN=${MPIRUN:-mpirun}
command -v "$MPIRUN" >/dev/null 2>&1 || { echo "bench-mpi.sh: no $MPIRUN (Debian: apt-get install openmpi-bin)" >&2; exit 1; }
MPI="$MPIRUN --oversubscribe --bind-to none"
[ "$(id -u)" = 0 ] && MPI="$MPI --allow-run-as-root"
TMP=$(mktemp -d /tmp/bench-mpi.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=1 METACL_PROGRESS=0

# run N STEPS DIR: one training run with N ranks (N = 1: no mpirun), validation off
run() {
    sets="--set train.init= --set train.steps=$2 --set train.val_every=0 --set train.log_every=1 --set train.ckpt_every=1000000"
    if [ "$1" = 1 ]; then
        "$METACL" train acl --config "$CONFIG" --out "$3" $sets --quiet
    else
        $MPI -np "$1" "$METACL" train acl --config "$CONFIG" --out "$3" $sets --quiet
    fi
}

base_sps=
rows=
for n in $RANKS; do
    run "$n" 3 "$TMP/warm$n" >/dev/null 2>&1 || { echo "bench-mpi.sh: the warm-up run with $n ranks failed" >&2; run "$n" 3 "$TMP/warm$n-again" >&2; exit 1; }
    run "$n" "$STEPS" "$TMP/run$n" >"$TMP/out$n" 2>&1 || { cat "$TMP/out$n" >&2; exit 1; }
    # steps per second over the steps after the first (metrics.csv's train_s column)
    sps=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "train_s") c = i }
                   NR == 3 { t0 = $c; s0 = $1 } END { if (c && $c > t0) printf "%.4f", ($1 - s0) / ($c - t0); else print "nan" }' \
          "$TMP/run$n/metrics.csv")
    comm=$(sed -n 's/.*data parallel: \([0-9.]*\) ms per step in collectives.*/\1/p' "$TMP/run$n/log.txt" | tail -1)
    floats=$(sed -n 's/.*in [0-9]* parts, \([0-9]*\) gradient floats.*/\1/p' "$TMP/run$n/log.txt" | tail -1)
    [ -n "$comm" ] || comm=0
    [ -n "$base_sps" ] || base_sps=$sps
    rows="$rows$n $sps $comm ${floats:-0}
"
done

printf '%s' "$rows" | awk -v base="$base_sps" -v json="$JSON" -v cfg="$(basename "$CONFIG" .conf)" -v steps="$STEPS" '
    { n[NR] = $1; sps[NR] = $2; comm[NR] = $3; fl[NR] = $4 }
    END {
        if (json) {
            printf "{\"config\": \"%s\", \"steps\": %d, \"omp_threads_per_rank\": 1, \"runs\": [", cfg, steps
            for (i = 1; i <= NR; i++) {
                ms = 1000 / sps[i]; sp = sps[i] / base
                printf "%s{\"ranks\": %d, \"steps_per_s\": %.4f, \"ms_per_step\": %.2f, \"collective_ms_per_step\": %.3f, \"gradient_bytes\": %d, \"speedup\": %.3f, \"efficiency\": %.3f}", \
                    (i > 1 ? ", " : ""), n[i], sps[i], ms, comm[i], fl[i] * 4, sp, sp / n[i]
            }
            print "]}"
        } else {
            printf "ACL meta-training (%s, %d steps), OMP_NUM_THREADS=1 per rank, same global batch\n\n", cfg, steps
            print "| ranks | steps/s | ms/step | collectives ms/step | gradient bytes/step | speedup | efficiency |"
            print "|---|---|---|---|---|---|---|"
            for (i = 1; i <= NR; i++) {
                sp = sps[i] / base
                printf "| %d | %.3f | %.1f | %.3f | %s | %.2f | %.0f %% |\n", n[i], sps[i], 1000 / sps[i], comm[i], \
                    (fl[i] > 0 ? sprintf("%d", fl[i] * 4) : "-"), sp, 100 * sp / n[i]
            }
        }
    }'
