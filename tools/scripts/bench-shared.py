#!/usr/bin/env python3
"""bench-shared.py — `metacl bench B` on a shared machine: with one CPU-bound competitor per
core running, each workload at 1 thread and at T threads, side by side.

The question (issue 30): with other work on every core, are T threads ever slower than 1? A
thread that waits at an OpenMP barrier for a descheduled one can make a multi-threaded run
several times slower than a single-threaded one (tools/cli/omp_wait.c). This script starts
--competitors busy processes (default: one per processor; each is `python3 -c "while 1: pass"`),
runs `<metacl> bench B --json --threads 1` and `--threads T` while they run, stops them, and
prints a Markdown table: the medians at 1 and T threads, T-thread speed-up (1-thread median /
T-thread median), and over the rounds the geometric mean of each round's speed-up with its 95 %
interval and a verdict: faster or slower only when the interval clears 1, tie otherwise.
Competitor i is pinned to the i-th processor (one per core, the issue's setup; --float lets
the scheduler place them, and then 3 tasks on 2 cores may leave the 1-thread run a core of its
own in one run and half of one in the next: its median moved 2x between runs here).
--competitors 0 runs the same on whatever the machine is doing.

Comparing policies in one run: --compare NAME=VALUE (repeatable) adds a T-thread run under that
environment (e.g. --compare METACL_THREADS_FOLLOW_LOAD=0: the default, load-following team in
the second column, the fixed team in the third), beside the same competitors; --rounds R
repeats the runs R times, alternating (1 thread, T threads, T threads compared, then again),
and reports for each the median of the R runs' medians and the per-round speed-ups' interval,
so a change of the machine's other load hits every column alike.

Usage:
  python3 tools/scripts/bench-shared.py --bench lm --only lm_eval_static            # T = 2
  python3 tools/scripts/bench-shared.py --bench acl --threads 4 --competitors 4 --reps 3
  python3 tools/scripts/bench-shared.py --bench lm --env OMP_WAIT_POLICY=active     # the old policy
  python3 tools/scripts/bench-shared.py --bench lm --compare METACL_THREADS_FOLLOW_LOAD=0 \
      --rounds 5
Options: --metacl PATH (default ./metacl at the repo root), --bench acl|oct|smn|lm (default
  acl), --threads T (default 2), --competitors K (default: os.cpu_count()), --reps R,
  --only NAME[,NAME], --float, --env NAME=VALUE (repeatable: for metacl), --compare NAME=VALUE
  (repeatable: the compared T-thread run's environment, on top of --env), --rounds R (default
  1), --json.
Exit status: 0 ok (whatever the result), 1 when metacl fails, 2 on bad flags.
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench-shared.py",
                                description="metacl bench at 1 and T threads beside CPU-bound competitors")
    p.add_argument("--metacl", default=os.path.join(REPO, "metacl"))
    p.add_argument("--bench", choices=("acl", "oct", "smn", "lm"), default="acl")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--competitors", type=int, default=os.cpu_count() or 1)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--float", dest="pin", action="store_false",
                   help="let the competitors move between processors (default: competitor i "
                        "is pinned to the i-th allowed processor)")
    p.add_argument("--only", default=None)
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--compare", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    if a.threads < 2:
        p.error("--threads must be >= 2 (it is compared with 1)")
    if a.competitors < 0 or (a.reps is not None and a.reps < 1) or a.rounds < 1:
        p.error("--competitors must be >= 0, --reps and --rounds >= 1")
    for e in a.env + a.compare:
        if "=" not in e or not e.split("=", 1)[0]:
            p.error("--env wants NAME=VALUE (not %r)" % e)
    return a


def run_bench(a, threads, env):
    cmd = [a.metacl, "bench", a.bench, "--json", "--threads", str(threads)]
    if a.reps is not None:
        cmd += ["--reps", str(a.reps)]
    if a.only:
        cmd += ["--only", a.only]
    print("bench-shared: running %s" % " ".join(cmd), file=sys.stderr)
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if r.returncode != 0:
        print("bench-shared: metacl failed (exit %d):\n%s" % (r.returncode, r.stderr), file=sys.stderr)
        return None
    try:
        return {w["name"]: float(w["ms_median"]) for w in json.loads(r.stdout)["workloads"]}
    except (ValueError, KeyError, TypeError) as e:
        print("bench-shared: metacl printed no valid JSON (%s)" % e, file=sys.stderr)
        return None


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def with_env(base, pairs):
    env = dict(base)
    for e in pairs:
        k, v = e.split("=", 1)
        env[k] = v
    return env


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from t975 import geo_interval  # noqa: E402  (t975.py beside this file: mcl_t975's values)


def ratio_stats(pairs):
    """pairs: [(1-thread ms, T-thread ms)] of the rounds, each pair measured beside the same
    competitors minutes apart -> (geometric mean of the speed-ups, [lo, hi] of its 95 %
    interval (t on the logarithms; None below 2 rounds or above 11), verdict). Verdict: "faster"
    when the interval lies above 1, "slower" when below, "tie" when it holds 1 (or no interval)."""
    ratios = [o / m for o, m in pairs if o > 0 and m > 0]
    if not ratios:
        return 0.0, None, "tie"
    g, ci = geo_interval(ratios)
    if ci is None:
        return g, None, "tie"
    return g, ci, "faster" if ci[0] > 1.0 else "slower" if ci[1] < 1.0 else "tie"


def rows_of(runs, threads, has_compare):
    """runs: [(one, many, compared or None)] per round -> one row per workload of the first
    1-thread run, with the medians over the rounds (names missing from a run are skipped) and
    the per-round speed-ups' geometric mean, 95 % interval and verdict (ratio_stats)."""
    rows = []
    for name in runs[0][0]:
        use = [r for r in runs if name in r[0] and name in r[1]
               and (not has_compare or (r[2] is not None and name in r[2]))]
        if not use:
            continue
        one, many = median([r[0][name] for r in use]), median([r[1][name] for r in use])
        if many <= 0:
            continue
        g, ci, verdict = ratio_stats([(r[0][name], r[1][name]) for r in use])
        row = {"name": name, "ms_1": one, "ms_T": many, "speedup": one / many,
               "no_slower": many <= one, "rounds": len(use), "speedup_gmean": g,
               "speedup_ci95": ci, "verdict": verdict}
        if has_compare:
            c = median([r[2][name] for r in use])
            g, ci, verdict = ratio_stats([(r[0][name], r[2][name]) for r in use])
            row.update({"ms_T_compare": c, "speedup_compare": one / c if c > 0 else 0.0,
                        "no_slower_compare": c <= one, "speedup_gmean_compare": g,
                        "speedup_ci95_compare": ci, "verdict_compare": verdict})
        rows.append(row)
    return rows


def start_competitor(i, pin):
    """One busy process; pinned, competitor i runs only on the i-th processor this script may
    use (mod their count), so each core has exactly its share of competitors: floating, the
    scheduler may leave one metacl thread alone on a core (3 tasks on 2 cores), and the 1-thread
    column then moves by up to 2x from run to run with where it landed."""
    cpus = sorted(os.sched_getaffinity(0)) if pin and hasattr(os, "sched_getaffinity") else None
    def place():
        if cpus:
            os.sched_setaffinity(0, {cpus[i % len(cpus)]})
    return subprocess.Popen([sys.executable, "-c", "while 1: pass"], preexec_fn=place)


def main(argv):
    a = parse_args(argv)
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    env = with_env(env, a.env)
    cmp_env = with_env(env, a.compare) if a.compare else None
    busy = [start_competitor(i, a.pin) for i in range(a.competitors)]
    runs = []
    try:
        for _ in range(a.rounds):
            one = run_bench(a, 1, env)
            many = run_bench(a, a.threads, env) if one is not None else None
            cmp = run_bench(a, a.threads, cmp_env) if many is not None and cmp_env else None
            if one is None or many is None or (cmp_env and cmp is None):
                return 1
            runs.append((one, many, cmp))
    finally:
        for b in busy:
            b.kill()
        for b in busy:
            b.wait()
    rows = rows_of(runs, a.threads, cmp_env is not None)
    if a.json:
        print(json.dumps({"bench": a.bench, "threads": a.threads, "competitors": a.competitors,
                          "env": a.env, "compare": a.compare, "rounds": a.rounds,
                          "workloads": rows}))
        return 0
    print("metacl bench %s beside %d CPU-bound competitor(s), %s%s, %d round(s)" % (
        a.bench, a.competitors, "pinned one per processor" if a.pin else "floating",
        (", " + " ".join(a.env)) if a.env else "", a.rounds))
    print()
    c = " ".join(a.compare)
    head = "| workload | 1 thread ms | %d threads ms | speed-up | per round, 95 %% | verdict |" % a.threads
    if cmp_env:
        head += " %d threads %s ms | speed-up | per round, 95 %% | verdict |" % (a.threads, c)
    print(head)
    print("|---|---:|---:|---:|---:|:---:|" + ("---:|---:|---:|:---:|" if cmp_env else ""))

    def cells(ms, sp, g, ci, verdict):
        iv = "%.2f [%.2f, %.2f]" % (g, ci[0], ci[1]) if ci else "%.2f" % g
        return " %.2f | %.2fx | %s | %s |" % (ms, sp, iv, verdict)
    for r in rows:
        line = "| %s | %.2f |" % (r["name"], r["ms_1"])
        line += cells(r["ms_T"], r["speedup"], r["speedup_gmean"], r["speedup_ci95"], r["verdict"])
        if cmp_env:
            line += cells(r["ms_T_compare"], r["speedup_compare"], r["speedup_gmean_compare"],
                          r["speedup_ci95_compare"], r["verdict_compare"])
        print(line)
    print()
    print("speed-up: 1-thread median / T-thread median over the rounds; per round: the geometric "
          "mean of each round's speed-up and its 95 % interval (t on the logarithms); verdict: "
          "faster or slower only when the interval clears 1, otherwise tie")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
