#!/bin/sh
# tests/ops/embed.sh -- test-ops on the embed family (one_hot embedding).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family embed
