#!/bin/sh
# smn-experiments.sh -- every Sparse-MetaNet number of doc/smn.md, one after another:
#   1. trains the four shipped models (resumable: a finished run is skipped, a stopped one
#      resumed) and exports them without optimizer state to data/checkpoints/smn-*.ckpt:
#      smn-wcst (the WCST agent), smn-online-hanzi (Sparse-MetaNet on Online-hanzi),
#      smn-online-hanzi-ft (the same network without fast weights, trained online: the
#      online fine-tuning baseline), smn-pretrain-hanzi (the plain network pretrained on the
#      2814 training classes: the two pretraining baselines);
#   2. the WCST protocol: the shipped agent, the agent from scratch and the online / offline
#      Adam and RMSProp agents (learning rates by a logged grid search on other seeds);
#   3. the Online-X protocol on the test classes of hanzi (the training domain) and of two
#      domains never trained on, hershey and kanji.
# Tables go to $OUT (default results/smn-experiments), figures to doc/figures/smn-*.
#
#   tools/scripts/smn-experiments.sh [train|wcst|online|all]     (default all)
#
# Sizes are cut to fit 2 CPU cores (doc/smn.md says by how much): WCST_RUNS, WCST_TASKS,
# ONLINE_TASKS, ONLINE_RUNS override them.
set -eu
METACL=${METACL:-./metacl}
RUNS=${RUNS:-runs/smn}
OUT=${OUT:-results/smn-experiments}
FIG=${FIG:-doc/figures}
WCST_RUNS=${WCST_RUNS:-5}
WCST_TASKS=${WCST_TASKS:-12}
ONLINE_TASKS=${ONLINE_TASKS:-10}
ONLINE_RUNS=${ONLINE_RUNS:-1}
what=${1:-all}
mkdir -p "$RUNS" "$OUT" "$FIG"
CK=data/checkpoints
for set in hanzi hershey kanji; do
    "$METACL" data info "$set" >/dev/null 2>&1 || "$METACL" data prepare "$set"
done

train() { # NAME CONFIG
    name=$1 conf=$2
    if [ -f "$RUNS/$name/last.ckpt" ]; then
        "$METACL" train smn --resume "$RUNS/$name" --quiet
    else
        rm -rf "${RUNS:?}/$name"
        "$METACL" train smn --config "$conf" --out "$RUNS/$name" --quiet
    fi
    "$METACL" ckpt export "$RUNS/$name/last.ckpt" "$CK/smn-$name.ckpt"
}

if [ "$what" = all ] || [ "$what" = train ]; then
    train wcst data/configs/smn-wcst.conf
    train online-hanzi data/configs/smn-online-hanzi.conf
    train online-hanzi-ft data/configs/smn-online-hanzi-ft.conf
    train pretrain-hanzi data/configs/smn-pretrain-hanzi.conf
fi

if [ "$what" = all ] || [ "$what" = wcst ]; then
    "$METACL" eval smn --protocol wcst --ckpt Sparse-MetaNet="$CK/smn-wcst.ckpt" --baseline smn-scratch \
        --baseline adam --baseline rmsprop --baseline offline-adam --runs "$WCST_RUNS" --tasks "$WCST_TASKS" \
        --max-steps $((WCST_TASKS * 150)) --figures "$OUT/wcst" --json-out "$OUT/wcst.json" --quiet >"$OUT/wcst.md"
    cp "$OUT/wcst/wcst-updates.png" "$FIG/smn-wcst-updates.png"
    cp "$OUT/wcst/wcst-persev.png" "$FIG/smn-wcst-persev.png"
fi

if [ "$what" = all ] || [ "$what" = online ]; then
    # hanzi (the training domain's test classes): every length range, the baselines' learning
    # rates by the grid search on hanzi's validation classes; hershey and kanji (never trained
    # on): two ranges, the learning rates chosen on hanzi (a grid per domain is 3x the time)
    lr_ft= lr_po= lr_pr=
    for dom in hanzi hershey kanji; do
        lengths=1-15,20-35,40-55,60-75 runs=$ONLINE_RUNS
        [ "$dom" = hanzi ] || { lengths=1-15,40-55; runs=1; }
        "$METACL" eval smn --protocol online --ckpt Sparse-MetaNet="$CK/smn-online-hanzi.ckpt" \
            --baseline online:"$CK/smn-online-hanzi-ft.ckpt$lr_ft" \
            --baseline pretrain-online:"$CK/smn-pretrain-hanzi.ckpt$lr_po" \
            --baseline pretrain-reset:"$CK/smn-pretrain-hanzi.ckpt$lr_pr" \
            --data "$dom" --lengths "$lengths" --tasks "$ONLINE_TASKS" --runs "$runs" --round 16 --val-runs 2 \
            --figures "$OUT/online-$dom" --json-out "$OUT/online-$dom.json" --quiet >"$OUT/online-$dom.md"
        for f in accuracy persev interference; do
            cp "$OUT/online-$dom/online-$f.png" "$FIG/smn-online-$dom-$f.png"
        done
        if [ "$dom" = hanzi ]; then # the chosen learning rates, as ":LR" suffixes
            lrs=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["agents"]; print(" ".join(":%g" % x["lr"] for x in a[1:4]))' "$OUT/online-hanzi.json")
            set -- $lrs
            lr_ft=$1 lr_po=$2 lr_pr=$3
        fi
    done
fi
echo "smn-experiments: tables in $OUT, figures in $FIG/smn-*"
