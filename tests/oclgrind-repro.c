/* oclgrind-repro.c — minimal reproducers of the oclgrind 21.10 problems the OpenCL backend
 * works around (doc/opencl-backend.md, "Checking kernels under oclgrind"). Plain OpenCL, no
 * metacl: one buffer and one kernel each, so a newer oclgrind can be checked in seconds.
 *
 *   oclgrind --uninitialized tests/oclgrind-repro store   # host stores
 *   oclgrind tests/oclgrind-repro select                  # vector word by a variable index
 *
 * store:  a buffer is filled by clEnqueueFillBuffer, or written by clEnqueueWriteBuffer at a
 *         byte offset of 4; a kernel copies the stored float. Under --uninitialized the
 *         simulator reports "Uninitialized value written" for data the host did store
 *         (the backend therefore stores through its copy_fwd/fill_f32 kernels there).
 * select: mcl_rng_u32's old form — a uint4 from Philox, then w == 0 ? o.x : w == 1 ? o.y ...
 *         with w = index & 3 — against the same word taken by two bit selects. On a real
 *         device both agree; oclgrind 21.10 returns another word for the first.
 *
 * Prints one line per case and exits 0 when the device behaves (both forms agree / no
 * report is produced, which the caller sees in the simulator's log), 3 when "select"
 * disagrees, 1 on an OpenCL error, 2 on a usage error.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>

static const char *SRC =
    "__kernel void copy1(__global const float *x, long xo, __global float *y)\n"
    "{ y[0] = x[xo]; }\n"
    "uint4 mix(uint4 c) { for (int r = 0; r < 10; r++) {\n"
    "    ulong p0 = (ulong)0xD2511F53u * c.x, p1 = (ulong)0xCD9E8D57u * c.z;\n"
    "    c = (uint4)((uint)(p1 >> 32) ^ c.y, (uint)p1, (uint)(p0 >> 32) ^ c.w, (uint)p0); }\n"
    "  return c; }\n"
    "__kernel void pick(__global uint *out, ulong index)\n"
    "{\n"
    "    ulong blk = index >> 2;\n"
    "    uint4 c = (uint4)((uint)blk, (uint)(blk >> 32), 7u, 0u);\n"
    "    uint4 o = mix(c);\n"
    "    uint w = (uint)(index & 3);\n"
    "    out[0] = w == 0 ? o.x : w == 1 ? o.y : w == 2 ? o.z : o.w;\n"
    "    uint lo = (w & 1) ? o.y : o.x, hi = (w & 1) ? o.w : o.z;\n"
    "    out[1] = (w & 2) ? hi : lo;\n"
    "}\n";

#define CHECK(e, what)                                                   \
    do {                                                                 \
        if ((e) != CL_SUCCESS) {                                         \
            fprintf(stderr, "oclgrind-repro: %s failed (%d)\n", what, (int)(e)); \
            return 1;                                                    \
        }                                                                \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 2 || (strcmp(argv[1], "store") != 0 && strcmp(argv[1], "select") != 0)) {
        fprintf(stderr, "usage: oclgrind-repro store|select\n");
        return 2;
    }
    cl_platform_id p;
    cl_device_id d;
    cl_int e = clGetPlatformIDs(1, &p, NULL);
    CHECK(e, "clGetPlatformIDs");
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL), "clGetDeviceIDs");
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    CHECK(e, "clCreateContext");
    cl_command_queue q = clCreateCommandQueue(ctx, d, 0, &e);
    CHECK(e, "clCreateCommandQueue");
    cl_program prog = clCreateProgramWithSource(ctx, 1, &SRC, NULL, &e);
    CHECK(e, "clCreateProgramWithSource");
    CHECK(clBuildProgram(prog, 1, &d, "-cl-std=CL1.2", NULL, NULL), "clBuildProgram");
    size_t one = 1;
    if (strcmp(argv[1], "store") == 0) {
        cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
        CHECK(e, "clCreateBuffer");
        cl_mem y = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &e);
        CHECK(e, "clCreateBuffer");
        cl_kernel k = clCreateKernel(prog, "copy1", &e);
        CHECK(e, "clCreateKernel");
        const float v = 1.5f;
        for (int how = 0; how < 2; how++) {
            cl_long xo = how == 0 ? 0 : 1;
            if (how == 0)
                e = clEnqueueFillBuffer(q, x, &v, sizeof v, 0, 64, 0, NULL, NULL);
            else
                e = clEnqueueWriteBuffer(q, x, CL_TRUE, 4, 4, &v, 0, NULL, NULL);
            CHECK(e, how == 0 ? "clEnqueueFillBuffer" : "clEnqueueWriteBuffer");
            CHECK(clSetKernelArg(k, 0, sizeof x, &x), "clSetKernelArg");
            CHECK(clSetKernelArg(k, 1, sizeof xo, &xo), "clSetKernelArg");
            CHECK(clSetKernelArg(k, 2, sizeof y, &y), "clSetKernelArg");
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL), "launch");
            float got = 0.0f;
            CHECK(clEnqueueReadBuffer(q, y, CL_TRUE, 0, 4, &got, 0, NULL, NULL), "read");
            printf("store: %s, then a kernel copies it: %g (stored %g)\n",
                   how == 0 ? "clEnqueueFillBuffer of the whole buffer"
                            : "clEnqueueWriteBuffer at byte offset 4",
                   (double)got, (double)v);
        }
        return 0;
    }
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 8, NULL, &e);
    CHECK(e, "clCreateBuffer");
    cl_kernel k = clCreateKernel(prog, "pick", &e);
    CHECK(e, "clCreateKernel");
    int bad = 0;
    for (cl_ulong index = 0; index < 8; index++) {
        CHECK(clSetKernelArg(k, 0, sizeof out, &out), "clSetKernelArg");
        CHECK(clSetKernelArg(k, 1, sizeof index, &index), "clSetKernelArg");
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL), "launch");
        cl_uint w[2];
        CHECK(clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof w, w, 0, NULL, NULL), "read");
        if (w[0] != w[1]) bad = 1;
        printf("select: index %llu: comparison chain %08x, bit selects %08x%s\n",
               (unsigned long long)index, w[0], w[1], w[0] != w[1] ? "  <- differ" : "");
    }
    return bad ? 3 : 0;
}
