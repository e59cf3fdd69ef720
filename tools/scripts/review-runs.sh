#!/bin/sh
# review-runs.sh [JOB ...] — the long runs issue 29 asks for (results a reviewer would accept),
# one resumable job each; nothing here runs in `make check` or in the main job. Start them with
#     nohup tools/scripts/review-runs.sh JOB >runs/review/JOB.log 2>&1 &
# Every job writes under $OUT/JOB/ (default runs/review/JOB/); a step whose output file exists
# is skipped, and a stopped training run is resumed (`--resume`), so rerunning a job after an
# interruption continues it. JOB names and their expected cost on the project's 2-core machine
# (reference backend, undisturbed; doc/*.md give the single-run times they are scaled from):
#   acl-seeds        acl-quick trained with SEEDS (5) training seeds, each evaluated on the
#                    task it learns (2-way 1-shot, held-out hershey classes; 5 runs × 64
#                    episodes): the training-seed spread next to the evaluation spread ~30 min
#   acl-baselines    SGD, Adam, EWC, online EWC, SI, LwF tuned over lr × epochs × their own
#                    coefficient on fmnist-val (`--select`, grown past its edges, the grid in
#                    the JSON), replay with buffers of 10 and 50 (lr × epochs), on Split-FMNIST
#                    DIL (5 tasks, 15 shots) and CIL (2 and 5 tasks, 5 shots); then each
#                    setting's final table on the test file, RUNS runs, next to its ACL models
#                    (SETTING-final.json); acl-baselines.json gathers the grids, the runs
#                    and the paired ACL-minus-baseline differences                 ~10 h
#   acl-emergence    the paper's Sec. 4.2 curve: noacl-2task.conf (hanzi and hershey, 2 tasks, no
#                    ACL term) meta-trained for 6 000 steps with SEEDS seeds from each seed's
#                    stage 1 (2-way 1-shot; from scratch it sat at chance), validated every
#                    100 steps; metrics.csv's val_main_* and val_bwd_* (the A-after-B
#                    accuracy) columns plotted per domain over the seeds; acl-emergence.json
#                    (tools/scripts/acl-emergence-summary.py) has them per step and seed ~6 h
#   acl-split-hanzi  Split-hanzi domain-incremental at 5, 10 and 20 tasks (10 runs), next to
#                    the paper's Split-Omniglot 92.3 / 82.0 / 67.6                 ~1 h
#   oct-ablations    Split-hanzi online, SEEDS (at most 8) seeds × {E = 4 (shipped), C = 0,
#                    E = 1} (doc/oct.md's five-seed table; oct-ablations.json)     ~45 min
#   oct-baselines    the online baselines tuned as the transformer: online SGD and Adam (Conv-4 +
#                    linear head) and the pi-transformer (E = 4) on Split-hanzi, their learning
#                    rates chosen on a validation stream (the val classes, stream seed 101) over
#                    a ladder grown by one step past a strictly best edge, then SEEDS seeds on
#                    the reported streams (model and stream seed s, as oct-ablations); and the
#                    paper's Split-FashionMNIST stream (60 x 1000, chunks of 50) with online SGD
#                    joining Adam (both tuned on a stream of seed 101 of the training images)
#                    and the pi-transformer at the paper's hyperparameters, SEEDS seeds each;
#                    oct-baselines.json holds the grids and every run's summary   ~2 h
#   oct-variants     the rest of doc/oct.md's single-seed tables over SEEDS seeds (model and
#                    stream seed s): Split-hanzi E = 2, E = 8, no image, the paper's mask and the
#                    2-token model, grouped with oct-ablations' E4 runs of the same seeds (run
#                    oct-ablations first); Split-FashionMNIST short (100 x 200, chunks of 10):
#                    the pi-transformer, online SGD and online Adam at the rates oct-baselines
#                    chose; `metacl online --report NAME=DIR,...` tables and JSON   ~1.5 h
#   oct-freeze       the paper's stop-gradient ablation (its Fig. 5): Split-hanzi, E = 4, SEEDS
#                    seeds × no gradient step from example 2 000, 5 000 or 10 000 of the
#                    20 000 on (online.freeze_at), reported next to oct-ablations' E4 runs of
#                    the same seeds (run oct-ablations first for them)             ~4 h
#   oct-recurring    the paper's emergence claim where it can appear: Split-hanzi with a fixed
#                    pool of 50 classes (stream.pool = 50), 60 tasks of 1000 examples, hanzi
#                    prepared with 100 renderings per class (no image repeats within a task),
#                    E = 4, SEEDS seeds × {C = 500, C = 0}; the report gives the within-task
#                    accuracy at the 5th example for early and late tasks        ~16 h
#   smn-wcst         WCST, 10 runs of 10 rules, Sparse-MetaNet against the online and the
#                    offline agents (the paper's Fig. 3 comparison), the baselines'
#                    learning rates by the grid search                             ~15 min
#   smn-seeds        the WCST agent (smn-wcst.conf, 300 windows) trained with SEEDS seeds
#                    (model, training and environment seed s; s = 1 is the shipped recipe),
#                    each evaluated on WCST (10 runs of 10 rules): the training-seed spread ~15 min
#   smn-online       Online-X, 5 runs of 50 tasks per stream (lengths 1-15, 20-35, 40-55,
#                    60-75 rounds) on hanzi, hershey, kanji, the stroke sets rendered with 256
#                    instances a class (no image repeats within a task), the baselines' rates
#                    chosen on hanzi's validation classes                          ~6 h
#   lm-nofast        the Transformer-XL of lm-text.conf trained the same 6 000 steps without
#                    fast weights (model.fast = 0), then static and dynamic evaluation of it and
#                    static, dynamic and Sparse-MetaNet evaluation of the shipped model (the
#                    same recipe with fast weights) on the pinned switching stream and on one
#                    domain at a time                                              ~2 h
#   lm-quick-seeds   the LM's cheap variant: lm-text.conf cut to 1 500 steps (a quarter of the
#                    shipped run), trained with seeds 1..SEEDS (model, data and training seed
#                    s), each read static / dynamic / Sparse-MetaNet on the main job's switching
#                    stream as lm-seeds does: the training-seed spread next to the evaluation's
#                    (lm-quick-seeds.json). A seed whose reading exists is not trained again, so
#                    a session can carry finished seeds over as seedS-switching.json  ~2 h
#   lm-seeds         lm-text.conf trained with seeds 2..SEEDS (seed 1: the shipped model), each
#                    read static / dynamic / Sparse-MetaNet on the main job's switching stream:
#                    the training-seed spread of the LM's bits per byte (lm-seeds.json) ~5 h
# Environment: METACL (./metacl), OUT (runs/review), SEEDS (5), RUNS (evaluation runs, 10),
# DOMAINS (smn-online's domains, default "hanzi hershey kanji"), STATE (data/review-state: the
# finished steps of jobs that span sessions, tools/scripts/review-state.sh).
set -eu
METACL=${METACL:-./metacl}
OUT=${OUT:-runs/review}
SEEDS=${SEEDS:-5}
RUNS=${RUNS:-10}
CK=data/checkpoints
STATE=${STATE:-data/review-state}
[ $# -gt 0 ] || { sed -n '2,/^set -eu/p' "$0" | sed '$d'; exit 2; }

# train FAMILY CONFIG DIR [--set k=v ...]: train into DIR, or resume it, or skip a finished run
train() {
    fam=$1 conf=$2 dir=$3
    shift 3
    if [ -e "$dir/.done" ]; then return 0; fi
    if [ -s "$dir/last.ckpt" ]; then
        "$METACL" train "$fam" --resume "$dir" --quiet
    else
        "$METACL" train "$fam" --config "$conf" --out "$dir" --quiet "$@"
    fi
    : >"$dir/.done"
}
# online DIR CONFIG [--set k=v ...]: an online (OCT) run into DIR, or resume it, or skip a
# finished one
online() {
    d=$1 conf=$2
    shift 2
    [ -e "$d/.done" ] && return 0
    if [ -s "$d/last.ckpt" ]; then "$METACL" online --resume "$d" --quiet
    else "$METACL" online --config "$conf" --out "$d" --quiet "$@"; fi
    : >"$d/.done"
}
# tune NAME CONF LO HI [--set k=v ...]: online runs NAME-lrX of CONF (and the settings) on the
# validation stream $VAL for the learning rates of the ladder from LO to HI, grown by one ladder
# step past a strictly best edge (lowest cum_nll) until the best is inside or the ladder ends;
# the grid and the choice go to $J/NAME-grid.json, the chosen rate is printed
LADDER="1e-6 3e-6 1e-5 3e-5 1e-4 3e-4 1e-3 3e-3 1e-2 3e-2 0.1 0.3 1"
tune() {
    tn=$1 tc=$2 lo=$3 hi=$4
    shift 4
    while :; do
        inside=0
        for lr in $LADDER; do
            [ "$lr" = "$lo" ] && inside=1
            # shellcheck disable=SC2086 # $VAL holds the validation stream's settings
            [ $inside = 1 ] && online "$J/val-$tn-lr$lr" "$tc" --set train.lr="$lr" $VAL "$@" >&2
            [ "$lr" = "$hi" ] && break
        done
        next=$(python3 -c 'import json, sys
name, lo, hi, ladder, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5]
pts = ladder[ladder.index(lo):ladder.index(hi) + 1]
nll = [json.load(open("%s-lr%s/summary.json" % (name, x)))["cum_nll"] for x in pts]
best = min(range(len(pts)), key=lambda i: nll[i])
strict = lambda i, j: nll[i] < nll[j]
if best == 0 and len(pts) > 1 and strict(0, 1) and ladder.index(lo) > 0:
    print("grow %s %s" % (ladder[ladder.index(lo) - 1], hi))
elif best == len(pts) - 1 and len(pts) > 1 and strict(best, best - 1) and ladder.index(hi) < len(ladder) - 1:
    print("grow %s %s" % (lo, ladder[ladder.index(hi) + 1]))
else:
    json.dump({"name": name.rsplit("/val-", 1)[1], "grid_lr": [float(x) for x in pts], "grid_cum_nll": nll,
               "chosen_lr": float(pts[best]), "val": sys.argv[6]}, open(out + ".tmp", "w"), indent=1)
    print("done %s" % pts[best])' "$J/val-$tn" "$lo" "$hi" "$LADDER" "$J/$tn-grid.json" "$VAL")
        case $next in
        grow*) lo=$(echo "$next" | cut -d" " -f2) hi=$(echo "$next" | cut -d" " -f3) ;;
        done*) mv "$J/$tn-grid.json.tmp" "$J/$tn-grid.json"; echo "${next#done }"; return 0 ;;
        esac
    done
}
# step FILE CMD...: run CMD with stdout to FILE unless FILE exists (written atomically)
step() {
    step_out=$1 # not "f": sh has no local variables, and the jobs use $f
    shift
    [ -s "$step_out" ] && return 0
    "$@" >"$step_out.tmp"
    mv "$step_out.tmp" "$step_out"
}

# lm_seeds_json JOB STEPS: the JSON of an LM seeds job from its $J/seedS-switching.json readings
# (seeds and the bits per byte of each mode, in seed order, and the paired differences of each
# seed's Sparse-MetaNet reading from its static and dynamic ones)
lm_seeds_json() {
    python3 -c 'import json, sys, glob
out = {"job": "tools/scripts/review-runs.sh " + sys.argv[2], "steps": int(sys.argv[3]), "seeds": [],
       "static": [], "dynamic": [], "smn": [], "smn_minus_static": [], "smn_minus_dynamic": []}
def seed(f): return int(f.rsplit("/seed", 1)[1].split("-")[0])
for f in sorted(glob.glob(sys.argv[1] + "/seed*-switching.json"), key=seed):
    d = json.load(open(f))
    out["seeds"].append(seed(f))
    for m in ("static", "dynamic", "smn"):
        out[m].append(d["modes"][m]["bpc"])
    out["smn_minus_static"].append(out["smn"][-1] - out["static"][-1])
    out["smn_minus_dynamic"].append(out["smn"][-1] - out["dynamic"][-1])
json.dump(out, sys.stdout, indent=1)' "$J" "$1" "$2"
}

for job; do
    case $job in acl-seeds | acl-baselines | acl-emergence | acl-split-hanzi | oct-ablations | oct-baselines | oct-variants | oct-freeze | oct-recurring | smn-wcst | smn-seeds | smn-online | lm-nofast | lm-quick-seeds | lm-seeds) ;;
    *) echo "review-runs: unknown job '$job' (see the header of $0)" >&2; exit 2 ;;
    esac
    J=$OUT/$job
    mkdir -p "$J"
    # finished steps an earlier session saved (tools/scripts/review-state.sh save JOB): copied in
    # without overwriting, so their steps are skipped and the job goes on where it stopped
    if [ -d "$STATE/$job" ]; then cp -R -n "$STATE/$job/." "$J/"; fi
    case $job in
    acl-seeds)
        s=1
        while [ $s -le "$SEEDS" ]; do
            train acl data/configs/acl-quick.conf "$J/seed$s" --set train.seed=$s --set model.seed=$s
            s=$((s + 1))
        done
        # every seed on the task it was trained for (2-way 1-shot on held-out hershey classes),
        # 5 runs of the same episodes each, in one table and JSON
        # shellcheck disable=SC2046 # one --ckpt per seed
        step "$J/eval.md" "$METACL" eval acl --protocol seq --tasks 1 --data hershey --n-way 2 --k-shot 1 \
            --runs 5 --episodes 64 $(s=1; while [ $s -le "$SEEDS" ]; do printf ' --ckpt seed%s=%s/seed%s/best.ckpt' $s "$J" $s
            s=$((s + 1)); done) --json-out "$J/eval.json" --quiet ;;
    acl-baselines)
        # three settings: Split-FMNIST domain-incremental 5 tasks x 15 shots, class-incremental 2
        # and 5 tasks x 5 shots; contexts from the 55 000 training images outside fmnist-val
        for st in "dil5:split-dil 5 15" "cil2:split-cil 2 5" "cil5:split-cil 5 5"; do
            name=${st%%:*} set=${st#*:}
            proto=$(echo "$set" | cut -d" " -f1) T=$(echo "$set" | cut -d" " -f2) K=$(echo "$set" | cut -d" " -f3)
            P="--protocol $proto --data fmnist-val --tasks $T --k-shot $K --final-only"
            # every method's whole grid on the held-out val images (lr x epochs x its own value,
            # grown past an edge the best sits on; replay: lr x epochs at buffers 10 and 50), 3
            # runs a point; the grids are the JSON's selection blocks
            specs=""
            for m in sgd adam ewc ewc-online si lwf replay:buffer=10 replay:buffer=50; do
                f=$J/$name-select-$(echo "$m" | tr -d :=)
                case $m in *:*) spec="$m,regime=shots" ;; *) spec="$m:regime=shots" ;; esac
                # shellcheck disable=SC2086
                step "$f.md" "$METACL" eval acl $P --runs 3 --select --baseline "$spec" --json-out "$f.json" --quiet
                specs="$specs --baseline $(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["models"][0]; s = m["selection"]; p = s["points"][s["chosen"]]
kv = ["lr=%g" % p["lr"], "epochs=%d" % p["epochs"], "regime=shots"]
if s.get("hyperparameter"): kv.append("%s=%g" % (s["hyperparameter"], p[s["hyperparameter"]]))
spec = sys.argv[2]
print(spec.split(":")[0] + ":" + ",".join(kv + spec.split(":")[1:]))' "$f.json" "$m")"
            done
            # the chosen baselines on the test file, RUNS runs (the same episodes for every
            # model: the paired comparisons of the doc), next to the ACL models of the setting
            case $name in
            dil5) ck="--ckpt ACL-5task-gen=$CK/acl-split5-gen.ckpt" ;;
            cil2) ck="--ckpt ACL-2task-gen=$CK/acl-2task-gen.ckpt --ckpt ACL-CIL2-gen=$CK/acl-cil2-gen.ckpt" ;;
            *) ck="--ckpt ACL-CIL10-gen=$CK/acl-cil10-gen.ckpt" ;;
            esac
            # shellcheck disable=SC2086 # $P, $ck and $specs hold options
            step "$J/$name-final.md" "$METACL" eval acl $P --runs "$RUNS" $ck $specs --json-out "$J/$name-final.json" --quiet
        done
        # one JSON for the doc: per setting each method's grid (its lr, epochs and own values,
        # the point chosen), every model's per-run ACC and, paired on the runs (the same
        # episodes for every model), each ACL model's ACC minus each baseline's
        step "$J/acl-baselines.json" python3 -c 'import json, sys
J = sys.argv[1]
out = {"job": "tools/scripts/review-runs.sh acl-baselines", "settings": []}
for name in ("dil5", "cil2", "cil5"):
    f = json.load(open("%s/%s-final.json" % (J, name)))
    st = {"name": name, "protocol": f["protocol"], "tasks": f["tasks"], "runs": f["runs"],
          "seeds": f["provenance"]["seeds"], "grids": [], "models": [], "paired": []}
    for m in ("sgd", "adam", "ewc", "ewc-online", "si", "lwf", "replaybuffer10", "replaybuffer50"):
        s = json.load(open("%s/%s-select-%s.json" % (J, name, m)))["models"][0]["selection"]
        hp = s.get("hyperparameter")
        g = {"name": m, "points": s["n"], "first_grid_points": s["n_grid"], "hyperparameter": hp,
             "lr": sorted({q["lr"] for q in s["points"]}), "epochs": sorted({q["epochs"] for q in s["points"]}),
             "chosen": s["points"][s["chosen"]]}
        if hp:
            g[hp] = sorted({q[hp] for q in s["points"]})
        st["grids"].append(g)
    for mo in f["models"]:
        st["models"].append({"name": mo["name"], "kind": mo["kind"], "acc_runs": mo["acc_runs"]})
    for a in f["models"]:
        if a["kind"] != "acl":
            continue
        for b in f["models"]:
            if b["kind"] != "acl":
                st["paired"].append({"name": a["name"] + " - " + b["name"],
                                     "acc_diff": [x - y for x, y in zip(a["acc_runs"], b["acc_runs"])]})
    out["settings"].append(st)
json.dump(out, sys.stdout, indent=1)' "$J" ;;
    acl-emergence)
        s=1
        while [ $s -le "$SEEDS" ]; do
            # from scratch the 5-way 5-shot 2-task objective sat at chance (seed 1: 1 600 steps,
            # training loss flat at 1.29, validation 0.20-0.23), as the chain's first stage did
            # until its 2-way 1-shot curriculum (doc/acl.md, "The plateau"): so each seed
            # starts from its own stage 1 (2-way 1-shot, 1 task, 1 500 steps; it never sees the
            # 5-way 2-task sequences whose in-context learning and forgetting the curve shows)
            train acl data/configs/acl-s1-2way1shot.conf "$J/s1-seed$s" --set model.seed=$s --set train.seed=$s
            train acl data/configs/noacl-2task.conf "$J/seed$s" --set train.init="$J/s1-seed$s/best.ckpt" \
                --set train.steps=6000 --set train.val_every=100 --set model.seed=$s --set train.seed=$s
            s=$((s + 1))
        done
        for c in main_hanzi main_hershey bwd_hanzi bwd_hershey; do
            [ -s "$J/val_$c.png" ] && continue
            case $c in main_*) what="in-context learning" ;; *) what="A after B" ;; esac
            "$METACL" plot "$J"/seed* --y "val_$c" --chance 0.2 --out "$J/val_$c.png" \
                --title "$what, ${c#*_} (held-out classes), meta-training without the ACL term"
        done
        # per validation step and seed: in-context learning, A after B and their difference
        # (the forgetting), and the paired changes between steps (doc/acl.md)
        step "$J/acl-emergence.json" python3 tools/scripts/acl-emergence-summary.py "$J" ;;
    acl-split-hanzi)
        for t in 5 10 20; do
            step "$J/dil$t.md" "$METACL" eval acl --protocol split-dil --data hanzi --tasks $t --k-shot 5 \
                --runs "$RUNS" --final-only --ckpt ACL-5task-gen="$CK/acl-split5-gen.ckpt" \
                --ckpt ACL-2task-gen="$CK/acl-2task-gen.ckpt" --baseline sgd --baseline adam \
                --json-out "$J/dil$t.json" --quiet
        done ;;
    oct-variants)
        H=data/configs/oct-split-hanzi.conf F=data/configs/oct-split-fmnist.conf
        CNN="--set model.arch=cnn --set online.streams=1"
        s=1
        while [ $s -le "$SEEDS" ]; do
            S="--set model.seed=$s --set stream.seed=$s"
            # shellcheck disable=SC2086 # $S and $CNN hold options
            {
                online "$J/hanzi-E2-seed$s" $H --set online.streams=2 $S
                online "$J/hanzi-E8-seed$s" $H --set online.streams=8 $S
                online "$J/hanzi-noimage-seed$s" $H --set model.no_image=1 $S
                online "$J/hanzi-papermask-seed$s" $H --set model.pi_mask=1 $S
                online "$J/hanzi-2token-seed$s" $H --set model.arch=two_token --set model.alibi=1 --set model.window=1000 $S
                online "$J/fmnist-pi-seed$s" $F $S
                online "$J/fmnist-sgd-seed$s" $F $CNN --set online.optimizer=sgd --set train.lr=0.1 $S
                online "$J/fmnist-adam-seed$s" $F $CNN --set online.optimizer=adam --set train.lr=1e-2 $S
            }
            s=$((s + 1))
        done
        # NAME=DIR,DIR,... of the seeds 1..SEEDS
        grp() { printf '%s=' "$1"; s=1; while [ $s -le "$SEEDS" ]; do printf '%s%s' "$([ $s = 1 ] || echo ,)" "$2-seed$s"; s=$((s + 1)); done; }
        A=$OUT/oct-ablations
        for fmt in md json; do
            o=""; [ $fmt = json ] && o=--json
            # shellcheck disable=SC2046,SC2086 # one --report per group
            step "$J/hanzi.$fmt" "$METACL" online --report "$(grp E4 "$A/E4")" --report "$(grp E2 "$J/hanzi-E2")" \
                --report "$(grp E8 "$J/hanzi-E8")" --report "$(grp no-image "$J/hanzi-noimage")" \
                --report "$(grp paper-mask "$J/hanzi-papermask")" --report "$(grp 2-token "$J/hanzi-2token")" $o
            # shellcheck disable=SC2086
            step "$J/fmnist-short.$fmt" "$METACL" online --report "$(grp pi-transformer "$J/fmnist-pi")" \
                --report "$(grp online-SGD-0.1 "$J/fmnist-sgd")" --report "$(grp online-Adam-1e-2 "$J/fmnist-adam")" $o
        done ;;
    oct-ablations)
        s=1
        while [ $s -le "$SEEDS" ]; do
            for v in "E4:" "C0:--set model.window=0" "E1:--set online.streams=1"; do
                name=${v%%:*} set=${v#*:}
                # shellcheck disable=SC2086
                online "$J/$name-seed$s" data/configs/oct-split-hanzi.conf --set model.seed=$s --set stream.seed=$s $set
            done
            s=$((s + 1))
        done
        # one report per variant (`online --report` takes at most 8 runs), and every run's
        # summary gathered into one JSON (the doc's five-seed table is tied to it)
        for v in E4 C0 E1; do
            # shellcheck disable=SC2046 # one --report per run directory
            step "$J/report-$v.md" "$METACL" online $(for d in "$J/$v"-seed*; do printf ' --report %s' "$d"; done)
        done
        step "$J/oct-ablations.json" python3 -c 'import json, sys
out = {"job": "tools/scripts/review-runs.sh oct-ablations", "variants": []}
for v in ("E4", "C0", "E1"):
    runs = [json.load(open(f)) for f in sorted(a for a in sys.argv[1:] if "/%s-seed" % v in a)]
    d = {"name": v}
    for k in ("cum_nll", "online_acc", "early_task_acc", "late_task_acc", "early_acc_at_3to7", "late_acc_at_3to7"):
        d[k] = [r[k] for r in runs]
    out["variants"].append(d)
json.dump(out, sys.stdout, indent=1)' "$J"/*-seed*/summary.json ;;
    oct-baselines)
        H=data/configs/oct-split-hanzi.conf F=data/configs/oct-split-fmnist.conf
        CNN="--set model.arch=cnn --set online.streams=1"
        PAPER="--set stream.per_task=1000 --set stream.tasks=60 --set train.batch=50"
        # Split-hanzi: the validation stream draws its tasks from the val classes
        VAL="--set data.split=val --set stream.seed=101 --set model.seed=101"
        # shellcheck disable=SC2086 # $CNN, $PAPER hold settings
        {
        lr_pi=$(tune hanzi-pi $H 3e-4 3e-3)
        lr_sgd=$(tune hanzi-sgd $H 1e-2 0.1 $CNN --set online.optimizer=sgd)
        lr_adam=$(tune hanzi-adam $H 3e-4 3e-3 $CNN --set online.optimizer=adam)
        # Split-FashionMNIST has no val split: a stream of the training images no reported
        # stream draws (seed 101)
        VAL="--set stream.seed=101 --set model.seed=101"
        lr_fsgd=$(tune fmnist-paper-sgd $F 1e-2 0.1 $PAPER $CNN --set online.optimizer=sgd --set train.log_every=10)
        lr_fadam=$(tune fmnist-paper-adam $F 3e-4 3e-3 $PAPER $CNN --set online.optimizer=adam --set train.log_every=10)
        s=1
        while [ $s -le "$SEEDS" ]; do
            S="--set model.seed=$s --set stream.seed=$s"
            # the pi-transformer at the config's rate is oct-ablations' E4 run of the seed
            e4=$OUT/oct-ablations/E4-seed$s
            if [ "$lr_pi" = 1e-3 ] && [ -e "$e4/.done" ]; then
                [ -e "$J/hanzi-pi-seed$s" ] || ln -s "$(cd "$e4" && pwd)" "$J/hanzi-pi-seed$s"
            else online "$J/hanzi-pi-seed$s" $H --set train.lr="$lr_pi" $S; fi
            online "$J/hanzi-sgd-seed$s" $H $CNN --set online.optimizer=sgd --set train.lr="$lr_sgd" $S
            online "$J/hanzi-adam-seed$s" $H $CNN --set online.optimizer=adam --set train.lr="$lr_adam" $S
            # the paper's hyperparameters for the pi-transformer (Sec. 4: lr 1e-4, 8 replay streams)
            online "$J/fmnist-paper-pi-seed$s" $F $PAPER --set online.streams=8 --set train.lr=1e-4 \
                --set train.log_every=80 $S
            online "$J/fmnist-paper-sgd-seed$s" $F $PAPER $CNN --set online.optimizer=sgd --set train.lr="$lr_fsgd" \
                --set train.log_every=10 $S
            online "$J/fmnist-paper-adam-seed$s" $F $PAPER $CNN --set online.optimizer=adam \
                --set train.lr="$lr_fadam" --set train.log_every=10 $S
            s=$((s + 1))
        done
        }
        for v in hanzi-pi hanzi-sgd hanzi-adam fmnist-paper-pi fmnist-paper-sgd fmnist-paper-adam; do
            # shellcheck disable=SC2046 # one --report per run directory
            step "$J/report-$v.md" "$METACL" online $(for d in "$J/$v"-seed*; do printf ' --report %s' "$d"; done)
        done
        step "$J/oct-baselines.json" python3 -c 'import json, sys, glob
J = sys.argv[1]
out = {"job": "tools/scripts/review-runs.sh oct-baselines", "grids": [], "variants": []}
for v in ("hanzi-pi", "hanzi-sgd", "hanzi-adam", "fmnist-paper-sgd", "fmnist-paper-adam"):
    out["grids"].append(json.load(open("%s/%s-grid.json" % (J, v))))
for v in ("hanzi-pi", "hanzi-sgd", "hanzi-adam", "fmnist-paper-pi", "fmnist-paper-sgd", "fmnist-paper-adam"):
    runs = [json.load(open(f)) for f in sorted(glob.glob("%s/%s-seed*/summary.json" % (J, v)))]
    d = {"name": v, "seeds": [int(r["run"].rsplit("seed", 1)[1]) for r in runs]}
    for k in ("cum_nll", "online_acc", "early_task_acc", "late_task_acc", "early_acc_at_3to7", "late_acc_at_3to7"):
        d[k] = [r[k] for r in runs]
    out["variants"].append(d)
# paired on the seeds (the same streams): the transformer minus each baseline, in nats and
# relative to the baseline (the issue target: at least 10 % below online Adam)
V = {v["name"]: v for v in out["variants"]}
out["paired"] = []
for a, b in (("hanzi-pi", "hanzi-sgd"), ("hanzi-pi", "hanzi-adam"), ("fmnist-paper-pi", "fmnist-paper-sgd"),
             ("fmnist-paper-pi", "fmnist-paper-adam")):
    assert V[a]["seeds"] == V[b]["seeds"], "the same seeds"
    x, y = V[a]["cum_nll"], V[b]["cum_nll"]
    out["paired"].append({"name": a + " - " + b, "cum_nll_diff": [p - q for p, q in zip(x, y)],
                          "cum_nll_rel": [(p - q) / q for p, q in zip(x, y)]})
json.dump(out, sys.stdout, indent=1)' "$J" ;;
    oct-freeze)
        # the reference (no freeze) is oct-ablations' E4-seedS: the same config and seeds
        s=1
        while [ $s -le "$SEEDS" ]; do
            for p in 2000 5000 10000; do
                online "$J/freeze$p-seed$s" data/configs/oct-split-hanzi.conf --set model.seed=$s --set stream.seed=$s \
                    --set online.freeze_at=$p
            done
            s=$((s + 1))
        done
        # one report per freeze point next to the unfrozen E4 runs (at most 8 runs a report)
        for p in 2000 5000 10000; do
            # shellcheck disable=SC2046 # one --report per run directory
            step "$J/report-$p.md" "$METACL" online $(for d in "$J/freeze$p"-seed*; do
                [ -e "$d/.done" ] && printf ' --report %s' "$d"; done)
        done
        # shellcheck disable=SC2046 # one --report per run directory
        step "$J/report-E4.md" "$METACL" online $(for d in "$OUT"/oct-ablations/E4-seed*; do
            [ -e "$d/.done" ] && printf ' --report %s' "$d"; done)
        # seed 1 of each freeze point next to the unfrozen run: per-task and within-task figures
        [ -s "$J/figures/per-task.png" ] || "$METACL" online --report "$OUT/oct-ablations/E4-seed1" \
            --report "$J/freeze2000-seed1" --report "$J/freeze5000-seed1" --report "$J/freeze10000-seed1" \
            --figures "$J/figures" >/dev/null
        # every run's summary in one JSON (the doc's table is tied to it); after_freeze: the mean
        # per-task accuracy over the tasks that start at or after P, for the unfrozen runs too
        step "$J/oct-freeze.json" python3 -c 'import json, sys, glob
J, A = sys.argv[1], sys.argv[2]
out = {"job": "tools/scripts/review-runs.sh oct-freeze", "variants": []}
for v, P in (("E4", 0), ("freeze2000", 2000), ("freeze5000", 5000), ("freeze10000", 10000)):
    runs = [json.load(open(f)) for f in sorted(glob.glob("%s/%s-seed*/summary.json" % (A if v == "E4" else J, v)))]
    d = {"name": v, "freeze_at": P, "seeds": [int(r["run"].rsplit("seed", 1)[1]) for r in runs]}
    for k in ("cum_nll", "online_acc", "late_task_acc", "late_acc_at_3to7"):
        d[k] = [r[k] for r in runs]
    for Q in (2000, 5000, 10000):
        t = [r["task_acc"][Q // (r["examples"] // len(r["task_acc"])):] for r in runs]
        d["after_%d" % Q] = [sum(x) / len(x) for x in t]
    if P:  # paired on the seeds: the frozen run minus the unfrozen one, after its own P
        e4 = out["variants"][0]
        assert d["seeds"] == e4["seeds"], "the same seeds"
        d["after_own"] = d["after_%d" % P]
        d["after_own_minus_E4"] = [a - b for a, b in zip(d["after_own"], e4["after_%d" % P])]
        d["cum_nll_minus_E4"] = [a - b for a, b in zip(d["cum_nll"], e4["cum_nll"])]
    out["variants"].append(d)
json.dump(out, sys.stdout, indent=1)' "$J" "$OUT/oct-ablations" ;;
    oct-recurring)
        D=$J/data # hanzi with 100 renderings per class (the tgz is copied when data/cache has it)
        if [ ! -s "$D/hanzi/images.idx" ]; then
            mkdir -p "$D"
            T=hanzi-writer-data-2.0.1.tgz
            [ -s "data/cache/$T" ] && [ ! -s "$D/$T" ] && cp "data/cache/$T" "$D/"
            "$METACL" data prepare hanzi --instances 100 --data-dir "$D"
        fi
        s=1
        while [ $s -le "$SEEDS" ]; do
            for v in "C500:" "C0:--set model.window=0"; do
                name=${v%%:*} set=${v#*:}
                # shellcheck disable=SC2086
                online "$J/$name-seed$s" data/configs/oct-split-hanzi.conf --set data.dir="$D" --set stream.pool=50 \
                    --set stream.tasks=60 --set stream.per_task=1000 --set model.seed=$s --set stream.seed=$s $set
            done
            s=$((s + 1))
        done
        # one report per variant (`online --report` takes at most 8 runs), seed 1's figures of
        # both, and every run's summary in one JSON (the doc's table is tied to it)
        for v in C500 C0; do
            # shellcheck disable=SC2046 # one --report per run directory
            step "$J/report-$v.md" "$METACL" online $(for d in "$J/$v"-seed*; do printf ' --report %s' "$d"; done)
        done
        [ -s "$J/figures/within-task.png" ] || "$METACL" online --report "$J/C500-seed1" --report "$J/C0-seed1" \
            --figures "$J/figures" >/dev/null
        step "$J/oct-recurring.json" python3 -c 'import json, sys, glob
out = {"job": "tools/scripts/review-runs.sh oct-recurring", "variants": []}
for v in ("C500", "C0"):
    runs = [json.load(open(f)) for f in sorted(glob.glob("%s/%s-seed*/summary.json" % (sys.argv[1], v)))]
    d = {"name": v, "seeds": [int(r["run"].rsplit("seed", 1)[1]) for r in runs]}
    for k in ("cum_nll", "online_acc", "early_task_acc", "late_task_acc", "early_acc_at_5th", "late_acc_at_5th",
              "early_acc_at_3to7", "late_acc_at_3to7"):
        d[k] = [r[k] for r in runs]
    d["late_minus_early_3to7"] = [a - b for a, b in zip(d["late_acc_at_3to7"], d["early_acc_at_3to7"])]
    out["variants"].append(d)
json.dump(out, sys.stdout, indent=1)' "$J" ;;
    smn-wcst)
        # every finished run kept in $J/cache (eval smn --cache): an interrupted domain resumes at
        # its last finished run with the same binary
        # the baselines' learning rates by the grid search (3 validation runs of other seeds,
        # grown at its edges; the points in the JSON's grid_lr / grid_score)
        step "$J/wcst.md" "$METACL" eval smn --protocol wcst --ckpt Sparse-MetaNet="$CK/smn-wcst.ckpt" \
            --baseline smn-scratch --baseline adam --baseline rmsprop --baseline offline-adam --val-runs 3 \
            --runs 10 --tasks 10 --max-steps 1500 --figures "$J/figures" --json-out "$J/wcst.json" --quiet ;;
    smn-seeds)
        s=1
        while [ $s -le "$SEEDS" ]; do
            train smn data/configs/smn-wcst.conf "$J/seed$s" --set model.seed=$s --set train.seed=$s --set wcst.seed=$s
            s=$((s + 1))
        done
        # shellcheck disable=SC2046 # one --ckpt per seed
        step "$J/wcst.md" "$METACL" eval smn --protocol wcst --runs 10 --tasks 10 --max-steps 1500 \
            $(s=1; while [ $s -le "$SEEDS" ]; do printf ' --ckpt seed%s=%s/seed%s/last.ckpt' $s "$J" $s
            s=$((s + 1)); done) --json-out "$J/wcst.json" --quiet ;;
    smn-online)
        # the stroke sets rendered with 256 instances a class: a task of at most 75 rounds of 16
        # images over 5 classes draws at most 1 200 images from the 5 x 256 of its classes,
        # without replacement (src/data/streams.c), so no image repeats within a task
        D=$J/data
        doms=${DOMAINS:-hanzi hershey kanji}
        for dom in $doms; do
            [ -s "$D/$dom/images.idx" ] && continue
            mkdir -p "$D"
            for t in data/cache/*.tgz; do [ -s "$t" ] && [ ! -s "$D/${t##*/}" ] && cp "$t" "$D/"; done
            "$METACL" data prepare "$dom" --instances 256 --data-dir "$D"
        done
        # every finished run kept in $J/cache (eval smn --cache): an interrupted domain resumes at
        # its last finished run with the same binary
        # the baselines' learning rates by the grid search on hanzi's validation classes (2 runs
        # a point, grown at its edges; the JSON's grid), then used for every domain
        # DOMAINS (default: all three) picks domains; without hanzi, the three rates come from
        # its committed result (data/fixtures/review/smn-online-hanzi.json, an earlier session's)
        ft='' po='' pr=''
        case " $doms " in
            *" hanzi "*) ;;
            *) lrs=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["agents"]
print(" ".join(":%g" % x["lr"] for x in a[1:4]))' data/fixtures/review/smn-online-hanzi.json)
               ft=$(echo "$lrs" | cut -d" " -f1) po=$(echo "$lrs" | cut -d" " -f2) pr=$(echo "$lrs" | cut -d" " -f3) ;;
        esac
        for dom in $doms; do
            grid=''
            [ $dom = hanzi ] && grid="--val-runs 2"
            # shellcheck disable=SC2086 # $grid holds options
            step "$J/online-$dom.md" "$METACL" eval smn --protocol online --ckpt Sparse-MetaNet="$CK/smn-online-hanzi.ckpt" \
                --baseline online:"$CK/smn-online-hanzi-ft.ckpt$ft" --baseline pretrain-online:"$CK/smn-pretrain-hanzi.ckpt$po" \
                --baseline pretrain-reset:"$CK/smn-pretrain-hanzi.ckpt$pr" --data $dom --data-dir "$D" \
                --lengths 1-15,20-35,40-55,60-75 --tasks 50 --runs 5 --round 16 $grid --figures "$J/figures-$dom" \
                --cache "$J/cache" --json-out "$J/online-$dom.json" --quiet
            if [ $dom = hanzi ]; then # the chosen learning rates of the three baselines, as ":LR"
                lrs=$(python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))["agents"]
print(" ".join(":%g" % x["lr"] for x in a[1:4]))' "$J/online-hanzi.json")
                ft=$(echo "$lrs" | cut -d" " -f1) po=$(echo "$lrs" | cut -d" " -f2) pr=$(echo "$lrs" | cut -d" " -f3)
            fi
        done ;;
    lm-nofast)
        # the model without fast weights, trained like the shipped one; the shipped checkpoint
        # (data/checkpoints/lm-text.ckpt, the same config and steps, doc/lm.md) is the pair's
        # model with fast weights
        train lm data/configs/lm-text.conf "$J/nofast" --set model.fast=0 --set model.fast_embed=0
        for m in fast nofast; do
            # the Sparse-MetaNet write settings of the main job (doc/lm.md section 3: chosen on valid)
            if [ $m = fast ]; then ck=$CK/lm-text.ckpt modes="static,dynamic,smn --p 0.02 --gamma 0 --beta1 0 --beta2 1"
            else ck=$J/nofast/best.ckpt modes=static,dynamic; fi
            # shellcheck disable=SC2086 # $modes holds the mode list and the smn options
            step "$J/$m-switching.md" "$METACL" eval lm --ckpt "$ck" --data-dir data/text-eval \
                --block 10000 --max-chars 100000 --mode $modes --lr 0.03 --decay 0.001 \
                --json-out "$J/$m-switching.json" --quiet
            for d in dictionary python kjv; do
                # shellcheck disable=SC2086 # as above
                step "$J/$m-$d.md" "$METACL" eval lm --ckpt "$ck" --data-dir data/text-eval \
                    --domains "$d" --block 20000 --max-chars 20000 --mode $modes --lr 0.03 --decay 0.001 \
                    --json-out "$J/$m-$d.json" --quiet
            done
        done ;;
    lm-quick-seeds)
        s=1
        while [ $s -le "$SEEDS" ]; do
            if [ ! -s "$J/seed$s-switching.json" ]; then
                train lm data/configs/lm-text.conf "$J/seed$s" --set train.steps=1500 \
                    --set model.seed=$s --set data.seed=$s --set train.seed=$s
                # shellcheck disable=SC2086 # as lm-seeds below
                step "$J/seed$s-switching.md" "$METACL" eval lm --ckpt "$J/seed$s/best.ckpt" --data-dir data/text-eval \
                    --block 10000 --max-chars 100000 --mode static,dynamic,smn --p 0.02 --gamma 0 --beta1 0 \
                    --beta2 1 --lr 0.03 --decay 0.001 --json-out "$J/seed$s-switching.json" --quiet
            fi
            s=$((s + 1))
        done
        step "$J/lm-quick-seeds.json" lm_seeds_json lm-quick-seeds 1500 ;;
    lm-seeds)
        # lm-text.conf trained with seeds 2..SEEDS (model, data and training seed s); seed 1 is
        # the shipped model (data/checkpoints/lm-text.ckpt, the same config), not trained again
        s=2
        while [ $s -le "$SEEDS" ]; do
            train lm data/configs/lm-text.conf "$J/seed$s" --set model.seed=$s --set data.seed=$s --set train.seed=$s
            s=$((s + 1))
        done
        # each on the main job's switching stream, read the three ways with the main job's
        # settings (doc/lm.md section 3)
        s=1
        while [ $s -le "$SEEDS" ]; do
            ck=$J/seed$s/best.ckpt
            [ $s = 1 ] && ck=$CK/lm-text.ckpt
            step "$J/seed$s-switching.md" "$METACL" eval lm --ckpt "$ck" --data-dir data/text-eval --block 10000 \
                --max-chars 100000 --mode static,dynamic,smn --p 0.02 --gamma 0 --beta1 0 --beta2 1 --lr 0.03 \
                --decay 0.001 --json-out "$J/seed$s-switching.json" --quiet
            s=$((s + 1))
        done
        step "$J/lm-seeds.json" lm_seeds_json lm-seeds 6000 ;;
    *)
        echo "review-runs: unknown job '$job' (see the header of $0)" >&2
        exit 2 ;;
    esac
    echo "review-runs: $job done, in $J/"
done
