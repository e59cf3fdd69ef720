#!/bin/sh
# test-messages.sh — messages say what is wrong, once (doc/reliability.md §7):
#   - a data set that is not prepared is named once ("data 'hershey': data set 'hershey' is
#     not prepared" before);
#   - `sample lm` prints no prompt before it refuses a checkpoint of another family;
#   - an --out longer than the run-directory limit names the limit;
#   - `data prepare txt:FILE` failing names txt:FILE (not "txt:: ...");
#   - safetensors data_offsets [144, 0] are called reversed, not "outside the buffer";
#   - the logs and the summary line print no "best nan" / "left chance at step 0" for a run
#     without validation (the online family);
#   - a model of NaN parameters (a safetensors file of NaNs) is imported, read and evaluated
#     with a warning that names the non-finite values (it evaluated to chance without a word);
#   - train (acl, oct) names a set that is not prepared once, too;
#   - a data directory that cannot be searched (EACCES) "cannot be read", it is not "not
#     prepared" (eval, train, data info text);
#   - with HOME, XDG_DATA_HOME and METACL_DATA unset: "no data directory", exit 1, nothing
#     made in the working directory (data went silently to ./data/cache before).
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-messages.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
lacks() { case "$LAST_OUT" in *"$2"*) fail=$((fail + 1)); echo "FAIL: $1: output has '$2'"; echo "$LAST_OUT" | sed 's/^/    /' ;; *) pass=$((pass + 1)) ;; esac; }

echo "test-messages: binary $METACL"
rm -rf "$TMP" && mkdir -p "$TMP/empty" || { echo "cannot create $TMP"; exit 1; }
check "eval with a data set not prepared" 1 "$METACL" eval acl --ckpt "$SRCDIR/data/checkpoints/acl-2task.ckpt" --data hershey --data-dir "$TMP/empty" --protocol seq
expect_text "says not prepared" "is not prepared"
lacks "names the set once" "data 'hershey': data set 'hershey'"
check "sample lm of an smn checkpoint" 1 "$METACL" sample lm --ckpt "$SRCDIR/data/checkpoints/smn-wcst.ckpt" --prompt PROMPTTEXT
expect_text "says why" "not lm"
lacks "no prompt printed" "PROMPTTEXT"
long=$TMP/$(printf '%01100d' 0)
check "an --out beyond the limit" 1 "$METACL" train acl --config "$SRCDIR/data/configs/acl-quick.conf" --out "$long"
expect_text "names the limit" "at most 991"
check "txt: of a missing file" 1 "$METACL" data prepare "txt:$TMP/nofile.txt" --data-dir "$TMP/d"
expect_text "names txt:FILE" "prepare txt:$TMP/nofile.txt:"
lacks "no doubled colon" "txt::"
# a safetensors file whose one tensor has reversed offsets
printf '{"t":{"dtype":"F32","shape":[1],"data_offsets":[144,0]}}' >"$TMP/h.json"
hl=$(wc -c <"$TMP/h.json")
python3 -c 'import struct,sys; h=open(sys.argv[1],"rb").read(); sys.stdout.buffer.write(struct.pack("<Q",len(h))+h+bytes(144))' "$TMP/h.json" >"$TMP/rev.safetensors"
check "reversed data_offsets" 1 "$METACL" ckpt import "$TMP/rev.safetensors" "$TMP/out.ckpt" --template "$SRCDIR/data/checkpoints/acl-2task.ckpt"
expect_text "says reversed" "reversed"
lacks "not 'outside'" "outside the"
# an online run: no validation, so no "best" at all
prepare_hershey "$TMP/data"
tiny_oct_conf "$TMP/o.conf" "$TMP/data" model.blocks=1 stream.tasks=2 stream.per_task=10 online.streams=1 train.ckpt_every=500
check "online run" 0 "$METACL" train oct --config "$TMP/o.conf" --out "$TMP/run"
lacks "summary: no best nan" "best validation nan"
lacks "summary: no left chance at step 0" "left chance at step 0"
if grep -q 'nan' "$TMP/run/log.txt"; then fail=$((fail + 1)); echo "FAIL: log.txt prints nan:"; grep nan "$TMP/run/log.txt" | sed 's/^/    /'; else pass=$((pass + 1)); fi

# NaN parameters: a warning at import and at every load
check "export to safetensors" 0 "$METACL" ckpt export "$SRCDIR/data/checkpoints/acl-2task.ckpt" "$TMP/m.safetensors" --format safetensors
python3 -c 'import struct,sys
b=bytearray(open(sys.argv[1],"rb").read()); n=struct.unpack_from("<Q",b,0)[0]; s=8+n
b[s:]=struct.pack("<f",float("nan"))*((len(b)-s)//4)
open(sys.argv[2],"wb").write(b)' "$TMP/m.safetensors" "$TMP/nan.safetensors"
check "import of NaN parameters" 0 "$METACL" ckpt import "$TMP/nan.safetensors" "$TMP/nan.ckpt"
expect_text "import warns" "parameter values are not finite"
check "ckpt info of NaN parameters" 0 "$METACL" ckpt info "$TMP/nan.ckpt"
expect_text "info warns" "parameter values are not finite"
check "eval of NaN parameters" 0 "$METACL" eval acl --ckpt "$TMP/nan.ckpt" --data hershey --data-dir "$TMP/data" --protocol seq --n-way 5 --k-shot 1 --tasks 1 --runs 1 --episodes 1
expect_text "eval warns" "parameter values are not finite"
check "ckpt info of a sound model" 0 "$METACL" ckpt info "$SRCDIR/data/checkpoints/acl-2task.ckpt"
lacks "no warning for a sound model" "not finite"

# a data set that is not prepared is named once by train too (each family prefixed the
# loader's message with "data set 'hershey': " before)
tiny_conf "$TMP/t.conf" "$TMP/empty"
check "train acl, a set not prepared" 1 "$METACL" train acl --config "$TMP/t.conf" --out "$TMP/r-acl"
expect_text "train acl: says not prepared" "data set 'hershey' is not prepared"
lacks "train acl: names the set once" "data set 'hershey': data set 'hershey'"
check "train oct, a set not prepared" 1 "$METACL" train oct --config "$TMP/o.conf" --set data.dir="$TMP/empty" --out "$TMP/r-oct"
expect_text "train oct: says not prepared" "data set 'hershey' is not prepared"
lacks "train oct: names the set once" "data set 'hershey': data set 'hershey'"

# a data directory this user may not search (EACCES) is not "not prepared": preparing again
# would not help. As root, the test drops the capabilities that bypass file permissions.
NOCAPS=
if [ "$(id -u)" = 0 ]; then
    NOCAPS="setpriv --inh-caps=-dac_override,-dac_read_search --bounding-set=-dac_override,-dac_read_search"
    $NOCAPS true 2>/dev/null || NOCAPS=none
fi
if [ "$NOCAPS" = none ]; then
    echo "running as root without setpriv: the unreadable data directory checks are left out"
else
    mkdir -p "$TMP/locked/dd" && chmod 000 "$TMP/locked"
    check "eval, an unreadable data directory" 1 $NOCAPS "$METACL" eval acl --ckpt "$SRCDIR/data/checkpoints/acl-2task.ckpt" --data hershey --data-dir "$TMP/locked/dd" --protocol seq
    expect_text "eval: cannot be read" "data set 'hershey' cannot be read"
    expect_text "eval: names the errno" "Permission denied"
    lacks "eval: not 'not prepared'" "not prepared"
    check "train, an unreadable data directory" 1 $NOCAPS "$METACL" train acl --config "$TMP/t.conf" --set data.dir="$TMP/locked/dd" --out "$TMP/r-locked"
    expect_text "train: cannot be read" "cannot be read"
    lacks "train: not 'not prepared'" "not prepared"
    check "data info text, an unreadable data directory" 1 $NOCAPS "$METACL" data info text --data-dir "$TMP/locked/dd"
    expect_text "data info text: cannot read" "cannot read the text corpus"
    lacks "data info text: not 'no text corpus'" "no text corpus"
    # the check can fail: the same directory readable again is "not prepared"
    chmod 700 "$TMP/locked"
    check "eval, a readable empty data directory" 1 $NOCAPS "$METACL" eval acl --ckpt "$SRCDIR/data/checkpoints/acl-2task.ckpt" --data hershey --data-dir "$TMP/locked/dd" --protocol seq
    lacks "readable: not 'cannot be read'" "cannot be read"
fi

# no HOME, no XDG_DATA_HOME, no METACL_DATA, no ./data/cache: a clear error, and nothing
# written to a data/cache of the working directory (it was the silent default)
ABS=$(cd "$(dirname "$METACL")" && pwd)/$(basename "$METACL")
mkdir -p "$TMP/nohome"
check "data prepare without a home" 1 sh -c 'cd "$1" && shift && exec env -u HOME -u XDG_DATA_HOME -u METACL_DATA "$@"' sh \
    "$TMP/nohome" "$ABS" data prepare hershey
expect_text "prepare: says why" "no data directory"
expect_text "prepare: says what to do" "METACL_DATA or pass --data-dir"
check "eval without a home" 1 sh -c 'cd "$1" && shift && exec env -u HOME -u XDG_DATA_HOME -u METACL_DATA "$@"' sh \
    "$TMP/nohome" "$ABS" eval acl --ckpt "$SRCDIR/data/checkpoints/acl-2task.ckpt" --data hershey --protocol seq
expect_text "eval: says why" "no data directory"
if [ -e "$TMP/nohome/data" ]; then fail=$((fail + 1)); echo "FAIL: a data directory was made in the working directory"; else pass=$((pass + 1)); fi
# with METACL_DATA the same command works (the check can fail)
check "data prepare with METACL_DATA" 0 sh -c 'cd "$1" && shift && exec env -u HOME -u XDG_DATA_HOME METACL_DATA="$PWD/dd" "$@"' sh \
    "$TMP/nohome" "$ABS" data prepare hershey

echo "test-messages: $pass passed, $fail failed"
chmod -R u+rwx "$TMP" 2>/dev/null
rm -rf "$TMP"
[ $fail -eq 0 ]
