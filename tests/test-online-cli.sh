#!/bin/sh
# test-online-cli.sh — `metacl online` end to end on a tiny stream (hershey, 5-way, 4 tasks of
# 20 examples, chunks of 10, 2 readers): usage errors (exit 2), bad configs (exit 1, file:line),
# a run with its report (summary.json, the figures), exact resume (the metrics of a run
# stopped after 7 steps and resumed equal an uninterrupted run's, as printed), the
# online.freeze_at ablation (no step after the freeze moves the weights), stream.pool (its
# refusals, a run and its report), a corrupt
# checkpoint refused, `--report` of several runs; on the reference and, when a device exists,
# OpenCL (whose first loss agrees with the reference's to 4 digits).
METACL=${METACL:-./metacl}
TMP=test-online-cli.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
echo "test-online-cli: binary $METACL (seeds: model.seed 1, train.seed 1, stream.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
tiny_oct_conf "$CONF" "$TMP/data"

check "no arguments" 2 "$METACL" online
check "unknown option" 2 "$METACL" online --config "$CONF" --bogus
expect_text "names the option" "--bogus"
check "--report: unknown option" 2 "$METACL" online --report "$TMP/x" --bogus
check "--report: missing run" 1 "$METACL" online --report "$TMP/nosuch"
expect_text "names the run" "nosuch"
check "bad window" 2 "$METACL" online --config "$CONF" --set model.window=-1 --out "$TMP/u"
expect_text "names the key" "model.window"
check "too many steps" 1 "$METACL" online --config "$CONF" --set train.steps=99 --out "$TMP/u"
expect_text "says why" "more than the stream holds"
printf 'model.arch = pi\nstream.tasks = lots\n' >"$TMP/bad.conf"
check "bad value in a config file" 1 "$METACL" online --config "$TMP/bad.conf" --out "$TMP/u"
expect_text "names file and line" "bad.conf:2: stream.tasks = 'lots'"
check "heads not a multiple of kv_heads" 1 "$METACL" online --config "$CONF" --set model.kv_heads=3 --out "$TMP/u"
check "replay with the cnn baseline" 1 "$METACL" online --config "$CONF" --set model.arch=cnn --out "$TMP/u"
[ ! -e "$TMP/u/config.txt" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused run left files"; }

if "$METACL" devices 2>/dev/null | grep -q "^  opencl [0-9]"; then backends="ref opencl"; else
    echo "no OpenCL device: OpenCL runs skipped"; backends=ref; fi
for b in $backends; do
    check "$b: a whole run" 0 "$METACL" online --config "$CONF" --out "$TMP/$b-whole" --backend "$b" --quiet
    for f in config.txt metrics.csv log.txt last.ckpt summary.json figures/per-task.png figures/within-task.png; do
        [ -s "$TMP/$b-whole/$f" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $b: $f missing"; }
    done
    grep -q '"examples": 80' "$TMP/$b-whole/summary.json" && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: $b: summary.json does not count 80 examples"; cat "$TMP/$b-whole/summary.json"; }
    check "$b: 7 steps" 0 "$METACL" online --config "$CONF" --out "$TMP/$b-split" --backend "$b" --quiet --set train.steps=7
    check "$b: resume to the end" 0 "$METACL" online --resume "$TMP/$b-split" --backend "$b" --quiet --set train.steps=16
    cut -d, -f1-6 "$TMP/$b-whole/metrics.csv" >"$TMP/a"
    cut -d, -f1-6 "$TMP/$b-split/metrics.csv" >"$TMP/b"
    if cmp -s "$TMP/a" "$TMP/b"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $b: resumed run differs"; diff "$TMP/a" "$TMP/b" | head; fi
    sed 's/"run": "[^"]*"//' "$TMP/$b-whole/summary.json" >"$TMP/s1"
    sed 's/"run": "[^"]*"//' "$TMP/$b-split/summary.json" >"$TMP/s2"
    if cmp -s "$TMP/s1" "$TMP/s2"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $b: summaries differ"; fi
done
# online.freeze_at (the paper's Fig. 5 ablation): from example 40 on (step 9 = turn 4) no
# gradient step. The first 8 steps are the whole run's; the run differs after them; a run
# stopped after 8 steps and resumed with the freeze and a learning rate 500 times larger
# gives the same metrics (the lr is never used again), which it could not if any step after
# the freeze moved the weights; a frozen replay step reports loss 0.
check "freeze_at beyond the stream" 1 "$METACL" online --config "$CONF" --set online.freeze_at=80 --out "$TMP/u"
expect_text "says why" "would never freeze"
check "negative freeze_at" 2 "$METACL" online --config "$CONF" --set online.freeze_at=-1 --out "$TMP/u"
check "8 steps (the control)" 0 "$METACL" online --config "$CONF" --out "$TMP/split8" --quiet --set train.steps=8
check "frozen from example 40" 0 "$METACL" online --config "$CONF" --out "$TMP/frz" --quiet --set online.freeze_at=40
head -9 "$TMP/ref-whole/metrics.csv" | cut -d, -f1-6 >"$TMP/a"
head -9 "$TMP/frz/metrics.csv" | cut -d, -f1-6 >"$TMP/b"
if cmp -s "$TMP/a" "$TMP/b"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: freeze_at: the steps before the freeze differ from the whole run's"; diff "$TMP/a" "$TMP/b" | head; fi
cut -d, -f1-6 "$TMP/ref-whole/metrics.csv" >"$TMP/a"
cut -d, -f1-6 "$TMP/frz/metrics.csv" >"$TMP/b"
cmp -s "$TMP/a" "$TMP/b" && { fail=$((fail + 1)); echo "FAIL: freeze_at changed nothing"; } || pass=$((pass + 1))
l10=$(awk -F, '$1 == 10 {print $2}' "$TMP/frz/metrics.csv")
[ "$l10" = 0 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: frozen replay step 10 reports loss '$l10', want 0"; }
check "8 steps, then" 0 "$METACL" online --config "$CONF" --out "$TMP/frz2" --quiet --set train.steps=8
check "resumed frozen with lr x500" 0 "$METACL" online --resume "$TMP/frz2" --quiet --set online.freeze_at=40 \
    --set train.lr=0.5 --set train.steps=16
cut -d, -f1-6 "$TMP/frz2/metrics.csv" >"$TMP/c"
if cmp -s "$TMP/b" "$TMP/c"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: freeze_at: a step after the freeze used the learning rate"; diff "$TMP/b" "$TMP/c" | head; fi
check "resumed unfrozen with lr x500" 0 "$METACL" online --resume "$TMP/split8" --quiet --set train.lr=0.5 --set train.steps=16
cut -d, -f1-6 "$TMP/split8/metrics.csv" >"$TMP/c"
cmp -s "$TMP/a" "$TMP/c" && { fail=$((fail + 1)); echo "FAIL: the lr-x500 control did not change an unfrozen run"; } || pass=$((pass + 1))
# stream.pool: the stream of recurring classes (the draw itself: tests/test-oct.c)
check "pool smaller than a task" 1 "$METACL" online --config "$CONF" --set stream.pool=3 --out "$TMP/u"
expect_text "says why" "a task needs model.n_way = 5"
check "pool larger than the split" 1 "$METACL" online --config "$CONF" --set stream.pool=100000 --out "$TMP/u"
expect_text "says why" "classes in this split"
[ ! -e "$TMP/u/config.txt" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused pool left files"; }
check "a run over a pool of 6 classes" 0 "$METACL" online --config "$CONF" --set stream.pool=6 --out "$TMP/pool"
expect_text "logs the pool" "class pool: 6 classes"
check "its report" 0 "$METACL" online --report "$TMP/pool" --json
expect_text "the 5th-example accuracy" '"late_acc_at_5th"'
# a wrong record is seen: a summary of another run differs
check "cnn baseline run" 0 "$METACL" online --config "$CONF" --out "$TMP/cnn" --quiet --set model.arch=cnn --set online.streams=1 --set online.optimizer=adam
sed 's/"run": "[^"]*"//' "$TMP/cnn/summary.json" >"$TMP/s3"
cmp -s "$TMP/s1" "$TMP/s3" && { fail=$((fail + 1)); echo "FAIL: two different runs gave the same summary"; } || pass=$((pass + 1))
check "report of two runs" 0 "$METACL" online --report "$TMP/ref-whole" --report "$TMP/cnn" --figures "$TMP/cmp"
expect_text "a row per run" "ref-whole"
[ -s "$TMP/cmp/per-task.png" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: comparison figure missing"; }
check "report --json" 0 "$METACL" online --report "$TMP/ref-whole" --json
expect_text "json" '"cum_nll"'
head -c 300 "$TMP/ref-whole/last.ckpt" >"$TMP/trunc.ckpt" && cp "$TMP/trunc.ckpt" "$TMP/ref-whole/last.ckpt"
check "report of a run with a truncated checkpoint" 1 "$METACL" online --report "$TMP/ref-whole"
expect_text "says truncated" "truncated"
check "resume from a truncated checkpoint" 1 "$METACL" online --resume "$TMP/ref-whole" --quiet
expect_text "says the checkpoint is truncated" "truncated"
if [ "$backends" = "ref opencl" ]; then
    l_ref=$(sed -n 2p "$TMP/ref-split/metrics.csv" | cut -d, -f2); l_ocl=$(sed -n 2p "$TMP/opencl-split/metrics.csv" | cut -d, -f2)
    if awk -v a="$l_ref" -v b="$l_ocl" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-4*(a<0?-a:a)+1e-5)}'; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: step-1 loss ref $l_ref vs OpenCL $l_ocl"; fi
fi
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
