"""bench_common.py — what the PyTorch twins of `metacl bench` share (tools/torch/bench-acl-torch.py,
bench-oct-torch.py, bench-smn-torch.py, bench-lm-torch.py import it from their own folder; the
comparison tools/torch/bench-acl-vs-torch.py imports the BLAS check):

  - the flags every twin takes, and their checks:
      --json                         one JSON record instead of the table
      --threads T                    PyTorch's CPU threads (torch.set_num_threads; OMP_NUM_THREADS
                                     is set to T before torch is imported unless already set)
      --reps R                       timed iterations per workload (default: the script's own)
      --only A,B                     run only these workloads (repeatable or a comma list)
      --device cpu | cuda | cuda:N   where the workloads run (default cpu). On CUDA every tensor,
                                     parameter and generator the scripts make is created on the
                                     device (torch.set_default_device, PyTorch >= 2.0)
      --warmup N                     untimed iterations first (default 1 on the CPU, as metacl
                                     bench does; 3 on CUDA, where the first ones also choose
                                     cuDNN's algorithms and fill the caching allocator)
      --tf32                         CUDA only: allow TF32. Off by default: metacl computes in
                                     plain float32, so PyTorch does too.
  - the timing loop: each timed iteration is wall-clock time between two
    torch.cuda.synchronize() calls on CUDA, plain wall-clock time on the CPU; ms_best = fastest,
    ms_median = median of the timed iterations;
  - which BLAS PyTorch's CPU matrix products actually run on, and on which CPU kernels
    (blas_info below): Debian's python3-torch calls whatever libblas.so.3 the alternatives
    system provides, and with only the reference libblas3 its matrix products are 10-27x slower,
    which would make any ratio against it the baseline's fault;
  - one main() that runs the chosen workloads and prints the table or the JSON record.
"""

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import time

INSTALL_BLAS = "apt-get install libopenblas0-pthread"


# ---------------------------------------------------------------------------------------------
# Flags

def add_args(ap, workloads, threads=2):
    ap.add_argument("--json", action="store_true", help="print one JSON record")
    ap.add_argument("--threads", type=int, default=threads,
                    help="PyTorch CPU threads (default %d)" % threads)
    ap.add_argument("--reps", type=int, default=None, help="timed iterations per workload")
    ap.add_argument("--only", action="append", default=None, metavar="NAME",
                    help="run only these workloads (repeatable or comma list): " + ", ".join(workloads))
    ap.add_argument("--device", default="cpu",
                    help="cpu (default), cuda or cuda:N: where the workloads run")
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed iterations first (default 1 on the CPU, 3 on CUDA)")
    ap.add_argument("--tf32", action="store_true",
                    help="CUDA: allow TF32 (default: plain float32, as metacl)")


def check_args(ap, a, workloads):
    """Checks the flags (ap.error exits 2) and turns a.only into the workloads to run, in table order."""
    if a.threads < 1:
        ap.error("--threads must be >= 1")
    if a.reps is not None and a.reps < 1:
        ap.error("--reps must be >= 1")
    if a.device != "cpu" and not re.fullmatch(r"cuda(:[0-9]+)?", a.device):
        ap.error("--device must be cpu, cuda or cuda:N (not %r)" % a.device)
    if a.warmup is not None and a.warmup < 0:
        ap.error("--warmup must be >= 0")
    if a.only:
        names = [n.strip() for item in a.only for n in item.split(",") if n.strip()]
        bad = [n for n in names if n not in workloads]
        if bad or not names:
            ap.error("--only: unknown workload(s) %s (available: %s)"
                     % (", ".join(bad) or "''", ", ".join(workloads)))
        a.only = [w for w in workloads if w in names]
    else:
        a.only = list(workloads)


def import_torch(prog):
    """import torch, or exit 1 with how to install it."""
    try:
        import torch
    except ImportError as e:
        msg = ("%s: PyTorch is not available to %s (%s).\n"
               "  install it with: apt-get install python3-torch %s" % (prog, sys.executable, e,
                                                                       INSTALL_BLAS.split()[-1]))
        if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") \
                and os.path.exists("/usr/bin/python3"):
            msg += "\n  (Debian's package is for /usr/bin/python3: run this script with it)"
        print(msg, file=sys.stderr)
        sys.exit(1)
    return torch


# ---------------------------------------------------------------------------------------------
# Which BLAS

# the file names of BLAS libraries (the reference one, OpenBLAS, MKL, BLIS, ATLAS, FlexiBLAS)
BLAS_FILE = re.compile(r"^lib(blas|cblas|openblas\w*|mkl_\w+|blis\w*|[st]?atlas|flexiblas\w*)\.so")
# kind -> a symbol only that library exports (to recognise a libblas.so.3 by what it is)
BLAS_MARKERS = (("openblas", "openblas_get_corename"), ("mkl", "mkl_get_version"),
                ("blis", "bli_info_get_version_str"), ("flexiblas", "flexiblas_exit"),
                ("atlas", "ATL_buildinfo"))


def mapped_blas_libs(maps_text):
    """The BLAS libraries in a /proc/<pid>/maps text (resolved paths, first-mapped first)."""
    out = []
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/"):
            path = parts[5].strip()
            if BLAS_FILE.match(os.path.basename(path)) and path not in out:
                out.append(path)
    return out


def classify_blas(path, has_symbol):
    """The kind of the BLAS at path: openblas, mkl, blis, flexiblas, atlas, reference or unknown.
    has_symbol(name) says whether the loaded library exports name. A libblas.so* that is none of
    the optimized ones is the reference (netlib) BLAS: Debian's libblas3 installs it as
    .../blas/libblas.so.3; OpenBLAS, BLIS and ATLAS install theirs in their own folders."""
    low = path.lower()
    for kind, sym in BLAS_MARKERS:
        if kind in low or has_symbol(sym):
            return kind
    if os.path.basename(path).startswith(("libblas.so", "libcblas.so")):
        return "reference"
    return "unknown"


def _symbol_probe(path):
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return lambda name: False
    return lambda name: hasattr(lib, name)


def _c_string(path, fn):
    try:
        f = getattr(ctypes.CDLL(path), fn)
        f.restype = ctypes.c_char_p
        return f().decode("ascii", "replace").strip()
    except (OSError, AttributeError):
        return None


# OpenBLAS's cores without AVX: what a DYNAMIC_ARCH build falls back to on a CPU model it does
# not know. Seen here: Debian's OpenBLAS 0.3.21 on a 5th-generation Xeon (CPU family 6, model
# 207, AVX-512) picked Prescott, its SSE3 kernels: a 512 x 512 product ran at 24 GFLOP/s on one
# thread, against 117 with OPENBLAS_CORETYPE=SkylakeX.
OPENBLAS_GENERIC_CORES = frozenset((
    "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Katmai", "Coppermine",
    "Northwood", "Banias", "Opteron", "Opteron_SSE3", "Athlon", "Barcelona", "Bobcat", "Nano"))
AVX512_FLAGS = frozenset(("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"))


def cpu_flags(text=None):
    """The CPU's feature flags (the first "flags" line of /proc/cpuinfo, or of text)."""
    if text is None:
        try:
            with open("/proc/cpuinfo") as f:
                text = f.read()
        except OSError:
            return frozenset()
    for line in text.splitlines():
        if line.startswith("flags") and ":" in line:
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def openblas_core_for(flags):
    """The OpenBLAS core type whose kernels these CPU flags run (None: no vector core)."""
    if AVX512_FLAGS <= flags:
        return "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    if "avx" in flags:
        return "Sandybridge"
    return None


# OpenBLAS's vector cores by the widest kernels they run (0: none, 1: AVX, 2: AVX2, 3: AVX-512).
# Debian's OpenBLAS 0.3.21 maps AMD's Zen CPUs, Zen 5 included, to its Haswell (AVX2) kernels:
# seen here on an AMD EPYC of family 26 (Zen 5, AVX-512 on a full-width data path), a 512 x 512
# product ran at 100 GFLOP/s on one thread with them and at 176 with OPENBLAS_CORETYPE=SkylakeX.
OPENBLAS_CORE_WIDTH = {"Sandybridge": 1, "Bulldozer": 1, "Piledriver": 1, "Steamroller": 1,
                       "Excavator": 1, "Haswell": 2, "Zen": 2, "SkylakeX": 3, "Cooperlake": 3,
                       "SapphireRapids": 3}


def openblas_core_width(core):
    """0..3 (none, AVX, AVX2, AVX-512) for a core OpenBLAS names, None for a name not known here."""
    if core in OPENBLAS_GENERIC_CORES:
        return 0
    return OPENBLAS_CORE_WIDTH.get(core)


def openblas_core_override(core, flags):
    """The OPENBLAS_CORETYPE a fair baseline needs when OpenBLAS runs core on a CPU with these
    flags: the core of the widest kernels the flags allow where core's are narrower (a generic
    core a build falls back to on a CPU it does not know, AVX2 kernels on an AVX-512 CPU), else
    None (core is as wide as the CPU allows, or not a name known here)."""
    best = openblas_core_for(flags)
    have = openblas_core_width(core)
    if best is None or have is None:
        return None
    return best if have < OPENBLAS_CORE_WIDTH[best] else None


PROBE_CORE = """import ctypes
try:
    f = ctypes.CDLL("libblas.so.3").openblas_get_corename
    f.restype = ctypes.c_char_p
    print(f().decode("ascii", "replace"))
except (OSError, AttributeError):
    pass
"""


def probe_openblas_core(python=None, env=None, keep_coretype=False):
    """The core type OpenBLAS picks on this machine (libblas.so.3 loaded in a child process,
    by itself; keep_coretype: under env's OPENBLAS_CORETYPE, when set), or None when
    libblas.so.3 is not OpenBLAS."""
    env = dict(os.environ if env is None else env, OPENBLAS_NUM_THREADS="1")
    if not keep_coretype:
        env.pop("OPENBLAS_CORETYPE", None)
    try:
        out = subprocess.run([python or sys.executable, "-c", PROBE_CORE], env=env,
                             capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


def _c_int(path, fn):
    try:
        f = getattr(ctypes.CDLL(path), fn)
        f.restype = ctypes.c_int
        return int(f())
    except (OSError, AttributeError):
        return None


def blas_info(torch):
    """Which BLAS PyTorch's CPU matrix products ran on, after one: a dict with
    kind (openblas, mkl, blis, flexiblas, atlas, reference, unknown), library (the resolved path
    mapped into this process, or 'linked into torch'), the kernels (OpenBLAS's core type and
    build, PyTorch's CPU capability) and BLAS threads where the library says."""
    a = torch.ones(256, 256)
    (a @ a).sum().item()
    a = torch.ones(64, 64, dtype=torch.float64)
    (a @ a).sum().item()
    try:
        with open("/proc/self/maps") as f:
            libs = mapped_blas_libs(f.read())
    except OSError:
        libs = []
    config = ""
    try:
        config = torch.__config__.show()
    except Exception:  # noqa: BLE001 - old or stripped builds
        pass
    info = {"kind": "unknown", "library": None}
    # The library that matters: an optimized one if mapped (OpenBLAS maps both libopenblas and its
    # libblas.so.3), else the first.
    kinds = [(classify_blas(p, _symbol_probe(p)), p) for p in libs]
    best = [kp for kp in kinds if kp[0] not in ("reference", "unknown")] or kinds
    if best:
        info["kind"], info["library"] = best[0]
        if len(libs) > 1:
            info["also_mapped"] = [p for p in libs if p != best[0][1]]
    else:
        m = re.search(r"BLAS_INFO=(\w+)", config)
        if m:  # no BLAS library of its own: linked into libtorch (the pip wheels' MKL)
            info["kind"] = {"mkl": "mkl", "open": "openblas", "blis": "blis"}.get(m.group(1), m.group(1))
            info["library"] = "linked into torch (BLAS_INFO=%s)" % m.group(1)
    if info["kind"] == "openblas" and info["library"].startswith("/"):
        info["openblas_core"] = _c_string(info["library"], "openblas_get_corename")
        info["openblas_config"] = _c_string(info["library"], "openblas_get_config")
        info["blas_threads"] = _c_int(info["library"], "openblas_get_num_threads")
        info["openblas_coretype_env"] = os.environ.get("OPENBLAS_CORETYPE")
    if info["kind"] == "mkl":
        info["mkl"] = bool(getattr(torch.backends, "mkl", None) and torch.backends.mkl.is_available())
    cap = None
    get_cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if get_cap is not None:
        cap = get_cap()
    else:
        m = re.search(r"CPU capability usage: *(\S+)", config)
        cap = m.group(1) if m else None
    info["cpu_capability"] = cap
    info["glibc_tunables"] = os.environ.get("GLIBC_TUNABLES")
    return info


def blas_line(info):
    """One line for people: the BLAS and its kernels."""
    s = "BLAS: %s (%s)" % (info.get("kind"), info.get("library") or "no BLAS library found")
    if info.get("openblas_core"):
        s += ", OpenBLAS core %s" % info["openblas_core"]
        if info.get("openblas_coretype_env"):
            s += " (OPENBLAS_CORETYPE=%s)" % info["openblas_coretype_env"]
    if info.get("openblas_config"):
        s += " [%s]" % info["openblas_config"]
    if info.get("blas_threads") is not None:
        s += ", %d BLAS thread(s)" % info["blas_threads"]
    s += "; PyTorch CPU kernels: %s" % (info.get("cpu_capability") or "unknown")
    if "glibc_tunables" in info:
        s += "; GLIBC_TUNABLES=%s" % (info["glibc_tunables"] or "(unset: glibc's malloc defaults)")
    return s


def blas_refusal(info, flags=None):
    """None when the BLAS is fit for a speed comparison, else why not and what to do. flags: the
    CPU's (default: this machine's), to tell an OpenBLAS that fell back to generic kernels."""
    if not info:
        return ("the PyTorch baseline did not report which BLAS it used (an old "
                "tools/torch/bench_common.py?)")
    if info.get("kind") == "reference":
        return ("PyTorch's matrix products ran on the reference BLAS (%s): 10-27x slower than an "
                "optimized BLAS, so a ratio against it would be the baseline's fault, not a "
                "measurement. Install OpenBLAS (`%s`; it takes over libblas.so.3 through "
                "update-alternatives) and run again." % (info.get("library"), INSTALL_BLAS))
    core = info.get("openblas_core")
    if info.get("kind") == "openblas" and core:
        better = openblas_core_override(core, cpu_flags() if flags is None else flags)
        if better:
            return ("OpenBLAS ran its %s kernels on a CPU that has %s (a build that does not know "
                    "this CPU model falls back to narrower kernels, or OPENBLAS_CORETYPE asked for "
                    "them): its matrix products were up to 5x slower than with its %s kernels, so "
                    "a ratio would be the baseline's fault. Run with OPENBLAS_CORETYPE=%s "
                    "(bench-acl-vs-torch.py sets it when it sees this)."
                    % (core, "AVX-512" if better == "SkylakeX" else "AVX2" if better == "Haswell" else "AVX",
                       better, better))
    return None


# ---------------------------------------------------------------------------------------------
# The allocator

# PyTorch's CPU tensors come from malloc, one fresh block per op output and gradient, and glibc's
# malloc hands a big block back to the kernel when it is freed (mmap'ed blocks from 128 KiB up,
# munmap at free; a heap top past 128 KiB trimmed): the next op's block is then fresh pages,
# each a page fault that zeroes it. On the virtual machines here a fault is expensive: on the
# 2026-12-01 AMD EPYC (Zen 5) machine PyTorch's Conv-4 step took 1520 ms with glibc's defaults
# and 391 ms with these settings, its LM training step 574 and 164 ms, the Sparse-MetaNet WCST
# window 70 and 11 ms (one thread; metacl's own times did not move: its tensors come from a
# buffer pool). These keep freed memory in the process (no mmap'ed blocks, no trimming, the heap
# grown 256 MiB at a time), as a long-running training job would; both sides of a comparison run
# with them (bench-acl-vs-torch.py), and a twin's record says which malloc settings it ran with.
MALLOC_KEEP = (("glibc.malloc.mmap_max", "0"), ("glibc.malloc.trim_threshold", "17179869184"),
               ("glibc.malloc.top_pad", "268435456"))


def malloc_keep_env(env):
    """env with GLIBC_TUNABLES holding MALLOC_KEEP (the caller's other tunables kept; MALLOC_KEEP's
    names take MALLOC_KEEP's values)."""
    have = [t for t in (env.get("GLIBC_TUNABLES") or "").split(":") if t and "=" in t]
    keep = dict(MALLOC_KEEP)
    rest = [t for t in have if t.split("=", 1)[0] not in keep]
    return dict(env, GLIBC_TUNABLES=":".join(rest + ["%s=%s" % kv for kv in MALLOC_KEEP]))


def malloc_refusal(tunables):
    """None when a run's GLIBC_TUNABLES (a string or None) keeps freed memory as MALLOC_KEEP
    does, else why a ratio against it would not be fair."""
    have = dict(t.split("=", 1) for t in (tunables or "").split(":") if "=" in t)
    missing = [k for k, v in MALLOC_KEEP if have.get(k) != v]
    if not missing:
        return None
    return ("the PyTorch baseline ran with glibc's malloc returning freed memory to the kernel "
            "(GLIBC_TUNABLES without %s): each op's output is then fresh pages, a page fault each, "
            "up to 4x slower on a virtual machine, so a ratio would be the allocator's fault. "
            "bench-acl-vs-torch.py runs both sides with GLIBC_TUNABLES=%s."
            % (", ".join(missing), ":".join("%s=%s" % kv for kv in MALLOC_KEEP)))


# ---------------------------------------------------------------------------------------------
# Device and timing

class Device:
    """The device of one run: made after `import torch`, before any tensor."""

    def __init__(self, torch, a, prog):
        self.torch = torch
        self.name = a.device
        self.cuda = a.device.startswith("cuda")
        self.warmup = a.warmup if a.warmup is not None else (3 if self.cuda else 1)
        self.tf32 = bool(a.tf32) and self.cuda
        self.device_name = "cpu"
        if not self.cuda:
            return
        if not torch.cuda.is_available():
            raise SystemExit("%s: --device %s: PyTorch %s sees no CUDA device"
                             % (prog, a.device, torch.__version__))
        if not hasattr(torch, "set_default_device"):
            raise SystemExit("%s: --device %s needs PyTorch >= 2.0 (this is %s)"
                             % (prog, a.device, torch.__version__))
        if ":" in a.device:
            torch.cuda.set_device(int(a.device.split(":")[1]))
        torch.set_default_device(a.device)
        torch.backends.cuda.matmul.allow_tf32 = self.tf32
        torch.backends.cudnn.allow_tf32 = self.tf32
        self.device_name = torch.cuda.get_device_name()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def generator(self, seed):
        """A seeded generator on the device (a CPU generator cannot feed CUDA tensors)."""
        return self.torch.Generator(device=self.name).manual_seed(seed)

    def time_reps(self, run, reps):
        """warm-up, then reps timed calls of run(); returns (best ms, median ms)."""
        for _ in range(self.warmup):
            run()
        self.sync()
        ms = []
        for _ in range(reps):
            self.sync()
            t0 = time.perf_counter()
            run()
            self.sync()
            ms.append((time.perf_counter() - t0) * 1e3)
        return min(ms), statistics.median(ms)

    def record(self):
        """The fields a script's JSON record gets."""
        return {"device": self.name, "device_name": self.device_name, "warmup": self.warmup,
                "tf32": self.tf32}


# ---------------------------------------------------------------------------------------------
# The twins' main

def main(argv, prog, bench, workloads, default_reps, build, add_extra_args=None, setup=None):
    """Parses the flags, imports torch, reports the BLAS, runs each chosen workload and prints.

    build(torch, dev, name) -> (run, extra): run() is one iteration; extra(median_ms) -> dict
      of more fields for the workload's JSON entry (desc, bytes_per_s, log_bytes_sparse), or None.
    add_extra_args(ap): more flags; setup(torch, dev, a) -> None, or an exit status to stop with.
    """
    ap = argparse.ArgumentParser(prog=prog, description="PyTorch twin of `metacl bench %s`" % bench)
    add_args(ap, workloads)
    if add_extra_args:
        add_extra_args(ap)
    a = ap.parse_args(argv)
    check_args(ap, a, workloads)
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    torch = import_torch(prog)
    dev = Device(torch, a, prog)
    torch.set_num_threads(a.threads)
    if setup is not None:
        rc = setup(torch, dev, a)
        if rc is not None:
            return rc
    blas = blas_info(torch)
    if not a.json:
        print("%s: PyTorch %s, %s (%s), %d thread(s); %s"
              % (prog, torch.__version__, dev.name, dev.device_name, torch.get_num_threads(),
                 blas_line(blas)), file=sys.stderr)
    if not dev.cuda and blas_refusal(blas):
        print("%s: warning: %s" % (prog, blas_refusal(blas)), file=sys.stderr)
    out = []
    for name in a.only:
        torch.manual_seed(0)
        run, extra = build(torch, dev, name)
        reps = a.reps or default_reps[name]
        best, median = dev.time_reps(run, reps)
        w = {"name": name, "desc": name, "reps": reps, "ms_best": round(best, 3),
             "ms_median": round(median, 3)}
        if extra is not None:
            w.update(extra(median))
        out.append(w)
    if a.json:
        rec = {"bench": bench, "impl": "pytorch", "version": torch.__version__, "backend": dev.name,
               "threads": torch.get_num_threads()}
        rec.update(dev.record())
        rec["blas"] = blas
        rec["workloads"] = out
        print(json.dumps(rec))
        return 0
    width = max(len(w["name"]) for w in out) if out else 8
    print("%-*s %10s %10s %5s" % (width, "workload", "best ms", "median ms", "reps"))
    for w in out:
        line = "%-*s %10.2f %10.2f %5d" % (width, w["name"], w["ms_best"], w["ms_median"], w["reps"])
        if "bytes_per_s" in w:
            line += "  %8.0f bytes/s" % w["bytes_per_s"]
        if w["desc"] != w["name"]:
            line += "  %s" % w["desc"]
        print(line)
        if "log_bytes_sparse" in w:
            print("  window log before the gradient step: %.1f KiB" % (w["log_bytes_sparse"] / 1024.0))
    return 0
