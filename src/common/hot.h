/* hot.h — compiler help for hot loops (internal), shared by the reference backend (src/ref/)
 * and the engine's block drawing of Philox numbers (rng.c, rng_draw.h).
 *
 * Neither macro changes any result: MCL_HOT compiles a function at -O3 (unrolled fixed-size
 * loops keep their sums in registers); MCL_SIMD (#pragma omp simd) names the loop to vectorize
 * (left to its cost model, GCC 12 sometimes picks the wrong one and runs 5-30x slower). Every
 * lane does its own exactly rounded operation, so vectorizing changes no bit (the library is
 * built without fast-math and without FP contraction). MCL_HOT_INLINE: a helper forced inline
 * into its MCL_HOT callers, compiled as they are (plain `static inline` helpers, compiled
 * without the O3 attribute, were sometimes kept out of line, a call per element).
 */
#ifndef MCL_HOT_H
#define MCL_HOT_H

#if defined(__GNUC__) && !defined(__clang__)
#define MCL_HOT __attribute__((optimize("O3")))
#else
#define MCL_HOT
#endif
#if defined(__GNUC__)
#define MCL_HOT_INLINE MCL_HOT static inline __attribute__((always_inline))
#else
#define MCL_HOT_INLINE static inline
#endif
/* MCL_SIMD_AND(v): the same for a loop whose only carried value is the int v, combined by & */
#define MCL_PRAGMA(x) _Pragma(#x)
#ifdef _OPENMP
#define MCL_SIMD _Pragma("omp simd")
#define MCL_SIMD_AND(v) MCL_PRAGMA(omp simd reduction(& : v))
#else
#define MCL_SIMD
#define MCL_SIMD_AND(v)
#endif

#endif
