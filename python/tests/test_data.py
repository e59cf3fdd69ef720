"""Data sets, episodes and streams from Python: shapes, determinism from (seed, stream), the
invariants the samplers document (sampler.h), and errors."""

import subprocess

import numpy as np
import pytest

import metacl
from metacl import data

from test_learners import METACL


@pytest.fixture(scope="module")
def fmnist(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    r = subprocess.run([METACL, "data", "prepare", "fmnist", "--data-dir", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return data.load("fmnist", split="train", data_dir=str(d)), data.load("fmnist", split="test", data_dir=str(d))


def test_dataset_arrays(fmnist):
    train, test = fmnist
    assert test.images.shape == (10000, 32, 32) and test.images.dtype == np.uint8
    assert test.labels.shape == (10000,) and sorted(set(test.labels.tolist())) == list(range(10))
    assert not test.images.flags.writeable
    assert test.content_side == 28 and 0 < test.mean < 1
    with pytest.raises(metacl.Error):
        data.load("no-such-set", data_dir="/nonexistent")
    with pytest.raises(metacl.InvalidError):
        data.load("fmnist", split="nope")


def test_from_arrays():
    imgs = np.zeros((4, 32, 32), np.uint8)
    ds = data.from_arrays(imgs, [0, 1, 1, 3])
    assert len(ds) == 4 and ds.n_classes == 3 and ds.classes.tolist() == [0, 1, 3]
    with pytest.raises(TypeError):
        data.from_arrays(imgs.astype(np.float32), [0, 1, 1, 3])
    with pytest.raises(ValueError):
        data.from_arrays(np.zeros((4, 28, 28), np.uint8), [0, 1, 1, 3])
    with pytest.raises(ValueError):
        data.from_arrays(imgs, [0, 1, -1, 3])


def test_episodes_are_a_function_of_the_seed(fmnist):
    _, test = fmnist
    eps = data.Episodes([(test, range(5)), (test, range(5, 10))], n_way=5, k_shot=3, n_query=2)
    a, b = eps.sample(data.Rng(7, 0)), eps.sample(data.Rng(7, 0))
    c = eps.sample(data.Rng(7, 1))
    assert all(np.array_equal(x.context[0], y.context[0]) for x, y in zip(a, b))
    assert not np.array_equal(a[0].context[0], c[0].context[0])
    t0 = a[0]
    assert len(t0.context[0]) == 15 and len(t0.query[0]) == 10 and len(t0.first[0]) == 0
    assert set(t0.context[1].tolist()) == set(range(5))
    assert set(test.labels[t0.context[0]]) <= set(range(5)) and set(test.labels[a[1].query[0]]) <= set(range(5, 10))
    assert not set(t0.context[0]) & set(t0.query[0])  # context and queries are distinct images
    with pytest.raises(metacl.Error):
        data.Episodes([(test, range(3))], n_way=5).sample(data.Rng(1, 0))  # 3 classes for a 5-way task


def test_streams(fmnist):
    train, test = fmnist
    s = data.onlinex(test, data.Rng(3, 0), n_tasks=6, len_min=2, len_max=4)
    assert s.n == 32 * s.task_len.sum() and s.task_start[-1] == s.n
    assert set(np.unique(s.role).tolist()) <= {0, 1, 2} and (s.task_role[0] == 0).all()
    assert (s.task_role[1:] == 1).sum(1).tolist() == [1] * 5 and (s.task_role[1:] == 2).sum(1).tolist() == [2] * 5
    s2 = data.onlinex(test, data.Rng(3, 0), n_tasks=6, len_min=2, len_max=4)
    assert np.array_equal(s.index, s2.index) and np.array_equal(s.label, s2.label)
    p = data.piecewise(test, data.Rng(1, 2), n_tasks=3, n_way=4, per_task=50)
    assert p.n == 150 and p.label.max() < 4
    for t in range(3):
        rows = slice(p.task_start[t], p.task_start[t + 1])
        assert set(test.labels[p.index[rows]].tolist()) <= set(p.task_class[t].tolist())
    sx = data.splitx(train, test, run=1)
    assert sx.task_class.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]] and sx.n_outputs == 2
    assert len(sx.context[0]) == 50 and len(sx.query[0]) == 10000
    assert (train.labels[sx.context[0]] == sx.task_class[sx.context_task, sx.context[1]]).all()
    assert not set(sx.context[0]) & set(data.splitx(train, test, run=0).context[0])  # runs are disjoint
    assert data.splitx(train, test, mode="class").n_outputs == 10
    # one set for context and queries (a set split by classes): run-drawn classes, queries
    # never a context image
    d = data.splitx(test, test, n_tasks=2, k_shot=3, run=2, shuffle_seed=4, draw_classes=True)
    assert len(set(d.task_class.ravel().tolist())) == 4
    assert not set(d.context[0].tolist()) & set(d.query[0].tolist())
    assert len(d.query[0]) == sum(int((test.labels == c).sum()) - 3 for c in d.task_class.ravel())
    with pytest.raises(metacl.InvalidError):
        data.splitx(train, test, mode="nope")
    with pytest.raises(TypeError):
        data.onlinex(test, 3)
