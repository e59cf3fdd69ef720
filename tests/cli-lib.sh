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
    set_keys "$_tc_file" "$@"
}
# set_keys FILE [KEY=VALUE]...: each KEY=VALUE replaces that key's line of the config FILE (or
# is added when the key is not there).
set_keys() {
    _sk_file=$1
    shift
    for _tc_kv in "$@"; do
        awk -v k="${_tc_kv%%=*}" -v v="${_tc_kv#*=}" '
            $1 == k { print k " = " v; done = 1; next } { print } END { if (!done) print k " = " v }
        ' "$_sk_file" >"$_sk_file.new" && mv "$_sk_file.new" "$_sk_file"
    done
}
# tiny_oct_conf FILE DATA_DIR [KEY=VALUE]...: the tiny online-transformer run of the CLI tests
# (pi-transformer, 2 blocks of width 16, 5-way maps of hershey classes, 4 tasks of 20 examples,
# chunks of 10, 2 readers, a checkpoint every 3 steps), KEY=VALUE as in tiny_conf.
tiny_oct_conf() {
    cat >"$1" <<CONF
model.arch = pi
model.channels = 4
model.width = 16
model.blocks = 2
model.heads = 2
model.head_dim = 8
model.window = 15
model.n_way = 5
data.source = hershey
data.dir = $2
stream.tasks = 4
stream.per_task = 20
online.streams = 2
train.batch = 10
train.ckpt_every = 3
CONF
    _to_file=$1
    shift 2
    set_keys "$_to_file" "$@"
}
# tiny_lm_corpus DATA_DIR: a 3000-word corpus of twelve words prepared as DATA_DIR/tiny (the
# `check` of `metacl data prepare` counts as a test).
tiny_lm_corpus() {
    awk 'BEGIN { split("the a cat dog sat ran on under mat hat big small", w, " ");
                 for (i = 0; i < 3000; i++) { printf "%s ", w[(i * 7 + int(i / 13)) % 12 + 1]; if (i % 11 == 10) printf "\n" } }' \
        >"$1.words.txt"
    check "lm corpus" 0 "$METACL" data prepare "txt:$1.words.txt" --name tiny --data-dir "$1"
}
# tiny_lm_conf FILE CORPUS_DIR [KEY=VALUE]...: the tiny language model of the CLI tests (1
# layer of width 8, memory 8, k 2; 2 blocks of 200 bytes per step, 2 steps, no validation) on
# the corpus of tiny_lm_corpus (CORPUS_DIR = its DATA_DIR/tiny), KEY=VALUE as in tiny_conf.
tiny_lm_conf() {
    cat >"$1" <<CONF
model.layers = 1
model.width = 8
model.heads = 2
model.head_dim = 4
model.ffw = 16
model.mem_len = 8
model.meta_hidden = 2
smn.k = 2
smn.fast_len = 4
smn.seg_len = 8
data.dir = $2
data.block = 200
data.val_chars = 100
data.eval_block = 100
train.batch = 2
train.steps = 2
train.val_every = 0
CONF
    _tl_file=$1
    shift 2
    set_keys "$_tl_file" "$@"
}
