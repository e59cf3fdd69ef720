"""The ops against PyTorch (make check-torch; needs python3-torch): forward values and input
gradients from torch.autograd in float64, through metacl.testing.compare(framework="torch"),
on every backend of this build. Not part of make check (PyTorch is a large optional package)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="make check-torch needs python3-torch")
F = torch.nn.functional

import metacl  # noqa: E402

BACKENDS = ["ref"] + (["opencl"] if metacl.devices().get("opencl") else [])


def rn(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# op -> (inputs, torch reference, compare() keywords)
CASES = {
    "add": ([rn(1, 3, 4), rn(2, 3, 4)], lambda a, b: a + b, {}),
    "mul": ([rn(1, 3, 4), rn(2, 3, 4)], lambda a, b: a * b, {}),
    "bias_add": ([rn(1, 3, 4), rn(2, 4)], lambda x, b: x + b, {}),
    "relu": ([rn(1, 3, 5)], torch.relu, {}),
    "leaky_relu": ([rn(1, 3, 5)], lambda a: F.leaky_relu(a, 0.1), {"args": (0.1,)}),
    "elu": ([rn(1, 3, 5)], lambda a: F.elu(a, 0.5), {"args": (0.5,)}),
    "sigmoid": ([rn(1, 3, 5)], torch.sigmoid, {}),
    "tanh": ([rn(1, 3, 5)], torch.tanh, {}),
    "gelu": ([rn(1, 3, 5)], F.gelu, {}),
    "bias_gelu": ([rn(1, 3, 5), rn(2, 5)], lambda x, b: F.gelu(x + b), {}),
    "bias_add2": ([rn(1, 3, 4), rn(2, 4), rn(3, 4)], lambda x, b, c: (x + b, x + c), {}),
    "exp": ([rn(1, 3, 5)], torch.exp, {}),
    "matmul": ([rn(1, 2, 3, 4), rn(2, 2, 4, 5)], torch.matmul, {"args": (0, 0)}),
    "sum": ([rn(1, 3, 4)], lambda a: a.sum().reshape(1), {}),
    "mean_last": ([rn(1, 3, 4)], lambda a: a.mean(-1), {}),
    "softmax": ([rn(1, 3, 6)], lambda a: torch.softmax(a, -1), {}),
    "log_softmax": ([rn(1, 3, 6)], lambda a: torch.log_softmax(a, -1), {}),
    "layer_norm": ([rn(1, 3, 6), rn(2, 6), rn(3, 6)], lambda x, g, b: F.layer_norm(x, (6,), g, b, 1e-5),
                   {"args": (1e-5,)}),
    "cross_entropy": ([rn(1, 4, 5), np.array([0, 3, 1, 2], np.float32)],
                      lambda lg, t: F.cross_entropy(lg, t.long()).reshape(1), {"grad": [0]}),
    "conv2d": ([rn(1, 2, 3, 6, 6), rn(2, 4, 3, 3, 3), rn(3, 4)], lambda x, w, b: F.conv2d(x, w, b, 2, 1),
               {"args": (2, 1)}),
    "maxpool2d": ([rn(1, 1, 2, 4, 6)], lambda x: F.max_pool2d(x, 2), {}),
    "instance_norm": ([rn(1, 2, 3, 4, 4), rn(2, 3), rn(3, 3)],
                      lambda x, g, b: F.instance_norm(x, weight=g, bias=b, eps=1e-5), {"args": (1e-5,)}),
    "permute": ([rn(1, 2, 3, 4, 5)], lambda a: a.permute(0, 2, 1, 3), {"args": ((0, 2, 1, 3),)}),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_against_torch(name, backend):
    inputs, ref, kw = CASES[name]
    report = metacl.testing.compare(name, inputs, ref, framework="torch", backend=backend, seed=3, **kw)
    assert report.ok, str(report)


def test_a_wrong_torch_reference_is_caught():
    report = metacl.testing.compare("gelu", [rn(1, 4)], lambda a: F.gelu(a, approximate="tanh") * 1.01,
                                    framework="torch")
    assert not report.ok
