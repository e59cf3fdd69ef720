#!/bin/sh
# lm-experiments.sh -- every number of doc/lm.md, one after another:
#   1. prepares the text corpus when it is missing (metacl data prepare text);
#   2. trains the shipped language model (resumable: a finished run is skipped, a stopped one
#      resumed) and exports its best checkpoint (chosen on the valid stream) without
#      optimizer state to data/checkpoints/lm-text.ckpt;
#   3. evaluates it three ways (static, dynamic, Sparse-MetaNet) on the first EVAL_CHARS bytes
#      of the test stream in blocks of BLOCK bytes; dynamic evaluation's lr and decay and the
#      write probability are chosen by grid searches on TUNE_CHARS bytes of the valid stream;
#      both streams are read from the pinned excerpts in data/text-eval (EVAL_DATA; doc/lm.md,
#      "The pinned corpus"), so the numbers do not move with a Debian point release;
#   4. samples text from it;
#   5. the speed: metacl bench lm next to the same model in PyTorch.
# Tables go to $OUT (default results/lm-experiments), the figure to doc/figures/.
#
#   tools/scripts/lm-experiments.sh [train|eval|sample|bench|all]     (default all)
set -eu
METACL=${METACL:-./metacl}
RUNS=${RUNS:-runs/lm}
OUT=${OUT:-results/lm-experiments}
FIG=${FIG:-doc/figures}
EVAL_CHARS=${EVAL_CHARS:-100000}
BLOCK=${BLOCK:-10000}
TUNE_CHARS=${TUNE_CHARS:-40000}
EVAL_DATA=${EVAL_DATA:-data/text-eval}
what=${1:-all}
mkdir -p "$RUNS" "$OUT" "$FIG"
CK=data/checkpoints
if [ "$what" = train ] || [ "$what" = all ]; then
    "$METACL" data info text >/dev/null 2>&1 || "$METACL" data prepare text
    if [ -s "$RUNS/lm-text/last.ckpt" ]; then
        "$METACL" train lm --resume "$RUNS/lm-text" --quiet
    else
        "$METACL" train lm --config data/configs/lm-text.conf --out "$RUNS/lm-text" --quiet
    fi
    "$METACL" ckpt export "$RUNS/lm-text/best.ckpt" "$CK/lm-text.ckpt"
fi
if [ "$what" = eval ] || [ "$what" = all ]; then
    "$METACL" eval lm --ckpt "$CK/lm-text.ckpt" --data-dir "$EVAL_DATA" --block "$BLOCK" --max-chars "$EVAL_CHARS" \
        --tune-chars "$TUNE_CHARS" --figures "$FIG" --json-out "$OUT/eval.json" --quiet | tee "$OUT/eval.md"
fi
if [ "$what" = sample ] || [ "$what" = all ]; then
    for p in "def " "And God said" "Elizabeth "; do
        "$METACL" sample lm --ckpt "$CK/lm-text.ckpt" --prompt "$p" -n 300 --seed 1
        echo
    done | tee "$OUT/samples.txt"
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
    python3 tools/torch/bench-acl-vs-torch.py --bench lm --threads 2 | tee "$OUT/bench.md"
fi
