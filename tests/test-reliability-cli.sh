#!/bin/sh
# test-reliability-cli.sh — the command line refuses untrusted input before it costs anything
# (doc/reliability.md): a model config beyond the memory budget (train, ckpt export with
# --memory-limit), a FIFO given as --config or as a checkpoint (no hang: run under timeout),
# checkpoint counters out of range on --resume (step 2^63, 2^64 - 1, chance_step after step),
# a torn last line of metrics.csv dropped on resume, duplicate config keys, a class list that
# would wrap (fmnist@99999999999).
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
HELPER=${METACL_BUILDDIR:-.}/tests/test-reliability
TMP=test-reliability-cli.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
to() { timeout 20 "$@"; } # a hang fails (exit 124) instead of stalling the suite

echo "test-reliability-cli.sh: binary $METACL"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
cat >"$CONF" <<CONF
model.n_way = 2
model.hidden = 16
model.heads = 2
model.layers = 1
model.conv_channels = 4
task.n_way = 2
task.k_shot = 1
task.n_tasks = 1
data.domains = hershey
data.dir = $TMP/data
train.steps = 4
train.batch = 2
train.val_every = 0
train.ckpt_every = 2
train.log_every = 1
CONF

# memory budget: refused before allocating, nothing left behind
check "hidden 65536 refused" 1 to "$METACL" train acl --config "$CONF" --set model.hidden=65536 --set model.heads=1 --out "$TMP/big" --quiet
expect_text "says why" "memory budget"
[ -e "$TMP/big" ] && { fail=$((fail + 1)); echo "FAIL: the refused run left $TMP/big"; } || pass=$((pass + 1))
check "--memory-limit 1M refuses the tiny run" 1 to "$METACL" train acl --config "$CONF" --memory-limit 1M --out "$TMP/lim" --quiet
expect_text "names the option" "--memory-limit"
METACL_MEMORY_LIMIT=1M check "METACL_MEMORY_LIMIT=1M refuses it too" 1 to "$METACL" train acl --config "$CONF" --out "$TMP/lim" --quiet
expect_text "names the variable" "METACL_MEMORY_LIMIT"
METACL_MEMORY_LIMIT=lots check "a malformed METACL_MEMORY_LIMIT is a usage error" 2 "$METACL" train acl --config "$CONF" --out "$TMP/lim2" --quiet
expect_text "says what it wants" "want a size"
check "--memory-limit takes a size" 2 "$METACL" train acl --config "$CONF" --memory-limit lots --out "$TMP/lim"
expect_text "says it wants a size" "not a size"

# duplicate keys in a file; --set after the file is an override, not a duplicate
cp "$CONF" "$TMP/dup.conf" && echo "train.batch = 3" >>"$TMP/dup.conf"
check "duplicate key refused" 1 to "$METACL" train acl --config "$TMP/dup.conf" --out "$TMP/dup" --quiet
expect_text "names both lines" "key 'train.batch' is set twice (lines 12 and 16)"

# a FIFO as --config or as a checkpoint: refused at once
mkfifo "$TMP/fifo"
check "FIFO as --config" 1 to "$METACL" train acl --config "$TMP/fifo" --out "$TMP/ff" --quiet
expect_text "not a regular file" "not a regular file"
check "FIFO as a checkpoint" 1 to "$METACL" ckpt info "$TMP/fifo"
expect_text "not a regular file" "not a regular file"

# a run to resume from
check "tiny run with --set overrides" 0 to "$METACL" train acl --config "$CONF" --set train.batch=3 --set train.batch=2 --out "$TMP/r" --quiet
check "ckpt export over a 1K budget" 1 to "$METACL" ckpt export --memory-limit 1K "$TMP/r/last.ckpt" "$TMP/x.ckpt"
expect_text "says why" "memory budget"
check "ckpt export within the budget" 0 to "$METACL" ckpt export --memory-limit 1G "$TMP/r/last.ckpt" "$TMP/x.ckpt"

# counters out of range on --resume: refused naming file and counter
for v in 9223372036854775808 18446744073709551615 1000000000001; do
    cp -r "$TMP/r" "$TMP/c"
    "$HELPER" set-counter "$TMP/c/last.ckpt" step "$v"
    check "step = $v refused" 1 to "$METACL" train acl --resume "$TMP/c" --set train.steps=6 --quiet
    expect_text "names file and counter" "last.ckpt: counter step = $v is out of range"
    rm -rf "$TMP/c"
done
cp -r "$TMP/r" "$TMP/c"
"$HELPER" set-counter "$TMP/c/last.ckpt" chance_step 5
check "chance_step after step refused" 1 to "$METACL" train acl --resume "$TMP/c" --set train.steps=6 --quiet
expect_text "names the counter" "chance_step = 5 is after step = 4"
rm -rf "$TMP/c"
cp -r "$TMP/r" "$TMP/c"
"$HELPER" set-counter "$TMP/c/last.ckpt" train_ms 18446744073709551614
check "train_ms = 2^64 - 2 refused" 1 to "$METACL" train acl --resume "$TMP/c" --set train.steps=6 --quiet
expect_text "names the counter" "counter train_ms"
rm -rf "$TMP/c"

# a torn last line of metrics.csv (a crash mid-write) is dropped on resume
printf '4,0.6931' >>"$TMP/r/metrics.csv"
check "resume after a torn csv line" 0 to "$METACL" train acl --resume "$TMP/r" --set train.steps=6 --quiet
if grep -q '^4,0\.6931[0-9]*,' "$TMP/r/metrics.csv" && ! grep -q '^4,0\.6931,' "$TMP/r/metrics.csv"; then
    fail=$((fail + 1)); echo "FAIL: the next row was appended to the torn line"; sed 's/^/    /' "$TMP/r/metrics.csv"
else pass=$((pass + 1)); fi
fields=$(awk -F, '{print NF}' "$TMP/r/metrics.csv" | sort -u | wc -l)
rows=$(tail -n +2 "$TMP/r/metrics.csv" | cut -d, -f1 | tr '\n' ' ')
if [ "$fields" -eq 1 ] && [ "$rows" = "1 2 3 4 5 6 " ]; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: metrics.csv after the resume: rows '$rows', $fields field counts"
    sed 's/^/    /' "$TMP/r/metrics.csv"; fi

# a class list beyond INT32_MAX never wraps
check "fmnist@99999999999 refused" 2 to "$METACL" eval acl --ckpt "$TMP/r/last.ckpt" --protocol seq --data fmnist@99999999999
expect_text "names the argument" "fmnist@99999999999"
case "$LAST_OUT" in *1215752191*) fail=$((fail + 1)); echo "FAIL: the class wrapped";; *) pass=$((pass + 1));; esac

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && rm -rf "$TMP"
[ "$fail" -eq 0 ]
