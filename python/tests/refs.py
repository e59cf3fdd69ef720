"""refs.py — NumPy (float64) implementations of the ops, written from the contracts in
src/common/ops.def and doc/, for the Python package's tests. Each takes and returns arrays."""

import numpy as np


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def log_softmax(a):
    m = a.max(-1, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(-1, keepdims=True))


def erf(x):
    # the math module's erf, elementwise (NumPy has none)
    import math
    return np.vectorize(math.erf)(x)


def gelu(a):
    return a * 0.5 * (1.0 + erf(a / np.sqrt(2.0)))


def layer_norm(x, g, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def cross_entropy(logits, targets):
    keep = targets >= 0
    lp = log_softmax(logits)
    rows = np.nonzero(keep)[0]
    return np.array([-lp[rows, targets[rows].astype(int)].mean()])


def conv2d(x, w, b, stride, pad):
    B, C, H, W = x.shape
    O, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    Ho, Wo = (H + 2 * pad - k) // stride + 1, (W + 2 * pad - k) // stride + 1
    out = np.zeros((B, O, Ho, Wo))
    for i in range(Ho):
        for j in range(Wo):
            patch = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k]
            out[:, :, i, j] = np.einsum("bckl,ockl->bo", patch, w)
    return out + b[None, :, None, None]


def maxpool2d(x):
    B, C, H, W = x.shape
    x = x[:, :, :H // 2 * 2, :W // 2 * 2]
    return x.reshape(B, C, H // 2, 2, W // 2, 2).max(axis=(3, 5))


def instance_norm(x, g, b, eps):
    mu = x.mean(axis=(2, 3), keepdims=True)
    var = ((x - mu) ** 2).mean(axis=(2, 3), keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g[None, :, None, None] + b[None, :, None, None]


def inorm_pool_relu(x, g, b, eps):
    return np.maximum(maxpool2d(instance_norm(x, g, b, eps)), 0.0)


def srwm(x, wy, wq, wk, wb):
    """doc/acl-model.md §1 (src/ref/naive/srwm.c): per step r_i = x·M_i, y = r_0, q, k softmax,
    beta = sigmoid(r_3), Δ_i = q·M_i − k·M_i, M_i += k ⊗ beta_i Δ_i."""
    B, H, L, D = x.shape
    M = [wy.copy(), wq.copy(), wk.copy(), wb.copy()]
    y = np.zeros_like(x)
    for t in range(L):
        xt = x[:, :, t, :]
        r = [np.einsum("bhe,bhem->bhm", xt, Mi) for Mi in M]
        y[:, :, t, :] = r[0]
        q, k = softmax(r[1]), softmax(r[2])
        beta = 1.0 / (1.0 + np.exp(-r[3]))
        new = []
        for i in range(4):
            delta = np.einsum("bhe,bhem->bhm", q, M[i]) - np.einsum("bhe,bhem->bhm", k, M[i])
            new.append(M[i] + np.einsum("bhe,bhm->bhem", k, beta[:, :, i:i + 1] * delta))
        M = new
    return [y] + M


def attn_kv(q, k, v, kbuf, vbuf, n, start, mask, scale, alibi):
    S, Hq, Dk = q.shape
    Hk, C = k.shape[1], kbuf.shape[0]
    G = Hq // Hk
    ring = [(start + j) % C for j in range(n)]
    K = np.concatenate([kbuf[ring], k]) if n else k
    V = np.concatenate([vbuf[ring], v]) if n else v
    o = np.zeros((S, Hq, v.shape[2]))
    for t in range(S):
        for h in range(Hq):
            kh = h // G
            nk = n + t + (0 if mask == 2 else 1)
            if nk == 0:
                continue
            slope = alibi * 2.0 ** (-8.0 * (h + 1) / Hq) if alibi else 0.0
            s = scale * K[:nk, kh] @ q[t, h] - slope * (n + t - np.arange(nk))
            p = np.exp(s - s.max())
            p /= p.sum()
            if mask == 1:
                p[n + t] = 0.0
            o[t, h] = p @ V[:nk, kh]
    return o


def rel_attn(qc, qp, k, v, r, scale, window=0):
    B, S, H, D = qc.shape
    T = k.shape[1]
    M = T - S
    o = np.zeros((B, S, H, v.shape[3]))
    for b in range(B):
        for i in range(S):
            for h in range(H):
                js = [j for j in range(T) if j <= M + i and (window == 0 or M + i - j <= window)]
                s = np.array([scale * (qc[b, i, h] @ k[b, j, h] + qp[b, i, h] @ r[M + i - j, h]) for j in js])
                p = np.exp(s - s.max())
                p /= p.sum()
                o[b, i, h] = p @ v[b, js, h]
    return o


def grad_preproc(z, P):
    thr, ep = np.exp(np.float32(-P)), np.exp(np.float32(P))
    big = np.abs(z) >= thr
    a = np.where(big, np.log(np.abs(np.where(big, z, 1.0))) / P, -1.0)
    s = np.where(big, np.sign(z), ep * z)
    return np.stack([a, s], -1)


def smn_avg_z(avg, g, idx, gamma, beta1, beta2, P):
    new = gamma * avg.astype(np.float64) + beta1 * g
    i = idx.astype(int)
    z = new.reshape(-1)[i] + beta2 * g.reshape(-1)[i]
    return new, grad_preproc(z, P)


def lrelu(x, slope):
    return np.where(x > 0, x, slope * x)


def smn_write(m0, idx, zs, W1, b1, W2, b2, W3, b3, slope):
    m = m0.copy().reshape(-1)
    h1 = lrelu(zs @ W1.T + b1, slope)
    h2 = lrelu(h1 @ W2.T + b2, slope)
    val = h2 @ W3.T + b3
    m[idx.astype(int)] = val[:, 0]
    return m.reshape(m0.shape)
