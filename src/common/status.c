/* status.c — names of status codes. */
#include "status.h"

const char *mcl_status_str(mcl_status s)
{
    switch (s) {
    case MCL_OK: return "ok";
    case MCL_ERR_NULL: return "null argument";
    case MCL_ERR_INVALID: return "invalid argument";
    case MCL_ERR_SHAPE: return "shape mismatch";
    case MCL_ERR_OOM: return "out of memory";
    case MCL_ERR_BACKEND: return "backend error";
    case MCL_ERR_UNSUPPORTED: return "unsupported";
    case MCL_ERR_STATE: return "invalid state";
    case MCL_ERR_IO: return "i/o error";
    case MCL_ERR_FORMAT: return "bad file format";
    case MCL_STATUS_COUNT: break;
    }
    return "unknown status";
}
