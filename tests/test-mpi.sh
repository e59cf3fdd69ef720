#!/bin/sh
# test-mpi.sh — data-parallel training and evaluation with MPI (doc/distributed.md), on a tiny
# ACL run (hershey, 4 sequences per step) with 2 ranks (mpirun --oversubscribe; as root
# --allow-run-as-root), OMP_NUM_THREADS=1 per rank:
#   - 2 ranks = 1 process with train.parts = 2, loss for loss, bit for bit (the gradients are
#     added in part order on both), and = 1 process with the batch in one piece within a
#     relative 1e-5 per loss (the same per-sequence terms added in another order, through 6
#     Adam steps; measured: about 1e-7); a loss changed in its 6th digit and a batch with a
#     part left out (3 sequences instead of 4) are both caught by that comparison;
#   - rank 0 alone writes: one "starting run" line in log.txt, no temporary files left;
#   - --resume with 1 process from a 2-rank checkpoint continues within the tolerance, and
#     with 2 ranks bit for bit;
#   - the same on OpenCL when a device exists (bit for bit to 2 parts, 1e-5 to the reference);
#   - `eval`: the table (stdout) and --json-out of 2 ranks equal 1 process's, byte for byte;
#   - a rank that fails (test hook) or is killed (kill -9) stops the job with a message naming
#     it; last.ckpt stays intact (a later --resume works); ranks given different configs are
#     refused at the start, and so are ranks given different --out and, on --resume, a rank
#     that cannot see the run directory (named, not "the ranks have diverged");
#   - the run-directory lock: rank 0 of a running job holds it; a 1-process --resume and a
#     2-rank run into the directory are refused naming rank 0's PID.
# The model has feature_norm = image and dropout 0: batch statistics and dropout masks
# depend on how the batch is cut (doc/distributed.md), so only such a model equals the
# one-piece run within round-off.
METACL=${METACL:-./metacl}
MPIRUN=${METACL_MPIRUN:-mpirun}
TMP=test-mpi.tmp.$$
SEED=20261124
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

echo "test-mpi: binary $METACL, launcher $MPIRUN, train.seed $SEED"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
trap 'rm -rf "$TMP"' EXIT
prepare_hershey "$TMP/data"
export OMP_NUM_THREADS=1 METACL_DATA="$TMP/data" METACL_PROGRESS=0
MPI="$MPIRUN --oversubscribe"
[ "$(id -u)" = 0 ] && MPI="$MPI --allow-run-as-root"
# Under AddressSanitizer, the ranks run without leak detection: Open MPI's plug-ins are
# unloaded at MPI_Finalize, so LeakSanitizer sees their allocations with no library to name
# (no suppression can match them). The same code without MPI (the 1-process runs with
# train.parts = 2 below) is leak-checked.
MPI="env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 $MPI"
CONF=$TMP/tiny.conf
tiny_conf "$CONF" "$TMP/data" train.batch=4 train.steps=6 model.feature_norm=image model.dropout=0 \
    train.seed=$SEED train.ckpt_every=2

# losses DIR: "step,loss" of every metrics.csv row, one per line
losses() { cut -d, -f1,2 "$1/metrics.csv" | sed 1d; }
# close A B: every loss of A within a relative 1e-5 of B's (same steps)
close() {
    paste -d, "$1" "$2" | awk -F, '
        { n++; if ($1 != $3) { bad = 1; exit }
          d = $2 - $4; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2); if (r > worst) worst = r }
        END { if (bad || n == 0) { print "mismatch"; exit 1 } printf "%.3g\n", worst; exit !(worst <= 1e-5) }'
}

# ---------------------------------------------------------------- training: 1 vs 2 ranks
check "1 process" 0 "$METACL" train acl --config "$CONF" --out "$TMP/one" --quiet
check "1 process, 2 parts" 0 "$METACL" train acl --config "$CONF" --out "$TMP/parts" --set train.parts=2 --quiet
check "2 ranks" 0 $MPI -np 2 "$METACL" train acl --config "$CONF" --out "$TMP/two" --set train.dist_check=1
expect_text "2 ranks: the log says how the batch is split" "data parallel: 2 ranks, the batch of 4 sequences in 2 parts"
losses "$TMP/one" >"$TMP/l-one"
losses "$TMP/parts" >"$TMP/l-parts"
losses "$TMP/two" >"$TMP/l-two"
if [ "$(wc -l <"$TMP/l-two")" = 6 ] && cmp -s "$TMP/l-two" "$TMP/l-parts"; then ok; else
    bad "2 ranks and 1 process with 2 parts differ:"; paste "$TMP/l-two" "$TMP/l-parts"; fi
if w=$(close "$TMP/l-two" "$TMP/l-one"); then ok; echo "2 ranks vs 1 process: worst relative loss difference $w"; else
    bad "2 ranks vs 1 process beyond 1e-5 ($w):"; paste "$TMP/l-two" "$TMP/l-one"; fi
# the comparisons can fail: a loss changed in its 6th significant digit, a batch missing a part
awk -F, 'NR == 4 { $2 = sprintf("%.9g", $2 * 1.00002) } { print $1 "," $2 }' "$TMP/l-two" >"$TMP/l-bad"
if ! close "$TMP/l-bad" "$TMP/l-one" >/dev/null && ! cmp -s "$TMP/l-bad" "$TMP/l-parts"; then ok; else
    bad "a changed loss was not detected"; fi
check "1 process, batch of 3 (a part missing)" 0 "$METACL" train acl --config "$CONF" --out "$TMP/short" --set train.batch=3 --quiet
losses "$TMP/short" >"$TMP/l-short"
if ! close "$TMP/l-short" "$TMP/l-one" >/dev/null; then ok; else bad "a batch with a part left out was not detected"; fi

# the same on OpenCL (each rank opens its own context; the device of local rank r is r mod
# the host's devices): 2 ranks = 1 process with 2 parts, bit for bit; near the reference
if "$METACL" devices --json 2>/dev/null | grep -q '"opencl":\[{'; then
    check "OpenCL: 1 process, 2 parts" 0 "$METACL" train acl --config "$CONF" --out "$TMP/ocl-parts" --set train.parts=2 --backend opencl --quiet
    check "OpenCL: 2 ranks" 0 $MPI -np 2 "$METACL" train acl --config "$CONF" --out "$TMP/ocl-two" --backend opencl --quiet
    losses "$TMP/ocl-parts" >"$TMP/l-ocl-parts"
    losses "$TMP/ocl-two" >"$TMP/l-ocl-two"
    if [ "$(wc -l <"$TMP/l-ocl-two")" = 6 ] && cmp -s "$TMP/l-ocl-two" "$TMP/l-ocl-parts"; then ok; else
        bad "OpenCL: 2 ranks and 1 process with 2 parts differ:"; paste "$TMP/l-ocl-two" "$TMP/l-ocl-parts"; fi
    if w=$(close "$TMP/l-ocl-two" "$TMP/l-one"); then ok; else bad "OpenCL 2 ranks vs reference 1 process beyond 1e-5 ($w)"; fi
else
    echo "no OpenCL device: the OpenCL runs are left out"
fi

# rank 0 alone wrote the run directory
n=$(grep -c "starting run" "$TMP/two/log.txt")
[ "$n" = 1 ] && ok || bad "log.txt has $n 'starting run' lines (want 1: rank 0 alone writes)"
[ -z "$(find "$TMP/two" -name '*.tmp.*')" ] && ok || bad "temporary files left in the run directory"
[ -s "$TMP/two/last.ckpt" ] && [ -s "$TMP/two/best.ckpt" ] && ok || bad "2 ranks: no checkpoints"

# ---------------------------------------------------------------- resume with another N
check "2 ranks, 2 steps" 0 $MPI -np 2 "$METACL" train acl --config "$CONF" --out "$TMP/r1" --set train.steps=2 --quiet
check "resume with 1 process" 0 "$METACL" train acl --resume "$TMP/r1" --set train.steps=6 --quiet
losses "$TMP/r1" >"$TMP/l-r1"
if w=$(close "$TMP/l-r1" "$TMP/l-two"); then ok; else bad "resumed with 1 process: beyond 1e-5 ($w)"; paste "$TMP/l-r1" "$TMP/l-two"; fi
check "2 ranks, 4 steps" 0 $MPI -np 2 "$METACL" train acl --config "$CONF" --out "$TMP/r2" --set train.steps=4 --quiet
check "resume with 2 ranks" 0 $MPI -np 2 "$METACL" train acl --resume "$TMP/r2" --set train.steps=6 --quiet
losses "$TMP/r2" >"$TMP/l-r2"
cmp -s "$TMP/l-r2" "$TMP/l-two" && ok || { bad "resumed with 2 ranks: not the uninterrupted losses"; paste "$TMP/l-r2" "$TMP/l-two"; }

# ---------------------------------------------------------------- evaluation
EV="eval acl --ckpt $TMP/two/last.ckpt --protocol two-task --data hershey --data hershey --n-way 3 --k-shot 2 --runs 3 --episodes 4 --baseline sgd:0.1:2 --data-dir $TMP/data"
check "eval, 1 process" 0 sh -c "\"$METACL\" $EV --json-out $TMP/e1.json >$TMP/e1.txt"
check "eval, 2 ranks" 0 sh -c "$MPI -np 2 \"$METACL\" $EV --json-out $TMP/e2.json >$TMP/e2.txt"
if [ -s "$TMP/e1.txt" ] && cmp -s "$TMP/e1.txt" "$TMP/e2.txt"; then ok; else
    bad "eval tables differ:"; diff "$TMP/e1.txt" "$TMP/e2.txt"; fi
# the JSON carries the version and commit, not timings: equal as well
if [ -s "$TMP/e1.json" ] && cmp -s "$TMP/e1.json" "$TMP/e2.json"; then ok; else
    bad "eval --json-out differ"; diff "$TMP/e1.json" "$TMP/e2.json" | head; fi

# ---------------------------------------------------------------- failures
# ranks given different configs
check "different configs" 1 $MPI -np 1 "$METACL" train acl --config "$CONF" --out "$TMP/mm" --set train.lr=0.001 : \
    -np 1 "$METACL" train acl --config "$CONF" --out "$TMP/mm" --set train.lr=0.002
expect_text "the config mismatch names the rank" "rank 1 was given another config than rank 0"
[ ! -e "$TMP/mm/config.txt" ] && ok || bad "a refused start left config.txt"

if [ "${METACL_HAVE_TEST_HOOKS:-0}" = 1 ]; then
    out=$(METACL_TEST_FAIL_RANK=1 METACL_TEST_FAIL_STEP=5 $MPI -np 2 -x METACL_TEST_FAIL_RANK -x METACL_TEST_FAIL_STEP \
        "$METACL" train acl --config "$CONF" --out "$TMP/fail" --quiet 2>&1)
    rc=$?
    [ "$rc" -ne 0 ] && ok || bad "a failing rank: exit 0"
    case "$out" in *"rank 1 of 2"*"test hook: a failure on rank 1"*) ok ;;
    *) bad "a failing rank: the message does not name it:"; echo "$out" | sed 's/^/    /' ;; esac
    # last.ckpt is the step-4 one, whole: resuming it with 1 process finishes the run
    check "resume after a failed rank" 0 "$METACL" train acl --resume "$TMP/fail" --quiet
    grep -q "resumed at step 4" "$TMP/fail/log.txt" && ok || bad "after the failure, last.ckpt is not the step-4 one"
else
    echo "test hooks not compiled in (configure --enable-test-hooks): the failing-rank check is left out"
fi

# a rank given its own --out (it was ignored without a word: rank 0 alone writes)
check "ranks given different --out" 1 $MPI -np 1 "$METACL" train acl --config "$CONF" --out "$TMP/o0" : \
    -np 1 "$METACL" train acl --config "$CONF" --out "$TMP/o1"
expect_text "another --out names the rank" "rank 1 was given another run directory than rank 0's"
[ ! -e "$TMP/o0/config.txt" ] && [ ! -e "$TMP/o1" ] && ok || bad "a refused start left a run directory"
# a rank that cannot see the run directory on --resume (here: another working directory for a
# relative path) is named as such, not as "the ranks have diverged"
mkdir -p "$TMP/elsewhere"
ABS=$(cd "$(dirname "$METACL")" && pwd)/$(basename "$METACL")
ATMP=$(pwd)/$TMP
tiny_conf "$TMP/abs.conf" "$ATMP/data" train.batch=4 train.steps=6 model.feature_norm=image model.dropout=0 \
    train.seed=$SEED train.ckpt_every=2
check "2 ranks, 2 steps (relative --out)" 0 $MPI -np 2 --wdir "$ATMP" "$ABS" train acl --config abs.conf --out rel --set train.steps=2 --quiet
check "resume, rank 1 in another directory" 1 $MPI -np 1 --wdir "$ATMP" "$ABS" train acl --resume rel --quiet : \
    -np 1 --wdir "$ATMP/elsewhere" "$ABS" train acl --resume rel --quiet
expect_text "the rank that cannot see the run directory is named" "rank 1 does not read the last.ckpt that rank 0 reads in rel at step 2"
case "$LAST_OUT" in *diverged*) bad "a rank that cannot see the run directory is called diverged" ;; *) ok ;; esac
check "resume, both ranks in the same directory" 0 $MPI -np 2 --wdir "$ATMP" "$ABS" train acl --resume rel --quiet

# the run-directory lock under MPI: rank 0 holds it; a second writer (1 process or 2 ranks)
# is refused naming rank 0's PID
tiny_conf "$TMP/long.conf" "$TMP/data" train.batch=4 train.steps=1000000 model.feature_norm=image model.dropout=0 \
    train.ckpt_every=2 train.val_every=0
$MPI -np 2 "$METACL" train acl --config "$TMP/long.conf" --out "$TMP/locked" --quiet >"$TMP/locked.out" 2>&1 &
mp=$!
i=0
while [ ! -s "$TMP/locked/last.ckpt" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
holder=$(head -n 1 "$TMP/locked/.metacl.lock" 2>/dev/null)
if [ -n "$holder" ] && tr '\0' '\n' <"/proc/$holder/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=0'; then ok; else
    bad "the lock is not held by rank 0 (holder '$holder')"; fi
check "a 1-process --resume of a running MPI job" 1 "$METACL" train acl --resume "$TMP/locked" --quiet
expect_text "it names rank 0's PID" "in use by another metacl process (PID $holder)"
check "a 2-rank fresh run into the same directory" 1 $MPI -np 2 "$METACL" train acl --config "$TMP/long.conf" --out "$TMP/locked" --quiet
expect_text "2 ranks: it names rank 0's PID" "in use by another metacl process (PID $holder)"
kill -TERM $mp 2>/dev/null
wait $mp
check "after the job, --resume takes the lock" 0 "$METACL" train acl --resume "$TMP/locked" --set train.steps=2 --quiet

# a killed rank: kill -9 rank 1 once a checkpoint exists
$MPI -np 2 "$METACL" train acl --config "$TMP/long.conf" --out "$TMP/kill" --quiet >"$TMP/kill.out" 2>&1 &
mp=$!
i=0
while [ ! -s "$TMP/kill/last.ckpt" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
victim=
for p in $(pgrep -f "train acl --config $TMP/long.conf" 2>/dev/null); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then victim=$p; fi
done
if [ -n "$victim" ]; then
    kill -9 "$victim"
    wait $mp
    rc=$?
    [ "$rc" -ne 0 ] && ok || bad "a killed rank: mpirun exited 0"
    grep -qi "rank 1" "$TMP/kill.out" && grep -qiE "signal 9|killed" "$TMP/kill.out" && ok ||
        { bad "a killed rank: the message does not name rank 1 and the signal:"; sed 's/^/    /' "$TMP/kill.out"; }
    check "the checkpoint of a killed job is intact" 0 "$METACL" ckpt info "$TMP/kill/last.ckpt"
else
    kill $mp 2>/dev/null
    wait $mp
    bad "could not find rank 1 of the job to kill (no checkpoint after 60 s?)"
    sed 's/^/    /' "$TMP/kill.out"
fi

echo "test-mpi: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
