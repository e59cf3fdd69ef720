#!/bin/sh
# test-cli-opts.sh — the option parser every metacl subcommand shares (tools/cli/cli_opts.c):
# --opt=value, -o value, `--`, generated -h/--help (exit 0, on stdout) on every subcommand,
# unknown options / missing and bad values (exit 2 with a message), decimal integers ("010"
# is ten), --version. Uses the IDX fixture of data/fixtures (found through METACL_SRCDIR).
METACL=${METACL:-./metacl}
SRC=${METACL_SRCDIR:-.}
FIX=$SRC/data/fixtures
TMP=test-cli-opts.tmp.$$
# check / expect_text and the pass/fail counters (METACL_SRCDIR: set by the Makefile)
. "${METACL_SRCDIR:-$(dirname "$0")/..}/tests/cli-lib.sh"
expect_no_text() { # expect_no_text "description" "substring": absent from the last output
    case "$LAST_OUT" in
    *"$2"*) fail=$((fail + 1)); echo "FAIL: $1: output has '$2'"; echo "$LAST_OUT" | sed 's/^/    /' ;;
    *) pass=$((pass + 1)) ;;
    esac
}
same_file() { # same_file "description" A B
    if cmp -s "$2" "$3"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $1: $2 and $3 differ"; fi
}

echo "test-cli-opts: binary $METACL (no randomness beyond explicit --seed values)"
rm -rf "$TMP" && mkdir "$TMP" || { echo "cannot create $TMP"; exit 1; }
IDX="idx:$FIX/tiny-images-idx3-ubyte.gz,$FIX/tiny-labels-idx1-ubyte.gz"

# -h and --help on every command and subcommand: exit 0, the usage on stdout, nothing on stderr
for cmd in devices selftest bench "bench gemm" "bench ops" "bench roofline" "bench data" "bench acl" "bench smn" "bench lm" data \
    "data prepare" "data info" "data show" train "train acl" eval "eval acl" ckpt "ckpt info" \
    "ckpt export" "ckpt import" plot version help; do
    for h in --help -h; do
        # shellcheck disable=SC2086 # $cmd is the command words
        check "$cmd $h exits 0" 0 sh -c "\"\$0\" $cmd $h 2>$TMP/err" "$METACL"
        expect_text "$cmd $h prints a usage" "usage: metacl"
        if [ -s "$TMP/err" ]; then fail=$((fail + 1)); echo "FAIL: $cmd $h wrote to stderr:"; sed 's/^/    /' "$TMP/err"
        else pass=$((pass + 1)); fi
    done
done
check "ckpt info --help is help, not a file" 0 "$METACL" ckpt info --help
expect_text "ckpt info usage" "usage: metacl ckpt info FILE"
expect_no_text "does not open --help" "cannot open"
# generated help: every accepted option is documented, with its metavar and default
check "eval acl --help" 0 "$METACL" eval acl --help
expect_text "eval documents --device" "--device N|NAME"
expect_text "eval documents --data-dir" "--data-dir DIR"
expect_text "eval shows a default" "--episodes E"
expect_text "eval shows the default of --episodes" "(default 64)"
check "data show --help" 0 "$METACL" data show --help
expect_text "short option shown" "-o, --out FILE.png"
expect_text "default shown" "(default 10)"
check "train --help" 0 "$METACL" train --help
expect_text "train --help lists the families" "acl "
check "top-level --help" 0 "$METACL" --help
for c in devices selftest "bench gemm" "bench ops" "bench roofline" "bench data" "bench acl" "bench smn" "bench lm" "data prepare" "data info" \
    "data show" "train FAMILY" "eval FAMILY" "ckpt info" "ckpt export" "ckpt import" plot version help; do
    expect_text "metacl --help lists '$c'" "  $c"
done
check "--version" 0 "$METACL" --version
expect_text "version line" "metacl "
expect_text "says whether OpenCL is built" "OpenCL backend: "
check "version --bogus" 2 "$METACL" version --bogus
# the OpenMP wait policy (tools/cli/omp_wait.c): chosen from the load at start unless the user
# chose, on >= 2 processors; which of the two depends on the machine's load, so either is right
# here (the choice itself: mcl_threads_wait_spin in tests/test-threads)
if [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && "$METACL" version | grep -q "OpenMP: yes"; then
    check "version without a wait policy" 0 env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u METACL_WAIT_CHOSEN "$METACL" version
    case "$LAST_OUT" in
    *"wait policy passive (other processes were running at start)"* | *"wait policy GOMP_SPINCOUNT=10000 (idle at start)"*)
        pass=$((pass + 1)) ;;
    *) fail=$((fail + 1)); echo "FAIL: metacl chose passive or GOMP_SPINCOUNT=10000 from the load"; echo "$LAST_OUT" | sed 's/^/    /' ;;
    esac
    check "version with OMP_WAIT_POLICY=active" 0 env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=active "$METACL" version
    expect_text "the user's wait policy is kept" "wait policy active (the user's)"
    check "version with GOMP_SPINCOUNT=500" 0 env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=500 "$METACL" version
    expect_text "the user's spin count is kept" "wait policy GOMP_SPINCOUNT=500 (the user's)"
    check "version with a stale choice" 0 env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=passive METACL_WAIT_CHOSEN=idle "$METACL" version
    expect_text "a stale choice is the user's" "wait policy passive (the user's)"
fi
check "bench roofline --clock bogus" 2 "$METACL" bench roofline --clock bogus
expect_text "names the clocks" "--clock must be wall or cpu"
check "bench roofline -o nope" 2 "$METACL" bench roofline -o nope
expect_text "lists the ops" "no case of op 'nope'"

# unknown options: exit 2, the option named, a hint to --help
check "devices --bogus" 2 "$METACL" devices --bogus
expect_text "names the option" "metacl devices: unknown option '--bogus'"
expect_text "hints at --help" "metacl devices --help"
check "data show --bogus=3" 2 "$METACL" data show "$IDX" --out "$TMP/x.png" --bogus=3
expect_text "names the option without its value" "unknown option '--bogus'"
check "unknown short option" 2 "$METACL" data show "$IDX" -q
expect_text "names the short option" "unknown option '-q'"
check "eval acl unknown option" 2 "$METACL" eval acl --bogus
expect_text "eval names the option" "metacl eval acl: unknown option '--bogus'"
check "a flag given a value" 2 "$METACL" devices --json=1
expect_text "says it takes no value" "takes no value"
check "too many arguments" 2 "$METACL" data info "$IDX" "$IDX"
# data show --augment: the same rows and images, each row with one random transformation
check "data show" 0 "$METACL" data show "$IDX" --out "$TMP/plain.png" --classes 2 --samples 3
check "data show --augment" 0 "$METACL" data show "$IDX" --out "$TMP/aug.png" --classes 2 --samples 3 --augment
check "data show --augment again" 0 "$METACL" data show "$IDX" --out "$TMP/aug2.png" --classes 2 --samples 3 --augment
if [ -s "$TMP/aug.png" ] && ! cmp -s "$TMP/plain.png" "$TMP/aug.png" && cmp -s "$TMP/aug.png" "$TMP/aug2.png"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: --augment sheet: not different from the plain one, or not reproducible"; fi

# missing and bad values: exit 2 with what the option accepts
check "missing value" 2 "$METACL" data show "$IDX" --out
expect_text "says a value is missing" "option '--out' needs a value"
check "missing value (selftest --seed)" 2 "$METACL" selftest --seed
check "bad integer" 2 "$METACL" selftest --steps abc
expect_text "names option, value and range" "--steps = 'abc': want an integer in [1, 100000]"
check "integer out of range" 2 "$METACL" bench gemm --reps 0
expect_text "out of range names the range" "want an integer in [1, 100000]"
check "trailing junk" 2 "$METACL" data show "$IDX" --out "$TMP/x.png" --classes 3x
check "negative seed" 2 "$METACL" data show "$IDX" --out "$TMP/x.png" --seed -1
expect_text "seed wants an unsigned integer" "--seed = '-1': want an unsigned integer"
check "bad enum" 2 "$METACL" eval acl --protocol nope --ckpt x --data hershey
expect_text "lists the protocols" "seq, two-task, split-dil or split-cil"
check "bad float" 2 "$METACL" plot "$TMP" --out "$TMP/p.png" --chance half
expect_text "plot names --chance" "'half'"
check "plot --chance out of [0,1]" 2 "$METACL" plot "$TMP" --out "$TMP/p.png" --chance 5
expect_text "chance is a probability" "want a probability in [0, 1]"
check "eval: seq beyond 16 tasks" 2 "$METACL" eval acl --ckpt x.ckpt --protocol seq --data hershey --tasks 17
expect_text "names the limit" "at most 16 tasks (the split protocols 64)"
check "eval: split beyond 64 tasks" 2 "$METACL" eval acl --ckpt x.ckpt --protocol split-dil --data hershey --tasks 65
check "eval: more --data than tasks" 2 "$METACL" eval acl --ckpt x.ckpt --protocol two-task --data hershey --data hershey --data fmnist
expect_text "eval says why" "3 --data for 2 tasks"
# one chance level per curriculum stage (--cumulative), or one for all
mkdir -p "$TMP/s1" "$TMP/s2"
for d in s1 s2; do printf 'step,loss,acc_main\n10,1,0.5\n20,0.9,0.6\n' >"$TMP/$d/metrics.csv"; done
check "plot: a chance level per stage" 0 "$METACL" plot "$TMP/s1" "$TMP/s2" --cumulative --chance 0.5 --chance 0.2 --out "$TMP/stages.png"
check "plot: per-stage levels need --cumulative" 2 "$METACL" plot "$TMP/s1" "$TMP/s2" --chance 0.5 --chance 0.2 --out "$TMP/stages.png"
check "plot: one level per stage" 2 "$METACL" plot "$TMP/s1" "$TMP/s2" --cumulative --chance 0.5 --chance 0.2 --chance 0.1 --out "$TMP/stages.png"
check "help with an argument" 2 "$METACL" help bogus
expect_text "help names the argument" "unexpected argument 'bogus'"
check "ckpt info --bogus is an option, not a file" 2 "$METACL" ckpt info --bogus
expect_text "ckpt info names the option" "metacl ckpt info: unknown option '--bogus'"
check "--device ''" 2 "$METACL" eval acl --device '' --protocol seq --ckpt x --data hershey
expect_text "says a device is wanted" "option '--device' needs a device"
check "train --device ''" 2 "$METACL" train acl --resume "$TMP" --device ''
# --set with --resume: an unknown key or a bad value is a usage error (2), as with --config
check "--resume with a bad --set key" 2 "$METACL" train acl --resume "$TMP/norun" --set train.stepz=3
expect_text "names the key" "train.stepz"
check "--resume with a bad --set value" 2 "$METACL" train acl --resume "$TMP/norun" --set train.batch=0
expect_text "names the value" "train.batch = '0'"

# integers are decimal: "010" is ten, not eight
check "selftest --seed 010" 1 "$METACL" selftest --seed 010 --steps 1
expect_text "010 is ten" "selftest: seed 10, 1 steps"
check "data show --seed 010" 0 "$METACL" data show "$IDX" --out "$TMP/s010.png" --seed 010 --samples 2
check "data show --seed 10" 0 "$METACL" data show "$IDX" --out "$TMP/s10.png" --seed 10 --samples 2
same_file "--seed 010 == --seed 10" "$TMP/s010.png" "$TMP/s10.png"

# --opt=value, -o VALUE and -oVALUE are --opt VALUE
check "--opt value" 0 "$METACL" data show "$IDX" --out "$TMP/a.png" --samples 3 --seed 5
check "--opt=value" 0 "$METACL" data show "$IDX" --out="$TMP/b.png" --samples=3 --seed=5
expect_text "the sheet of --samples=3" "(196x196)"
same_file "--opt=value == --opt value" "$TMP/a.png" "$TMP/b.png"
check "-o VALUE" 0 "$METACL" data show "$IDX" -o "$TMP/c.png" --samples 3 --seed 5
same_file "-o VALUE == --out VALUE" "$TMP/a.png" "$TMP/c.png"
check "-oVALUE" 0 "$METACL" data show "$IDX" -o"$TMP/d.png" --samples 3 --seed 5
same_file "-oVALUE == --out VALUE" "$TMP/a.png" "$TMP/d.png"
check "options before the argument" 0 "$METACL" data show --samples 3 --seed 5 --out "$TMP/e.png" "$IDX"
same_file "positional anywhere" "$TMP/a.png" "$TMP/e.png"
check "the last of a repeated option wins" 0 "$METACL" data show "$IDX" --out "$TMP/f.png" --samples 7 --samples 3 --seed 5
same_file "--samples 7 --samples 3 == --samples 3" "$TMP/a.png" "$TMP/f.png"

# `--` ends the options: what follows is an argument even when it starts with '-'
check "-- then the argument" 0 "$METACL" data info -- "$IDX"
expect_text "info of the fixture" "images     36"
check "-- then an option-like argument" 1 "$METACL" data info -- --json
expect_no_text "--json after -- is not an option" '"images"'
check "an option after -- is an argument" 2 "$METACL" data info "$IDX" -- --json
expect_text "too many arguments" "unexpected argument '--json'"

# repeatable options keep their order (eval: --ckpt and --baseline rows in command-line order)
check "eval: a repeatable option with a bad value" 2 "$METACL" eval acl --protocol seq --data hershey --baseline sgd --baseline rmsprop
expect_text "names the bad baseline" "--baseline 'rmsprop'"
check "eval: a baseline key of another method" 2 "$METACL" eval acl --protocol seq --data hershey --baseline si:lambda=3
expect_text "names the key and the method's keys" "no key 'lambda' for si (keys: lr, epochs, batch, optim, regime, c, xi)"
check "eval: a bad baseline value" 2 "$METACL" eval acl --protocol split-dil --data hershey --baseline ewc:lambda=-1
expect_text "names the value and its range" "lambda=-1: want a float in [0, 1e12]"
check "eval: the full-data regime on task sequences" 2 "$METACL" eval acl --protocol seq --data hershey --baseline replay:regime=full
expect_text "says what regime=full is for" "regime=full is for the split protocols"
check "eval: family checked against the families" 2 "$METACL" eval nosuchfamily --protocol seq
expect_text "lists the families" "(available: acl"

# The harness can fail: a wrong expectation is counted as a failure.
saved_pass=$pass saved_fail=$fail
check "deliberately wrong exit code" 0 "$METACL" devices --bogus >/dev/null
expect_text "deliberately wrong text" "this text is not in the output" >/dev/null
if [ "$fail" -eq $((saved_fail + 2)) ] && [ "$pass" -eq "$saved_pass" ]; then
    fail=$saved_fail; pass=$((pass + 1))
else
    echo "FAIL: the harness did not catch two deliberate mismatches"; fail=$((fail + 1))
fi

rm -rf "$TMP"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
