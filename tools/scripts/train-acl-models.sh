#!/bin/sh
# train-acl-models.sh — retrain the shipped ACL models (doc/acl.md) from scratch:
#   s1 2-way 1-shot -> s2 5-way 1-shot -> s3 5-way 5-shot -> acl-2task and noacl-2task
#   (2-task objective with and without the ACL term) -> acl-split5 (5-task ACL meta-finetuning
#   for Split-X); then the generalization stages (doc/acl.md, "Generalization"):
#   acl-2task-gen and noacl-2task-gen (the 2-task models trained further with per-episode
#   feature statistics and task augmentation), acl-2task-gen-1900 (the same run stopped at
#   step 1900: bit for bit its first 1900 steps on the same machine; another CPU's vector
#   width gives other bits, doc/acl.md) -> acl-split5-gen (5 tasks, 15 shots) and
#   acl-cil10-gen (10-way class-incremental), both selected on fmnist-val, and from the same
#   snapshot acl-cil2-gen (2-task class-incremental, selected on fmnist-val) and
#   acl-2task-gen-mean (the ACL term one of three equal terms; tried, not shipped) and
#   acl-2task-gen-acl2 (the ACL term half of the loss); then exports each final
#   model's best checkpoint (without the optimizer state) to data/checkpoints/.
# A stage whose run directory exists is resumed (a finished one is a no-op), so the script can
# be stopped and started again. Run from the source tree after `metacl data prepare hanzi`
# and `metacl data prepare hershey`. Extra arguments go to every `metacl train` call (e.g.
# --backend opencl, or --set data.dir=DIR).
#   METACL   the binary (default ./metacl)     RUNS   run directories (default runs)
set -eu
METACL=${METACL:-./metacl}
RUNS=${RUNS:-runs}
# run_stage NAME CONFIG FROM [args]: FROM is the stage whose best.ckpt starts this one ("" =
# none); the config's own train.init (runs/...) is replaced by $RUNS/FROM/best.ckpt, so the
# curriculum follows RUNS wherever it is.
run_stage() {
    n=$1; c=$2; from=$3; shift 3
    if [ -n "$from" ]; then
        set -- --set "train.init=$RUNS/$from/best.ckpt" "$@"
    else
        set -- --set "train.init=" "$@"
    fi
    if [ -f "$RUNS/$n/config.txt" ]; then
        # started before: resume it (a finished run is a no-op; one stopped before its first
        # checkpoint starts again from step 0, from train.init)
        "$METACL" train acl --resume "$RUNS/$n" --quiet "$@"
    else
        "$METACL" train acl --config "data/configs/$c" --out "$RUNS/$n" --quiet "$@"
    fi
    echo "$n: $(tail -n 1 "$RUNS/$n/log.txt")"
}
mkdir -p "$RUNS" data/checkpoints
run_stage s1 acl-s1-2way1shot.conf "" "$@"
run_stage s2 acl-s2-5way1shot.conf s1 "$@"
run_stage s3 acl-s3-5way5shot.conf s2 "$@"
side_by_side() { # side_by_side "NAME CONFIG FROM" "NAME CONFIG FROM" [args]: two stages at once
    st1=$1; st2=$2; shift 2
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=${OMP_NUM_THREADS_PER_RUN:-1} run_stage $st1 "$@" &
    q1=$!
    # shellcheck disable=SC2086
    OMP_NUM_THREADS=${OMP_NUM_THREADS_PER_RUN:-1} run_stage $st2 "$@" &
    q2=$!
    wait $q1 || { echo "${st1%% *} failed"; exit 1; }
    wait $q2 || { echo "${st2%% *} failed"; exit 1; }
}
# the two 2-task models are independent: train them side by side (one thread each)
side_by_side "acl-2task acl-2task.conf s3" "noacl-2task noacl-2task.conf s3" "$@"
run_stage acl-split5 acl-split5.conf acl-2task "$@"
# generalization stages: two pairs of independent runs, side by side (one thread each)
"$METACL" data info fmnist >/dev/null 2>&1 || "$METACL" data prepare fmnist
side_by_side "acl-2task-gen acl-2task-gen.conf acl-2task" "noacl-2task-gen noacl-2task-gen.conf noacl-2task" "$@"
# the 5-task stages start from acl-2task-gen at step 1900, so that every model stays within
# two hours of training (doc/acl.md): the same run again, stopped there
OMP_NUM_THREADS=${OMP_NUM_THREADS_PER_RUN:-1} run_stage acl-2task-gen-1900 acl-2task-gen.conf acl-2task --set train.steps=1900 "$@"
side_by_side "acl-split5-gen acl-split5-gen.conf acl-2task-gen-1900" "acl-cil10-gen acl-cil10-gen.conf acl-2task-gen-1900" "$@"
side_by_side "acl-cil2-gen acl-cil2-gen.conf acl-2task-gen-1900" "acl-2task-gen-mean acl-2task-gen-mean.conf acl-2task-gen-1900" "$@"
OMP_NUM_THREADS=${OMP_NUM_THREADS_PER_RUN:-1} run_stage acl-2task-gen-acl2 acl-2task-gen-acl2.conf acl-2task-gen-1900 "$@"
for m in acl-2task noacl-2task acl-split5 acl-2task-gen noacl-2task-gen acl-split5-gen acl-cil10-gen acl-cil2-gen acl-2task-gen-acl2; do
    "$METACL" ckpt export "$RUNS/$m/best.ckpt" "data/checkpoints/$m.ckpt"   # model only, atomic
done
