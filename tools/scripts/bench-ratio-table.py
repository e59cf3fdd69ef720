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

With --summary it prints, as JSON, per workload and thread count the runs' ratios, their
geometric mean, its 95 % interval (Student's t on the logarithms, tools/scripts/t975.py) and the
verdict against the goal: "met" when the interval's lower end reaches it, "not met" when its
upper end is below it, else "inconclusive"; with fewer than MIN_RUNS runs every verdict is
"inconclusive" (a claim needs that many). The goal is the records' goal_speedup, or GOALS's
for the workloads issue 30 sets another (the ACL step: 4×). Save it as DIR/summary.json; --intervals then prints
the Markdown table of that summary, and --intervals --checks DOC the doc-numbers lines that tie
DOC's copy of it to DIR/summary.json.

With --status (from DIR/summary.json) it prints a row per workload and thread count: the ratio's
interval and verdict, the goal, the interval of the runs' ceilings (the summary's ceiling_gmean
and ceiling_ci95, when the records carry bounds) and whether the goal is within it ("reachable":
the interval's lower end reaches the goal; "unreachable": its upper end is below it; else
"inconclusive"), and the median of our fraction of the roofline bound; --status --checks DOC the
lines that tie DOC's copy of it to DIR/summary.json.

Exit status: 0, 1 when DIR holds no records or a record is unreadable, 2 on bad flags."""

import argparse
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t975 import geo_interval  # noqa: E402

MIN_RUNS = 5  # runs a verdict needs (fewer: inconclusive)
GOALS = {"acl_step": 4.0}  # issue 30's goals where they differ from the records' goal_speedup

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


def workloads(recs, threads, runs):
    """(bench, workload name) of every workload both sides measured, in bench order and each
    bench's first record's order"""
    for b in ORDER:
        first = recs.get((b, threads[0], runs[0]))
        for w in compared(first) if first else []:
            yield b, w["name"]


def by_run(recs, b, t, runs, n):
    """{run: workload n's entry in the record of bench b at t threads, or None}"""
    return {r: {x["name"]: x for x in compared(recs.get((b, t, r), {}))}.get(n) for r in runs}


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


def ceiling_summary(entries, goal):
    """the runs' ceilings (PyTorch's median over our roofline bound), their geometric mean and
    95 % interval, whether the goal is within reach ("reachable" when the interval's lower end
    reaches it, "unreachable" when its upper end is below it, else "inconclusive"; fewer than
    MIN_RUNS runs: inconclusive), and the median of our fraction of the bound (bound / our
    median: 1 = at the roofline); {} when the records carry no bound"""
    entries = [x for x in entries if x and x.get("ceiling") and x["ours"].get("bound_ms")]
    if not entries:
        return {}
    ceil = [x["ceiling"] for x in entries]
    gm, ci = geo_interval(ceil)
    frac = sorted(x["ours"]["bound_ms"] / x["ours"]["ms_median"] for x in entries)
    k = len(frac)
    reach = "inconclusive"
    if ci is not None and k >= MIN_RUNS:
        reach = "reachable" if ci[0] >= goal else "unreachable" if ci[1] < goal else "inconclusive"
    return {"ceilings": ceil, "ceiling_gmean": gm, "ceiling_ci95": ci, "reach": reach,
            "bound_fraction": (frac[(k - 1) // 2] + frac[k // 2]) / 2}


def summary(recs, goal):
    """the --summary JSON: per workload and thread count the interval of the runs' ratios"""
    threads = sorted({t for (_, t, _) in recs})
    runs = sorted({r for (_, _, r) in recs})
    rows = []
    for b, n in workloads(recs, threads, runs):
        for t in threads:
            ratios = [x["ratio_median"] for x in by_run(recs, b, t, runs, n).values()
                      if x and x.get("ratio_median")]
            g = GOALS.get(n, goal)
            gm, ci = geo_interval(ratios) if ratios else (None, None)
            row = {"bench": b, "name": n, "threads": t, "goal": g, "runs": len(ratios), "ratios": ratios,
                   "gmean": gm, "ci95": ci, "verdict": "inconclusive"}
            if ci is not None and len(ratios) >= MIN_RUNS:
                row["verdict"] = "met" if ci[0] >= g else "not met" if ci[1] < g else "inconclusive"
            row.update(ceiling_summary(by_run(recs, b, t, runs, n).values(), g))
            rows.append(row)
    return {"goal_speedup": goal, "min_runs": MIN_RUNS, "threads": threads, "runs": runs,
            "workloads": rows}


def interval_rows(summ, checks_doc, path):
    """the --intervals table (or, with checks_doc, its doc-numbers lines against path)"""
    threads = summ["threads"]
    by = {(w["bench"], w["name"], w["threads"]): w for w in summ["workloads"]}
    out = []
    if not checks_doc:
        head = "| bench | workload |" + "".join(
            " %d thread%s: ratio [95 %% interval], runs | verdict |" % (t, "" if t == 1 else "s")
            for t in threads) + " goal |"
        out += [head, "|---|---|" + "---:|---|" * len(threads) + "---:|"]
    names = []
    for w in summ["workloads"]:
        if (w["bench"], w["name"]) not in names:
            names.append((w["bench"], w["name"]))

    def cell(w, hole):
        if w["ci95"] is None:
            return "–", w["verdict"]
        if hole:
            return "{0:.2f} [{1:.2f}, {2:.2f}], %d" % w["runs"], w["verdict"]
        return "%.2f [%.2f, %.2f], %d" % (w["gmean"], w["ci95"][0], w["ci95"][1], w["runs"]), w["verdict"]

    for b, n in names:
        for hole_t in ([None] if not checks_doc else threads):
            cells = []
            for t in threads:
                w = by.get((b, n, t))
                c, v = cell(w, hole_t == t) if w else ("–", "–")
                cells += [c, v]
            g = next(w["goal"] for w in summ["workloads"] if (w["bench"], w["name"]) == (b, n))
            line = "| %s | `%s` | %s | %g× |" % (b, n, " | ".join(cells), g)
            if not checks_doc:
                out.append(line)
                continue
            w = by.get((b, n, hole_t))
            if not w or w["ci95"] is None:
                continue
            i = summ["workloads"].index(w)
            sel = "workloads.%d." % i
            out.append("%s | %s | %s | %s" % (checks_doc, path, ", ".join(
                sel + k for k in ("gmean", "ci95.0", "ci95.1")), line))
    return out


def status_rows(summ, checks_doc, path):
    """the --status table: a row per workload and thread count, its ratio's interval and verdict,
    the ceiling's interval, whether the goal is within it, our fraction of the bound (with
    checks_doc: the doc-numbers lines that tie DOC's copy to path)"""
    out = []
    if not checks_doc:
        out += ["| bench | workload | threads | ratio [95 % interval] | verdict | goal | ceiling [95 % interval]"
                " | goal within the ceiling | ours at the bound |",
                "|---|---|---:|---:|---|---:|---:|---|---:|"]
    for i, w in enumerate(summ["workloads"]):
        if w["ci95"] is None:
            continue
        ceil = w.get("ceiling_ci95") is not None
        cells = ["{0:.2f} [{1:.2f}, {2:.2f}]", w["verdict"], "%g×" % w["goal"],
                 "{3:.2f} [{4:.2f}, {5:.2f}]" if ceil else "–", w.get("reach", "–"),
                 "{6:.0f} %" if ceil else "–"]
        text = "| %s | `%s` | %d | %s |" % (w["bench"], w["name"], w["threads"], " | ".join(cells))
        keys = ["gmean", "ci95.0", "ci95.1"] + (
            ["ceiling_gmean", "ceiling_ci95.0", "ceiling_ci95.1", "bound_fraction*100"] if ceil else [])
        if checks_doc:
            out.append("%s | %s | %s | %s" % (checks_doc, path, ", ".join(
                "workloads.%d.%s" % (i, k) for k in keys), text))
            continue
        vals = [w["gmean"]] + list(w["ci95"]) + (
            [w["ceiling_gmean"]] + list(w["ceiling_ci95"]) + [100 * w["bound_fraction"]] if ceil else [])
        out.append(text.format(*vals))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--checks", metavar="DOC", help="print doc-numbers.txt lines for DOC instead")
    ap.add_argument("--summary", action="store_true", help="print the intervals' JSON instead")
    ap.add_argument("--intervals", action="store_true",
                    help="print the table of DIR/summary.json (with --checks: its checks)")
    ap.add_argument("--status", action="store_true",
                    help="print the status table of DIR/summary.json: ratios, verdicts, ceilings, the "
                         "fraction of the bound (with --checks: its checks)")
    args = ap.parse_args()
    if args.intervals or args.status:
        path = os.path.join(args.dir, "summary.json")
        try:
            with open(path, encoding="utf-8") as f:
                summ = json.load(f)
        except (OSError, ValueError) as e:
            print("bench-ratio-table: %s (write it with --summary)" % e, file=sys.stderr)
            return 1
        print("\n".join((status_rows if args.status else interval_rows)(summ, args.checks, path)))
        return 0
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
    if args.summary:
        print(json.dumps(summary(recs, goal), indent=1))
        return 0
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
    for b, n in workloads(recs, threads, runs):
        cols, ok = [], True  # per thread count: {run: the workload's entry or None}
        for t in threads:
            col = by_run(recs, b, t, runs, n)
            cols.append(col)
            ok = ok and all(col[r] and col[r]["ratio_median"] >= goal for r in runs)
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
