/* devices.h — OpenCL device enumeration (internal; the backend itself is built on it). */
#ifndef MCL_OPENCL_DEVICES_H
#define MCL_OPENCL_DEVICES_H

#include <stdio.h>

#include "status.h"

/* Print every OpenCL platform and device (name, driver version, compute units, global and
 * local memory) to f, as a table or as JSON. `*n_devices` receives the count. Returns
 * MCL_OK also when there are no platforms (then *n_devices == 0); errbuf gets a reason. */
mcl_status mcl_opencl_print_devices(FILE *f, int json, int *n_devices, char *errbuf, size_t len);

/* Readable name of an OpenCL status code (CL_OUT_OF_RESOURCES, ...). */
const char *mcl_cl_status_str(int code);

#endif
