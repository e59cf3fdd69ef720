#!/bin/sh
# test-profile.sh — METACL_PROFILE's table: every op row, the between_ops row (pass host) and
# "all" add up (an op is charged its own call only; the time between ops has its row), the
# shares add up to 100 %, and tools/bundle/gpu-check.sh's parser (p_profile) reads the table's
# rows: the 7-column format it once missed (its top list came out empty). A table whose rows
# do not add up, or a parser that drops the rows, fails.
set -eu
top=${srcdir:-.}
METACL=${METACL:-./metacl}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

METACL_PROFILE=1 "$METACL" bench acl --only srwm --reps 1 --threads 1 >/dev/null 2>"$tmp/prof.txt"
# sum of the rows against "all": each row is printed to 0.001 ms, so they may differ by
# half a unit per row; the shares (0.1 %) by 0.05 % per row
check() {
    awk '
    $2 ~ /^(forward|backward|host)$/ && NF == 7 { rows++; sum += $4; s = $6; sub(/%$/, "", s); share += s
                                                  if ($1 == "between_ops") between = 1 }
    $1 == "all" && NF == 2 { all = $2 }
    END { if (!rows || all == "") { print "no table"; exit 1 }
          if (!between) { print "no between_ops row"; exit 1 }
          d = sum - all; if (d < 0) d = -d
          if (d > 0.0005 * rows + 1e-9) { printf "rows sum to %.3f, all %.3f\n", sum, all; exit 1 }
          d = share - 100; if (d < 0) d = -d
          if (d > 0.05 * rows + 1e-9) { printf "shares sum to %.1f\n", share; exit 1 } }' "$1"
}
if msg=$(check "$tmp/prof.txt"); then ok "rows, between_ops and all add up"; else bad "$msg: $(cat "$tmp/prof.txt")"; fi
# the check can fail: a table whose op row is off by 1 ms
awk '$1 == "srwm" && $2 == "forward" { $4 = $4 + 1 } { print }' "$tmp/prof.txt" >"$tmp/wrong.txt"
if check "$tmp/wrong.txt" >/dev/null; then bad "a row off by 1 ms passed"; else ok "a row off by 1 ms is caught"; fi
sed '/^  between_ops/d' "$tmp/prof.txt" >"$tmp/nobetween.txt"
if check "$tmp/nobetween.txt" >/dev/null; then bad "a table without between_ops passed"; else ok "a missing between_ops row is caught"; fi

# gpu-check.sh's parser, taken from the script (its AWK_LIB and p_profile), on this table
sed -n "/^AWK_LIB='/,/^function trim/p" "$top/tools/bundle/gpu-check.sh" >"$tmp/lib.sh"
sed -n '/^p_profile() {/,/^}/p' "$top/tools/bundle/gpu-check.sh" >>"$tmp/lib.sh"
json=$(work=$tmp; . "$tmp/lib.sh"; p_profile "$tmp/prof.txt")
if echo "$json" | python3 -c 'import json, sys
d = json.load(sys.stdin)
top = d["top"]
assert d["total_ms"] > 0 and len(top) == 8, d
assert top[0]["op"] == "srwm", top[0]
assert any(r["op"] == "between_ops" and r["pass"] == "host" for r in top), top'; then
    ok "gpu-check p_profile reads the rows (srwm first, between_ops among the top 8)"
else
    bad "gpu-check p_profile: $json"
fi
exit $fail
