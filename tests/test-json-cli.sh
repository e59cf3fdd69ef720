#!/bin/sh
# test-json-cli.sh — the machine-readable outputs of the CLI:
#   - `ckpt info --json`, `train --json`, `eval --json` and `eval --json-out FILE` are valid JSON
#     (checked with python3's json module) and carry the provenance block (metacl_version,
#     git_commit, backend, device, config, seeds; data sets with their SHA-256);
#   - eval --json-out leaves stdout (the table) exactly as without it; names with quotes and
#     backslashes are escaped;
#   - `bench smn --json` is valid JSON with the window's memory figures, `bench lm --json`
#     with the bytes per second;
#   - metrics.csv has an empty cell where a metric is absent (task.acl = 0: no ACL term);
#   - no progress line when stderr is not a terminal (no \r in stderr of train, eval, data
#     prepare).
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-json-cli.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3 to parse JSON"; exit 77; }

# json_ok "description" FILE PYTHON-EXPR: FILE parses as JSON and the expression (over d) holds
json_ok() {
    if python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 3)' "$2" "$3" 2>"$TMP/py.err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL: $1: $3"; sed 's/^/    /' "$TMP/py.err"; head -c 2000 "$2" | sed 's/^/    /'; echo
    fi
}
# no_cr "description" FILE: no carriage return (no progress line) in FILE
no_cr() {
    if [ "$(tr -dc '\r' <"$2" | wc -c)" -eq 0 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 has a \\r (a progress line on a non-terminal)"; fi
}

rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
if ! "$METACL" data prepare hershey --data-dir "$TMP/data" >"$TMP/prep.out" 2>"$TMP/prep.err"; then
    echo "FAIL: cannot prepare the hershey set (Debian hershey-fonts-data missing?)"
    cat "$TMP/prep.err"; rm -rf "$TMP"; exit 1
fi
no_cr "data prepare" "$TMP/prep.err"

PROV='all(k in d["provenance"] for k in ("metacl_version", "git_commit", "backend", "device", "config", "seeds"))'

# ckpt info --json
"$METACL" ckpt info --json "$SRCDIR/data/checkpoints/acl-2task.ckpt" >"$TMP/ckpt.json" 2>"$TMP/ckpt.err"
json_ok "ckpt info --json" "$TMP/ckpt.json" "$PROV"
json_ok "ckpt info --json: facts" "$TMP/ckpt.json" \
    'd["model"] == "acl" and d["parameters"] > 0 and d["provenance"]["config"]["n_way"] == "5" and d["provenance"]["backend"] == "ref"'

CONF=$TMP/tiny.conf
tiny_conf "$CONF" "$TMP/data" task.acl=0 train.steps=4 train.val_every=2 train.ckpt_every=2
# train --json: one JSON object on stdout, nothing else
"$METACL" train acl --config "$CONF" --out "$TMP/run" --json >"$TMP/train.json" 2>"$TMP/train.err"
json_ok "train --json" "$TMP/train.json" "$PROV"
json_ok "train --json: summary and config" "$TMP/train.json" \
    'd["steps"] == 4 and d["provenance"]["config"]["train.steps"] == "4" and d["provenance"]["config"]["task.acl"] == "0" and "train.seed" in d["provenance"]["seeds"]'
json_ok "train --json: data set hashes" "$TMP/train.json" \
    'd["provenance"]["data"][0]["spec"] == "hershey" and len(d["provenance"]["data"][0]["sha256"]["images.idx"]) == 64'
no_cr "train" "$TMP/train.err"
# metrics.csv: the ACL term is absent: acc_acl is an empty cell in every row, not -1
if [ "$(head -n 1 "$TMP/run/metrics.csv" | cut -d, -f4)" = acc_acl ] &&
   [ "$(awk -F, 'NR > 1 && $4 != ""' "$TMP/run/metrics.csv" | wc -l)" -eq 0 ] &&
   [ "$(awk -F, 'NR > 1 && $3 != ""' "$TMP/run/metrics.csv" | wc -l)" -eq 4 ]; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: metrics.csv: acc_acl should be empty, acc_main present"; sed 's/^/    /' "$TMP/run/metrics.csv"
fi
if grep -q -- '-1\.000000' "$TMP/run/metrics.csv"; then
    fail=$((fail + 1)); echo "FAIL: metrics.csv still has -1 for an absent metric"
else pass=$((pass + 1)); fi
# the reader of metrics.csv takes the empty cells
check "plot reads metrics.csv with empty cells" 0 "$METACL" plot "$TMP/run" --out "$TMP/curve.png"

# eval: --json-out keeps the table on stdout unchanged; --json; escaping of names
EV="--protocol seq --data hershey --data-dir $TMP/data --n-way 3 --k-shot 2 --tasks 2 --runs 1 --episodes 2"
"$METACL" eval acl --ckpt tiny="$TMP/run/last.ckpt" $EV >"$TMP/eval1.md" 2>"$TMP/eval1.err"
"$METACL" eval acl --ckpt tiny="$TMP/run/last.ckpt" $EV --json-out "$TMP/eval.json" >"$TMP/eval2.md" 2>"$TMP/eval2.err"
if cmp -s "$TMP/eval1.md" "$TMP/eval2.md" && grep -q '^| tiny |' "$TMP/eval2.md"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: eval --json-out changed stdout"; diff "$TMP/eval1.md" "$TMP/eval2.md" | sed 's/^/    /'; fi
json_ok "eval --json-out" "$TMP/eval.json" "$PROV"
json_ok "eval --json-out: fractions, seeds, data" "$TMP/eval.json" \
    'd["units"] == "fraction" and 0 <= d["models"][0]["acc"] <= 1 and d["provenance"]["seeds"]["seed"] == 1 and len(d["provenance"]["data"][0]["sha256"]["images.idx"]) == 64'
if [ -e "$TMP/eval.json.tmp" ]; then fail=$((fail + 1)); echo "FAIL: eval --json-out left its temporary file"; else pass=$((pass + 1)); fi
# no object repeats a key (a repeated key hides the first value from JSON readers); the
# accuracy matrix is T x T = 4 numbers; the checker itself must reject a repeated key
dupkeys='import json, sys
def pairs(kv):
    keys = [k for k, _ in kv]
    if len(keys) != len(set(keys)):
        sys.exit("repeated key in %s" % keys)
    return dict(kv)
d = json.load(open(sys.argv[1]), object_pairs_hook=pairs)
assert len(d["models"][0]["matrix_mean"]) == 4 and len(d["models"][0]["matrix_std"]) == 4'
check "eval --json-out: no repeated keys, the 2x2 matrix" 0 python3 -c "$dupkeys" "$TMP/eval.json"
printf '{"models":[{"matrix_mean":[1,1,1,1],"matrix_std":[0,0,0,0],"acc":1,"acc":2}]}' >"$TMP/dup.json"
check "the repeated-key check rejects a repeated key" 1 python3 -c "$dupkeys" "$TMP/dup.json"
no_cr "eval" "$TMP/eval2.err"
# the table's percentages are the JSON's fractions x 100, one decimal
acc_tab=$(grep '^| tiny |' "$TMP/eval2.md" | awk -F'|' '{ print $(NF-2) }' | awk '{ print $1 }')
acc_json=$(python3 -c 'import json, sys; print("%.1f" % (100 * json.load(open(sys.argv[1]))["models"][0]["acc"]))' "$TMP/eval.json")
if [ "$acc_tab" = "$acc_json" ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: ACC in the table ($acc_tab) is not 100 x the JSON's ($acc_json)"; fi
"$METACL" eval acl --ckpt 'we"ird\na	me'="$TMP/run/last.ckpt" $EV --json >"$TMP/weird.json" 2>/dev/null
json_ok "eval --json escapes names" "$TMP/weird.json" 'd["models"][0]["name"] == "we\"ird\\na\tme"'
# bench smn --json: a window's entry carries its note and memory figures beside the timings
"$METACL" bench smn --backend ref --only smn_wcst_window --reps 1 --json >"$TMP/bench.json" 2>"$TMP/bench.err"
json_ok "bench smn --json" "$TMP/bench.json" \
    'd["bench"] == "smn" and [w["name"] for w in d["workloads"]] == ["smn_wcst_window"] and d["workloads"][0]["ms_median"] > 0'
json_ok "bench smn --json: window memory" "$TMP/bench.json" \
    '0 < d["workloads"][0]["log_bytes_sparse"] < d["workloads"][0]["log_bytes_dense"] and "KiB sparse" in d["workloads"][0]["note"]'
no_cr "bench smn" "$TMP/bench.err"
# bench lm --json: an evaluation's entry carries its throughput (bytes per second at the median)
"$METACL" bench lm --backend ref --only lm_eval_static --reps 1 --json >"$TMP/bench-lm.json" 2>"$TMP/bench-lm.err"
json_ok "bench lm --json" "$TMP/bench-lm.json" \
    'd["bench"] == "lm" and [w["name"] for w in d["workloads"]] == ["lm_eval_static"] and d["workloads"][0]["ms_median"] > 0'
json_ok "bench lm --json: bytes per second" "$TMP/bench-lm.json" \
    'abs(d["workloads"][0]["bytes_per_s"] - 128e3 / d["workloads"][0]["ms_median"]) < 1e-3 * d["workloads"][0]["bytes_per_s"] and "bytes/s" in d["workloads"][0]["note"]'
no_cr "bench lm" "$TMP/bench-lm.err"

rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
