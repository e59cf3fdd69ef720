/* matmul.c — OpenCL matrix product through CLBlast: out = op(a) · op(b), batched over the
 * leading dims. Equations and semantics: src/ref/matmul.c (this file mirrors it call for
 * call, with CLBlast's row-major SGEMM in place of mcl_ref_sgemm).
 *
 * Every tensor is contiguous, so the matrices of a batch are evenly spaced: one call of
 * CLBlastSgemmStridedBatched (or CLBlastSgemmWithTempBuffer for a single matrix) per product,
 * with the tensors' element offsets as CLBlast offsets and the in-order queue of the backend.
 * Backward products run with beta = 1, so they ACCUMULATE into gin[k].
 *
 * On a CPU device (PoCL) the backend replaces CLBlast's generic kernel parameters with ones
 * measured there (mcl_ocl_clblast_setup and cpu_params below, with the numbers): 4x faster
 * GEMMs.
 *
 * CLBlast compiles its own kernels the first time a routine/shape class is used on a device
 * (slow on PoCL, seconds to minutes, once per process); later calls reuse them. CLBlast
 * status codes are turned into readable messages naming the op, M, N, K and the batch; codes
 * that are OpenCL errors go through mcl_ocl_fail like every other OpenCL failure.
 */
#include "ocl.h" /* first: fixes CL_TARGET_OPENCL_VERSION before clblast_c.h includes CL/ */

#include <clblast_c.h>
#include <stdio.h>
#include <string.h>

/* Readable text of a CLBlast status code (all codes of clblast_c.h). */
static const char *clblast_status_str(CLBlastStatusCode s)
{
    switch (s) {
    case CLBlastSuccess: return "success";
    /* codes shared with OpenCL */
    case CLBlastOpenCLCompilerNotAvailable: return "OpenCL compiler not available";
    case CLBlastTempBufferAllocFailure: return "temporary buffer allocation failure";
    case CLBlastOpenCLOutOfResources: return "OpenCL out of resources";
    case CLBlastOpenCLOutOfHostMemory: return "OpenCL out of host memory";
    case CLBlastOpenCLBuildProgramFailure: return "OpenCL program build failure (CLBlast kernel)";
    case CLBlastInvalidValue: return "invalid value";
    case CLBlastInvalidCommandQueue: return "invalid command queue";
    case CLBlastInvalidMemObject: return "invalid memory object";
    case CLBlastInvalidBinary: return "invalid binary";
    case CLBlastInvalidBuildOptions: return "invalid build options";
    case CLBlastInvalidProgram: return "invalid program";
    case CLBlastInvalidProgramExecutable: return "invalid program executable";
    case CLBlastInvalidKernelName: return "invalid kernel name";
    case CLBlastInvalidKernelDefinition: return "invalid kernel definition";
    case CLBlastInvalidKernel: return "invalid kernel";
    case CLBlastInvalidArgIndex: return "invalid kernel argument index";
    case CLBlastInvalidArgValue: return "invalid kernel argument value";
    case CLBlastInvalidArgSize: return "invalid kernel argument size";
    case CLBlastInvalidKernelArgs: return "invalid kernel arguments";
    case CLBlastInvalidLocalNumDimensions: return "too many work dimensions";
    case CLBlastInvalidLocalThreadsTotal: return "too many work-items in a work-group";
    case CLBlastInvalidLocalThreadsDim: return "too many work-items in one dimension";
    case CLBlastInvalidGlobalOffset: return "invalid global offset";
    case CLBlastInvalidEventWaitList: return "invalid event wait list";
    case CLBlastInvalidEvent: return "invalid event";
    case CLBlastInvalidOperation: return "invalid operation";
    case CLBlastInvalidBufferSize: return "invalid buffer size";
    case CLBlastInvalidGlobalWorkSize: return "invalid global work size";
    /* codes shared with clBLAS */
    case CLBlastNotImplemented: return "routine or feature missing from this CLBlast build";
    case CLBlastInvalidMatrixA: return "matrix A is not a valid OpenCL buffer";
    case CLBlastInvalidMatrixB: return "matrix B is not a valid OpenCL buffer";
    case CLBlastInvalidMatrixC: return "matrix C is not a valid OpenCL buffer";
    case CLBlastInvalidVectorX: return "vector X is not a valid OpenCL buffer";
    case CLBlastInvalidVectorY: return "vector Y is not a valid OpenCL buffer";
    case CLBlastInvalidDimension: return "dimensions M, N and K must be larger than zero";
    case CLBlastInvalidLeadDimA: return "leading dimension of A is too small";
    case CLBlastInvalidLeadDimB: return "leading dimension of B is too small";
    case CLBlastInvalidLeadDimC: return "leading dimension of C is too small";
    case CLBlastInvalidIncrementX: return "increment of vector X is zero";
    case CLBlastInvalidIncrementY: return "increment of vector Y is zero";
    case CLBlastInsufficientMemoryA: return "matrix A's buffer is too small";
    case CLBlastInsufficientMemoryB: return "matrix B's buffer is too small";
    case CLBlastInsufficientMemoryC: return "matrix C's buffer is too small";
    case CLBlastInsufficientMemoryX: return "vector X's buffer is too small";
    case CLBlastInsufficientMemoryY: return "vector Y's buffer is too small";
    /* CLBlast's own codes */
    case CLBlastInsufficientMemoryTemp: return "temporary GEMM buffer is too small";
    case CLBlastInvalidBatchCount: return "the batch count must be positive";
    case CLBlastInvalidOverrideKernel: return "override of an invalid kernel";
    case CLBlastMissingOverrideParameter: return "missing override parameter(s)";
    case CLBlastInvalidLocalMemUsage: return "not enough local memory on this device";
    case CLBlastNoHalfPrecision: return "half precision not supported by the device";
    case CLBlastNoDoublePrecision: return "double precision not supported by the device";
    case CLBlastInvalidVectorScalar: return "the unit-sized vector is not a valid OpenCL buffer";
    case CLBlastInsufficientMemoryScalar: return "the unit-sized vector's buffer is too small";
    case CLBlastDatabaseError: return "no entry for the device in CLBlast's database";
    case CLBlastUnknownError: return "unknown error";
    case CLBlastUnexpectedError: return "unexpected error";
    }
    return "unrecognized CLBlast status";
}


/* ---- CLBlast's parameters, fitted to the device --------------------------------------------
 * CLBlast's tuning database has no entry for a CPU like PoCL's, and its generic defaults are
 * poor there: every product of the MLP step of `metacl bench ops` (all have M*N*K < 704^3)
 * ran the "direct" kernel with 16x16 tiles at 5-12 GFLOP/s, about 80% of the step. So on a
 * context whose device is a CPU (CL_DEVICE_TYPE_CPU), mcl_ocl_clblast_setup (called when the
 * backend is created) sets, through CLBlastOverrideParameters (for the device, in the whole
 * process: conv2d's GEMMs get them too), parameters measured with PoCL 3.1 on a 2-core
 * AVX-512 EPYC:
 *   Xgemm         the main kernel: 64x128 tiles, 8x8 work-items, float8 x float4, no local
 *                 memory; from clblast_tuner_xgemm (1024x256x256) and a few neighbours. A
 *                 whole CLBlastSgemm of 1024x256x256 takes 1.0 ms (135 GFLOP/s, pad and
 *                 transpose kernels included). (GEMMK = 1, CLBlast's other main kernel,
 *                 computes wrong results on PoCL 3.1: its tuner rejects all configurations.)
 *   GemmRoutine   XGEMM_MIN_INDIRECT_SIZE 160: products with M*N*K >= 160^3 use Xgemm,
 *                 smaller ones the direct kernel. The step's three products with a dimension
 *                 of 10 (M*N*K = 2.6e6) take 0.23-0.41 ms direct against 0.42-0.53 ms
 *                 through Xgemm, which pads 10 to 128.
 *   XgemmDirect   16x16 tiles, 4x4 work-items, float4.
 *   Copy, Pad, Transpose, Padtranspose   the pre/post-processing kernels around Xgemm, from
 *                 clblast_tuner_copy_fast, _copy_pad, _transpose_fast, _transpose_pad
 *                 (1024x256): 2-4 times faster than the defaults.
 * The eight products of the step (1024x256x256 and smaller): 4.4 ms on an idle machine;
 * measured side by side on a loaded one, 8.5 ms against 30-34 ms with CLBlast's defaults.
 *
 * Limits. Every set of values is checked against the device before it is installed
 * (fits(), clblast_need()): the work-group of a kernel is the product of its two local sizes
 * (Xgemm MDIMC x NDIMC, XgemmDirect MDIMCD x NDIMCD, Copy COPY_DIMX x COPY_DIMY, Pad
 * PAD_DIMX x PAD_DIMY, Transpose TRA_DIM^2, Padtranspose PADTRA_TILE^2) and must not exceed
 * CL_DEVICE_MAX_WORK_GROUP_SIZE nor, per dimension, CL_DEVICE_MAX_WORK_ITEM_SIZES; its
 * __local memory (the formulas of CLBlast's tuners, in clblast_need) must fit
 * CL_DEVICE_LOCAL_MEM_SIZE. A tuned kernel that does not fit is not installed: it keeps
 * CLBlast's own values -- unless the device allows fewer work-items than CLBlast's generic
 * defaults use for that kernel (clblast_default_wg: CLBlast 1.5's database defaults, e.g. a
 * 16x16 Copy), as PoCL does with POCL_MAX_WORK_GROUP_SIZE=32; then the kernel gets small
 * values fitted to the limit (fitted_params: d x d work-items, d the largest power of two
 * <= 8 with d^2 <= the limit; constraints of CLBlast's tuners hold for every d). One notice
 * (mcl_notice, once per process) says what was not installed and why. GemmRoutine's
 * threshold is installed only when both GEMM kernels got our values. Other devices (GPUs)
 * keep CLBlast's database unless their limits are below its generic defaults. If CLBlast
 * refuses an override (another CLBlast version), the remaining ones are skipped, so the
 * routine choice (GemmRoutine, last) never points at a kernel left untuned. Slower then,
 * never wrong. */
typedef struct clblast_params {
    const char *kernel;
    size_t n;
    const char *names[16];
    size_t values[16];
} clblast_params;

static const clblast_params cpu_params[] = {
    {"Xgemm", 16,
     {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG", "SA", "SB",
      "STRM", "STRN", "VWM", "VWN"},
     {0, 1, 32, 2, 8, 8, 64, 32, 8, 128, 0, 0, 0, 0, 8, 4}},
    {"XgemmDirect", 10,
     {"WGD", "MDIMCD", "NDIMCD", "MDIMAD", "NDIMBD", "KWID", "VWMD", "VWND", "PADA", "PADB"},
     {16, 4, 4, 4, 4, 4, 4, 4, 1, 1}},
    {"Copy", 4, {"COPY_DIMX", "COPY_DIMY", "COPY_VW", "COPY_WPT"}, {32, 8, 8, 2}},
    {"Pad", 4, {"PAD_DIMX", "PAD_DIMY", "PAD_WPTX", "PAD_WPTY"}, {32, 16, 1, 1}},
    {"Transpose", 4, {"TRA_DIM", "TRA_PAD", "TRA_SHUFFLE", "TRA_WPT"}, {8, 1, 0, 8}},
    {"Padtranspose", 3, {"PADTRA_PAD", "PADTRA_TILE", "PADTRA_WPT"}, {1, 32, 1}},
    {"GemmRoutine", 1, {"XGEMM_MIN_INDIRECT_SIZE"}, {160}}, /* last, see above */
};
#define N_CLBLAST_KERNELS (sizeof cpu_params / sizeof cpu_params[0])

/* Work-items of CLBlast 1.5's generic defaults (database, kDeviceTypeAll) per kernel of
 * cpu_params: Xgemm 8x16, XgemmDirect 8x8, Copy 16x16, Pad 32x8, Transpose 8x8, Padtranspose
 * 8x8. A device allowing fewer cannot run that default. */
static size_t clblast_default_wg(const char *kernel)
{
    static const struct { const char *k; size_t wg; } t[] = {
        {"Xgemm", 128}, {"XgemmDirect", 64}, {"Copy", 256}, {"Pad", 256}, {"Transpose", 64},
        {"Padtranspose", 64}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(t[i].k, kernel) == 0) return t[i].wg;
    return 0;
}

static size_t pv(const clblast_params *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->names[i], name) == 0) return p->values[i];
    return 0;
}

/* The local sizes (dim[0] x dim[1] work-items) and the __local bytes of one kernel's values
 * (the formulas of CLBlast's tuners, src/tuning/kernels/<kernel>.hpp; floats). */
static void clblast_need(const clblast_params *p, size_t dim[2], size_t *local_bytes)
{
    const char *k = p->kernel;
    size_t f = 0;
    dim[0] = dim[1] = 1;
    if (strcmp(k, "Xgemm") == 0) {
        dim[0] = pv(p, "MDIMC"), dim[1] = pv(p, "NDIMC");
        f = pv(p, "SA") * pv(p, "KWG") * pv(p, "MWG") + pv(p, "SB") * pv(p, "KWG") * pv(p, "NWG");
    } else if (strcmp(k, "XgemmDirect") == 0) {
        const size_t w = pv(p, "WGD");
        dim[0] = pv(p, "MDIMCD"), dim[1] = pv(p, "NDIMCD");
        f = w * (w + pv(p, "PADA")) + w * (w + pv(p, "PADB"));
    } else if (strcmp(k, "Copy") == 0) {
        dim[0] = pv(p, "COPY_DIMX"), dim[1] = pv(p, "COPY_DIMY");
    } else if (strcmp(k, "Pad") == 0) {
        dim[0] = pv(p, "PAD_DIMX"), dim[1] = pv(p, "PAD_DIMY");
    } else if (strcmp(k, "Transpose") == 0) {
        const size_t d = pv(p, "TRA_DIM"), w = pv(p, "TRA_WPT");
        dim[0] = dim[1] = d;
        f = w * (w * d) * (d + pv(p, "TRA_PAD"));
    } else if (strcmp(k, "Padtranspose") == 0) {
        const size_t t = pv(p, "PADTRA_TILE"), w = pv(p, "PADTRA_WPT");
        dim[0] = dim[1] = t;
        f = (w * t) * (w * t + pv(p, "PADTRA_PAD"));
    }
    *local_bytes = f * sizeof(float);
}

/* Small values of `kernel` with d x d work-items (d a power of two, 1..8), valid for CLBlast's
 * constraints (src/tuning/kernels/xgemm.hpp etc.: MWG a multiple of MDIMC*VWM and MDIMA*VWM,
 * KWG of KWI and of MDIMC*NDIMC/MDIMA, WGD of MDIMCD*VWMD, ...). */
static int fitted_params(const char *kernel, size_t d, clblast_params *p)
{
    memset(p, 0, sizeof *p);
    p->kernel = kernel;
    const size_t wgd = 2 * d < 8 ? 8 : 2 * d;
    if (strcmp(kernel, "Xgemm") == 0) {
        const clblast_params x = {"Xgemm", 16,
            {"GEMMK", "KREG", "KWG", "KWI", "MDIMA", "MDIMC", "MWG", "NDIMB", "NDIMC", "NWG", "SA",
             "SB", "STRM", "STRN", "VWM", "VWN"},
            {0, 1, 16, 2, d, d, 4 * d, d, d, 4 * d, 0, 0, 0, 0, 2, 2}};
        *p = x;
    } else if (strcmp(kernel, "XgemmDirect") == 0) {
        const clblast_params x = {"XgemmDirect", 10,
            {"WGD", "MDIMCD", "NDIMCD", "MDIMAD", "NDIMBD", "KWID", "VWMD", "VWND", "PADA", "PADB"},
            {wgd, d, d, d, d, 2, 1, 1, 1, 1}};
        *p = x;
    } else if (strcmp(kernel, "Copy") == 0) {
        const clblast_params x = {"Copy", 4, {"COPY_DIMX", "COPY_DIMY", "COPY_VW", "COPY_WPT"},
                                  {d, d, 1, 1}};
        *p = x;
    } else if (strcmp(kernel, "Pad") == 0) {
        const clblast_params x = {"Pad", 4, {"PAD_DIMX", "PAD_DIMY", "PAD_WPTX", "PAD_WPTY"},
                                  {d, d, 1, 1}};
        *p = x;
    } else if (strcmp(kernel, "Transpose") == 0) {
        const clblast_params x = {"Transpose", 4, {"TRA_DIM", "TRA_PAD", "TRA_SHUFFLE", "TRA_WPT"},
                                  {d, 1, 0, 1}};
        *p = x;
    } else if (strcmp(kernel, "Padtranspose") == 0) {
        const clblast_params x = {"Padtranspose", 3, {"PADTRA_PAD", "PADTRA_TILE", "PADTRA_WPT"},
                                  {1, d, 1}};
        *p = x;
    } else {
        return 0;
    }
    return 1;
}

static int fits(const clblast_params *p, const mcl_ocl_limits *lim, size_t *wg, size_t *bytes)
{
    size_t dim[2];
    clblast_need(p, dim, bytes);
    *wg = dim[0] * dim[1];
    return *wg <= lim->max_wg && dim[0] <= lim->max_item[0] && dim[1] <= lim->max_item[1] &&
           *bytes <= lim->local_mem;
}

/* d of fitted_params for a device: the largest power of two <= 8 with d x d work-items allowed */
static size_t fitted_dim(const mcl_ocl_limits *lim)
{
    size_t d = 8;
    while (d > 1 && (d * d > lim->max_wg || d > lim->max_item[0] || d > lim->max_item[1])) d /= 2;
    return d;
}

int mcl_ocl_clblast_plan(const mcl_ocl_limits *lim, mcl_ocl_clblast_choice *out, char *why,
                         size_t why_len)
{
    const size_t d = fitted_dim(lim);
    int n = 0;
    size_t w = 0;
    if (why && why_len) why[0] = '\0';
    for (size_t i = 0; i + 1 < N_CLBLAST_KERNELS; i++) {
        const clblast_params *t = &cpu_params[i];
        mcl_ocl_clblast_choice *c = &out[n++];
        memset(c, 0, sizeof *c);
        c->kernel = t->kernel;
        size_t wg = 0, bytes = 0;
        if (lim->is_cpu && fits(t, lim, &wg, &bytes)) {
            c->source = MCL_CLBLAST_TUNED;
            c->wg = wg, c->local_bytes = bytes;
            continue;
        }
        if (lim->is_cpu && why && w < why_len) /* what did not fit */
            w += (size_t)snprintf(why + w, why_len - w, "%s%s (%zu work-items, %zu B __local)",
                                  w ? ", " : "", t->kernel, wg, bytes);
        clblast_params f;
        if (lim->max_wg < clblast_default_wg(t->kernel) && fitted_params(t->kernel, d, &f) &&
            fits(&f, lim, &wg, &bytes)) {
            c->source = MCL_CLBLAST_FITTED;
            c->wg = wg, c->local_bytes = bytes;
            continue;
        }
        c->source = MCL_CLBLAST_DEFAULT;
    }
    /* GemmRoutine: only when Xgemm and XgemmDirect (the first two) both got our values */
    mcl_ocl_clblast_choice *g = &out[n++];
    memset(g, 0, sizeof *g);
    g->kernel = cpu_params[N_CLBLAST_KERNELS - 1].kernel;
    g->source = out[0].source != MCL_CLBLAST_DEFAULT && out[1].source != MCL_CLBLAST_DEFAULT
                    ? MCL_CLBLAST_TUNED
                    : MCL_CLBLAST_DEFAULT;
    return n;
}

void mcl_ocl_clblast_setup(mcl_ocl *o)
{
    cl_device_type type = 0;
    clGetDeviceInfo(o->device, CL_DEVICE_TYPE, sizeof type, &type, NULL);
    mcl_ocl_limits lim = {o->max_wg, {o->max_item[0], o->max_item[1]}, o->local_mem,
                          (type & CL_DEVICE_TYPE_CPU) != 0};
    mcl_ocl_clblast_choice plan[MCL_CLBLAST_KERNELS];
    char why[512];
    const int n = mcl_ocl_clblast_plan(&lim, plan, why, sizeof why);
    const size_t d = fitted_dim(&lim);
    char fitted[256] = "", kept[256] = "";
    size_t fw = 0, kw = 0;
    int refused = 0;
    for (int i = 0; i < n && !refused; i++) {
        clblast_params f;
        const clblast_params *p = NULL;
        if (plan[i].source == MCL_CLBLAST_TUNED)
            p = &cpu_params[i];
        else if (plan[i].source == MCL_CLBLAST_FITTED && fitted_params(plan[i].kernel, d, &f))
            p = &f;
        if (plan[i].source == MCL_CLBLAST_FITTED && fw < sizeof fitted)
            fw += (size_t)snprintf(fitted + fw, sizeof fitted - fw, "%s%s", fw ? ", " : "",
                                   plan[i].kernel);
        if (plan[i].source == MCL_CLBLAST_DEFAULT && lim.is_cpu && kw < sizeof kept)
            kw += (size_t)snprintf(kept + kw, sizeof kept - kw, "%s%s", kw ? ", " : "",
                                   plan[i].kernel);
        if (p && CLBlastOverrideParameters(o->device, p->kernel, CLBlastPrecisionSingle, p->n,
                                           (const char **)p->names, p->values) != CLBlastSuccess)
            refused = 1;
    }
#ifdef MCL_TEST_HOOKS
    /* METACL_TEST_GEMM_INDIRECT=1 (test-hook builds): every product through CLBlast's
     * indirect path (Xgemm and its copy/pad/transpose kernels), which only products of
     * 160^3 and more reach otherwise: tests/test-oclgrind.sh checks those kernels under the
     * simulator on small shapes this way. */
    const char *ind = getenv("METACL_TEST_GEMM_INDIRECT");
    if (!refused && ind && strcmp(ind, "1") == 0) {
        const char *name = "XGEMM_MIN_INDIRECT_SIZE";
        size_t zero = 0;
        if (CLBlastOverrideParameters(o->device, "GemmRoutine", CLBlastPrecisionSingle, 1, &name,
                                      &zero) != CLBlastSuccess)
            mcl_notice("METACL_TEST_GEMM_INDIRECT: CLBlast refused the routine threshold");
    }
#endif
    /* say once per process what was not installed and why (the device's limits) */
    static int said;
    if (said || (!why[0] && !fitted[0])) return;
    said = 1;
    mcl_notice("CLBlast on %s (work-groups of at most %zu items, %zu KiB __local): %s%s%s"
               "%s%s%s%s%s%sGEMMs may be slower",
               o->device_name, lim.max_wg, lim.local_mem / 1024,
               why[0] ? "the GEMM parameters tuned for CPU devices do not fit for " : "", why,
               why[0] ? "; " : "", kept[0] ? "CLBlast's defaults kept for " : "", kept,
               kept[0] ? "; " : "", fitted[0] ? "values fitted to the limit for " : "", fitted,
               fitted[0] ? " (CLBlast's generic defaults need larger work-groups); " : "");
}

void mcl_ocl_clblast_teardown(mcl_ocl *o)
{
    CLBlastClearCache();
    if (o->gemm_temp) clReleaseMemObject(o->gemm_temp);
    o->gemm_temp = NULL;
    o->gemm_temp_bytes = 0;
}

cl_mem mcl_ocl_gemm_temp(mcl_backend *be, size_t bytes)
{
    mcl_ocl *o = mcl_ocl_of(be);
    if (bytes == 0) bytes = sizeof(float);
    if (o->gemm_temp && o->gemm_temp_bytes >= bytes) return o->gemm_temp;
    if (bytes > o->max_alloc) {
        mcl_ctx_set_error(be->ctx, MCL_ERR_OOM,
                          "OpenCL: CLBlast's temporary GEMM buffer of %zu bytes exceeds the "
                          "device's largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE, %zu bytes) "
                          "on %s", bytes, o->max_alloc, o->device_name);
        return NULL;
    }
    if (o->gemm_temp) clReleaseMemObject(o->gemm_temp); /* freed once queued work is done */
    o->gemm_temp = NULL;
    o->gemm_temp_bytes = 0;
    /* grown by half again, so a run's few GEMM shapes settle after a handful of calls */
    size_t want = bytes + bytes / 2 < 65536 ? 65536 : bytes + bytes / 2;
    if (want > o->max_alloc) want = bytes;
    cl_int err;
    o->gemm_temp = clCreateBuffer(o->context, CL_MEM_READ_WRITE, want, NULL, &err);
    if (err != CL_SUCCESS) {
        o->gemm_temp = NULL;
        mcl_ocl_fail_alloc(be, err, "clCreateBuffer (CLBlast's temporary GEMM buffer)");
        return NULL;
    }
    o->gemm_temp_bytes = want;
    return o->gemm_temp;
}

/* One operand of a GEMM: a tensor (element offset = the tensor's), its row length and the
 * distance between the matrices of the batch. */
typedef struct mm_operand {
    const mcl_tensor *t;
    int64_t ld, stride;
} mm_operand;

/* C[z] = alpha * op(A[z]) · op(B[z]) + beta * C[z] for z < batch (op(A) [m,k], op(B) [k,n],
 * all row-major), on the backend's queue. `what` names the op and the call for errors.
 * A single product gets the context's GEMM temporary buffer (mcl_ocl_gemm_temp) for CLBlast's
 * padded/transposed copies, so no buffer is created per call. CLBlast 1.5's strided batched
 * GEMM takes no temporary buffer: on its indirect path (products of M·N·K >= CLBlast's
 * XGEMM_MIN_INDIRECT_SIZE) it still allocates its own per call. */
static mcl_status gemm(mcl_backend *be, const char *what, int ta, int tb, int64_t m, int64_t n,
                       int64_t k, float alpha, mm_operand A, mm_operand B, float beta,
                       mm_operand C, int64_t batch)
{
    mcl_ocl *o = mcl_ocl_of(be);
    const CLBlastTranspose tA = ta ? CLBlastTransposeYes : CLBlastTransposeNo;
    const CLBlastTranspose tB = tb ? CLBlastTransposeYes : CLBlastTransposeNo;
    CLBlastStatusCode st;
    mcl_ocl_count_clblast(be);
    if (batch == 1) {
        size_t temp = 0;
        st = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n,
                                        (size_t)k, (size_t)A.t->offset, (size_t)A.ld,
                                        (size_t)B.t->offset, (size_t)B.ld, (size_t)C.t->offset,
                                        (size_t)C.ld, &o->queue, &temp);
        cl_mem scratch = st == CLBlastSuccess ? mcl_ocl_gemm_temp(be, temp) : NULL;
        if (st == CLBlastSuccess && !scratch) return mcl_ocl_recorded(be);
        if (scratch)
            st = CLBlastSgemmWithTempBuffer(
                CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n, (size_t)k, alpha,
                mcl_ocl_mem(A.t), (size_t)A.t->offset, (size_t)A.ld, mcl_ocl_mem(B.t),
                (size_t)B.t->offset, (size_t)B.ld, beta, mcl_ocl_mem(C.t), (size_t)C.t->offset,
                (size_t)C.ld, &o->queue, NULL, scratch);
        else /* the size query failed: CLBlastSgemm reports the problem */
            st = CLBlastSgemm(CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n, (size_t)k,
                              alpha, mcl_ocl_mem(A.t), (size_t)A.t->offset, (size_t)A.ld,
                              mcl_ocl_mem(B.t), (size_t)B.t->offset, (size_t)B.ld, beta,
                              mcl_ocl_mem(C.t), (size_t)C.t->offset, (size_t)C.ld, &o->queue,
                              NULL);
    } else {
        st = CLBlastSgemmStridedBatched(
            CLBlastLayoutRowMajor, tA, tB, (size_t)m, (size_t)n, (size_t)k, alpha, mcl_ocl_mem(A.t),
            (size_t)A.t->offset, (size_t)A.ld, (size_t)A.stride, mcl_ocl_mem(B.t),
            (size_t)B.t->offset, (size_t)B.ld, (size_t)B.stride, beta, mcl_ocl_mem(C.t),
            (size_t)C.t->offset, (size_t)C.ld, (size_t)C.stride, (size_t)batch, &o->queue, NULL);
    }
    if (st == CLBlastSuccess) return MCL_OK;

    char full[320];
    snprintf(full, sizeof full, "%s: %s(%s, %s, M=%lld N=%lld K=%lld, batch %lld)", what,
             batch == 1 ? "CLBlastSgemm" : "CLBlastSgemmStridedBatched", ta ? "A^T" : "A",
             tb ? "B^T" : "B", (long long)m, (long long)n, (long long)k, (long long)batch);
    if (((int)st < 0 && (int)st >= -63) || (int)st == MCL_CL_NV_ILLEGAL_ACCESS) /* OpenCL's */
        return mcl_ocl_fail(be, (cl_int)st, full);
    return mcl_ctx_set_error(be->ctx, MCL_ERR_BACKEND, "CLBlast: %s failed: %s (%d) on %s", full,
                             clblast_status_str(st), (int)st, o->device_name);
}

/* "matmul forward (a [13,7]^T, b [13,5])" */
static const char *what_str(char *buf, size_t len, const char *dir, const mcl_op_args *a,
                            const mcl_mm_dims *d)
{
    char s1[64], s2[64];
    snprintf(buf, len, "matmul %s (a %s%s, b %s%s)", dir, mcl_shape_str(a->in[0], s1, sizeof s1),
             d->ta ? "^T" : "", mcl_shape_str(a->in[1], s2, sizeof s2), d->tb ? "^T" : "");
    return buf;
}

/* Forward:  out[z] = op(a[z]) · op(b[z])          for every batch index z
 * a   [.., M, K] or [.., K, M] (p.i[0] = 1)
 * b   [.., K, N] or [.., N, K] (p.i[1] = 1)
 * out [.., M, N] */
mcl_status mcl_ocl_matmul_fwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_mm_dims d;
    mcl_mm_dims_get(a, &d);
    const int64_t sa = d.M * d.K, sb = d.K * d.N, sc = d.M * d.N; /* batch strides */
    char wb[200];
    what_str(wb, sizeof wb, "forward", a, &d);
    mm_operand A = {a->in[0], d.lda, sa}, B = {a->in[1], d.ldb, sb}, C = {a->out[0], d.N, sc};
    return gemm(be, wb, d.ta, d.tb, d.M, d.N, d.K, 1.0f, A, B, 0.0f, C, d.batch);
}

/* Backward, with G = dL/dout[z] [M,N] for each batch index z (as in src/ref/matmul.c):
 *   ga (a stored [M,K], ta = 0):  ga += G · op(b)ᵀ      tb = 0: G · bᵀ     tb = 1: G · b
 *   ga (a stored [K,M], ta = 1):  ga += op(b) · Gᵀ      tb = 0: b · Gᵀ     tb = 1: bᵀ · Gᵀ
 *   gb (b stored [K,N], tb = 0):  gb += op(a)ᵀ · G      ta = 0: aᵀ · G     ta = 1: a · G
 *   gb (b stored [N,K], tb = 1):  gb += Gᵀ · op(a)      ta = 0: Gᵀ · a     ta = 1: Gᵀ · aᵀ
 * Every product runs with beta = 1, so it adds to what gin already holds -- or with beta = 0
 * when gin is a fresh buffer (all zeros, never written: mcl_ocl_grad_fresh), which stores it.
 * gout[0] [.., M, N];  gin[0] like a (or NULL);  gin[1] like b (or NULL) */
mcl_status mcl_ocl_matmul_bwd(mcl_backend *be, const mcl_op_args *a)
{
    mcl_mm_dims d;
    mcl_mm_dims_get(a, &d);
    const int64_t sa = d.M * d.K, sb = d.K * d.N, sc = d.M * d.N; /* batch strides */
    const mm_operand Aop = {a->in[0], d.lda, sa}, Bop = {a->in[1], d.ldb, sb};
    const mm_operand G = {a->gout[0], d.N, sc};
    char wb[200];
    mcl_status s;
    if (a->gin[0]) {
        what_str(wb, sizeof wb, "backward, gradient of a", a, &d);
        const float beta = mcl_ocl_grad_fresh(be, a->gin[0], &s) ? 0.0f : 1.0f;
        if (s != MCL_OK) return s;
        if (!d.ta) { /* [M,K] = G[M,N] · op(b)ᵀ[N,K] */
            const mm_operand GA = {a->gin[0], d.K, sa};
            s = gemm(be, wb, 0, !d.tb, d.M, d.K, d.N, 1.0f, G, Bop, beta, GA, d.batch);
        } else {     /* [K,M] = op(b)[K,N] · Gᵀ[N,M] */
            const mm_operand GA = {a->gin[0], d.M, sa};
            s = gemm(be, wb, d.tb, 1, d.K, d.M, d.N, 1.0f, Bop, G, beta, GA, d.batch);
        }
        if (s != MCL_OK) return s;
    }
    if (a->gin[1]) {
        what_str(wb, sizeof wb, "backward, gradient of b", a, &d);
        const float beta = mcl_ocl_grad_fresh(be, a->gin[1], &s) ? 0.0f : 1.0f;
        if (s != MCL_OK) return s;
        if (!d.tb) { /* [K,N] = op(a)ᵀ[K,M] · G[M,N] */
            const mm_operand GB = {a->gin[1], d.N, sb};
            s = gemm(be, wb, !d.ta, 0, d.K, d.N, d.M, 1.0f, Aop, G, beta, GB, d.batch);
        } else {     /* [N,K] = Gᵀ[N,M] · op(a)[M,K] */
            const mm_operand GB = {a->gin[1], d.K, sb};
            s = gemm(be, wb, 1, d.ta, d.N, d.K, d.M, 1.0f, G, Aop, beta, GB, d.batch);
        }
        if (s != MCL_OK) return s;
    }
    return MCL_OK;
}
