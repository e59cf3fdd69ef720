#!/bin/sh
# tests/ops/elementwise.sh -- test-ops on the elementwise family (add sub mul scale bias_add copy bias_add2).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family elementwise
