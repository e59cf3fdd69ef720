/* status.h — status codes returned by every library function. */
#ifndef MCL_STATUS_H
#define MCL_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mcl_status {
    MCL_OK = 0,
    MCL_ERR_NULL,        /* a required pointer/tensor was NULL                */
    MCL_ERR_INVALID,     /* an argument value is invalid                      */
    MCL_ERR_SHAPE,       /* shapes do not match what the op requires          */
    MCL_ERR_OOM,         /* out of memory (host or device)                    */
    MCL_ERR_BACKEND,     /* the backend failed (OpenCL/CLBlast error, ...)    */
    MCL_ERR_UNSUPPORTED, /* the backend or build does not provide this        */
    MCL_ERR_STATE,       /* called in the wrong state (e.g. no tape to walk)  */
    MCL_ERR_IO,          /* file could not be read/written                    */
    MCL_ERR_FORMAT,      /* file contents are corrupt, truncated or foreign   */
    MCL_STATUS_COUNT
} mcl_status;

/* Short, static description of a status code ("shape mismatch", ...). */
const char *mcl_status_str(mcl_status s);

#ifdef __cplusplus
}
#endif
#endif
