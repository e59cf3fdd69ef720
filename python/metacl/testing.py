"""testing.py — check an op of metacl on a device against your own reference.

    import numpy as np, metacl
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    report = metacl.testing.compare("softmax", [x], lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True),
                                    backend="opencl")
    assert report.ok, report

compare() runs the op forward on the chosen backend, compares each output with what your
reference function returns, then runs the backward with a fixed random output gradient and
compares the input gradients with the reference's: from PyTorch autograd when the reference
function takes and returns torch tensors (`framework="torch"`), else with central finite
differences of the reference function in float64 (NumPy).
"""

import numpy as np

from . import ops
from .core import Context, backward
from .errors import InvalidError

# Tolerances: float32 arithmetic in a different order than the reference, and (finite
# differences) the O(h^2) truncation of a central difference with h = 1e-3 in float64.
FWD_RTOL, FWD_ATOL = 1e-4, 1e-5
BWD_RTOL, BWD_ATOL = 2e-3, 2e-4


class Report:
    """The outcome of compare(): ok, and per output / per input the largest errors."""

    def __init__(self, op, backend):
        self.op, self.backend = op, backend
        self.lines, self.ok = [], True

    def add(self, what, got, want, rtol, atol):
        got = np.asarray(got, dtype=np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            self.ok = False
            self.lines.append("%s: shape %s, reference %s" % (what, got.shape, want.shape))
            return
        err = np.abs(got - want)
        bad = err > atol + rtol * np.abs(want)
        finite = np.isfinite(got).all() and np.isfinite(want).all()
        ok = finite and not bad.any()
        self.ok &= ok
        self.lines.append("%s: %s max abs err %.3g (rtol %g, atol %g)%s" % (
            what, "ok" if ok else "FAILED", float(err.max()) if err.size else 0.0, rtol, atol,
            "" if finite else ", non-finite values"))

    def __bool__(self):
        return self.ok

    def __str__(self):
        return "%s on %s: %s\n  %s" % (self.op, self.backend, "ok" if self.ok else "FAILED",
                                       "\n  ".join(self.lines))

    __repr__ = __str__


def _finite_diff(fn, arrays, k, gout, rel=1e-3):
    """d <fn(arrays), gout> / d arrays[k] by central differences in float64, with the step
    relative to each element (rel·max(|x|, 1e-3)), so an op with a threshold near a small
    input is not stepped across it."""
    x = arrays[k].astype(np.float64)
    g = np.zeros_like(x)
    flat = x.reshape(-1)
    for j in range(flat.size):
        old = flat[j]
        h = rel * max(abs(old), 1e-3)
        vals = []
        for s in (+h, -h):
            flat[j] = old + s
            args = [a.astype(np.float64) if i != k else x for i, a in enumerate(arrays)]
            out = fn(*args)
            outs = _flatten(out)
            vals.append(sum(float((np.asarray(o, dtype=np.float64) * go).sum()) for o, go in zip(outs, gout)))
        flat[j] = old
        g.reshape(-1)[j] = (vals[0] - vals[1]) / (2 * h)
    return g


def _flatten(out):
    if isinstance(out, (list, tuple)):
        return [x for o in out for x in _flatten(o)]
    return [out]


def compare(op, inputs, reference, *, args=(), kwargs=None, backend="ref", device=None, grad=None,
            seed=1, framework="numpy", rtol=None, atol=None, backward_check=True, pack=None):
    """Run metacl.ops.<op>(*tensors(inputs), *args, **kwargs) on `backend` and compare with
    reference(*inputs). inputs: float32 NumPy arrays; grad: indices of the inputs whose
    gradient is checked (default: all); pack: a function from the list of input tensors to
    the op's leading arguments, for ops taking lists (default: the tensors in order). The
    op's outputs (nested lists flattened) are compared in order with the reference's.
    Returns a Report (truthy when everything matched); prints nothing. `seed` (listed in the
    report) draws the output gradient."""
    fn = getattr(ops, op, None)
    if fn is None or op not in ops.__all__:
        raise InvalidError("compare: unknown op '%s' (see metacl.ops.OP_NAMES)" % op)
    kwargs = dict(kwargs or {})
    arrays = [np.ascontiguousarray(np.asarray(a, dtype=np.float32)) for a in inputs]
    grad = list(range(len(arrays))) if grad is None else list(grad)
    frtol, fatol = (rtol or FWD_RTOL), (atol or FWD_ATOL)
    report = Report(op, backend)
    report.lines.append("seed %d" % seed)
    with Context(backend, device=device, seed=seed) as ctx:
        ts = [ctx.tensor(a, requires_grad=(i in grad and backward_check)) for i, a in enumerate(arrays)]
        lead = tuple(pack(ts)) if pack else tuple(ts)
        outs = _flatten(fn(*lead, *args, **kwargs))
        got = [o.numpy() for o in outs]
        if framework == "torch":
            import torch
            tin = [torch.tensor(a, dtype=torch.float64, requires_grad=i in grad) for i, a in enumerate(arrays)]
            touts = _flatten(reference(*tin))
            want = [t.detach().numpy() for t in touts]
        else:
            want = _flatten(reference(*[a.astype(np.float64) for a in arrays]))
        for k, (g, w) in enumerate(zip(got, want)):
            report.add("output %d" % k, g, w, frtol, fatol)
        if len(got) != len(want):
            report.ok = False
            report.lines.append("the op gives %d outputs, the reference %d" % (len(got), len(want)))
        if not backward_check or not grad or not report.ok:
            return report
        rng = np.random.default_rng(seed)
        gouts = [rng.standard_normal(g.shape).astype(np.float32) for g in got]
        loss = None
        for o, go in zip(outs, gouts):
            term = ops.sum(ops.mul(o, ctx.tensor(go)))
            loss = term if loss is None else ops.add(loss, term)
        backward(loss)
        brtol, batol = (rtol or BWD_RTOL), (atol or BWD_ATOL)
        if framework == "torch":
            import torch
            total = sum((t * torch.tensor(go, dtype=torch.float64)).sum() for t, go in zip(touts, gouts))
            total.backward()
        for i in grad:
            g = ts[i].grad
            gv = g.numpy() if g is not None else np.zeros_like(arrays[i])
            if framework == "torch":
                wv = tin[i].grad.numpy() if tin[i].grad is not None else np.zeros_like(arrays[i])
            else:
                wv = _finite_diff(reference, arrays, i, gouts)
            report.add("gradient of input %d" % i, gv, wv, brtol, batol)
    return report
