#!/bin/sh
# test-family-budgets.sh — every family honours the memory budget before it allocates
# (doc/reliability.md §4):
#   - `train smn`, `train oct`, `train lm` and `online` with --memory-limit 1M (and
#     METACL_MEMORY_LIMIT=1M) are refused with exit 1, "memory budget", sizes in units that
#     fit, and no run directory left — before any data is read (no data set is prepared here);
#   - `online`, `sample lm` and `data prepare` accept --memory-limit (not a usage error);
#   - crafted checkpoints with valid CRCs whose configs ask for models far beyond their params
#     sections (smn hidden 4095 x 28 layers, lm width 4096 x 64 heads, meta_hidden 4096) are
#     refused as corrupt by `ckpt info` within seconds, and a shipped smn/lm checkpoint is
#     refused under `--memory-limit 1K` and read under 1G;
#   - `online --report` of a run whose config.txt asks for a stream of 1000 x 100000
#     examples is refused (the 2^26-example check of `online --config`).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
HELPER=${METACL_BUILDDIR:-.}/tests/test-reliability
TMP=test-family-budgets.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
to() { timeout 20 "$@"; } # an allocation of gigabytes fails (exit 124) instead of stalling
gone() { if [ -e "$1" ]; then fail=$((fail + 1)); echo "FAIL: $2 left $1"; else pass=$((pass + 1)); fi; }

echo "test-family-budgets: binary $METACL"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
CK=$SRCDIR/data/checkpoints
CF=$SRCDIR/data/configs

for fam in smn lm oct; do
    case $fam in smn) conf=$CF/smn-wcst.conf ;; lm) conf=$CF/lm-text.conf ;; oct) conf=$CF/oct-split-fmnist.conf ;; esac
    check "train $fam --memory-limit 1M refused" 1 to "$METACL" train $fam --config "$conf" --out "$TMP/$fam" --memory-limit 1M --quiet
    expect_text "train $fam: says why" "memory budget of 1.00 MiB"
    gone "$TMP/$fam" "train $fam refused by the budget"
    check "train $fam METACL_MEMORY_LIMIT=1M refused" 1 env METACL_MEMORY_LIMIT=1M timeout 20 "$METACL" train $fam --config "$conf" --out "$TMP/$fam" --quiet
    expect_text "train $fam (env): says why" "memory budget"
done
check "online --memory-limit 1M refused" 1 to "$METACL" online --config "$CF/oct-split-fmnist.conf" --out "$TMP/on" --memory-limit 1M --quiet
expect_text "online: says why" "memory budget"
gone "$TMP/on" "online refused by the budget"
check "sample lm accepts --memory-limit" 1 to "$METACL" sample lm --ckpt "$CK/lm-text.ckpt" --memory-limit 1K --prompt a --chars 1
expect_text "sample lm: the budget refuses it" "memory budget"
check "data prepare accepts --memory-limit (then: an unknown set, a usage error)" 2 to "$METACL" data prepare nosuchset --data-dir "$TMP/d" --memory-limit 1G
case "$LAST_OUT" in *memory-limit*) fail=$((fail + 1)); echo "FAIL: data prepare: --memory-limit not known"; echo "$LAST_OUT" | sed 's/^/    /' ;; *) pass=$((pass + 1)) ;; esac

# shipped checkpoints under a tiny and an ample budget
for f in smn-wcst lm-text; do
    check "ckpt info $f --memory-limit 1K refused" 1 to "$METACL" ckpt info "$CK/$f.ckpt" --memory-limit 1K
    expect_text "ckpt info $f: says why" "memory budget"
    check "ckpt info $f --memory-limit 1G" 0 to "$METACL" ckpt info "$CK/$f.ckpt" --memory-limit 1G
done
# crafted configs with valid CRCs: refused as corrupt, before anything is allocated
craft() { # craft OUT IN KEY=VALUE...
    _o=$1 _i=$2; shift 2
    cp "$_i" "$_o.0"
    for kv in "$@"; do "$HELPER" set-config "$_o.0" "$_o.1" "${kv%%=*}" "${kv#*=}" && mv "$_o.1" "$_o.0" || return 1; done
    mv "$_o.0" "$_o"
}
if craft "$TMP/smn-big.ckpt" "$CK/smn-wcst.ckpt" model.hidden=4095 model.layers=28; then
    check "smn hidden 4095 x 28 layers: refused" 1 to "$METACL" ckpt info "$TMP/smn-big.ckpt"
    expect_text "smn: corrupt" "corrupt checkpoint"
    expect_text "smn: sizes in GiB" "GiB"
else fail=$((fail + 1)); echo "FAIL: cannot craft the smn checkpoint"; fi
if craft "$TMP/smn-meta.ckpt" "$CK/smn-wcst.ckpt" model.meta_hidden=4096; then
    check "smn meta_hidden 4096: refused" 1 to "$METACL" ckpt info "$TMP/smn-meta.ckpt"
    expect_text "smn meta_hidden: corrupt" "corrupt checkpoint"
else fail=$((fail + 1)); echo "FAIL: cannot craft the smn checkpoint (meta_hidden)"; fi
if craft "$TMP/lm-big.ckpt" "$CK/lm-text.ckpt" model.layers=7 model.width=4096 model.heads=64 model.head_dim=32; then
    check "lm width 4096 x 64 heads: refused" 1 to "$METACL" ckpt info "$TMP/lm-big.ckpt"
    expect_text "lm: corrupt" "corrupt checkpoint"
else fail=$((fail + 1)); echo "FAIL: cannot craft the lm checkpoint"; fi
# the crafting helper really changes the config: the same key set to its own value loads
if craft "$TMP/lm-same.ckpt" "$CK/lm-text.ckpt" model.width=128; then
    check "lm: a crafted but consistent config loads" 0 to "$METACL" ckpt info "$TMP/lm-same.ckpt"
fi

# online --report trusts no config.txt
mkdir -p "$TMP/rep"
sed -e 's/^stream.tasks.*//' -e 's/^stream.per_task.*//' "$CF/oct-split-fmnist.conf" >"$TMP/rep/config.txt"
printf 'stream.tasks = 1000\nstream.per_task = 100000\n' >>"$TMP/rep/config.txt"
check "online --report of a 10^8-example stream refused" 1 to "$METACL" online --report "$TMP/rep"
expect_text "online --report: says why" "2^26"

echo "test-family-budgets: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
