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
# prepare_hershey DIR: the hershey set (Debian hershey-fonts-data) prepared into DIR for the
# training tests; on failure the log is printed and the test exits 1.
prepare_hershey() {
    if ! "$METACL" data prepare hershey --data-dir "$1" >"$1.prep.log" 2>&1; then
        echo "FAIL: cannot prepare the hershey set (Debian hershey-fonts-data missing?)"
        cat "$1.prep.log"
        exit 1
    fi
}
# tiny_conf FILE DATA_DIR [KEY=VALUE]...: the tiny ACL config of the training tests (3-way
# 2-shot, 2 tasks, hidden 16, 4 conv channels, 6 steps of 2 sequences, validation and
# checkpoints every 3 steps, a metrics row every step; runs in a fraction of a second), with
# each KEY=VALUE replacing that key's line (or added when the key is not there).
tiny_conf() {
    _tc_file=$1
    cat >"$_tc_file" <<CONF
model.n_way = 3
model.hidden = 16
model.heads = 2
model.layers = 1
model.conv_channels = 4
model.feature_norm = batch
task.n_way = 3
task.k_shot = 2
task.n_tasks = 2
data.domains = hershey
data.dir = $2
train.steps = 6
train.batch = 2
train.val_every = 3
train.val_batches = 1
train.ckpt_every = 3
train.log_every = 1
CONF
    shift 2
    for _tc_kv in "$@"; do
        awk -v k="${_tc_kv%%=*}" -v v="${_tc_kv#*=}" '
            $1 == k { print k " = " v; done = 1; next } { print } END { if (!done) print k " = " v }
        ' "$_tc_file" >"$_tc_file.new" && mv "$_tc_file.new" "$_tc_file"
    done
}
