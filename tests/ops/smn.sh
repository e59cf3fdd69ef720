#!/bin/sh
# tests/ops/smn.sh -- test-ops on the smn family (grad_preproc smn_write wcst_act smn_avg_z smn_write_eff smn_avg_write smn_write_add).
. "${METACL_SRCDIR:-$(dirname "$0")/../..}/tests/ops-family.sh"
run_family smn
