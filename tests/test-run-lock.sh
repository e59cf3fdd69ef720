#!/bin/sh
# test-run-lock.sh — one process writes a run directory at a time (doc/reliability.md): while a
# `metacl train acl` run is going, a second fresh run with the same --out, a --resume of it and
# an `online` run into it are refused with exit 1 and a message naming the holder's PID, and
# leave its metrics.csv alone; after the holder is killed with kill -9 the lock is gone (the
# kernel releases it) and --resume runs.
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
TMP=test-run-lock.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
to() { timeout 60 "$@"; }

echo "test-run-lock: binary $METACL (train.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
# a run far too long to end by itself: it is killed below
tiny_conf "$CONF" "$TMP/data" train.steps=100000000 train.val_every=0 train.ckpt_every=100000000
R=$TMP/run
rows() { if [ -f "$1/metrics.csv" ]; then echo $(($(wc -l <"$1/metrics.csv") - 1)); else echo 0; fi; }

"$METACL" train acl --config "$CONF" --out "$R" --quiet >"$TMP/holder.log" 2>&1 &
pid=$!
n=0
while [ $n -lt 1200 ] && [ "$(rows "$R")" -lt 2 ] && kill -0 $pid 2>/dev/null; do sleep 0.05; n=$((n + 1)); done
if ! kill -0 $pid 2>/dev/null; then
    echo "FAIL: the holder run ended early"; cat "$TMP/holder.log"; rm -rf "$TMP"; exit 1
fi

check "second fresh run into the same --out refused" 1 to "$METACL" train acl --config "$CONF" --set train.seed=7 --out "$R" --quiet
expect_text "names the holder" "PID $pid"
expect_text "says why" "in use"
check "--resume of a run still going refused" 1 to "$METACL" train acl --resume "$R" --set train.steps=5 --quiet
expect_text "--resume: names the holder" "PID $pid"
check "online into a run directory in use refused" 1 to "$METACL" online --resume "$R" --quiet
expect_text "online: names the holder" "PID $pid"
[ -f "$R/config.txt" ] && grep -q 'train.seed = 1$' "$R/config.txt" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: config.txt is not the holder's"; }
# every row of metrics.csv has the holder's field count, in order (no interleaved writer)
if awk -F, 'NR == 1 { nf = NF; next } NF != nf || $1 != NR - 1 { bad = 1 } END { exit bad }' "$R/metrics.csv"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: metrics.csv was written by two processes"; head -5 "$R/metrics.csv"; fi

kill -9 $pid 2>/dev/null
{ wait $pid; } 2>/dev/null
check "after kill -9, --resume runs (no stale lock)" 0 to "$METACL" train acl --resume "$R" --set train.steps=3 --quiet
[ "$(rows "$R")" -eq 3 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the resumed run has $(rows "$R") rows, expected 3"; }
# a run that fails to start in a directory it made removes it, lock file included
check "a refused fresh run" 1 to "$METACL" train acl --config "$CONF" --set data.dir="$TMP/none" --out "$TMP/new" --quiet
[ -e "$TMP/new" ] && { fail=$((fail + 1)); echo "FAIL: the refused run left $TMP/new:"; ls -a "$TMP/new"; } || pass=$((pass + 1))

echo "test-run-lock: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
