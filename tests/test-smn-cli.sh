#!/bin/sh
# test-smn-cli.sh — `metacl train smn` and `metacl eval smn` end to end on tiny sizes: bad
# config values (p outside (0, 1], k = 0, gamma outside [0, 1)) refused with file:line; a WCST
# run and an Online-X run on hershey; exact resume (the metrics of a run stopped halfway and
# resumed equal an uninterrupted run's); a truncated checkpoint refused; the WCST protocol
# with a baseline and its figures; the online protocol with the fine-tuning baselines; usage
# errors (exit 2). On the reference backend, and OpenCL when a device exists (its first loss
# agrees with the reference's to 4 digits).
METACL=${METACL:-./metacl}
TMP=test-smn-cli.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
echo "test-smn-cli: binary $METACL (seeds: model.seed 1, train.seed 1, wcst.seed 1, stream.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
W=$TMP/wcst.conf
cat >"$W" <<CONF
task = wcst
model.hidden = 16
model.meta_hidden = 4
train.steps = 8
train.ckpt_every = 2
train.log_every = 1
CONF
X=$TMP/onlinex.conf
cat >"$X" <<CONF
task = onlinex
model.arch = resnet
model.width = 2
model.n_out = 5
model.value_head = 0
model.meta_hidden = 4
data.source = hershey
data.dir = $TMP/data
stream.tasks = 6
stream.len_min = 2
stream.len_max = 3
train.batch = 4
train.ckpt_every = 2
train.log_every = 1
CONF

check "no arguments" 2 "$METACL" eval smn
check "unknown option" 2 "$METACL" train smn --config "$W" --bogus
printf 'task = wcst\nmodel.p = 0\n' >"$TMP/p0.conf"
check "p = 0" 1 "$METACL" train smn --config "$TMP/p0.conf" --out "$TMP/u"
expect_text "names file, line and range" "p0.conf:2: model.p = '0'"
printf 'task = wcst\n\nmodel.p = 1.5\n' >"$TMP/p15.conf"
check "p = 1.5" 1 "$METACL" train smn --config "$TMP/p15.conf" --out "$TMP/u"
expect_text "names file and line" "p15.conf:3: model.p"
printf 'task = wcst\nmodel.k = 0\n' >"$TMP/k0.conf"
check "k = 0" 1 "$METACL" train smn --config "$TMP/k0.conf" --out "$TMP/u"
expect_text "names file and line" "k0.conf:2: model.k"
printf 'task = wcst\nmodel.gamma = 1\n' >"$TMP/g1.conf"
check "gamma = 1" 1 "$METACL" train smn --config "$TMP/g1.conf" --out "$TMP/u"
expect_text "names file and line" "g1.conf:2: model.gamma"
printf 'task = wcst\nmodel.eval_gamma = -0.1\n' >"$TMP/g2.conf"
check "eval_gamma < 0" 1 "$METACL" train smn --config "$TMP/g2.conf" --out "$TMP/u"
expect_text "names file and line" "g2.conf:2: model.eval_gamma"
check "k = 1 with fast weights" 1 "$METACL" train smn --config "$W" --set model.k=1 --out "$TMP/u"
expect_text "says why" "k >= 2"
check "wcst with a resnet" 1 "$METACL" train smn --config "$W" --set model.arch=resnet --out "$TMP/u"
check "classes with fast weights" 1 "$METACL" train smn --config "$X" --set task=classes --set train.steps=2 --out "$TMP/u"
[ ! -e "$TMP/u/config.txt" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused run left files"; }

if "$METACL" devices 2>/dev/null | grep -q "^  opencl [0-9]"; then backends="ref opencl"; else
    echo "no OpenCL device: OpenCL runs skipped"; backends=ref; fi
for b in $backends; do
    for t in wcst onlinex; do
        C=$W; [ $t = onlinex ] && C=$X
        check "$b $t: a whole run" 0 "$METACL" train smn --config "$C" --out "$TMP/$b-$t-whole" --backend "$b" --quiet
        for f in config.txt metrics.csv log.txt last.ckpt; do
            [ -s "$TMP/$b-$t-whole/$f" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $b $t: $f missing"; }
        done
        n=$(($(wc -l <"$TMP/$b-$t-whole/metrics.csv") - 1))
        [ "$n" -ge 4 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $b $t: $n metric rows"; }
        half=$((n / 2))
        check "$b $t: $half steps" 0 "$METACL" train smn --config "$C" --out "$TMP/$b-$t-split" --backend "$b" --quiet \
            --set train.steps=$half
        check "$b $t: resume to the end" 0 "$METACL" train smn --resume "$TMP/$b-$t-split" --backend "$b" --quiet \
            --set train.steps=$n
        cut -d, -f1-7 "$TMP/$b-$t-whole/metrics.csv" >"$TMP/a"
        cut -d, -f1-7 "$TMP/$b-$t-split/metrics.csv" >"$TMP/b"
        if cmp -s "$TMP/a" "$TMP/b"; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "FAIL: $b $t: resumed run differs"; diff "$TMP/a" "$TMP/b" | head; fi
    done
done
# a different run is seen to differ (the comparison can fail)
check "another seed" 0 "$METACL" train smn --config "$W" --out "$TMP/other" --quiet --set model.seed=2
cut -d, -f1-7 "$TMP/other/metrics.csv" >"$TMP/c"
cut -d, -f1-7 "$TMP/ref-wcst-whole/metrics.csv" >"$TMP/a"
cmp -s "$TMP/a" "$TMP/c" && { fail=$((fail + 1)); echo "FAIL: two seeds gave the same metrics"; } || pass=$((pass + 1))

check "ckpt export" 0 "$METACL" ckpt export "$TMP/ref-wcst-whole/last.ckpt" "$TMP/w.ckpt"
check "ckpt info" 0 "$METACL" ckpt info "$TMP/w.ckpt"
expect_text "the kind" "model smn"
expect_text "no optimizer state" "optimizer state: no"
expect_text "the whole config" "task = wcst"
check "wcst protocol" 0 "$METACL" eval smn --protocol wcst --ckpt "$TMP/w.ckpt" --baseline adam:0.001 \
    --baseline offline-rmsprop:0.001 --runs 2 --tasks 2 --max-steps 12 --figures "$TMP/fig" --quiet
expect_text "a table per task" "Updates to solve each rule"
expect_text "the baseline's column" "offline-rmsprop"
for f in wcst-updates.png wcst-persev.png; do
    [ -s "$TMP/fig/$f" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $f missing"; }
done
check "wcst protocol --json" 0 "$METACL" eval smn --protocol wcst --ckpt "$TMP/w.ckpt" --runs 1 --tasks 1 --max-steps 6 --json --quiet
expect_text "json" '"updates_to_solve"'
# the summary's per-run values in the JSON are the means over each run's first and last tasks,
# and the table's summary cells are their mean (a doc ties its summary numbers to them)
check "wcst protocol --json-out" 0 "$METACL" eval smn --protocol wcst --ckpt "$TMP/w.ckpt" --baseline adam:0.001 \
    --runs 3 --tasks 4 --max-steps 40 --json-out "$TMP/wcst.json" --quiet
printf "%s\n" "$LAST_OUT" >"$TMP/wcst.md"
if python3 - "$TMP/wcst.json" "$TMP/wcst.md" <<'PY'; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: wcst summary in the JSON"; fi
import json, sys
d = json.load(open(sys.argv[1]))
rows = {l.split("|")[1].strip(): l.split("|")[2:6] for l in open(sys.argv[2]) if l.startswith("| ")}
for a in d["agents"]:
    s, cut = a["summary"], a["summary"]["cut"]
    for key, table, i0, i1, col in (("updates_first", "updates_to_solve", 0, cut, 0),
                                    ("updates_rest", "updates_to_solve", cut, 4, 1),
                                    ("persev_first", "persev_errors", 0, cut, 2),
                                    ("persev_rest", "persev_errors", cut, 4, 3)):
        for r, row in enumerate(a[table]):
            x = [v for v in row[i0:i1] if v is not None]
            want = sum(x) / len(x) if x else None
            got = s[key][r]
            assert (got is None) == (want is None) and (want is None or abs(got - want) < 1e-6), (a["name"], key, r, got, want)
        vals = [v for v in s[key] if v is not None]
        cell = rows[a["name"]][col].strip()
        if vals:
            assert abs(float(cell.split()[0]) - sum(vals) / len(vals)) <= 0.051, (a["name"], key, cell, vals)
assert cut == 2
PY
# a baseline without a learning rate gets one from a grid search that grows at its edges: the
# chosen lr is the best point (the smallest of a tie), and an edge point better than every
# other is the end of the ladder (0.3 or 1e-6)
check "wcst: grid search" 0 "$METACL" eval smn --protocol wcst --ckpt "$TMP/w.ckpt" --baseline adam --baseline rmsprop \
    --runs 1 --tasks 2 --max-steps 12 --val-runs 1 --json-out "$TMP/grid.json" --quiet
if python3 - "$TMP/grid.json" <<'PY'; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: wcst grid search"; fi
import json, sys
d = json.load(open(sys.argv[1]))
for a in d["agents"]:
    if a["name"] not in ("adam", "rmsprop"):
        continue
    g, s, lr = a["grid_lr"], a["grid_score"], a["lr"]
    assert len(g) >= 4 and len(g) == len(s) and g[:4] == [0.0001, 0.0003, 0.001, 0.003], (a["name"], g)
    best = max(s)
    assert abs(lr - min(x for x, y in zip(g, s) if y == best)) < 1e-9, (a["name"], lr, g, s)
    # an edge point that beats every other point ends the ladder
    for edge, end in ((max(g), 0.3), (min(g), 1e-6)):
        e = g.index(edge)
        assert not all(s[e] > y for i, y in enumerate(s) if i != e) or abs(edge - end) < 1e-9, (a["name"], g, s)
PY
check "wcst: an online baseline with a checkpoint" 2 "$METACL" eval smn --protocol wcst --baseline online:"$TMP/w.ckpt"
check "wcst: unknown baseline" 2 "$METACL" eval smn --protocol wcst --baseline bogus
check "lengths malformed" 2 "$METACL" eval smn --protocol online --ckpt "$TMP/w.ckpt" --lengths 5-2
check "online protocol with a wcst agent" 2 "$METACL" eval smn --protocol online --ckpt "$TMP/w.ckpt" --data hershey \
    --data-dir "$TMP/data"

cp "$TMP/ref-onlinex-whole/last.ckpt" "$TMP/x.ckpt"
check "plain model for the baselines" 0 "$METACL" train smn --config "$X" --out "$TMP/ft" --quiet --set model.fast=0 --set model.k=1
check "online protocol" 0 "$METACL" eval smn --protocol online --ckpt "$TMP/x.ckpt" --baseline online:"$TMP/ft/last.ckpt":0.001 \
    --baseline pretrain-reset:"$TMP/ft/last.ckpt":0.001 --data hershey --data-dir "$TMP/data" --lengths 1-2,3-4 \
    --tasks 3 --runs 2 --round 4 --figures "$TMP/fig" --quiet
expect_text "accuracy table" "Average task accuracy"
expect_text "perseveration table" "Perseveration error rate"
expect_text "interference table" "Interference error rate"
[ -s "$TMP/fig/online-accuracy.png" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: online figure missing"; }
# --cache: every finished run (grid-search runs too) is kept and read back, so the same command
# started again gives the uncached command's numbers; a kept run is really read (an edited file
# moves the table), and a damaged one is run again and replaced
CACHED="eval smn --protocol online --ckpt $TMP/x.ckpt --baseline pretrain-online:$TMP/ft/last.ckpt --data hershey
    --data-dir $TMP/data --lengths 1-2,3-4 --tasks 3 --runs 2 --round 4 --val-runs 1 --quiet"
# shellcheck disable=SC2086 # $CACHED holds the options
check "online protocol, no cache" 0 "$METACL" $CACHED --json-out "$TMP/nocache.json"
# shellcheck disable=SC2086
check "online protocol, --cache (first)" 0 "$METACL" $CACHED --cache "$TMP/cache" --json-out "$TMP/cache1.json"
n_kept=$(ls "$TMP/cache" | grep -c '\.run$')
# 2 agents x 2 lengths x 2 runs, and at least the 4 grid points of the baseline's search
[ "$n_kept" -ge 12 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: --cache kept $n_kept runs, want >= 12"; }
# shellcheck disable=SC2086
check "online protocol, --cache (again)" 0 "$METACL" $CACHED --cache "$TMP/cache" --json-out "$TMP/cache2.json"
same_agents() { python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(f))["agents"] for f in sys.argv[1:3])
for x in a + b:
    x.pop("seconds")
sys.exit(0 if a == b else 1)
PY
}
if same_agents "$TMP/nocache.json" "$TMP/cache1.json" && same_agents "$TMP/nocache.json" "$TMP/cache2.json"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --cache changed the results"; fi
# edit one kept run of the Sparse-MetaNet agent (every task right): its accuracy must move
kept=$(grep -l "^tasks 3 " "$TMP/cache"/*.run | head -1)
awk 'NR <= 3 { print; next } { $7 = $8; print }' "$kept" >"$TMP/edited" && cp "$TMP/edited" "$kept"
# shellcheck disable=SC2086
check "online protocol, --cache (an edited run)" 0 "$METACL" $CACHED --cache "$TMP/cache" --json-out "$TMP/cache3.json"
if ! same_agents "$TMP/nocache.json" "$TMP/cache3.json"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: an edited kept run was not read back"; fi
head -c 40 "$TMP/edited" >"$kept"
# shellcheck disable=SC2086
check "online protocol, --cache (a damaged run)" 0 "$METACL" $CACHED --cache "$TMP/cache" --json-out "$TMP/cache4.json"
if same_agents "$TMP/nocache.json" "$TMP/cache4.json" && grep -q "^tasks 3 " "$kept"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: a damaged kept run was not run again and replaced"; fi
# a stream of more than MCL_METANET_MAX_K (64) rounds: every round's prediction is scored (the
# queued predictions of a step were once never scored by the online runs: no accuracy, and a
# refusal at step 64)
check "online protocol, 30 tasks (> 64 rounds)" 0 "$METACL" eval smn --protocol online --ckpt "$TMP/x.ckpt" \
    --data hershey --data-dir "$TMP/data" --lengths 3-4 --tasks 30 --runs 1 --round 4 --quiet
if echo "$LAST_OUT" | sed -n '/Average task accuracy/,/Perseveration/p' | grep -q '^| [^|]* | [0-9][0-9.]* |'; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: the accuracy table has no number"; echo "$LAST_OUT" | head -8; fi
head -c 300 "$TMP/x.ckpt" >"$TMP/trunc.ckpt"
check "a truncated checkpoint" 1 "$METACL" eval smn --protocol online --ckpt "$TMP/trunc.ckpt" --data hershey --data-dir "$TMP/data"
expect_text "says the checkpoint is truncated" "truncated"
head -c 300 "$TMP/ref-wcst-whole/last.ckpt" >"$TMP/t.ckpt" && cp "$TMP/t.ckpt" "$TMP/ref-wcst-whole/last.ckpt"
check "resume from a truncated checkpoint" 1 "$METACL" train smn --resume "$TMP/ref-wcst-whole" --quiet
expect_text "says the checkpoint is truncated" "truncated"
if [ "$backends" = "ref opencl" ]; then
    l_ref=$(sed -n 2p "$TMP/ref-wcst-split/metrics.csv" | cut -d, -f2); l_ocl=$(sed -n 2p "$TMP/opencl-wcst-split/metrics.csv" | cut -d, -f2)
    if awk -v a="$l_ref" -v b="$l_ocl" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d <= 1e-4*(a<0?-a:a)+1e-5)}'; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: step-1 loss ref $l_ref vs OpenCL $l_ocl"; fi
fi
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
