#!/bin/sh
# test-lists.sh — the hand-kept lists that mirror the op table (src/common/ops.def) name every
# op, and nothing that is not an op:
#   1. the cases of `metacl bench ops` (tools/cli/bench_ops.c, cases[]): every op, once;
#   2. the op table of doc/reference-backend.md ("Layout"): every family has its row
#      (`src/ref/<family>.c`) and the row names each op of the family;
#   3. the NULL-input cases of tests/test-errors.c: every op has an EXPECT_NULL/EXPECT_STATUS
#      line with its name, or a `no-null-case NAME: reason` line;
#   4. the header line of each tests/ops/<family>.sh names the family's ops, no more.
# (That the scripts under tests/ops/ cover every family is test-ops-families.sh's check.)
# Self-test: the same checks against ops.def with one made-up op added must fail, once per
# list.
set -u
src=${METACL_SRCDIR:-$(dirname "$0")/..}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test-lists.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

# "name family" for every MCL_OP row
sed -n 's/^MCL_OP( *[A-Z0-9_]*, *\([a-z0-9_]*\), *[0-9]*, *[0-9]*, *[0-9]*, *\([a-z0-9_]*\),.*/\1 \2/p' \
    "$src/src/common/ops.def" >"$tmp/ops"
n_ops=$(wc -l <"$tmp/ops")
[ "$n_ops" -ge 40 ] || { echo "FAIL: read only $n_ops ops from ops.def"; exit 1; }

# the bench's case names, in order (the lines of cases[] that open an entry)
awk '/^static const op_case cases\[\] = \{/ { on = 1; next } on && /^\};/ { exit }
     on && /^    \{"/ { s = $0; sub(/^    \{"/, "", s); sub(/".*/, "", s); print s }' \
    "$src/tools/cli/bench_ops.c" >"$tmp/bench"
# the Layout table's rows of doc/reference-backend.md
grep '^| `[a-z_]*\.c`' "$src/doc/reference-backend.md" >"$tmp/docrows"

# check OPS_FILE: prints one FAIL line per missing or extra entry; exit status = failures
check() {
    ops=$1 fails=0
    # 1. bench cases
    for n in $(cut -d' ' -f1 "$ops"); do
        c=$(grep -cx "$n" "$tmp/bench")
        [ "$c" = 1 ] || { echo "FAIL: bench_ops.c has $c cases for op $n (want 1)"; fails=$((fails + 1)); }
    done
    for n in $(cat "$tmp/bench"); do
        grep -q "^$n " "$ops" || { echo "FAIL: bench_ops.c times '$n', not an op of ops.def"; fails=$((fails + 1)); }
    done
    # 2. doc/reference-backend.md
    for fam in $(cut -d' ' -f2 "$ops" | sort -u); do
        row=$(grep "^| \`$fam\.c\`" "$tmp/docrows")
        if [ -z "$row" ]; then
            echo "FAIL: doc/reference-backend.md has no row for $fam.c"; fails=$((fails + 1)); continue
        fi
        for n in $(awk -v f="$fam" '$2 == f { print $1 }' "$ops"); do
            printf '%s\n' "$row" | grep -qw "$n" ||
                { echo "FAIL: doc/reference-backend.md's row of $fam.c does not name $n"; fails=$((fails + 1)); }
        done
    done
    # 3. tests/test-errors.c
    for n in $(cut -d' ' -f1 "$ops"); do
        grep -Eq "EXPECT_(NULL|STATUS)\(.*\"$n\"\);|no-null-case $n:" "$src/tests/test-errors.c" ||
            { echo "FAIL: tests/test-errors.c has no NULL-input case for $n (nor a no-null-case line)"; fails=$((fails + 1)); }
    done
    # 4. tests/ops/<family>.sh header lines
    for fam in $(cut -d' ' -f2 "$ops" | sort -u); do
        f=$src/tests/ops/$fam.sh
        [ -f "$f" ] || continue # test-ops-families.sh reports a missing script
        have=$(sed -n '2s/.*(\(.*\)).*/\1/p' "$f" | tr ' ,' '\n\n' | grep . | sort | tr '\n' ' ')
        want=$(awk -v f="$fam" '$2 == f { print $1 }' "$ops" | sort | tr '\n' ' ')
        [ "$have" = "$want" ] ||
            { echo "FAIL: tests/ops/$fam.sh names ($have), the family's ops are ($want)"; fails=$((fails + 1)); }
    done
    return $fails
}

check "$tmp/ops"
status=$?
[ $status = 0 ] && echo "ok: bench_ops.c, doc/reference-backend.md, test-errors.c and tests/ops/*.sh name the $n_ops ops of ops.def"

# self-test: a made-up op in an existing family must be missed by all four lists
cp "$tmp/ops" "$tmp/ops-fake"
echo "made_up_op elementwise" >>"$tmp/ops-fake"
check "$tmp/ops-fake" >"$tmp/fake.out"
fake=$?
if [ $fake -ge 4 ] && [ $((fake - status)) -ge 4 ]; then
    echo "ok: an op added to ops.def alone is caught by every list ($((fake - status)) failures)"
else
    echo "FAIL: an op added to ops.def alone gave $fake failures (want 4 more than $status):"
    cat "$tmp/fake.out"
    status=$((status + 1))
fi
[ $status = 0 ] || exit 1
exit 0
