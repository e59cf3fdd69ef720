#!/bin/sh
# tests/ops/optim.sh -- test-ops on the optim family (sgd_step adam_step clip_scale dyn_step).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family optim
