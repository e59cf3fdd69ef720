#!/bin/sh
# test-ops-families.sh -- the per-family op tests cover every op exactly once.
#
# `make check` runs test-ops once per op family, as tests/ops/<family>.sh (in parallel), not as
# one program. This checks that the scripts under tests/ops/ name exactly the families of
# src/common/ops.def (test-ops --check-families: an op whose family has no script, a script
# for no family or a family named twice fails) and that Makefile.am lists every script.

srcdir=${METACL_SRCDIR:-$(dirname "$0")/..}
if [ -z "${TEST_OPS:-}" ]; then
    if [ -n "${METACL_BUILDDIR:-}" ] && [ -x "$METACL_BUILDDIR/tests/test-ops" ]; then
        TEST_OPS=$METACL_BUILDDIR/tests/test-ops
    else
        TEST_OPS=./tests/test-ops
    fi
fi

status=0
families=
for f in "$srcdir"/tests/ops/*.sh; do
    [ -e "$f" ] || continue
    fam=$(basename "$f" .sh)
    families="$families $fam"
    if ! grep -q "tests/ops/$fam\.sh" "$srcdir/Makefile.am"; then
        echo "test-ops-families: tests/ops/$fam.sh is not listed in Makefile.am (it would not run)"
        status=1
    fi
    if ! grep -q "^run_family $fam\$" "$f"; then
        echo "test-ops-families: tests/ops/$fam.sh does not run family $fam"
        status=1
    fi
done
# shellcheck disable=SC2086 # one argument per family
"$TEST_OPS" --check-families $families || status=1
# and a deliberately incomplete list must be refused
if "$TEST_OPS" --check-families $(echo $families | cut -d' ' -f2-) >/dev/null; then
    echo "test-ops-families: FAILED: a family list missing one family was accepted"
    status=1
fi
[ "$status" -eq 0 ] && echo "test-ops-families: ok"
exit "$status"
