/* metacl.h — umbrella header of the metacl C API. */
#ifndef METACL_H
#define METACL_H

#include "status.h"
#include "tensor.h"
#include "ops.h"
#include "rng.h"
#include "params.h"
#include "optim.h"
#include "checkpoint.h"

#define METACL_VERSION_STRING "0.1.0"

#endif
