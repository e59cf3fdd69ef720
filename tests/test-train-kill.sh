#!/bin/sh
# test-train-kill.sh — a training run killed at several moments (kill -9: nothing saved at the
# kill; SIGTERM: the step ends, last.ckpt is written, exit 143, a "stopped: interrupted" line in
# log.txt) and resumed with --resume ends exactly where an uninterrupted run ends:
#   - metrics.csv: step, loss and accuracies (columns 1-5) equal, line for line;
#   - last.ckpt: parameters, optimizer state, random state and config equal byte for byte;
#     only the counters section may differ (it holds train_ms, the wall time), so every byte
#     that differs must lie in it (it comes after params, optim and rng), and `ckpt info`
#     equals but for its train_ms line.
# On the reference backend and, when `metacl devices --json` lists a device, OpenCL.
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
TMP=test-train-kill.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

echo "test-train-kill: binary $METACL"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
STEPS=15
CONF=$TMP/tiny.conf
tiny_conf "$CONF" "$TMP/data" train.steps=$STEPS train.val_every=5

rows() { if [ -f "$1/metrics.csv" ]; then echo $(($(wc -l <"$1/metrics.csv") - 1)); else echo 0; fi; }

# same_ckpt DESC A B: equal but for the counters section
same_ckpt() {
    if [ ! -s "$2" ] || [ ! -s "$3" ]; then bad "$1: a checkpoint is missing"; return; fi
    if [ "$(wc -c <"$2")" != "$(wc -c <"$3")" ]; then bad "$1: checkpoints differ in size"; return; fi
    # the counters section starts before the first counter name ("step"); 1-based byte offset
    # of "train_ms" minus what precedes it in the section, kept generous: 64 bytes
    off=$(grep -oba train_ms "$2" | tail -1 | cut -d: -f1)
    if [ -z "$off" ]; then bad "$1: no train_ms counter in $2"; return; fi
    first=$(cmp -l "$2" "$3" | head -1 | awk '{print $1}')
    if [ -n "$first" ] && [ "$first" -le $((off - 64)) ]; then
        bad "$1: $2 and $3 differ at byte $first, before the counters (at about $off)"; return
    fi
    "$METACL" ckpt info "$2" | grep -v 'train_ms' | sed 1d >"$TMP/i1"
    "$METACL" ckpt info "$3" | grep -v 'train_ms' | sed 1d >"$TMP/i2"
    if cmp -s "$TMP/i1" "$TMP/i2"; then ok; else bad "$1: ckpt info differs"; diff "$TMP/i1" "$TMP/i2" | head -5 | sed 's/^/    /'; fi
}

if "$METACL" devices --json 2>/dev/null | grep -q '"opencl":\[{'; then backends="ref opencl"; else
    echo "no OpenCL device: OpenCL runs skipped"; backends=ref; fi
for be in $backends; do
    W=$TMP/$be-whole
    check "$be: uninterrupted run" 0 "$METACL" train acl --config "$CONF" --backend $be --out "$W" --quiet
    cut -d, -f1-5 "$W/metrics.csv" >"$TMP/$be-w.csv"
    # the byte check can fail: a run with another seed differs before the counters
    "$METACL" train acl --config "$CONF" --backend $be --out "$TMP/$be-seed2" --quiet --set train.seed=2 >/dev/null 2>&1
    saved=$fail
    same_ckpt "x" "$W/last.ckpt" "$TMP/$be-seed2/last.ckpt" >/dev/null
    if [ $fail -eq $((saved + 1)) ]; then fail=$saved; ok; else fail=$saved; bad "$be: another seed's checkpoint passed as equal"; fi
    # signal at: kill -9 after steps 1, 5 and 10 (before the first checkpoint, between two,
    # late), SIGTERM after steps 4 and 11
    for case in KILL:1 TERM:4 KILL:5 KILL:10 TERM:11; do
        sig=${case%:*} at=${case#*:}
        R=$TMP/$be-$sig-$at
        "$METACL" train acl --config "$CONF" --backend $be --out "$R" --quiet >"$TMP/run.log" 2>&1 &
        pid=$!
        n=0
        while [ $n -lt 1200 ] && [ "$(rows "$R")" -lt "$at" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; n=$((n + 1)); done
        kill -$sig $pid 2>/dev/null
        { wait $pid; } 2>/dev/null; rc=$?
        done_at=$(rows "$R")
        if [ $rc -eq 0 ]; then
            echo "note: $be: $sig at step $at: the run had ended ($done_at steps) before the signal"
        elif [ $sig = TERM ] && [ $rc -eq 143 ] && tail -1 "$R/log.txt" | grep -q "^done: step $STEPS,"; then
            # the signal came after training, while the process tore down (the handler is gone
            # then): killed the default way, the run complete and saved
            echo "note: $be: TERM at step $at: the run had ended ($done_at steps), the signal came in its teardown"
        elif [ $sig = KILL ]; then
            if [ $rc -eq 137 ]; then ok; else bad "$be: kill -9 at step $at: exit $rc, expected 137"; fi
        else
            if [ $rc -eq 143 ]; then ok; else bad "$be: SIGTERM at step $at: exit $rc, expected 143"; sed 's/^/    /' "$TMP/run.log"; fi
            if grep -q "stopped: interrupted after step" "$R/log.txt"; then ok; else
                bad "$be: SIGTERM: no 'stopped' line in log.txt; its end:"; tail -3 "$R/log.txt" | sed 's/^/    /'; fi
            if [ -s "$R/last.ckpt" ]; then ok; else bad "$be: SIGTERM: no last.ckpt"; fi
        fi
        check "$be: resume after $sig at step $at (stopped after $done_at)" 0 "$METACL" train acl --resume "$R" --backend $be --quiet
        cut -d, -f1-5 "$R/metrics.csv" >"$TMP/r.csv"
        if cmp -s "$TMP/$be-w.csv" "$TMP/r.csv"; then ok; else
            bad "$be: $sig at step $at: metrics.csv (losses) differ from the uninterrupted run"; diff "$TMP/$be-w.csv" "$TMP/r.csv" | head -6 | sed 's/^/    /'; fi
        same_ckpt "$be: $sig at step $at: final last.ckpt" "$W/last.ckpt" "$R/last.ckpt"
    done
done
rm -rf "$TMP"
echo "test-train-kill: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
