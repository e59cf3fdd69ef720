#!/usr/bin/env python3
"""acl-emergence-summary.py — the JSON of `review-runs.sh acl-emergence` (doc/acl.md, "The
emergence of in-context forgetting"): per validation step and seed, the in-context learning
accuracy of a task right after its own context (`val_main_<domain>`), the accuracy on the first
task after the second task's context ("A after B", `val_bwd_<domain>`), each the mean over the
domains, and their difference, the in-context forgetting; then the paired changes a verdict
needs (every seed is its own pair).

Usage: acl-emergence-summary.py JOBDIR [--steps 100,500,...]   (JSON on stdout)
JOBDIR holds seedS/metrics.csv for the finished seeds (seedS/.done); a seed still running is
left out and named in "unfinished". Exit 1 when no seed is finished or a finished seed lacks
one of the steps; 2 on bad arguments.
"""

import csv
import glob
import json
import os
import re
import sys

STEPS = [100, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000, 4500, 5000, 5500, 6000]
DOMAINS = ("hanzi", "hershey")


def read_seed(path):
    """metrics.csv -> {step: {column: float}} for the rows with a validation reading."""
    rows = {}
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r.get("val_score"):
                rows[int(r["step"])] = {k: float(v) for k, v in r.items() if v not in ("", None)}
    return rows


def main(argv):
    if len(argv) < 1 or argv[0].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    job, steps = argv[0], STEPS
    if "--steps" in argv:
        try:
            steps = [int(s) for s in argv[argv.index("--steps") + 1].split(",")]
        except (IndexError, ValueError):
            print("acl-emergence-summary: --steps wants N,N,...", file=sys.stderr)
            return 2
    seeds, unfinished = [], []
    found = sorted(int(m.group(1)) for m in (re.fullmatch(r"seed(\d+)", os.path.basename(d))
                                             for d in glob.glob(os.path.join(job, "seed*"))) if m)
    for s in found:
        done = os.path.exists(os.path.join(job, "seed%d" % s, ".done"))
        (seeds if done else unfinished).append(s)
    if not seeds:
        print("acl-emergence-summary: no finished seed in %s" % job, file=sys.stderr)
        return 1
    data = {s: read_seed(os.path.join(job, "seed%d" % s, "metrics.csv")) for s in seeds}
    per_step = []
    for st in steps:
        row = {"step": st, "main": [], "bwd": [], "forgetting": []}
        for dom in DOMAINS:
            row["main_" + dom], row["bwd_" + dom] = [], []
        for s in seeds:
            r = data[s].get(st)
            if r is None:
                print("acl-emergence-summary: seed %d has no validation at step %d" % (s, st), file=sys.stderr)
                return 1
            for dom in DOMAINS:
                row["main_" + dom].append(r["val_main_" + dom])
                row["bwd_" + dom].append(r["val_bwd_" + dom])
            main = sum(r["val_main_" + d] for d in DOMAINS) / len(DOMAINS)
            bwd = sum(r["val_bwd_" + d] for d in DOMAINS) / len(DOMAINS)
            row["main"].append(main)
            row["bwd"].append(bwd)
            row["forgetting"].append(main - bwd)
        per_step.append(row)
    first, last = per_step[0], per_step[-1]
    mid = min(per_step, key=lambda r: abs(r["step"] - steps[-1] / 2))
    changes = []
    for what in ("main", "bwd", "forgetting"):
        for a, b in ((first, last), (mid, last)):
            changes.append({"name": "%s %d-%d" % (what, a["step"], b["step"]),
                            "diff": [y - x for x, y in zip(a[what], b[what])]})
    changes.append({"name": "bwd %d - chance" % last["step"], "diff": [b - 0.2 for b in last["bwd"]]})
    out = {"job": "tools/scripts/review-runs.sh acl-emergence",
           "config": "data/configs/noacl-2task.conf (task.acl = 0), from each seed's stage 1 "
                     "data/configs/acl-s1-2way1shot.conf; 6000 steps, validation every 100",
           "seeds": seeds, "unfinished": unfinished, "chance": 0.2, "domains": list(DOMAINS),
           "validation": "train.val_batches = 8 fixed batches of 16 sequences of the held-out "
                         "meta-validation classes per domain",
           "per_step": per_step, "changes": changes}
    json.dump(out, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
