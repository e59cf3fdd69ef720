#!/usr/bin/env python3
"""bench-smn-torch.py — the PyTorch baseline for `metacl bench smn`, on the CPU or (--device
cuda) on a GPU.

The same workloads with the same shapes as tools/cli/bench_smn.c (wall-clock time per iteration,
--warmup untimed iterations (1 on the CPU, 3 on CUDA), then --reps timed iterations; ms_best =
fastest, ms_median = median; on CUDA each timed iteration lies between two
torch.cuda.synchronize() calls, TF32 off unless --tf32: tools/torch/bench_common.py):

  smn_wcst_window    one k = 3 window of Algorithm 1 (Sparse Meta Networks, Munkhdalai 2019;
                     doc/smn-model.md) for the WCST agent: 12 -> 256 -> 256 ReLU, a policy head
                     (4) and a value head (1), every weight augmented with a fast weight M and
                     its own meta-learner g_phi (2 -> 20 -> 20 -> 1, LeakyReLU 0.01); p 0.3,
                     gamma 0.9, beta1 = beta2 = 0.5; three fixed episodes of 16 cards [16, 12]
                     (one per step); the loss of a step: cross-entropy of the policy logits
                     against fixed actions + 0.5 * MSE of the value against fixed rewards (+-1).
                     2 fast steps, then the gradient step (forward through W + M_2 rebuilt with
                     autograd from the window's surviving writes, backward, Adam lr 3e-4)
  smn_resnet_window  the same window for the Online-X residual CNN: 4 blocks of 16, 24, 32, 64
                     channels (conv3x3 -> InstanceNorm(affine) -> ReLU -> conv3x3 ->
                     InstanceNorm, + 1x1 conv of the block input, ReLU, max-pool 2), flatten, a
                     5-way linear head, every conv and the head augmented; rounds of 16 images
                     [16, 1, 32, 32], cross-entropy; p 0.3, gamma 0.99, beta1 = beta2 = 0.5
  smn_resnet_plain   one plain online step of the same CNN without fast weights (forward,
                     cross-entropy, backward, Adam)

Written as a PyTorch user would: eff = W + M; a fast step's gradient G = d loss / d eff is
torch.autograd.grad(loss, effs) (first order: plain data); under no_grad I = gamma I + beta1 G,
z = I + beta2 G, the mask torch.rand(n) < p -> idx = nonzero, zs = preprocessed z[idx] [m, 2]
(Andrychowicz et al., P = 10), M.view(-1)[idx] = g_phi(zs), and the window logs (idx, zs). The
gradient step rebuilds M_{k-1} = M_0 with the surviving (last) writes through index_put with
autograd, so that phi gets its gradients.

Memory: a window workload's JSON entry has log_bytes_sparse, the bytes of its log before the
gradient step (int64 indices and the [m, 2] inputs, plus M_0), counted as metacl counts them.

Usage:
  /usr/bin/python3 tools/torch/bench-smn-torch.py [--json] [--threads T] [--reps R] [--only A,B]
                                            [--device cpu|cuda] [--warmup N] [--tf32]
Needs Debian's python3-torch. tools/torch/bench-acl-vs-torch.py --bench smn runs it next to
`metacl bench smn` and prints the ratios.
"""

import math
import sys

import bench_common
from metanet_torch import g_phi, make_aug, preproc

WORKLOADS = ("smn_wcst_window", "smn_resnet_window", "smn_resnet_plain")
DEFAULT_REPS = {"smn_wcst_window": 20, "smn_resnet_window": 5, "smn_resnet_plain": 10}
K, ROWS, CARD, ACTIONS, CLASSES = 3, 16, 12, 4, 5








def build(torch, kind, dev):
    """kind: wcst | resnet | plain -> (step function, state with the memory figure)"""
    nn, F = torch.nn, torch.nn.functional
    torch.manual_seed(13)
    gen = dev.generator(13)
    fast = kind != "plain"
    if kind == "wcst":
        p, gamma, beta1, beta2 = 0.3, 0.9, 0.5, 0.5
        shapes = [(256, CARD), (256, 256), (ACTIONS, 256), (1, 256)]
        gains = [1.0, 1.0, 0.1, 0.1]
        ws = [nn.Parameter(torch.randn(*s, generator=gen) * g * math.sqrt(2.0 / s[1])) for s, g in zip(shapes, gains)]
        bs = [nn.Parameter(torch.zeros(s[0])) for s in shapes]
        norms = []
        xs, ys, rs = [], [], []
        for j in range(K):
            x = torch.zeros(ROWS, CARD)
            for i in range(ROWS):
                x[i, (7 * i + 5 * j) % 4] = 1.0
                x[i, 4 + (3 * i + j + 1) % 4] = 1.0
                x[i, 8 + (5 * i + 3 * j + 2) % 4] = 1.0
            xs.append(x)
            ys.append(torch.tensor([(i + j) % ACTIONS for i in range(ROWS)]))
            rs.append(torch.tensor([[1.0 if (3 * i + j) % 2 else -1.0] for i in range(ROWS)]))

        def forward(effs, j):
            h = F.relu(F.linear(xs[j], effs[0], bs[0]))
            h = F.relu(F.linear(h, effs[1], bs[1]))
            logits, v = F.linear(h, effs[2], bs[2]), F.linear(h, effs[3], bs[3])
            return F.cross_entropy(logits, ys[j]) + 0.5 * F.mse_loss(v, rs[j])
    else:
        p, gamma, beta1, beta2 = 0.3, 0.99, 0.5, 0.5
        widths = [16, 24, 32, 64]
        ws, bs, norms = [], [], []
        cin = 1
        for co in widths:
            for s in [(co, cin, 3, 3), (co, co, 3, 3), (co, cin, 1, 1)]:
                fan = s[1] * s[2] * s[3]
                ws.append(nn.Parameter(torch.randn(*s, generator=gen) * math.sqrt(2.0 / fan)))
                bs.append(nn.Parameter(torch.zeros(co)))
            norms += [(nn.Parameter(torch.ones(co)), nn.Parameter(torch.zeros(co))) for _ in range(2)]
            cin = co
        ws.append(nn.Parameter(torch.randn(CLASSES, cin * 4, generator=gen) * 0.5 * math.sqrt(2.0 / (cin * 4))))
        bs.append(nn.Parameter(torch.zeros(CLASSES)))
        xs = [torch.randn(ROWS, 1, 32, 32, generator=gen) for _ in range(K)]
        ys = [torch.tensor([(i + j) % CLASSES for i in range(ROWS)]) for j in range(K)]

        def forward(effs, j):
            h = xs[j]
            for b in range(4):
                e1, e2, e3 = effs[3 * b:3 * b + 3]
                (g1, n1), (g2, n2) = norms[2 * b], norms[2 * b + 1]
                a = F.conv2d(h, e1, bs[3 * b], padding=1)
                a = F.relu(F.instance_norm(a, weight=g1, bias=n1, eps=1e-5))
                a = F.conv2d(a, e2, bs[3 * b + 1], padding=1)
                a = F.instance_norm(a, weight=g2, bias=n2, eps=1e-5)
                s = F.conv2d(h, e3, bs[3 * b + 2])
                h = F.max_pool2d(F.relu(a + s), 2)
            return F.cross_entropy(F.linear(h.flatten(1), effs[12], bs[12]), ys[j])

    augs = [make_aug(torch, nn, w, gen) for w in ws] if fast else []
    params = list(ws) + list(bs) + [t for pair in norms for t in pair] + [q for a in augs for q in a["phi"]]
    opt = torch.optim.Adam(params, lr=3e-4)
    state = {"log_bytes_sparse": 0}

    def plain_step():
        opt.zero_grad()
        forward(ws, 0).backward()
        opt.step()

    def window():
        opt.zero_grad()
        m0 = [a["M"].clone() for a in augs]
        log = [[] for _ in augs]
        for j in range(K - 1):                       # the fast steps
            effs = [a["w"] + a["M"] for a in augs]
            loss = forward(effs, j)
            G = torch.autograd.grad(loss, effs)      # first order: plain data
            with torch.no_grad():
                for a, g, lg in zip(augs, G, log):
                    a["I"].mul_(gamma).add_(g, alpha=beta1)
                    z = a["I"] + beta2 * g
                    idx = (torch.rand(z.numel()) < p).nonzero().squeeze(1)
                    zs = preproc(torch, z.view(-1)[idx])
                    a["M"].view(-1)[idx] = g_phi(torch, a["phi"], zs)
                    lg.append((idx, zs))
        state["log_bytes_sparse"] = sum(i.numel() * 8 + z.numel() * 4 for lg in log for i, z in lg) + \
            sum(m.numel() * 4 for m in m0)
        effs = []                                    # the gradient step: M_{k-1} on the tape
        for a, m, lg in zip(augs, m0, log):
            n = m.numel()
            last = torch.full((n,), -1, dtype=torch.long)
            off = 0
            for idx, _ in lg:                        # later writes override earlier ones
                last[idx] = torch.arange(off, off + idx.numel())
                off += idx.numel()
            sel = (last >= 0).nonzero().squeeze(1)
            zs = torch.cat([z for _, z in lg])[last[sel]]
            mk = m.view(-1).index_put((sel,), g_phi(torch, a["phi"], zs)).view_as(m)
            effs.append(a["w"] + mk)
        forward(effs, K - 1).backward()
        with torch.no_grad():                        # I takes G_k = W's gradient
            for a in augs:
                a["I"].mul_(gamma).add_(a["w"].grad, alpha=beta1)
        opt.step()

    return (window if fast else plain_step), state


KINDS = {"smn_wcst_window": "wcst", "smn_resnet_window": "resnet", "smn_resnet_plain": "plain"}


def build_workload(torch, dev, name):
    fn, state = build(torch, KINDS[name], dev)
    # the window log's size is known after the timed runs
    return fn, lambda median: ({"log_bytes_sparse": state["log_bytes_sparse"]}
                               if state["log_bytes_sparse"] else {})


def main(argv):
    return bench_common.main(argv, "bench-smn-torch.py", "smn", WORKLOADS, DEFAULT_REPS,
                             build_workload)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
