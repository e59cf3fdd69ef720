#!/bin/sh
# review-state.sh save JOB [JOB ...] — keep the finished steps of review-runs.sh jobs in the
# source tree, so that a job longer than a working session goes on in the next one.
#
# The machines these jobs run on do not keep runs/ between sessions, and some jobs take more
# hours than a session has (acl-baselines about 10, smn-online about 6). review-runs.sh is
# resumable at the grain of its steps: a step whose output file exists is skipped. This script
# copies, for each JOB, the finished step outputs of runs/review/JOB (the *.md and *.json files
# at its top level, not the *.tmp of a step still running, not prepared data), for smn-online
# its run cache (`eval smn --cache`: one small file per finished run), and every training run
# directory of the job (one with a config.txt: finished, or stopped mid-way with its
# last.ckpt, which `metacl train --resume` goes on from) whose files, lock and *.tmp left out,
# take at most RUN_MAX bytes (ACL runs, ~3 MB; an LM run's 48 MB is left out and said so) into
# data/review-state/JOB/, to be committed. review-runs.sh copies them back into runs/review/JOB
# before it starts the job (never over a file there).
# The cache's keys hold the build's commit: to reuse it, build the science binary from the
# commit written to data/review-state/JOB/COMMIT (from `metacl version --json` when known).
#
# Environment: OUT (runs/review), STATE (data/review-state), METACL (./metacl; its commit),
# RUN_MAX (8388608: the largest training run directory kept, in bytes).
# Exit status: 0, 1 if a job has no directory under OUT, 2 on bad usage.
set -eu
OUT=${OUT:-runs/review}
STATE=${STATE:-data/review-state}
METACL=${METACL:-./metacl}
RUN_MAX=${RUN_MAX:-8388608}
[ "${1:-}" = save ] && [ $# -ge 2 ] || { sed -n '2,3p' "$0" >&2; exit 2; }
shift
for job; do
    src=$OUT/$job dst=$STATE/$job
    [ -d "$src" ] || { echo "review-state: no $src" >&2; exit 1; }
    mkdir -p "$dst"
    n=0
    for f in "$src"/*.md "$src"/*.json; do
        [ -f "$f" ] || continue
        cp "$f" "$dst/"
        n=$((n + 1))
    done
    # training runs: config.txt marks one (written when it starts); everything in it but the
    # lock and partial files, if small enough to commit
    for d in "$src"/*/; do
        d=${d%/}
        [ -f "$d/config.txt" ] || continue
        bytes=0
        for f in "$d"/* "$d"/.done; do
            [ -f "$f" ] || continue
            case $f in *.tmp | */.metacl.lock) continue ;; esac
            bytes=$((bytes + $(wc -c <"$f")))
        done
        if [ "$bytes" -gt "$RUN_MAX" ]; then
            echo "review-state: $job: left out $d ($bytes bytes > RUN_MAX $RUN_MAX)"
            continue
        fi
        mkdir -p "$dst/${d##*/}"
        for f in "$d"/* "$d"/.done; do
            [ -f "$f" ] || continue
            case $f in *.tmp | */.metacl.lock) continue ;; esac
            cp "$f" "$dst/${d##*/}/"
            n=$((n + 1))
        done
    done
    if [ -d "$src/cache" ]; then
        mkdir -p "$dst/cache"
        for f in "$src"/cache/*.run; do
            [ -f "$f" ] || continue
            cp "$f" "$dst/cache/"
            n=$((n + 1))
        done
        "$METACL" version 2>/dev/null | sed -n 's/^commit: \([0-9a-f-]*\).*/\1/p' | head -1 >"$dst/COMMIT.tmp" || true
        if [ -s "$dst/COMMIT.tmp" ]; then mv "$dst/COMMIT.tmp" "$dst/COMMIT"; else rm -f "$dst/COMMIT.tmp"; fi
    fi
    echo "review-state: $job: $n files in $dst"
done
