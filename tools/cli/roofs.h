/* roofs.h — this machine's two roofs, measured once per run by `metacl bench roofline` and by
 * `metacl bench acl|oct|smn|lm --bound` (and --json):
 *   - the FMA peak: each thread runs a short loop of independent fused multiply-add chains
 *     (enough chains to hide the FMA latency, in the vector width -march=native gives);
 *     GFLOP/s = 2 · FMAs / the thread's own CPU time, summed over the threads, best of 5 (CPU
 *     time, so that other work on a shared machine does not lower the roof);
 *   - the memory bandwidth: the STREAM triad a[i] = b[i] + s·c[i] over three 32 MiB arrays
 *     (far beyond the last-level cache); GB/s = 12 bytes per element / wall time (STREAM's
 *     count: two reads, one write; write-allocate traffic not counted), best of 10.
 * Together about 0.1-0.3 s per thread count. */
#ifndef MCL_TOOLS_ROOFS_H
#define MCL_TOOLS_ROOFS_H

/* GFLOP/s of t threads' FMA loops (the sum of their rates). */
double mcl_roof_fma_peak(int t);
/* GB/s of the triad on t threads, or 0 when the arrays cannot be allocated. */
double mcl_roof_triad(int t);
/* Floats per vector of the FMA loop (16 AVX-512, 8 AVX, else 4). */
int mcl_roof_fma_lanes(void);
/* Both roofs for t = 1..T (peak[t], bw[t]; arrays of T + 1), *peak_T = peak[T] and *bw_T = the
 * best bandwidth of 1..T threads (T threads have at least what fewer measured: on a shared
 * machine a run with more threads can measure less). 0, or 1 when the triad's arrays could not
 * be allocated. */
int mcl_roofs_measure(int T, double *peak, double *bw, double *peak_T, double *bw_T);

#endif
