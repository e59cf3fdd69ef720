# ops-family.sh -- sourced by tests/ops/<family>.sh: run_family FAMILY runs the op test runner
# on the ops of one family (the family column of src/common/ops.def), in the runner's default
# mode: the reference backend always, OpenCL and the differential checks when OpenCL is built
# (exit 77, SKIP, only when no OpenCL device exists: see tests/test-ops.c).
# TEST_OPS overrides the binary; otherwise $METACL_BUILDDIR/tests/test-ops (exported by the
# test harness), else ./tests/test-ops (automake runs tests from the build directory).

run_family() {
    if [ -z "${TEST_OPS:-}" ]; then
        if [ -n "${METACL_BUILDDIR:-}" ] && [ -x "$METACL_BUILDDIR/tests/test-ops" ]; then
            TEST_OPS=$METACL_BUILDDIR/tests/test-ops
        else
            TEST_OPS=./tests/test-ops
        fi
    fi
    exec "$TEST_OPS" --family "$1"
}
