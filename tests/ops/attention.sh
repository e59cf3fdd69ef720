#!/bin/sh
# tests/ops/attention.sh -- test-ops on the attention family (attn_kv kv_push rel_attn).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family attention
