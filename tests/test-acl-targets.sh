#!/bin/sh
# test-acl-targets.sh — tools/scripts/acl-targets.sh on hand-made sections (N.title + N.json as the main
# job writes them): a threshold whose interval clears it is met, one that straddles it is
# inconclusive, one run is never met; a paired comparison separates two models whose runs move
# together (met), says tie when the differences straddle 0, and a margin it cannot reach is not
# met. Then one run's value is changed and the verdict must change with it (the test can fail).
METACL=${METACL:-./metacl}
case $METACL in /*) ;; *) METACL=$(pwd)/$METACL ;; esac
SRC=${METACL_SRCDIR:-$(dirname "$0")/..}
. "$SRC/tests/cli-lib.sh"
TMP=$(pwd)/test-acl-targets.tmp.$$
rm -rf "$TMP" && mkdir -p "$TMP/s" || exit 1
# model NAME ALONE0 FINAL0 ACC: one model object (each a list of per-run fractions "a,b,c")
model() { printf '{"name":"%s","kind":"x","alone0_runs":[%s],"final0_runs":[%s],"acc_runs":[%s],"acc":%s}' \
    "$1" "$2" "$3" "$4" "$(echo "$4" | awk -F, '{ s = 0; for (i = 1; i <= NF; i++) s += $i; print s / NF }')"; }
# sect N TITLE MODEL...: writes N.title and N.json
sect() { n=$1; t=$2; shift 2; printf '%s\n' "$t" >"$TMP/s/$n.title"
    { printf '{"protocol":"p","models":['; first=1; for m; do [ $first = 1 ] || printf ','; printf '%s' "$m"; first=0; done; printf ']}\n'; } >"$TMP/s/$n.json"; }
R5="0.9,0.9,0.9,0.9,0.9"
sect 1 "## 1. In-context learning" \
    "$(model ACL 0.80,0.82,0.84,0.86,0.88 0.78,0.80,0.82,0.84,0.86 $R5)" \
    "$(model ACL-gen 0.80,0.82,0.84,0.86,0.88 0.60,0.80,0.70,0.84,0.75 $R5)" \
    "$(model ACL-gen-acl2 0.80 0.40 0.9)"
SGD="SGD (lr 0.1, 25 epochs)"
sect 2 "## 2. Unseen domain: Fashion-MNIST classes 0-4 (A) then 5-9 (B)" \
    "$(model "$SGD" 0.70,0.75,0.80,0.72,0.78 0.1,0.1,0.1,0.1,0.1 $R5)" \
    "$(model ACL 0.70,0.75,0.80,0.72,0.78 0.50,0.52,0.48,0.51,0.49 $R5)" \
    "$(model no-ACL 0.70,0.75,0.80,0.72,0.78 0.30,0.31,0.29,0.30,0.30 $R5)" \
    "$(model ACL-gen 0.72,0.77,0.82,0.74,0.80 0.35,0.36,0.34,0.35,0.35 $R5)" \
    "$(model no-ACL-gen 0.70,0.75,0.80,0.72,0.78 0.30,0.31,0.29,0.30,0.30 $R5)" \
    "$(model ACL-gen-acl2 0.72,0.73,0.82,0.71,0.78 0.30,0.31,0.29,0.30,0.30 $R5)"
sect 3 "## 2b. Unseen stroke domain" \
    "$(model "$SGD" 0.9,0.9,0.9,0.9,0.9 0 $R5)" "$(model ACL-gen 0.8,0.8,0.8,0.8,0.8 0 $R5)" "$(model ACL-gen-acl2 0.9,0.9,0.9,0.9,0.9 0 $R5)"
sect 4 "## 3a. Split-FashionMNIST DIL 15" \
    "$(model ACL-5task-gen 0 0 0.91,0.92,0.93,0.92,0.92)" "$(model "Adam (lr 0.003)" 0 0 0.80,0.81,0.82,0.81,0.81)" \
    "$(model "$SGD" 0 0 0.85,0.86,0.87,0.86,0.86)"
sect 5 "## 3b. Split-FashionMNIST, class-incremental, 2 tasks" \
    "$(model ACL-2task-gen 0 0 0.85,0.86,0.84,0.85,0.85)" "$(model ACL-CIL10-gen 0 0 0.70,0.90,0.75,0.88,0.80)" \
    "$(model ACL-CIL2-gen 0 0 0.70,0.71,0.69,0.70,0.70)" "$(model ACL-gen-acl2 0 0 0.9)"
METACL=$METACL check "targets" 0 sh "$SRC/tools/scripts/acl-targets.sh" "$TMP/s"
line() { printf '%s\n' "$LAST_OUT" | grep -F -- "$1" | head -1; }
verdict() { # verdict "row text" "expected word"
    got=$(line "$1" | awk -F'|' '{ gsub(/^ +| +$/, "", $4); print $4 }')
    if [ "$got" = "$2" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: '$1': '$got', expected '$2'"; line "$1"; fi
}
verdict "ACL keeps >= 90 %" met                      # ratios 97.5..97.7 %, tight
verdict "ACL-gen keeps >= 90 %" inconclusive         # ratios 75..98 %: the interval straddles 90
verdict "ACL-gen-acl2 keeps >= 90 %" inconclusive    # one run: never met
verdict "ACL-gen A alone >= same-shots SGD, Fashion" met      # +2 points on every run
verdict "ACL-gen-acl2 A alone >= same-shots SGD, Fashion" tie # differences +2 -2 +2 -1 0
verdict "ACL-gen A alone >= same-shots SGD, kanji" "not met"  # -10 on every run
verdict "ACL beats no-ACL" met                       # +20 points, tight
verdict "ACL-gen beats no-ACL-gen" "not met"         # +5 points: below the 10-point margin
verdict "DIL (15 shots) >= 90 %" met
verdict "above the best same-shots baseline ($SGD)" met
verdict "CIL 2 tasks >= 80 %, ACL-2task-gen" met
verdict "CIL 2 tasks >= 80 %, ACL-CIL10-gen" inconclusive
verdict "CIL 2 tasks >= 80 %, ACL-CIL2-gen" "not met"
verdict "CIL 2 tasks >= 80 %, ACL-gen-acl2" inconclusive
python3 -c "import json,sys; t=json.load(open(sys.argv[1])); assert len(t) == 16 and all(x['verdict'] in ('met','not met','inconclusive','tie') for x in t)" \
    "$TMP/s/targets.json" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: targets.json"; }
# one changed run: ACL's A after all on run 3 falls to 0.50 -> the ratio interval widens: not met any more
sed 's/0.78,0.80,0.82,0.84,0.86/0.78,0.80,0.50,0.84,0.86/' "$TMP/s/1.json" >"$TMP/s/1.json.new" && mv "$TMP/s/1.json.new" "$TMP/s/1.json"
METACL=$METACL check "targets, one run changed" 0 sh "$SRC/tools/scripts/acl-targets.sh" "$TMP/s"
verdict "ACL keeps >= 90 %" inconclusive
[ -n "${KEEP:-}" ] || rm "$TMP/s/5.json" "$TMP/s/5.title"
METACL=$METACL check "a missing section" 1 sh "$SRC/tools/scripts/acl-targets.sh" "$TMP/s"
expect_text "names it" "no section '## 3b.'"
[ -n "${KEEP:-}" ] || rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
