#!/bin/sh
# tests/ops/loss.sh -- test-ops on the loss family (cross_entropy).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family loss
