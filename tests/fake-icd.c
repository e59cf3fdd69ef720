/* fake-icd.c — a broken OpenCL driver for tests/test-device-choice.sh (built as a module,
 * tests/libmcl-fake-icd.la; loaded by the ICD loader through a .icd file naming it).
 *
 * It is a well-formed ICD (cl_khr_icd: clIcdGetPlatformIDsKHR, clGetPlatformInfo and
 * clGetExtensionFunctionAddress exported, one platform whose first member is the dispatch
 * table) whose clGetDeviceIDs always fails with CL_OUT_OF_RESOURCES: a platform that is
 * listed but whose devices cannot be enumerated. metacl must keep working with the other
 * platforms, and `metacl devices` must show that platform and its error.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_icd.h>
#include <string.h>

struct _cl_platform_id {
    cl_icd_dispatch *dispatch;
};

static cl_icd_dispatch table;
static struct _cl_platform_id platform = {&table};

static cl_int put_str(const char *s, size_t size, void *value, size_t *ret)
{
    const size_t n = strlen(s) + 1;
    if (ret) *ret = n;
    if (value) {
        if (size < n) return CL_INVALID_VALUE;
        memcpy(value, s, n);
    }
    return CL_SUCCESS;
}

/* The implementations are static and reached through the dispatch table and
 * clGetExtensionFunctionAddress: inside this module a call of an exported name could bind to
 * the ICD loader's function of that name (loaded first), which dispatches back here. */
static CL_API_ENTRY cl_int CL_API_CALL fake_platform_info(cl_platform_id p, cl_platform_info what,
                                                          size_t size, void *value, size_t *ret)
{
    if (p != &platform) return CL_INVALID_PLATFORM;
    switch (what) {
    case CL_PLATFORM_NAME: return put_str("metacl fake broken platform", size, value, ret);
    case CL_PLATFORM_VENDOR: return put_str("metacl tests", size, value, ret);
    case CL_PLATFORM_VERSION: return put_str("OpenCL 1.2 fake", size, value, ret);
    case CL_PLATFORM_PROFILE: return put_str("FULL_PROFILE", size, value, ret);
    case CL_PLATFORM_EXTENSIONS: return put_str("cl_khr_icd", size, value, ret);
    case CL_PLATFORM_ICD_SUFFIX_KHR: return put_str("FAKE", size, value, ret);
    default: return CL_INVALID_VALUE;
    }
}

static CL_API_ENTRY cl_int CL_API_CALL fake_get_device_ids(cl_platform_id p, cl_device_type type,
                                                           cl_uint n, cl_device_id *devices,
                                                           cl_uint *count)
{
    (void)p, (void)type, (void)n, (void)devices;
    if (count) *count = 0;
    return CL_OUT_OF_RESOURCES; /* the breakage under test */
}

static CL_API_ENTRY cl_int CL_API_CALL fake_platform_ids(cl_uint n, cl_platform_id *platforms,
                                                         cl_uint *count)
{
    table.clGetPlatformInfo = fake_platform_info;
    table.clGetDeviceIDs = fake_get_device_ids;
    if (count) *count = 1;
    if (platforms) {
        if (n < 1) return CL_INVALID_VALUE;
        platforms[0] = &platform;
    }
    return CL_SUCCESS;
}

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *platforms,
                                                       cl_uint *count)
{
    return fake_platform_ids(n, platforms, count);
}

CL_API_ENTRY cl_int CL_API_CALL clGetPlatformInfo(cl_platform_id p, cl_platform_info what, size_t size,
                                                  void *value, size_t *ret)
{
    return fake_platform_info(p, what, size, value, ret);
}

CL_API_ENTRY void *CL_API_CALL clGetExtensionFunctionAddress(const char *name)
{
    if (strcmp(name, "clIcdGetPlatformIDsKHR") == 0) return (void *)fake_platform_ids;
    if (strcmp(name, "clGetPlatformInfo") == 0) return (void *)fake_platform_info;
    return NULL;
}
