/* dist.c — the processes of one job (see dist.h): MPI when built with it and started by a
 * launcher, one process otherwise. */
#define _POSIX_C_SOURCE 200809L
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#ifdef MCL_HAVE_MPI
#include <mpi.h>
#endif

#define fail mcl_errbuf

static struct {
    int on;         /* MPI initialized by us */
    int rank, size, local_rank;
    double comm_s;  /* seconds in collectives since the last take */
    int shared;     /* a failure every rank knows of */
    char where[96];
} D = {0, 0, 1, 0, 0.0, 0, ""};

void mcl_dist_note_shared_failure(void) { D.shared = 1; }
int mcl_dist_failure_is_shared(void) { return D.shared; }

uint64_t mcl_fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= UINT64_C(1099511628211);
    }
    return h;
}

/* Started by an MPI launcher? Open MPI, MPICH/Hydra (PMI), PMIx and Slurm set these. */
static int launched_by_mpi(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                                       "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

int mcl_dist_built_with_mpi(void)
{
#ifdef MCL_HAVE_MPI
    return 1;
#else
    return 0;
#endif
}

static void set_where(void)
{
    char host[64] = "";
    if (gethostname(host, sizeof host) != 0) strcpy(host, "?");
    host[sizeof host - 1] = 0;
    snprintf(D.where, sizeof D.where, "%s:rank %d of %d", host, D.rank, D.size);
}

int mcl_dist_rank(void) { return D.rank; }
int mcl_dist_size(void) { return D.size; }
int mcl_dist_local_rank(void) { return D.local_rank; }
const char *mcl_dist_where(void)
{
    if (!D.where[0]) set_where();
    return D.where;
}

double mcl_dist_take_comm_seconds(void)
{
    double s = D.comm_s;
    D.comm_s = 0.0;
    return s;
}

#ifdef MCL_HAVE_MPI

static mcl_status mpi_fail(int rc, const char *what, char *err, size_t len)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int n = 0;
    MPI_Error_string(rc, msg, &n);
    return fail(err, len, MCL_ERR_IO, "%s (%s): %s", what, D.where, msg);
}
#define MPI_CHECK(call, what)                                              \
    do {                                                                   \
        int rc_ = (call);                                                  \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, (what), err, len);    \
    } while (0)

mcl_status mcl_dist_init(int *argc, char ***argv, char *err, size_t len)
{
    if (D.on || !launched_by_mpi()) {
        set_where();
        return MCL_OK;
    }
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) return fail(err, len, MCL_ERR_IO, "MPI_Init failed (error %d)", rc);
    D.on = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &D.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &D.size);
    MPI_Comm node;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, D.rank, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &D.local_rank);
        MPI_Comm_free(&node);
    }
    set_where();
    return MCL_OK;
}

void mcl_dist_finalize(void)
{
    if (!D.on) return;
    MPI_Finalize();
    D.on = 0;
}

void mcl_dist_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
    if (D.on) MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

/* Chunk q of n elements split over `size` ranks: [lo, hi). */
static void chunk(int64_t n, int q, int size, int64_t *lo, int64_t *hi)
{
    *lo = n * q / size;
    *hi = n * (q + 1) / size;
}

mcl_status mcl_dist_sum_f32(float *x, int64_t n, char *err, size_t len)
{
    if (D.size == 1 || n == 0) return MCL_OK;
    if (!x || n < 0 || n > INT32_MAX) /* MPI counts and displacements are int */
        return fail(err, len, MCL_ERR_INVALID, "distributed sum: %lld floats (at most %d)",
                    (long long)n, INT32_MAX);
    const int N = D.size;
    int64_t lo, hi;
    chunk(n, D.rank, N, &lo, &hi);
    const int mine = (int)(hi - lo);
    int *scount = malloc((size_t)N * 4 * sizeof *scount);
    float *recv = malloc(((size_t)mine * (size_t)N + 1) * sizeof *recv);
    if (!scount || !recv) {
        free(scount);
        free(recv);
        return fail(err, len, MCL_ERR_OOM, "distributed sum: out of memory");
    }
    int *sdisp = scount + N, *rcount = scount + 2 * N, *rdisp = scount + 3 * N;
    for (int q = 0; q < N; q++) {
        int64_t a, b;
        chunk(n, q, N, &a, &b);
        scount[q] = (int)(b - a); /* my chunk q goes to rank q */
        sdisp[q] = (int)a;
        rcount[q] = mine;         /* rank q's copy of my chunk  */
        rdisp[q] = q * mine;
    }
    const double t0 = mcl_now_s();
    mcl_status st = MCL_OK;
    int rc = MPI_Alltoallv(x, scount, sdisp, MPI_FLOAT, recv, rcount, rdisp, MPI_FLOAT,
                           MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) st = mpi_fail(rc, "gradient exchange (alltoall)", err, len);
    if (st == MCL_OK) {
        /* ((x_0 + x_1) + x_2) + ...: rank order, the same on every run */
        for (int64_t i = 0; i < mine; i++) {
            float s = recv[i];
            for (int q = 1; q < N; q++) s += recv[(int64_t)q * mine + i];
            x[lo + i] = s;
        }
        for (int q = 0; q < N; q++) {
            rcount[q] = scount[q];
            rdisp[q] = sdisp[q];
        }
        rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, rcount, rdisp, MPI_FLOAT,
                            MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) st = mpi_fail(rc, "gradient exchange (allgather)", err, len);
    }
    D.comm_s += mcl_now_s() - t0;
    free(scount);
    free(recv);
    return st;
}

mcl_status mcl_dist_sum_f64(double *x, int n, char *err, size_t len)
{
    if (D.size == 1 || n == 0) return MCL_OK;
    if (!x || n < 0 || n > 64) return fail(err, len, MCL_ERR_INVALID, "distributed sum: %d values", n);
    double *all = malloc((size_t)D.size * (size_t)n * sizeof *all);
    if (!all) return fail(err, len, MCL_ERR_OOM, "distributed sum: out of memory");
    const double t0 = mcl_now_s();
    int rc = MPI_Allgather(x, n, MPI_DOUBLE, all, n, MPI_DOUBLE, MPI_COMM_WORLD);
    D.comm_s += mcl_now_s() - t0;
    if (rc != MPI_SUCCESS) {
        free(all);
        return mpi_fail(rc, "exchange of losses and metrics", err, len);
    }
    for (int i = 0; i < n; i++) {
        double s = all[i];
        for (int q = 1; q < D.size; q++) s += all[(int64_t)q * n + i];
        x[i] = s;
    }
    free(all);
    return MCL_OK;
}

mcl_status mcl_dist_bcast(void *buf, size_t n, int root, char *err, size_t len)
{
    if (D.size == 1 || n == 0) return MCL_OK;
    const double t0 = mcl_now_s();
    for (size_t at = 0; at < n;) { /* counts are int: large buffers go in pieces */
        size_t piece = n - at < (size_t)1 << 30 ? n - at : (size_t)1 << 30;
        MPI_CHECK(MPI_Bcast((char *)buf + at, (int)piece, MPI_BYTE, root, MPI_COMM_WORLD), "broadcast");
        at += piece;
    }
    D.comm_s += mcl_now_s() - t0;
    return MCL_OK;
}

mcl_status mcl_dist_compare_u64(uint64_t v, int *first_diff, char *err, size_t len)
{
    *first_diff = -1;
    if (D.size == 1) return MCL_OK;
    uint64_t ref = v;
    mcl_status st = mcl_dist_bcast(&ref, sizeof ref, 0, err, len);
    if (st != MCL_OK) return st;
    int me = ref == v ? D.size : D.rank, low = D.size;
    MPI_CHECK(MPI_Allreduce(&me, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "comparison");
    *first_diff = low < D.size ? low : -1;
    return MCL_OK;
}

mcl_status mcl_dist_gather_items(double *x, int64_t n_items, int64_t per_item, char *err,
                                 size_t len)
{
    if (D.size == 1 || n_items == 0 || per_item == 0) return MCL_OK;
    const int64_t total = n_items * per_item;
    double *tmp = malloc((size_t)total * sizeof *tmp);
    if (!tmp) return fail(err, len, MCL_ERR_OOM, "gathering results: out of memory");
    mcl_status st = MCL_OK;
    for (int q = 0; q < D.size && st == MCL_OK; q++) { /* rank q's items to everyone */
        if (q == D.rank) memcpy(tmp, x, (size_t)total * sizeof *tmp);
        st = mcl_dist_bcast(tmp, (size_t)total * sizeof *tmp, q, err, len);
        for (int64_t i = q; st == MCL_OK && i < n_items; i += D.size)
            memcpy(x + i * per_item, tmp + i * per_item, (size_t)per_item * sizeof *tmp);
    }
    free(tmp);
    return st;
}

mcl_status mcl_dist_agree(mcl_status st, int *n_failed, char *err, size_t len)
{
    int mine = st != MCL_OK, all = mine;
    if (D.size > 1) {
        const double t0 = mcl_now_s();
        int rc = MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        D.comm_s += mcl_now_s() - t0;
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "agreement", err, len);
    }
    if (n_failed) *n_failed = all;
    if (!all || mine) return st;
    D.shared = 1;
    return fail(err, len, MCL_ERR_STATE, "another rank failed (its message names it)");
}

#else /* one process */

mcl_status mcl_dist_agree(mcl_status st, int *n_failed, char *err, size_t len)
{
    (void)err, (void)len;
    if (n_failed) *n_failed = st != MCL_OK;
    return st;
}

mcl_status mcl_dist_init(int *argc, char ***argv, char *err, size_t len)
{
    (void)argc;
    (void)argv;
    set_where();
    if (launched_by_mpi())
        return fail(err, len, MCL_ERR_UNSUPPORTED,
                    "started by mpirun, but this metacl was built without MPI: install Open MPI "
                    "(libopenmpi-dev openmpi-bin) and rebuild with ./configure --with-mpi=yes");
    return MCL_OK;
}

void mcl_dist_finalize(void) {}

void mcl_dist_abort(int code)
{
    fflush(stdout);
    fflush(stderr);
    exit(code);
}

mcl_status mcl_dist_sum_f32(float *x, int64_t n, char *err, size_t len)
{
    (void)x, (void)n, (void)err, (void)len;
    return MCL_OK;
}

mcl_status mcl_dist_sum_f64(double *x, int n, char *err, size_t len)
{
    (void)x, (void)n, (void)err, (void)len;
    return MCL_OK;
}

mcl_status mcl_dist_bcast(void *buf, size_t n, int root, char *err, size_t len)
{
    (void)buf, (void)n, (void)root, (void)err, (void)len;
    return MCL_OK;
}

mcl_status mcl_dist_compare_u64(uint64_t v, int *first_diff, char *err, size_t len)
{
    (void)v, (void)err, (void)len;
    *first_diff = -1;
    return MCL_OK;
}

mcl_status mcl_dist_gather_items(double *x, int64_t n_items, int64_t per_item, char *err,
                                 size_t len)
{
    (void)x, (void)n_items, (void)per_item, (void)err, (void)len;
    return MCL_OK;
}

#endif
