#!/bin/sh
# test-lm-cli.sh — `metacl train lm`, `metacl eval lm` and `metacl sample lm` end to end on a
# tiny model and a two-domain corpus made from text written here (metacl data prepare
# txt:...): bad config values refused with file:line; exact resume (a run stopped halfway
# and resumed writes the same metrics as an uninterrupted one; another seed differs); the
# three evaluations with their tables, JSON and figure; sampling; usage errors (exit 2) and
# runtime errors (exit 1: a missing corpus, a truncated checkpoint, smn on a plain model).
METACL=${METACL:-./metacl}
TMP=test-lm-cli.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
echo "test-lm-cli: binary $METACL (seeds: model.seed 1, train.seed 1, data.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
# two domains that a model can tell apart: English-like words and arithmetic lines
awk 'BEGIN { split("the a cat dog sat ran on under mat hat big small", w, " ");
             for (i = 0; i < 3000; i++) { printf "%s ", w[(i * 7 + int(i / 13)) % 12 + 1]; if (i % 11 == 10) printf "\n" } }' \
    >"$TMP/words.txt"
awk 'BEGIN { for (i = 0; i < 1500; i++) printf "%d + %d = %d\n", i % 97, (i * 13) % 89, i % 97 + (i * 13) % 89 }' \
    >"$TMP/sums.txt"
check "prepare a corpus" 0 "$METACL" data prepare "txt:$TMP/words.txt,$TMP/sums.txt" --per-file --name tiny \
    --data-dir "$TMP/data"
C=$TMP/lm.conf
cat >"$C" <<CONF
model.layers = 2
model.width = 16
model.heads = 2
model.head_dim = 8
model.ffw = 32
model.mem_len = 16
model.meta_hidden = 4
smn.k = 3
smn.fast_len = 8
smn.seg_len = 16
data.dir = $TMP/data/tiny
data.block = 400
data.val_chars = 300
data.eval_block = 300
train.batch = 2
train.steps = 6
train.val_every = 3
train.ckpt_every = 2
train.log_every = 1
CONF

check "no arguments" 2 "$METACL" eval lm
check "unknown option" 2 "$METACL" train lm --config "$C" --bogus
printf 'model.width = 15\n' >"$TMP/w.conf"
check "odd width" 1 "$METACL" train lm --config "$TMP/w.conf" --out "$TMP/u"
expect_text "says why" "even"
printf 'model.layers = 2\n\nsmn.p = 0\n' >"$TMP/p0.conf"
check "p = 0" 1 "$METACL" train lm --config "$TMP/p0.conf" --out "$TMP/u"
expect_text "names file and line" "p0.conf:3: smn.p"
check "k = 1 with fast weights" 1 "$METACL" train lm --config "$C" --set smn.k=1 --out "$TMP/u"
expect_text "says why" "k >= 2"
check "a missing corpus" 1 "$METACL" train lm --config "$C" --set data.dir="$TMP/nowhere" --out "$TMP/u"
expect_text "names the command" "metacl data prepare"
check "an unknown domain" 1 "$METACL" train lm --config "$C" --set data.domains=bogus --out "$TMP/u"
expect_text "lists the domains" "words"
[ ! -e "$TMP/u/config.txt" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a refused run left files"; }

check "a whole run" 0 "$METACL" train lm --config "$C" --out "$TMP/whole" --quiet
for f in config.txt metrics.csv log.txt last.ckpt best.ckpt; do
    [ -s "$TMP/whole/$f" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $f missing"; }
done
check "3 steps" 0 "$METACL" train lm --config "$C" --out "$TMP/split" --quiet --set train.steps=3
check "resume to 6" 0 "$METACL" train lm --resume "$TMP/split" --quiet --set train.steps=6
cut -d, -f1-4 "$TMP/whole/metrics.csv" >"$TMP/a"
cut -d, -f1-4 "$TMP/split/metrics.csv" >"$TMP/b"
if cmp -s "$TMP/a" "$TMP/b"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL: the resumed run differs"; diff "$TMP/a" "$TMP/b" | head; fi
check "another seed" 0 "$METACL" train lm --config "$C" --out "$TMP/other" --quiet --set data.seed=2
cut -d, -f1-4 "$TMP/other/metrics.csv" >"$TMP/c"
cmp -s "$TMP/a" "$TMP/c" && { fail=$((fail + 1)); echo "FAIL: two seeds gave the same metrics"; } || pass=$((pass + 1))

check "train.init: a warm start from another lm checkpoint" 0 "$METACL" train lm --config "$C" --out "$TMP/init" \
    --quiet --set train.steps=1 --set train.init="$TMP/whole/last.ckpt"
grep -Eq "[1-9][0-9]* tensors of the same name and shape copied from" "$TMP/init/log.txt" &&
    pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: train.init copied nothing (log.txt)"; }
check "train.init: a missing checkpoint" 1 "$METACL" train lm --config "$C" --out "$TMP/init2" --quiet \
    --set train.steps=1 --set train.init="$TMP/no-such.ckpt"
check "ckpt export" 0 "$METACL" ckpt export "$TMP/whole/last.ckpt" "$TMP/x.ckpt"
check "ckpt info" 0 "$METACL" ckpt info "$TMP/x.ckpt"
expect_text "the kind" "model lm"
expect_text "no optimizer state" "optimizer state: no"
expect_text "the best score, signed" "best_val_ppm = -"
expect_text "the whole config" "smn.fast_len = 8"
check "eval: three modes" 0 "$METACL" eval lm --ckpt "$TMP/x.ckpt" --lr 0.001 --decay 0 --p 0.3 \
    --max-chars 400 --figures "$TMP/fig" --quiet
expect_text "the table" "| static |"
expect_text "dynamic's row" "| dynamic |"
expect_text "smn's row" "| smn |"
expect_text "per domain" "| words |"
expect_text "the switch curve" "bytes since the switch"
[ -s "$TMP/fig/lm-switch-curve.png" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: figure missing"; }
check "eval: grid search on valid, JSON" 0 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" --mode dynamic,smn \
    --max-chars 200 --tune-chars 1000 --json --quiet
expect_text "json" '"bpc"'
expect_text "the grid's choice" '"lr"'
check "eval: smn with an explicit write and reset period" 0 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" \
    --mode smn --p 0.3 --gamma 0 --beta1 0 --beta2 1 --reset-every 2 --max-chars 200 --quiet
expect_text "smn's row" "| smn |"
check "eval: gamma out of range" 2 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" --mode smn --gamma 1.5
check "eval: negative reset period" 2 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" --mode smn --reset-every -1
check "eval: unknown mode" 2 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" --mode bogus
check "eval: bad split" 2 "$METACL" eval lm --ckpt "$TMP/whole/last.ckpt" --split train
check "plain model" 0 "$METACL" train lm --config "$C" --out "$TMP/plain" --quiet --set model.fast=0 --set train.steps=2
check "eval: smn on a plain model" 2 "$METACL" eval lm --ckpt "$TMP/plain/last.ckpt" --mode smn
check "eval: the default modes on a plain model" 0 "$METACL" eval lm --ckpt "$TMP/plain/last.ckpt" --lr 0.001 \
    --decay 0 --max-chars 100 --quiet
head -c 300 "$TMP/whole/last.ckpt" >"$TMP/trunc.ckpt"
check "a truncated checkpoint" 1 "$METACL" eval lm --ckpt "$TMP/trunc.ckpt"
check "sample" 0 "$METACL" sample lm --ckpt "$TMP/whole/last.ckpt" --prompt "the " -n 40 --seed 3
n=$(printf %s "$LAST_OUT" | wc -c)
[ "$n" -ge 44 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: sample wrote $n bytes"; }
check "sample: greedy" 0 "$METACL" sample lm --ckpt "$TMP/whole/last.ckpt" --prompt "1 + " -n 10 -t 0
check "sample: no checkpoint" 2 "$METACL" sample lm
check "sample: which family" 2 "$METACL" sample
rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
