#!/bin/sh
# test-bench-bound.sh — `metacl bench --bound` and the bound fields of `metacl bench --json`
# (opcost.h: the roofline bound of a workload = the sum over one timed iteration's op calls of
# max(flops / FMA peak, bytes / STREAM triad)). Not timing: tiny workloads (acl srwm, lm
# lm_eval_static, one repetition each), checking that every workload's record has bound_ms > 0,
# flops and bytes > 0, a fraction in (0, 1.5] that is bound_ms / ms_median, a compute share in
# [0, 1] and per-op entries; the record has the two roofs; the text table has its bound section.
# The fraction's upper limit 1.5: the bound prices bytes at DRAM's bandwidth, and a workload whose
# data stay in the caches can beat that term a little; far above it means a wrong count.
# Self-test: records with a zero bound, a fraction of 2, and a fraction that is not
# bound_ms / ms_median are rejected by the same check.
METACL=${METACL:-./metacl}
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
echo "test-bench-bound: binary $METACL (no randomness: no seed)"

# bound_check JSON: 0 when every workload entry of the record passes (a FAIL line per problem)
bound_check() {
    printf '%s\n' "$1" | awk '
    function num(s, key,   m) { m = match(s, "\"" key "\":[-0-9.e+]+"); if (!m) return "x"
                                return substr(s, RSTART + length(key) + 3, RLENGTH - length(key) - 3) + 0 }
    { rec = $0
      if (num(rec, "peak_gflops") == "x" || num(rec, "peak_gflops") <= 0 || num(rec, "triad_gbs") <= 0) {
          print "FAIL: no roofs in the record"; bad++ }
      n = split(rec, parts, "{\"name\":")
      for (i = 2; i <= n; i++) {
          w = parts[i]; name = w; sub(/".*/, "", name); sub(/^"/, "", name)
          b = num(w, "bound_ms"); f = num(w, "bound_fraction"); m = num(w, "ms_median")
          fl = num(w, "flops"); by = num(w, "bytes"); c = num(w, "bound_compute_share")
          if (b == "x" || b <= 0) { print "FAIL: " name ": bound_ms " b; bad++; continue }
          if (fl == "x" || fl < 0 || by == "x" || by <= 0) { print "FAIL: " name ": flops " fl ", bytes " by; bad++ }
          if (f == "x" || f <= 0 || f > 1.5) { print "FAIL: " name ": bound_fraction " f " not in (0, 1.5]"; bad++ }
          else if (m <= 0 || (f - b / m) > 1e-3 + 0.01 * f || (b / m - f) > 1e-3 + 0.01 * f) {
              print "FAIL: " name ": bound_fraction " f " is not bound_ms / ms_median = " b "/" m; bad++ }
          if (c == "x" || c < 0 || c > 1) { print "FAIL: " name ": bound_compute_share " c; bad++ }
          if (index(w, "\"bound_ops\":[{\"op\":") == 0) { print "FAIL: " name ": no bound_ops"; bad++ }
          seen++
      }
      if (!seen) { print "FAIL: no workload in the record"; bad++ }
    }
    END { exit bad ? 1 : 0 }'
}

check "bench acl srwm --json" 0 "$METACL" bench acl --only srwm --reps 1 --threads 1 --json
check "its bound fields" 0 bound_check "$LAST_OUT"
check "bench lm lm_eval_static --json" 0 "$METACL" bench lm --only lm_eval_static --reps 1 --threads 1 --json
check "its bound fields" 0 bound_check "$LAST_OUT"
check "bench acl srwm --bound" 0 "$METACL" bench acl --only srwm --reps 1 --threads 1 --bound
expect_text "the bound section" "bound per iteration: the sum over its op calls of max(flops / FMA peak"
expect_text "the bound table's header" "bound ms  compute  median ms  fraction"
expect_text "the srwm op's share" "srwm bwd"

# self-test: the check rejects wrong records
good='{"bench":"x","peak_gflops":100.0,"triad_gbs":20.0,"workloads":[{"name":"w","ms_median":10.0,"bound_ms":5.0,"flops":1e9,"bytes":1e6,"bound_fraction":0.5,"bound_compute_share":0.9,"bound_ops":[{"op":"matmul"}]}]}'
check "self-test: a good record passes" 0 bound_check "$good"
check "self-test: bound_ms 0 is caught" 1 bound_check "$(printf '%s' "$good" | sed 's/"bound_ms":5.0/"bound_ms":0/')"
check "self-test: a fraction of 2 is caught" 1 bound_check "$(printf '%s' "$good" | sed 's/"bound_ms":5.0/"bound_ms":20.0/; s/"bound_fraction":0.5/"bound_fraction":2.0/')"
check "self-test: a fraction that is not bound / median is caught" 1 bound_check "$(printf '%s' "$good" | sed 's/"bound_fraction":0.5/"bound_fraction":0.8/')"
check "self-test: a record without roofs is caught" 1 bound_check "$(printf '%s' "$good" | sed 's/"peak_gflops":100.0,//')"

echo "test-bench-bound: $pass passed, $fail failed"
[ $fail -eq 0 ]
