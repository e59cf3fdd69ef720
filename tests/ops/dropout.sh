#!/bin/sh
# tests/ops/dropout.sh -- test-ops on the dropout family (dropout add_dropout bias_dropout_relu bias_add_dropout).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family dropout
