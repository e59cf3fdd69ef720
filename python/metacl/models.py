"""models.py — shipped and trained models as learners.

    learner = metacl.load("acl-2task-gen")          # a shipped checkpoint, or a path
    learner.reset(n_outputs=5)
    learner.observe(images, labels)                  # learn in context (uint8 [n, 32, 32])
    logits = learner.predict(query_images)           # float32 [n, n_logits]

A Learner is the C library's learner interface (src/learn/learner.h): the same object that
`metacl eval FAMILY` drives through its protocols, so a Python loop over the same episodes
gives the CLI's numbers. Checkpoints are found by name under $METACL_PKGDATADIR/checkpoints,
the installed data directory and the source tree's data/checkpoints.
"""

import ctypes
import os

import numpy as np

from . import _lib, _paths
from .core import Context
from .data import Dataset, from_arrays
from .errors import Error, InvalidError, raise_status

_L = _lib.lib
for _name, _res, _args in [
    ("mcl_learner_open_ckpt", ctypes.c_int, [_lib.P, _lib.S, ctypes.c_int, ctypes.POINTER(_lib.P),
                                             ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_learner_free", None, [_lib.P]),
    ("mcl_ckpt_model_kind", ctypes.c_int, [_lib.S, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_learner_open_baseline", ctypes.c_int, [_lib.P, _lib.S, ctypes.c_uint64, ctypes.POINTER(_lib.P),
                                                 ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_lm_text_open", ctypes.c_int, [_lib.P, _lib.S, ctypes.POINTER(_lib.P), ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_lm_text_free", None, [_lib.P]),
    ("mcl_lm_text_has_fast_weights", ctypes.c_int, [_lib.P]),
    ("mcl_lm_text_score", ctypes.c_int, [_lib.P, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_float,
                                         ctypes.c_float, ctypes.POINTER(ctypes.c_double),
                                         ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_lm_sample", ctypes.c_int, [_lib.P, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_float,
                                     ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_lm_text_model", _lib.P, [_lib.P]),
    ("mcl_smn_model_open", ctypes.c_int, [_lib.P, _lib.S, ctypes.POINTER(_lib.P), ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_smn_model_free", None, [_lib.P]),
    ("mcl_smn_model_task", ctypes.c_int, [_lib.P]),
    ("mcl_smn_model_obs_size", ctypes.c_int64, [_lib.P]),
    ("mcl_smn_model_n_out", ctypes.c_int, [_lib.P]),
    ("mcl_smn_model_act", ctypes.c_int, [_lib.P, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p,
                                         ctypes.c_size_t]),
    ("mcl_smn_model_reset", ctypes.c_int, [_lib.P, ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_smn_model_run", ctypes.c_int, [_lib.P, ctypes.c_int, ctypes.c_uint64, ctypes.c_int, ctypes.c_int64,
                                         ctypes.c_float, ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                                         ctypes.POINTER(ctypes.c_int64), ctypes.c_char_p, ctypes.c_size_t]),
    ("mcl_learner_begin", ctypes.c_int, [_lib.P]),
    ("mcl_learner_end", None, [_lib.P]),
    ("mcl_learner_reset", ctypes.c_int, [_lib.P, ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]),
    ("mcl_learner_observe", ctypes.c_int, [_lib.P, ctypes.c_int, _lib.P, ctypes.c_void_p, ctypes.c_void_p,
                                           ctypes.c_int64, ctypes.c_int, ctypes.c_int64]),
    ("mcl_learner_predict", ctypes.c_int, [_lib.P, _lib.P, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                           ctypes.c_int64, ctypes.c_void_p]),
    ("mcl_learner_kind", _lib.S, [_lib.P]),
    ("mcl_learner_lanes", ctypes.c_int, [_lib.P]),
    ("mcl_learner_n_logits", ctypes.c_int, [_lib.P]),
    ("mcl_learner_max_lanes", ctypes.c_int, [_lib.P]),
    ("mcl_learner_max_outputs", ctypes.c_int, [_lib.P]),
]:
    getattr(_L, _name).restype = _res
    getattr(_L, _name).argtypes = _args


def checkpoint_dirs():
    """Where checkpoints are looked up by name, in order."""
    dirs = []
    env = os.environ.get("METACL_PKGDATADIR")
    if env:
        dirs.append(os.path.join(env, "checkpoints"))
    dirs += [os.path.join(_paths.PKGDATADIR, "checkpoints"), os.path.join(_paths.SRC_DIR, "data", "checkpoints")]
    return dirs


def find_checkpoint(name):
    """The file of checkpoint `name` (a path, or a shipped name with or without .ckpt)."""
    if not isinstance(name, (str, os.PathLike)):
        raise TypeError("a checkpoint is named by a string or a path")
    name = os.fspath(name)
    if os.sep in name or os.path.exists(name):
        if not os.path.isfile(name):
            raise Error("%s: no such checkpoint file" % name, 8)
        return name
    for d in checkpoint_dirs():
        for cand in (os.path.join(d, name), os.path.join(d, name + ".ckpt")):
            if os.path.isfile(cand):
                return cand
    raise_status(8, "no checkpoint named '%s' (looked in %s)" % (name, ", ".join(checkpoint_dirs())))


class _Model:
    """What every opened model shares: its C handle, the context it lives in (closed with it
    when the model made it), and a lifetime as a context manager. Subclasses name their C
    free function (_free) and run extra teardown in _release."""

    _free = None

    def __init__(self, ctx, handle, kind, path, owns_ctx):
        self._ctx, self._h, self.kind, self.path, self._owns_ctx = ctx, handle, kind, path, owns_ctx

    @property
    def handle(self):
        if not self._h:
            raise Error("the %s model was closed" % self.kind, 7)
        return self._h

    @property
    def ctx(self):
        return self._ctx

    def _release(self, h):
        pass

    def close(self):
        """Free the model now (and its context when load() made it); idempotent."""
        if self._h:
            h, self._h = self._h, None
            self._release(h)
            getattr(_L, self._free)(h)
        if self._owns_ctx and self._ctx is not None:
            self._ctx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Learner(_Model):
    """A model learning from labelled examples: reset(), observe(x, y), predict(x).

    x: uint8 images [n, 32, 32] (or [lanes, n, 32, 32] with lanes > 1), or a
    (metacl.data.Dataset, indices) pair; y: integer labels 0..n_outputs-1, [n] or [lanes, n].
    normalize: standardize pixels with the set's statistics (what the CLI's protocols do)."""

    _free = "mcl_learner_free"

    def __init__(self, ctx, handle, kind, path, owns_ctx):
        super().__init__(ctx, handle, kind, path, owns_ctx)
        self._begun = False
        self.normalize = True

    def _release(self, h):
        if self._begun:
            _L.mcl_learner_end(h)

    def __repr__(self):
        return "<metacl.Learner %s from %s>" % (self.kind, self.path)

    @property
    def lanes(self):
        return _L.mcl_learner_lanes(self.handle)

    @property
    def n_logits(self):
        return _L.mcl_learner_n_logits(self.handle)

    @property
    def max_outputs(self):
        """The most outputs (classes) it can give (0 = any)."""
        return _L.mcl_learner_max_outputs(self.handle)

    @property
    def max_lanes(self):
        """The most problems it runs side by side (0 = no limit)."""
        return _L.mcl_learner_max_lanes(self.handle)

    def reset(self, n_outputs=5, lanes=1, run=0, episode=0):
        """Start `lanes` fresh problems with `n_outputs` classes (the model's initial state)."""
        h = self.handle
        if not self._begun:
            self._ctx.check(_L.mcl_learner_begin(h), "learner")
            self._begun = True
        self._ctx.check(_L.mcl_learner_reset(h, int(lanes), int(n_outputs), int(run), int(episode)), "reset")

    def _rows(self, x, what):
        """(dataset, int64 row indices, rows per lane, dataset to free or None)."""
        lanes = self.lanes
        if lanes < 1:
            raise Error("%s before reset()" % what, 7)
        if isinstance(x, tuple) and len(x) == 2 and isinstance(x[0], Dataset):
            ds, idx = x
            idx = np.ascontiguousarray(np.asarray(idx, dtype=np.int64).reshape(-1))
            if idx.size % lanes:
                raise ValueError("%s: %d rows for %d lanes" % (what, idx.size, lanes))
            return ds, idx, idx.size // lanes, None
        x = np.asarray(x)
        if x.dtype != np.uint8:
            raise TypeError("%s: images must be uint8 [n, 32, 32] (0..255), not %s" % (what, x.dtype))
        if lanes > 1:
            if x.ndim != 4 or x.shape[0] != lanes:
                raise ValueError("%s: with %d lanes give images [lanes, n, 32, 32], got %s" % (what, lanes, x.shape))
            x = x.reshape(-1, *x.shape[2:])
        if x.ndim == 4 and x.shape[1] == 1:
            x = x[:, 0]
        n = x.shape[0] // lanes
        ds = from_arrays(x, np.zeros(x.shape[0], np.int32), name="python")
        return ds, np.arange(x.shape[0], dtype=np.int64), n, ds

    def observe(self, x, y, task=0):
        """Learn from the labelled examples (x, y) as task `task`."""
        ds, idx, n, tmp = self._rows(x, "observe")
        try:
            y = np.asarray(y)
            if y.dtype.kind not in "iu":
                raise TypeError("observe: labels must be integers, not %s" % y.dtype)
            lab = np.ascontiguousarray(y.reshape(-1).astype(np.int32))
            if lab.size != idx.size:
                raise ValueError("observe: %d images but %d labels" % (idx.size, lab.size))
            st = _L.mcl_learner_observe(self.handle, int(task), ds.handle, idx.ctypes.data, lab.ctypes.data,
                                        n, 1 if self.normalize else 0, 0)
            self._ctx.check(st, "observe")
        finally:
            if tmp is not None:
                tmp.free()

    def predict(self, x):
        """Logits float32 [lanes·n, n_logits] for the query images x."""
        ds, idx, n, tmp = self._rows(x, "predict")
        try:
            out = np.empty((idx.size, self.n_logits), dtype=np.float32)
            st = _L.mcl_learner_predict(self.handle, ds.handle, idx.ctypes.data, n,
                                        1 if self.normalize else 0, 0, out.ctypes.data)
            self._ctx.check(st, "predict")
            return out
        finally:
            if tmp is not None:
                tmp.free()


def checkpoint_kind(name):
    """The model kind a checkpoint holds ("acl", "lm", "smn", "oct")."""
    path = find_checkpoint(name)
    kind = ctypes.create_string_buffer(80)
    err = ctypes.create_string_buffer(1024)
    st = _L.mcl_ckpt_model_kind(path.encode(), kind, len(kind), err, len(err))
    if st != 0:
        raise_status(st, err.value.decode(errors="replace"))
    return kind.value.decode()


def _context(ctx, backend, device):
    if ctx is None:
        return Context(backend, device=device), True
    if not isinstance(ctx, Context):
        raise TypeError("ctx must be a metacl.Context")
    return ctx, False


def baseline(spec="adam", seed=1, ctx=None, backend="ref", device=None):
    """A hand-crafted baseline as a Learner: a Conv-4 + linear head trained by gradient descent
    on each task in turn, with the continual-learning method of `spec` ("sgd", "adam", "ewc",
    "ewc-online", "si", "lwf", "replay", with keys as `metacl eval acl --baseline`, e.g.
    "ewc:lambda=100,lr=0.01"); `seed` as the CLI's --seed."""
    if not isinstance(spec, str):
        raise TypeError("baseline: spec must be a string such as 'adam' or 'ewc:lambda=100'")
    ctx, owns = _context(ctx, backend, device)
    h = _lib.P()
    err = ctypes.create_string_buffer(1024)
    st = _L.mcl_learner_open_baseline(ctx.handle, spec.encode(), int(seed), ctypes.byref(h), err, len(err))
    if st != 0:
        if owns:
            ctx.close()
        raise_status(st, err.value.decode(errors="replace"))
    return Learner(ctx, h.value, spec.split(":")[0], "baseline " + spec, owns)


LM_MODES = {"static": 0, "dynamic": 1, "smn": 2}


class LM(_Model):
    """A trained character (byte) language model (doc/lm-model.md): score(text) in bits per
    byte and sample(prompt, n, temperature)."""

    _free = "mcl_lm_text_free"

    def __init__(self, ctx, handle, path, owns_ctx):
        super().__init__(ctx, handle, "lm", path, owns_ctx)

    @property
    def has_fast_weights(self):
        return bool(_L.mcl_lm_text_has_fast_weights(self.handle))

    def __repr__(self):
        return "<metacl.LM from %s>" % self.path

    @staticmethod
    def _bytes(text, what):
        if isinstance(text, str):
            return text.encode("utf-8")
        if isinstance(text, (bytes, bytearray)):
            return bytes(text)
        raise TypeError("%s: give a str or bytes, not %s" % (what, type(text).__name__))

    def score(self, text, mode="static", lr=0.0, decay=0.0):
        """Bits per byte of `text` (str: its UTF-8 bytes) read as one stream: mode "static"
        (weights frozen), "dynamic" (an SGD step on the slow weights after each segment: lr,
        decay; lr 0 = 1e-4) or "smn" (the fast weights written after each segment; models
        with fast weights). The model is unchanged afterwards."""
        if mode not in LM_MODES:
            raise InvalidError("score: mode %r (static, dynamic, smn)" % (mode,))
        data = self._bytes(text, "score")
        buf = ctypes.create_string_buffer(data, len(data))
        bits, chars = ctypes.c_double(), ctypes.c_int64()
        err = ctypes.create_string_buffer(1024)
        st = _L.mcl_lm_text_score(self.handle, buf, len(data), LM_MODES[mode], float(lr), float(decay),
                                  ctypes.byref(bits), ctypes.byref(chars), err, len(err))
        if st != 0:
            raise_status(st, err.value.decode(errors="replace"))
        return bits.value / chars.value

    def sample(self, prompt, n=400, temperature=0.8, seed=1, raw=False):
        """The prompt's continuation: n bytes drawn one at a time at `temperature` (0 = the
        likeliest byte), the draws keyed by `seed` — what `metacl sample lm` prints after the
        prompt. A str (invalid UTF-8 replaced), or bytes with raw=True."""
        data = self._bytes(prompt, "sample")
        if not data:
            raise InvalidError("sample: give a prompt of at least one byte")
        out = ctypes.create_string_buffer(max(int(n), 1))
        err = ctypes.create_string_buffer(1024)
        st = _L.mcl_lm_sample(_L.mcl_lm_text_model(self.handle), data, len(data), int(n), float(temperature),
                              int(seed), out, err, len(err))
        if st != 0:
            raise_status(st, err.value.decode(errors="replace"))
        got = out.raw[:int(n)]
        return got if raw else got.decode("utf-8", errors="replace")


class _TaskRec(ctypes.Structure):
    """mcl_smn_task_rec (smn_train.h)."""
    _fields_ = [(n, ctypes.c_int64) for n in ("steps", "updates_to_solve", "persev_errors", "persev_n", "kept_err",
                                                "kept_n", "hits", "n")]


_lib.check_layout(_TaskRec, "mcl_smn_task_rec")


SMN_TASKS = {0: "wcst", 1: "onlinex", 2: "classes"}
SMN_AGENTS = {"alg1": 0, "fast-only": 1, "frozen": 4}


class SMN(_Model):
    """A trained Sparse-MetaNet model (doc/smn-model.md): act(obs) with its current weights,
    reset() of the fast weights, and run(...), one run of `metacl eval smn --protocol wcst`."""

    _free = "mcl_smn_model_free"

    def __init__(self, ctx, handle, path, owns_ctx):
        super().__init__(ctx, handle, "smn", path, owns_ctx)
        self.task = SMN_TASKS.get(_L.mcl_smn_model_task(handle), "?")
        self.obs_size = int(_L.mcl_smn_model_obs_size(handle))
        self.n_out = int(_L.mcl_smn_model_n_out(handle))

    def __repr__(self):
        return "<metacl.SMN %s agent from %s>" % (self.task, self.path)

    def policy(self, obs):
        """Logits float32 [rows, n_out] of observations obs (float32 [rows, obs_size], or one
        observation [obs_size]) with the current slow and fast weights; nothing is learned."""
        obs = np.asarray(obs)
        if obs.dtype != np.float32:
            raise TypeError("policy: observations must be float32, not %s" % obs.dtype)
        if obs.ndim == 1:
            obs = obs[None]
        obs = np.ascontiguousarray(obs.reshape(obs.shape[0], -1))
        if obs.shape[1] != self.obs_size:
            raise ValueError("policy: observations of %d floats, the model reads %d" % (obs.shape[1], self.obs_size))
        out = np.empty((obs.shape[0], self.n_out), np.float32)
        err = ctypes.create_string_buffer(1024)
        st = _L.mcl_smn_model_act(self.handle, obs.ctypes.data, obs.shape[0], out.ctypes.data, err, len(err))
        if st != 0:
            raise_status(st, err.value.decode(errors="replace"))
        return out

    def act(self, obs):
        """The likeliest action (WCST: the reference card 0..3) for each observation."""
        a = self.policy(obs).argmax(1)
        return int(a[0]) if np.asarray(obs).ndim == 1 else a

    def reset(self):
        """Fast weights back to zero."""
        err = ctypes.create_string_buffer(512)
        st = _L.mcl_smn_model_reset(self.handle, err, len(err))
        if st != 0:
            raise_status(st, err.value.decode(errors="replace"))

    def run(self, agent="alg1", seed=1, tasks=30, max_steps=None, lr=3e-4):
        """One run of the WCST protocol (`metacl eval smn --protocol wcst --runs 1 --seed SEED`):
        a fresh environment, the agent going on from the checkpoint ("alg1": Algorithm 1 with
        the slow weights' optimizer at lr, the CLI's --smn-lr; "fast-only": fast weights only;
        "frozen": no update), until `tasks` rules are solved or max_steps episodes (default 200
        per task). Returns one dict per task: steps, updates_to_solve (-1: not solved),
        persev_errors, hits, n."""
        if agent not in SMN_AGENTS:
            raise InvalidError("run: agent %r (%s)" % (agent, ", ".join(SMN_AGENTS)))
        max_steps = 200 * int(tasks) if max_steps is None else int(max_steps)
        cap = max(int(tasks), 1) + 1
        recs = (_TaskRec * cap)()
        n, upd = ctypes.c_int(), ctypes.c_int64()
        err = ctypes.create_string_buffer(1024)
        st = _L.mcl_smn_model_run(self.handle, SMN_AGENTS[agent], int(seed), int(tasks), max_steps, float(lr),
                                  ctypes.cast(recs, ctypes.c_void_p), cap, ctypes.byref(n), ctypes.byref(upd),
                                  err, len(err))
        if st != 0:
            raise_status(st, err.value.decode(errors="replace"))
        return [{f: int(getattr(recs[i], f)) for f, _ in _TaskRec._fields_} for i in range(n.value)]


def load(name, ctx=None, backend="ref", device=None, max_lanes=0):
    """A shipped checkpoint (by name, e.g. "acl-2task-gen", "lm-text", "smn-wcst") or a file:
    an ACL model as a Learner, a language model as an LM, a Sparse-MetaNet model as an SMN.
    Without ctx a context of `backend` is made and closed with the model."""
    path = find_checkpoint(name)
    kind = checkpoint_kind(path)
    ctx, owns = _context(ctx, backend, device)
    err = ctypes.create_string_buffer(1024)
    kbuf = ctypes.create_string_buffer(80)
    h = _lib.P()
    if kind == "lm":
        st = _L.mcl_lm_text_open(ctx.handle, path.encode(), ctypes.byref(h), err, len(err))
    elif kind == "smn":
        st = _L.mcl_smn_model_open(ctx.handle, path.encode(), ctypes.byref(h), err, len(err))
    else:
        st = _L.mcl_learner_open_ckpt(ctx.handle, path.encode(), int(max_lanes), ctypes.byref(h), kbuf,
                                      len(kbuf), err, len(err))
    if st != 0:
        if owns:
            ctx.close()
        raise_status(st, err.value.decode(errors="replace") or "%s: cannot open the model" % path)
    if kind == "lm":
        return LM(ctx, h.value, path, owns)
    if kind == "smn":
        return SMN(ctx, h.value, path, owns)
    return Learner(ctx, h.value, kbuf.value.decode(), path, owns)
