#!/bin/sh
# tests/ops/matmul.sh -- test-ops on the matmul family (matmul).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family matmul
