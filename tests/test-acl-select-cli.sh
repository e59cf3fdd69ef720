#!/bin/sh
# test-acl-select-cli.sh — `metacl eval acl --select`, the baselines' grid search:
#   - split-dil / split-cil with --select on a set without held-out training images (fmnist,
#     hershey) is refused with exit 2 and a message naming fmnist-val;
#   - seq/two-task (hershey's meta-validation classes) and split-dil (fmnist-val: contexts from
#     its 55 000 training images, queries its 5 000 'val' images) log the grid in the JSON: each
#     selected baseline has a "selection" object whose points, chosen index, data and splits are
#     consistent, the chosen point is the first best score, the evaluated lr is the chosen one and
#     a key given in --baseline (epochs=1) stays fixed in every point;
#   - split-dil on a set split by classes (hershey) runs, its context and queries from its test
#     classes; ten models (2 + 8, the review job's CIL tables) fit in one table, a 17th is refused;
#   - the JSON check fails on a JSON without "selection" and on one whose chosen index is out
#     of range (it can fail);
#   - a two-task table on class subsets names them as given (fmnist@0-1 fmnist@2-3), and its
#     accuracy-matrix figure is written.
# Tiny cases (1 epoch, 1 run, 1-shot, 2 tasks): a few seconds on the reference backend.
# Data: hershey (Debian hershey-fonts-data) and, when dataset-fashion-mnist is installed,
# Fashion-MNIST, prepared into a temporary data dir; seed 1.
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-acl-select-cli.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 to parse JSON"; exit 77; }

# sel_ok "description" FILE PROTOCOL CONTEXT_SPLIT DATA [1: expect the check to fail]: model 0 of
# FILE has a consistent "selection" block
SEL_PY='import json, sys
d = json.load(open(sys.argv[1])); proto, ctx_split, data = sys.argv[2], sys.argv[3], sys.argv[4]
m = d["models"][0]; s = m["selection"]; p = s["points"]
assert s["protocol"] == proto and d["protocol"] == proto, "protocol"
assert s["data"] == [data] and s["context_split"] == ctx_split and s["query_split"] == "val", "data/splits"
assert s["n"] == len(p) and s["n"] > 1, "n %d, %d points" % (s["n"], len(p))
assert 0 <= s["chosen"] < s["n"], "chosen %d of %d" % (s["chosen"], s["n"])
sc = [q["score"] for q in p]
assert all(0 <= v <= 1 for v in sc), "scores are fractions"
assert s["chosen"] == sc.index(max(sc)), "chosen is the first best"
assert s["fixed"] == ["epochs"] and all(q["epochs"] == 1 for q in p), "epochs=1 stays fixed"
assert len(set(q["lr"] for q in p)) == len(p), "the points differ in lr"
lrs = sorted(q["lr"] for q in p); cl = p[s["chosen"]]["lr"]
assert 1 < s["n_grid"] <= s["n"], "n_grid %d of %d" % (s["n_grid"], s["n"])
assert not (cl == lrs[-1] and cl < 0.999) and not (cl == lrs[0] and cl > 1.001e-7), \
    "the chosen lr %g is on an edge the grid did not grow past" % cl
c = d["provenance"]["config"]["models"][0]
assert abs(c["lr"] - p[s["chosen"]]["lr"]) < 1e-9 and c["epochs"] == 1, "evaluated with the chosen lr"
assert d["provenance"]["config"]["select"] is True and 0 <= m["acc"] <= 1
'
sel_ok() {
    want=${6:-0} # 0: the block must pass the check, 1: the check must reject it
    if python3 -c "$SEL_PY" "$2" "$3" "$4" "$5" 2>"$TMP/py.err"; then got=0; else got=1; fi
    if [ "$got" -eq "$want" ]; then
        pass=$((pass + 1))
    elif [ "$want" -eq 1 ]; then
        fail=$((fail + 1)); echo "FAIL: $1: the check accepted a wrong JSON"
    else
        fail=$((fail + 1)); echo "FAIL: $1"; sed 's/^/    /' "$TMP/py.err"; head -c 3000 "$2" | sed 's/^/    /'; echo
    fi
}
# has_line "description" FILE TEXT
has_line() {
    if grep -q -- "$3" "$2"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 lacks '$3'"; sed 's/^/    /' "$2"; fi
}

echo "test-acl-select-cli: binary $METACL, seed 1"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"

# ---- refusals: split protocols need held-out training images (before any data is read)
check "split-dil --select on fmnist" 2 "$METACL" eval acl --protocol split-dil --data fmnist --baseline sgd --select
expect_text "names fmnist-val" "use --data fmnist-val"
check "split-cil --select on hershey" 2 "$METACL" eval acl --protocol split-cil --data hershey --baseline sgd --select
expect_text "names fmnist-val" "fmnist-val"

# ---- two-task on hershey's meta-validation classes, epochs fixed: a grid over lr only
"$METACL" eval acl --protocol two-task --data hershey --data-dir "$TMP/data" --n-way 3 --k-shot 1 --runs 1 \
    --episodes 2 --baseline sgd:epochs=1 --select --json-out "$TMP/seq.json" >"$TMP/seq.md" 2>"$TMP/seq.err"
sel_ok "two-task selection block" "$TMP/seq.json" two-task val hershey
has_line "two-task: one line with the chosen values" "$TMP/seq.err" "^selected: SGD (lr [0-9.e-]*, 1 epochs) (validation ACC"
# the check can fail: no selection block (no --select), a chosen index out of range
"$METACL" eval acl --protocol two-task --data hershey --data-dir "$TMP/data" --n-way 3 --k-shot 1 --runs 1 \
    --episodes 2 --baseline sgd:epochs=1 --json >"$TMP/nosel.json" 2>/dev/null
sel_ok "a JSON without selection is caught" "$TMP/nosel.json" two-task val hershey 1
python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); d["models"][0]["selection"]["chosen"] = d["models"][0]["selection"]["n"]
json.dump(d, open(sys.argv[2], "w"))' "$TMP/seq.json" "$TMP/bad.json"
sel_ok "a chosen index out of range is caught" "$TMP/bad.json" two-task val hershey 1
# ... and a chosen lr left on the grid's upper edge (the points above it dropped)
python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); s = d["models"][0]["selection"]; c = s["points"][s["chosen"]]
s["points"] = [q for q in s["points"] if q["lr"] <= c["lr"]]; s["n"] = len(s["points"])
s["n_grid"] = min(s["n_grid"], s["n"]); s["chosen"] = s["points"].index(c)
json.dump(d, open(sys.argv[2], "w"))' "$TMP/seq.json" "$TMP/edge.json"
sel_ok "a chosen lr on an unprobed edge is caught" "$TMP/edge.json" two-task val hershey 1

# ---- --val-classes: episodes from the meta-validation classes (seq/two-task only)
check "--val-classes with split-dil" 2 "$METACL" eval acl --protocol split-dil --data hershey --val-classes --baseline sgd
expect_text "names the protocols" "--val-classes is for seq and two-task"
check "--val-classes with user data" 2 "$METACL" eval acl --protocol seq --data idx:/nonexistent-i,/nonexistent-l --val-classes --baseline sgd
expect_text "names the user data" "has no meta-validation classes"
# classes_is FILE WANT: the JSON's provenance says which classes the episodes came from
classes_is() { python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); sys.exit(0 if d["provenance"]["config"]["classes"] == sys.argv[2] else 3)' "$1" "$2"; }
# split-dil on a set split by classes (hershey): context and queries from its test classes,
# each run its own classes, the queries the classes' other images (20 renderings - K = 1)
check "split-dil on hershey" 0 "$METACL" eval acl --protocol split-dil --data hershey --data-dir "$TMP/data" --tasks 2 \
    --k-shot 1 --runs 2 --baseline sgd:epochs=1 --json-out "$TMP/sx.json" --quiet
if python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); m = d["models"][0]
assert d["protocol"] == "split-dil" and len(m["acc_runs"]) == 2 and all(0 <= a <= 1 for a in m["acc_runs"]), "runs"' "$TMP/sx.json" 2>"$TMP/sx.err"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: split-dil on hershey JSON"; cat "$TMP/sx.err"; fi
# ten models in one table (the review job's CIL tables: 2 checkpoints + 8 baselines): up to 16
# are taken, the 17th is refused with exit 2 before any data is read
ten=""; for b in sgd adam ewc ewc-online si lwf replay:buffer=10 replay:buffer=50 sgd:lr=0.01 adam:lr=0.01; do
    case $b in *:*) ten="$ten --baseline $b,epochs=1" ;; *) ten="$ten --baseline $b:epochs=1" ;; esac; done
# shellcheck disable=SC2086 # $ten holds options
check "ten models in one table" 0 "$METACL" eval acl --protocol split-dil --data hershey --data-dir "$TMP/data" --tasks 2 \
    --k-shot 1 --runs 1 --final-only $ten --json-out "$TMP/ten.json" --quiet
if python3 -c 'import json, sys
sys.exit(0 if len(json.load(open(sys.argv[1]))["models"]) == 10 else 3)' "$TMP/ten.json"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: ten models: the JSON does not hold 10"; fi
# shellcheck disable=SC2086
check "seventeen models" 2 "$METACL" eval acl --protocol split-dil --data hershey $ten $ten --baseline sgd
expect_text "names the limit" "at most 16"
check "two-task --val-classes" 0 "$METACL" eval acl --protocol two-task --data hershey --data-dir "$TMP/data" --n-way 3 \
    --k-shot 1 --runs 1 --episodes 2 --baseline sgd:epochs=1 --val-classes --json-out "$TMP/vc.json"
expect_text "the table says so" "(meta-validation classes)"
"$METACL" eval acl --protocol two-task --data hershey --data-dir "$TMP/data" --n-way 3 --k-shot 1 --runs 1 \
    --episodes 2 --baseline sgd:epochs=1 --json-out "$TMP/tc.json" >/dev/null 2>&1
if classes_is "$TMP/vc.json" meta-validation && classes_is "$TMP/tc.json" meta-test; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: --val-classes: provenance classes"; fi
# the check can fail: the default run's JSON is not a meta-validation one
if classes_is "$TMP/tc.json" meta-validation; then fail=$((fail + 1)); echo "FAIL: classes_is accepted a meta-test JSON"; else
    pass=$((pass + 1)); fi

# ---- split-dil on fmnist-val: contexts from its train split, queries its held-out val split
if [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    check "prepare fmnist" 0 "$METACL" data prepare fmnist --data-dir "$TMP/data"
    "$METACL" eval acl --protocol split-dil --data fmnist-val@0-3 --data-dir "$TMP/data" --tasks 2 --k-shot 1 \
        --runs 1 --final-only --baseline sgd:epochs=1 --select --json >"$TMP/split.json" 2>"$TMP/split.err"
    sel_ok "split-dil selection block" "$TMP/split.json" split-dil train fmnist-val@0-3
    has_line "split-dil: the validation data" "$TMP/split.err" "queries its [0-9]* held-out 'val' images"
    has_line "split-dil: one line with the chosen values" "$TMP/split.err" "^selected: SGD (lr [0-9.e-]*, 1 epochs)"
    if python3 -c 'import json, sys
s = json.load(open(sys.argv[1]))["models"][0]["selection"]; sys.exit(0 if s["final_only"] is True else 3)' "$TMP/split.json"
    then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: split-dil selection: final_only"; fi
    # the table and the figures name each task's classes as given (fmnist@0-1 -> fmnist@2-3), not
    # "fmnist@subset": two tasks of one set differ only by them
    "$METACL" eval acl --protocol two-task --data fmnist@0-1 --data fmnist@2-3 --data-dir "$TMP/data" --runs 2 \
        --episodes 1 --n-way 2 --k-shot 1 --baseline sgd:epochs=1 --figures "$TMP/fig" >"$TMP/tt.md" 2>"$TMP/tt.err"
    has_line "two-task table names the classes" "$TMP/tt.md" "data: fmnist@0-1 fmnist@2-3;"
    if grep -q "@subset" "$TMP/tt.md"; then fail=$((fail + 1)); echo "FAIL: the table says @subset"; else pass=$((pass + 1)); fi
    if [ -s "$TMP/fig/sgd-lr0.1-1ep-two-task-accuracy.png" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: no accuracy-matrix figure"; ls "$TMP/fig"; fi
else
    echo "test-acl-select-cli: SKIP the fmnist-val part: apt-get install dataset-fashion-mnist"
fi

rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
