#!/usr/bin/env python3
"""bench-ratio-table.py DIR [--checks DOC] — the Markdown table of a set of PyTorch comparisons.

DIR holds the JSON records of `tools/torch/bench-acl-vs-torch.py --json`, one per bench, thread
count and run, named BENCH-tT-rR.json (BENCH acl, oct, smn or lm; e.g. lm-t2-r1.json), as
written by a measuring session (doc/reference-backend.md, "Against PyTorch: the quiet-machine
table"). Prints one table row per workload that both sides measured: our median and PyTorch's
median at each thread count in run 1, the ratio PyTorch / ours of each run, the ceiling of run 1
when the records have one (PyTorch's median over our roofline bound: the largest ratio any
implementation doing our arithmetic could show), and whether every ratio reaches the goal. With --checks DOC it prints instead the lines of
tests/doc-numbers.txt that tie DOC's copy of the table to the records (one line per record and
workload), so that a table pasted into a doc is checked against its JSON.

Exit status: 0, 1 when DIR holds no records or a record is unreadable, 2 on bad flags."""

import argparse
import glob
import json
import os
import re
import sys

ORDER = ("acl", "oct", "smn", "lm")
NAME = re.compile(r"^(acl|oct|smn|lm)-t(\d+)-r(\d+)\.json$")


def load(directory):
    """{(bench, threads, run): record} of the records in directory"""
    recs = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        m = NAME.match(os.path.basename(path))
        if not m:
            continue
        with open(path, encoding="utf-8") as f:
            recs[(m.group(1), int(m.group(2)), int(m.group(3)))] = json.load(f)
    return recs


def compared(rec):
    """the workloads of a record that both sides measured, in the record's order"""
    return [w for w in rec.get("workloads", []) if w.get("ours") and w.get("pytorch")]


def row(b, n, cols, runs, hole, ok, bounded):
    """the table row of workload n; hole = (thread index, run): that record's ratio printed
    as {0:.2f} and, for the first run, its two medians as {1:.1f} / {2:.1f} and its ceiling as
    {3:.2f} (a check's TEXT); bounded: the records carry ceilings (a column per thread count)"""
    cells = []
    for ti, by_run in enumerate(cols):
        w1 = by_run[runs[0]]
        if not w1:
            cells.append("–")
        else:
            ms = (w1["ours"]["ms_median"], w1["pytorch"]["ms_median"])
            nd = 2 if min(ms) < 10 else 1  # two decimals for the short workloads
            if hole == (ti, runs[0]):
                cells.append("{1:.%df} / {2:.%df}" % (nd, nd))
            else:
                cells.append("%.*f / %.*f" % (nd, ms[0], nd, ms[1]))
        cells.append(" / ".join("{0:.2f}" if hole == (ti, r) else
                                ("%.2f" % by_run[r]["ratio_median"] if by_run[r] else "–")
                                for r in runs))
        if bounded:  # run 1's ceiling: PyTorch's median over our roofline bound
            c = w1.get("ceiling") if w1 else None
            cells.append("{3:.2f}" if hole == (ti, runs[0]) and c is not None else
                         ("%.2f" % c if c is not None else "–"))
    return "| %s | `%s` | %s | %s |" % (b, n, " | ".join(cells), "yes" if ok else "no")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--checks", metavar="DOC", help="print doc-numbers.txt lines for DOC instead")
    args = ap.parse_args()
    try:
        recs = load(args.dir)
    except (OSError, ValueError) as e:
        print("bench-ratio-table: %s" % e, file=sys.stderr)
        return 1
    if not recs:
        print("bench-ratio-table: no BENCH-tT-rR.json records in %s" % args.dir, file=sys.stderr)
        return 1
    threads = sorted({t for (_, t, _) in recs})
    runs = sorted({r for (_, _, r) in recs})
    goal = next(iter(recs.values())).get("goal_speedup", 3.0)
    bounded = any(w.get("ceiling") is not None for rec in recs.values() for w in compared(rec))
    if not args.checks:
        head = "| bench | workload |"
        rule = "|---|---|"
        for t in threads:
            head += " %d thread%s: ours / PyTorch ms (run %d) | ratio, run %s |" % (
                t, "" if t == 1 else "s", runs[0], " / ".join(str(r) for r in runs))
            rule += "---:|---:|"
            if bounded:
                head += " ceiling (run %d) |" % runs[0]
                rule += "---:|"
        print(head + " ≥ %g× |" % goal)
        print(rule + "---|")
    for b in ORDER:
        first = recs.get((b, threads[0], runs[0]))
        if not first:
            continue
        for w in compared(first):
            n = w["name"]
            cols, ok = [], True  # per thread count: {run: the workload's entry or None}
            for t in threads:
                by_run = {r: {x["name"]: x for x in compared(recs.get((b, t, r), {}))}.get(n)
                          for r in runs}
                cols.append(by_run)
                ok = ok and all(by_run[r] and by_run[r]["ratio_median"] >= goal for r in runs)
            if not args.checks:
                print(row(b, n, cols, runs, None, ok, bounded))
                continue
            # one check per record: the whole row, that record's numbers as placeholders
            for ti, t in enumerate(threads):
                for r in runs:
                    if not cols[ti][r]:
                        continue
                    sel = "workloads.name=%s" % n
                    paths = [sel + ".ratio_median"]
                    if r == runs[0]:
                        paths += [sel + ".ours.ms_median", sel + ".pytorch.ms_median"]
                        if bounded and cols[ti][r].get("ceiling") is not None:
                            paths.append(sel + ".ceiling")
                    print("%s | %s | %s | %s" % (
                        args.checks, os.path.join(args.dir, "%s-t%d-r%d.json" % (b, t, r)),
                        ", ".join(paths), row(b, n, cols, runs, (ti, r), ok, bounded)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
