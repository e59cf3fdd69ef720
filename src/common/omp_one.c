/* omp_one.c — a parallel region of one thread runs as a plain call.
 *
 * GCC compiles `#pragma omp parallel` (and `parallel for`) into a call of libgomp's
 *   GOMP_parallel(fn, data, num_threads, flags)
 * with the region's body outlined into fn; num_threads is 1 when the region's `if` clause is
 * false (the library's size thresholds: "below this many elements a loop runs on the calling
 * thread") or its num_threads clause says 1, and 0 when the team is the nthreads-var's
 * (omp_get_max_threads()). libgomp (GCC 12) then starts a team even of one thread and ends it
 * at a barrier whose last arrival always makes a futex wake system call. On the virtual
 * machines this project runs on a system call is expensive: 1.16 µs per region on the
 * 2026-12-01 AMD Zen 5 machine (a loop of `#pragma omp parallel if (0)` regions, OMP_NUM_THREADS
 * 1; `perf stat -e syscalls:sys_enter_futex` counts one per region), and the Sparse-MetaNet
 * WCST window opened about 310 regions per step at one thread, nearly all below their
 * thresholds, about 7 % of its time (doc/reference-backend.md, "One thread, no team").
 *
 * The library is linked with -Wl,--wrap=GOMP_parallel (configure: GCC's OpenMP only), so its
 * own regions, and only its own, call __wrap_GOMP_parallel below: a region that would get a
 * team of one thread calls fn(data) on the calling thread, any other goes to libgomp. Running
 * the body outside a team is what OpenMP calls an orphaned execution of its constructs, and
 * for a team of one it is the same computation: omp_get_thread_num() is 0 and
 * omp_get_num_threads() 1 either way, omp_in_parallel() is false either way (a team of one is
 * an inactive region), an orphaned `omp for` runs all its iterations in order on the calling
 * thread (its static split of one thread), barriers return at once, reductions and atomics
 * combine the one thread's values as before. So no result changes, on any thread count. A
 * region nested in another (omp_get_level() > 0) always goes to libgomp.
 */
#if defined(_OPENMP) && defined(__GNUC__) && !defined(__clang__)
#include <omp.h>

void __real_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags);
__attribute__((visibility("hidden"))) void __wrap_GOMP_parallel(void (*fn)(void *), void *data,
                                                             unsigned num_threads, unsigned flags);

void __wrap_GOMP_parallel(void (*fn)(void *), void *data, unsigned num_threads, unsigned flags)
{
    if ((num_threads == 1 || (num_threads == 0 && omp_get_max_threads() == 1)) && omp_get_level() == 0) {
        fn(data);
        return;
    }
    __real_GOMP_parallel(fn, data, num_threads, flags);
}
#else
typedef int mcl_omp_one_unused; /* (no libgomp regions to wrap: an empty unit is not ISO C) */
#endif
