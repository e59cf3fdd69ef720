#!/bin/sh
# test-stats-cli.sh — `metacl stats`, the statistics the main job's targets use (metrics.h):
# a 95 % interval by hand (1..5: 3 ± 2.776445 · sqrt(2.5) / sqrt(5) = 3 ± 1.96324), the three
# words on both sides of a threshold and for one run, a paired comparison that separates two
# lists whose unpaired intervals overlap, a tie, a margin, and usage errors (exit 2).
METACL=${METACL:-./metacl}
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
# is OUT "EXPECTED": the whole line
is() {
    if [ "$LAST_OUT" = "$1" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $2: got '$LAST_OUT', expected '$1'"; fi
}
tab=$(printf '\t')
check "ci" 0 "$METACL" stats ci 1 2 3 4 5
is "3${tab}1.96324${tab}5" "ci of 1..5"
check "target met" 0 "$METACL" stats target --min 1.0 1 2 3 4 5
is "met${tab}3${tab}1.96324${tab}5" "lower end 1.0368 clears 1.0"
check "target inconclusive" 0 "$METACL" stats target --min 1.5 1 2 3 4 5
is "inconclusive${tab}3${tab}1.96324${tab}5" "a normal quantile would say met; t does not"
check "target not met" 0 "$METACL" stats target --min 5 1 2 3 4 5
is "not met${tab}3${tab}1.96324${tab}5" "upper end 4.963 below 5"
check "target --max" 0 "$METACL" stats target --max 5 1 2 3 4 5
is "met${tab}3${tab}1.96324${tab}5" "at most 5"
check "one run" 0 "$METACL" stats target --min 0.5 0.9
is "inconclusive${tab}0.9${tab}nan${tab}1" "one run is never met"
check "nan runs left out" 0 "$METACL" stats ci 1 nan 3
is "2${tab}12.7062${tab}2" "nan skipped"
check "paired first" 0 "$METACL" stats paired 0.80 0.82 0.78 0.85 0.81 -- 0.79 0.808 0.771 0.839 0.80
is "first${tab}0.0104${tab}0.00141571${tab}5" "paired differences 0.0104 ± 0.0014"
check "paired tie" 0 "$METACL" stats paired 0.80 0.82 0.78 0.85 0.81 -- 0.78 0.83 0.765 0.87 0.81
expect_text "tie" "tie"
check "paired margin" 0 "$METACL" stats paired --margin 0.02 0.80 0.82 0.78 0.85 0.81 -- 0.79 0.808 0.771 0.839 0.80
expect_text "below the margin" "second"
check "not a number" 2 "$METACL" stats ci 1 x
expect_text "names the word" "'x' is not a number"
check "paired lengths" 2 "$METACL" stats paired 1 2 -- 1
expect_text "says the counts" "2 values against 1"
check "no statistic" 2 "$METACL" stats
check "unknown statistic" 2 "$METACL" stats median 1 2
check "target without threshold" 2 "$METACL" stats target 1 2
check "no values" 2 "$METACL" stats ci
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
