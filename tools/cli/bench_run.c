/* bench_run.c — the timing loop of `metacl bench acl` / `oct` / `smn` / `lm` (bench_run.h).
 * Timing: one warm-up iteration, then --reps iterations, each ending with mcl_ctx_finish so
 * queued device work is included; best and median reported. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "bench_run.h"
#include "cli.h"
#include "opcost.h"
#include "profile.h"
#include "progress.h"
#include "roofs.h"
#include "util.h"

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void mcl_bench_sort(double *t, int n) { qsort(t, (size_t)n, sizeof *t, cmp_d); }

/* s as a JSON string (quotes, backslashes and control characters escaped). */
static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

#define NOTE_LINE 480 /* "<name>: <text>; <counters>" under the table */

/* a += b, field by field. */
static void mcl_backend_stats_add(mcl_backend_stats *a, const mcl_backend_stats *b)
{
    a->op_calls += b->op_calls;
    a->enqueues += b->enqueues;
    a->clblast_calls += b->clblast_calls;
    a->blocking += b->blocking;
    a->blocking_reads += b->blocking_reads;
    a->blocking_writes += b->blocking_writes;
    a->finishes += b->finishes;
    a->maps += b->maps;
    a->nonblocking += b->nonblocking;
    a->bytes_h2d += b->bytes_h2d;
    a->bytes_d2h += b->bytes_d2h;
}

/* The backend counters of the timed iterations (the finish after each excluded), per
 * iteration: ,"op_calls":..,"enqueues":.. (bench_run.h). */
static void print_stats_json(const mcl_backend_stats *s, int n)
{
    const struct {
        const char *key;
        uint64_t v;
    } f[] = {{"op_calls", s->op_calls},         {"enqueues", s->enqueues},
             {"clblast_calls", s->clblast_calls}, {"blocking", s->blocking},
             {"blocking_reads", s->blocking_reads}, {"blocking_writes", s->blocking_writes},
             {"finishes", s->finishes},         {"maps", s->maps},
             {"nonblocking", s->nonblocking},   {"bytes_h2d", s->bytes_h2d},
             {"bytes_d2h", s->bytes_d2h}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        printf(",\"%s\":%.17g", f[i].key, (double)f[i].v / (double)n);
}

typedef struct bench_opts {
    char backend[64], device[256], only[16][32]; /* a name may repeat */
    int n_only, reps, threads, json, bound;
} bench_opts;

static const mcl_key bench_keys[] = {
    MCL_OPT_BACKEND(bench_opts, backend),
    MCL_OPT_DEVICE(bench_opts, device),
    MCL_OPT_INT("reps", 0, bench_opts, reps, 1, 100000, NULL, "N",
                "timed iterations per workload (default: each workload's own)"),
    MCL_OPT_INT("threads", 0, bench_opts, threads, 1, 4096, NULL, "N", "OpenMP threads of the reference backend"),
    MCL_OPT_STRLIST("only", 0, bench_opts, only, n_only, "NAME[,NAME...]", "only these workloads"),
    MCL_OPT_FLAG("json", 0, bench_opts, json, "print JSON instead of a table (with the bound on ref)"),
    MCL_OPT_FLAG("bound", 0, bench_opts, bound,
                 "the roofline bound of each workload: its op calls' flops and bytes against this "
                 "machine's FMA peak and STREAM bandwidth, measured first (reference backend)"),
};
/* The op passes with the largest shares of t's bound, as "matmul fwd 41% C, ..." (C: compute
 * roof, M: memory, by the pass's summed flops and bytes), at most `most` of them. */
static void top_ops(const mcl_bound_tally *t, int most, char *buf, size_t size)
{
    int used[MCL_OP_COUNT][2];
    memset(used, 0, sizeof used);
    size_t len = 0;
    buf[0] = '\0';
    for (int k = 0; k < most && t->bound_s > 0; k++) {
        int bo = -1, bd = 0;
        for (int op = 0; op < MCL_OP_COUNT; op++)
            for (int d = 0; d < 2; d++)
                if (!used[op][d] && t->op_calls[op][d] && (bo < 0 || t->op_bound_s[op][d] > t->op_bound_s[bo][bd])) {
                    bo = op;
                    bd = d;
                }
        if (bo < 0) break;
        used[bo][bd] = 1;
        const mcl_op_cost c = {t->op_flops[bo][bd], t->op_bytes[bo][bd]};
        int compute;
        mcl_bound_of(t, &c, &compute);
        const int w = snprintf(buf + len, size - len, "%s%s %s %.0f%% %s", k ? ", " : "", mcl_op_table[bo].name,
                               bd ? "bwd" : "fwd", 100 * t->op_bound_s[bo][bd] / t->bound_s, compute ? "C" : "M");
        if (w < 0 || (size_t)w >= size - len) break;
        len += (size_t)w;
    }
}

/* The bound fields of a workload's JSON entry (n timed iterations in t; med: median ms). */
static void print_bound_json(const mcl_bound_tally *t, int n, double med)
{
    const double bound_ms = 1e3 * t->bound_s / n;
    printf(",\"bound_ms\":%.4f,\"flops\":%.0f,\"bytes\":%.0f,\"bound_fraction\":%.4f,\"bound_compute_share\":%.4f"
           ",\"flops_ms\":%.4f",
           bound_ms, t->flops / n, t->bytes / n, med > 0 ? bound_ms / med : 0.0,
           t->bound_s > 0 ? t->compute_s / t->bound_s : 0.0, t->gflops > 0 ? t->flops / n / (t->gflops * 1e6) : 0.0);
    printf(",\"bound_ops\":[");
    int first = 1;
    for (int op = 0; op < MCL_OP_COUNT; op++)
        for (int d = 0; d < 2; d++)
            if (t->op_calls[op][d]) {
                printf("%s{\"op\":\"%s\",\"pass\":\"%s\",\"calls\":%.17g,\"flops\":%.0f,\"bytes\":%.0f,"
                       "\"bound_ms\":%.4f}",
                       first ? "" : ",", mcl_op_table[op].name, d ? "bwd" : "fwd", (double)t->op_calls[op][d] / n,
                       t->op_flops[op][d] / n, t->op_bytes[op][d] / n, 1e3 * t->op_bound_s[op][d] / n);
                first = 0;
            }
    printf("]");
}

static mcl_cli_cmd bench_cmd = {
    .name = "bench",
    .synopsis = "[--backend ref|opencl] [--device N|NAME] [--reps N] [--threads N] [--only NAME[,NAME...]] [--json] "
                "[--bound]",
    .opts = bench_keys, .n_opts = (int)(sizeof bench_keys / sizeof bench_keys[0])};

mcl_tensor *mcl_bench_rand(mcl_ctx *ctx, int ndim, const int64_t *shape, uint64_t seed,
                           uint64_t stream, float std, int requires_grad)
{
    mcl_tensor *t = requires_grad ? mcl_param_create(ctx, "x", ndim, shape)
                                  : mcl_tensor_create(ctx, ndim, shape);
    if (t && mcl_tensor_randn(t, seed, stream, 0.0f, std) != MCL_OK) {
        mcl_tensor_free(t);
        return NULL;
    }
    return t;
}

/* Why this function is long (~135 lines): it is every `metacl bench` family command's one
 * loop (options, the context, each workload's setup, warm-up, timed repetitions and counters,
 * the table or JSON row), written once for all of them; its steps share the timing state. */
int mcl_bench_main(const char *bench, const char *about, const char *epilog,
                   const mcl_bench_workload *workloads, int n_workloads, uint64_t seed, int argc,
                   char **argv)
{
    char name[64];
    snprintf(name, sizeof name, "bench %s", bench);
    bench_cmd.name = name;
    bench_cmd.about = about;
    bench_cmd.epilog = epilog;
    bench_opts o = {.reps = 0, .threads = 0};
    mcl_cli_parsed p;
    int prc = mcl_cli_parse(&bench_cmd, argc, argv, &o, &p);
    if (prc != MCL_CLI_GO) return prc;
    const char *backend = o.backend, *device = o.device;
    const int json = o.json, reps = o.reps, threads = o.threads;
    int selected[MCL_BENCH_MAX_WORKLOADS];
    if (n_workloads > MCL_BENCH_MAX_WORKLOADS) return 1;
    for (int w = 0; w < n_workloads; w++) selected[w] = o.n_only == 0;
    for (int i = 0; i < o.n_only; i++) {
        int found = 0;
        for (int w = 0; w < n_workloads; w++)
            if (!strcmp(o.only[i], workloads[w].name)) selected[w] = found = 1;
        if (!found) {
            fprintf(stderr, "metacl bench %s: unknown workload '%s' (", bench, o.only[i]);
            for (int w = 0; w < n_workloads; w++) fprintf(stderr, "%s%s", w ? ", " : "", workloads[w].name);
            fprintf(stderr, ")\n");
            return 2;
        }
    }
#ifdef _OPENMP
    if (threads > 0) omp_set_num_threads(threads);
    const int nthreads = omp_get_max_threads();
#else
    const int nthreads = 1;
#endif
    mcl_ctx *ctx = NULL;
    int rc = mcl_cli_open_ctx(backend, device, &ctx);
    if (rc) return rc;
    mcl_ctx_set_seed(ctx, seed);
    const char *bname = mcl_ctx_backend_name(ctx);
    /* the roofline bound (opcost.h): the roofs measured once, the op calls of every timed
     * iteration tallied; on the reference backend only (the roofs are this CPU's) */
    const int bound = (o.bound || json) && strcmp(bname, "ref") == 0;
    if (o.bound && !bound) {
        fprintf(stderr, "metacl bench %s: --bound needs the reference backend (the roofs are this CPU's)\n", bench);
        mcl_ctx_free(ctx);
        return 2;
    }
    double peak_T = 0, bw_T = 0;
    mcl_bound_tally *tally = NULL;
    char (*bounds)[NOTE_LINE] = NULL; /* the bound lines, printed under the table */
    if (bound) {
        double *pk = calloc((size_t)nthreads + 1, sizeof *pk), *bw = calloc((size_t)nthreads + 1, sizeof *bw);
        tally = calloc(1, sizeof *tally);
        bounds = calloc((size_t)n_workloads, sizeof *bounds);
        mcl_progress_start("bench: FMA peak and STREAM triad", 0);
        rc = !pk || !bw || !tally || !bounds || mcl_roofs_measure(nthreads, pk, bw, &peak_T, &bw_T);
        mcl_progress_finish();
        free(pk);
        free(bw);
        if (rc) {
            fprintf(stderr, "metacl bench %s: out of memory measuring the roofs\n", bench);
            free(tally);
            free(bounds);
            mcl_ctx_free(ctx);
            return 1;
        }
    }
    int namew = 10; /* the name column: 10 wide, or the longest selected name */
    for (int w = 0; w < n_workloads; w++)
        if (selected[w] && (int)strlen(workloads[w].name) > namew) namew = (int)strlen(workloads[w].name);
    if (json) {
        printf("{\"bench\":\"%s\",\"impl\":\"metacl\",\"backend\":\"%s\"", bench, bname);
        mcl_cli_json_device_fields(stdout, ctx);
        printf(",\"threads\":%d", nthreads);
        if (bound) printf(",\"peak_gflops\":%.2f,\"triad_gbs\":%.2f", peak_T, bw_T);
        printf(",\"workloads\":[");
    } else
        printf("metacl bench %s: backend %s, %d OpenMP thread%s\n%-*s %10s %10s %5s  %s\n", bench, bname,
               nthreads, nthreads == 1 ? "" : "s", namew, "workload", "best ms", "median ms", "reps",
               "what");
    int first = 1;
    /* the notes, printed under the table */
    char (*notes)[NOTE_LINE] = calloc((size_t)n_workloads, sizeof *notes);
    if (!notes) {
        free(tally);
        free(bounds);
        mcl_ctx_free(ctx);
        return 1;
    }
    for (int w = 0; w < n_workloads && rc == 0; w++) {
        if (!selected[w]) continue;
        const mcl_bench_workload *wl = &workloads[w];
        int n = reps > 0 ? reps : wl->default_reps;
        void *st = wl->setup(ctx);
        double *t = malloc((size_t)n * sizeof *t);
        if (!st || !t || wl->iter(ctx, st) != 0 || mcl_ctx_finish(ctx) != MCL_OK) {
            fprintf(stderr, "metacl bench %s: %s failed: %s\n", bench, wl->name, mcl_ctx_error(ctx));
            rc = 1;
        }
        char label[96];
        snprintf(label, sizeof label, "bench %s: %s, reps", bench, wl->name);
        mcl_progress_start(label, n);
        mcl_backend_stats sum, before, after, d;
        memset(&sum, 0, sizeof sum);
        if (tally) {
            memset(tally, 0, sizeof *tally);
            tally->gflops = peak_T;
            tally->gbs = bw_T;
        }
        for (int r = 0; r < n && rc == 0; r++) {
            mcl_progress_update(r);
            double t0 = mcl_now_s();
            mcl_ctx_stats(ctx, &before);
            mcl_ctx_bound_begin(ctx, tally); /* NULL: no tally */
            int bad = wl->iter(ctx, st) != 0;
            mcl_ctx_bound_end(ctx);
            mcl_ctx_stats(ctx, &after); /* the iteration's own calls, not the finish below */
            if (bad || mcl_ctx_finish(ctx) != MCL_OK) {
                fprintf(stderr, "metacl bench %s: %s failed: %s\n", bench, wl->name, mcl_ctx_error(ctx));
                rc = 1;
            }
            t[r] = (mcl_now_s() - t0) * 1e3;
            mcl_backend_stats_sub(&d, &after, &before);
            mcl_backend_stats_add(&sum, &d);
        }
        mcl_progress_finish();
        if (rc == 0) {
            mcl_bench_sort(t, n);
            double med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
            mcl_bench_note note;
            memset(&note, 0, sizeof note);
            note.ms_best = t[0];
            note.ms_median = med;
            if (wl->note) wl->note(st, &note);
            if (note.n > MCL_BENCH_MAX_EXTRAS) note.n = MCL_BENCH_MAX_EXTRAS;
            if (json) {
                printf("%s{\"name\":\"%s\",\"desc\":\"%s\",\"reps\":%d,\"ms_best\":%.3f,\"ms_median\":%.3f",
                       first ? "" : ",", wl->name, wl->desc, n, t[0], med);
                if (note.text[0]) {
                    printf(",\"note\":");
                    json_string(note.text);
                }
                print_stats_json(&sum, n);
                if (tally) print_bound_json(tally, n, med);
                for (int e = 0; e < note.n; e++) {
                    printf(",");
                    json_string(note.key[e]);
                    if (isfinite(note.value[e])) printf(":%.17g", note.value[e]);
                    else printf(":null");
                }
                printf("}");
            } else {
                printf("%-*s %10.2f %10.2f %5d  %s\n", namew, wl->name, t[0], med, n, wl->desc);
                char per[160];
                snprintf(per, sizeof per, "%.0f op calls, %.0f enqueues, %.0f blocking calls per rep",
                         (double)sum.op_calls / n, (double)sum.enqueues / n, (double)sum.blocking / n);
                if (note.text[0]) snprintf(notes[w], sizeof notes[w], "%s: %s; %s", wl->name, note.text, per);
                else snprintf(notes[w], sizeof notes[w], "%s: %s", wl->name, per);
                if (tally) {
                    char top[200];
                    top_ops(tally, 4, top, sizeof top);
                    const double bms = 1e3 * tally->bound_s / n;
                    snprintf(bounds[w], sizeof bounds[w], "%-*s %9.3f %9.2f %10.3f %7.0f%% %10.2f %8.1f%%  %s", namew,
                             wl->name, tally->flops / n * 1e-9, tally->bytes / n * 1e-6, bms,
                             tally->bound_s > 0 ? 100 * tally->compute_s / tally->bound_s : 0.0, med,
                             med > 0 ? 100 * bms / med : 0.0, top);
                }
            }
            fflush(stdout);
            first = 0;
        }
        free(t);
        if (st) wl->teardown(st);
    }
    if (json && rc == 0) printf("]}\n");
    for (int w = 0; w < n_workloads && !json && rc == 0; w++)
        if (notes[w][0]) printf("%s\n", notes[w]);
    if (bounds && !json && rc == 0) {
        printf("\nbound per iteration: the sum over its op calls of max(flops / FMA peak, bytes / STREAM triad), "
               "FMA peak %.1f GFLOP/s, triad %.1f GB/s (%d thread%s, measured now); fraction = bound / median; "
               "largest shares of the bound (C compute, M memory roof)\n",
               peak_T, bw_T, nthreads, nthreads == 1 ? "" : "s");
        printf("%-*s %9s %9s %10s %8s %10s %9s  %s\n", namew, "workload", "GFLOP", "MB", "bound ms", "compute",
               "median ms", "fraction", "largest shares");
        for (int w = 0; w < n_workloads; w++)
            if (bounds[w][0]) printf("%s\n", bounds[w]);
    }
    free(bounds);
    free(tally);
    free(notes);
    mcl_ctx_free(ctx);
    return rc;
}
