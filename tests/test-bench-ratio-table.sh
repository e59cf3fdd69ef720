#!/bin/sh
# test-bench-ratio-table.sh — tools/scripts/bench-ratio-table.py: the table of a set of
# bench-acl-vs-torch records (medians of run 1, the ratio of every run, the ceiling, the goal
# column), its --checks lines passing tests/check-doc-numbers.py on a doc holding the table, and
# failing when one number of that doc is changed; an empty directory is refused (exit 1).
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
exit $fail
