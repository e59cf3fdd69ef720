#!/bin/sh
# test-data-cli.sh — `metacl data prepare|info|show`: exit codes (0 ok, 1 runtime, 2 usage),
# messages, contact sheets, SHA-256 verification. Uses the fixtures in data/fixtures/ (found
# through METACL_SRCDIR) and, when Debian's dataset-fashion-mnist is installed, fmnist.
# Works in a temporary directory under the current one, removed at the end.
METACL=${METACL:-./metacl}
SRC=${METACL_SRCDIR:-.}
FIX=$SRC/data/fixtures
TMP=test-data-cli.tmp.$$
# check / expect_text and the pass/fail counters (METACL_SRCDIR: set by the Makefile)
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
is_png() { # is_png "description" FILE
    sig=$(od -An -tx1 -N8 "$2" 2>/dev/null | tr -d ' \n')
    if [ "$sig" = "89504e470d0a1a0a" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL: $1: $2 is not a PNG ($sig)"; fi
}

echo "test-data-cli: binary $METACL, fixtures $FIX (no randomness beyond --seed 1: no seed)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
IDX="idx:$FIX/tiny-images-idx3-ubyte.gz,$FIX/tiny-labels-idx1-ubyte.gz"
PNGDIR="pngdir:$FIX/tiny-pngdir"

# usage errors
check "data without a subcommand" 2 "$METACL" data
check "data --help" 0 "$METACL" data --help
expect_text "help lists prepare" "prepare NAME"
check "unknown subcommand" 2 "$METACL" data frobnicate
expect_text "names the subcommand" "frobnicate"
check "prepare without a name" 2 "$METACL" data prepare
check "prepare an unknown set" 2 "$METACL" data prepare nosuchset --data-dir "$TMP"
expect_text "lists the sets" "fmnist, hanzi, kanji, hershey"
check "prepare a bad --instances" 2 "$METACL" data prepare hanzi --instances many
check "prepare a missing value" 2 "$METACL" data prepare hanzi --seed
check "info without a name" 2 "$METACL" data info
check "info a bad flag" 2 "$METACL" data info fmnist --bogus
check "show without --out" 2 "$METACL" data show "$IDX"
check "show --classes 0" 2 "$METACL" data show "$IDX" --out "$TMP/x.png" --classes 0

# runtime errors
check "info of a set that is not prepared" 1 "$METACL" data info nosuchset --data-dir "$TMP"
expect_text "says what to run" "run: metacl data prepare nosuchset --data-dir $TMP"
check "info of missing user data" 1 "$METACL" data info "idx:$TMP/none.idx,$TMP/none2.idx"
expect_text "names the file" "$TMP/none.idx"
check "show into a missing directory" 1 "$METACL" data show "$IDX" --out "$TMP/no/such/dir.png"

# user data: the fixtures
check "info of the IDX fixture" 0 "$METACL" data info "$IDX"
expect_text "36 images" "images     36"
expect_text "12 per class" "min 12, max 12"
check "info --json of the PNG fixture" 0 "$METACL" data info "$PNGDIR" --json
expect_text "json image count" '"images":6'
expect_text "json classes" '"classes":2'
check "show the IDX fixture" 0 "$METACL" data show "$IDX" --out "$TMP/idx.png" --samples 5
is_png "IDX contact sheet" "$TMP/idx.png"
expect_text "sheet size: 3 rows x 5 columns of 65 px + 1" "(326x196)"
check "show the PNG fixture at scale 1" 0 "$METACL" data show "$PNGDIR" --out "$TMP/png.png" --scale 1
is_png "PNG contact sheet" "$TMP/png.png"
check "show is deterministic (1)" 0 "$METACL" data show "$IDX" --out "$TMP/a.png" --seed 5 --samples 3
check "show is deterministic (2)" 0 "$METACL" data show "$IDX" --out "$TMP/b.png" --seed 5 --samples 3
if cmp -s "$TMP/a.png" "$TMP/b.png"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: the same seed gives different sheets"; fi

# Fashion-MNIST, when the Debian package is installed
if [ -r /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    check "prepare fmnist" 0 "$METACL" data prepare fmnist --data-dir "$TMP/cache"
    expect_text "reports the 28x28 statistics" "28x28 0.2860/0.3530"
    check "info fmnist" 0 "$METACL" data info fmnist --data-dir "$TMP/cache"
    expect_text "train split" "train    10 classes, 60000 images"
    expect_text "test split" "test     10 classes, 10000 images"
    expect_text "hashes verified" "images.idx   ok"
    check "show fmnist" 0 "$METACL" data show fmnist --data-dir "$TMP/cache" --out "$TMP/fm.png"
    is_png "fmnist contact sheet" "$TMP/fm.png"
    METACL_DATA="$TMP/cache" check "METACL_DATA is the default data dir" 0 "$METACL" data info fmnist --json
    expect_text "json verified" '"verified":true'
    # damage one byte of the images: info reports it and exits 1
    printf 'X' | dd of="$TMP/cache/fmnist/images.idx" bs=1 seek=5000 conv=notrunc 2>/dev/null
    check "info of a damaged set" 1 "$METACL" data info fmnist --data-dir "$TMP/cache"
    expect_text "reports the mismatch" "MISMATCH"
    expect_text "names the file" "images.idx"
else
    echo "test-data-cli: SKIP the fmnist part: apt-get install dataset-fashion-mnist"
fi

rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
