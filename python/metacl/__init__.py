"""metacl — meta-learned continual learning on any OpenCL device, from Python.

A pure-Python package over the C library libmetacl (ctypes; NumPy in and out):

    import numpy as np, metacl
    with metacl.Context("ref", seed=1) as ctx:
        w = ctx.tensor(np.ones((3, 2), np.float32), requires_grad=True)
        x = ctx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
        loss = metacl.ops.sum(x @ w)
        metacl.backward(loss)
        print(loss.item(), w.grad.numpy())

metacl.devices() lists the backends and OpenCL devices; metacl.ops holds every op of the op
table; metacl.load() opens a shipped or trained model; metacl.data the prepared data sets;
metacl.testing.compare checks an op on a device against your own reference. See doc/python.md.
"""

from . import _lib, _paths
from .core import Context, Tensor, backward, devices, tensor
from .errors import (BackendError, Error, FormatError, InvalidError, IOError, NullError,
                     OutOfMemoryError, ShapeError, StateError, UnsupportedError)
from . import ops

__version__ = _paths.VERSION
library_path = _lib.lib._name

from . import data, models, testing  # noqa: E402  (they use the names above)
from .models import load  # noqa: E402

__all__ = ["Context", "Tensor", "backward", "devices", "tensor", "ops", "load", "data",
           "models", "testing", "Error", "NullError", "InvalidError", "ShapeError",
           "OutOfMemoryError", "BackendError", "UnsupportedError", "StateError", "IOError",
           "FormatError"]
