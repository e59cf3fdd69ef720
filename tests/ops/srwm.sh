#!/bin/sh
# tests/ops/srwm.sh -- test-ops on the srwm family (srwm).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family srwm
