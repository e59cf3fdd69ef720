#!/bin/sh
# test-atomic-writes.sh — every file the command line writes goes through the atomic writer
# (mcl_write_file_atomic / mcl_atomic_open, src/common/util.c: a new temporary file made with
# O_CREAT | O_EXCL | O_NOFOLLOW, fsync, rename; doc/reliability.md):
#   - `eval acl --json-out FILE` with FILE.tmp a symlink to another file leaves that file alone
#     and writes FILE as a regular file; with FILE.tmp a FIFO it does not block (timeout);
#   - `plot --out P.png` with P.png.tmp a symlink: the same;
#   - the source tree has no other writer: a grep for fopen(…, "w"/"a"), freopen, creat and
#     open(…, O_WRONLY/O_RDWR/O_CREAT) in src/ and tools/ finds only the allow-list below.
# Data: the hershey set prepared into a temporary data dir (Debian hershey-fonts-data).
METACL=${METACL:-./metacl}
SRCDIR=${METACL_SRCDIR:-$(dirname "$0")/..}
TMP=test-atomic-writes.tmp.$$
. "$SRCDIR/tests/cli-lib.sh"
to() { timeout 30 "$@"; } # a FIFO that blocks fails (exit 124) instead of stalling the suite

echo "test-atomic-writes: binary $METACL (train.seed 1)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }

# 1. the grep: files that may open a file for writing, each with its reason
ALLOW='src/common/util.c the atomic writer itself, the append-only logs and the lock file
src/opencl/devices.c a probe that the kernel cache directory is writable, removed at once
src/data/prepare/text_fetch.c the log of a download helper (its stderr, appended)
tools/build/embed-kernels.c a build tool run by make (kernels_embedded.c), not part of the CLI
tools/cli/cli_common.c /dev/null
tools/cli/metacl.c /dev/null (freopen of stdout)'
(cd "$SRCDIR" && grep -nE 'fopen\([^;]*"[wa+]|freopen\(|[^_a-z]creat\(|[^_a-z]open(at)?\([^;]*O_(WRONLY|RDWR|CREAT)' \
    $(find src tools -name '*.c' | sort)) >"$TMP/writers" 2>/dev/null
echo "$ALLOW" | cut -d' ' -f1 >"$TMP/allow"
grep -v -F -f "$TMP/allow" "$TMP/writers" >"$TMP/bad"
if [ -s "$TMP/bad" ]; then
    fail=$((fail + 1)); echo "FAIL: files written outside the atomic writer (use mcl_write_file_atomic or mcl_atomic_open, or add to the allow-list with a reason):"
    sed 's/^/    /' "$TMP/bad"
else pass=$((pass + 1)); fi
# the grep finds a writer when there is one (its own allow-list entries are found)
grep -q 'src/opencl/devices.c' "$TMP/writers" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the grep found no writer at all (broken pattern?)"; }

# 2. the CLI past planted temporaries
prepare_hershey "$TMP/data"
CONF=$TMP/tiny.conf
tiny_conf "$CONF" "$TMP/data" train.steps=1 train.val_every=0 train.ckpt_every=1
check "tiny run" 0 to "$METACL" train acl --config "$CONF" --out "$TMP/run" --quiet
printf 'precious\n' >"$TMP/victim"
EV="--protocol seq --data hershey --data-dir $TMP/data --n-way 3 --k-shot 2 --tasks 2 --runs 1 --episodes 2"
ln -s "$PWD/$TMP/victim" "$TMP/e.json.tmp"
check "eval --json-out past a symlinked FILE.tmp" 0 to "$METACL" eval acl --ckpt "$TMP/run/last.ckpt" $EV --json-out "$TMP/e.json"
[ "$(cat "$TMP/victim")" = precious ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: eval --json-out wrote through the symlink FILE.tmp"; }
[ -f "$TMP/e.json" ] && [ ! -L "$TMP/e.json" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/e.json" 2>/dev/null &&
    pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: e.json is not a regular file of JSON"; ls -l "$TMP"; }
mkfifo "$TMP/f.json.tmp"
check "eval --json-out past a FIFO FILE.tmp (no hang)" 0 to "$METACL" eval acl --ckpt "$TMP/run/last.ckpt" $EV --json-out "$TMP/f.json"
[ -f "$TMP/f.json" ] && [ -p "$TMP/f.json.tmp" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: f.json not written or the FIFO replaced"; }
ln -s "$PWD/$TMP/victim" "$TMP/curve.png.tmp"
check "plot --out past a symlinked FILE.tmp" 0 to "$METACL" plot "$TMP/run" --out "$TMP/curve.png"
[ "$(cat "$TMP/victim")" = precious ] && [ -f "$TMP/curve.png" ] && [ ! -L "$TMP/curve.png" ] && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL: plot --out wrote through the symlink"; }
# no temporary left next to the outputs
if ls "$TMP" | grep -q '\.tmp\.'; then fail=$((fail + 1)); echo "FAIL: temporaries left:"; ls "$TMP" | grep '\.tmp\.'; else pass=$((pass + 1)); fi

echo "test-atomic-writes: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
