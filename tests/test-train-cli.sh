#!/bin/sh
# test-train-cli.sh — `metacl train acl` end to end on a tiny config: usage errors (exit 2),
# bad configs (exit 1), a run directory with every file, exact resume (the losses of a run
# split in two equal an uninterrupted run's, bit for bit as printed), a NaN loss stopping the
# run with the last good checkpoint kept (only in a build with --enable-test-hooks), the
# validation columns of metrics.csv (val_main_*, val_bwd_*: in-context forgetting during
# meta-training); on the reference and, when a device exists, OpenCL.
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
TMP=test-train-cli.tmp.$$
# check / expect_text and the pass/fail counters (METACL_SRCDIR: set by the Makefile)
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
same_file() { # same_file "description" A B
    if cmp -s "$2" "$3"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 and $3 differ"; diff "$2" "$3" | head -10 | sed 's/^/    /'; fi
}

echo "test-train-cli: binary $METACL (seeds: model.seed 1, train.seed 1 from the config)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
tiny_conf "$CONF" "$TMP/data"

check "no arguments" 2 "$METACL" train
check "unknown model" 2 "$METACL" train nosuch --config "$CONF"
expect_text "names the model" "nosuch"
check "unknown option" 2 "$METACL" train acl --config "$CONF" --bogus
expect_text "names the option" "--bogus"
check "neither --config nor --resume" 2 "$METACL" train acl
check "both --config and --resume" 2 "$METACL" train acl --config "$CONF" --resume "$TMP/x"
check "--set without =" 2 "$METACL" train acl --config "$CONF" --set train.steps
check "--set unknown key" 2 "$METACL" train acl --config "$CONF" --set train.stepz=3 --out "$TMP/u"
expect_text "names the key" "train.stepz"
check "--set bad value" 2 "$METACL" train acl --config "$CONF" --set train.batch=0 --out "$TMP/u"
expect_text "names the value" "train.batch = '0'"
check "missing config file" 1 "$METACL" train acl --config "$TMP/nosuch.conf"
expect_text "names the file" "nosuch.conf"
printf 'model.hidden = 16\ntrain.steps = many\n' >"$TMP/bad.conf"
check "bad value in a config file" 1 "$METACL" train acl --config "$TMP/bad.conf" --out "$TMP/u"
expect_text "names file and line" "bad.conf:2: train.steps = 'many'"
check "model/task mismatch" 1 "$METACL" train acl --config "$CONF" --set model.n_way=4 --out "$TMP/u"
expect_text "explains the mismatch" "model.n_way = 4"
# image sizes: any side 16..32 (28 = the paper's Omniglot side); others refused with the range
check "image_size below 16" 2 "$METACL" train acl --config "$CONF" --set model.image_size=8 --out "$TMP/u"
expect_text "names the key" "model.image_size"
check "image_size above the data" 1 "$METACL" train acl --config "$CONF" --set model.image_size=64 --out "$TMP/u"
expect_text "says the largest side" "model.image_size at most 32"
# 15 shots: hershey has 20 images per class (1 first-shot + 15 + 1 query fit; 19 shots do not)
check "too few images per class" 1 "$METACL" train acl --config "$CONF" --set task.k_shot=19 --out "$TMP/u"
expect_text "names class size and need" "images, a task takes 21 per class"
check "unknown data.val" 1 "$METACL" train acl --config "$CONF" --set data.val=hershey --out "$TMP/u"
expect_text "lists the choice" "fmnist-val"
check "28x28, 15-shot run" 0 "$METACL" train acl --config "$CONF" --set model.image_size=28 --set task.k_shot=15 --out "$TMP/s28" --quiet
if [ "$(tail -1 "$TMP/s28/metrics.csv" | cut -d, -f1)" = 6 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the 28x28 15-shot run did not reach step 6"; fi
check "eval of the 28x28 model, 15 shots" 0 "$METACL" eval acl --ckpt "$TMP/s28/last.ckpt" --protocol seq --data hershey --n-way 3 --k-shot 15 --runs 1 --episodes 1 --data-dir "$TMP/data"
# task augmentation (data.augment = task): a bad value is a usage error; a run trains; the
# same run without it sees other images (another loss at step 1) from the same episodes
check "bad data.augment" 2 "$METACL" train acl --config "$CONF" --set data.augment=yes --out "$TMP/u"
expect_text "lists the choices" "none"
check "augmented run" 0 "$METACL" train acl --config "$CONF" --set data.augment=task --out "$TMP/aug" --quiet
check "unaugmented twin" 0 "$METACL" train acl --config "$CONF" --set data.augment=none --out "$TMP/noaug" --quiet
l_aug=$(sed -n 2p "$TMP/aug/metrics.csv" | cut -d, -f2); l_no=$(sed -n 2p "$TMP/noaug/metrics.csv" | cut -d, -f2)
if [ -n "$l_aug" ] && [ "$l_aug" != "$l_no" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: augmentation did not change the step-1 loss ($l_aug vs $l_no)"; fi
if "$METACL" data prepare fmnist --data-dir "$TMP/data" >/dev/null 2>&1; then
    # meta-validation on the test domain (data.val = fmnist-val): Split-FMNIST on held-out images
    check "data.val = fmnist-val" 0 "$METACL" train acl --config "$CONF" --set data.val=fmnist-val --set model.image_size=28 --out "$TMP/fv"
    expect_text "logs the validation data" "5000 held-out images, contexts from the other 55000"
    if [ -s "$TMP/fv/best.ckpt" ] && [ -n "$(tail -1 "$TMP/fv/metrics.csv" | cut -d, -f9)" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: fmnist-val selection: no best.ckpt or no val_score"; fi
    # class-incremental training validates class-incremental Split-FMNIST: 10 outputs
    check "class-incremental fmnist-val, too few outputs" 1 "$METACL" train acl --config "$CONF" --set data.val=fmnist-val --set task.class_incremental=1 --set model.n_way=6 --out "$TMP/u"
    expect_text "names the outputs needed" "class-incremental Split-FMNIST with 10 outputs"
    check "class-incremental fmnist-val" 0 "$METACL" train acl --config "$CONF" --set data.val=fmnist-val --set task.class_incremental=1 --set task.n_way=5 --set model.n_way=10 --out "$TMP/cv"
    expect_text "logs class-incremental validation" "validation: Split-FMNIST class-incremental"
    # data.val_tasks: fewer validation tasks (2 tasks of 2 classes: 4 outputs suffice); 0 or 6 tasks are usage errors
    check "bad data.val_tasks (6)" 2 "$METACL" train acl --config "$CONF" --set data.val_tasks=6 --out "$TMP/u"
    check "bad data.val_tasks (0)" 2 "$METACL" train acl --config "$CONF" --set data.val_tasks=0 --out "$TMP/u"
    check "class-incremental fmnist-val, 2 tasks, 3 outputs" 1 "$METACL" train acl --config "$CONF" --set data.val=fmnist-val --set data.val_tasks=2 --set task.class_incremental=1 --set task.n_way=1 --set task.n_tasks=3 --set model.n_way=3 --out "$TMP/u"
    expect_text "names the 4 outputs needed" "class-incremental Split-FMNIST with 4 outputs"
    check "class-incremental fmnist-val, 2 tasks" 0 "$METACL" train acl --config "$CONF" --set data.val=fmnist-val --set data.val_tasks=2 --set task.class_incremental=1 --set task.n_way=2 --set task.n_tasks=2 --set model.n_way=4 --out "$TMP/cv2"
    expect_text "logs 2 validation tasks" "class-incremental (2 tasks of 2 classes"
else
    echo "test-train-cli: SKIP data.val = fmnist-val: apt-get install dataset-fashion-mnist"
fi
check "unknown data set" 1 "$METACL" train acl --config "$CONF" --set data.domains=nosuchset --out "$TMP/u"
expect_text "names the data set" "nosuchset"
# a run that fails before its first step leaves nothing behind: the same command works again
if [ -e "$TMP/u" ]; then fail=$((fail + 1)); echo "FAIL: a failed start left $TMP/u behind"; ls -la "$TMP/u" | sed 's/^/    /'; else pass=$((pass + 1)); fi
mkdir "$TMP/own"
check "failed start in an existing directory" 1 "$METACL" train acl --config "$CONF" --set data.domains=nosuchset --out "$TMP/own"
if [ -d "$TMP/own" ] && [ -z "$(ls -A "$TMP/own")" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the failed start did not leave the user's directory empty"; fi
# a run directory with config.txt but no checkpoint yet (stopped before its first one): --resume
# starts it again from step 0 and ends where an uninterrupted run ends
check "fresh reference run" 0 "$METACL" train acl --config "$CONF" --out "$TMP/r0" --quiet
cp -r "$TMP/r0" "$TMP/r1" && rm -f "$TMP/r1/last.ckpt" "$TMP/r1/best.ckpt"
check "resume without a checkpoint restarts" 0 "$METACL" train acl --resume "$TMP/r1"
expect_text "says so" "no last.ckpt yet"
cut -d, -f1-5 "$TMP/r0/metrics.csv" >"$TMP/r0.csv"; cut -d, -f1-5 "$TMP/r1/metrics.csv" >"$TMP/r1.csv"
same_file "the restarted run equals the first" "$TMP/r0.csv" "$TMP/r1.csv"
# SIGINT: the step in progress ends, last.ckpt is written, exit 130 with how to resume; the
# resumed run ends with the losses of an uninterrupted one
"$METACL" train acl --config "$CONF" --out "$TMP/int" --set train.steps=100000 --set train.ckpt_every=1000 \
    --set train.val_every=0 >"$TMP/int.log" 2>&1 &
pid=$!
n=0
while [ $n -lt 600 ] && [ "$(wc -l <"$TMP/int/metrics.csv" 2>/dev/null || echo 0)" -lt 4 ]; do sleep 0.1; n=$((n + 1)); done
kill -INT $pid
wait $pid; rc=$?
if [ $rc -eq 130 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: SIGINT: exit $rc, expected 130"; cat "$TMP/int.log" | sed 's/^/    /'; fi
LAST_OUT=$(cat "$TMP/int.log")
expect_text "SIGINT says how to resume" "--resume $TMP/int"
if [ -s "$TMP/int/last.ckpt" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: SIGINT: no last.ckpt"; fi
check "resume after SIGINT" 0 "$METACL" train acl --resume "$TMP/int" --set train.steps=6 --set train.val_every=3 --quiet

if "$METACL" train acl --config "$CONF" --backend opencl --out "$TMP/probe" --set train.steps=1 --quiet >/dev/null 2>&1; then
    backends="ref opencl"
else
    echo "no OpenCL device: OpenCL runs skipped"
    backends=ref
fi
for be in $backends; do
    A=$TMP/$be-whole; B=$TMP/$be-split
    check "$be: uninterrupted run" 0 "$METACL" train acl --config "$CONF" --backend $be --out "$A" --quiet
    for f in config.txt metrics.csv log.txt last.ckpt best.ckpt; do
        if [ -s "$A/$f" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $be: $A/$f missing"; fi
    done
    check "$be: the run directory is not reused" 1 "$METACL" train acl --config "$CONF" --backend $be --out "$A" --quiet
    expect_text "$be: says to resume" "--resume"
    check "$be: first half" 0 "$METACL" train acl --config "$CONF" --backend $be --out "$B" --set train.steps=3 --quiet
    check "$be: resume to the end" 0 "$METACL" train acl --resume "$B" --backend $be --set train.steps=6
    expect_text "$be: reports the resume" "resumed at step 3"
    cut -d, -f1-5 "$A/metrics.csv" >"$TMP/a.csv"; cut -d, -f1-5 "$B/metrics.csv" >"$TMP/b.csv"
    same_file "$be: resumed losses and accuracies == uninterrupted (steps 1-6)" "$TMP/a.csv" "$TMP/b.csv"
    # the comparison can fail: a run with another seed differs
    check "$be: another seed" 0 "$METACL" train acl --config "$CONF" --backend $be --out "$TMP/$be-seed2" --set train.seed=2 --quiet
    cut -d, -f1-5 "$TMP/$be-seed2/metrics.csv" >"$TMP/c.csv"
    if cmp -s "$TMP/a.csv" "$TMP/c.csv"; then fail=$((fail + 1)); echo "FAIL: $be: another seed gave the same losses"; else pass=$((pass + 1)); fi
    # a NaN loss at step 5 stops the run; last.ckpt stays the step-3 one. METACL_TEST_NAN_STEP
    # is a test hook, compiled in only with configure --enable-test-hooks (make check exports
    # METACL_HAVE_TEST_HOOKS=1 then); without it the variable does nothing: skip this check.
    if [ "${METACL_HAVE_TEST_HOOKS:-0}" = 1 ]; then
        check "$be: NaN loss stops the run" 1 env METACL_TEST_NAN_STEP=5 "$METACL" train acl --config "$CONF" --backend $be --out "$TMP/$be-nan" --quiet
        expect_text "$be: names the NaN step" "step 5: the loss is nan"
        check "$be: the kept checkpoint resumes" 0 "$METACL" train acl --resume "$TMP/$be-nan" --backend $be --quiet
        cut -d, -f1-5 "$TMP/$be-nan/metrics.csv" >"$TMP/n.csv"
        same_file "$be: after resuming past the NaN, the run equals the uninterrupted one" "$TMP/a.csv" "$TMP/n.csv"
    else
        echo "note: $be: NaN-loss check skipped: no test hooks in this build (configure --enable-test-hooks)"
    fi
    # evaluation of the trained checkpoint: task sequences (held-out hershey classes) and
    # Split-X on the whole prepared set read as user IDX data, with an SGD baseline
    check "$be: eval seq" 0 "$METACL" eval acl --backend $be --ckpt tiny="$A/best.ckpt" --protocol seq \
        --data hershey --data-dir "$TMP/data" --n-way 3 --k-shot 2 --tasks 2 --runs 2 --episodes 2 --json
    expect_text "$be: eval JSON" '"name":"tiny","kind":"acl"'
    check "$be: eval split-dil with a baseline and figures" 0 "$METACL" eval acl --backend $be \
        --ckpt "$A/last.ckpt" --baseline sgd:0.01:1 --baseline ewc:lambda=10,lr=0.01,epochs=1 \
        --protocol split-dil --tasks 2 --k-shot 2 --runs 2 \
        --data "idx:$TMP/data/hershey/images.idx,$TMP/data/hershey/labels.idx" --figures "$TMP/$be-fig"
    expect_text "$be: split table has the baseline row" "| SGD (lr 0.01, 1 epochs) |"
    expect_text "$be: split table has the EWC row" "| EWC (lambda 10, SGD lr 0.01, 1 epochs) |"
    for f in last-split-dil-accuracy.png last-srwm-layer0-head0.png sgd-lr0.01-1ep-split-dil-accuracy.png split-dil-accuracy.png; do
        if [ -s "$TMP/$be-fig/$f" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $be: figure $f missing"; ls "$TMP/$be-fig" | sed 's/^/    /'; fi
    done
done
check "eval: no protocol" 2 "$METACL" eval acl --ckpt "$TMP/ref-whole/best.ckpt" --data hershey
check "eval: unknown protocol" 2 "$METACL" eval acl --ckpt "$TMP/ref-whole/best.ckpt" --data hershey --protocol nope
expect_text "names the protocol" "nope"
check "eval: bad class list" 2 "$METACL" eval acl --ckpt "$TMP/ref-whole/best.ckpt" --data hershey@3-1 --protocol seq
check "eval: bad runs" 2 "$METACL" eval acl --ckpt "$TMP/ref-whole/best.ckpt" --data hershey --protocol seq --runs 0
check "eval: missing checkpoint" 1 "$METACL" eval acl --ckpt "$TMP/nosuch.ckpt" --data hershey --data-dir "$TMP/data" --protocol seq
expect_text "names the file" "nosuch.ckpt"
head -c 100 "$TMP/ref-whole/best.ckpt" >"$TMP/trunc.ckpt"
check "eval: truncated checkpoint" 1 "$METACL" eval acl --ckpt "$TMP/trunc.ckpt" --data hershey --data-dir "$TMP/data" --protocol seq
expect_text "says truncated" "truncated"
if [ "$backends" = "ref opencl" ]; then
    # both backends learn the same thing: step-1 losses agree to 4 digits
    l_ref=$(sed -n 2p "$TMP/ref-whole/metrics.csv" | cut -d, -f2); l_ocl=$(sed -n 2p "$TMP/opencl-whole/metrics.csv" | cut -d, -f2)
    if awk -v a="$l_ref" -v b="$l_ocl" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-4*(a<0?-a:a)+1e-5)}'; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: step-1 loss ref $l_ref vs OpenCL $l_ocl"; fi
fi
# The validation columns (the paper's Sec. 4.2 curve of in-context forgetting): a 2-task run
# without the ACL term logs, at each validation point, the accuracy of each domain's tasks
# after their own context (val_main_*) and after the later task's (val_bwd_*: A after B).
# One domain, 2 tasks: val_score, the mean over the 2 main terms and the 1 bwd term of each
# batch, must equal (2 main + bwd) / 3, which a wrong column breaks; other rows leave them
# empty; a 1-task run has no bwd column; a run resumed from a metrics.csv without the columns
# (an older version's) gets the current header.
check "no-ACL run with validation columns" 0 "$METACL" train acl --config "$CONF" --out "$TMP/vc" --quiet --set task.acl=0
head -1 "$TMP/vc/metrics.csv" | grep -q ',val_score,val_main_hershey,val_bwd_hershey$' && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: header lacks the validation columns: $(head -1 "$TMP/vc/metrics.csv")"; }
if awk -F, '$1 == 3 || $1 == 6 { if ($9 == "" || $10 == "" || $11 == "") exit 1; d = $9 - (2 * $10 + $11) / 3;
        if (d > 2e-6 || d < -2e-6) exit 1; n++ } $1 == 1 || $1 == 2 || $1 == 4 || $1 == 5 { if ($10 != "" || $11 != "") exit 1 }
        END { exit n != 2 }' "$TMP/vc/metrics.csv"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: validation columns do not add up to val_score (6-decimal round-off: 2e-6)"; cat "$TMP/vc/metrics.csv"; fi
# the same check on a deliberately wrong row (bwd + 0.1) fails
if sed '4s/,\([0-9.]*\)$/,0.999999/' "$TMP/vc/metrics.csv" | awk -F, '$1 == 3 { d = $9 - (2 * $10 + $11) / 3; exit !(d > 2e-6 || d < -2e-6) }'; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the column check does not see a wrong bwd value"; fi
check "1-task run" 0 "$METACL" train acl --config "$CONF" --out "$TMP/vc1" --quiet --set task.n_tasks=1
head -1 "$TMP/vc1/metrics.csv" | grep -q ',val_score,val_main_hershey$' && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: 1-task header: $(head -1 "$TMP/vc1/metrics.csv")"; }
check "3 steps" 0 "$METACL" train acl --config "$CONF" --out "$TMP/vco" --quiet --set task.acl=0 --set train.steps=3
sed -i '1s/,val_main_hershey,val_bwd_hershey$//' "$TMP/vco/metrics.csv"
check "resumed under an old header" 0 "$METACL" train acl --resume "$TMP/vco" --quiet --set train.steps=6
head -1 "$TMP/vco/metrics.csv" >"$TMP/h1"
head -1 "$TMP/vc/metrics.csv" >"$TMP/h2"
same_file "resume writes the current header" "$TMP/h1" "$TMP/h2"
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
