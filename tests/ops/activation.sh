#!/bin/sh
# tests/ops/activation.sh -- test-ops on the activation family (relu leaky_relu elu sigmoid tanh gelu exp log bias_gelu).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family activation
