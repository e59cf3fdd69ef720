#!/bin/sh
# test-figures-oom.sh — a figure that runs out of memory fails with exit 1 and a message,
# never a crash: `eval lm --figures DIR` under `ulimit -v` at every limit (steps of 100 KiB)
# from 10 MiB below the smallest one at which it succeeds up to that one must exit 0 or 1.
# Cairo's scan converters longjmp through a frame they have not set up when an allocation fails
# in a stroke: before the fix some limits ended in SIGSEGV (exit 139); now the drawing starts
# only with a reserve of memory in hand (tools/cli/plot.c, fig_begin) and the PNG is encoded by
# metacl's own writer. Skipped in AddressSanitizer builds (the shadow memory needs terabytes
# of address space, so `ulimit -v` cannot be used).
METACL=${METACL:-./metacl}
TMP=test-figures-oom.tmp.$$
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
bld=${METACL_BUILDDIR:-.}
if grep -Eq '^CFLAGS = .*-fsanitize=address' "$bld/Makefile" 2>/dev/null; then
    echo "test-figures-oom: an AddressSanitizer build (ulimit -v is not usable): SKIP"; exit 77
fi
# the binary itself, not libtool's wrapper script (whose shell would count against the limit)
BIN=$METACL
[ -x "$(dirname "$METACL")/.libs/metacl" ] && BIN=$(dirname "$METACL")/.libs/metacl &&
    LD_LIBRARY_PATH=$(dirname "$METACL")/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} && export LD_LIBRARY_PATH

echo "test-figures-oom: binary $BIN"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
tiny_lm_corpus "$TMP/data"
tiny_lm_conf "$TMP/lm.conf" "$TMP/data/tiny"
check "tiny lm run" 0 "$METACL" train lm --config "$TMP/lm.conf" --out "$TMP/lm" --quiet
ev() { # ev LIMIT_KIB: the exit status of eval lm --figures under that limit
    rm -rf "$TMP/fig"
    (ulimit -v "$1" && exec "$BIN" eval lm --ckpt "$TMP/lm/last.ckpt" --mode static --max-chars 300 --figures "$TMP/fig" --quiet) \
        >/dev/null 2>"$TMP/ev.err"
}
lo=0
v=10000
while [ $v -le 400000 ]; do
    if ev $v; then lo=$v; break; fi
    v=$((v + 2000))
done
if [ $lo -eq 0 ]; then
    fail=$((fail + 1)); echo "FAIL: eval lm --figures did not succeed under any limit up to 400000 KiB"; cat "$TMP/ev.err"
else
    echo "eval lm --figures succeeds under ulimit -v $lo KiB; scanning $((lo - 10000)) .. $lo"
    v=$((lo - 10000))
    crashes=""
    while [ $v -le $lo ]; do
        ev $v; rc=$?
        if [ $rc -eq 0 ] || [ $rc -eq 1 ]; then pass=$((pass + 1));
        elif [ $rc -eq 127 ] && grep -q 'error while loading shared libraries' "$TMP/ev.err"; then pass=$((pass + 1));
        else crashes="$crashes $v(exit $rc)"; fi
        v=$((v + 100))
    done
    if [ -n "$crashes" ]; then fail=$((fail + 1)); echo "FAIL: eval lm --figures crashed under ulimit -v:$crashes"; fi
fi

echo "test-figures-oom: $pass passed, $fail failed"
rm -rf "$TMP"
[ $fail -eq 0 ]
