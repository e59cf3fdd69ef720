#!/bin/sh
# test-online-groups.sh — `metacl online --report NAME=DIR[,DIR...]`, the grouped report, on
# tiny runs (tiny_oct_conf: hershey, 5-way, 12 tasks of 20 examples): two groups of three
# seeded runs (model.seed = stream.seed = 1, 2, 3; the pi-transformer and the Conv-4 baseline
# with online SGD at lr 0.1). Checked against values computed here, independently of the
# program, from each run's summary.json (written by the run's own one-run report): each
# group's mean and 95 % half-width (Student's t, the quantiles typed in below) of every column,
# the paired differences and verdicts; that a deliberately wrong expected value is caught; a
# controlled pairing (a group against the very same runs: differences 0, "tie"; the two groups
# swapped: the differences negated, better <-> worse); one run a group (no interval,
# "inconclusive"); the figures; bad input (exit 2: no name, an empty group or entry, a name
# twice, groups mixed with plain runs; exit 1: a missing run, stream seeds that differ, a
# stream seed twice in a group, equal seeds on different streams); a plain --report unchanged.
METACL=${METACL:-./metacl}
TMP=test-online-groups.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
echo "test-online-groups: binary $METACL (seeds: model.seed = stream.seed = 1, 2, 3; train.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
tiny_oct_conf "$CONF" "$TMP/data" stream.tasks=12
CNN="--set model.arch=cnn --set online.streams=1 --set online.optimizer=sgd --set train.lr=0.1"
for s in 1 2 3; do
    check "pi run, seed $s" 0 "$METACL" online --config "$CONF" --set model.seed=$s --set stream.seed=$s \
        --out "$TMP/pi-$s" --quiet
    # shellcheck disable=SC2086 # $CNN holds settings
    check "sgd run, seed $s" 0 "$METACL" online --config "$CONF" $CNN --set model.seed=$s --set stream.seed=$s \
        --out "$TMP/sgd-$s" --quiet
done
PI="pi=$TMP/pi-1,$TMP/pi-2,$TMP/pi-3"
SGD="sgd=$TMP/sgd-1,$TMP/sgd-2,$TMP/sgd-3"

# ---- the grouped report
check "two groups" 0 "$METACL" online --report "$PI" --report "$SGD" --figures "$TMP/fig"
expect_text "n in the header" "group                  n "
expect_text "a row per group, n = 3" "sgd                    3 "
expect_text "the seeds listed" "runs (model.seed/stream.seed): pi 1/1 2/2 3/3; sgd 1/1 2/2 3/3"
expect_text "the paired section" "paired on the same streams"
for f in per-task within-task; do
    [ "$(wc -c <"$TMP/fig/$f.png" 2>/dev/null || echo 0)" -gt 1000 ] && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: figure $f.png missing or empty"; }
done
"$METACL" online --report "$PI" --report "$SGD" --json >"$TMP/g.json" 2>"$TMP/g.err" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: --json"; cat "$TMP/g.err"; }

# num KEY FILE [N]: the N-th (default 1st) number under "KEY": in FILE (summary.json's
# '"key": v' or the compact JSON's '"key":v')
num() {
    grep -o "\"$1\": *[-0-9.e+]*" "$2" | sed -n "${3:-1}p" | sed 's/.*: *//'
}
# the grouped JSON's object NAME ("mean" or "half") of group G (1-based), one line
obj() {
    grep -o "\"$1\":{[^}]*}" "$TMP/g.json" | sed -n "${2}p" >"$TMP/obj"
}
# stats V1 V2 V3: "mean half" with Student's t_{0.975, 2} = 4.302653 (three runs)
stats() {
    awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { m = (a + b + c) / 3
        s = sqrt(((a - m) ^ 2 + (b - m) ^ 2 + (c - m) ^ 2) / 2); printf "%.9g %.9g\n", m, 4.302653 * s / sqrt(3) }'
}
# near WHAT GOT WANT: |got - want| <= 2e-5 (summary.json keeps 6 significant digits and the
# grouped JSON 6 decimals; values are below 10) counts a pass, else a failure; the
# "deliberate" variant expects the mismatch
within() { awk -v g="$1" -v w="$2" 'BEGIN { d = g - w; if (d < 0) d = -d; exit !(d <= 2e-5) }'; }
near() {
    if [ -n "$2" ] && within "$2" "$3"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: report $2, computed here $3"; fi
}
gi=0
for grp in pi sgd; do
    gi=$((gi + 1))
    for key in cum_nll online_acc early_task_acc late_task_acc early_acc_at_3to7 late_acc_at_3to7; do
        set -- "$(num "$key" "$TMP/$grp-1/summary.json")" "$(num "$key" "$TMP/$grp-2/summary.json")" \
            "$(num "$key" "$TMP/$grp-3/summary.json")"
        want=$(stats "$1" "$2" "$3")
        obj mean $gi
        near "$grp $key mean" "$(num "$key" "$TMP/obj")" "${want% *}"
        obj half $gi
        near "$grp $key half" "$(num "$key" "$TMP/obj")" "${want#* }"
    done
done
# a deliberately wrong expected value (the mean of pi's cum_nll + 0.001) is caught
obj mean 1
got=$(num cum_nll "$TMP/obj")
want=$(stats "$(num cum_nll "$TMP/pi-1/summary.json")" "$(num cum_nll "$TMP/pi-2/summary.json")" \
    "$(num cum_nll "$TMP/pi-3/summary.json")")
if within "$got" "$(awk -v m="${want% *}" 'BEGIN { printf "%.9g", m + 0.001 }')"; then
    fail=$((fail + 1)); echo "FAIL: a mean off by 0.001 was not caught"; else pass=$((pass + 1)); fi
# the paired test, computed here: d_r = pi_r - sgd_r on the same stream seed r; the verdict
# is pi's (cum_nll: lower is better; accuracy: higher)
for key in cum_nll online_acc; do
    # shellcheck disable=SC2046 # three differences, one word each
    set -- $(for s in 1 2 3; do awk -v a="$(num $key "$TMP/pi-$s/summary.json")" \
        -v b="$(num $key "$TMP/sgd-$s/summary.json")" 'BEGIN { printf "%.9g ", a - b }'; done)
    want=$(stats "$1" "$2" "$3")
    m=${want% *} h=${want#* }
    verdict=$(awk -v m="$m" -v h="$h" -v low="$([ $key = cum_nll ] && echo 1 || echo 0)" 'BEGIN {
        if (m - h > 0) print (low ? "worse" : "better"); else if (m + h < 0) print (low ? "better" : "worse"); else print "tie" }')
    grep -o "\"$key\":{\"diff\":[^}]*}" "$TMP/g.json" >"$TMP/obj"
    near "paired $key diff" "$(num diff "$TMP/obj")" "$m"
    near "paired $key half" "$(num half "$TMP/obj")" "$h"
    grep -q "\"verdict\":\"$verdict\"" "$TMP/obj" && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: paired $key: verdict computed here '$verdict', report: $(cat "$TMP/obj")"; }
    if [ $key = cum_nll ]; then v_nll=$verdict; else v_acc=$verdict; fi
done
# a controlled pairing: pi against the very same runs under another name differs by exactly 0
check "a group against the same runs" 0 "$METACL" online --report "$PI" \
    --report "again=$TMP/pi-1,$TMP/pi-2,$TMP/pi-3"
expect_text "difference 0 +- 0, tie" "again                  3 +0.000 +- 0.000    tie           +0.0 +- 0.0        tie"
# the groups swapped: the differences negated, the verdicts mirrored
"$METACL" online --report "$SGD" --report "$PI" --json >"$TMP/s.json" 2>&1
for key in cum_nll online_acc; do
    a=$(grep -o "\"$key\":{\"diff\":[^}]*}" "$TMP/g.json" | grep -o '"diff":[-0-9.e+]*' | cut -d: -f2)
    b=$(grep -o "\"$key\":{\"diff\":[^}]*}" "$TMP/s.json" | grep -o '"diff":[-0-9.e+]*' | cut -d: -f2)
    within "$a" "$(awk -v b="$b" 'BEGIN { printf "%.9g", -b }')" && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: swapped groups: $key difference $a vs $b"; }
    if [ $key = cum_nll ]; then v=$v_nll; else v=$v_acc; fi
    case $v in better) w=worse ;; worse) w=better ;; *) w=$v ;; esac
    grep -o "\"$key\":{\"diff\":[^}]*}" "$TMP/s.json" | grep -q "\"verdict\":\"$w\"" && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL: swapped groups: $key verdict not '$w'"; }
done
check "one run a group" 0 "$METACL" online --report "a=$TMP/pi-1" --report "b=$TMP/sgd-1"
expect_text "no interval with one run" "b                      1 "
expect_text "one pair: inconclusive" "inconclusive"

# ---- bad input
check "no group name" 2 "$METACL" online --report "=$TMP/pi-1"
expect_text "says a name" "with a name"
check "an empty group" 2 "$METACL" online --report "a="
expect_text "says empty" "holds no run"
check "an empty entry" 2 "$METACL" online --report "a=$TMP/pi-1,,$TMP/pi-2"
expect_text "says empty entry" "an empty run directory"
check "a name twice" 2 "$METACL" online --report "a=$TMP/pi-1" --report "a=$TMP/sgd-1"
expect_text "names the name" "'a' is given twice"
check "groups mixed with runs" 2 "$METACL" online --report "$PI" --report "$TMP/sgd-1"
expect_text "says they do not mix" "do not mix"
check "a missing run" 1 "$METACL" online --report "$PI" --report "b=$TMP/sgd-1,$TMP/nosuch"
expect_text "names the run" "nosuch"
check "stream seeds that differ" 1 "$METACL" online --report "a=$TMP/pi-1,$TMP/pi-2" --report "b=$TMP/sgd-1,$TMP/sgd-3"
expect_text "lists the seeds" "(a: 1 2; b: 1 3)"
check "a stream seed twice in a group" 1 "$METACL" online --report "a=$TMP/pi-1,$TMP/pi-1"
expect_text "says the same stream" "read the same stream"
check "a 4-task run" 0 "$METACL" online --config "$CONF" --set stream.tasks=4 --out "$TMP/short" --quiet
check "equal seeds, different streams" 1 "$METACL" online --report "a=$TMP/pi-1" --report "b=$TMP/short"
expect_text "says not the same stream" "not the same stream"

# ---- a plain --report is the one-run table, as before
check "plain report of two runs" 0 "$METACL" online --report "$TMP/pi-1" --report "$TMP/sgd-1"
expect_text "the per-run header" "run                           examples  cum_nll"
expect_text "a row per run" "pi-1 "
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
