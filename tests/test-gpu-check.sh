#!/bin/sh
# test-gpu-check.sh — tools/bundle/gpu-check.sh's comparison over rounds (--rounds N), its awk
# programs taken from the script: the pairs of one round read from two p_bench records, and per
# workload the geometric mean of the per-round ratios PyTorch / metacl, its 95 % interval (t on
# the logarithms) and the verdict, on made-up medians worked by hand; a wrong interval is
# caught; --rounds out of 1..30 is refused with exit 2. And tools/scripts/bench-ab.py (the
# comparison of gpu-ab.sh's two builds) on made-up records worked by hand.
set -eu
top=${srcdir:-.}
script=$top/tools/bundle/gpu-check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

# the two awk programs, as the script defines them
sed -n "/^PAIR_AWK='/,/^END /p" "$script" >"$tmp/lib.sh"
sed -n "/^COMPARE_AWK='/,/^}'/p" "$script" >>"$tmp/lib.sh"
. "$tmp/lib.sh"
[ -n "${PAIR_AWK:-}" ] && [ -n "${COMPARE_AWK:-}" ] || { echo "FAIL: the awk programs were not found in $script"; exit 1; }

# one round's pairs from two records: the workloads in metacl's order, one PyTorch lacks left out
m='{"record": {"impl": "metacl"}, "workloads": {"a": {"ms_best": 1.9, "ms_median": 2.0}, "b": {"ms_best": 3, "ms_median": 4.5}, "c": {"ms_median": 1}}}'
t='{"record": {"impl": "torch"}, "workloads": {"b": {"ms_median": 9}, "a": {"ms_best": 3, "ms_median": 6.0}}}'
got=$(printf '%s\n%s\n' "$m" "$t" | awk -v bench=acl -v round=3 "$PAIR_AWK" | tr '\n' ';')
want='acl a 3 2.0 6.0;acl b 3 4.5 9;'
[ "$got" = "$want" ] && ok "one round's pairs: $got" || bad "pairs: got '$got', want '$want'"

# rounds worked by hand (ratio = torch / metacl):
#   x: 2, 2, 2             -> 2.000 [2.000, 2.000], metacl faster
#   y: 0.5, 0.5            -> 0.500 [0.500, 0.500], PyTorch faster
#   z: e^0.1, e^0.3        -> mean log 0.2, sd 0.141421, half 12.706 * 0.141421 / sqrt 2 = 1.2706:
#                             1.221 [exp(-1.0706) = 0.343, exp(1.4706) = 4.352], tie;
#                             PyTorch median (1.10517 + 1.34986) / 2 = 1.228
#   w: one round, 3        -> 3.000, no interval, "one round"
#   v: a zero time          -> left out
e1=$(awk 'BEGIN { printf "%.6f", exp(0.1) }')
e3=$(awk 'BEGIN { printf "%.6f", exp(0.3) }')
cat >"$tmp/pairs.txt" <<EOF
acl x 1 1 2
acl y 1 4 2
oct z 1 1 $e1
acl w 1 2 6
lm v 1 0 5
acl x 2 3 6
acl y 2 2 1
oct z 2 1 $e3
acl x 3 2 4
EOF
awk "$COMPARE_AWK" "$tmp/pairs.txt" >"$tmp/cmp.json"
check() { # $1: the comparison JSON array's contents
    printf '[%s]' "$1" | python3 -c 'import json, sys
rows = {r["workload"]: r for r in json.load(sys.stdin)}
want = {"x": (3, 2.0, [2.0, 2.0], "metacl faster", 2.0, 4.0),
        "y": (2, 0.5, [0.5, 0.5], "PyTorch faster", 3.0, 1.5),
        "z": (2, 1.221, [0.343, 4.352], "tie", 1.0, 1.228),
        "w": (1, 3.0, None, "one round", 2.0, 6.0)}
assert sorted(rows) == sorted(want), sorted(rows)
assert [r for r in rows] == ["x", "y", "z", "w"], list(rows)  # first-seen order
for w, (n, g, ci, verdict, mm, tm) in want.items():
    r = rows[w]
    assert r["rounds"] == n and abs(r["torch_over_metacl"] - g) < 6e-4, (w, r)
    assert (r["ratio_ci95"] is None) == (ci is None), (w, r)
    if ci is not None:
        assert all(abs(a - b) < 6e-4 for a, b in zip(r["ratio_ci95"], ci)), (w, r)
    assert r["verdict"] == verdict, (w, r)
    assert abs(r["metacl_ms"] - mm) < 6e-4 and abs(r["torch_ms"] - tm) < 6e-4, (w, r)
'
}
if check "$(cat "$tmp/cmp.json")"; then ok "geometric means, intervals, verdicts and medians as worked by hand"
else bad "comparison: $(cat "$tmp/cmp.json")"; fi
# the check can fail: the interval of z made narrower (the 95 % t-quantile for 1 degree of
# freedom replaced by 1.96) turns its tie into "metacl faster"
sed 's/12\.706 /1.96 /' "$tmp/lib.sh" >"$tmp/wrong.sh"
(. "$tmp/wrong.sh"; awk "$COMPARE_AWK" "$tmp/pairs.txt") >"$tmp/wrong.json"
if check "$(cat "$tmp/wrong.json")" 2>/dev/null; then bad "a comparison with a wrong t-quantile passed"
else ok "a wrong t-quantile (1.96 for 1 degree of freedom) is caught"; fi

# --rounds outside 1..30: a usage error before anything runs
for r in 0 31 x ''; do
    rc=0
    bash "$script" --out "$tmp/out" --rounds "$r" >"$tmp/err.txt" 2>&1 || rc=$?
    if [ $rc = 2 ] && grep -q -- '--rounds' "$tmp/err.txt"; then ok "--rounds '$r' refused (exit 2)"
    else bad "--rounds '$r': exit $rc, $(cat "$tmp/err.txt")"; fi
done

# bench-ab.py: rounds of two builds (speed-up = A ms / B ms per round):
#   x: A 2, 4; B 1, 2      -> 2, 2: 2.000 [2.000, 2.000], B faster, medians 3 and 1.5
#   y: A 1, 1; B 2, 2      -> 0.5 [0.5, 0.5], A faster
#   z: B only in round 1   -> one round: 1.5, no interval, tie
rec() { # bench, then name:ms pairs
    b=$1; shift; printf '{"bench": "%s", "workloads": [' "$b"; sep=
    for p in "$@"; do printf '%s{"name": "%s", "ms_median": %s}' "$sep" "${p%%:*}" "${p#*:}"; sep=', '; done
    printf ']}\n'
}
{
    printf 'old 1 '; rec acl x:2 y:1 z:3
    printf 'new 1 '; rec acl x:1 y:2 z:2
    printf 'old 2 '; rec acl x:4 y:1 z:3
    printf 'new 2 '; rec acl x:2 y:2
} >"$tmp/ab.txt"
ab=$top/tools/scripts/bench-ab.py
abcheck() { # $1: the JSON, $2: "swap" when A and B are given the other way round
    printf '%s' "$1" | python3 -c 'import json, sys
c = json.load(sys.stdin)
swap = sys.argv[1] == "swap"
rows = {r["name"]: r for r in c["workloads"]}
assert (c["a"], c["b"]) == (("new", "old") if swap else ("old", "new")), c
want = {"x": (2, 2.0, [2.0, 2.0], "B faster", 3.0, 1.5), "y": (2, 0.5, [0.5, 0.5], "A faster", 1.0, 2.0),
        "z": (1, 1.5, None, "tie", 3.0, 2.0)}
assert list(rows) == ["x", "y", "z"], list(rows)
for w, (n, g, ci, v, am, bm) in want.items():
    r = rows[w]
    assert r["rounds"] == n and abs(r["speedup"] - g) < 1e-9 and r["verdict"] == v, (w, r)
    assert (r["ci95"] is None) == (ci is None) and (ci is None or all(abs(a - b) < 1e-9 for a, b in zip(r["ci95"], ci))), (w, r)
    assert abs(r["a_ms"] - am) < 1e-9 and abs(r["b_ms"] - bm) < 1e-9, (w, r)
' "${2:-}"
}
if abcheck "$(python3 "$ab" "$tmp/ab.txt" --json)"; then ok "bench-ab.py: speed-ups, intervals, verdicts and medians as worked by hand"
else bad "bench-ab.py: $(python3 "$ab" "$tmp/ab.txt" --json)"; fi
if abcheck "$(python3 "$ab" "$tmp/ab.txt" --json --a new --b old)" 2>/dev/null; then bad "bench-ab.py with A and B swapped passed the same check"
else ok "A and B swapped (--a new --b old) fails the check: the verdicts turn round"; fi
echo 'old x {}' >>"$tmp/ab.txt"
rc=0; python3 "$ab" "$tmp/ab.txt" >/dev/null 2>"$tmp/err.txt" || rc=$?
[ $rc = 1 ] && grep -q "not 'TAG ROUND JSON'" "$tmp/err.txt" && ok "bench-ab.py: a malformed line is refused (exit 1, named)" ||
    bad "bench-ab.py on a malformed line: exit $rc, $(cat "$tmp/err.txt")"

# the t-quantile tables (tools/scripts/t975.py for the Python scripts, the awk copy in
# gpu-check.sh) against the library's (metacl stats ci: the half-width of 0, 1, .., n-1 is
# t975(n-1) * sqrt(n (n + 1) / 12) / sqrt(n))
METACL=${METACL:-./metacl}
if out=$(PYTHONPATH="$top/tools/scripts" python3 -c 'import subprocess, sys
from t975 import T975, half_width
awk = [float(v) for v in sys.argv[2].split()]
for n in list(range(2, 33)) + [36, 41, 50, 61, 90, 121, 300]:
    x = list(range(n))
    lib = float(subprocess.run([sys.argv[1], "stats", "ci"] + [str(v) for v in x], capture_output=True,
                               text=True, check=True).stdout.split("\t")[1])
    py = half_width(x)
    assert abs(py - lib) <= 1e-5 * lib, (n, py, lib)
    if n - 2 < len(awk):
        assert abs(awk[n - 2] - T975[n - 2]) <= 5e-4, (n, awk[n - 2], T975[n - 2])
print("ok")' "$METACL" "$(sed -n 's/^BEGIN { split("\([0-9. ]*\)", T975.*/\1/p' "$script")" 2>&1) && [ "$out" = ok ]; then
    ok "t975.py and gpu-check.sh's table agree with metacl stats ci (df 1..31, then 35..299)"
else
    bad "t-quantile tables: $out"
fi
exit $fail
