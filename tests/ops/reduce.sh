#!/bin/sh
# tests/ops/reduce.sh -- test-ops on the reduce family (sum mean sumsq sum_last mean_last).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family reduce
