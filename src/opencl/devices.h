/* devices.h — OpenCL device enumeration (internal; the backend itself is built on it). */
#ifndef MCL_OPENCL_DEVICES_H
#define MCL_OPENCL_DEVICES_H

#include <stdio.h>

#include "status.h"

struct mcl_ctx;
struct mcl_backend;

/* The backend's constructor (device: index in the listing order of `metacl devices`, or a
 * name substring; NULL = $METACL_DEVICE, else the default of mcl_ocl_pick_default: the first
 * GPU in that listing order (platforms as the ICD loader gives them), else the first
 * accelerator, else the first CPU device, else device 0). Called only through src/common/backends.c, which
 * declares it itself so that the engine includes nothing from src/opencl/. */
mcl_status mcl_opencl_backend_create(struct mcl_ctx *ctx, const char *device,
                                     struct mcl_backend **out);

/* Print every OpenCL device (index, type, platform, name, driver version, compute units,
 * global and local memory, work-group limit; the default marked) and then every platform
 * (its device count, or why clGetDeviceIDs failed) to f, as text or as JSON: the JSON is the
 * devices array followed by `,"opencl_platforms":[...]`, i.e. the value of an "opencl" member
 * and a sibling member. `*n_devices` receives the count. Returns MCL_OK also when there are
 * no platforms (then *n_devices == 0); errbuf gets a reason. */
mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len);

/* Readable name of an OpenCL status code (CL_OUT_OF_RESOURCES, ...). */
const char *mcl_cl_status_str(int code);

/* Before the first OpenCL call: when PoCL's kernel cache directory (POCL_CACHE_DIR, else
 * $XDG_CACHE_HOME/pocl/kcache, else ~/.cache/pocl/kcache) cannot be written, PoCL reports no
 * device. Then this points POCL_CACHE_DIR at a private temporary directory (removed at exit)
 * with POCL_KERNEL_CACHE=0, warns once on stderr, and returns what is wrong; NULL when the cache
 * is usable. Idempotent. */
const char *mcl_opencl_cache_check(void);

struct mcl_ctx;
/* Device name of an OpenCL context (NULL for other backends). */
const char *mcl_opencl_device_name(const struct mcl_ctx *ctx);
/* The device of an OpenCL context: its index in the listing, names, type and limits; the
 * strings live as long as the context. Returns -1 (and zeroes *info) for other backends. */
typedef struct mcl_opencl_info {
    int index;
    const char *device, *platform, *driver;
    char type[48]; /* "GPU", "CPU", ... */
    size_t max_work_group, local_mem;
    int sync;      /* METACL_SYNC=1 */
} mcl_opencl_info;
int mcl_opencl_device_info(const struct mcl_ctx *ctx, mcl_opencl_info *info);
/* Seconds spent obtaining the program at context creation; *from_cache = 1 if it came
 * from the on-disk cache. -1 for other backends. */
double mcl_opencl_build_seconds(const struct mcl_ctx *ctx, int *from_cache);

#endif
