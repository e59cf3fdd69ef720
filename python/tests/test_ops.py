"""Every op of the op table from Python: forward against a NumPy implementation (refs.py),
backward against central finite differences of it (metacl.testing.compare), on every backend
of this build. Seeds are fixed (printed on failure by the report)."""

import numpy as np
import pytest

import metacl
from metacl import ops

import refs

R = np.random.default_rng


def backends():
    out = ["ref"]
    if metacl.devices().get("opencl"):
        out.append("opencl")
    return out


BACKENDS = backends()


def rn(seed, *shape, lo=None):
    a = R(seed).standard_normal(shape).astype(np.float32)
    return a if lo is None else (np.abs(a) + lo).astype(np.float32)


def pos(seed, *shape):
    return rn(seed, *shape, lo=0.5)


# name -> (inputs, reference(*arrays), dict(args=..., grad=..., pack=...))
CASES = {
    "add": ([rn(1, 3, 4), rn(2, 3, 4)], lambda a, b: a + b, {}),
    "sub": ([rn(1, 3, 4), rn(2, 3, 4)], lambda a, b: a - b, {}),
    "mul": ([rn(1, 3, 4), rn(2, 3, 4)], lambda a, b: a * b, {}),
    "scale": ([rn(1, 5)], lambda a: 0.7 * a, {"args": (0.7,)}),
    "bias_add": ([rn(1, 3, 4), rn(2, 4)], lambda x, b: x + b, {}),
    "copy": ([rn(1, 2, 3)], lambda a: a, {}),
    "relu": ([rn(1, 3, 5)], lambda a: np.maximum(a, 0), {}),
    "leaky_relu": ([rn(1, 3, 5)], lambda a: np.where(a > 0, a, 0.1 * a), {"args": (0.1,)}),
    "elu": ([rn(1, 3, 5)], lambda a: np.where(a > 0, a, 0.5 * (np.exp(a) - 1)), {"args": (0.5,)}),
    "sigmoid": ([rn(1, 3, 5)], lambda a: 1 / (1 + np.exp(-a)), {}),
    "tanh": ([rn(1, 3, 5)], np.tanh, {}),
    "gelu": ([rn(1, 3, 5)], refs.gelu, {}),
    "bias_gelu": ([rn(1, 3, 5), rn(2, 5)], lambda x, b: refs.gelu(x + b), {}),
    "bias_add2": ([rn(1, 3, 4), rn(2, 4), rn(3, 4)], lambda x, b, c: (x + b, x + c), {}),
    "exp": ([rn(1, 3, 5)], np.exp, {}),
    "log": ([pos(1, 3, 5)], np.log, {}),
    "matmul": ([rn(1, 2, 3, 4), rn(2, 2, 5, 4)], lambda a, b: a @ np.swapaxes(b, -1, -2), {"args": (0, 1)}),
    "sum": ([rn(1, 3, 4)], lambda a: np.array([a.sum()]), {}),
    "mean": ([rn(1, 3, 4)], lambda a: np.array([a.mean()]), {}),
    "sumsq": ([rn(1, 3, 4)], lambda a: np.array([(a * a).sum()]), {}),
    "sum_last": ([rn(1, 3, 4)], lambda a: a.sum(-1), {}),
    "mean_last": ([rn(1, 3, 4)], lambda a: a.mean(-1), {}),
    "softmax": ([rn(1, 3, 6)], refs.softmax, {}),
    "log_softmax": ([rn(1, 3, 6)], refs.log_softmax, {}),
    "layer_norm": ([rn(1, 3, 6), rn(2, 6), rn(3, 6)], lambda x, g, b: refs.layer_norm(x, g, b, 1e-5),
                   {"args": (1e-5,)}),
    "cross_entropy": ([rn(1, 4, 5), np.array([0, 3, -1, 2], np.float32)], refs.cross_entropy, {"grad": [0]}),
    "concat": ([rn(1, 2, 3), rn(2, 2, 4)], lambda a, b: np.concatenate([a, b], 1), {"args": (1,)}),
    "slice": ([rn(1, 3, 6)], lambda a: a[:, 1:4], {"args": (1, 1, 3)}),
    "reshape": ([rn(1, 2, 6)], lambda a: a.reshape(3, 4), {"args": ((3, 4),)}),
    "transpose": ([rn(1, 2, 3, 4)], lambda a: np.swapaxes(a, -1, -2), {}),
    "permute": ([rn(1, 2, 3, 4, 5)], lambda a: a.transpose(0, 2, 1, 3), {"args": ((0, 2, 1, 3),)}),
    "repeat_batch": ([rn(1, 2, 3)], lambda x: np.stack([x] * 3), {"args": (3,)}),
    "repeat_batch4": ([rn(1, 2, 3), rn(2, 2), rn(3, 2, 2, 2), rn(4, 2, 1)],
                      lambda a, b, c, d: tuple(np.repeat(t, 3, axis=0) for t in (a, b, c, d)),
                      {"args": (3, 1), "pack": lambda t: (t[0:4],)}),
    "one_hot": ([np.array([0, 2, 5, 1], np.float32)], lambda i: np.vstack([np.eye(4), np.zeros((1, 4))])[np.minimum(i.astype(int), 4)],
                {"args": (4,), "grad": []}),
    "embedding": ([rn(1, 5, 3), np.array([[4, 0], [2, 2]], np.float32)], lambda t, i: t[i.astype(int)],
                  {"grad": [0]}),
    "conv2d": ([rn(1, 1, 2, 5, 5), rn(2, 2, 2, 3, 3), rn(3, 2)], lambda x, w, b: refs.conv2d(x, w, b, 2, 1),
               {"args": (2, 1)}),
    "maxpool2d": ([rn(1, 1, 2, 4, 5)], refs.maxpool2d, {}),
    "instance_norm": ([rn(1, 2, 2, 3, 3), rn(2, 2), rn(3, 2)], lambda x, g, b: refs.instance_norm(x, g, b, 1e-5),
                      {"args": (1e-5,)}),
    "inorm_relu": ([rn(1, 2, 2, 3, 3), rn(2, 2), rn(3, 2)],
                   lambda x, g, b: np.maximum(refs.instance_norm(x, g, b, 1e-5), 0.0), {"args": (1e-5,)}),
    # H, W odd: the last row and column in the statistics, in no window
    "inorm_add_pool_relu": ([rn(1, 2, 2, 5, 5), pos(2, 2), rn(3, 2), rn(4, 2, 2, 5, 5)],
                            lambda x, g, b, s: np.maximum(refs.maxpool2d(refs.instance_norm(x, g, b, 1e-5) + s), 0.0),
                            {"args": (1e-5,)}),
    "inorm_pool_relu": ([rn(1, 2, 2, 4, 4), pos(2, 2), rn(3, 2)],
                        lambda x, g, b: refs.inorm_pool_relu(x, g, b, 1e-5), {"args": (1e-5,)}),
    # padding 1 goes between the convolution's tensors and the tail's (pack)
    "conv_inorm_pool_relu": ([rn(1, 1, 2, 4, 6), rn(2, 3, 2, 3, 3), rn(3, 3), pos(4, 3), rn(5, 3)],
                             lambda x, w, b, g, be: refs.inorm_pool_relu(refs.conv2d(x, w, b, 1, 1), g, be, 1e-5),
                             {"args": (1e-5,), "pack": lambda t: (t[0], t[1], t[2], 1, t[3], t[4])}),
    "srwm": ([rn(1, 1, 2, 3, 4) * 0.5, rn(2, 1, 2, 4, 4) * 0.3, rn(3, 1, 2, 4, 4) * 0.3, rn(4, 1, 2, 4, 4) * 0.3,
              rn(5, 1, 2, 4, 4) * 0.3], refs.srwm, {"pack": lambda t: (t[0], t[1:5])}),
    "attn_kv": ([rn(1, 3, 2, 4), rn(2, 3, 1, 4), rn(3, 3, 1, 3), rn(4, 4, 1, 4), rn(5, 4, 1, 3)],
                lambda q, k, v, kb, vb: refs.attn_kv(q, k, v, kb, vb, 3, 2, 0, 0.5, 0.0),
                {"args": ({"n": 3, "start": 2, "mask": 0, "scale": 0.5, "alibi": 0.0},), "grad": [0, 1, 2]}),
    "rel_attn": ([rn(1, 1, 2, 2, 3), rn(2, 1, 2, 2, 3), rn(3, 1, 4, 2, 3), rn(4, 1, 4, 2, 2), rn(5, 4, 2, 3)],
                 lambda qc, qp, k, v, r: refs.rel_attn(qc, qp, k, v, r, 0.6), {"args": (0.6,)}),
    "rel_attn_window": ([rn(1, 1, 2, 2, 3), rn(2, 1, 2, 2, 3), rn(3, 1, 4, 2, 3), rn(4, 1, 4, 2, 2), rn(5, 4, 2, 3)],
                        lambda qc, qp, k, v, r: refs.rel_attn(qc, qp, k, v, r, 0.6, 1), {"args": (0.6, 1)}),
    "grad_preproc": ([np.array([[0.3, -2.0], [1e-6, -3e-6]], np.float32)], lambda z: refs.grad_preproc(z, 10.0),
                     {"args": (10.0,)}),
    "smn_write": ([rn(1, 3, 4), np.array([5, 0, 11], np.float32), rn(2, 3, 2), rn(3, 4, 2), rn(4, 4), rn(5, 4, 4),
                   rn(6, 4), rn(7, 1, 4), rn(8, 1)],
                  lambda m0, i, zs, a, b, c, d, e, f: refs.smn_write(m0, i, zs, a, b, c, d, e, f, 0.1),
                  {"pack": lambda t: (t[0], t[1], t[2], t[3:9]), "args": (0.1,), "grad": [0, 2, 3, 4, 5, 6, 7, 8]}),
    # avg and g share signs per element (z never cancels); no backward
    "smn_avg_z": ([np.array([[0.3, -2.0], [1e-6, 0.5]], np.float32), np.array([[0.1, -1.0], [2e-6, 4.0]], np.float32),
                   np.array([3, 0, 2], np.float32)],
                  lambda a, g, i: refs.smn_avg_z(a, g, i, 0.9, 0.5, 0.25, 10.0),
                  {"args": (0.9, 0.5, 0.25, 10.0), "grad": []}),
}

# ops tested by their own functions below, with the reason
SEPARATE = {
    "dropout": "random mask: checked by its properties (test_dropout)",
    "dropout_keyed": "random mask: checked by its properties (test_dropout)",
    "dropout_segments": "random mask: each segment's is dropout_keyed's (test_dropout_segments_relu)",
    "dropout_relu": "random mask: relu then dropout (test_dropout_segments_relu)",
    "add_dropout": "random mask: a + dropout_keyed's (test_add_dropout)",
    "add_dropout_keyed": "random mask: a + dropout_keyed's (test_add_dropout)",
    "bias_dropout_relu": "random mask: dropout_keyed's of relu(x + b) (test_bias_dropout_relu)",
    "bias_dropout_relu_keyed": "random mask: dropout_keyed's of relu(x + b) (test_bias_dropout_relu)",
    "bias_add_dropout": "random mask: a + dropout_keyed's of x + b (test_bias_add_dropout)",
    "bias_add_dropout_keyed": "random mask: a + dropout_keyed's of x + b (test_bias_add_dropout)",
    "inorm_pool_relu_dropout": "random mask: dropout's of inorm_pool_relu (test_inorm_pool_relu_dropout)",
    "inorm_pool_relu_dropout_segments": "random mask: dropout_segments' of inorm_pool_relu "
                                        "(test_inorm_pool_relu_dropout)",
    "conv_inorm_pool_relu_dropout": "random mask: inorm_pool_relu_dropout's of conv2d "
                                    "(test_conv_inorm_pool_relu_dropout)",
    "conv_inorm_pool_relu_dropout_segments": "random mask: inorm_pool_relu_dropout_segments' of conv2d "
                                             "(test_conv_inorm_pool_relu_dropout)",
    "kv_push": "in place, no output: test_kv_push",
    "wcst_act": "in place, random draws: test_wcst_act",
    "smn_write_eff": "in place, no output: test_smn_write_eff",
    "smn_avg_write": "in place, no output: test_smn_avg_write",
    "smn_write_add": "no public function, a mode flag: test_smn_write_add (its gradients: test-ops)",
    "sgd_step": "in-place optimizer update: test_optimizer_updates",
    "adam_step": "in-place optimizer update: test_optimizer_updates",
    "clip_scale": "in-place optimizer update: test_optimizer_updates",
    "dyn_step": "in-place optimizer update: test_optimizer_updates",
}


def test_every_op_is_reachable_and_tested():
    names = set(ops.__all__) - {"run", "AttnOpts", "OP_NAMES"}
    for op in metacl.ops.OP_NAMES:
        assert op in names, "op %s of ops.def has no Python function" % op
    untested = names - set(CASES) - set(SEPARATE)
    assert not untested, "functions without a test: %s" % sorted(untested)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op(name, backend):
    inputs, ref, kw = CASES[name]
    report = metacl.testing.compare(name, inputs, ref, backend=backend, seed=7, **kw)
    assert report.ok, str(report)


def test_compare_catches_a_wrong_reference():
    inputs, ref, kw = CASES["softmax"]
    report = metacl.testing.compare("softmax", inputs, lambda a: ref(a) * 1.001)
    assert not report.ok and "FAILED" in str(report)
    # a wrong gradient: the forward agrees, the reference's derivative does not
    report = metacl.testing.compare("exp", [rn(1, 4)], lambda a: np.exp(a) + 1e-3 * np.sin(50 * a),
                                    atol=2e-3)
    assert not report.ok and "gradient of input 0: FAILED" in str(report)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout_segments_relu(backend):
    with metacl.Context(backend, seed=3) as ctx:
        x = ctx.tensor(rn(2, 4, 6, 10), requires_grad=True)
        xv = x.numpy()
        # segment s of 60 elements: dropout_keyed's mask with stream 5 + 3 s
        y = ops.dropout_segments(x, 0.25, 11, 5, 3, 60).numpy().reshape(4, 60)
        for s in range(4):
            seg = ctx.tensor(xv.reshape(4, 60)[s])
            assert np.array_equal(y[s], ops.dropout_keyed(seg, 0.25, 11, 5 + 3 * s, 0).numpy())
        # relu first: relu alone without dropout; else relu's values, kept or 0
        assert np.array_equal(ops.dropout_relu(x, 0.25, 0).numpy(), np.maximum(xv, 0))
        r = ops.dropout_relu(x, 0.25, 1)
        rv = r.numpy()
        kept = rv != 0
        assert np.all(xv[kept] > 0) and np.allclose(rv[kept], xv[kept] / 0.75, rtol=1e-6)
        metacl.backward(ops.sum(r))
        assert np.allclose(x.grad.numpy(), kept / 0.75)  # 0 where dropped or x <= 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_dropout(backend):
    with metacl.Context(backend, seed=3) as ctx:
        a = ctx.tensor(rn(1, 8, 16), requires_grad=True)
        x = ctx.tensor(rn(2, 8, 16), requires_grad=True)
        av, xv = a.numpy(), x.numpy()
        assert np.array_equal(ops.add_dropout(a, x, 0.25, 0).numpy(), av + xv)  # the add alone
        y = ops.add_dropout_keyed(a, x, 0.25, 11, 2, 0)
        d = ops.dropout_keyed(x, 0.25, 11, 2, 0).numpy()
        assert np.array_equal(y.numpy(), av + d)  # the same mask, the same floats
        metacl.backward(ops.sum(y))
        assert np.array_equal(a.grad.numpy(), np.ones_like(av))
        assert np.allclose(x.grad.numpy(), (d != 0) / 0.75)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bias_dropout_relu(backend):
    with metacl.Context(backend, seed=3) as ctx:
        x = ctx.tensor(rn(1, 8, 16), requires_grad=True)
        b = ctx.tensor(rn(2, 16), requires_grad=True)
        t = x.numpy() + b.numpy()  # float32: the op's rounded sum
        assert np.array_equal(ops.bias_dropout_relu(x, b, 0.25, 0).numpy(), np.maximum(t, 0))
        y = ops.bias_dropout_relu_keyed(x, b, 0.25, 11, 2, 0)
        d = ops.dropout_keyed(ops.bias_add(x, b), 0.25, 11, 2, 0).numpy()
        assert np.array_equal(y.numpy(), np.where(t > 0, d, 0))  # relu, then the same mask
        metacl.backward(ops.sum(y))
        gx = ((d != 0) & (t > 0)) / np.float32(0.75)
        assert np.allclose(x.grad.numpy(), gx)
        assert np.allclose(b.grad.numpy(), gx.sum(axis=0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_inorm_pool_relu_dropout(backend):
    xv, gv, bv = rn(1, 2, 3, 6, 8), pos(2, 3), rn(3, 3)
    with metacl.Context(backend, seed=3) as ctx:
        x, g, b = ctx.tensor(xv, requires_grad=True), ctx.tensor(gv), ctx.tensor(bv)
        plain = ops.inorm_pool_relu(x, g, b, 1e-5)
        # not training: the op alone, no mask
        assert np.array_equal(ops.inorm_pool_relu_dropout(x, g, b, 1e-5, 0.25, 0).numpy(), plain.numpy())
        # two segments of 36 (one image each): dropout_segments' mask of the plain op's output, and
        # the gradient of the two ops in a row, bit for bit
        y = ops.inorm_pool_relu_dropout_segments(x, g, b, 1e-5, 0.25, 11, 5, 3, 2)
        d = ops.dropout_segments(plain, 0.25, 11, 5, 3, 36)
        assert np.array_equal(y.numpy(), d.numpy())
        metacl.backward(ops.sum(y))
        x2 = ctx.tensor(xv, requires_grad=True)
        metacl.backward(ops.sum(ops.dropout_segments(ops.inorm_pool_relu(x2, g, b, 1e-5), 0.25, 11, 5, 3, 36)))
        assert np.array_equal(x.grad.numpy(), x2.grad.numpy())
    # training: the context's next stream, as dropout draws it
    outs = []
    for fused in (True, False):
        with metacl.Context(backend, seed=3) as ctx:
            x, g, b = ctx.tensor(xv), ctx.tensor(gv), ctx.tensor(bv)
            outs.append((ops.inorm_pool_relu_dropout(x, g, b, 1e-5, 0.25, 1) if fused else
                         ops.dropout(ops.inorm_pool_relu(x, g, b, 1e-5), 0.25, 1)).numpy())
    assert np.array_equal(outs[0], outs[1]) and np.count_nonzero(outs[0]) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_conv_inorm_pool_relu_dropout(backend):
    """the op against conv2d then inorm_pool_relu (with the same dropout): values and the five
    gradients bit for bit, with one and two input channels, padding 1 and 0, dropout segments"""
    for xs, ws, pad, nseg in [((2, 1, 8, 10), (4, 1, 3, 3), 1, 2), ((3, 2, 7, 9), (5, 2, 3, 3), 0, 3)]:
        got = []
        for fused in (True, False):
            with metacl.Context(backend, seed=3) as ctx:
                ts = [ctx.tensor(a, requires_grad=True) for a in
                      (rn(1, *xs), rn(2, *ws) * 0.4, rn(3, ws[0]), pos(4, ws[0]), rn(5, ws[0]))]
                x, w, b, g, be = ts
                if fused:
                    y = ops.conv_inorm_pool_relu_dropout_segments(x, w, b, pad, g, be, 1e-5, 0.25, 11, 5, 3, nseg)
                else:
                    y = ops.inorm_pool_relu_dropout_segments(ops.conv2d(x, w, b, 1, pad), g, be, 1e-5, 0.25, 11, 5,
                                                             3, nseg)
                go = ctx.tensor(rn(6, *y.numpy().shape))
                metacl.backward(ops.sum(ops.mul(y, go)))
                got.append([y.numpy()] + [t.grad.numpy() for t in ts])
        assert np.count_nonzero(got[0][0]) > 0
        for a, c in zip(*got):
            assert np.array_equal(a, c)
    # training: the context's next stream, as inorm_pool_relu_dropout draws it
    outs = []
    for fused in (True, False):
        with metacl.Context(backend, seed=3) as ctx:
            x, w, b, g, be = [ctx.tensor(a) for a in (rn(1, 2, 1, 6, 6), rn(2, 3, 1, 3, 3), rn(3, 3), pos(4, 3),
                                                      rn(5, 3))]
            outs.append((ops.conv_inorm_pool_relu_dropout(x, w, b, 1, g, be, 1e-5, 0.25, 1) if fused else
                         ops.inorm_pool_relu_dropout(ops.conv2d(x, w, b, 1, 1), g, be, 1e-5, 0.25, 1)).numpy())
    assert np.array_equal(outs[0], outs[1]) and np.count_nonzero(outs[0]) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_bias_add_dropout(backend):
    with metacl.Context(backend, seed=3) as ctx:
        a = ctx.tensor(rn(1, 8, 16), requires_grad=True)
        x = ctx.tensor(rn(2, 8, 16), requires_grad=True)
        b = ctx.tensor(rn(3, 16), requires_grad=True)
        av, t = a.numpy(), x.numpy() + b.numpy()  # float32: the op's rounded sum
        assert np.array_equal(ops.bias_add_dropout(a, x, b, 0.25, 0).numpy(), av + t)
        y = ops.bias_add_dropout_keyed(a, x, b, 0.25, 11, 2, 0)
        d = ops.dropout_keyed(ops.bias_add(x, b), 0.25, 11, 2, 0).numpy()
        assert np.array_equal(y.numpy(), av + d)  # the same mask, the same floats
        metacl.backward(ops.sum(y))
        assert np.array_equal(a.grad.numpy(), np.ones_like(av))
        gx = (d != 0) / np.float32(0.75)
        assert np.allclose(x.grad.numpy(), gx)
        assert np.allclose(b.grad.numpy(), gx.sum(axis=0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout(backend):
    with metacl.Context(backend, seed=3) as ctx:
        x = ctx.tensor(pos(1, 64, 32), requires_grad=True)
        assert np.array_equal(ops.dropout(x, 0.0, 1).numpy(), x.numpy())
        assert np.array_equal(ops.dropout(x, 0.5, 0).numpy(), x.numpy())
        y = ops.dropout_keyed(x, 0.25, 11, 2, 0)
        yv, xv = y.numpy(), x.numpy()
        kept = yv != 0
        assert np.allclose(yv[kept], xv[kept] / 0.75, rtol=1e-6)
        assert abs(kept.mean() - 0.75) < 0.03  # 2048 draws: 4 standard deviations
        y2 = ops.dropout_keyed(x, 0.25, 11, 2, 0).numpy()
        assert np.array_equal(yv, y2)  # keyed: the same mask
        metacl.backward(ops.sum(y))
        assert np.allclose(x.grad.numpy(), kept / 0.75)


@pytest.mark.parametrize("backend", BACKENDS)
def test_kv_push(backend):
    with metacl.Context(backend) as ctx:
        buf = ctx.zeros((4, 1, 2))
        x = ctx.tensor(np.arange(6, dtype=np.float32).reshape(3, 1, 2))
        assert ops.kv_push(buf, x, 3) is None
        want = np.zeros((4, 1, 2), np.float32)
        for r in range(3):
            want[(3 + r) % 4] = np.arange(6, dtype=np.float32).reshape(3, 1, 2)[r]
        assert np.array_equal(buf.numpy(), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_smn_write_eff(backend):
    # in place: M and E at the written elements become g_phi's value and W + it (smn_write's
    # and add's floats); every other element of both stays
    m0, idx, zs = rn(1, 3, 4), np.array([5, 0, 11], np.float32), rn(2, 3, 2)
    phi = [rn(3, 4, 2), rn(4, 4), rn(5, 4, 4), rn(6, 4), rn(7, 1, 4), rn(8, 1)]
    w, e0 = rn(9, 3, 4), rn(10, 3, 4)
    want = refs.smn_write(m0, idx, zs, *phi, 0.1)
    with metacl.Context(backend) as ctx:
        m, e = ctx.tensor(m0), ctx.tensor(e0)
        ins = [m, ctx.tensor(idx), ctx.tensor(zs)] + [ctx.tensor(p) for p in phi] + [ctx.tensor(w), e]
        assert ops.smn_write_eff(*ins, f=[0.1]) is None
        got_m, got_e = m.numpy(), e.numpy()
    np.testing.assert_allclose(got_m, want, rtol=1e-5, atol=1e-6)
    written = np.zeros(12, bool)
    written[[5, 0, 11]] = True
    written = written.reshape(3, 4)
    assert np.array_equal(got_e[~written], e0[~written])
    assert np.array_equal(got_e[written], (w + got_m)[written])


@pytest.mark.parametrize("backend", BACKENDS)
def test_smn_avg_write(backend):
    # in place: I becomes gamma I + beta1 G everywhere, zs smn_avg_z's at the (increasing)
    # indices, M and E at them g_phi(zs) and W + it; every other element of M and E stays
    m0, idx = rn(1, 3, 4), np.array([0, 5, 11], np.float32)
    phi = [rn(3, 4, 2), rn(4, 4), rn(5, 4, 4), rn(6, 4), rn(7, 1, 4), rn(8, 1)]
    w, e0, i0, g = rn(9, 3, 4), rn(10, 3, 4), rn(11, 3, 4), rn(12, 3, 4)
    hp = [0.9, 0.5, 0.25, 10.0]  # gamma, beta1, beta2, P
    want_i, want_zs = refs.smn_avg_z(i0, g, idx, *hp)
    want_m = refs.smn_write(m0, idx, want_zs.astype(np.float32), *phi, 0.1)
    with metacl.Context(backend) as ctx:
        m, e, i, zs = ctx.tensor(m0), ctx.tensor(e0), ctx.tensor(i0), ctx.tensor(np.zeros((3, 2), np.float32))
        ins = [m, ctx.tensor(idx), zs] + [ctx.tensor(p) for p in phi] + [ctx.tensor(w), e, i, ctx.tensor(g)]
        assert ops.smn_avg_write(*ins, f=[0.1] + hp) is None
        got_m, got_e, got_i, got_zs = m.numpy(), e.numpy(), i.numpy(), zs.numpy()
    np.testing.assert_allclose(got_i, want_i, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_zs, want_zs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_m, want_m, rtol=1e-5, atol=1e-6)
    written = np.zeros(12, bool)
    written[[0, 5, 11]] = True
    written = written.reshape(3, 4)
    assert np.array_equal(got_m[~written], m0[~written])
    assert np.array_equal(got_e[~written], e0[~written])
    assert np.array_equal(got_e[written], (w + got_m)[written])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("zero", [0, 1])
def test_smn_write_add(backend, zero):
    # W + smn_write's M (increasing indices); zero = 1: M0 is taken as zeros, not read
    m0, idx, zs = rn(1, 3, 4), np.array([0, 5, 11], np.float32), rn(2, 3, 2)
    phi = [rn(3, 4, 2), rn(4, 4), rn(5, 4, 4), rn(6, 4), rn(7, 1, 4), rn(8, 1)]
    w = rn(9, 3, 4)
    want = w + refs.smn_write(np.zeros_like(m0) if zero else m0, idx, zs, *phi, 0.1)
    with metacl.Context(backend) as ctx:
        ins = [ctx.tensor(m0), ctx.tensor(idx), ctx.tensor(zs)] + [ctx.tensor(p) for p in phi] + [ctx.tensor(w)]
        got = ops.smn_write_add(*ins, f=[0.1], i=[zero]).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_wcst_act(backend):
    # logits favour action 2 by 40: every draw takes it; rule 1 (shape) of cards whose shape is
    # 2 except the last: rewards 1, 1, 1, -1; the episode is not perfect, so the streak resets
    with metacl.Context(backend) as ctx:
        st = ctx.tensor(np.array([1, 2, 0, 0, 0], np.float32))
        lg = ctx.tensor(np.array([[0, 0, 40, 0]] * 4, np.float32))
        cards = ctx.tensor(np.array([[0, 2, 1], [1, 2, 3], [3, 2, 0], [2, 1, 0]], np.float32))
        act, rew = ctx.zeros(4), ctx.zeros(4)
        assert ops.wcst_act(st, lg, cards, act, rew, 7, 1, 0, 3, 1.0, -1.0) is None
        assert np.array_equal(act.numpy(), [2, 2, 2, 2])
        assert np.array_equal(rew.numpy(), [1, 1, 1, -1])
        assert np.array_equal(st.numpy(), [1, 0, 0, 0, 0])


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimizer_updates(backend):
    p0, g0 = rn(1, 6), rn(2, 6)
    with metacl.Context(backend) as ctx:
        p, g, mom = ctx.tensor(p0), ctx.tensor(g0), ctx.zeros(6)
        ops.sgd_step(p, g, mom, f=[0.1, 0.9, 0.01])
        m = g0 + 0.01 * p0
        assert np.allclose(p.numpy(), p0 - 0.1 * m, rtol=1e-6)
        p, m, v = ctx.tensor(p0), ctx.zeros(6), ctx.zeros(6)
        ops.adam_step(p, g, m, v, f=[0.01, 0.9, 0.999, 1e-8, 0.0], i=[0, 1])
        mh = (0.1 * g0) / 0.1
        vh = (0.001 * g0 * g0) / 0.001
        assert np.allclose(p.numpy(), p0 - 0.01 * mh / (np.sqrt(vh) + 1e-8), rtol=1e-5, atol=1e-7)
        gg = ctx.tensor(g0)
        sq = ops.sumsq(gg)
        ops.clip_scale(gg, sq, f=[0.5])
        norm = np.sqrt((g0 * g0).sum())
        assert np.allclose(gg.numpy(), g0 * min(1.0, 0.5 / (norm + 1e-6)), rtol=1e-5)
        p, w0 = ctx.tensor(p0), ctx.tensor(g0)
        ops.dyn_step(p, g, w0, f=[0.1, 0.02])
        assert np.allclose(p.numpy(), (p0 - 0.1 * g0) + 0.02 * (g0 - p0), rtol=1e-6)
