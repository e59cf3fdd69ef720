#!/bin/sh
# test-review-state.sh — tools/scripts/review-state.sh save: the finished step outputs of a
# review job (top-level *.md and *.json, the smn-online run cache and the build's commit, the
# training runs up to RUN_MAX bytes) are kept; a running step's *.tmp, a run's lock, a run over
# RUN_MAX and directories that are no training run are not (a copy of everything fails those
# checks); bad usage and a missing job fail; review-runs.sh restores a
# saved step (and skips it) without overwriting a local one. Then acl-emergence-summary.py, the
# acl-emergence job's JSON, on made-up metrics whose values are worked out by hand.
set -eu
top=${srcdir:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

mkdir -p "$tmp/out/job/cache" "$tmp/out/job/seed1" "$tmp/out/job/seed2" "$tmp/out/job/seed3" "$tmp/out/job/data"
echo table >"$tmp/out/job/a.md"
echo '{}' >"$tmp/out/job/a.json"
echo partial >"$tmp/out/job/b.md.tmp"
echo run >"$tmp/out/job/cache/0123.run"
# seed1: a training run stopped mid-way (kept: it resumes from last.ckpt); seed2: finished
# (.done kept); seed3: over RUN_MAX (left out); data/: not a training run (no config.txt)
for s in 1 2 3; do echo "model.seed = $s" >"$tmp/out/job/seed$s/config.txt"; echo ckpt >"$tmp/out/job/seed$s/last.ckpt"; done
echo 123 >"$tmp/out/job/seed1/.metacl.lock"
echo partial >"$tmp/out/job/seed1/metrics.csv.tmp"
: >"$tmp/out/job/seed2/.done"
head -c 100 /dev/zero >"$tmp/out/job/seed3/best.ckpt"
echo images >"$tmp/out/job/data/x.bin"
printf '#!/bin/sh\necho "metacl 0.1.0"\necho "commit: 24b1d903fc30"\n' >"$tmp/fake-metacl"
chmod +x "$tmp/fake-metacl"

if OUT="$tmp/out" STATE="$tmp/state" METACL="$tmp/fake-metacl" RUN_MAX=64 sh "$top/tools/scripts/review-state.sh" save job >"$tmp/log" 2>&1; then
    ok "save runs"
else
    bad "save failed: $(cat "$tmp/log")"
fi
for f in a.md a.json cache/0123.run seed1/config.txt seed1/last.ckpt seed2/.done seed2/last.ckpt; do
    if [ -f "$tmp/state/job/$f" ]; then ok "kept $f"; else bad "did not keep $f"; fi
done
for f in b.md.tmp seed1/.metacl.lock seed1/metrics.csv.tmp seed3 data; do
    if [ -e "$tmp/state/job/$f" ]; then bad "kept $f"; else ok "left out $f"; fi
done
if [ "$(cat "$tmp/state/job/COMMIT" 2>/dev/null)" = 24b1d903fc30 ]; then ok "commit"; else bad "commit"; fi
# review-runs.sh copies a saved step back and skips it (METACL=false: a step that ran would
# fail the job), and never writes over a step output already there
mkdir -p "$tmp/rs/smn-wcst"
echo kept >"$tmp/rs/smn-wcst/wcst.md"
if (cd "$top" && OUT="$tmp/rt" STATE="$tmp/rs" METACL=false sh tools/scripts/review-runs.sh smn-wcst) >"$tmp/log" 2>&1 &&
    [ "$(cat "$tmp/rt/smn-wcst/wcst.md")" = kept ]; then ok "a saved step is restored and skipped"; else
    bad "restore: $(cat "$tmp/log")"; fi
echo local >"$tmp/rt/smn-wcst/wcst.md"
(cd "$top" && OUT="$tmp/rt" STATE="$tmp/rs" METACL=false sh tools/scripts/review-runs.sh smn-wcst) >/dev/null 2>&1 || true
if [ "$(cat "$tmp/rt/smn-wcst/wcst.md")" = local ]; then ok "a local step output is not overwritten"; else bad "overwritten"; fi
rm "$tmp/rs/smn-wcst/wcst.md" "$tmp/rt/smn-wcst/wcst.md"
if (cd "$top" && OUT="$tmp/rt" STATE="$tmp/rs" METACL=false sh tools/scripts/review-runs.sh smn-wcst) >/dev/null 2>&1; then
    bad "a job with a step to run passed with METACL=false (the restore check cannot fail)"
else ok "without a saved step the step runs (and fails here)"; fi
if OUT="$tmp/out" STATE="$tmp/state" sh "$top/tools/scripts/review-state.sh" save nojob 2>/dev/null; then
    bad "a missing job passed"
else
    [ $? -eq 1 ] && ok "missing job: exit 1" || bad "missing job: wrong status"
fi
if sh "$top/tools/scripts/review-state.sh" 2>/dev/null; then bad "no arguments passed"; else
    [ $? -eq 2 ] && ok "usage: exit 2" || bad "usage: wrong status"; fi

# acl-emergence-summary.py: two finished seeds and one running; at step 200 seed 1 reads main
# 0.8 / 0.6 (mean 0.7) and bwd 0.3 / 0.1 (0.2): forgetting 0.5; seed 2 main 0.9, bwd 0.4:
# forgetting 0.5, and its change 100 -> 200 is 0.5 - 0.1 = 0.4
em="$tmp/em"
mkdir -p "$em/seed1" "$em/seed2" "$em/seed3"
hdr="step,loss,val_score,val_main_hanzi,val_main_hershey,val_bwd_hanzi,val_bwd_hershey"
printf '%s\n10,1.0,,,,,\n100,1.0,0.3,0.3,0.3,0.2,0.2\n200,0.9,0.5,0.8,0.6,0.3,0.1\n' "$hdr" >"$em/seed1/metrics.csv"
printf '%s\n100,1.0,0.3,0.4,0.4,0.3,0.3\n200,0.9,0.6,0.9,0.9,0.4,0.4\n' "$hdr" >"$em/seed2/metrics.csv"
cp "$em/seed2/metrics.csv" "$em/seed3/metrics.csv"
: >"$em/seed1/.done"
: >"$em/seed2/.done"
if python3 "$top/tools/scripts/acl-emergence-summary.py" "$em" --steps 100,200 >"$tmp/em.json" 2>"$tmp/log"; then
    ok "emergence summary runs"
else
    bad "emergence summary failed: $(cat "$tmp/log")"
fi
em_check() { # PYTHON-EXPRESSION over d (the JSON) that must hold
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)' "$tmp/em.json" "$1"
}
near() { echo "all(abs(a - b) < 1e-9 for a, b in zip($1, $2)) and len($1) == len($2)"; }
em_check "d['seeds'] == [1, 2] and d['unfinished'] == [3]" && ok "finished seeds only" || bad "seeds: $(head -c 300 "$tmp/em.json")"
em_check "$(near "d['per_step'][1]['main']" "[0.7, 0.9]") and $(near "d['per_step'][1]['bwd']" "[0.2, 0.4]")" &&
    ok "main and bwd: means over the domains" || bad "main/bwd wrong"
em_check "$(near "d['per_step'][1]['forgetting']" "[0.5, 0.5]")" && ok "forgetting = main - bwd" || bad "forgetting wrong"
em_check "$(near "[c for c in d['changes'] if c['name'] == 'forgetting 100-200'][0]['diff']" "[0.4, 0.4]")" &&
    ok "paired change of the forgetting" || bad "paired change wrong"
em_check "$(near "d['per_step'][1]['forgetting']" "[0.6, 0.5]")" && bad "self-test: a wrong forgetting passed" ||
    ok "self-test: a wrong forgetting is caught"
if python3 "$top/tools/scripts/acl-emergence-summary.py" "$em" --steps 100,300 >/dev/null 2>&1; then
    bad "a missing validation step passed"
else
    [ $? -eq 1 ] && ok "missing step: exit 1" || bad "missing step: wrong status"
fi
if python3 "$top/tools/scripts/acl-emergence-summary.py" 2>/dev/null; then bad "summary without arguments passed"; else
    [ $? -eq 2 ] && ok "summary usage: exit 2" || bad "summary usage: wrong status"; fi
exit $fail
