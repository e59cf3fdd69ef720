#!/bin/sh
# test-torch-tools.sh — the PyTorch baseline's fairness checks (tools/torch/), without PyTorch:
#   1. bench_common.mapped_blas_libs finds the BLAS libraries in a /proc/<pid>/maps text, and
#      classify_blas names them: Debian's reference libblas3 (.../blas/libblas.so.3) is
#      "reference", OpenBLAS's libblas.so.3 (.../openblas-pthread/) and a libblas.so.3 that
#      exports openblas_get_corename are "openblas"; where the reference library is installed,
#      the real file (probed with ctypes) is "reference" too; blas_refusal refuses the reference
#      BLAS naming `apt-get install libopenblas0-pthread` and accepts OpenBLAS, but refuses
#      OpenBLAS's generic kernels (Prescott), and its AVX2 ones (Haswell), on a CPU with AVX-512
#      naming OPENBLAS_CORETYPE=SkylakeX, and openblas_core_override picks SkylakeX / Haswell /
#      none by the CPU's flags and the core's width; malloc_keep_env / malloc_refusal: the
#      malloc settings of a fair baseline (freed memory kept), merged and checked;
#   2. bench-acl-vs-torch.py with a fake metacl and a fake interpreter for the twin (--python):
#      a baseline on the reference BLAS gives exit 1, that message and no table; on OpenBLAS the
#      table with the ratio 4.00x, the BLAS line (core type) and a second run with
#      OPENBLAS_NUM_THREADS=1, both with GLIBC_TUNABLES holding MALLOC_KEEP after the caller's
#      own tunables; a baseline record without them is refused; a baseline on MKL runs once;
#   2b. the roofline ceiling (PyTorch median / our bound_ms): the "bound ms" and "ceiling"
#      columns, "unreachable (ceiling X < goal)" only where the ceiling is below the goal, the
#      JSON rows' ceiling and reachable checked against the formula (a wrong one is caught);
#   3. every twin answers --help and rejects an unknown --only with exit 2 (no torch needed);
#   4. tools/scripts/bench-shared.py --compare OMP_DYNAMIC=false --rounds 3 with a fake metacl
#      whose medians depend on the call: the runs alternate (1 thread, 2, 2 compared) three
#      times, OMP_NUM_THREADS is not passed on, OMP_DYNAMIC only to the compared runs, and the
#      table has the medians of the three rounds (12, 9, 21: not a mean, not the first or last),
#      the speed-ups and "no slower" yes / no;
#   5. tools/scripts/bench-ab.py over `metacl bench gemm --json` arrays: each shape a workload
#      named by its op and size, its ms 2·M·N·K / the median GFLOP/s, the speed-up per round
#      (a build twice as fast in both rounds: 2.00), shapes apart by their transposes.
# The checks can fail: the fake records are the ones a wrong classification would pass through.
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
PY=${PYTHON:-python3}
TMP=test-torch-tools.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
command -v "$PY" >/dev/null 2>&1 || { echo "test-torch-tools: no $PY: skipped"; exit 77; }
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
T=$SRCDIR/tools/torch

# 1. classification
check "bench_common's BLAS classification" 0 env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$T" "$PY" -c '
import os, sys
import bench_common as b
maps = """7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
7f01-7f02 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3
7f02-7f03 r--p 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/blas/libblas.so.3
7f03-7f04 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0
7f04-7f05 rw-p 00000000 00:00 0 [heap]
7f05-7f06 r-xp 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libblasfeo.so
"""
got = b.mapped_blas_libs(maps)
want = ["/usr/lib/x86_64-linux-gnu/blas/libblas.so.3",
        "/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0"]
bad = []
if got != want: bad.append("mapped_blas_libs: %r, expected %r" % (got, want))
no = lambda s: False
cases = [("/usr/lib/x86_64-linux-gnu/blas/libblas.so.3", no, "reference"),
         ("/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3", no, "openblas"),
         ("/opt/x/libblas.so.3", lambda s: s == "openblas_get_corename", "openblas"),
         ("/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3", no, "blis"),
         ("/opt/intel/libmkl_rt.so.2", no, "mkl"),
         ("/opt/x/libsomething.so", no, "unknown")]
for path, sym, kind in cases:
    k = b.classify_blas(path, sym)
    if k != kind: bad.append("classify_blas(%s) = %s, expected %s" % (path, k, kind))
ref = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
if os.path.exists(ref):
    k = b.classify_blas(ref, b._symbol_probe(ref))
    if k != "reference": bad.append("the installed %s probes as %s" % (ref, k))
    else: print("the installed reference BLAS probes as reference")
why = b.blas_refusal({"kind": "reference", "library": ref})
if not why or "apt-get install libopenblas0-pthread" not in why: bad.append("no refusal of the reference BLAS: %r" % why)
if b.blas_refusal({"kind": "openblas", "library": "/x/libopenblas.so.0"}) is not None: bad.append("OpenBLAS refused")
if b.blas_refusal(None) is None: bad.append("a record without its BLAS accepted")
line = b.blas_line({"kind": "openblas", "library": "/x", "openblas_core": "Haswell", "cpu_capability": "AVX2"})
if "Haswell" not in line or "AVX2" not in line: bad.append("blas_line: %r" % line)
# OpenBLAS fallen back to its generic kernels on a CPU it does not know (Prescott on AVX-512)
avx512 = b.cpu_flags("processor : 0\nflags\t\t: fpu sse3 avx avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl\n")
avx2 = frozenset(("sse3", "avx", "avx2", "fma")); sse = frozenset(("sse3",))
if "avx512bw" not in avx512 or "fpu" not in avx512: bad.append("cpu_flags: %r" % sorted(avx512))
for core, flags, want in (("Prescott", avx512, "SkylakeX"), ("Prescott", avx2, "Haswell"),
                          ("Nehalem", avx2, "Haswell"), ("SkylakeX", avx512, None),
                          ("Haswell", avx512, "SkylakeX"), ("Zen", avx512, "SkylakeX"),
                          ("Haswell", avx2, None), ("Cooperlake", avx512, None),
                          ("Sandybridge", avx2, "Haswell"), ("Prescott", sse, None),
                          ("Unheardof", avx512, None), (None, avx512, None)):
    got = b.openblas_core_override(core, flags)
    if got != want: bad.append("openblas_core_override(%s, ..) = %s, expected %s" % (core, got, want))
ob = {"kind": "openblas", "library": "/x/libblas.so.3", "openblas_core": "Prescott"}
why = b.blas_refusal(ob, flags=avx512)
if not why or "OPENBLAS_CORETYPE=SkylakeX" not in why: bad.append("generic kernels on AVX-512 not refused: %r" % why)
if b.blas_refusal(ob, flags=sse) is not None: bad.append("Prescott refused on a CPU without AVX")
if b.blas_refusal(dict(ob, openblas_core="SkylakeX"), flags=avx512) is not None: bad.append("SkylakeX refused")
why = b.blas_refusal(dict(ob, openblas_core="Haswell"), flags=avx512)
if not why or "OPENBLAS_CORETYPE=SkylakeX" not in why: bad.append("AVX2 kernels on AVX-512 not refused: %r" % why)
if b.blas_refusal(dict(ob, openblas_core="Haswell"), flags=avx2) is not None: bad.append("Haswell refused on AVX2")
line = b.blas_line(dict(ob, openblas_core="SkylakeX", openblas_coretype_env="SkylakeX"))
if "OPENBLAS_CORETYPE=SkylakeX" not in line: bad.append("blas_line without the forced core: %r" % line)
# the malloc settings of a fair baseline
e = b.malloc_keep_env({"GLIBC_TUNABLES": "glibc.malloc.mmap_max=5:glibc.pthread.rseq=0", "X": "1"})
if e.get("X") != "1" or e["GLIBC_TUNABLES"] != ("glibc.pthread.rseq=0:glibc.malloc.mmap_max=0:"
        "glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=268435456"):
    bad.append("malloc_keep_env: %r" % e)
if b.malloc_refusal(b.malloc_keep_env({})["GLIBC_TUNABLES"]) is not None: bad.append("MALLOC_KEEP refused")
for t in (None, "", "glibc.malloc.mmap_max=0", "glibc.malloc.mmap_max=1:glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=268435456"):
    if b.malloc_refusal(t) is None: bad.append("malloc_refusal accepted %r" % t)
if "GLIBC_TUNABLES=(unset" not in b.blas_line({"kind": "openblas", "glibc_tunables": None}): bad.append("blas_line without tunables")
for m in bad: print("FAIL:", m)
sys.exit(1 if bad else 0)
'
echo "$LAST_OUT"

# 2. the comparison with fakes
cat >"$TMP/metacl" <<'EOF'
#!/bin/sh
# a fake metacl: $FAKE_OURS when set (a record with bounds), else a record without one
[ -n "$FAKE_OURS" ] && { printf '%s\n' "$FAKE_OURS"; exit 0; }
echo '{"bench":"acl","impl":"metacl","backend":"ref","threads":2,"workloads":[{"name":"srwm","desc":"x","reps":3,"ms_best":1.0,"ms_median":1.0}]}'
EOF
cat >"$TMP/python" <<'EOF'
#!/bin/sh
# a fake interpreter: ignores the script, prints the twin's record with the BLAS of $FAKE_BLAS
# and the OpenBLAS core $FAKE_CORE
echo "run OPENBLAS_NUM_THREADS=$OPENBLAS_NUM_THREADS GLIBC_TUNABLES=$GLIBC_TUNABLES" >>"$FAKE_LOG"
[ -n "$FAKE_NO_TUNABLES" ] && GLIBC_TUNABLES=
echo '{"bench":"acl","impl":"pytorch","version":"9.9","backend":"cpu","threads":2,"blas":{"kind":"'"$FAKE_BLAS"'","library":"/usr/lib/x86_64-linux-gnu/fake/libblas.so.3","openblas_core":"'"$FAKE_CORE"'","cpu_capability":"AVX2","glibc_tunables":"'"$GLIBC_TUNABLES"'"},"workloads":[{"name":"srwm","desc":"x","reps":3,"ms_best":4.0,"ms_median":4.0}]}'
EOF
chmod +x "$TMP/metacl" "$TMP/python"
# the fake record's core: the widest this machine's CPU runs (a narrower one is refused)
FAKE_CORE=$(PYTHONDONTWRITEBYTECODE=1 "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); import bench_common as b
print(b.openblas_core_for(b.cpu_flags()) or "Haswell")' "$T")
vs() { env FAKE_LOG="$TMP/log" FAKE_BLAS=$1 FAKE_CORE="$FAKE_CORE" GLIBC_TUNABLES=glibc.pthread.rseq=0 PYTHONDONTWRITEBYTECODE=1 "$PY" "$T/bench-acl-vs-torch.py" \
           --metacl "$TMP/metacl" --python "$TMP/python" --threads 2 --only srwm; }
check "vs-torch refuses the reference BLAS" 1 vs reference
expect_text "the refusal names the package" "apt-get install libopenblas0-pthread"
case $LAST_OUT in *"4.00x"*) fail=$((fail + 1)); echo "FAIL: a ratio was printed against the reference BLAS" ;; *) pass=$((pass + 1)) ;; esac
rm -f "$TMP/log"
check "vs-torch against OpenBLAS" 0 vs openblas
expect_text "the ratio" "| srwm | 1.00 / 1.00 | 4.00 / 4.00 | 4.00x | yes |"
expect_text "the BLAS line" "OpenBLAS core $FAKE_CORE"
[ "$(grep -c run "$TMP/log")" = 2 ] && grep -q "OPENBLAS_NUM_THREADS=1" "$TMP/log" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: OpenBLAS baseline not run twice (2 and 1 BLAS threads):"; cat "$TMP/log"; }
# the baseline keeps freed memory (bench_common.MALLOC_KEEP), the caller's other tunables kept
grep -q "GLIBC_TUNABLES=glibc.pthread.rseq=0:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.top_pad=268435456" "$TMP/log" &&
    pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the baseline ran without the malloc tunables:"; cat "$TMP/log"; }
expect_text "the BLAS line names the tunables" "GLIBC_TUNABLES=glibc.pthread.rseq=0:glibc.malloc.mmap_max=0"
export FAKE_NO_TUNABLES=1
check "vs-torch refuses a baseline on glibc's malloc defaults" 1 vs openblas
unset FAKE_NO_TUNABLES
expect_text "the refusal names the tunables" "glibc.malloc.mmap_max"
rm -f "$TMP/log"
check "vs-torch against MKL" 0 vs mkl
[ "$(grep -c run "$TMP/log")" = 1 ] && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: a non-OpenBLAS baseline ran more than once:"; cat "$TMP/log"; }

# 2b. the ceiling (PyTorch median / our bound_ms). PyTorch's srwm median is 4.0 ms (the fake
# twin); ours 2.0 ms, so the ratio is 2.00x, the goal 3x not met. With bound_ms 0.5 the ceiling
# is 8.00x (reachable); with bound_ms 2.0 it is 2.00x < 3x: unreachable. The JSON rows are
# checked against the formula by ceil_check, which is shown to reject a wrong ceiling (ours /
# bound instead of PyTorch / bound) and a wrong reachable flag.
ours_rec() { echo '{"bench":"acl","impl":"metacl","backend":"ref","threads":2,"peak_gflops":130.0,"triad_gbs":20.0,"workloads":[{"name":"srwm","desc":"x","reps":3,"ms_best":2.0,"ms_median":2.0,"bound_ms":'"$1"'}]}'; }
vsb() { env FAKE_OURS="$(ours_rec "$1")" FAKE_LOG="$TMP/log" FAKE_BLAS=openblas PYTHONDONTWRITEBYTECODE=1 "$PY" \
            "$T/bench-acl-vs-torch.py" --metacl "$TMP/metacl" --python "$TMP/python" --threads 2 --only srwm $2; }
ceil_check() { # ceil_check JSON: every row's ceiling = its PyTorch median / bound_ms, reachable = ceiling >= goal
    printf '%s' "$1" | "$PY" -c '
import json, sys
r = json.load(sys.stdin); bad = 0
for w in r["workloads"]:
    if w.get("bound_ms") is None: continue
    want = w["pytorch"]["ms_median"] / w["bound_ms"]
    if abs(w["ceiling"] - want) > 1e-3 * want or w["reachable"] != (want >= r["goal_speedup"]):
        print("FAIL: %s: ceiling %r reachable %r, expected %.3f %r" % (w["name"], w["ceiling"], w["reachable"], want, want >= r["goal_speedup"])); bad = 1
sys.exit(bad)'
}
check "vs-torch with a reachable bound" 0 vsb 0.5
expect_text "bound and ceiling columns" "| srwm | 2.00 / 2.00 | 4.00 / 4.00 | 2.00x | 0.50 | 8.00x | no |"
expect_text "the roofs line" "FMA peak 130.0 GFLOP/s, triad 20.0 GB/s"
case $LAST_OUT in *unreachable*) fail=$((fail + 1)); echo "FAIL: a reachable goal called unreachable" ;; *) pass=$((pass + 1)) ;; esac
check "vs-torch with an unreachable bound" 0 vsb 2.0
expect_text "unreachable" "| srwm | 2.00 / 2.00 | 4.00 / 4.00 | 2.00x | 2.00 | 2.00x | no, unreachable (ceiling 2.00x < 3x) |"
check "vs-torch --json with a bound" 0 vsb 0.5 --json
json_out=$(printf '%s\n' "$LAST_OUT" | grep '^{')
check "the JSON ceiling is PyTorch median / bound" 0 ceil_check "$json_out"
wrong=$(printf '%s' "$json_out" | sed 's/"ceiling": 8.0/"ceiling": 4.0/')
check "self-test: a wrong ceiling (ours / bound) is caught" 1 ceil_check "$wrong"
wrong=$(printf '%s' "$json_out" | sed 's/"reachable": true/"reachable": false/')
check "self-test: a wrong reachable flag is caught" 1 ceil_check "$wrong"
check "vs-torch --json with an unreachable bound" 0 vsb 2.0 --json
case $LAST_OUT in *'"reachable": false'*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)); echo "FAIL: the unreachable row is not reachable: false" ;; esac
check "its ceiling and reachable" 0 ceil_check "$(printf '%s\n' "$LAST_OUT" | grep '^{')"

# 3. the twins' flags
for s in acl oct smn lm; do
    check "bench-$s-torch.py --help" 0 env PYTHONDONTWRITEBYTECODE=1 "$PY" "$T/bench-$s-torch.py" --help
    check "bench-$s-torch.py --only nope" 2 env PYTHONDONTWRITEBYTECODE=1 "$PY" "$T/bench-$s-torch.py" --only nope
    expect_text "bench-$s-torch.py names the workloads" "unknown workload(s) nope"
done

# 4. bench-shared.py --compare --rounds with a fake metacl
cat >"$TMP/metacl-shared" <<'EOF'
#!/bin/sh
# call n (1..9) of the log: round r = (n-1)/3, column c = (n-1)%3 (1 thread, 2, 2 compared)
echo "call threads=$5 dyn=${OMP_DYNAMIC:-unset} omp=${OMP_NUM_THREADS:-unset}" >>"$FAKE_LOG"
n=$(grep -c call "$FAKE_LOG")
ms=$(echo "10 8 25 30 9 21 12 100 5" | cut -d' ' -f"$n")
echo '{"bench":"lm","threads":'"$5"',"workloads":[{"name":"w","reps":3,"ms_best":1,"ms_median":'"$ms"'}]}'
EOF
chmod +x "$TMP/metacl-shared"
rm -f "$TMP/log"
check "bench-shared --compare --rounds 3" 0 env FAKE_LOG="$TMP/log" OMP_NUM_THREADS=7 \
    PYTHONDONTWRITEBYTECODE=1 "$PY" "$SRCDIR/tools/scripts/bench-shared.py" --metacl "$TMP/metacl-shared" \
    --bench lm --competitors 0 --compare OMP_DYNAMIC=false --rounds 3
# medians 12 / 9 / 21; per-round speed-ups 1.25, 3.33, 0.12 (geometric mean 0.79) and 0.40,
# 1.43, 2.40 (1.11): intervals that hold 1, so ties
expect_text "bench-shared: medians and per-round intervals" \
    "| w | 12.00 | 9.00 | 1.33x | 0.79 [0.01, 55.25] | tie | 21.00 | 0.57x | 1.11 [0.11, 10.97] | tie |"
want="call threads=1 dyn=unset omp=unset
call threads=2 dyn=unset omp=unset
call threads=2 dyn=false omp=unset"
[ "$(cat "$TMP/log")" = "$want
$want
$want" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: bench-shared's runs:"; cat "$TMP/log"; }
# the verdict: faster / slower only when the 95 % interval clears 1 (t, 2 df: 4.30)
verdicts() {
    PYTHONDONTWRITEBYTECODE=1 "$PY" - "$SRCDIR/tools/scripts/bench-shared.py" "$@" <<'PY'
import importlib.util, sys
sp = importlib.util.spec_from_file_location("bs", sys.argv[1])
bs = importlib.util.module_from_spec(sp)
sp.loader.exec_module(bs)
pairs = [tuple(float(v) for v in p.split(",")) for p in sys.argv[3:]]
g, ci, v = bs.ratio_stats(pairs)
print(v)
sys.exit(0 if v == sys.argv[2] else 1)
PY
}
check "bench-shared: 1.25-1.41x in 3 rounds is faster" 0 verdicts faster 10,8 11,8 12,8.5
check "bench-shared: 0.80-0.85x in 3 rounds is slower" 0 verdicts slower 8,10 8,9.5 8.5,10.5
check "bench-shared: 0.9-1.1x is a tie" 0 verdicts tie 9,10 11,10 10,10
check "self-test: a slower run is not called a tie" 1 verdicts tie 8,10 8,9.5 8.5,10.5
check "bench-shared: one round gives no interval, a tie" 0 verdicts tie 10,5
check "bench-shared --rounds 0" 2 env PYTHONDONTWRITEBYTECODE=1 "$PY" "$SRCDIR/tools/scripts/bench-shared.py" \
    --metacl "$TMP/metacl-shared" --rounds 0

# 5. bench-ab over bench gemm arrays: A at 100 GFLOP/s, B at 200 (NT) and 100 (NN) in both rounds
g() { printf '[{"ta": 0, "tb": 1, "M": 32, "N": 256, "K": 48, "gflops_best": 1, "gflops_median": %s},' "$1"
      printf ' {"ta": 0, "tb": 0, "M": 32, "N": 256, "K": 48, "gflops_best": 1, "gflops_median": 100}]\n'; }
{ echo "A 1 $(g 100)"; echo "B 1 $(g 200)"; echo "A 2 $(g 100)"; echo "B 2 $(g 200)"; } >"$TMP/ab.txt"
ab_gemm() {
    PYTHONDONTWRITEBYTECODE=1 "$PY" "$SRCDIR/tools/scripts/bench-ab.py" "$TMP/ab.txt" --json >"$TMP/ab.json" &&
        PYTHONDONTWRITEBYTECODE=1 "$PY" - "$TMP/ab.json" "$1" <<'PY'
import json, sys
w = {r["name"]: r for r in json.load(open(sys.argv[1]))["workloads"]}
nt, nn = w["NT 32x256x48"], w["NN 32x256x48"]
ms = 2.0 * 32 * 256 * 48 / 100e9 * 1e3
ok = (nt["bench"] == "gemm" and abs(nt["a_ms"] - ms) < 1e-9 and abs(nt["b_ms"] - ms / 2) < 1e-9
      and abs(nt["speedup"] - float(sys.argv[2])) < 1e-9 and abs(nn["speedup"] - 1.0) < 1e-9)
sys.exit(0 if ok else 1)
PY
}
check "bench-ab over bench gemm arrays" 0 ab_gemm 2.0
check "self-test: a wrong speed-up is caught" 1 ab_gemm 1.0

rm -rf "$TMP"
echo "test-torch-tools: $pass passed, $fail failed"
[ $fail -eq 0 ]
