#!/bin/bash
# gpu-check.sh -- the one-shot check of metacl on a GPU machine, run from the bundle
# (doc/gpu.md; the bundle: doc/bundle.md). One command, a global deadline, a timeout on every
# step; a failed step does not stop the later ones.
#
# usage: gpu-check.sh [--out DIR] [--bundle DIR] [--deadline S] [--quick] [--reps N]
#                     [--torch-device auto|cuda|cpu|none] [--python EXE] [--icd PATH]
#                     [--skip PATTERN[,PATTERN...]] [--keep-logs] [--rounds N] [--tune S]
#
#   --out DIR        where summary.json, summary.md and logs.tar.gz go (default $OUT)
#   --bundle DIR     the bundle (default: the folder above this script's tools/, or this
#                    script's folder: wherever `run` is)
#   --deadline S     the whole check ends within S seconds (default 480): each step's timeout
#                    is cut to what is left, a step with under 5 s left is skipped ("deadline")
#   --quick          1 timed repetition, and only the cheaper workloads of each benchmark
#                    (acl: srwm, conv4_28; oct: all but attn_C4000; smn: all; lm: the three
#                    evaluations), for a CPU OpenCL device such as PoCL
#   --reps N         timed repetitions of every benchmark, both sides (default 3; --quick: 1)
#   --rounds N       run the benchmark pairs N times (default 1, at most 30): round 1 before
#                    the profile, rounds 2..N after it, each round metacl then PyTorch per
#                    bench; the comparison gives per workload the geometric mean of the
#                    per-round ratios, its 95 % interval (t on the logarithms) and a verdict
#                    (metacl faster / PyTorch faster only when the interval excludes 1, else
#                    tie). Rounds that the deadline cuts off are left out
#   --torch-device D where the PyTorch twins run: auto (default: cuda when PyTorch sees a CUDA
#                    device, else the PyTorch steps are skipped), cuda, cpu or none
#   --python EXE     the interpreter for the PyTorch scripts (default python3: the host's,
#                    never through the bundle's loader)
#   --icd PATH       passed to run: the OpenCL driver to use (default: run's own search)
#   --skip PATTERNS  skip the steps whose names match these comma-separated shell patterns
#                    (test-ops-*,bench-lm); repeatable, the lists add up
#   --keep-logs      keep DIR/logs/ besides logs.tar.gz
#   --tune SECONDS   last, CLBlast's GEMM tuners (bundled from Debian's clblast-utils) on the
#                    ACL step's most used products, at most SECONDS each, within the deadline;
#                    each tuner's JSON goes to logs/ (default 0: no tuning). NVIDIA's compiler
#                    makes them slow: 131 xgemm_direct configurations took 416 s on the H200
#
# Steps, in order: host, bundle (run --show, the manifest), nvidia-smi and clinfo (when
# installed), devices (run metacl devices), libs (run --list-libs metacl devices: which
# libraries come from the host), test-ops-F for every family F of `test-ops --families`
# (--backend opencl), test-srwm, test-opencl, test-backends-mlp, torch-info, then for B in acl
# oct smn lm: bench-B (metacl bench B --backend opencl --json) and torch-B (the PyTorch twin
# on the same workloads), profile-acl-step (METACL_PROFILE=1 metacl bench acl --backend
# opencl --only acl_step --reps 1), with --rounds N the pairs again as bench-B-rK and
# torch-B-rK (K = 2..N), last the tuners (--tune). The benchmarks use no data files (random inputs, fixed
# seeds). summary.json is rewritten after every step: each step's name, command, status (ok,
# failed, timeout, skipped), exit status, seconds, reason and the numbers read from its output;
# then the metacl/PyTorch comparison. Exit status: 0 when no step failed or timed out, 1
# otherwise, 2 on bad arguments.
set -eu

me=gpu-check
die() { echo "$me: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; }

here=$(cd "$(dirname "$0")" && pwd -P)
out=${OUT:-} bundle='' deadline=480 quick=0 reps='' torch_device=auto python=python3
icd='' skip='' keep_logs=0 tune=0 rounds=1
while [ $# -gt 0 ]; do
    case $1 in
    --out) [ $# -ge 2 ] || die "--out needs a folder"; out=$2; shift 2 ;;
    --bundle) [ $# -ge 2 ] || die "--bundle needs a folder"; bundle=$2; shift 2 ;;
    --deadline) [ $# -ge 2 ] || die "--deadline needs seconds"; deadline=$2; shift 2 ;;
    --quick) quick=1; shift ;;
    --reps) [ $# -ge 2 ] || die "--reps needs a number"; reps=$2; shift 2 ;;
    --torch-device) [ $# -ge 2 ] || die "--torch-device needs a value"; torch_device=$2; shift 2 ;;
    --python) [ $# -ge 2 ] || die "--python needs an interpreter"; python=$2; shift 2 ;;
    --icd) [ $# -ge 2 ] || die "--icd needs a path"; icd=$2; shift 2 ;;
    --skip) [ $# -ge 2 ] || die "--skip needs patterns"; skip="${skip:+$skip,}$2"; shift 2 ;;  # repeatable: the lists add up
    --keep-logs) keep_logs=1; shift ;;
    --tune) [ $# -ge 2 ] || die "--tune needs seconds"; tune=$2; shift 2 ;;
    --rounds) [ $# -ge 2 ] || die "--rounds needs a number"; rounds=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
    esac
done
case $deadline in ''|*[!0-9]*) die "--deadline takes whole seconds" ;; esac
case $tune in ''|*[!0-9]*) die "--tune takes whole seconds (0: no tuning)" ;; esac
case $rounds in [1-9]|[12][0-9]|30) ;; *) die "--rounds takes a number from 1 to 30" ;; esac
[ -z "$reps" ] && { [ $quick = 1 ] && reps=1 || reps=3; }
case $reps in ''|*[!0-9]*|0) die "--reps takes a positive number" ;; esac
case $torch_device in auto|cuda|cuda:[0-9]*|cpu|none) ;; *) die "--torch-device: auto, cuda, cpu or none" ;; esac
[ -n "$out" ] || die "give --out DIR (or set \$OUT)"
if [ -z "$bundle" ]; then
    for c in "$here/.." "$here"; do [ -x "$c/run" ] && { bundle=$c; break; }; done
    [ -n "$bundle" ] || die "no bundle around $here (no run next to tools/): give --bundle DIR"
fi
bundle=$(cd "$bundle" && pwd -P)
run=$bundle/run
[ -x "$run" ] || die "$run is missing: --bundle must name a bundle (make bundle)"
tools=$bundle/tools
command -v timeout >/dev/null || die "timeout (coreutils) is needed"

mkdir -p "$out"
out=$(cd "$out" && pwd -P)
logs=$out/logs
rm -rf "$logs"
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/metacl-gpu-check.XXXXXX")
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
t_start=$(now_ms)
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
RESERVE=8 # seconds kept for the summary and the log archive
run_args=()
[ -n "$icd" ] && run_args=(--icd "$icd")
# a fresh OpenCL program cache: the first OpenCL step pays the kernel build, the others load it
export XDG_CACHE_HOME=$work/cache
mkdir -p "$XDG_CACHE_HOME"

# ------------------------------------------------------------------ JSON helpers
json_str() { # $1 as a JSON string
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/\\r}
    s=$(printf '%s' "$s" | tr -d '\000-\010\013\014\016-\037')
    printf '"%s"' "$s"
}
quote_cmd() { # the command as one shell-quoted line
    local a s=
    for a in "$@"; do
        case $a in
        *[!A-Za-z0-9_./:=,+@%-]*|'') s="$s '${a//\'/\'\\\'\'}'" ;;
        *) s="$s $a" ;;
        esac
    done
    printf '%s' "${s# }"
}

S_NAME=() S_CMD=() S_STATUS=() S_EXIT=() S_SECS=() S_REASON=() S_NUM=() S_LOG=()
COMPARISON=
deadline_hit=0
finished=false

write_summary() {
    local i n=${#S_NAME[@]} ok=0 failed=0 timedout=0 skipped=0 first=1 total result
    for ((i = 0; i < n; i++)); do
        case ${S_STATUS[i]} in ok) ok=$((ok + 1)) ;; failed) failed=$((failed + 1)) ;;
        timeout) timedout=$((timedout + 1)) ;; *) skipped=$((skipped + 1)) ;; esac
    done
    total=$(awk -v a="$t_start" -v b="$(now_ms)" 'BEGIN {printf "%.1f", (b - a) / 1000}')
    result=passed
    [ $((failed + timedout)) -gt 0 ] && result=failed
    {
        printf '{\n  "check": "metacl gpu-check",\n  "format": 2,\n'
        printf '  "started": %s,\n  "finished": %s,\n  "total_seconds": %s,\n' "$(json_str "$started")" "$finished" "$total"
        printf '  "result": %s,\n' "$(json_str "$result")"
        printf '  "counts": {"ok": %d, "failed": %d, "timeout": %d, "skipped": %d},\n' $ok $failed $timedout $skipped
        printf '  "deadline_seconds": %d,\n  "deadline_hit": %s,\n' "$deadline" "$([ $deadline_hit = 1 ] && echo true || echo false)"
        printf '  "options": {"quick": %s, "reps": %d, "rounds": %d, "torch_device": %s, "python": %s, "icd": %s, "tune": %d},\n' \
            "$([ $quick = 1 ] && echo true || echo false)" "$reps" "$rounds" "$(json_str "$torch_device")" \
            "$(json_str "$python")" "$(json_str "$icd")" "$tune"
        printf '  "bundle": %s,\n' "$(json_str "$bundle")"
        printf '  "steps": [\n'
        for ((i = 0; i < n; i++)); do
            [ $first = 1 ] || printf ',\n'
            first=0
            printf '    {"name": %s, "command": %s, "status": %s, "exit": %s, "seconds": %s, "reason": %s, "log": %s, "numbers": %s}' \
                "$(json_str "${S_NAME[i]}")" "$(json_str "${S_CMD[i]}")" "$(json_str "${S_STATUS[i]}")" \
                "${S_EXIT[i]}" "${S_SECS[i]}" "$(json_str "${S_REASON[i]}")" "$(json_str "${S_LOG[i]}")" "${S_NUM[i]}"
        done
        printf '\n  ],\n  "comparison": [%s]\n}\n' "$COMPARISON"
    } > "$out/summary.json.tmp"
    mv "$out/summary.json.tmp" "$out/summary.json"
}

record() { # name status exit secs reason numbers cmd [log]
    S_NAME+=("$1") S_STATUS+=("$2") S_EXIT+=("$3") S_SECS+=("$4") S_REASON+=("$5") S_NUM+=("$6")
    S_CMD+=("$7") S_LOG+=("${8-logs/$1.log}")
    printf '%s: %-26s %-8s %6s s  %s\n' "$me" "$1" "$2" "$4" "$5"
    write_summary
}

skipped_by_user() {
    local p
    local IFS=,
    local -
    set -f # the patterns are matched against step names, never expanded against files here
    for p in $skip; do
        # shellcheck disable=SC2254
        case $1 in $p) return 0 ;; esac
    done
    return 1
}

# step NAME LIMIT PARSER CMD... : run CMD (cwd: the work folder, stdin /dev/null) under
# timeout, stdout and stderr to logs/NAME.log; PARSER (a function, or -) turns the log into
# the step's numbers (a JSON object). Sets STEP_RC.
STEP_RC=0
CUR_STEP=
step() {
    local name=$1 limit=$2 parser=$3
    shift 3
    local cmd left cut=0 t0 t1 rc=0 status reason='' secs nums='{}' log=$logs/$name.log
    cmd=$(quote_cmd "$@")
    STEP_RC=-1
    if skipped_by_user "$name"; then
        record "$name" skipped null 0 "--skip" '{}' "$cmd" ""; return 0
    fi
    left=$(( deadline - ($(now_ms) - t_start) / 1000 - RESERVE ))
    if [ "$left" -lt 5 ]; then
        deadline_hit=1
        record "$name" skipped null 0 "deadline: ${deadline}s reached" '{}' "$cmd" ""; return 0
    fi
    if [ "$limit" -gt "$left" ]; then limit=$left cut=1; fi
    t0=$(now_ms)
    CUR_STEP=$name
    (cd "$work" && exec timeout -k 5 "$limit" "$@") > "$log" 2>&1 < /dev/null || rc=$?
    t1=$(now_ms)
    CUR_STEP=
    secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", (b - a) / 1000}')
    STEP_RC=$rc
    case $rc in
    0) status=ok ;;
    77) status=skipped; reason="exit 77: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-300)" ;;
    124|137) status=timeout
             if [ $cut = 1 ]; then deadline_hit=1; reason="killed at the deadline, after ${limit}s"
             else reason="killed after its ${limit}s"; fi ;;
    *) status=failed; reason="exit $rc: $(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-300)" ;;
    esac
    if [ "$parser" != - ] && [ -s "$log" ]; then
        nums=$("$parser" "$log" 2>/dev/null) || nums='{}'
        [ -n "$nums" ] || nums='{}'
    fi
    record "$name" "$status" "$rc" "$secs" "$reason" "$nums" "$cmd"
}

note() { # a step that runs nothing: name status reason
    record "$1" "$2" null 0 "$3" '{}' "" ""
}

# ------------------------------------------------------------------ parsers (log -> JSON)
AWK_LIB='
function jstr(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, " ", s); return "\"" s "\"" }
function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }'

p_host() {
    awk "$AWK_LIB"'
    /^[a-z_]+=/ { k = $0; sub(/=.*/, "", k); v = $0; sub(/^[^=]*=/, "", v); f[++n] = jstr(k) ": " ((v ~ /^[0-9]+$/) ? v : jstr(v)) }
    END { printf "{"; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), f[i]; printf "}" }' "$1"
}
p_bundle() {
    awk "$AWK_LIB"'
    /^git commit:/ { c = trim(substr($0, 12)) } /^metacl:/ && !v { v = trim(substr($0, 8)) }
    /^drivers from:/ { d = trim(substr($0, 14)) } /^vendor file:/ { vf[++n] = trim(substr($0, 13)) }
    END { printf "{\"commit\": %s, \"metacl\": %s, \"drivers_from\": %s, \"vendor_files\": [", jstr(c), jstr(v), jstr(d)
          for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), jstr(vf[i]); printf "]}" }' "$1"
}
p_smi() {
    awk -F', *' "$AWK_LIB"'
    /^query: / { sub(/^query: /, ""); n = split($0, a, /, */)
                 printf "{\"gpu\": %s, \"driver\": %s, \"memory\": %s}", jstr(a[1]), jstr(a[2]), jstr(a[3]); done = 1; exit }
    END { if (!done) printf "{}" }' "$1"
}
p_clinfo() {
    awk "$AWK_LIB"'
    /^Platform #/ { p[++np] = trim(substr($0, index($0, ":") + 1)) }
    /Device #/ { d[++nd] = trim(substr($0, index($0, ":") + 1)) }
    END { printf "{\"platforms\": ["; for (i = 1; i <= np; i++) printf "%s%s", (i > 1 ? ", " : ""), jstr(p[i])
          printf "], \"devices\": ["; for (i = 1; i <= nd; i++) printf "%s%s", (i > 1 ? ", " : ""), jstr(d[i]); printf "]}" }' "$1"
}
p_devices() {
    awk "$AWK_LIB"'
    /^  opencl [0-9]+/ { n++; if ($0 ~ /\(default\)/ || !line) line = $0 }
    END {
        printf "{\"opencl_devices\": %d", n
        if (line) {
            sub(/^  opencl [0-9]+ (\(default\))? */, "", line)
            k = split(line, a, / \| /)
            # TYPE | PLATFORM | DEVICE | driver ... (metacl devices; older versions had no TYPE)
            f = 1
            if (trim(a[1]) ~ /^(CPU|GPU|ACCELERATOR|CUSTOM|DEFAULT|[A-Z]+\+[A-Z+]+)$/) {
                printf ", \"type\": %s", jstr(trim(a[1])); f = 2
            }
            printf ", \"platform\": %s, \"device\": %s", jstr(trim(a[f])), jstr(trim(a[f + 1]))
            for (i = f + 2; i <= k; i++) {
                x = trim(a[i])
                if (x ~ /^driver /) printf ", \"driver\": %s", jstr(substr(x, 8))
                else if (x ~ /^OpenCL /) printf ", \"opencl\": %s", jstr(x)
                else if (x ~ / CUs$/) printf ", \"compute_units\": %d", x + 0
                else if (x ~ / global$/) printf ", \"global_memory\": %s", jstr(substr(x, 1, length(x) - 7))
                else if (x ~ / local$/) printf ", \"local_memory\": %s", jstr(substr(x, 1, length(x) - 6))
            }
        }
        printf "}"
    }' "$1"
}
p_libs() {
    awk "$AWK_LIB"'
    /^libs: [0-9]+ from the bundle/ { nb = $2; nd = $6; no = $11 + 0 }
    /^libs: driver / { p = $3; d[++n] = p }
    /^libs: OUTSIDE / { o[++m] = $3 }
    /^libs: bundle .*libc\.so\.6$/ { libc = $3 }
    END { printf "{\"bundle\": %d, \"driver\": %d, \"outside\": %d, \"libc\": %s, \"driver_libs\": [", nb, nd, no, jstr(libc)
          for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), jstr(d[i])
          printf "], \"outside_libs\": ["; for (i = 1; i <= m; i++) printf "%s%s", (i > 1 ? ", " : ""), jstr(o[i]); printf "]}" }' "$1"
}
p_tests() { # "N passed, M failed" (the last), test-opencl's program build / cache load times
    awk "$AWK_LIB"'
    /^[0-9]+ passed, [0-9]+ failed/ { pass = $1; fail = $3; have = 1 }
    /program built from source in/ && !b { b = $(NF - 1) }
    /program loaded from the cache in/ && !c { c = $(NF - 1) }
    /^device: / && !dev { dev = substr($0, 9) }
    END { printf "{"; s = ""
          if (have) { printf "\"passed\": %d, \"failed\": %d", pass, fail; s = ", " }
          if (b != "") { printf "%s\"program_build_s\": %s", s, b; s = ", " }
          if (c != "") { printf "%s\"program_cache_load_s\": %s", s, c; s = ", " }
          if (dev != "") printf "%s\"device\": %s", s, jstr(dev)
          printf "}" }' "$1"
}
p_torch_info() { grep '^{' "$1" | tail -n 1; }
# a metacl bench / PyTorch record: {"impl", "backend"/"device", "device_name", "version",
# "workloads": {NAME: {"ms_best", "ms_median"[, "bytes_per_s"]}}}; works on a record cut short
# by a timeout (the workloads that finished are kept)
p_bench() {
    grep '^{"bench"' "$1" | tail -n 1 | awk "$AWK_LIB"'
    {
        s = $0; n = 0; hdr = ""
        while (match(s, /"(name|impl|backend|device|device_name|version)": *"[^"]*"|"(ms_best|ms_median|bytes_per_s|op_calls|enqueues|blocking)": *[-0-9.eE+]+|"tf32": *(true|false)/)) {
            t = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
            k = t; sub(/^"/, "", k); sub(/".*/, "", k)
            v = t; sub(/^"[^"]*": */, "", v)
            if (k == "name") { cur = v; gsub(/"/, "", cur); order[++n] = cur; f[cur] = "" }
            else if (k ~ /^(ms_best|ms_median|bytes_per_s|op_calls|enqueues|blocking)$/ && cur != "") f[cur] = f[cur] (f[cur] == "" ? "" : ", ") "\"" k "\": " v
            else if (cur == "") hdr = hdr ", \"" k "\": " v
        }
        printf "{\"record\": %s", (hdr == "" ? "{}" : "{" substr(hdr, 3) "}")
        printf ", \"workloads\": {"
        for (i = 1; i <= n; i++) printf "%s%s: {%s}", (i > 1 ? ", " : ""), jstr(order[i]), f[order[i]]
        printf "}}"
    }'
}
p_tune() { # a CLBlast tuner's JSON (printed after its run): the best kernel, time, parameters
    awk "$AWK_LIB"'
    /"(best_kernel|best_time|best_parameters|arg_m|arg_n|arg_k|kernel_family)": / {
        k = $0; sub(/^ *"/, "", k); sub(/".*/, "", k)
        v = $0; sub(/^[^:]*: *"/, "", v); sub(/",? *$/, "", v); f[++n] = jstr(k) ": " jstr(v) }
    END { printf "{"; for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), f[i]; printf "}" }' "$1"
}
p_profile() { # the METACL_PROFILE table: total and the 8 ops that took longest
    : > "$work/prof.rows"
    awk -v rows="$work/prof.rows" "$AWK_LIB"'
    /^METACL_PROFILE/ { dev = $0; sub(/^[^(]*\(/, "", dev); sub(/\).*/, "", dev) }
    $2 ~ /^(forward|backward|host)$/ && NF == 7 { sub(/%$/, "", $6); print $4, $1, $2, $3, $5, $6 > rows }
    $1 == "all" && NF == 2 { total = $2 }
    END { printf "%s %s\n", (total == "" ? "null" : total), jstr(dev) }' "$1" > "$work/prof.head"
    local total devname
    read -r total devname < "$work/prof.head"
    sort -g -r "$work/prof.rows" | head -n 8 | awk -v total="$total" -v dev="$devname" '
    { r[++n] = sprintf("{\"op\": \"%s\", \"pass\": \"%s\", \"calls\": %d, \"ms\": %s, \"ms_per_call\": %s, \"share_percent\": %s}", $2, $3, $4, $1, $5, $6) }
    END { printf "{\"device\": %s, \"total_ms\": %s, \"top\": [", dev, total
          for (i = 1; i <= n; i++) printf "%s%s", (i > 1 ? ", " : ""), r[i]; printf "]}" }'
}

# the two medians of each workload in one round: line 1 metacl's numbers, line 2 PyTorch's
# (p_bench records) -> "bench workload round metacl_ms torch_ms", workloads in metacl's order
PAIR_AWK='
function grab(s, side,   t, w, m) {
    sub(/.*"workloads": \{/, "", s)
    while (match(s, /"[^"]+": \{[^}]*\}/)) {
        t = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
        w = t; sub(/^"/, "", w); sub(/".*/, "", w)
        if (match(t, /"ms_median": *[-0-9.eE+]+/)) {
            m = substr(t, RSTART, RLENGTH); sub(/.*: */, "", m); med[side, w] = m
            if (side == 1) order[++n] = w
        }
    }
}
NR == 1 { grab($0, 1) } NR == 2 { grab($0, 2) }
END { for (i = 1; i <= n; i++) { w = order[i]; if ((2, w) in med) print bench, w, round, med[1, w], med[2, w] } }'
# the comparison over rounds, from those lines: per workload (first-seen order) the median of
# each side's medians, the geometric mean of the per-round ratios PyTorch / metacl, with two
# or more rounds its 95 % interval (Student t on the logarithms) and the verdict: "metacl
# faster" when the interval lies above 1, "PyTorch faster" when below, else "tie"; one round
# gives no interval ("one round"). A pair with a time <= 0 is left out.
COMPARE_AWK='
function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262 2.228 2.201 2.179 2.160 2.145 2.131 2.120 2.110 2.101 2.093 2.086 2.080 2.074 2.069 2.064 2.060 2.056 2.052 2.048 2.045", T975, " ") }
NF == 5 && $4 > 0 && $5 > 0 {
    k = $1 SUBSEP $2
    if (!(k in cnt)) { key[++nk] = k; bn[nk] = $1; wn[nk] = $2 }
    c = ++cnt[k]; mt[k, c] = $4; tt[k, c] = $5; lr[k, c] = log($5 / $4)
}
END {
    for (i = 1; i <= nk; i++) {
        k = key[i]; n = cnt[k]; s = 0
        for (j = 1; j <= n; j++) { s += lr[k, j]; am[j] = mt[k, j]; at[j] = tt[k, j] }
        m = s / n
        ci = "null"; verdict = "one round"
        if (n >= 2) {
            v = 0
            for (j = 1; j <= n; j++) v += (lr[k, j] - m) ^ 2
            h = ((n - 1 <= 29) ? T975[n - 1] : 1.96) * sqrt(v / (n - 1) / n)
            lo = exp(m - h); hi = exp(m + h)
            ci = sprintf("[%.3f, %.3f]", lo, hi)
            verdict = (lo > 1) ? "metacl faster" : (hi < 1) ? "PyTorch faster" : "tie"
        }
        printf "%s{\"bench\": \"%s\", \"workload\": \"%s\", \"rounds\": %d, \"metacl_ms\": %s, \"torch_ms\": %s, \"torch_over_metacl\": %.3f, \"ratio_ci95\": %s, \"verdict\": \"%s\"}", \
            (i > 1 ? ", " : ""), bn[i], wn[i], n, sprintf("%.3f", median(am, n)), sprintf("%.3f", median(at, n)), exp(m), ci, verdict
    }
}'

# ------------------------------------------------------------------ the end, however it comes
finish() {
    local rc=$1
    trap - EXIT INT TERM HUP
    write_summary
    # summary.md: the steps and the comparison, for reading
    {
        echo "# metacl gpu-check"
        echo
        echo "started $started, $(awk -v a="$t_start" -v b="$(now_ms)" 'BEGIN {printf "%.1f", (b - a) / 1000}') s, deadline ${deadline} s$([ $deadline_hit = 1 ] && echo ' (hit)'), bundle $bundle"
        echo
        echo "| step | status | s | exit | reason |"
        echo "|---|---|---:|---:|---|"
        local i
        for ((i = 0; i < ${#S_NAME[@]}; i++)); do
            echo "| ${S_NAME[i]} | ${S_STATUS[i]} | ${S_SECS[i]} | ${S_EXIT[i]} | ${S_REASON[i]//|/\\|} |"
        done
        if [ -n "$COMPARISON" ]; then
            echo
            echo "| bench | workload | rounds | metacl ms (median) | PyTorch ms (median) | PyTorch / metacl (geometric mean) | 95 % interval | verdict |"
            echo "|---|---|---:|---:|---:|---:|---|---|"
            printf '[%s]\n' "$COMPARISON" | tr '{' '\n' | awk -F'"' '
                function val(s, k) { sub(".*\"" k "\": *", "", s); sub(/(, "|}).*/, "", s); gsub(/"/, "", s); return s }
                /"bench"/ { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $4, $8, val($0, "rounds"),
                    val($0, "metacl_ms"), val($0, "torch_ms"), val($0, "torch_over_metacl"),
                    val($0, "ratio_ci95"), val($0, "verdict") }'
        fi
    } > "$out/summary.md"
    (cd "$out" && tar -czf logs.tar.gz.tmp logs && mv logs.tar.gz.tmp logs.tar.gz) || true
    [ $keep_logs = 1 ] || rm -rf "$logs"
    rm -rf "$work"
    echo "$me: summary in $out/summary.json, logs in $out/logs.tar.gz"
    exit "$rc"
}
interrupted() {
    note interrupted failed "gpu-check got signal $1${CUR_STEP:+ during step $CUR_STEP}"
    finish $((128 + $2))
}
trap 'finish 1' EXIT
trap 'interrupted HUP 1' HUP
trap 'interrupted INT 2' INT
trap 'interrupted TERM 15' TERM

# ------------------------------------------------------------------ the steps
echo "$me: bundle $bundle, out $out, deadline ${deadline}s, reps $reps$([ $quick = 1 ] && echo ', quick')"

{
    echo "kernel=$(uname -srm)"
    echo "os=$( (. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-?}") || echo '?')"
    echo "cpus=$(nproc 2>/dev/null || echo 0)"
    echo "memory_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo 2>/dev/null || echo 0)"
    echo "host_glibc=$( (ldd --version 2>/dev/null || true) | head -n 1)"
    echo "hostname=$(uname -n)"
    # PyTorch's eager side is bound by the host CPU's kernel launches: its model and load
    # say which host the PyTorch times came from.
    echo "cpu_model=$(awk -F': *' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null)"
    echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} > "$work/host.txt"
step host 10 p_host cat "$work/host.txt"

{ cat "$bundle/MANIFEST.txt" 2>/dev/null || echo "no MANIFEST.txt"; } > "$work/manifest.txt"
step bundle 20 p_bundle bash -c 'cat "$1"; echo; "$2" --show "${@:3}"' bash "$work/manifest.txt" "$run" "${run_args[@]}"

if command -v nvidia-smi >/dev/null; then
    step nvidia-smi 30 p_smi bash -c 'echo "query: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n 1)"; nvidia-smi'
else
    note nvidia-smi skipped "nvidia-smi is not installed"
fi
if command -v clinfo >/dev/null; then
    step clinfo 30 p_clinfo clinfo -l
else
    note clinfo skipped "clinfo is not installed (the host's; the bundle has none)"
fi

step devices 60 p_devices "$run" "${run_args[@]}" metacl devices
have_device=0
grep -q '^  opencl [0-9]' "$logs/devices.log" 2>/dev/null && have_device=1
step libs 60 p_libs "$run" "${run_args[@]}" --list-libs metacl devices

# the op tests, one family per step
families=$("$run" --no-driver test-ops --families 2>/dev/null | awk '{print $1}') || families=
if [ -z "$families" ]; then
    note test-ops failed "test-ops --families printed nothing"
fi
for f in $families; do
    step "test-ops-$f" 90 p_tests env METACL_DEBUG_POISON=1 "$run" "${run_args[@]}" test-ops --backend opencl --family "$f"
done
for t in test-srwm test-opencl test-backends-mlp; do
    step "$t" 120 p_tests env METACL_DEBUG_POISON=1 "$run" "${run_args[@]}" "$t"
done

# PyTorch: which interpreter, which device
torch_dev=
torch_why=
if [ "$torch_device" = none ]; then
    torch_why="--torch-device none"
    note torch-info skipped "$torch_why"
elif ! command -v "$python" >/dev/null; then
    torch_why="no $python on this machine"
    note torch-info skipped "$torch_why"
else
    step torch-info 90 p_torch_info env PYTHONDONTWRITEBYTECODE=1 "$python" -c '
import json, sys
try:
    import torch
except Exception as e:
    print(json.dumps({"torch": None, "error": "%s: %s" % (type(e).__name__, e)})); sys.exit(3)
r = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.cuda.is_available(),
     "cuda_version": torch.version.cuda}
if r["cuda"]:
    r["device"] = torch.cuda.get_device_name(0)
    r["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
print(json.dumps(r))'
    if [ "$STEP_RC" = 0 ]; then
        if grep -q '"cuda": true' "$logs/torch-info.log"; then cuda=1; else cuda=0; fi
        case $torch_device in
        auto) if [ $cuda = 1 ]; then torch_dev=cuda; else
                  torch_why="no CUDA: PyTorch sees no CUDA device (--torch-device cpu times the CPU instead)"; fi ;;
        cuda*) if [ $cuda = 1 ]; then torch_dev=$torch_device; else torch_why="no CUDA: PyTorch sees no CUDA device"; fi ;;
        cpu) torch_dev=cpu ;;
        esac
    elif [ "$STEP_RC" = 3 ]; then
        torch_why="PyTorch is not importable by $python: $(grep -o '"error": "[^"]*"' "$logs/torch-info.log" | cut -d'"' -f4)"
    else
        torch_why="torch-info did not finish (exit $STEP_RC)"
    fi
fi

# metacl bench B --backend opencl next to its PyTorch twin, same workloads and repetitions
declare -A ONLY=()
if [ $quick = 1 ]; then
    # what a 2-core PoCL machine does in the deadline with the rest (acl_step is in the profile)
    ONLY[acl]=srwm,conv4_28
    ONLY[oct]=oct_step,attn_C0,attn_C250,attn_C1000
    ONLY[smn]=smn_wcst_window,smn_resnet_window,smn_resnet_plain
    ONLY[lm]=lm_eval_static,lm_eval_dynamic,lm_eval_smn
fi
# the pairs of one round: "bench workload round metacl_ms torch_ms" per line (medians)
pairs=$work/pairs.txt
: > "$pairs"
bench_round() { # round number
    local r=$1 b sfx='' mnum tnum
    [ "$r" -gt 1 ] && sfx="-r$r"
    for b in acl oct smn lm; do
        only=()
        [ -n "${ONLY[$b]:-}" ] && only=(--only "${ONLY[$b]}")
        mnum='{}'
        if [ $have_device = 1 ]; then
            step "bench-$b$sfx" 120 p_bench "$run" "${run_args[@]}" metacl bench "$b" --backend opencl --json --reps "$reps" "${only[@]}"
            mnum=${S_NUM[${#S_NUM[@]}-1]}
        else
            note "bench-$b$sfx" skipped "no OpenCL device (see the devices step)"
        fi
        if [ -n "$torch_dev" ]; then
            step "torch-$b$sfx" 150 p_bench env PYTHONDONTWRITEBYTECODE=1 "$python" "$tools/torch/bench-$b-torch.py" --json --device "$torch_dev" --reps "$reps" "${only[@]}"
            tnum=${S_NUM[${#S_NUM[@]}-1]}
            printf '%s\n%s\n' "$mnum" "$tnum" | awk -v bench="$b" -v round="$r" "$PAIR_AWK" >> "$pairs"
            COMPARISON=$(awk "$COMPARE_AWK" "$pairs")
        else
            note "torch-$b$sfx" skipped "${torch_why:-PyTorch not checked}"
        fi
    done
}
bench_round 1

if [ $have_device = 1 ]; then
    step profile-acl-step 120 p_profile env METACL_PROFILE=1 "$run" "${run_args[@]}" metacl bench acl --backend opencl --only acl_step --reps 1
else
    note profile-acl-step skipped "no OpenCL device (see the devices step)"
fi

for ((round = 2; round <= rounds; round++)); do
    bench_round "$round"
done

# CLBlast's tuners on the ACL step's most used products (doc/gpu.md): 80x256x128 (the SRWM
# layers' projections, direct kernel), 32x5120x288 (Conv-4's, direct), 64x20480x288 (Conv-4's
# largest, through Xgemm; m a multiple of 64 as the tuner wants, 2 % of its random search).
# Each tuner writes clblast_<family>_1_32.json into the work folder; the step prints it.
if [ "$tune" -gt 0 ]; then
    for shape in "xgemm_direct 80 256 128" "xgemm_direct 32 5120 288" "xgemm 64 20480 288 -fraction 0.02"; do
        set -- $shape
        t=$1 m=$2 n=$3 k=$4
        shift 4
        name="tune-$t-${m}x${n}x${k}"
        if [ $have_device = 0 ]; then
            note "$name" skipped "no OpenCL device (see the devices step)"
        elif [ ! -x "$bundle/bin/clblast_tuner_$t" ]; then
            note "$name" skipped "the bundle has no clblast_tuner_$t (Debian's clblast-utils was not installed where it was made)"
        else
            rm -f "$work"/clblast_*_32.json
            step "$name" "$tune" p_tune sh -c '"$@" && cat clblast_*_32.json' tune "$run" "${run_args[@]}" \
                "clblast_tuner_$t" -m "$m" -n "$n" -k "$k" "$@"
            for j in "$work"/clblast_*_32.json; do [ -f "$j" ] && cp "$j" "$logs/$name.json"; done
        fi
    done
fi

finished=true
rc=0
for s in "${S_STATUS[@]}"; do case $s in failed|timeout) rc=1 ;; esac; done
finish $rc
