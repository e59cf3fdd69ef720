#!/bin/sh
# test-train-domains.sh — user IDX data as a training domain: data.domains = idx:IMAGES,LABELS
# is one item (the list splitter of src/common/keys.c keeps an idx: item's label file), items
# are separated by ',' or ';', spaces around the inner comma are dropped, and the config.txt
# written by the run (items joined with ',') reads back the same on --resume. Data: the tiny
# IDX fixtures of data/fixtures (36 images of 3 classes).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-train-domains.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
trap 'rm -rf "$TMP"' EXIT
IMG=$SRCDIR/data/fixtures/tiny-images-idx3-ubyte.gz
LAB=$SRCDIR/data/fixtures/tiny-labels-idx1-ubyte.gz
tiny_conf "$TMP/tiny.conf" "" "data.domains=idx:$IMG,$LAB" train.steps=4 train.val_every=2 train.ckpt_every=2
# (one domain of 3 classes holds one 3-way task: task.n_tasks = 1 there)
ndom() { grep -c "^data idx:$IMG,$LAB: 36 training images of 3 classes" "$1/log.txt" 2>/dev/null; }
check "one idx: domain from a config file" 0 "$METACL" train acl --config "$TMP/tiny.conf" --out "$TMP/a" --quiet --set task.n_tasks=1
if [ "$(ndom "$TMP/a")" = 1 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: one idx: domain: log.txt:"; sed 's/^/    /' "$TMP/a/log.txt"; fi
check "two idx: domains, comma-separated, spaces" 0 "$METACL" train acl --config "$TMP/tiny.conf" --out "$TMP/b" --quiet \
    --set "data.domains=idx:$IMG,$LAB, idx:$IMG , $LAB"
if [ "$(ndom "$TMP/b")" = 2 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: two idx: domains: log.txt:"; sed 's/^/    /' "$TMP/b/log.txt"; fi
check "two idx: domains, ';'-separated" 0 "$METACL" train acl --config "$TMP/tiny.conf" --out "$TMP/c" --quiet \
    --set "data.domains=idx:$IMG,$LAB;idx:$IMG,$LAB" --set train.steps=2
if [ "$(ndom "$TMP/c")" = 2 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: ';' list: log.txt:"; sed 's/^/    /' "$TMP/c/log.txt"; fi
# config.txt joins the items with ';' (a list with idx: items): the resumed run reads the same two domains
check "resume reads config.txt's idx: domains back" 0 "$METACL" train acl --resume "$TMP/c" --set train.steps=4 --quiet
if [ "$(ndom "$TMP/c")" = 4 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: resume: log.txt:"; sed 's/^/    /' "$TMP/c/log.txt"; fi
check "idx: with one file and a trailing comma is a bad value" 2 "$METACL" train acl --config "$TMP/tiny.conf" \
    --out "$TMP/d" --set "data.domains=idx:$IMG,"
expect_text "names the key" "data.domains"
check "idx: with one file names the problem" 1 "$METACL" train acl --config "$TMP/tiny.conf" \
    --out "$TMP/e" --set "data.domains=idx:$IMG"
expect_text "says what idx: wants" "idx:IMAGES,LABELS"
check "help lists the separators" 0 "$METACL" train acl --help
expect_text "data.domains help" "separated by , or ;"
echo "test-train-domains: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
