#!/bin/sh
# tests/ops/norm.sh -- test-ops on the norm family (layer_norm).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family norm
