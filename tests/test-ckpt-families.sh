#!/bin/sh
# test-ckpt-families.sh — the checkpoint commands know every family from the family table,
# and a refused --resume of every family frees what it read:
#   - `ckpt info`, `ckpt info --json` and `ckpt export` of an oct checkpoint (what `online` and
#     `train oct` write; "model kind 'oct' (expected 'acl')" before), and of the shipped acl,
#     smn and lm checkpoints: exit 0, the export reads back with the same parameter count;
#   - a refused `--resume` of an acl (step 2^63), smn (a WCST state that does not fit), lm
#     (mem_rows above mem_len) and oct run (a reader state that does not fit): exit exactly 1
#     with the message; under the sanitizer build a leak would end the process with
#     LeakSanitizer's exit code instead (23), so this is the leak test there.
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data) and a
# tiny text corpus made here.
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
HELPER=${METACL_BUILDDIR:-.}/tests/test-reliability
TMP=test-ckpt-families.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
to() { timeout 60 "$@"; }
params() { "$METACL" ckpt info "$1" 2>/dev/null | sed -n 's/^parameters: //p'; }

echo "test-ckpt-families: binary $METACL (seeds: model.seed 1, train.seed 1, stream.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"

# an online (oct) run
O=$TMP/oct.conf
tiny_oct_conf "$O" "$TMP/data"
check "online run" 0 to "$METACL" online --config "$O" --out "$TMP/oct" --quiet
for ck in "$TMP/oct/last.ckpt" "$SRCDIR/data/checkpoints/acl-2task.ckpt" "$SRCDIR/data/checkpoints/smn-wcst.ckpt" \
          "$SRCDIR/data/checkpoints/lm-text.ckpt"; do
    name=$(basename "$(dirname "$ck")")-$(basename "$ck")
    check "ckpt info $name" 0 to "$METACL" ckpt info "$ck"
    expect_text "ckpt info $name: parameters" "parameters: "
    check "ckpt info --json $name" 0 to "$METACL" ckpt info --json "$ck"
    check "ckpt export $name" 0 to "$METACL" ckpt export "$ck" "$TMP/$name.exp"
    p1=$(params "$ck") p2=$(params "$TMP/$name.exp")
    if [ -n "$p1" ] && [ "$p1" = "$p2" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $name: the export holds '$p2', the checkpoint '$p1'"; fi
done
check "ckpt info of the oct checkpoint names the model" 0 "$METACL" ckpt info "$TMP/oct/last.ckpt"
expect_text "oct kind" "model oct"

# refused resumes, one per family: exit exactly 1
# acl
tiny_conf "$TMP/acl.conf" "$TMP/data" train.steps=2 train.ckpt_every=1 train.val_every=0
check "acl run" 0 to "$METACL" train acl --config "$TMP/acl.conf" --out "$TMP/acl" --quiet
"$HELPER" set-counter "$TMP/acl/last.ckpt" step 9223372036854775808
check "acl: refused resume (step 2^63)" 1 to "$METACL" train acl --resume "$TMP/acl" --quiet
expect_text "acl: says why" "out of range"
# smn (WCST)
printf 'task = wcst\nmodel.hidden = 16\nmodel.meta_hidden = 4\ntrain.steps = 2\ntrain.ckpt_every = 1\n' >"$TMP/smn.conf"
check "smn run" 0 to "$METACL" train smn --config "$TMP/smn.conf" --out "$TMP/smn" --quiet
"$HELPER" set-counter "$TMP/smn/last.ckpt" wcst.0 18446744073709551615
check "smn: refused resume (WCST state)" 1 to "$METACL" train smn --resume "$TMP/smn" --quiet
expect_text "smn: says why" "WCST"
# lm
tiny_lm_corpus "$TMP/data"
tiny_lm_conf "$TMP/lm.conf" "$TMP/data/tiny" train.ckpt_every=1
check "lm run" 0 to "$METACL" train lm --config "$TMP/lm.conf" --out "$TMP/lm" --quiet
"$HELPER" set-counter "$TMP/lm/last.ckpt" lm.mem_rows 1000
check "lm: refused resume (mem_rows above mem_len)" 1 to "$METACL" train lm --resume "$TMP/lm" --quiet
expect_text "lm: says why" "memory rows"
# oct
"$HELPER" set-counter "$TMP/oct/last.ckpt" r0.n 1000
check "oct: refused resume (a reader state that does not fit)" 1 to "$METACL" online --resume "$TMP/oct" --quiet
expect_text "oct: says why" "does not fit"

echo "test-ckpt-families: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
