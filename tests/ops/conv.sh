#!/bin/sh
# tests/ops/conv.sh -- test-ops on the conv family (conv2d maxpool2d instance_norm inorm_pool_relu conv_inorm_pool_relu inorm_relu inorm_add_pool_relu).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family conv
