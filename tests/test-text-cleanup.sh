#!/bin/sh
# test-text-cleanup.sh — an interrupted `data prepare` of a text corpus leaves no work
# directory behind (doc/reliability.md):
#   - work directories of processes no longer alive (.text-prepare.PID.*, .NAME.new.PID.*) and
#     a .NAME.old.PID.* whose corpus was replaced are swept by the next prepare into that data
#     directory; those of a live process stay; a .NAME.old.PID.* with no NAME is put back;
#   - with the test hooks (METACL_TEST_PREPARE_PAUSE: the prepare waits with its work
#     directory made): SIGINT and SIGTERM remove it and end the process by the signal (exit
#     130 / 143); after kill -9 the next prepare sweeps it.
METACL=${METACL:-./metacl}
TMP=test-text-cleanup.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
to() { timeout 60 "$@"; }
leftovers() { ls -a "$1" | grep -E '^\.(text-prepare|.*\.new|.*\.old)\.' ; }

echo "test-text-cleanup: binary $METACL"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
awk 'BEGIN { for (i = 0; i < 3000; i++) { printf "w%d ", i % 37; if (i % 11 == 10) printf "\n" } }' >"$TMP/a.txt"
D=$TMP/data
mkdir -p "$D"
sh -c 'exit 0' & dead=$!
wait $dead
for n in ".text-prepare.$dead.abcdef" ".tiny.new.$dead.abcdef" ".tiny.old.$dead.abcdef" ".text-prepare.$$.live12"; do
    mkdir "$D/$n" && echo x >"$D/$n/f"
done
mkdir "$D/.keep.old.$dead.abcdef" && echo kept >"$D/.keep.old.$dead.abcdef/meta.txt"
mkdir "$D/tiny" # the corpus that replaced .tiny.old.*
check "prepare with stale work directories around" 0 to "$METACL" data prepare "txt:$TMP/a.txt" --name tiny --data-dir "$D"
for n in ".text-prepare.$dead.abcdef" ".tiny.new.$dead.abcdef" ".tiny.old.$dead.abcdef" ".keep.old.$dead.abcdef"; do
    if [ -e "$D/$n" ]; then fail=$((fail + 1)); echo "FAIL: $n of a dead process was not swept"; else pass=$((pass + 1)); fi
done
[ -d "$D/.text-prepare.$$.live12" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: a live process's work directory was removed"; }
[ "$(cat "$D/keep/meta.txt" 2>/dev/null)" = kept ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: the old corpus 'keep' was not put back"; }
rm -rf "$D/.text-prepare.$$.live12"

if [ "${METACL_HAVE_TEST_HOOKS:-1}" = 1 ]; then
    for sig in INT TERM KILL; do
        R=$TMP/d-$sig
        mkdir -p "$R"
        rm -f "$TMP/p.err" # no earlier run's "paused" line may be read before this one starts
        METACL_TEST_PREPARE_PAUSE=1 "$METACL" data prepare "txt:$TMP/a.txt" --name tiny --data-dir "$R" >"$TMP/p.out" 2>"$TMP/p.err" &
        pid=$!
        n=0
        while [ $n -lt 600 ] && ! grep -q 'test hook: paused' "$TMP/p.err" 2>/dev/null && kill -0 $pid 2>/dev/null; do sleep 0.05; n=$((n + 1)); done
        if ! grep -q 'test hook: paused' "$TMP/p.err"; then
            echo "test-text-cleanup: no test hook in this build: signal checks skipped"; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; break
        fi
        [ -n "$(leftovers "$R")" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $sig: no work directory while paused"; }
        kill -$sig $pid
        { wait $pid; } 2>/dev/null; rc=$?
        case $sig in INT) want=130 ;; TERM) want=143 ;; KILL) want=137 ;; esac
        [ $rc -eq $want ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $sig: exit $rc, expected $want"; cat "$TMP/p.err"; }
        if [ $sig = KILL ]; then
            [ -n "$(leftovers "$R")" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: kill -9 left nothing to sweep (test broken?)"; }
            check "the prepare after kill -9" 0 to "$METACL" data prepare "txt:$TMP/a.txt" --name tiny --data-dir "$R"
        fi
        left=$(leftovers "$R")
        [ -z "$left" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL: $sig: left $left"; }
    done
else
    echo "test-text-cleanup: built without --enable-test-hooks: signal checks skipped"
fi

echo "test-text-cleanup: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
