#!/bin/sh
# test-resume-families.sh — resume is exact in every family at every stop point: a short run
# of acl, smn (WCST and Online-X, fast weights on), oct (online) and lm is stopped after each
# of its steps (a run of train.steps = s: its last.ckpt is what a SIGTERM after step s writes)
# and resumed to the end with --resume --set train.steps=N; every resumed run must equal the
# uninterrupted one: metrics.csv's step, loss and metric columns line for line, and the final
# last.ckpt byte for byte up to its counters section (parameters, fast-weight state, optimizer
# state, random state, config; the counters hold train_ms, the wall time).
# Before the fix, Online-X runs stopped after steps whose window wrote nothing to a small
# fast-weight layer diverged: its meta-learner had not been reached by a gradient since the
# resume, so the optimizer skipped it where the uninterrupted run moved it (Adam's momentum).
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data) and a
# tiny text corpus made here.
METACL=${METACL:-./metacl}
TMP=test-resume-families.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
to() { timeout 120 "$@"; }

echo "test-resume-families: binary $METACL (seeds: model.seed 1, train.seed 1, stream.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"

# same_ckpt DESC A B: equal up to the counters section (as tests/test-train-kill.sh)
same_ckpt() {
    if [ ! -s "$2" ] || [ ! -s "$3" ]; then fail=$((fail + 1)); echo "FAIL: $1: a checkpoint is missing"; return; fi
    if [ "$(wc -c <"$2")" != "$(wc -c <"$3")" ]; then fail=$((fail + 1)); echo "FAIL: $1: checkpoints differ in size"; return; fi
    off=$(grep -oba train_ms "$2" | tail -1 | cut -d: -f1)
    first=$(cmp -l "$2" "$3" | head -1 | awk '{print $1}')
    if [ -n "$first" ] && [ "$first" -le $((off - 64)) ]; then
        fail=$((fail + 1)); echo "FAIL: $1: the checkpoints differ at byte $first, before the counters (at about $off)"
    else pass=$((pass + 1)); fi
}

# every_stop FAMILY CONF COLS CMD...: the uninterrupted run, then one stopped after each step
every_stop() {
    fam=$1 conf=$2 cols=$3
    W=$TMP/$fam-whole
    check "$fam: uninterrupted run" 0 to "$METACL" train $fam --config "$conf" --out "$W" --quiet
    N=$(($(wc -l <"$W/metrics.csv") - 1))
    cut -d, -f1-$cols "$W/metrics.csv" >"$TMP/w.csv"
    s=1
    bad=""
    while [ $s -lt $N ]; do
        R=$TMP/$fam-$s
        to "$METACL" train $fam --config "$conf" --set train.steps=$s --out "$R" --quiet >/dev/null 2>&1
        to "$METACL" train $fam --resume "$R" --set train.steps=$N --quiet >"$TMP/r.log" 2>&1 || { bad="$bad $s(exit)"; cat "$TMP/r.log"; }
        cut -d, -f1-$cols "$R/metrics.csv" >"$TMP/r.csv"
        if cmp -s "$TMP/w.csv" "$TMP/r.csv"; then pass=$((pass + 1)); else
            bad="$bad $s"; diff "$TMP/w.csv" "$TMP/r.csv" | head -3 | sed 's/^/    /'; fi
        same_ckpt "$fam: stopped after step $s" "$W/last.ckpt" "$R/last.ckpt"
        rm -rf "$R"
        s=$((s + 1))
    done
    if [ -n "$bad" ]; then fail=$((fail + 1)); echo "FAIL: $fam: resumed runs differ from the uninterrupted one after stops at:$bad"; fi
    echo "$fam: $((N - 1)) stop points checked"
}

tiny_conf "$TMP/acl.conf" "$TMP/data" train.steps=6 train.val_every=3 train.ckpt_every=100
every_stop acl "$TMP/acl.conf" 5
cat >"$TMP/onlinex.conf" <<CONF
task = onlinex
model.arch = resnet
model.width = 2
model.n_out = 5
model.value_head = 0
model.meta_hidden = 4
data.source = hershey
data.dir = $TMP/data
stream.tasks = 20
stream.len_min = 2
stream.len_max = 6
train.batch = 4
train.ckpt_every = 100
train.log_every = 1
CONF
every_stop smn "$TMP/onlinex.conf" 6
mv "$TMP/smn-whole" "$TMP/smn-onlinex"
printf 'task = wcst\nmodel.hidden = 16\nmodel.meta_hidden = 4\ntrain.steps = 8\ntrain.ckpt_every = 100\ntrain.log_every = 1\n' >"$TMP/wcst.conf"
every_stop smn "$TMP/wcst.conf" 6
tiny_oct_conf "$TMP/oct.conf" "$TMP/data" stream.tasks=3 train.ckpt_every=100
every_stop oct "$TMP/oct.conf" 6
tiny_lm_corpus "$TMP/data"
tiny_lm_conf "$TMP/lm.conf" "$TMP/data/tiny" train.steps=6 train.val_every=3 train.ckpt_every=100 train.log_every=1
every_stop lm "$TMP/lm.conf" 4

echo "test-resume-families: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
