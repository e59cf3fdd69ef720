"""core.py — contexts and tensors over the C library (tensor.h, ops.h).

A Context owns one mcl_ctx (a backend, the autograd tape, the temporaries). A Tensor owns one
reference to an mcl_tensor: results of ops are the context's temporaries and the Tensor takes
its own reference, so it stays valid after Context.reset(). Closing a context frees every
tensor still alive in it; using such a tensor afterwards raises metacl.StateError instead of
touching freed memory.
"""

import ctypes
import json
import os
import tempfile
import weakref

import numpy as np

from . import _lib
from .errors import Error, InvalidError, StateError, raise_status

BACKENDS = {"ref": 0, "opencl": 1}


def _status_message(status):
    return _lib.status_str(status).decode()


def devices():
    """The backends of this build and every OpenCL device, as `metacl devices --json` prints
    them: a dict with "ref", "opencl" (a list of devices) and "opencl_platforms"."""
    fd, path = tempfile.mkstemp(prefix="metacl-devices-", suffix=".json")
    os.close(fd)
    try:
        f = _lib.libc.fopen(path.encode(), b"w")
        if not f:
            raise Error("devices: cannot open a temporary file")
        st = _lib.backends_print(f, 1)
        _lib.libc.fclose(f)
        if st != 0:
            raise_status(st, "devices: " + _status_message(st))
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    finally:
        os.unlink(path)


class Context:
    """A backend with its tape: Context(backend="ref"|"opencl", device=None, threads=None,
    seed=0). `device` picks an OpenCL device (an index or a name substring, as the CLI's
    --device); `threads` sets the OpenMP threads of the process (the reference backend's).
    Use it as a context manager, or call close()."""

    def __init__(self, backend="ref", device=None, threads=None, seed=0):
        if backend not in BACKENDS:
            raise InvalidError("unknown backend %r (expected one of %s)" % (backend, ", ".join(BACKENDS)))
        if device is not None and not isinstance(device, (str, int)):
            raise TypeError("device must be an index or a name, not %s" % type(device).__name__)
        if threads is not None:
            if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
                raise InvalidError("threads must be an integer >= 1, not %r" % (threads,))
        self._h = None
        self._tensors = weakref.WeakSet()
        handle = _lib.P()
        err = ctypes.create_string_buffer(512)
        dev = None if device is None else str(device).encode()
        st = _lib.ctx_create(ctypes.byref(handle), BACKENDS[backend], dev, err, len(err))
        if st != 0 or not handle.value:
            raise_status(st or 5, err.value.decode() or _status_message(st))
        self._h = handle.value
        self.backend = backend
        if threads is not None and _lib.omp_set_num_threads:
            _lib.omp_set_num_threads(threads)
        _lib.ctx_set_seed(self._h, int(seed))

    # -- lifetime --
    @property
    def handle(self):
        if not self._h:
            raise StateError("the context is closed")
        return self._h

    def close(self):
        """Free every tensor of this context still alive, then the context (idempotent)."""
        if not self._h:
            return
        for t in list(self._tensors):
            t._release()
        _lib.ctx_free(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown
            pass

    # -- state --
    @property
    def closed(self):
        return not self._h

    @property
    def seed(self):
        return int(_lib.ctx_seed(self.handle))

    @seed.setter
    def seed(self, value):
        _lib.ctx_set_seed(self.handle, int(value))

    def reset(self):
        """End of a step: clear the tape and drop the context's temporaries (tensors held by
        Python stay valid, cut from the graph)."""
        _lib.ctx_reset(self.handle)

    def finish(self):
        """Wait for the device's queued work."""
        self.check(_lib.ctx_finish(self.handle))

    def check(self, status=None, what=None):
        """Raise the context's error when `status` is not OK (or, with status None, when the
        context holds one); clears the error so the context stays usable."""
        h = self.handle
        st = _lib.ctx_status(h) if status is None else status
        if st == 0:
            return
        msg = _lib.ctx_error(h)
        msg = msg.decode(errors="replace") if msg else ""
        if not msg:
            msg = _status_message(st)
        if what and not msg.startswith(what + ":"):
            msg = "%s: %s" % (what, msg)
        _lib.ctx_clear_error(h)
        raise_status(st, msg)

    # -- tensors --
    def tensor(self, array, requires_grad=False, name=None):
        """A new tensor holding a copy of `array` (float32, C-contiguous, 1 to 4 dims)."""
        a = _as_float32(array)
        if requires_grad:
            h = _lib.param_create(self.handle, (name or "").encode(), a.ndim, _shape_arg(a.shape))
        else:
            h = _lib.tensor_create(self.handle, a.ndim, _shape_arg(a.shape))
            if h and name:
                _lib.tensor_set_name(h, name.encode())
        if not h:
            self.check(None, "tensor")
            raise Error("tensor: creation failed")
        t = Tensor._own(self, h)
        t._rg = bool(requires_grad)
        t.write(a)
        return t

    def zeros(self, shape, requires_grad=False, name=None):
        shape = _check_shape(shape)
        return self.tensor(np.zeros(shape, dtype=np.float32), requires_grad, name)

    def no_grad(self):
        """`with ctx.no_grad():` — ops inside record nothing on the tape (scopes nest)."""
        return _NoGrad(self)

    @property
    def grad_enabled(self):
        return bool(_lib.grad_enabled(self.handle))

    @property
    def temporaries(self):
        return int(_lib.ctx_num_temps(self.handle))


class _NoGrad:
    def __init__(self, ctx):
        self.ctx = ctx

    def __enter__(self):
        _lib.no_grad_begin(self.ctx.handle)
        return self.ctx

    def __exit__(self, *exc):
        if not self.ctx.closed:
            _lib.no_grad_end(self.ctx.handle)


def _check_shape(shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = tuple(shape)
    if not 1 <= len(shape) <= 4:
        raise InvalidError("a tensor has 1 to 4 dims, not %d" % len(shape))
    for d in shape:
        if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
            raise InvalidError("dims must be positive integers, got %r" % (shape,))
    return tuple(int(d) for d in shape)


def _shape_arg(shape):
    return (ctypes.c_int64 * len(shape))(*shape)


def _as_float32(array):
    """`array` as a float32 C-contiguous ndarray of 1..4 dims — without converting the dtype:
    a float64 array is refused (a silent cast would hide a precision change)."""
    if isinstance(array, Tensor):
        raise TypeError("expected a NumPy array, got a metacl.Tensor (use .numpy())")
    if not isinstance(array, np.ndarray):
        if isinstance(array, (list, tuple)):
            raise TypeError("expected a float32 NumPy array; build one with "
                            "np.asarray(x, dtype=np.float32)")
        raise TypeError("expected a float32 NumPy array, not %s" % type(array).__name__)
    if array.dtype != np.float32:
        raise TypeError("expected dtype float32, got %s (convert explicitly with "
                        ".astype(np.float32))" % array.dtype)
    if not array.flags["C_CONTIGUOUS"]:
        raise ValueError("expected a C-contiguous array (use np.ascontiguousarray)")
    _check_shape(array.shape)
    return array


class Tensor:
    """A float32 tensor of 1 to 4 dims on a context's backend."""

    __slots__ = ("_ctx", "_h", "_rg", "__weakref__")

    def __init__(self, *a, **k):
        raise TypeError("create tensors with Context.tensor(array) or metacl.tensor(ctx, array)")

    @classmethod
    def _own(cls, ctx, handle):
        """Wrap `handle`, whose one reference the new Tensor now owns."""
        t = object.__new__(cls)
        t._ctx = ctx
        t._h = handle
        t._rg = False
        ctx._tensors.add(t)
        return t

    @classmethod
    def _keep(cls, ctx, handle):
        """Wrap a borrowed handle (an op's temporary): take a reference of our own."""
        _lib.tensor_keep(handle)
        return cls._own(ctx, handle)

    def _release(self):
        h, self._h = self._h, None
        if h:
            _lib.tensor_free(h)

    def free(self):
        """Drop this tensor now (its memory goes when nothing else uses it)."""
        self._release()

    def __del__(self):
        try:
            if self._h and not self._ctx.closed:
                self._release()
        except Exception:
            pass

    @property
    def handle(self):
        if not self._h:
            raise StateError("the tensor was freed (or its context closed)")
        if self._ctx.closed:
            raise StateError("the tensor's context is closed")
        return self._h

    @property
    def ctx(self):
        return self._ctx

    # -- shape --
    @property
    def shape(self):
        h = self.handle
        n = _lib.tensor_ndim(h)
        p = _lib.tensor_shape(h)
        return tuple(int(p[i]) for i in range(n))

    @property
    def ndim(self):
        return _lib.tensor_ndim(self.handle)

    @property
    def size(self):
        return int(_lib.tensor_numel(self.handle))

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        if not self._h or self._ctx.closed:
            return "<metacl.Tensor (freed)>"
        return "<metacl.Tensor %s on %s%s>" % (list(self.shape), self._ctx.backend,
                                               ", requires_grad" if self.requires_grad else "")

    # -- data --
    def numpy(self):
        """A new float32 ndarray with the tensor's values (waits for the device)."""
        out = np.empty(self.shape, dtype=np.float32)
        st = _lib.tensor_read(self.handle, out.ctypes.data_as(_lib.c_float_p), out.size)
        self._ctx.check(st, "numpy")
        return out

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def write(self, array):
        """Overwrite the values with `array` (float32, C-contiguous, the same shape)."""
        a = _as_float32(array)
        if a.shape != self.shape:
            raise ValueError("write: array shape %s, tensor shape %s" % (a.shape, self.shape))
        st = _lib.tensor_write(self.handle, a.ctypes.data_as(_lib.c_float_p), a.size)
        self._ctx.check(st, "write")

    def fill(self, value):
        self._ctx.check(_lib.tensor_fill(self.handle, float(value)), "fill")

    def item(self):
        if self.size != 1:
            raise ValueError("item: the tensor has %d elements, not 1" % self.size)
        return float(self.numpy().reshape(-1)[0])

    def view(self, shape, offset=0):
        """A tensor of `shape` over this one's memory from element `offset` (no copy, no
        gradient through it)."""
        shape = _check_shape(shape)
        h = _lib.tensor_view(self.handle, int(offset), len(shape), _shape_arg(shape))
        if not h:
            self._ctx.check(None, "view")
            raise Error("view failed")
        return Tensor._own(self._ctx, h)

    def detach(self):
        """The same values, cut from the graph."""
        h = _lib.detach(self.handle)
        if not h:
            self._ctx.check(None, "detach")
            raise Error("detach failed")
        return Tensor._own(self._ctx, h)

    # -- autograd --
    @property
    def requires_grad(self):
        """True for a trainable leaf (its .grad is accumulated by backward)."""
        return self._rg

    @requires_grad.setter
    def requires_grad(self, on):
        _lib.tensor_requires_grad(self.handle, 1 if on else 0)
        self._rg = bool(on)

    @property
    def grad(self):
        """The accumulated gradient (a Tensor), or None before a backward reached it."""
        h = _lib.tensor_grad(self.handle)
        return Tensor._keep(self._ctx, h) if h else None

    def zero_grad(self):
        _lib.tensor_zero_grad(self.handle)

    def backward(self):
        backward(self)

    # -- arithmetic sugar (the ops of metacl.ops) --
    def __add__(self, other):
        from . import ops
        return ops.add(self, other)

    def __sub__(self, other):
        from . import ops
        return ops.sub(self, other)

    def __mul__(self, other):
        from . import ops
        if isinstance(other, (int, float)):
            return ops.scale(self, float(other))
        return ops.mul(self, other)

    __rmul__ = __mul__

    def __matmul__(self, other):
        from . import ops
        return ops.matmul(self, other, 0, 0)

    def __neg__(self):
        from . import ops
        return ops.scale(self, -1.0)


def backward(loss):
    """d loss / d leaf accumulated into every requires_grad leaf's .grad (loss has 1 element)."""
    if not isinstance(loss, Tensor):
        raise TypeError("backward: expected a metacl.Tensor, not %s" % type(loss).__name__)
    ctx = loss.ctx
    ctx.check(_lib.backward(ctx.handle, loss.handle), "backward")


def tensor(ctx, array, requires_grad=False, name=None):
    """metacl.tensor(ctx, array): ctx.tensor(array, ...)."""
    return ctx.tensor(array, requires_grad=requires_grad, name=name)
