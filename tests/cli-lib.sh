# cli-lib.sh — shared by the shell tests of the metacl command line (sourced, not run):
# pass/fail counters, `check` (exit code of a command) and `expect_text` (its output).
pass=0
fail=0
check() { # check "description" expected_rc command...
    desc=$1; want=$2; shift 2
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -eq "$want" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $desc: exit $rc, expected $want"
        echo "$out" | sed 's/^/    /'
    fi
    LAST_OUT=$out
}
expect_text() { # expect_text "description" "substring": in the last checked command's output
    case "$LAST_OUT" in
    *"$2"*) pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: $1: output lacks '$2'"; echo "$LAST_OUT" | sed 's/^/    /' ;;
    esac
}
