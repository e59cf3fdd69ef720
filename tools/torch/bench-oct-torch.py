#!/usr/bin/env python3
"""bench-oct-torch.py — the PyTorch baseline for `metacl bench oct`, on the CPU or (--device
cuda) on a GPU.

The same workloads with the same shapes as tools/cli/bench_oct.c (wall-clock time per iteration,
--warmup untimed iterations (1 on the CPU, 3 on CUDA), then --reps timed iterations; ms_best =
fastest, ms_median = median; on CUDA each timed iteration lies between two
torch.cuda.synchronize() calls, TF32 off unless --tf32: tools/torch/bench_common.py):

  oct_step    one online training step of the pi-transformer (doc/oct-model.md): a chunk of
              S = 50 images [50,1,32,32] through Conv-4 (4 x [conv3x3 32 ch, bias ->
              InstanceNorm2d(affine) -> MaxPool 2 -> ReLU]), W_in to width 256, 4 parallel
              blocks h + W_o Attn(LN h) + W_down GELU(W_up LN h) (4 query heads, 1 key/value
              head, head size 64, FFW x4), keys/values with the label rows W_kbar[y], W_vbar[y]
              added; each block attends to a fixed ring of C = 1000 earlier keys/values (no
              gradient) and causally to the chunk's own tokens strictly before each query;
              final LayerNorm, linear head to 10 labels, cross-entropy; backward; AdamW step.
  attn_C*     the attention alone (ring C = 0 / 250 / 1000 / 4000), forward + backward of
              sum(o * G), gradients to q, k, v.

The attention is written as a PyTorch user would: one batched matmul for the scores against
[ring ; chunk], a boolean mask, softmax, one matmul with the values (autograd for backward).

Usage:
  /usr/bin/python3 tools/torch/bench-oct-torch.py [--json] [--threads T] [--reps R] [--only A,B]
                                            [--device cpu|cuda] [--warmup N] [--tf32]
Needs Debian's python3-torch. tools/torch/bench-acl-vs-torch.py --bench oct runs it next to
`metacl bench oct` and prints the ratios.
"""

import sys

import bench_common

WORKLOADS = ("oct_step", "attn_C0", "attn_C250", "attn_C1000", "attn_C4000")
DEFAULT_REPS = {"oct_step": 5, "attn_C0": 20, "attn_C250": 20, "attn_C1000": 10, "attn_C4000": 5}
S, HQ, DK, WIDTH, BLOCKS, RING, NWAY = 50, 4, 64, 256, 4, 1000, 10


def attention(torch, q, k, v, kb, vb):
    """q [S,HQ,DK], k/v [S,1,DK], ring kb/vb [C,1,DK] -> o [S,HQ,DK]; key j < C + t visible."""
    C = kb.shape[0]
    keys = torch.cat([kb, k], 0)[:, 0, :]           # [C+S, DK]
    vals = torch.cat([vb, v], 0)[:, 0, :]
    s = torch.einsum("thd,jd->htj", q, keys) / DK ** 0.5   # [HQ, S, C+S]
    t = torch.arange(S).unsqueeze(1)
    j = torch.arange(C + S).unsqueeze(0)
    allowed = j < C + t                              # strictly causal within the chunk
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, -1)
    p = torch.nan_to_num(p)                          # the first token of an empty ring: no key
    return torch.einsum("htj,jd->thd", p, vals)


def build_step(torch):
    nn = torch.nn
    torch.manual_seed(11)

    class Conv4(nn.Module):
        def __init__(self):
            super().__init__()
            layers = []
            for i in range(4):
                layers += [nn.Conv2d(1 if i == 0 else 32, 32, 3, padding=1),
                           nn.InstanceNorm2d(32, affine=True), nn.MaxPool2d(2), nn.ReLU()]
            self.net = nn.Sequential(*layers)

        def forward(self, x):
            return self.net(x).flatten(1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(WIDTH)
            self.wq = nn.Linear(WIDTH, HQ * DK, bias=False)
            self.wk = nn.Linear(WIDTH, DK, bias=False)
            self.wv = nn.Linear(WIDTH, DK, bias=False)
            self.wkbar = nn.Embedding(NWAY, DK)
            self.wvbar = nn.Embedding(NWAY, DK)
            self.wo = nn.Linear(HQ * DK, WIDTH, bias=False)
            self.up = nn.Linear(WIDTH, 4 * WIDTH)
            self.down = nn.Linear(4 * WIDTH, WIDTH)

        def forward(self, h, y, kb, vb):
            hb = self.ln(h)
            q = self.wq(hb).view(S, HQ, DK)
            k = (self.wk(hb) + self.wkbar(y)).view(S, 1, DK)
            v = (self.wv(hb) + self.wvbar(y)).view(S, 1, DK)
            a = attention(torch, q, k, v, kb, vb).reshape(S, HQ * DK)
            return h + self.wo(a) + self.down(torch.nn.functional.gelu(self.up(hb)))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.f = Conv4()
            self.inp = nn.Linear(32 * 2 * 2, WIDTH)
            self.blocks = nn.ModuleList([Block() for _ in range(BLOCKS)])
            self.lnf = nn.LayerNorm(WIDTH)
            self.head = nn.Linear(WIDTH, NWAY)

        def forward(self, x, y, rings):
            h = self.inp(self.f(x))
            for b, (kb, vb) in zip(self.blocks, rings):
                h = b(h, y, kb, vb)
            return self.head(self.lnf(h))

    m = Model()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    x = torch.randn(S, 1, 32, 32)
    y = torch.arange(S) % NWAY
    rings = [(torch.randn(RING, 1, DK), torch.randn(RING, 1, DK)) for _ in range(BLOCKS)]

    def step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x, y, rings), y)
        loss.backward()
        opt.step()

    return step


def build_attn(torch, C):
    torch.manual_seed(12)
    q = torch.randn(S, HQ, DK, requires_grad=True)
    k = torch.randn(S, 1, DK, requires_grad=True)
    v = torch.randn(S, 1, DK, requires_grad=True)
    kb, vb = torch.randn(C, 1, DK), torch.randn(C, 1, DK)
    g = torch.randn(S, HQ, DK)

    def step():
        for t in (q, k, v):
            t.grad = None
        (attention(torch, q, k, v, kb, vb) * g).sum().backward()

    return step


def build(torch, dev, name):
    if name == "oct_step":
        return build_step(torch), None
    return build_attn(torch, int(name.split("C")[1])), None


def main(argv):
    return bench_common.main(argv, "bench-oct-torch.py", "oct", WORKLOADS, DEFAULT_REPS, build)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
