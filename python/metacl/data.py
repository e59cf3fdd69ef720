"""data.py — the prepared data sets (and your own images) as NumPy arrays.

    ds = metacl.data.load("fmnist", split="test")     # prepared by `metacl data prepare`
    ds.images   # uint8 [n, 32, 32]     ds.labels  # int32 [n] (the set's global class ids)
    mine = metacl.data.from_arrays(images_uint8_n_32_32, labels_int32)

A Dataset holds the C library's copy (mcl_dataset), which the learners read; images and
labels are read-only NumPy views of it.
"""

import ctypes

import numpy as np

from . import _lib
from .errors import InvalidError, raise_status

SPLITS = {"all": 0, "train": 1, "val": 2, "test": 3}
SIDE = 32

_lib.lib.mcl_dataset_load.restype = ctypes.c_int
_lib.lib.mcl_dataset_load.argtypes = [_lib.S, _lib.S, ctypes.c_int, ctypes.POINTER(_lib.P),
                                      ctypes.c_char_p, ctypes.c_size_t]
_lib.lib.mcl_dataset_from_arrays.restype = ctypes.c_int
_lib.lib.mcl_dataset_from_arrays.argtypes = [_lib.S, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                             ctypes.POINTER(_lib.P), ctypes.c_char_p, ctypes.c_size_t]
_lib.lib.mcl_dataset_free.restype = None
_lib.lib.mcl_dataset_free.argtypes = [_lib.P]
_lib.lib.mcl_data_dir_default.restype = _lib.S
_lib.lib.mcl_data_dir_default.argtypes = []


class _CDataset(ctypes.Structure):
    """The leading fields of mcl_dataset (dataset.h) that this module reads."""
    _fields_ = [("name", ctypes.c_char * 64), ("n", ctypes.c_int64),
                ("images", ctypes.POINTER(ctypes.c_uint8)), ("labels", ctypes.POINTER(ctypes.c_int32)),
                ("n_classes_total", ctypes.c_int), ("n_classes", ctypes.c_int),
                ("class_ids", ctypes.POINTER(ctypes.c_int32)), ("mean", ctypes.c_float),
                ("std", ctypes.c_float), ("content_side", ctypes.c_int)]


_lib.check_layout(_CDataset, "mcl_dataset", leading=True)


class Dataset:
    """Images [n, 32, 32] uint8 and labels [n] int32 of one set (or split of a set)."""

    def __init__(self, handle):
        self._h = handle
        c = ctypes.cast(handle, ctypes.POINTER(_CDataset)).contents
        self.name = c.name.decode()
        self.n = int(c.n)
        self.n_classes = int(c.n_classes)
        self.mean, self.std = float(c.mean), float(c.std)
        self.content_side = int(c.content_side)
        img = np.ctypeslib.as_array(c.images, shape=(self.n, SIDE, SIDE)) if self.n else \
            np.zeros((0, SIDE, SIDE), np.uint8)
        lab = np.ctypeslib.as_array(c.labels, shape=(self.n,)) if self.n else np.zeros(0, np.int32)
        img.flags.writeable = False
        lab.flags.writeable = False
        self.images, self.labels = img, lab
        self.classes = np.ctypeslib.as_array(c.class_ids, shape=(self.n_classes,)).copy() \
            if self.n_classes else np.zeros(0, np.int32)

    @property
    def handle(self):
        if not self._h:
            raise InvalidError("the data set was freed")
        return self._h

    def free(self):
        h, self._h = self._h, None
        if h:
            self.images = self.labels = None
            _lib.lib.mcl_dataset_free(h)

    def __del__(self):
        try:
            self.free()
        except Exception:
            pass

    def __len__(self):
        return self.n

    def __repr__(self):
        return "<metacl.data.Dataset %s: %d images, %d classes>" % (self.name, self.n, self.n_classes)


def default_dir():
    """Where prepared sets live unless told otherwise ($METACL_DATA, else the user's cache)."""
    d = _lib.lib.mcl_data_dir_default()
    return d.decode() if d else None


def load(spec, split="all", data_dir=None):
    """A prepared set ("fmnist", "fmnist-val", "hanzi", "kanji", "hershey") or user data
    ("idx:IMAGES,LABELS", "pngdir:DIR"); split "all", "train", "val" or "test"."""
    if not isinstance(spec, str):
        raise TypeError("load: the set must be named by a string")
    if split not in SPLITS:
        raise InvalidError("load: split %r (expected one of %s)" % (split, ", ".join(SPLITS)))
    h = _lib.P()
    err = ctypes.create_string_buffer(1024)
    st = _lib.lib.mcl_dataset_load(spec.encode(), data_dir.encode() if data_dir else None,
                                   SPLITS[split], ctypes.byref(h), err, len(err))
    if st != 0:
        raise_status(st, err.value.decode(errors="replace") or "load failed")
    return Dataset(h.value)


def from_arrays(images, labels, name="numpy"):
    """A Dataset from uint8 images [n, 32, 32] (or [n, 1, 32, 32]) and integer labels [n]
    (>= 0); copied."""
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise TypeError("from_arrays: images must be uint8 (0..255), not %s" % images.dtype)
    if images.ndim == 4 and images.shape[1] == 1:
        images = images[:, 0]
    if images.ndim != 3 or images.shape[1:] != (SIDE, SIDE):
        raise ValueError("from_arrays: images must be [n, 32, 32], got %s" % (images.shape,))
    labels = np.asarray(labels)
    if labels.dtype.kind not in "iu":
        raise TypeError("from_arrays: labels must be integers, not %s" % labels.dtype)
    if labels.shape != (images.shape[0],):
        raise ValueError("from_arrays: %d images but labels of shape %s" % (images.shape[0], labels.shape))
    if len(labels) < 1:
        raise ValueError("from_arrays: no images")
    if labels.min() < 0 or labels.max() >= 2**31:
        raise ValueError("from_arrays: labels must be in [0, 2^31)")
    img = np.ascontiguousarray(images)
    lab = np.ascontiguousarray(labels.astype(np.int32))
    h = _lib.P()
    err = ctypes.create_string_buffer(512)
    st = _lib.lib.mcl_dataset_from_arrays(name.encode(), img.ctypes.data, lab.ctypes.data, len(lab),
                                          ctypes.byref(h), err, len(err))
    if st != 0:
        raise_status(st, err.value.decode(errors="replace"))
    return Dataset(h.value)


# ---------------------------------------------------------------- episodes (sampler.h)

class Rng(ctypes.Structure):
    """The library's random stream (rng.h): Philox keyed by (seed, stream). The protocols of
    the CLI draw run r's episodes from Rng(seed, r)."""
    _fields_ = [("seed", ctypes.c_uint64), ("stream", ctypes.c_uint64), ("index", ctypes.c_uint64)]

    def __init__(self, seed=0, stream=0):
        super().__init__()
        _lib.lib.mcl_rng_init(ctypes.byref(self), int(seed), int(stream))


_lib.check_layout(Rng, "mcl_rng")


class _EpisodeCfg(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int) for n in ("n_way", "k_shot", "n_query", "first_shot", "n_tasks",
                                            "share_classes", "class_incremental")]


_lib.check_layout(_EpisodeCfg, "mcl_episode_cfg")


class _ClassPool(ctypes.Structure):
    _fields_ = [("ds", ctypes.c_void_p), ("classes", ctypes.POINTER(ctypes.c_int32)), ("n_classes", ctypes.c_int)]


_lib.check_layout(_ClassPool, "mcl_class_pool")


_lib.lib.mcl_rng_init.restype = None
_lib.lib.mcl_rng_init.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64]
_lib.lib.mcl_episode_create.restype = ctypes.c_int
_lib.lib.mcl_episode_create.argtypes = [ctypes.POINTER(_EpisodeCfg), ctypes.POINTER(ctypes.c_void_p)]
_lib.lib.mcl_episode_free.restype = None
_lib.lib.mcl_episode_free.argtypes = [ctypes.c_void_p]
_lib.lib.mcl_episode_sample.restype = ctypes.c_int
_lib.lib.mcl_episode_sample.argtypes = [ctypes.c_void_p, ctypes.POINTER(_ClassPool), ctypes.c_void_p,
                                        ctypes.c_char_p, ctypes.c_size_t]
_lib.lib.mcl_episode_rows.restype = ctypes.c_int
_lib.lib.mcl_episode_rows.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                      ctypes.POINTER(ctypes.POINTER(ctypes.c_int64)),
                                      ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)),
                                      ctypes.POINTER(ctypes.c_int64)]

PARTS = {"first": 0, "context": 1, "query": 2}


class Task:
    """One task of a sampled sequence: (indices, labels) of its context, queries and
    first-shot examples, as int64 / int32 arrays into `dataset`."""

    def __init__(self, dataset, parts):
        self.dataset = dataset
        self.context, self.query, self.first = parts["context"], parts["query"], parts["first"]

    def __repr__(self):
        return "<metacl.data.Task %d context, %d query rows of %s>" % (
            len(self.context[0]), len(self.query[0]), self.dataset.name)


class Episodes:
    """N-way K-shot task sequences drawn like the CLI's protocols (doc/acl-model.md §3).

    pools: one per task, each a Dataset or (Dataset, classes) with global class ids (as the
    CLI's fmnist@0-4). sample(rng) draws one sequence: a list of Tasks."""

    def __init__(self, pools, n_way=5, k_shot=5, n_query=1, first_shot=0, share_classes=False,
                 class_incremental=False):
        if not pools:
            raise ValueError("Episodes: give one pool per task")
        self._keep = []
        arr = (_ClassPool * len(pools))()
        self.datasets = []
        for i, p in enumerate(pools):
            ds, classes = (p, None) if isinstance(p, Dataset) else p
            if not isinstance(ds, Dataset):
                raise TypeError("Episodes: pool %d is not a Dataset or (Dataset, classes)" % i)
            arr[i].ds = ds.handle
            if classes is not None:
                c = np.ascontiguousarray(np.asarray(classes, dtype=np.int32))
                self._keep.append(c)
                arr[i].classes = c.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
                arr[i].n_classes = c.size
            self.datasets.append(ds)
        self._pools = arr
        cfg = _EpisodeCfg(int(n_way), int(k_shot), int(n_query), int(first_shot), len(pools),
                          int(bool(share_classes)), int(bool(class_incremental)))
        h = ctypes.c_void_p()
        st = _lib.lib.mcl_episode_create(ctypes.byref(cfg), ctypes.byref(h))
        if st != 0:
            raise_status(st, "Episodes: bad configuration (N %d, K %d, queries %d, first %d)"
                         % (n_way, k_shot, n_query, first_shot))
        self._h = h.value
        self.n_tasks = len(pools)

    def __del__(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            _lib.lib.mcl_episode_free(h)

    def sample(self, rng):
        """Draw every task of a new sequence from `rng` (a metacl.data.Rng, advanced)."""
        if not isinstance(rng, Rng):
            raise TypeError("sample: rng must be a metacl.data.Rng")
        err = ctypes.create_string_buffer(512)
        st = _lib.lib.mcl_episode_sample(self._h, self._pools, ctypes.byref(rng), err, len(err))
        if st != 0:
            raise_status(st, "Episodes: " + err.value.decode(errors="replace"))
        tasks = []
        for t in range(self.n_tasks):
            parts = {}
            for name, part in PARTS.items():
                ip, lp, n = ctypes.POINTER(ctypes.c_int64)(), ctypes.POINTER(ctypes.c_int32)(), ctypes.c_int64()
                st = _lib.lib.mcl_episode_rows(self._h, t, part, ctypes.byref(ip), ctypes.byref(lp), ctypes.byref(n))
                if st != 0:
                    raise_status(st, "Episodes: rows of task %d" % t)
                k = n.value
                parts[name] = (np.ctypeslib.as_array(ip, (k,)).copy() if k else np.zeros(0, np.int64),
                               np.ctypeslib.as_array(lp, (k,)).copy() if k else np.zeros(0, np.int32))
            tasks.append(Task(self.datasets[t], parts))
        return tasks


# ---------------------------------------------------------------- streams (sampler.h)

class _CStream(ctypes.Structure):
    """mcl_stream (sampler.h)."""
    _fields_ = [("ds", ctypes.c_void_p), ("n_way", ctypes.c_int), ("n_tasks", ctypes.c_int), ("n", ctypes.c_int64),
                ("index", ctypes.POINTER(ctypes.c_int64)), ("label", ctypes.POINTER(ctypes.c_int32)),
                ("task", ctypes.POINTER(ctypes.c_int32)), ("role", ctypes.POINTER(ctypes.c_int8)),
                ("prev_label", ctypes.POINTER(ctypes.c_int32)), ("task_start", ctypes.POINTER(ctypes.c_int64)),
                ("task_len", ctypes.POINTER(ctypes.c_int32)), ("task_class", ctypes.POINTER(ctypes.c_int32)),
                ("task_role", ctypes.POINTER(ctypes.c_int8)), ("task_prev_label", ctypes.POINTER(ctypes.c_int32))]


_lib.check_layout(_CStream, "mcl_stream")


class _OnlineXCfg(ctypes.Structure):
    _fields_ = [("n_tasks", ctypes.c_int), ("n_way", ctypes.c_int), ("n_kept", ctypes.c_int),
                ("n_persev", ctypes.c_int), ("len_min", ctypes.c_int), ("len_max", ctypes.c_int),
                ("round_size", ctypes.c_int), ("max_per_class", ctypes.c_int64), ("code_exact", ctypes.c_int)]


_lib.check_layout(_OnlineXCfg, "mcl_onlinex_cfg")


class _PwCfg(ctypes.Structure):
    _fields_ = [("n_tasks", ctypes.c_int), ("n_way", ctypes.c_int), ("per_task", ctypes.c_int64)]


_lib.check_layout(_PwCfg, "mcl_pwstream_cfg")


class _SplitXCfg(ctypes.Structure):
    _fields_ = [("n_tasks", ctypes.c_int), ("classes_per_task", ctypes.c_int), ("k_shot", ctypes.c_int),
                ("run", ctypes.c_int), ("mode", ctypes.c_int), ("classes", ctypes.POINTER(ctypes.c_int32)),
                ("shuffle_seed", ctypes.c_uint64), ("draw_classes", ctypes.c_int)]


_lib.check_layout(_SplitXCfg, "mcl_splitx_cfg")


class _CSplitX(ctypes.Structure):
    """mcl_splitx (sampler.h)."""
    _fields_ = [("cfg", _SplitXCfg), ("n_outputs", ctypes.c_int), ("train", ctypes.c_void_p),
                ("test", ctypes.c_void_p), ("task_class", ctypes.POINTER(ctypes.c_int32)),
                ("n_ctx", ctypes.c_int64), ("ctx_index", ctypes.POINTER(ctypes.c_int64)),
                ("ctx_label", ctypes.POINTER(ctypes.c_int32)), ("ctx_task", ctypes.POINTER(ctypes.c_int32)),
                ("task_ctx_start", ctypes.POINTER(ctypes.c_int64)), ("n_query", ctypes.c_int64),
                ("query_index", ctypes.POINTER(ctypes.c_int64)), ("query_label", ctypes.POINTER(ctypes.c_int32)),
                ("query_task", ctypes.POINTER(ctypes.c_int32)), ("task_query_start", ctypes.POINTER(ctypes.c_int64))]


_lib.check_layout(_CSplitX, "mcl_splitx")


for _name, _args in [("mcl_stream_onlinex", [ctypes.POINTER(_ClassPool), ctypes.POINTER(_OnlineXCfg)]),
                     ("mcl_stream_piecewise", [ctypes.POINTER(_ClassPool), ctypes.POINTER(_PwCfg)])]:
    getattr(_lib.lib, _name).restype = ctypes.c_int
    getattr(_lib.lib, _name).argtypes = _args + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                                 ctypes.c_size_t]
_lib.lib.mcl_stream_free.restype = None
_lib.lib.mcl_stream_free.argtypes = [ctypes.c_void_p]
_lib.lib.mcl_splitx_create.restype = ctypes.c_int
_lib.lib.mcl_splitx_create.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(_SplitXCfg),
                                       ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_size_t]
_lib.lib.mcl_splitx_free.restype = None
_lib.lib.mcl_splitx_free.argtypes = [ctypes.c_void_p]

ROLES = {0: "new", 1: "kept", 2: "persev"}


def _arr(ptr, n, dtype):
    return np.ctypeslib.as_array(ptr, (n,)).astype(dtype, copy=True) if n else np.zeros(0, dtype)


class Stream:
    """A stream of labelled examples (index, label) into `dataset`, with the evaluation tags the
    learner does not see: task, role (0 new, 1 kept, 2 perseveration), prev_label, and per
    task its start, length, classes and roles."""

    def __init__(self, dataset, c):
        self.dataset = dataset
        self.n_way, self.n_tasks, self.n = c.n_way, c.n_tasks, int(c.n)
        self.index = _arr(c.index, self.n, np.int64)
        self.label = _arr(c.label, self.n, np.int32)
        self.task = _arr(c.task, self.n, np.int32)
        self.role = _arr(c.role, self.n, np.int8)
        self.prev_label = _arr(c.prev_label, self.n, np.int32)
        self.task_start = _arr(c.task_start, self.n_tasks + 1, np.int64)
        self.task_len = _arr(c.task_len, self.n_tasks, np.int32)
        self.task_class = _arr(c.task_class, self.n_tasks * self.n_way, np.int32).reshape(self.n_tasks, self.n_way)
        self.task_role = _arr(c.task_role, self.n_tasks * self.n_way, np.int8).reshape(self.n_tasks, self.n_way)

    def __len__(self):
        return self.n

    def __repr__(self):
        return "<metacl.data.Stream %d examples, %d tasks, %d-way, of %s>" % (self.n, self.n_tasks, self.n_way,
                                                                             self.dataset.name)


def _pool(ds, classes):
    if not isinstance(ds, Dataset):
        raise TypeError("expected a metacl.data.Dataset")
    p = _ClassPool()
    p.ds = ds.handle
    keep = None
    if classes is not None:
        keep = np.ascontiguousarray(np.asarray(classes, dtype=np.int32))
        p.classes = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
        p.n_classes = keep.size
    return p, keep


def _make_stream(fn, ds, classes, cfg, rng):
    if not isinstance(rng, Rng):
        raise TypeError("rng must be a metacl.data.Rng")
    pool, keep = _pool(ds, classes)
    h = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    st = fn(ctypes.byref(pool), ctypes.byref(cfg), ctypes.byref(rng), ctypes.byref(h), err, len(err))
    del keep
    if st != 0:
        raise_status(st, err.value.decode(errors="replace"))
    try:
        return Stream(ds, ctypes.cast(h, ctypes.POINTER(_CStream)).contents)
    finally:
        _lib.lib.mcl_stream_free(h)


def onlinex(ds, rng, classes=None, n_tasks=400, n_way=5, n_kept=1, n_persev=2, len_min=1, len_max=15,
            round_size=32, max_per_class=0, code_exact=False):
    """An Online-X stream (Sparse-MetaNet App. D; doc/smn-model.md) from the classes of ds."""
    cfg = _OnlineXCfg(int(n_tasks), int(n_way), int(n_kept), int(n_persev), int(len_min), int(len_max),
                      int(round_size), int(max_per_class), int(bool(code_exact)))
    return _make_stream(_lib.lib.mcl_stream_onlinex, ds, classes, cfg, rng)


def piecewise(ds, rng, classes=None, n_tasks=100, n_way=10, per_task=1000):
    """A piecewise-stationary stream (the online-transformer paper §4; doc/oct-model.md)."""
    return _make_stream(_lib.lib.mcl_stream_piecewise, ds, classes, _PwCfg(int(n_tasks), int(n_way), int(per_task)),
                        rng)


class SplitX:
    """Split-X (doc/acl.md, Evaluation): the context rows (into train) task by task and the
    query rows (into test), with their labels and tasks; n_outputs the head's width."""

    def __init__(self, train, test, c):
        self.train, self.test = train, test
        self.n_tasks, self.n_outputs = c.cfg.n_tasks, c.n_outputs
        T = self.n_tasks
        self.task_class = _arr(c.task_class, T * c.cfg.classes_per_task, np.int32).reshape(T, -1)
        self.context = (_arr(c.ctx_index, c.n_ctx, np.int64), _arr(c.ctx_label, c.n_ctx, np.int32))
        self.context_task = _arr(c.ctx_task, c.n_ctx, np.int32)
        self.task_context_start = _arr(c.task_ctx_start, T + 1, np.int64)
        self.query = (_arr(c.query_index, c.n_query, np.int64), _arr(c.query_label, c.n_query, np.int32))
        self.query_task = _arr(c.query_task, c.n_query, np.int32)
        self.task_query_start = _arr(c.task_query_start, T + 1, np.int64)

    def __repr__(self):
        return "<metacl.data.SplitX %d tasks, %d context and %d query rows>" % (
            self.n_tasks, len(self.context[0]), len(self.query[0]))


def splitx(train, test, n_tasks=5, classes_per_task=2, k_shot=5, run=0, mode="domain", classes=None,
           shuffle_seed=0, draw_classes=False):
    """The Split-X protocol's data for run `run` (the CLI's run r: images r·K.. of each class):
    mode "domain" (labels 0..C-1 per task) or "class" (0..T·C-1). draw_classes: run r draws its
    T·C classes (keyed by shuffle_seed and run) instead of taking the first ones; train is test
    (the same Dataset): each class's queries are its images other than the K context ones."""
    if mode not in ("domain", "class"):
        raise InvalidError("splitx: mode %r (domain or class)" % (mode,))
    if not isinstance(train, Dataset) or not isinstance(test, Dataset):
        raise TypeError("splitx: train and test must be metacl.data.Dataset")
    keep = None
    cfg = _SplitXCfg(int(n_tasks), int(classes_per_task), int(k_shot), int(run), 1 if mode == "class" else 0)
    cfg.shuffle_seed = int(shuffle_seed)
    cfg.draw_classes = 1 if draw_classes else 0
    if classes is not None:
        keep = np.ascontiguousarray(np.asarray(classes, dtype=np.int32))
        cfg.classes = keep.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
    h = ctypes.c_void_p()
    err = ctypes.create_string_buffer(512)
    st = _lib.lib.mcl_splitx_create(train.handle, test.handle, ctypes.byref(cfg), ctypes.byref(h), err, len(err))
    del keep
    if st != 0:
        raise_status(st, err.value.decode(errors="replace"))
    try:
        return SplitX(train, test, ctypes.cast(h, ctypes.POINTER(_CSplitX)).contents)
    finally:
        _lib.lib.mcl_splitx_free(h)
