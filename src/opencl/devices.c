/* devices.c — enumerate OpenCL platforms and devices through the ICD loader. */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

const char *mcl_cl_status_str(int code)
{
    switch (code) {
#define C(x) case x: return #x;
        C(CL_SUCCESS) C(CL_DEVICE_NOT_FOUND) C(CL_DEVICE_NOT_AVAILABLE) C(CL_COMPILER_NOT_AVAILABLE)
        C(CL_MEM_OBJECT_ALLOCATION_FAILURE) C(CL_OUT_OF_RESOURCES) C(CL_OUT_OF_HOST_MEMORY)
        C(CL_PROFILING_INFO_NOT_AVAILABLE) C(CL_MEM_COPY_OVERLAP) C(CL_IMAGE_FORMAT_MISMATCH)
        C(CL_IMAGE_FORMAT_NOT_SUPPORTED) C(CL_BUILD_PROGRAM_FAILURE) C(CL_MAP_FAILURE)
        C(CL_MISALIGNED_SUB_BUFFER_OFFSET) C(CL_COMPILE_PROGRAM_FAILURE) C(CL_LINKER_NOT_AVAILABLE)
        C(CL_LINK_PROGRAM_FAILURE) C(CL_DEVICE_PARTITION_FAILED) C(CL_INVALID_VALUE)
        C(CL_INVALID_DEVICE_TYPE) C(CL_INVALID_PLATFORM) C(CL_INVALID_DEVICE) C(CL_INVALID_CONTEXT)
        C(CL_INVALID_QUEUE_PROPERTIES) C(CL_INVALID_COMMAND_QUEUE) C(CL_INVALID_HOST_PTR)
        C(CL_INVALID_MEM_OBJECT) C(CL_INVALID_BINARY) C(CL_INVALID_BUILD_OPTIONS)
        C(CL_INVALID_PROGRAM) C(CL_INVALID_PROGRAM_EXECUTABLE) C(CL_INVALID_KERNEL_NAME)
        C(CL_INVALID_KERNEL_DEFINITION) C(CL_INVALID_KERNEL) C(CL_INVALID_ARG_INDEX)
        C(CL_INVALID_ARG_VALUE) C(CL_INVALID_ARG_SIZE) C(CL_INVALID_KERNEL_ARGS)
        C(CL_INVALID_WORK_DIMENSION) C(CL_INVALID_WORK_GROUP_SIZE) C(CL_INVALID_WORK_ITEM_SIZE)
        C(CL_INVALID_GLOBAL_OFFSET) C(CL_INVALID_EVENT_WAIT_LIST) C(CL_INVALID_EVENT)
        C(CL_INVALID_OPERATION) C(CL_INVALID_BUFFER_SIZE) C(CL_INVALID_GLOBAL_WORK_SIZE)
        C(CL_INVALID_PROPERTY)
#undef C
    case -1001: return "CL_PLATFORM_NOT_FOUND_KHR (no OpenCL platform installed)";
    default: return "unknown OpenCL error";
    }
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        if ((unsigned char)*s >= 0x20) fputc(*s, f);
    }
    fputc('"', f);
}

mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len)
{
    *n_devices = 0;
    if (errbuf && len) errbuf[0] = '\0';
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        if (errbuf)
            snprintf(errbuf, len, "no OpenCL platform found (%s); install an OpenCL driver, e.g. "
                     "the Debian package pocl-opencl-icd for the CPU", err == CL_SUCCESS ? "0 platforms" : mcl_cl_status_str(err));
        if (json) fprintf(f, "[]\n");
        return MCL_OK;
    }
    cl_platform_id *plats = calloc(np, sizeof *plats);
    if (!plats) return MCL_ERR_OOM;
    clGetPlatformIDs(np, plats, NULL);
    int idx = 0;
    if (json) fprintf(f, "[");
    for (cl_uint p = 0; p < np; p++) {
        char pname[256] = "";
        clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof pname, pname, NULL);
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || nd == 0) continue;
        cl_device_id *devs = calloc(nd, sizeof *devs);
        if (!devs) break;
        clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
        for (cl_uint d = 0; d < nd; d++, idx++) {
            char name[256] = "", drv[128] = "", ver[128] = "";
            cl_uint cu = 0;
            cl_ulong gmem = 0, lmem = 0;
            clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof name, name, NULL);
            clGetDeviceInfo(devs[d], CL_DRIVER_VERSION, sizeof drv, drv, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_VERSION, sizeof ver, ver, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gmem, &gmem, NULL);
            clGetDeviceInfo(devs[d], CL_DEVICE_LOCAL_MEM_SIZE, sizeof lmem, &lmem, NULL);
            if (json) {
                fprintf(f, "%s{\"index\":%d,\"platform\":", idx ? "," : "", idx);
                json_str(f, pname);
                fprintf(f, ",\"device\":");
                json_str(f, name);
                fprintf(f, ",\"driver\":");
                json_str(f, drv);
                fprintf(f, ",\"version\":");
                json_str(f, ver);
                fprintf(f, ",\"compute_units\":%u,\"global_mem_bytes\":%llu,\"local_mem_bytes\":%llu,"
                        "\"default\":%s}", cu, (unsigned long long)gmem, (unsigned long long)lmem,
                        idx == 0 ? "true" : "false");
            } else {
                fprintf(f, "  opencl %d%s  %s | %s | driver %s | %s | %u CUs | %.1f GiB global | %llu KiB local\n",
                        idx, idx == 0 ? " (default)" : "", pname, name, drv, ver, cu,
                        (double)gmem / (1024.0 * 1024.0 * 1024.0), (unsigned long long)(lmem / 1024));
            }
        }
        free(devs);
    }
    if (json) fprintf(f, "]\n");
    free(plats);
    *n_devices = idx;
    return MCL_OK;
}
