#!/bin/sh
# test-python.sh — the Python package's tests (python/tests, pytest) against this build:
# every op forward against NumPy and backward against finite differences on every backend,
# the API's errors and lifetimes, the shipped ACL learner against `metacl eval acl`, and the
# snippets of doc/python.md. Registered by Makefile.am when configure found Python >= 3.11 with
# NumPy and pytest ($PYTHON).
#
# In a sanitizer build (configure --enable-sanitizers) the library is instrumented but the
# interpreter is not: the ASan runtime is preloaded, and leaks whose stack passes only through
# the interpreter and its modules (allocations Python keeps until exit by design) are
# suppressed by name; a leak in libmetacl is still reported and fails the test.
SRC=${METACL_SRCDIR:-$(dirname "$0")/..}
BUILD=${METACL_BUILDDIR:-.}
PY=${PYTHON:-python3}
PYTHONPATH="$BUILD/python"; export PYTHONPATH
PYTHONDONTWRITEBYTECODE=1; export PYTHONDONTWRITEBYTECODE
METACL_LIBRARY="$BUILD/.libs/libmetacl.so.0"; export METACL_LIBRARY
unset METACL_DEBUG_POISON  # not needed here: the model tests of make check cover lazy zeroing

if nm -D "$METACL_LIBRARY" 2>/dev/null | grep -q ' U __asan_init'; then
    asan=$(${CC:-cc} -print-file-name=libasan.so)
    if [ ! -f "$asan" ]; then
        echo "test-python: a sanitizer build, but libasan.so was not found ($asan)"; exit 1
    fi
    supp=$BUILD/test-python.lsan.supp
    # The interpreter's and NumPy's own allocations, kept until exit by design, by module. A
    # leak's stack is recorded only MCL_LSAN_DEPTH frames deep, so an allocation made inside
    # libmetacl shows libmetacl's frames (and libffi's, which is not suppressed), never the
    # interpreter's: it cannot hide behind these names. Plus whatever the CI's list holds.
    { printf '%s\n' 'leak:python3' 'leak:libpython' 'leak:_multiarray_umath' 'leak:libopenblas' 'leak:libblas' \
        'leak:liblapack' 'leak:libgfortran'
      case ${LSAN_OPTIONS:-} in *suppressions=*)
        f=$(printf '%s' "$LSAN_OPTIONS" | sed -n 's/.*suppressions=\([^:]*\).*/\1/p'); [ -f "$f" ] && cat "$f";; esac
    } > "$supp"
    LD_PRELOAD=$asan; export LD_PRELOAD
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}:verify_asan_link_order=0:malloc_context_size=${MCL_LSAN_DEPTH:-6}
    export ASAN_OPTIONS
    LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"; export LSAN_OPTIONS
    echo "test-python: sanitizer build: preloading $asan, interpreter leaks suppressed ($supp)"
    # The leak check can fail: a tensor whose reference the program never drops is reported.
    out=$("$PY" -c 'import ctypes, numpy as np, metacl
ctx = metacl.Context("ref")
t = ctx.tensor(np.ones(3, np.float32))
metacl._lib.tensor_keep(t.handle)  # a second reference nobody drops: the descriptor leaks
ctx.close()' 2>&1)
    if printf '%s\n' "$out" | grep -q 'mcl_tensor' && printf '%s\n' "$out" | grep -q 'LeakSanitizer'; then
        echo "test-python: ok: a planted leak in libmetacl is reported through the suppressions"
    else
        echo "test-python: FAIL: a planted leak in libmetacl was not reported:"; printf '%s\n' "$out"; exit 1
    fi
fi

echo "test-python: $PY $("$PY" --version 2>&1), package from $PYTHONPATH, library $METACL_LIBRARY"
exec "$PY" -m pytest -q -p no:cacheprovider -rs "$SRC/python/tests"
