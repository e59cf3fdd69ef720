#!/bin/sh
# tests/ops/shape.sh -- test-ops on the shape family (concat slice reshape transpose permute repeat_batch repeat_batch4).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family shape
