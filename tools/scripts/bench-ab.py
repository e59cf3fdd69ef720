#!/usr/bin/env python3
"""bench-ab.py LINES [--a TAG] [--b TAG] [--json] — two builds of metacl compared, round by round.

LINES is what tools/bundle/gpu-ab.sh writes (bench-ab.txt): one `metacl bench B --json` record
per line, each preceded by the build's tag and the round number ("old 3 {"bench": ...}"), or a
`metacl bench gemm --json` array (each shape a workload of bench "gemm", named "NT 32x256x48",
its ms the median call's, 2·M·N·K / its median GFLOP/s). The
builds ran alternately on the same machine, so round r of A and round r of B saw the same
conditions. For every workload (in the order first seen) it prints both builds' medians over
the rounds (of each run's median ms), the geometric mean of the per-round speed-ups
A ms / B ms, their 95 % interval (t on the logarithms, as tools/scripts/bench-shared.py) and
the verdict: "B faster" when the interval lies above 1, "A faster" when below, "tie"
otherwise (or with fewer than 2 rounds). --a / --b name the tags (default: the first two seen).

Exit status: 0; 1 when LINES cannot be read or holds no pair of records; 2 on bad flags."""

import argparse
import importlib.util
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def shared():
    """bench-shared.py as a module (its median and ratio_stats)"""
    spec = importlib.util.spec_from_file_location("bench_shared", os.path.join(HERE, "bench-shared.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def read(path):
    """[(tag, round, record)] of the file's lines; a line that is no such triple is an error"""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.split(" ", 2)
            try:
                out.append((parts[0], int(parts[1]), json.loads(parts[2])))
            except (IndexError, ValueError) as e:
                raise ValueError("%s:%d: not 'TAG ROUND JSON' (%s)" % (path, n, e)) from e
    return out


def workloads_of(rec):
    """[(bench, name, median ms or None)] of one record: a bench's workloads, or the shapes of
    a `bench gemm --json` array"""
    if isinstance(rec, list):
        out = []
        for s in rec:
            name = "%s%s %dx%dx%d" % ("T" if s.get("ta") else "N", "T" if s.get("tb") else "N", s["M"], s["N"], s["K"])
            g = s.get("gflops_median") or 0
            out.append(("gemm", name, 2.0 * s["M"] * s["N"] * s["K"] / (g * 1e9) * 1e3 if g > 0 else None))
        return out
    return [(rec.get("bench"), w.get("name"), w.get("ms_median")) for w in rec.get("workloads", [])]


def compare(lines, a=None, b=None):
    """the comparison as a dict: {"a", "b", "rounds", "workloads": [{"bench", "name", "rounds",
    "a_ms", "b_ms", "speedup", "ci95", "verdict"}]}"""
    sh = shared()
    tags = []
    for t, _, _ in lines:
        if t not in tags:
            tags.append(t)
    a = a or (tags[0] if tags else None)
    b = b or (tags[1] if len(tags) > 1 else None)
    ms, order = {}, []
    for t, r, rec in lines:
        if t not in (a, b):
            continue
        for bench, name, med in workloads_of(rec):
            key = (bench, name)
            if key not in ms:
                ms[key] = {a: {}, b: {}}
                order.append(key)
            if med is not None:
                ms[key][t][r] = med
    rows = []
    for key in order:
        ra, rb = ms[key][a], ms[key][b]
        rounds = sorted(set(ra) & set(rb))
        if not rounds:
            continue
        g, ci, v = sh.ratio_stats([(ra[r], rb[r]) for r in rounds])
        rows.append({"bench": key[0], "name": key[1], "rounds": len(rounds),
                     "a_ms": sh.median([ra[r] for r in rounds]), "b_ms": sh.median([rb[r] for r in rounds]),
                     "speedup": g, "ci95": ci,
                     "verdict": {"faster": "B faster", "slower": "A faster"}.get(v, "tie")})
    return {"a": a, "b": b, "rounds": max((r["rounds"] for r in rows), default=0), "workloads": rows}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("lines")
    p.add_argument("--a")
    p.add_argument("--b")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    try:
        c = compare(read(args.lines), args.a, args.b)
    except (OSError, ValueError) as e:
        print("bench-ab: %s" % e, file=sys.stderr)
        return 1
    if not c["workloads"]:
        print("bench-ab: %s holds no workload measured by both %s and %s" % (args.lines, c["a"], c["b"]),
              file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(c, indent=1))
        return 0
    print("A = %s, B = %s; speed-up = A ms / B ms per round, geometric mean, 95 %% interval" % (c["a"], c["b"]))
    print("| bench | workload | rounds | A ms | B ms | speed-up | 95 % interval | verdict |")
    print("|---|---|---:|---:|---:|---:|---|---|")
    for r in c["workloads"]:
        ci = "[%.2f, %.2f]" % tuple(r["ci95"]) if r["ci95"] else "-"
        print("| %s | `%s` | %d | %.4g | %.4g | %.2f | %s | %s |" % (r["bench"], r["name"], r["rounds"], r["a_ms"],
                                                                   r["b_ms"], r["speedup"], ci, r["verdict"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
