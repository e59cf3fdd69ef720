"""_lib.py — find and open libmetacl with ctypes, and declare the C functions the package calls.

The library is looked up, first hit wins:
  1. the file named by the environment variable METACL_LIBRARY;
  2. the library this package was configured with (_paths.py, written by `make`): the build
     tree's when the package is imported from the build tree, else the installed one;
  3. `libmetacl.so.0` through the dynamic loader's search path.
"""

import ctypes
import os

from . import _paths

c_float_p = ctypes.POINTER(ctypes.c_float)
c_int64_p = ctypes.POINTER(ctypes.c_int64)
c_void_p = ctypes.c_void_p


def _candidates():
    env = os.environ.get("METACL_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    in_build = os.path.realpath(here).startswith(os.path.realpath(_paths.BUILD_DIR) + os.sep)
    order = [_paths.BUILD_LIB, _paths.INSTALLED_LIB] if in_build else [_paths.INSTALLED_LIB, _paths.BUILD_LIB]
    return order + ["libmetacl.so.0"], False


def _open():
    names, forced = _candidates()
    errors = []
    for name in names:
        if os.sep in name and not os.path.exists(name):
            errors.append("%s: no such file" % name)
            continue
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            errors.append(str(e))
            if forced:
                break
    raise ImportError("metacl: cannot open libmetacl (%s)%s" % (
        "; ".join(errors), "" if forced else "; set METACL_LIBRARY to its path"))


lib = _open()
libc = ctypes.CDLL(None)


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


P = c_void_p  # every opaque handle: mcl_ctx *, mcl_tensor *, mcl_dataset *, mcl_learner *, ...
I = ctypes.c_int
I64 = ctypes.c_int64
U64 = ctypes.c_uint64
F = ctypes.c_float
S = ctypes.c_char_p

# status and contexts (tensor.h, status.h)
status_str = _fn("mcl_status_str", S, I)
ctx_create = _fn("mcl_ctx_create", I, ctypes.POINTER(P), I, S, ctypes.c_char_p, ctypes.c_size_t)
ctx_free = _fn("mcl_ctx_free", None, P)
ctx_status = _fn("mcl_ctx_status", I, P)
ctx_error = _fn("mcl_ctx_error", S, P)
ctx_clear_error = _fn("mcl_ctx_clear_error", None, P)
ctx_reset = _fn("mcl_ctx_reset", None, P)
ctx_finish = _fn("mcl_ctx_finish", I, P)
ctx_num_temps = _fn("mcl_ctx_num_temps", ctypes.c_size_t, P)
ctx_set_seed = _fn("mcl_ctx_set_seed", None, P, U64)
ctx_seed = _fn("mcl_ctx_seed", U64, P)
ctx_backend_name = _fn("mcl_ctx_backend_name", S, P)
backends_print = _fn("mcl_backends_print", I, P, I)
backend_describe = _fn("mcl_backend_describe", None, P, ctypes.c_char_p, ctypes.c_size_t)

# tensors
tensor_create = _fn("mcl_tensor_create", P, P, I, c_int64_p)
param_create = _fn("mcl_param_create", P, P, S, I, c_int64_p)
tensor_free = _fn("mcl_tensor_free", None, P)
tensor_keep = _fn("mcl_tensor_keep", P, P)
tensor_ndim = _fn("mcl_tensor_ndim", I, P)
tensor_shape = _fn("mcl_tensor_shape", c_int64_p, P)
tensor_numel = _fn("mcl_tensor_numel", I64, P)
tensor_write = _fn("mcl_tensor_write", I, P, c_float_p, I64)
tensor_read = _fn("mcl_tensor_read", I, P, c_float_p, I64)
tensor_fill = _fn("mcl_tensor_fill", I, P, F)
tensor_view = _fn("mcl_tensor_view", P, P, I64, I, c_int64_p)
detach = _fn("mcl_detach", P, P)
tensor_grad = _fn("mcl_tensor_grad", P, P)
tensor_zero_grad = _fn("mcl_tensor_zero_grad", None, P)
tensor_requires_grad = _fn("mcl_tensor_requires_grad", None, P, I)
tensor_name = _fn("mcl_tensor_name", S, P)
tensor_set_name = _fn("mcl_tensor_set_name", None, P, S)

# autograd (ops.h)
no_grad_begin = _fn("mcl_no_grad_begin", None, P)
no_grad_end = _fn("mcl_no_grad_end", None, P)
grad_enabled = _fn("mcl_grad_enabled", I, P)
backward = _fn("mcl_backward", I, P, P)
op_by_name = _fn("mcl_op_by_name", I, S)
op_run = _fn("mcl_op_run", I, P, c_void_p)
op_backward = _fn("mcl_op_backward", I, P, c_void_p)

# OpenMP thread count: libgomp is a dependency of libmetacl, so the symbol is found through it
try:
    omp_set_num_threads = _fn("omp_set_num_threads", None, I)
    omp_get_max_threads = _fn("omp_get_max_threads", I)
except AttributeError:  # a build without OpenMP
    omp_set_num_threads = None
    omp_get_max_threads = None

libc.fopen.restype = P
libc.fopen.argtypes = [S, S]
libc.fclose.restype = I
libc.fclose.argtypes = [P]

# struct layouts (abi.h): every ctypes mirror of a C struct is checked against the library it
# opened, so a field added on one side is an ImportError naming it, never a silent misread
abi_size = _fn("mcl_abi_size", I64, S)
abi_offset = _fn("mcl_abi_offset", I64, S, S)
abi_type = _fn("mcl_abi_type", S, I)
CHECKED = {}  # C struct name -> the ctypes class checked against it


def layout_errors(cls, ctype, leading=False):
    """The differences between the ctypes structure cls and the library's struct ctype: its
    size (unless leading: cls mirrors only the struct's first fields) and each field's offset
    (a Python field name may end in '_' where the C name is a Python keyword)."""
    size = abi_size(ctype.encode())
    if size < 0:
        return ["the library does not describe %s" % ctype]
    errs = []
    if not leading and size != ctypes.sizeof(cls):
        errs.append("%s is %d bytes in the library, %d in %s" % (ctype, size, ctypes.sizeof(cls), cls.__name__))
    for name, _ in cls._fields_:
        off = abi_offset(ctype.encode(), name.rstrip("_").encode())
        if off != getattr(cls, name).offset:
            errs.append("%s.%s is at %s in the library, at %d in %s" % (
                ctype, name.rstrip("_"), "no offset" if off < 0 else off, getattr(cls, name).offset, cls.__name__))
    return errs


def check_layout(cls, ctype, leading=False):
    """Raise ImportError when cls does not mirror the library's struct ctype (layout_errors)."""
    errs = layout_errors(cls, ctype, leading)
    if errs:
        raise ImportError("metacl: this package does not match the library it opened (%s): %s" % (
            getattr(lib, "_name", "libmetacl"), "; ".join(errs)))
    CHECKED[ctype] = cls
    return cls
