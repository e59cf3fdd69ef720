#!/bin/sh
# oct-experiments.sh -- the online-transformer experiments of doc/oct.md, one after another:
# Split-hanzi and Split-FashionMNIST with the pi-transformer (replay E = 4), the effect of E and
# of the learning rate, the ablations C = 0 and no-image, the paper's literal pi mask, the
# 2-token transformer, and the online SGD / Adam baselines (the same Conv-4 + a linear head).
#
#   tools/scripts/oct-experiments.sh [OUT_DIR]      (default runs/oct; a finished run is skipped)
#
# Every run is `metacl online` with data/configs/oct-split-*.conf and --set overrides; the
# tables at the end are `metacl online --report`. Threads: OMP_NUM_THREADS (default 1).
set -eu
METACL=${METACL:-./metacl}
OUT=${1:-runs/oct}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT"

run() { # NAME CONFIG [KEY=VALUE]...
    name=$1 conf=$2
    shift 2
    if [ -f "$OUT/$name/summary.json" ]; then return 0; fi
    if [ -f "$OUT/$name/last.ckpt" ]; then
        "$METACL" online --resume "$OUT/$name" --quiet
        return 0
    fi
    rm -rf "${OUT:?}/$name"
    sets=""
    for kv in "$@"; do sets="$sets --set $kv"; done
    # shellcheck disable=SC2086
    "$METACL" online --config "$conf" --out "$OUT/$name" --quiet $sets
}

H=data/configs/oct-split-hanzi.conf
F=data/configs/oct-split-fmnist.conf
run fmnist-pi-E4 "$F"
# the paper's hyperparameters (Sec. 4: chunks of 50, lr 1e-4, 8 replay streams, 1000 examples
# per task), 60 tasks
run fmnist-pi-paper "$F" stream.per_task=1000 stream.tasks=60 train.batch=50 online.streams=8 \
    train.lr=1e-4 train.log_every=80
run fmnist-cnn-adam-paper "$F" stream.per_task=1000 stream.tasks=60 train.batch=50 model.arch=cnn \
    online.streams=1 online.optimizer=adam train.lr=1e-3 train.log_every=10
run fmnist-cnn-adam "$F" model.arch=cnn online.streams=1 online.optimizer=adam train.lr=1e-3
run fmnist-cnn-sgd "$F" model.arch=cnn online.streams=1 online.optimizer=sgd train.lr=3e-2
run hanzi-pi-E4 "$H"
run hanzi-pi-E1 "$H" online.streams=1
run hanzi-pi-E2 "$H" online.streams=2
run hanzi-pi-E8 "$H" online.streams=8
run hanzi-pi-lr3e-4 "$H" train.lr=3e-4
run hanzi-pi-lr3e-3 "$H" train.lr=3e-3
run hanzi-pi-C0 "$H" model.window=0
run hanzi-pi-noimage "$H" model.no_image=1
run hanzi-pi-papermask "$H" model.pi_mask=1
run hanzi-2token-E4 "$H" model.arch=two_token model.alibi=1 model.window=1000
run hanzi-cnn-adam "$H" model.arch=cnn online.streams=1 online.optimizer=adam train.lr=1e-3
run hanzi-cnn-sgd "$H" model.arch=cnn online.streams=1 online.optimizer=sgd train.lr=3e-2

echo "== Split-hanzi: replay streams E and learning rate"
"$METACL" online --report "$OUT/hanzi-pi-E1" --report "$OUT/hanzi-pi-E2" --report "$OUT/hanzi-pi-E4" \
    --report "$OUT/hanzi-pi-E8" --report "$OUT/hanzi-pi-lr3e-4" --report "$OUT/hanzi-pi-lr3e-3" \
    --figures "$OUT/figures-replay-lr"
echo "== Split-hanzi: ablations, the paper's mask, 2-token, baselines"
"$METACL" online --report "$OUT/hanzi-pi-E4" --report "$OUT/hanzi-pi-C0" --report "$OUT/hanzi-pi-noimage" \
    --report "$OUT/hanzi-pi-papermask" --report "$OUT/hanzi-2token-E4" --report "$OUT/hanzi-cnn-adam" \
    --report "$OUT/hanzi-cnn-sgd" --figures "$OUT/figures-ablations"
echo "== Split-FashionMNIST"
"$METACL" online --report "$OUT/fmnist-pi-E4" --report "$OUT/fmnist-cnn-adam" --report "$OUT/fmnist-cnn-sgd" \
    --figures "$OUT/figures-fmnist"
echo "== Split-FashionMNIST, the paper's hyperparameters (1000 examples per task)"
"$METACL" online --report "$OUT/fmnist-pi-paper" --report "$OUT/fmnist-cnn-adam-paper" \
    --figures "$OUT/figures-fmnist-paper"
"$METACL" online --report "$OUT/fmnist-pi-paper" --quiet
