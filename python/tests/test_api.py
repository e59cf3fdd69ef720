"""Contexts, tensors, autograd, errors and lifetimes of the Python package."""

import os

import numpy as np
import pytest

import metacl
from metacl import ops


def test_devices_lists_the_reference_backend():
    d = metacl.devices()
    assert "ref" in d and isinstance(d.get("opencl", []), list)


def test_numpy_round_trip_and_autograd():
    with metacl.Context("ref", seed=5) as ctx:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        t = ctx.tensor(a, requires_grad=True)
        assert t.shape == (3, 4) and t.requires_grad and t.grad is None
        assert np.array_equal(t.numpy(), a)
        loss = ops.sum(ops.mul(t, t))
        metacl.backward(loss)
        assert loss.item() == float((a * a).sum())
        assert np.array_equal(t.grad.numpy(), 2 * a)
        metacl.backward(loss)  # the tape is kept: a second backward accumulates
        assert np.array_equal(t.grad.numpy(), 4 * a)
        t.zero_grad()
        with ctx.no_grad():
            assert not ctx.grad_enabled
            u = ops.scale(t, 2.0)
        assert ctx.grad_enabled
        with pytest.raises(metacl.Error):
            metacl.backward(ops.sum(u))  # nothing recorded: no path to a leaf
        assert np.array_equal((t * 2.0).numpy(), 2 * a)
        assert np.array_equal((t @ ctx.tensor(np.eye(4, dtype=np.float32))).numpy(), a)


def test_views_and_detach():
    with metacl.Context("ref") as ctx:
        t = ctx.tensor(np.arange(8, dtype=np.float32))
        v = t.view((2, 2), offset=4)
        assert np.array_equal(v.numpy(), [[4, 5], [6, 7]])
        v.fill(1.0)
        assert t.numpy()[4:].tolist() == [1, 1, 1, 1]
        assert np.array_equal(t.detach().numpy(), t.numpy())
        with pytest.raises(metacl.Error):
            t.view((3, 3))  # larger than the buffer


def test_dtype_and_layout_are_refused_not_converted():
    with metacl.Context("ref") as ctx:
        with pytest.raises(TypeError, match="float32"):
            ctx.tensor(np.zeros(3))  # float64
        with pytest.raises(TypeError):
            ctx.tensor([1.0, 2.0])
        with pytest.raises(ValueError, match="contiguous"):
            ctx.tensor(np.zeros((4, 4), np.float32)[:, ::2])
        with pytest.raises(metacl.InvalidError):
            ctx.tensor(np.zeros((1, 1, 1, 1, 2), np.float32))
        t = ctx.zeros((2, 2))
        with pytest.raises(ValueError):
            t.write(np.zeros(3, np.float32))


def test_errors_carry_the_library_message():
    with metacl.Context("ref") as ctx:
        a, b = ctx.zeros((2, 3)), ctx.zeros((2, 3))
        with pytest.raises(metacl.ShapeError, match="inner dims") as e:
            ops.matmul(a, b, 0, 0)
        assert e.value.status == 3 and isinstance(e.value, ValueError)
        with pytest.raises(metacl.InvalidError):
            ops.dropout(a, 1.5, 1)
        with pytest.raises(TypeError):
            ops.add(a, 1.0)
        with pytest.raises(TypeError):
            ops.add(a)
        # the context stays usable after an error
        assert np.array_equal(ops.add(a, b).numpy(), np.zeros((2, 3)))
        with metacl.Context("ref") as other:
            with pytest.raises(metacl.InvalidError, match="another context"):
                ops.add(a, other.zeros((2, 3)))


def test_freed_tensors_and_closed_contexts_raise():
    ctx = metacl.Context("ref")
    t = ctx.zeros((2,))
    r = ops.scale(t, 2.0)
    ctx.reset()  # the op's result stays valid: Python holds a reference
    assert r.numpy().tolist() == [0.0, 0.0]
    t.free()
    with pytest.raises(metacl.StateError):
        t.numpy()
    ctx.close()
    with pytest.raises(metacl.StateError):
        r.numpy()
    with pytest.raises(metacl.StateError):
        ctx.zeros((1,))
    ctx.close()  # idempotent


def test_bad_backend_and_missing_device():
    with pytest.raises(metacl.InvalidError):
        metacl.Context("cuda")
    with pytest.raises(metacl.Error):
        metacl.Context("opencl", device="no-such-device-xyz")
    with pytest.raises(metacl.InvalidError):
        metacl.Context("ref", threads=0)


def test_corrupt_checkpoint_raises(tmp_path):
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"MCLCKPT\0" + os.urandom(64))
    with pytest.raises(metacl.Error):
        metacl.load(str(bad))
    empty = tmp_path / "empty.ckpt"
    empty.write_bytes(b"")
    with pytest.raises(metacl.Error):
        metacl.load(str(empty))
    with pytest.raises(metacl.IOError):
        metacl.load("no-such-model-name")


def test_run_any_op_by_name():
    with metacl.Context("ref") as ctx:
        x = ctx.tensor(np.array([[1, 2], [3, 4]], np.float32))
        (y,) = ops.run("transpose", [x])
        assert np.array_equal(y.numpy(), [[1, 3], [2, 4]])
        y, mean, rstd = ops.run("layer_norm", [x, ctx.tensor(np.ones(2, np.float32)),
                                               ctx.zeros((2,))], f=[1e-5])
        assert mean.numpy().tolist() == [1.5, 3.5]
        with pytest.raises(metacl.InvalidError):
            ops.run("no_such_op", [x])
        with pytest.raises(TypeError):
            ops.run("add", [x])


def test_library_lookup(tmp_path):
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "METACL_LIBRARY"}
    code = "import metacl; print(metacl.library_path)"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    from metacl import _paths
    assert r.stdout.strip() in (_paths.BUILD_LIB, _paths.INSTALLED_LIB)
    env["METACL_LIBRARY"] = str(tmp_path / "nowhere.so")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert r.returncode != 0 and "METACL_LIBRARY" not in r.stdout and "nowhere.so" in r.stderr


def test_struct_mirrors_match_the_library():
    """Every struct the library describes (abi.h) is mirrored and was checked at import; a
    mirror with a field missing or out of order is caught (the check can fail)."""
    import ctypes
    import metacl.models  # noqa: F401 (imports its mirrors)
    from metacl import _lib, data
    described = []
    k = 0
    while _lib.abi_type(k):
        described.append(_lib.abi_type(k).decode())
        k += 1
    assert len(described) >= 13 and sorted(described) == sorted(_lib.CHECKED), (described, sorted(_lib.CHECKED))
    for ctype, cls in _lib.CHECKED.items():
        assert _lib.layout_errors(cls, ctype, leading=ctype == "mcl_dataset") == []

    class Short(ctypes.Structure):  # mcl_splitx_cfg without its last field
        _fields_ = data._SplitXCfg._fields_[:-1]

    class Swapped(ctypes.Structure):  # two fields of mcl_episode_cfg exchanged
        _fields_ = [("k_shot", ctypes.c_int), ("n_way", ctypes.c_int)] + data._EpisodeCfg._fields_[2:]

    assert any("bytes" in e for e in _lib.layout_errors(Short, "mcl_splitx_cfg"))
    assert any("n_way" in e for e in _lib.layout_errors(Swapped, "mcl_episode_cfg"))
    assert _lib.layout_errors(Short, "mcl_no_such_struct") == ["the library does not describe mcl_no_such_struct"]
    with pytest.raises(ImportError, match="does not match the library"):
        _lib.check_layout(Short, "mcl_splitx_cfg")
