#!/usr/bin/env python3
"""bench-lm-torch.py — the PyTorch baseline for `metacl bench lm`, on the CPU or (--device
cuda) on a GPU.

The same workloads with the same shapes as tools/cli/bench_lm.c (wall-clock time per iteration,
--warmup untimed iterations (1 on the CPU, 3 on CUDA), then --reps timed iterations; ms_best =
fastest, ms_median = median; on CUDA each timed iteration lies between two
torch.cuda.synchronize() calls, TF32 off unless --tf32: tools/torch/bench_common.py).

The model is the adaptive character language model of doc/lm-model.md at the size of
data/configs/lm-text.conf: a byte-level Transformer-XL of L = 4 pre-LN layers, width D = 192,
H = 4 heads of Dh = 48, feed-forward F = 768 (exact GELU), memory M = 128 rows per layer (the
layer's input at the previous segments, detached). A layer, with h [B, S, D] and its memory
m [B, M, D], T = M + S:

    c = LN([m ‖ h])                                  [B, T, D]
    q = c[:, M:] W_qᵀ, k = c W_kᵀ, v = c W_vᵀ         [B, S, H, Dh], [B, T, H, Dh] x 2
    r = R W_rᵀ                                       R [T, D]: sinusoids of the distances 0..T-1
    s_ij = ((q_i + u)·k_j + (q_i + v_b)·r_{M+i-j}) / sqrt(Dh), causal: j <= M + i
    h = h + softmax(s) v W_oᵀ
    h = h + W_2 gelu(W_1 LN(h) + b_1) + b_2
    new memory = the last M rows of [m ‖ h_in]

then LN, logits = h W_outᵀ + b_out [B·S, 256] and the cross-entropy. The position term is
computed against every distance and gathered at M + i - j.

Sparse fast weights (Sparse Meta Networks, Munkhdalai 2019; doc/smn-model.md) on W_q, W_k,
W_v, W_o of every layer and on the byte embedding (17 weights): the forward uses eff = W + M.
A fast step's gradient G = d loss / d eff is torch.autograd.grad(loss, effs) (first order:
plain data); under no_grad I = gamma I + beta1 G, z = I + beta2 G, the mask
torch.rand(n) < p -> idx = nonzero, zs = preprocessed z[idx] [m, 2] (Andrychowicz et al.,
P = 10), M.view(-1)[idx] = g_phi(zs) with g_phi 2 -> 20 -> 20 -> 1 (LeakyReLU 0.01), one per
weight, evaluated only at the masked elements. The window's gradient step rebuilds M_{k-1} ON
THE TAPE from the window's writes, as metacl does: M_0 with the surviving (last) write of every
element, g_phi applied to the logged inputs through index_put with autograd, so that phi gets
its gradients. Then backward, the window end (I from W's gradient; M := 0, the paper's LM
reset), global-norm clipping and Adam.

  lm_train_window  one window of Algorithm 1 with B = 8 lanes: k = 5, 4 fast steps of 64
                   bytes (forward through W + M with the memory, cross-entropy, G, the write
                   with the log kept, memory commit; p 0.05, gamma 0, beta1 0, beta2 1), then
                   the gradient step of 128 bytes, backward, window end, Adam (lr 7e-4, clip
                   0.5), memory commit
  lm_train_plain   one step of the same Transformer-XL without fast weights: B = 8, 128 bytes
                   after 128 memory rows: forward, cross-entropy, backward, Adam (lr 7e-4,
                   clip 0.5), memory commit
  lm_eval_static   one lane, 128 bytes after 128 memory rows: forward under no_grad, commit
  lm_eval_dynamic  the same segment: forward, cross-entropy, backward, then on every slow
                   weight theta <- theta - lr g + decay (theta_0 - theta) (lr 1e-4, decay 1e-3)
  lm_eval_smn      the same segment: forward, cross-entropy, G, the write without a log (p 0.5,
                   gamma 0.999, beta1 = beta2 = 0.5; M and I accumulate over the iterations)

Every workload starts with a full memory (one no_grad forward of a 128-byte segment in setup)
and commits the memory of its segments, so it stays at 128 rows. The data are the fixed
pseudo-random bytes of tools/cli/bench_lm.c (x_{i+1} = (1103515245 x_i + 12345) mod 2^31 from
x_0 = 13, byte = (x >> 16) mod 256).

Extras in a workload's JSON entry: bytes_per_s, the bytes predicted per second at the median
time (lm_train_window: 8 x (4 x 64 + 128) training bytes per iteration; lm_train_plain 8 x 128;
the evaluations 128); lm_train_window also log_bytes_sparse, the bytes of its log before the
gradient step (int64 indices and the [m, 2] inputs, plus M_0), counted as metacl counts them.

Usage:
  /usr/bin/python3 tools/torch/bench-lm-torch.py [--json] [--threads T] [--reps R] [--only A,B]
                                           [--device cpu|cuda] [--warmup N] [--tf32]
Needs Debian's python3-torch. tools/torch/bench-acl-vs-torch.py --bench lm runs it next to
`metacl bench lm` and prints the ratios.
"""

import math
import sys

import bench_common
from metanet_torch import g_phi, make_aug, preproc

WORKLOADS = ("lm_train_window", "lm_train_plain", "lm_eval_static", "lm_eval_dynamic", "lm_eval_smn")
DEFAULT_REPS = {"lm_train_window": 3, "lm_train_plain": 3, "lm_eval_static": 10, "lm_eval_dynamic": 5,
                "lm_eval_smn": 5}
SEED = 13
LAYERS, D, HEADS, DH, FFW, MEM, VOCAB = 4, 192, 4, 48, 768, 128, 256
K, FAST_LEN, SEG_LEN, LANES = 5, 64, 128, 8
LR, CLIP, DYN_LR, DYN_DECAY = 7e-4, 0.5, 1e-4, 1e-3
TRAIN_H = (0.05, 0.0, 0.0, 1.0)   # p, gamma, beta1, beta2
EVAL_H = (0.5, 0.999, 0.5, 0.5)
LN_EPS, INIT_STD = 1e-5, 0.02


def lcg_bytes(count):
    """The fixed data of tools/cli/bench_lm.c: count bytes from the LCG."""
    x, out = SEED, []
    for _ in range(count):
        x = (1103515245 * x + 12345) & 0x7fffffff
        out.append((x >> 16) & 255)
    return out








def sinusoids(torch, rows):
    """[rows, D]: sin(d f_i) in the first half, cos(d f_i) in the second, f_i = 10000^(-2i/D)."""
    d = torch.arange(rows, dtype=torch.float64)[:, None]
    f = torch.pow(10000.0, -2.0 * torch.arange(D // 2, dtype=torch.float64) / D)[None, :]
    return torch.cat([torch.sin(d * f), torch.cos(d * f)], 1).float()


class TransformerXL:
    """The network's slow weights and its forward; the fast weights are the caller's (effs)."""

    def __init__(self, torch, gen):
        nn = torch.nn
        self.torch = torch

        def p(*shape, std):
            return nn.Parameter(torch.randn(*shape, generator=gen) * std)

        res_std = INIT_STD / math.sqrt(2.0 * LAYERS)
        HD = HEADS * DH
        self.emb = p(VOCAB, D, std=INIT_STD)                              # [256, D]
        self.layers = []
        for _ in range(LAYERS):
            self.layers.append({
                "ln_a": (nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D))),
                "wq": p(HD, D, std=INIT_STD), "wk": p(HD, D, std=INIT_STD),  # [HD, D]
                "wv": p(HD, D, std=INIT_STD), "wr": p(HD, D, std=INIT_STD),
                "u": nn.Parameter(torch.zeros(HD)), "vb": nn.Parameter(torch.zeros(HD)),
                "wo": p(D, HD, std=res_std),                                 # [D, HD]
                "ln_f": (nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D))),
                "w1": p(FFW, D, std=INIT_STD), "b1": nn.Parameter(torch.zeros(FFW)),
                "w2": p(D, FFW, std=res_std), "b2": nn.Parameter(torch.zeros(D))})
        self.ln_o = (nn.Parameter(torch.ones(D)), nn.Parameter(torch.zeros(D)))
        self.w_out, self.b_out = p(VOCAB, D, std=INIT_STD), nn.Parameter(torch.zeros(VOCAB))
        self.pos = sinusoids(torch, MEM + SEG_LEN)                          # [M + Smax, D]

    def params(self):
        out = [self.emb]
        for y in self.layers:
            out += [y["ln_a"][0], y["ln_a"][1], y["wq"], y["wk"], y["wv"], y["wr"], y["u"], y["vb"], y["wo"],
                    y["ln_f"][0], y["ln_f"][1], y["w1"], y["b1"], y["w2"], y["b2"]]
        return out + [self.ln_o[0], self.ln_o[1], self.w_out, self.b_out]

    def augmented(self):
        """The weights that carry fast weights, in the order of effs: the embedding, then
        W_q, W_k, W_v, W_o of every layer."""
        return [self.emb] + [y[n] for y in self.layers for n in ("wq", "wk", "wv", "wo")]

    def forward(self, effs, tokens, mems):
        """effs: the weights augmented() lists, as used (W or W + M); tokens [B, S] (long);
        mems: per layer [B, M, D] (data) -> logits [B·S, 256], the new memories (detached)."""
        torch, F = self.torch, self.torch.nn.functional
        B, S = tokens.shape
        h = F.embedding(tokens, effs[0])                                    # [B, S, D]
        new_mems = []
        for l, y in enumerate(self.layers):
            wq, wk, wv, wo = effs[1 + 4 * l:5 + 4 * l]
            m = mems[l]
            M = m.shape[1]
            T = M + S
            cat = torch.cat([m, h], 1)                                      # [B, T, D]
            new_mems.append(cat[:, max(T - MEM, 0):].detach())
            c = F.layer_norm(cat, (D,), y["ln_a"][0], y["ln_a"][1], LN_EPS)
            q = F.linear(c[:, M:], wq)                                      # [B, S, HD]
            qc = (q + y["u"]).view(B, S, HEADS, DH)
            qp = (q + y["vb"]).view(B, S, HEADS, DH)
            k = F.linear(c, wk).view(B, T, HEADS, DH)                       # [B, T, H, Dh]
            v = F.linear(c, wv).view(B, T, HEADS, DH)
            r = F.linear(self.pos[:T], y["wr"]).view(T, HEADS, DH)          # [T, H, Dh] by distance
            ac = torch.einsum("bihd,bjhd->bhij", qc, k)                     # [B, H, S, T] content
            bd = torch.einsum("bihd,thd->bhit", qp, r)                      # [B, H, S, T] per distance
            dist = M + torch.arange(S)[:, None] - torch.arange(T)[None, :]  # [S, T]: M + i - j
            bd = bd.gather(3, dist.clamp_min(0).expand(B, HEADS, S, T))     # position term at i, j
            s = ((ac + bd) / math.sqrt(DH)).masked_fill(dist < 0, float("-inf"))
            a = torch.einsum("bhij,bjhd->bihd", torch.softmax(s, 3), v)     # [B, S, H, Dh]
            h = h + F.linear(a.reshape(B, S, HEADS * DH), wo)
            f = F.layer_norm(h, (D,), y["ln_f"][0], y["ln_f"][1], LN_EPS)
            h = h + F.linear(F.gelu(F.linear(f, y["w1"], y["b1"])), y["w2"], y["b2"])
        h = F.layer_norm(h.reshape(B * S, D), (D,), self.ln_o[0], self.ln_o[1], LN_EPS)
        return F.linear(h, self.w_out, self.b_out), new_mems               # [B·S, 256]


def write(torch, augs, G, hyper, log=None):
    """The sparse write of every fast weight from its gradient G (no_grad); log: one list per
    weight to append (idx, zs) to."""
    p, gamma, beta1, beta2 = hyper
    with torch.no_grad():
        for i, (a, g) in enumerate(zip(augs, G)):
            a["I"].mul_(gamma).add_(g, alpha=beta1)
            z = a["I"] + beta2 * g
            idx = (torch.rand(z.numel()) < p).nonzero().squeeze(1)          # [m]
            zs = preproc(torch, z.view(-1)[idx])                            # [m, 2]
            a["M"].view(-1)[idx] = g_phi(torch, a["phi"], zs)
            if log is not None:
                log[i].append((idx, zs))


def rebuild(torch, a, m0, lg):
    """M_{k-1} on the tape: M_0 with every element's last logged write, g_phi differentiable."""
    n = m0.numel()
    last = torch.full((n,), -1, dtype=torch.long)
    off = 0
    for idx, _ in lg:                        # later writes override earlier ones
        last[idx] = torch.arange(off, off + idx.numel())
        off += idx.numel()
    sel = (last >= 0).nonzero().squeeze(1)
    if sel.numel() == 0:
        return m0
    zs = torch.cat([z for _, z in lg])[last[sel]]
    return m0.view(-1).index_put((sel,), g_phi(torch, a["phi"], zs)).view_as(m0)


def build(torch, name, dev):
    """-> (one iteration, state with the extras)"""
    F = torch.nn.functional
    torch.manual_seed(SEED)
    gen = dev.generator(SEED)
    net = TransformerXL(torch, gen)
    fast = name != "lm_train_plain"
    augs = [make_aug(torch, torch.nn, w, gen) for w in net.augmented()] if fast else []
    train = name in ("lm_train_window", "lm_train_plain")
    lanes = LANES if train else 1
    row = ((K - 1) * FAST_LEN + SEG_LEN if name == "lm_train_window" else SEG_LEN) + 1
    data = torch.tensor(lcg_bytes(lanes * row), dtype=torch.long).view(lanes, row)

    def segment(off, n):  # inputs [lanes, n], targets [lanes·n]
        return data[:, off:off + n], data[:, off + 1:off + n + 1].reshape(-1)

    if name == "lm_train_window":
        segs = [segment(j * FAST_LEN, FAST_LEN) for j in range(K - 1)] + [segment((K - 1) * FAST_LEN, SEG_LEN)]
        nbytes = lanes * ((K - 1) * FAST_LEN + SEG_LEN)
    else:
        segs = [segment(0, SEG_LEN)]
        nbytes = lanes * SEG_LEN
    slow = net.params()
    state = {"bytes": nbytes, "log_bytes_sparse": 0, "mems": [torch.zeros(lanes, 0, D) for _ in range(LAYERS)]}

    def effs_now():
        return [a["w"] + a["M"] for a in augs] if fast else net.augmented()

    with torch.no_grad():                    # a full memory: one 128-byte segment
        _, state["mems"] = net.forward(effs_now(), segs[-1][0], state["mems"])
    params = slow + [q for a in augs for q in a["phi"]]
    opt = torch.optim.Adam(params, lr=LR) if train else None
    slow0 = [w.detach().clone() for w in slow]

    def window():
        opt.zero_grad()
        m0 = [a["M"].clone() for a in augs]
        log = [[] for _ in augs]
        for x, y in segs[:-1]:               # the fast steps
            effs = effs_now()
            logits, mems = net.forward(effs, x, state["mems"])
            G = torch.autograd.grad(F.cross_entropy(logits, y), effs)   # first order: plain data
            write(torch, augs, G, TRAIN_H, log)
            state["mems"] = mems
        state["log_bytes_sparse"] = sum(i.numel() * 8 + z.numel() * 4 for lg in log for i, z in lg) + \
            sum(m.numel() * 4 for m in m0)
        effs = [a["w"] + rebuild(torch, a, m, lg) for a, m, lg in zip(augs, m0, log)]
        x, y = segs[-1]                      # the gradient step
        logits, mems = net.forward(effs, x, state["mems"])
        F.cross_entropy(logits, y).backward()
        _, gamma, beta1, _ = TRAIN_H
        with torch.no_grad():                # window end: I takes G_k = W's gradient; M reset
            for a in augs:
                a["I"].mul_(gamma).add_(a["w"].grad, alpha=beta1)
                a["M"].zero_()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        state["mems"] = mems

    def plain():
        opt.zero_grad()
        x, y = segs[0]
        logits, mems = net.forward(net.augmented(), x, state["mems"])
        F.cross_entropy(logits, y).backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        state["mems"] = mems

    def static():
        with torch.no_grad():
            _, state["mems"] = net.forward(effs_now(), segs[0][0], state["mems"])

    def dynamic():
        for w in slow:
            w.grad = None
        x, y = segs[0]
        logits, mems = net.forward(effs_now(), x, state["mems"])
        F.cross_entropy(logits, y).backward()
        with torch.no_grad():                # theta <- theta - lr g + decay (theta_0 - theta)
            for w, w0 in zip(slow, slow0):
                if w.grad is not None:
                    w.copy_(w - DYN_LR * w.grad + DYN_DECAY * (w0 - w))
        state["mems"] = mems

    def smn():
        effs = effs_now()
        x, y = segs[0]
        logits, mems = net.forward(effs, x, state["mems"])
        write(torch, augs, torch.autograd.grad(F.cross_entropy(logits, y), effs), EVAL_H)
        state["mems"] = mems

    fns = {"lm_train_window": window, "lm_train_plain": plain, "lm_eval_static": static,
           "lm_eval_dynamic": dynamic, "lm_eval_smn": smn}
    return fns[name], state


def build_workload(torch, dev, name):
    fn, state = build(torch, name, dev)

    def extra(median):
        w = {"bytes_per_s": state["bytes"] / (median * 1e-3)}
        if state["log_bytes_sparse"]:
            w["log_bytes_sparse"] = state["log_bytes_sparse"]
        return w

    return fn, extra


def main(argv):
    return bench_common.main(argv, "bench-lm-torch.py", "lm", WORKLOADS, DEFAULT_REPS,
                             build_workload)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
