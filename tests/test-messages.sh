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
#     with a warning that names the non-finite values (it evaluated to chance without a word).
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

echo "test-messages: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
