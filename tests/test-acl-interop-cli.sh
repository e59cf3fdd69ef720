#!/bin/sh
# test-acl-interop-cli.sh — `metacl ckpt export --format safetensors` and `metacl ckpt import`
# on the shipped ACL checkpoint (feature_norm batch: its running statistics travel too):
# export -> import -> export gives the same file byte for byte (bit-identical parameters, the
# config kept), with the config from the file's metadata, from --template and from --config;
# a config that does not fit, a renamed tensor, truncated and garbage files, a non-ACL model
# are refused with exit 1 (a failed import leaves an existing output as it was); bad flags exit
# 2. When python3 is there, an independent standard-library reader
# (tools/scripts/acl-safetensors.py) checks the file against the official names and shapes.
METACL=${METACL:-./metacl}
SRC=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-acl-interop-cli.tmp.$$
. "$SRC/tests/cli-lib.sh"
echo "test-acl-interop-cli: binary $METACL (no randomness: the shipped checkpoint's parameters)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
CK=$SRC/data/checkpoints/acl-2task.ckpt
ST=$TMP/acl.safetensors

# export, import (config from the metadata), export again: the same bytes
check "export --format safetensors" 0 "$METACL" ckpt export "$CK" "$ST" --format safetensors
expect_text "export says what it wrote" "safetensors: 48 tensors"
check "import (config from the file's metadata)" 0 "$METACL" ckpt import "$ST" "$TMP/back.ckpt"
expect_text "import says what it wrote" "model acl: 48 tensors"
check "the imported checkpoint is sound" 0 "$METACL" ckpt info "$TMP/back.ckpt"
expect_text "it keeps the config" "feature_norm = batch"
check "export the imported model" 0 "$METACL" ckpt export "$TMP/back.ckpt" "$TMP/back.safetensors" --format safetensors
check "export -> import -> export is byte-identical" 0 cmp "$ST" "$TMP/back.safetensors"
# the comparison can fail: a model with other parameters exports other bytes
"$METACL" ckpt export "$SRC/data/checkpoints/noacl-2task.ckpt" "$TMP/other.safetensors" --format safetensors >/dev/null 2>&1
check "control: another model's export differs" 1 cmp -s "$ST" "$TMP/other.safetensors"
# the official names are in the header
check "official names in the header" 0 grep -q '"layers.3.ff_layers.3.weight":{"dtype":"F32","shape":\[128,256\]' "$ST"
check "input_proj [hidden, F + N + 1]" 0 grep -q '"input_proj.weight":{"dtype":"F32","shape":\[128,134\]' "$ST"
check "SRWM with a leading 1" 0 grep -q '"layers.0.W_y":{"dtype":"F32","shape":\[1,8,16,16\]' "$ST"

# the config from a template checkpoint, and from a training config
check "import --template" 0 "$METACL" ckpt import "$ST" "$TMP/t.ckpt" --template "$CK"
"$METACL" ckpt export "$TMP/t.ckpt" "$TMP/t.safetensors" --format safetensors >/dev/null 2>&1
check "--template round trip is byte-identical" 0 cmp "$ST" "$TMP/t.safetensors"
check "import --config (training config)" 0 "$METACL" ckpt import "$ST" "$TMP/c.ckpt" --config "$SRC/data/configs/acl-2task.conf"
"$METACL" ckpt export "$TMP/c.ckpt" "$TMP/c.safetensors" --format safetensors >/dev/null 2>&1
check "--config round trip is byte-identical" 0 cmp "$ST" "$TMP/c.safetensors"

# refusals: exit 1
tiny_conf "$TMP/tiny.conf" "$TMP/data"
check "a config that does not fit" 1 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --config "$TMP/tiny.conf"
expect_text "names the tensor and both shapes" "tensor 'conv_layers.0.0.weight' has shape [32,1,3,3] in the file, the config needs [4,1,3,3]"
check "a template of another family" 1 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --template "$SRC/data/checkpoints/smn-wcst.ckpt"
check "a missing --config file" 1 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --config "$TMP/nope.conf"
sed 's/"out_layer.bias"/"out_layer.biaz"/' "$ST" >"$TMP/renamed.safetensors"
check "a renamed tensor" 1 "$METACL" ckpt import "$TMP/renamed.safetensors" "$TMP/x.ckpt"
expect_text "names the missing tensor" "no tensor 'out_layer.bias' (our head.b)"
head -c 100000 "$ST" >"$TMP/cut.safetensors"
check "a truncated file" 1 "$METACL" ckpt import "$TMP/cut.safetensors" "$TMP/x.ckpt"
expect_text "says what is wrong" "outside the"
printf 'this is not a safetensors file at all' >"$TMP/garbage.safetensors"
check "a garbage file" 1 "$METACL" ckpt import "$TMP/garbage.safetensors" "$TMP/x.ckpt"
expect_text "absurd header length" "is absurd"
# an overlap: the second tensor's begin moved back by 4 bytes (same header length)
sed 's/"data_offsets":\[1152,1280\]/"data_offsets":[1148,1276]/' "$ST" >"$TMP/overlap.safetensors"
check "overlapping tensors" 1 "$METACL" ckpt import "$TMP/overlap.safetensors" "$TMP/x.ckpt"
expect_text "names the overlap" "overlapping"
check "a missing input" 1 "$METACL" ckpt import "$TMP/nope.safetensors" "$TMP/x.ckpt"
check "export of a non-ACL model" 1 "$METACL" ckpt export "$SRC/data/checkpoints/smn-wcst.ckpt" "$TMP/x.safetensors" --format safetensors
expect_text "says it is for ACL" "is for ACL models"
echo "keep me" >"$TMP/keep.ckpt"
check "a failed import" 1 "$METACL" ckpt import "$TMP/cut.safetensors" "$TMP/keep.ckpt"
check "leaves the existing output as it was" 0 grep -q "keep me" "$TMP/keep.ckpt"
check "no temporary file left" 0 sh -c "! ls \"$TMP\" | grep -q '\\.tmp\\.'"

# usage errors: exit 2
check "import without arguments" 2 "$METACL" ckpt import
check "import with one argument" 2 "$METACL" ckpt import "$ST"
check "import --config and --template" 2 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --config a --template b
check "import --format metacl" 2 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --format metacl
check "export --format onnx" 2 "$METACL" ckpt export "$CK" "$TMP/x" --format onnx
check "import --bogus" 2 "$METACL" ckpt import "$ST" "$TMP/x.ckpt" --bogus
check "import --help" 0 "$METACL" ckpt import --help
expect_text "documents --template" "--template CKPT"

# an independent reader (Python standard library only) agrees on the names and shapes
if command -v python3 >/dev/null 2>&1; then
    check "python reader: the official names and shapes" 0 python3 "$SRC/tools/scripts/acl-safetensors.py" "$ST" --acl
    expect_text "all of them" "ok: the 48 official names and shapes, exactly"
    check "python reader: a renamed tensor fails" 1 python3 "$SRC/tools/scripts/acl-safetensors.py" "$TMP/renamed.safetensors" --acl
else
    echo "note: no python3: the independent reader check is skipped"
fi
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
