#!/usr/bin/env python3
"""bench-acl-vs-torch.py — compare `metacl bench acl` (or, with --bench oct, `metacl bench oct`
against tools/torch/bench-oct-torch.py; with --bench smn, `metacl bench smn` against
tools/torch/bench-smn-torch.py; with --bench lm, `metacl bench lm` against tools/torch/bench-lm-torch.py)
with the PyTorch CPU baseline.

Runs, back to back and with the same thread count (OMP_NUM_THREADS is set for both):
  1. <metacl> bench acl --json [--backend B] --threads T [--reps R]
  2. <python> tools/torch/bench-acl-torch.py --json --threads T [--reps R] [--only ...]
and prints a Markdown table per workload (srwm, conv4_28, conv4_32, acl_step — the shapes are
described in tools/torch/bench-acl-torch.py): our ms (best / median), PyTorch ms (best / median),
the ratio PyTorch/ours of the medians, and whether the goal "ours >= 3x faster" is met.
A workload that only one side reports is shown as missing on the other side. The notes of our
workloads (metacl bench smn's window memory, metacl bench lm's bytes/s) are listed under the
table.

The ceiling: when our record gives a workload's roofline bound ("bound_ms", metacl bench --json on
the reference backend: the sum over one iteration's op calls of max(flops / FMA peak, bytes /
STREAM triad), doc/reference-backend.md "The bound of a workload"), the table adds the columns
"bound ms" and "ceiling" = PyTorch's median / bound_ms: the largest ratio any implementation on
this machine could show against this PyTorch time. A goal not met with a ceiling below the goal
is marked "unreachable (ceiling X < goal)". In --json each row has "bound_ms", "ceiling" and
"reachable" (ceiling >= goal; null without a bound).

Usage:
  python3 tools/torch/bench-acl-vs-torch.py                       # ./metacl at the repo root, 2 threads
  python3 tools/torch/bench-acl-vs-torch.py --metacl build/metacl --backend opencl --threads 4
  python3 tools/torch/bench-acl-vs-torch.py --json                # one combined JSON record
Options: --metacl PATH, --backend B (passed to metacl only), --threads T (default 2),
  --reps R (both sides; default: each program's own), --only NAME[,NAME] (both sides run
  only these),
  --python EXE (interpreter for the PyTorch script; default: the first of this interpreter
  and /usr/bin/python3 that can import torch), --goal X (speed-up goal, default 3).
The baseline must be fair: the PyTorch record says which BLAS its matrix products ran on
(tools/torch/bench_common.py, blas_info: the library resolved in /proc/self/maps after a matrix
product, OpenBLAS's core type, PyTorch's CPU kernels); the table's header prints it. Against the
reference BLAS (Debian's libblas3, what installing python3-torch alone gives) no ratio is
reported: the script says to run `apt-get install libopenblas0-pthread` and exits 1. An OpenBLAS
that would run narrower kernels than the CPU allows (a generic SSE3 core such as Prescott on a
CPU model its build does not know, its AVX2 Haswell kernels on an AVX-512 CPU such as AMD's Zen
5, or a narrower core that OPENBLAS_CORETYPE in the environment asks for) gets OPENBLAS_CORETYPE
set to the core of the CPU's widest kernels (SkylakeX for AVX-512, Haswell for AVX2), and a
record that still shows a narrower core is refused the same way (exit 1). Both sides run with
glibc's malloc keeping freed memory in the process (GLIBC_TUNABLES: no mmap'ed blocks, no heap
trimming; bench_common.MALLOC_KEEP says why: PyTorch's fresh block per op otherwise costs a page
fault per page, up to 4x on a virtual machine); a PyTorch record without them is refused too.
Exit status: 0 ok (whether or not the goal is met), 1 if either program fails or prints no
valid JSON (its stderr is shown) or the baseline ran on the reference BLAS (or on OpenBLAS
kernels narrower than the CPU allows), 2 on bad flags.

Testing without the C benchmark: a fake metacl is any executable printing a record such as
  {"bench":"acl","impl":"metacl","backend":"ref","threads":2,"workloads":[{"name":"srwm",
   "desc":"...","reps":10,"ms_best":1.0,"ms_median":1.2}]}
"""

import argparse
import json
import os
import subprocess
import sys

import bench_common

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))  # tools/torch/ -> the repo root
# --bench acl | oct | smn | lm: the metacl benchmark, its PyTorch twin and the workloads' table order
BENCHES = {
    "acl": (os.path.join(HERE, "bench-acl-torch.py"), ("srwm", "conv4_28", "conv4_32", "acl_step")),
    "oct": (os.path.join(HERE, "bench-oct-torch.py"),
            ("oct_step", "attn_C0", "attn_C250", "attn_C1000", "attn_C4000")),
    "smn": (os.path.join(HERE, "bench-smn-torch.py"),
            ("smn_wcst_window", "smn_resnet_window", "smn_resnet_plain")),
    "lm": (os.path.join(HERE, "bench-lm-torch.py"),
           ("lm_train_window", "lm_train_plain", "lm_eval_static", "lm_eval_dynamic", "lm_eval_smn")),
}
TORCH_SCRIPT, ORDER = BENCHES["acl"]


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench-acl-vs-torch.py",
                                description="compare `metacl bench B` with PyTorch (CPU)")
    p.add_argument("--metacl", default=os.path.join(REPO, "metacl"),
                   help="metacl binary (default: metacl at the repo root)")
    p.add_argument("--backend", default=None, help="metacl backend (passed as --backend)")
    p.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    p.add_argument("--reps", type=int, default=None, help="timed iterations for both")
    p.add_argument("--only", action="append", default=None, metavar="NAME",
                   help="workloads to compare (repeatable or comma list)")
    p.add_argument("--python", default=None, help="interpreter for bench-acl-torch.py")
    p.add_argument("--goal", type=float, default=3.0, help="speed-up goal (default 3)")
    p.add_argument("--json", action="store_true", help="print one combined JSON record")
    p.add_argument("--bench", choices=sorted(BENCHES), default="acl",
                   help="which benchmark: acl (default), oct (the online transformers), smn "
                        "(the Sparse Meta Networks) or lm (the adaptive character language model)")
    a = p.parse_args(argv)
    global TORCH_SCRIPT, ORDER
    TORCH_SCRIPT, ORDER = BENCHES[a.bench]
    if a.threads < 1:
        p.error("--threads must be >= 1")
    if a.reps is not None and a.reps < 1:
        p.error("--reps must be >= 1")
    if a.goal <= 0:
        p.error("--goal must be > 0")
    if a.only:
        a.only = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
        bad = [n for n in a.only if n not in ORDER]
        if bad or not a.only:
            p.error("--only: unknown workload(s) %s (available: %s)"
                    % (", ".join(bad) or "''", ", ".join(ORDER)))
    return a


def pick_python(explicit):
    if explicit:
        return explicit
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import torch"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    return sys.executable  # the script then explains how to install torch


def run_json(label, cmd, env):
    """Run cmd; return its parsed JSON record or None (after reporting why on stderr)."""
    print("bench-acl-vs-torch: running %s: %s" % (label, " ".join(cmd)), file=sys.stderr)
    try:
        r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
    except OSError as e:
        print("bench-acl-vs-torch: cannot run %s (%s): %s" % (label, cmd[0], e), file=sys.stderr)
        return None
    if r.returncode != 0:
        print("bench-acl-vs-torch: %s failed (exit %d); its stderr:\n%s"
              % (label, r.returncode, r.stderr.rstrip()), file=sys.stderr)
        return None
    try:
        rec = json.loads(r.stdout)
        if not isinstance(rec, dict) or not isinstance(rec.get("workloads", []), list):
            raise ValueError("not a record with a 'workloads' list")
    except ValueError as e:
        print("bench-acl-vs-torch: %s printed no valid JSON (%s); stdout:\n%s\nstderr:\n%s"
              % (label, e, r.stdout.rstrip(), r.stderr.rstrip()), file=sys.stderr)
        return None
    return rec


def timings(rec):
    """name -> {ms_best, ms_median, reps} for the well-formed workload entries of rec."""
    out = {}
    for w in rec.get("workloads", []):
        try:
            out[w["name"]] = {"ms_best": float(w["ms_best"]), "ms_median": float(w["ms_median"]),
                              "reps": w.get("reps")}
        except (KeyError, TypeError, ValueError):
            continue
        try:
            b = float(w["bound_ms"])
            if b > 0:
                out[w["name"]]["bound_ms"] = b
        except (KeyError, TypeError, ValueError):
            pass
    return out


def best_of(recs):
    """One PyTorch record from runs under different BLAS thread settings: each workload keeps
    the run with the lowest median, tagged with that run's setting ("blas_threads")."""
    best = {}
    for rec in recs:
        for w in rec.get("workloads", []):
            n = w.get("name") if isinstance(w, dict) else None
            try:
                med = float(w["ms_median"])
            except (KeyError, TypeError, ValueError):
                continue
            if n not in best or med < float(best[n]["ms_median"]):
                best[n] = dict(w, blas_threads=rec.get("blas_threads"))
    out = dict(recs[0], runs=len(recs))
    out["workloads"] = [best[n] for n in (w.get("name") for w in recs[0].get("workloads", [])
                                          if isinstance(w, dict)) if n in best]
    return out


def compare(ours, torch_rec, only, goal):
    a, b = timings(ours), timings(torch_rec)
    names = [n for n in ORDER if n in a or n in b]
    names += sorted(n for n in set(a) | set(b) if n not in ORDER)
    if only:
        names = [n for n in names if n in only] + [n for n in only if n not in a and n not in b]
    rows = []
    for n in names:
        o, t = a.get(n), b.get(n)
        ratio = ceiling = None
        if o and t and o["ms_median"] > 0:
            ratio = t["ms_median"] / o["ms_median"]
        if o and t and o.get("bound_ms"):
            ceiling = t["ms_median"] / o["bound_ms"]
        rows.append({"name": n, "ours": o, "pytorch": t,
                     "ratio_median": None if ratio is None else round(ratio, 3),
                     "goal_met": None if ratio is None else ratio >= goal,
                     "bound_ms": o.get("bound_ms") if o else None,
                     "ceiling": None if ceiling is None else round(ceiling, 3),
                     "reachable": None if ceiling is None else ceiling >= goal})
    return rows


def fmt_ms(t):
    return "missing" if t is None else "%.2f / %.2f" % (t["ms_best"], t["ms_median"])


def markdown(rows, ours, torch_rec, threads, goal):
    bounded = any(r.get("ceiling") is not None for r in rows)
    lines = ["ours: %s (backend %s), PyTorch: %s %s (%s); %d thread(s)"
             % (ours.get("impl", "metacl"), ours.get("backend", "?"),
                torch_rec.get("impl", "pytorch"), torch_rec.get("version", ""),
                torch_rec.get("backend", "cpu"), threads),
             "PyTorch's " + bench_common.blas_line(torch_rec.get("blas") or {}),
             "",
             "| workload | ours ms (best / median) | PyTorch ms (best / median) "
             "| PyTorch / ours (median) |%s ≥ %gx faster |" % (" bound ms | ceiling |" if bounded else "", goal),
             "|---|---:|---:|---:|%s:---:|" % ("---:|---:|" if bounded else "")]
    for r in rows:
        if r["ratio_median"] is None:
            ratio, met = "—", "missing"
        else:
            ratio, met = "%.2fx" % r["ratio_median"], "yes" if r["goal_met"] else "no"
            if not r["goal_met"] and r.get("reachable") is False:
                met = "no, unreachable (ceiling %.2fx < %gx)" % (r["ceiling"], goal)
        extra = ""
        if bounded:
            extra = " %s | %s |" % ("—" if r.get("bound_ms") is None else "%.2f" % r["bound_ms"],
                                    "—" if r.get("ceiling") is None else "%.2fx" % r["ceiling"])
        lines.append("| %s | %s | %s | %s |%s %s |"
                     % (r["name"], fmt_ms(r["ours"]), fmt_ms(r["pytorch"]), ratio, extra, met))
    if bounded:
        lines.append("")
        lines.append("bound: our workload's roofline bound (the sum over its op calls of max(flops / FMA peak, "
                     "bytes / STREAM triad); FMA peak %s GFLOP/s, triad %s GB/s, measured by metacl in this run); "
                     "ceiling = PyTorch median / bound, the largest ratio any implementation could reach here."
                     % (ours.get("peak_gflops", "?"), ours.get("triad_gbs", "?")))
    tw = {w.get("name"): w.get("blas_threads") for w in torch_rec.get("workloads", []) if isinstance(w, dict)}
    if torch_rec.get("runs", 1) > 1 and any(v is not None for v in tw.values()):
        lines.append("")
        lines.append("PyTorch ran twice, with OpenBLAS on %d thread(s) and on 1; each row keeps the faster "
                     "median (OpenBLAS threads: %s)." % (threads, ", ".join(
                         "%s %s" % (r["name"], tw.get(r["name"])) for r in rows if tw.get(r["name"]) is not None)))
    names = [r["name"] for r in rows]
    notes = [(w.get("name"), w["note"]) for w in ours.get("workloads", [])
             if isinstance(w, dict) and w.get("note") and w.get("name") in names]
    if notes:
        lines.append("")
        lines += ["- %s (ours): %s" % n for n in notes]
    return "\n".join(lines)


def main(argv):
    args = parse_args(argv)
    # Both sides keep freed memory in the process (bench_common.MALLOC_KEEP: without it PyTorch's
    # fresh block per op costs page faults, up to 4x on a virtual machine; ours draws on a pool).
    env = bench_common.malloc_keep_env(dict(os.environ, OMP_NUM_THREADS=str(args.threads)))

    ours_cmd = [args.metacl, "bench", args.bench, "--json"]
    if args.backend:
        ours_cmd += ["--backend", args.backend]
    ours_cmd += ["--threads", str(args.threads)]
    if args.reps is not None:
        ours_cmd += ["--reps", str(args.reps)]
    torch_cmd = [pick_python(args.python), TORCH_SCRIPT, "--json", "--threads", str(args.threads)]
    if args.reps is not None:
        torch_cmd += ["--reps", str(args.reps)]
    if args.only:
        torch_cmd += ["--only", ",".join(args.only)]
        ours_cmd += ["--only", ",".join(args.only)]

    ours = run_json("metacl", ours_cmd, env)
    if ours is None:
        return 1
    # PyTorch's matrix products go to OpenBLAS, whose own thread pool spins beside PyTorch's
    # OpenMP pool on the same cores; on 2 cores that can make some workloads several times
    # slower. The baseline is run both ways (OpenBLAS with the same threads, and with 1) and
    # each workload keeps its faster run: the ratios are against PyTorch at its best.
    # (Only OpenBLAS reads OPENBLAS_NUM_THREADS: another BLAS runs once.)
    # An OpenBLAS that does not know this CPU model runs generic SSE3 kernels (Prescott), several
    # times slower than its AVX ones; Debian's 0.3.21 runs AVX2 kernels on AMD's AVX-512 CPUs
    # (Zen 5: 1.8x slower products than its AVX-512 ones); and OPENBLAS_CORETYPE in the caller's
    # environment (a machine image may set it) can ask for narrower kernels still. The baseline
    # then gets the core of the widest kernels the CPU's flags allow, and says so in its record,
    # its header line and here.
    core = bench_common.probe_openblas_core(env=env, keep_coretype=True)
    forced = bench_common.openblas_core_override(core, bench_common.cpu_flags())
    if forced:
        asked = env.get("OPENBLAS_CORETYPE")
        print("bench-acl-vs-torch: OpenBLAS %s its %s kernels on this CPU; the baseline runs with "
              "OPENBLAS_CORETYPE=%s" % ("was asked for (OPENBLAS_CORETYPE=%s)" % asked if asked else "chose",
                                        core, forced), file=sys.stderr)
        env["OPENBLAS_CORETYPE"] = forced
    recs = []
    for blas in (str(args.threads), "1"):
        rec = run_json("pytorch (OPENBLAS_NUM_THREADS=%s)" % blas, torch_cmd, dict(env, OPENBLAS_NUM_THREADS=blas))
        if rec is None:
            return 1
        why = bench_common.blas_refusal(rec.get("blas"))
        if not why:
            why = bench_common.malloc_refusal((rec.get("blas") or {}).get("glibc_tunables"))
        if why:
            print("bench-acl-vs-torch: no ratios: %s" % why, file=sys.stderr)
            return 1
        rec["blas_threads"] = int(blas)
        recs.append(rec)
        if args.threads == 1 or rec["blas"].get("kind") != "openblas":
            break
    torch_rec = best_of(recs)

    rows = compare(ours, torch_rec, args.only, args.goal)
    if args.json:
        print(json.dumps({"bench": args.bench + "-vs-torch", "threads": args.threads,
                          "goal_speedup": args.goal, "ours": ours, "pytorch": torch_rec,
                          "workloads": rows}))
    else:
        print(markdown(rows, ours, torch_rec, args.threads, args.goal))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
