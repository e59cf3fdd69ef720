#!/bin/sh
# test-bench-ratio-table.sh — tools/scripts/bench-ratio-table.py: the table of a set of
# bench-acl-vs-torch records (medians of run 1, the ratio of every run, the ceiling, the goal
# column), its --checks lines passing tests/check-doc-numbers.py on a doc holding the table, and
# failing when one number of that doc is changed; an empty directory is refused (exit 1).
# --summary: the geometric mean of 5 runs' ratios and its 95 % interval (t on the logarithms)
# against the same worked in awk, the verdicts met / not met / inconclusive (the ACL step's goal
# is 4×), inconclusive with 4 runs however high; --intervals and its checks, a changed bound caught;
# --status: the ceiling's interval by hand, reachable / unreachable, the fraction of the bound, its
# checks, a changed fraction caught.
set -eu
top=$(cd "${srcdir:-.}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
py=python3

# rec FILE RATIO OURS TORCH CEILING: a record with one workload both sides measured and one only
# ours did (left out of the table)
rec() {
    cat >"$1" <<JSON
{"bench": "acl-vs-torch", "threads": 1, "goal_speedup": 3.0, "workloads": [
 {"name": "acl_step", "ours": {"ms_best": 1, "ms_median": $3}, "pytorch": {"ms_best": 1, "ms_median": $4},
  "ratio_median": $2, "goal_met": false, "bound_ms": 100.0, "ceiling": $5, "reachable": true},
 {"name": "train_step", "ours": {"ms_best": 1, "ms_median": 5.0}, "pytorch": null, "ratio_median": null}]}
JSON
}
mkdir "$tmp/runs"
rec "$tmp/runs/acl-t1-r1.json" 2.5 573.06 1432.65 14.33
rec "$tmp/runs/acl-t1-r2.json" 2.09 590.0 1233.1 12.33
rec "$tmp/runs/acl-t2-r1.json" 3.1 344.0 1066.4 10.66
rec "$tmp/runs/acl-t2-r2.json" 3.2 337.6 1080.3 10.8
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/runs" >"$tmp/table.md"
want='| acl | `acl_step` | 573.1 / 1432.7 | 2.50 / 2.09 | 14.33 | 344.0 / 1066.4 | 3.10 / 3.20 | 10.66 | no |'
if grep -qF "$want" "$tmp/table.md"; then ok "row"; else bad "row: $(cat "$tmp/table.md")"; fi
if grep -q train_step "$tmp/table.md"; then bad "a one-sided workload is in the table"; else ok "one-sided left out"; fi
cp "$tmp/table.md" "$tmp/doc.md"
(cd "$tmp" && $py "$top/tools/scripts/bench-ratio-table.py" runs --checks doc.md) >"$tmp/checks.txt"
[ "$(wc -l <"$tmp/checks.txt")" -eq 4 ] && ok "4 checks" || bad "checks: $(cat "$tmp/checks.txt")"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then ok "checks pass"; else bad "checks: $(cat "$tmp/out")"; fi
sed 's/| 3.10 \/ 3.20 |/| 3.10 \/ 3.30 |/' "$tmp/table.md" >"$tmp/doc.md"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then
    bad "a changed ratio passed"
else ok "a changed ratio is caught"; fi
mkdir "$tmp/empty"
if $py "$top/tools/scripts/bench-ratio-table.py" "$tmp/empty" 2>/dev/null; then bad "empty dir passed"; else
    [ $? -eq 1 ] && ok "empty dir: exit 1" || bad "empty dir: wrong status"; fi
# rec2 FILE R_ACL R_CONV: two workloads, the ACL step (goal 4x) and conv4_28 (goal 3x)
rec2() {
    cat >"$1" <<JSON
{"bench": "acl-vs-torch", "threads": 1, "goal_speedup": 3.0, "workloads": [
 {"name": "acl_step", "ours": {"ms_median": 100}, "pytorch": {"ms_median": 400}, "ratio_median": $2},
 {"name": "conv4_28", "ours": {"ms_median": 100}, "pytorch": {"ms_median": 300}, "ratio_median": $3}]}
JSON
}
mkdir "$tmp/five"
set -- 4.4 2.8 4.5 3.3 4.6 2.9 4.5 3.2 4.5 3.0
for r in 1 2 3 4 5; do
    rec2 "$tmp/five/acl-t1-r$r.json" "$1" "$2"
    rec2 "$tmp/five/acl-t2-r$r.json" "$(echo "$1" | awk '{print $1 / 2.2}')" "$2"
    shift 2
done
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/five" --summary >"$tmp/five/summary.json"
# field WORKLOAD THREADS KEY: a value of the summary (ci95.0 / ci95.1 for the bounds)
field() {
    $py -c "import json,sys; d=json.load(open(sys.argv[1])); w=[x for x in d['workloads'] if x['name']==sys.argv[2] and x['threads']==int(sys.argv[3])][0]; k=sys.argv[4].split('.'); v=w[k[0]]; print(v[int(k[1])] if len(k)>1 else v)" "$tmp/five/summary.json" "$@"
}
# by hand: mean and sd of the logs, t(0.975, 4) = 2.776445, bounds exp(m -+ t sd / sqrt 5)
want=$(echo 4.4 4.5 4.6 4.5 4.5 | awk '{for(i=1;i<=NF;i++){l[i]=log($i);m+=l[i]/NF} for(i=1;i<=NF;i++)v+=(l[i]-m)^2/(NF-1); h=2.776445*sqrt(v)/sqrt(NF); printf "%.9f %.9f %.9f", exp(m), exp(m-h), exp(m+h)}')
got=$(printf "%.9f %.9f %.9f" "$(field acl_step 1 gmean)" "$(field acl_step 1 ci95.0)" "$(field acl_step 1 ci95.1)")
[ "$got" = "$want" ] && ok "interval by hand" || bad "interval: got $got, want $want"
[ "$(field acl_step 1 verdict)" = met ] && ok "met (goal 4)" || bad "acl_step t1: $(field acl_step 1 verdict)"
[ "$(field acl_step 2 verdict)" = "not met" ] && ok "not met" || bad "acl_step t2: $(field acl_step 2 verdict)"
[ "$(field conv4_28 1 verdict)" = inconclusive ] && ok "inconclusive (interval spans 3)" || bad "conv4_28: $(field conv4_28 1 verdict)"
rm "$tmp/five/acl-t1-r5.json" "$tmp/five/acl-t2-r5.json"
mkdir "$tmp/four" && cp "$tmp/five"/acl-*.json "$tmp/four/"
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/four" --summary >"$tmp/four.json"
if grep -q '"met"' "$tmp/four.json"; then bad "a verdict from 4 runs"; else ok "4 runs: inconclusive"; fi
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/five" --intervals >"$tmp/doc.md"
row=$(grep acl_step "$tmp/doc.md")
want='| acl | `acl_step` | 4.50 [4.41, 4.59], 5 | met | 2.05 [2.01, 2.09], 5 | not met | 4× |'
[ "$row" = "$want" ] && ok "intervals row" || bad "intervals row: $row"
(cd "$tmp" && $py "$top/tools/scripts/bench-ratio-table.py" five --intervals --checks doc.md) >"$tmp/checks.txt"
[ "$(wc -l <"$tmp/checks.txt")" -eq 4 ] && ok "4 interval checks" || bad "interval checks: $(cat "$tmp/checks.txt")"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then ok "interval checks pass"; else bad "interval checks: $(cat "$tmp/out")"; fi
lo=$(printf "%.2f" "$(field acl_step 1 ci95.0)")
sed "s/\[$lo,/[9.99,/" "$tmp/doc.md" >"$tmp/doc2.md" && mv "$tmp/doc2.md" "$tmp/doc.md"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then
    bad "a changed bound passed"; else ok "a changed bound is caught"; fi
# --status: rec3 FILE CEIL_ACL CEIL_CONV: rec2's workloads with bounds (ours 100 ms, bound 50 ms:
# half of the bound) and ceilings; the ACL step's below its goal of 4 (unreachable), conv4_28's
# above 3 (reachable)
rec3() {
    cat >"$1" <<JSON
{"bench": "acl-vs-torch", "threads": 1, "goal_speedup": 3.0, "workloads": [
 {"name": "acl_step", "ours": {"ms_median": 100, "bound_ms": 50}, "pytorch": {"ms_median": 400}, "ratio_median": 3.5,
  "bound_ms": 50, "ceiling": $2, "reachable": false},
 {"name": "conv4_28", "ours": {"ms_median": 100, "bound_ms": 40}, "pytorch": {"ms_median": 300}, "ratio_median": 3.1,
  "bound_ms": 40, "ceiling": $3, "reachable": true}]}
JSON
}
mkdir "$tmp/st"
set -- 3.6 5.0 3.7 5.2 3.8 5.1 3.7 4.9 3.6 5.0
for r in 1 2 3 4 5; do rec3 "$tmp/st/acl-t1-r$r.json" "$1" "$2"; shift 2; done
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/st" --summary >"$tmp/st/summary.json"
$py "$top/tools/scripts/bench-ratio-table.py" "$tmp/st" --status >"$tmp/doc.md"
want=$(echo 3.6 3.7 3.8 3.7 3.6 | awk '{for(i=1;i<=NF;i++){l[i]=log($i);m+=l[i]/NF} for(i=1;i<=NF;i++)v+=(l[i]-m)^2/(NF-1); h=2.776445*sqrt(v)/sqrt(NF); printf "%.2f [%.2f, %.2f]", exp(m), exp(m-h), exp(m+h)}')
row=$(grep acl_step "$tmp/doc.md")
case "$row" in
"| acl | \`acl_step\` | 1 | 3.50 [3.50, 3.50] | not met | 4× | $want | unreachable | 50 % |") ok "status row: unreachable" ;;
*) bad "status row: $row (ceiling $want)" ;;
esac
if grep conv4_28 "$tmp/doc.md" | grep -q "| reachable | 40 % |"; then ok "status: reachable"; else bad "status: $(grep conv4_28 "$tmp/doc.md")"; fi
(cd "$tmp" && $py "$top/tools/scripts/bench-ratio-table.py" st --status --checks doc.md) >"$tmp/checks.txt"
[ "$(wc -l <"$tmp/checks.txt")" -eq 2 ] && ok "2 status checks" || bad "status checks: $(cat "$tmp/checks.txt")"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then ok "status checks pass"; else bad "status checks: $(cat "$tmp/out")"; fi
sed 's/| 40 % |/| 41 % |/' "$tmp/doc.md" >"$tmp/doc2.md" && mv "$tmp/doc2.md" "$tmp/doc.md"
if $py "$top/tests/check-doc-numbers.py" "$tmp/checks.txt" --root "$tmp" >"$tmp/out" 2>&1; then
    bad "a changed fraction passed"; else ok "a changed fraction is caught"; fi
exit $fail
