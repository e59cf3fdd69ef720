"""ops.py — every op of the op table (src/common/ops.def) as a Python function.

The functions are built at import time from _ops_table.py, which `make` generates from
ops.def and ops.h (python/gen_ops.py): one function per public C function of an op
(metacl.ops.add calls mcl_add, metacl.ops.rel_attn_window calls mcl_rel_attn_window), with
the C argument names; the C front end checks the shapes and a failure raises metacl.Error.
An op without a public C function (the in-place optimizer updates sgd_step, adam_step,
clip_scale) is called through mcl_op_run with the raw parameters of ops.def:
`ops.adam_step(param, grad, m, v, f=[lr, beta1, beta2, eps, wd], i=[mode, step])`.
`ops.run(name, inputs, f=, i=, u=)` runs any op that way and returns its outputs.

Results are Tensors of the inputs' context (with gradients recorded on its tape unless a
no-grad scope is open).
"""

import ctypes

from . import _lib, _ops_table
from .core import Tensor, _check_shape
from .errors import Error, InvalidError

OP_NAMES = tuple(r["name"] for r in _ops_table.OPS)
OP_INFO = {r["name"]: r for r in _ops_table.OPS}


class AttnOpts(ctypes.Structure):
    """mcl_attn_opts (ops.h): ring rows in use n, index of the oldest start, mask (0 causal,
    1 diagonal dropped after the softmax, 2 strictly causal), score scale, ALiBi slope factor."""
    _fields_ = [("n", ctypes.c_int64), ("start", ctypes.c_int64), ("mask", ctypes.c_int),
                ("scale", ctypes.c_float), ("alibi", ctypes.c_float)]


_lib.check_layout(AttnOpts, "mcl_attn_opts")


class _Params(ctypes.Structure):
    _fields_ = [("f", ctypes.c_float * 8), ("i", ctypes.c_int64 * 8), ("u", ctypes.c_uint64 * 4)]


_lib.check_layout(_Params, "mcl_op_params")


class _OpArgs(ctypes.Structure):
    """mcl_op_args (backend.h): the op-call record of mcl_op_run; sizes from the generated table."""
    _fields_ = [("op", ctypes.c_int),
                ("in_", ctypes.c_void_p * _ops_table.MAX_IN),
                ("out", ctypes.c_void_p * _ops_table.MAX_OUT),
                ("gout", ctypes.c_void_p * _ops_table.MAX_OUT),
                ("gin", ctypes.c_void_p * _ops_table.MAX_IN),
                ("p", _Params),
                ("out_given", ctypes.c_int)]


_lib.check_layout(_OpArgs, "mcl_op_args")


_CTYPES = {"tensor": _lib.P, "tensors": ctypes.POINTER(_lib.P), "out": ctypes.POINTER(_lib.P),
           "outs": ctypes.POINTER(_lib.P), "float": ctypes.c_float, "int": ctypes.c_int,
           "int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "ints": ctypes.POINTER(ctypes.c_int),
           "attn_opts": ctypes.POINTER(AttnOpts)}


def _context_of(name, values):
    for v in values:
        if isinstance(v, Tensor):
            return v.ctx
        if isinstance(v, (list, tuple)):
            for w in v:
                if isinstance(w, Tensor):
                    return w.ctx
    raise TypeError("%s: at least one argument must be a metacl.Tensor" % name)


def _tensor_arg(fname, argname, v, ctx, optional=False):
    if v is None and optional:
        return None
    if not isinstance(v, Tensor):
        raise TypeError("%s: argument '%s' must be a metacl.Tensor, not %s"
                        % (fname, argname, type(v).__name__))
    if v.ctx is not ctx:
        raise InvalidError("%s: argument '%s' belongs to another context" % (fname, argname))
    return v.handle


def _int_arg(fname, argname, v):
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, int):
        try:
            import numpy as np
            if isinstance(v, np.integer):
                return int(v)
        except ImportError:
            pass
        raise TypeError("%s: argument '%s' must be an integer, not %s" % (fname, argname, type(v).__name__))
    return v


def _make_function(cname, spec):
    pyname = cname[4:]
    args = spec["args"]
    cfun = getattr(_lib.lib, cname)
    argtypes = []
    for kind, _, _ in args:
        if kind == "shape":
            argtypes += [ctypes.c_int, ctypes.POINTER(ctypes.c_int64)]
        else:
            argtypes.append(_CTYPES[kind])
    cfun.argtypes = [_lib.P] + argtypes
    cfun.restype = _lib.P if spec["ret"] == "tensor" else ctypes.c_int
    inputs = [a for a in args if a[0] not in ("out", "outs")]
    outputs = [a for a in args if a[0] in ("out", "outs")]
    in_names = [a[1] for a in inputs]

    def fn(*pos, **kw):
        if len(pos) > len(inputs):
            raise TypeError("%s() takes %d arguments (%d given)" % (pyname, len(inputs), len(pos)))
        values = dict(zip(in_names, pos))
        for k, v in kw.items():
            if k not in in_names:
                raise TypeError("%s() got an unexpected argument '%s'" % (pyname, k))
            if k in values:
                raise TypeError("%s() got argument '%s' twice" % (pyname, k))
            values[k] = v
        missing = [n for n in in_names if n not in values]
        if missing:
            raise TypeError("%s() missing argument(s): %s" % (pyname, ", ".join(missing)))
        ctx = _context_of(pyname, values.values())
        cargs, keep, outs = [], [], []
        for kind, name, count in args:
            v = values.get(name)
            if kind == "tensor":
                cargs.append(_tensor_arg(pyname, name, v, ctx, optional=(pyname == "smn_write" and name in ("idx", "zs"))))
            elif kind == "tensors":
                if not isinstance(v, (list, tuple)) or len(v) != count:
                    raise TypeError("%s: argument '%s' must be a list of %d tensors" % (pyname, name, count))
                arr = (_lib.P * count)(*[_tensor_arg(pyname, "%s[%d]" % (name, i), w, ctx) for i, w in enumerate(v)])
                keep.append(arr)
                cargs.append(ctypes.cast(arr, ctypes.POINTER(_lib.P)))
            elif kind == "out":
                box = _lib.P()
                outs.append(("one", box))
                keep.append(box)
                cargs.append(ctypes.pointer(box))
            elif kind == "outs":
                arr = (_lib.P * count)()
                outs.append(("many", arr))
                keep.append(arr)
                cargs.append(ctypes.cast(arr, ctypes.POINTER(_lib.P)))
            elif kind == "float":
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise TypeError("%s: argument '%s' must be a number, not %s" % (pyname, name, type(v).__name__))
                cargs.append(float(v))
            elif kind in ("int", "int64", "uint64"):
                iv = _int_arg(pyname, name, v)
                if kind == "uint64" and iv < 0:
                    raise InvalidError("%s: argument '%s' must be >= 0" % (pyname, name))
                if kind == "int" and not -2**31 <= iv < 2**31:
                    raise InvalidError("%s: argument '%s' = %d is out of range" % (pyname, name, iv))
                cargs.append(iv)
            elif kind == "ints":
                vals = [_int_arg(pyname, name, w) for w in (v if isinstance(v, (list, tuple)) else [None])]
                if len(vals) != count:
                    raise TypeError("%s: argument '%s' must be %d integers" % (pyname, name, count))
                arr = (ctypes.c_int * count)(*vals)
                keep.append(arr)
                cargs.append(arr)
            elif kind == "shape":
                shape = _check_shape(v)
                arr = (ctypes.c_int64 * len(shape))(*shape)
                keep.append(arr)
                cargs += [len(shape), arr]
            elif kind == "attn_opts":
                if isinstance(v, dict):
                    unknown = set(v) - {f[0] for f in AttnOpts._fields_}
                    if unknown:
                        raise TypeError("%s: unknown attention option(s) %s" % (pyname, sorted(unknown)))
                    v = AttnOpts(**v)
                if not isinstance(v, AttnOpts):
                    raise TypeError("%s: argument '%s' must be a dict or metacl.ops.AttnOpts" % (pyname, name))
                keep.append(v)
                cargs.append(ctypes.pointer(v))
        res = cfun(ctx.handle, *cargs)
        if spec["ret"] == "tensor":
            if not res:
                ctx.check(None, pyname)
                raise Error("%s failed" % pyname)
            return Tensor._keep(ctx, res)
        ctx.check(res, pyname)
        results = []
        for how, box in outs:
            if how == "one":
                results.append(Tensor._keep(ctx, box.value) if box.value else None)
            else:
                results.append([Tensor._keep(ctx, h) if h else None for h in box])
        if not results:
            return None
        return results[0] if len(results) == 1 else tuple(results)

    fn.__name__ = pyname
    fn.__qualname__ = pyname
    op = OP_INFO[spec["op"]]
    sig = ", ".join(("%s[%d]" % (n, c)) if c else n for k, n, c in inputs)
    fn.__doc__ = "%s(%s) -> calls %s (op '%s', ops.def: %s)" % (pyname, sig, cname, op["name"], op["doc"])
    return fn


def run(name, inputs, f=(), i=(), u=()):
    """Run op `name` of the op table on `inputs` (Tensors, in ops.def's order) with the raw
    scalar parameters f (floats), i (ints), u (unsigned) of ops.def; returns the list of its
    outputs (empty for the in-place ops)."""
    if name not in OP_INFO:
        raise InvalidError("unknown op '%s'" % name)
    info = OP_INFO[name]
    if len(inputs) != info["n_in"]:
        raise TypeError("%s takes %d input tensors, %d given" % (name, info["n_in"], len(inputs)))
    if len(f) > 8 or len(i) > 8 or len(u) > 4:
        raise TypeError("%s: at most 8 f, 8 i and 4 u parameters" % name)
    ctx = _context_of(name, inputs)
    rec = _OpArgs()
    rec.op = _lib.op_by_name(name.encode())
    for k, t in enumerate(inputs):
        rec.in_[k] = _tensor_arg(name, "inputs[%d]" % k, t, ctx)
    for k, v in enumerate(f):
        rec.p.f[k] = float(v)
    for k, v in enumerate(i):
        rec.p.i[k] = _int_arg(name, "i[%d]" % k, v)
    for k, v in enumerate(u):
        rec.p.u[k] = _int_arg(name, "u[%d]" % k, v)
    ctx.check(_lib.op_run(ctx.handle, ctypes.byref(rec)), name)
    return [Tensor._keep(ctx, rec.out[k]) for k in range(info["n_out"]) if rec.out[k]]


def _make_raw(name):
    info = OP_INFO[name]

    def fn(*inputs, f=(), i=(), u=()):
        out = run(name, list(inputs), f=f, i=i, u=u)
        return None if not out else (out[0] if len(out) == 1 else tuple(out))

    fn.__name__ = name
    fn.__doc__ = ("%s(*%d tensors, f=[...], i=[...], u=[...]) -> mcl_op_run (no public C function; "
                  "ops.def: %s)" % (name, info["n_in"], info["doc"]))
    return fn


__all__ = ["run", "AttnOpts", "OP_NAMES"]
for _r in _ops_table.OPS:
    if _r["functions"]:
        for _c in _r["functions"]:
            globals()[_c[4:]] = _make_function(_c, _ops_table.FUNCTIONS[_c])
            __all__.append(_c[4:])
    else:
        globals()[_r["name"]] = _make_raw(_r["name"])
        __all__.append(_r["name"])
