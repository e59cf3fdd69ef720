#!/bin/sh
# acl-baselines.sh — the hand-crafted continual-learning baselines on Split-FashionMNIST,
# domain-incremental, 5 tasks, with their hyperparameters chosen on fmnist-val (doc/acl.md,
# "Baselines on Split-FashionMNIST"): contexts (training images) from the 55 000 Fashion-MNIST
# training images outside the validation split; the selection queries the 5 000 held-out
# images, the final table the test file.
#   1. SGD and Adam: lr × epochs, their default grids (`--select`), SEL_RUNS runs per point.
#   2. EWC, online EWC, SI, LwF with the optimizer, lr and epochs that SGD chose, searching
#      only the method's own hyperparameter (5 values each); replay with them as they are.
#   3. The final table: every method at its chosen values, RUNS runs, next to the ACL models.
# Everything is logged: OUT/select-*.json hold every grid point (the `selection` block),
# OUT/select-*.log the progress lines, OUT/final.md and OUT/final.json the table.
# Environment: METACL (default ./metacl), OUT (default results/acl-baselines), K (shots,
# default 15), SEL_RUNS (default 3), RUNS (default 10), REGIME (shots | full, default shots),
# FULL_EPOCHS (full regime: the epochs, fixed, only the lr is searched; default 1 — every
# task's 11 000 training images once; the grid's 25 epochs would take hours here), RESUME
# (1: a stage whose OUT/*.json exists is not run again, its choice is read from that file;
# default 0: every stage runs).
set -eu
METACL=${METACL:-./metacl}
OUT=${OUT:-results/acl-baselines}
K=${K:-15}
SEL_RUNS=${SEL_RUNS:-3}
RUNS=${RUNS:-10}
REGIME=${REGIME:-shots}
CK=data/checkpoints
mkdir -p "$OUT"
"$METACL" data info fmnist >/dev/null 2>&1 || "$METACL" data prepare fmnist
P="--protocol split-dil --data fmnist-val --tasks 5 --k-shot $K --final-only"
R="regime=$REGIME"
FULL_EPOCHS=${FULL_EPOCHS:-1}
RESUME=${RESUME:-0}
RSEL=$R # what the optimizers' selection fixes
[ "$REGIME" = full ] && RSEL="$R,epochs=$FULL_EPOCHS"

# chosen FILE NAME: "lr=..,epochs=..[,KEY=..]" of baseline NAME's chosen grid point in FILE
chosen() {
    python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for m in d["models"]:
    s = m.get("selection")
    # the optimizers share a file (match the name); a method has a file of its own
    if not s or (sys.argv[2] in ("sgd", "adam") and not m["name"].lower().startswith(sys.argv[2])):
        continue
    p = s["points"][s["chosen"]]
    kv = ["lr=%g" % p["lr"], "epochs=%d" % p["epochs"]]
    h = s.get("hyperparameter")
    if h:
        kv.append("%s=%g" % (h, p[h]))
    print(",".join(kv))
    break
else:
    sys.exit("no selection of %s in %s" % (sys.argv[2], sys.argv[1]))
EOF
}

# have FILE: with RESUME=1, FILE exists (its stage ran before and is not run again)
have() { [ "$RESUME" = 1 ] && [ -s "$1" ]; }

# 1. the optimizers
# shellcheck disable=SC2086
have "$OUT/select-opt.json" ||
    "$METACL" eval acl $P --runs "$SEL_RUNS" --select --baseline "sgd:$RSEL" --baseline "adam:$RSEL" \
        --json-out "$OUT/select-opt.json" >"$OUT/select-opt.md" 2>"$OUT/select-opt.log"
sgd=$(chosen "$OUT/select-opt.json" sgd)
adam=$(chosen "$OUT/select-opt.json" adam)
echo "chosen: SGD $sgd; Adam $adam"
# 2. the methods' own hyperparameter, at SGD's lr and epochs
lr_ep=$(echo "$sgd" | cut -d, -f1,2)
select_method() { # select_method NAME: the method's own hyperparameter at SGD's lr and epochs
    # shellcheck disable=SC2086
    have "$OUT/select-$1.json" ||
        "$METACL" eval acl $P --runs "$SEL_RUNS" --select --baseline "$1:$lr_ep,$R" \
            --json-out "$OUT/select-$1.json" >"$OUT/select-$1.md" 2>"$OUT/select-$1.log"
    chosen "$OUT/select-$1.json" "$1"
}
c_ewc=$(select_method ewc)
c_ewc_online=$(select_method ewc-online)
c_si=$(select_method si)
c_lwf=$(select_method lwf)
echo "chosen: EWC $c_ewc; online EWC $c_ewc_online; SI $c_si; LwF $c_lwf; replay $lr_ep"
# 3. the table, on the test file
# shellcheck disable=SC2086
"$METACL" eval acl $P --runs "$RUNS" --ckpt ACL-5task-gen="$CK/acl-split5-gen.ckpt" \
    --baseline "sgd:$sgd,$R" --baseline "adam:$adam,$R" --baseline "ewc:$c_ewc,$R" \
    --baseline "ewc-online:$c_ewc_online,$R" --baseline "si:$c_si,$R" --baseline "lwf:$c_lwf,$R" \
    --baseline "replay:$lr_ep,$R" --json-out "$OUT/final.json" >"$OUT/final.md" 2>"$OUT/final.log"
cat "$OUT/final.md"
