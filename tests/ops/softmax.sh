#!/bin/sh
# tests/ops/softmax.sh -- test-ops on the softmax family (softmax log_softmax).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family softmax
