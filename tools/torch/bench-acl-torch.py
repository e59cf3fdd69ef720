#!/usr/bin/env python3
"""bench-acl-torch.py — the PyTorch baseline for `metacl bench acl`, on the CPU or (--device
cuda) on a GPU.

What is measured (wall-clock time per iteration, --warmup untimed iterations (1 on the CPU, 3
on CUDA), then --reps timed iterations; ms_best = fastest, ms_median = median; on CUDA each
timed iteration lies between two torch.cuda.synchronize() calls, and TF32 is off unless --tf32:
tools/torch/bench_common.py):

  srwm      the SRWM sequence op of doc/acl-model.md §1, forward + backward, B=16 sequences, H=16
            heads, D=16, L=160 steps. x [B,H,L,D] ~ N(0,1) and the initial state W_y, W_q, W_k
            [B,H,D,D], w_b [B,H,D,4] ~ N(0,1/D) are leaf tensors that require grad.
            loss = (y*Gy).sum() + sum_i (state_out_i*Gs_i).sum() with fixed random Gy, Gs_i.
  conv4_28  Conv-4 (4 x [conv3x3 pad 1, 32 ch, bias -> InstanceNorm2d(affine) -> MaxPool 2
  conv4_32  -> Dropout(0.1) -> ReLU], training mode) on 800 images [800,1,S,S], S = 28 / 32,
            forward + backward of loss = (out*G).sum(); the input needs no grad.
  acl_step  one 2-task ACL meta-training step (doc/acl-model.md §2-4): zero_grad + the 7 calls of the
            §4 table for tasks A then B + backward + Adam step. 1x32x32 images, N=5, K=5,
            B=16 sequences, hidden 128, 8 heads (D 16), 2 layers, FF x2, dropout 0.1, Conv-4
            with 32 channels, no feature norm. States are never detached within the step.

The SRWM is written the way a PyTorch user without custom kernels would write it: an eager
step-by-step loop with autograd (out-of-place updates). The four per-head matrices are kept
concatenated as the paper's single (3D+4)-column matrix so that each step is two batched
matmuls (the read x_t·W and the retrieval difference (q−k)·W = q·W − k·W) plus one rank-1
update; this is mathematically the §1 op and is the strongest plain-PyTorch form we know of,
so the comparison is not against a strawman.

Usage:
  python3 tools/torch/bench-acl-torch.py                 # readable table (+ parameter count on stderr)
  python3 tools/torch/bench-acl-torch.py --json          # one JSON record (same shape as
                                                   #   `metacl bench acl --json`)
  python3 tools/torch/bench-acl-torch.py --threads 4 --reps 20 --only srwm,conv4_32
  python3 tools/torch/bench-acl-torch.py --device cuda --json   # the same workloads on the GPU
  python3 tools/torch/bench-acl-torch.py --check-params  # paper model (hidden 256, 16 heads,
                                                   #   3x32x32) must have 750,309 parameters
Needs PyTorch: `apt-get install python3-torch` (Debian's package is for /usr/bin/python3).
tools/torch/bench-acl-vs-torch.py runs this script next to `metacl bench acl` and compares them.
"""

import sys

import bench_common

WORKLOADS = ("srwm", "conv4_28", "conv4_32", "acl_step")
DEFAULT_REPS = {"srwm": 10, "conv4_28": 10, "conv4_32": 10, "acl_step": 5}
PAPER_PARAMS = 750309

# Fixed shapes of the workloads.
SRWM_B, SRWM_H, SRWM_D, SRWM_L = 16, 16, 16, 160
CONV_IMAGES, CONV_CHANNELS = 800, 32
ACL = dict(n_way=5, k_shot=5, batch=16, hidden=128, heads=8, layers=2, ff_mult=2,
           dropout=0.1, conv_channels=32, in_channels=1, image_size=32)
ACL_C, ACL_S_A, ACL_S_B = 0.2, 1.0, 0.1  # loss = c*[s_A(fsA+mainA) + s_B(fsB+mainB) + aclA]

torch = None  # imported in main(), after the flags are checked
nn = None
F = None
DEV = None  # bench_common.Device, made in main() after the import
MODEL_CLS = None  # the ACL model class, made by setup()



# ---------------------------------------------------------------------------------------------
# SRWM (doc/acl-model.md §1)

def srwm(x, state):
    """x [B,H,L,D]; state = (W_y, W_q, W_k [B,H,D,D], w_b [B,H,D,4]).
    Returns y [B,H,L,D] and the state after the last step (same four shapes)."""
    D = x.shape[-1]
    split = [D, D, D, 4]
    W = torch.cat(state, dim=-1)  # [B,H,D,3D+4]: columns W_y | W_q | W_k | w_b
    # column j of W is updated with rate beta[rate_idx[j]] (one rate per matrix)
    rate_idx = torch.tensor([0] * D + [1] * D + [2] * D + [3] * 4, device=x.device)
    ys = []
    for t in range(x.shape[2]):
        xt = x[:, :, t].unsqueeze(-2)  # [B,H,1,D]
        out = torch.matmul(xt, W).squeeze(-2)  # [B,H,3D+4]
        y, q, k, b = out.split(split, dim=-1)
        q = torch.softmax(q, dim=-1)
        k = torch.softmax(k, dim=-1)
        beta = torch.sigmoid(b)  # [B,H,4]
        # v − v̄ = q·W − k·W, both with the not-yet-updated weights
        delta = torch.matmul((q - k).unsqueeze(-2), W).squeeze(-2)  # [B,H,3D+4]
        upd = beta.index_select(-1, rate_idx) * delta
        W = W + k.unsqueeze(-1) * upd.unsqueeze(-2)  # rank-1 update k ⊗ beta_i·Δ_i
        ys.append(y)  # output computed before the update
    return torch.stack(ys, dim=2), tuple(W.split(split, dim=-1))


# ---------------------------------------------------------------------------------------------
# Models

def make_conv4(in_channels, channels, dropout):
    layers = []
    for i in range(4):
        layers += [nn.Conv2d(in_channels if i == 0 else channels, channels, 3, padding=1),
                   nn.InstanceNorm2d(channels, eps=1e-5, affine=True,
                                     track_running_stats=False),
                   nn.MaxPool2d(2),
                   nn.Dropout(dropout),
                   nn.ReLU()]
    return nn.Sequential(*layers)


def build_acl_classes():
    class SRWMLayer(nn.Module):
        """LayerNorm(h) + Dropout(Linear_noBias(concat_heads(srwm(split_heads(h)))))."""

        def __init__(self, hidden, heads, dropout):
            super().__init__()
            self.heads, self.D = heads, hidden // heads
            D = self.D
            sd = D ** -0.5
            self.Wy = nn.Parameter(torch.randn(heads, D, D) * sd)
            self.Wq = nn.Parameter(torch.randn(heads, D, D) * (0.01 * sd))
            self.Wk = nn.Parameter(torch.randn(heads, D, D) * sd)
            self.wb = nn.Parameter(torch.randn(heads, D, 4) * sd)
            self.ln = nn.LayerNorm(hidden, eps=1e-5)
            self.out = nn.Linear(hidden, hidden, bias=False)
            self.drop = nn.Dropout(dropout)

        def forward(self, h, state):  # h [B,L,hidden]; state None = start from the parameters
            B, L, Hd = h.shape
            if state is None:  # per-sequence copies; their gradient sums over the batch
                state = tuple(p.unsqueeze(0).expand(B, *p.shape)
                              for p in (self.Wy, self.Wq, self.Wk, self.wb))
            xs = h.view(B, L, self.heads, self.D).permute(0, 2, 1, 3)  # [B,H,L,D]
            y, new_state = srwm(xs, state)
            y = y.permute(0, 2, 1, 3).reshape(B, L, Hd)  # concat heads
            return self.ln(h) + self.drop(self.out(y)), new_state

    class FFBlock(nn.Module):
        """x + Drop(W2·Drop(ReLU(W1·LN(x))))."""

        def __init__(self, hidden, mult, dropout):
            super().__init__()
            self.ln = nn.LayerNorm(hidden, eps=1e-5)
            self.w1 = nn.Linear(hidden, mult * hidden)
            self.w2 = nn.Linear(mult * hidden, hidden)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            return x + self.drop(self.w2(self.drop(F.relu(self.w1(self.ln(x))))))

    class ACLModel(nn.Module):
        def __init__(self, n_way, hidden, heads, layers, ff_mult, dropout, conv_channels,
                     in_channels, image_size, **_):
            super().__init__()
            self.n_way = n_way
            self.conv = make_conv4(in_channels, conv_channels, dropout)
            n_feat = conv_channels * (image_size // 16) ** 2
            self.inp = nn.Linear(n_feat + n_way + 1, hidden)
            self.srwm_layers = nn.ModuleList(SRWMLayer(hidden, heads, dropout)
                                             for _ in range(layers))
            self.ff_layers = nn.ModuleList(FFBlock(hidden, ff_mult, dropout)
                                           for _ in range(layers))
            self.head = nn.Linear(hidden, n_way)

        def forward(self, images, labels, B, L, state=None):
            """images [B·L,C,S,S], labels [B·L] (n_way = unknown); row b·L+t = step t of
            sequence b. state: None or a list of per-layer 4-tuples [B,H,...].
            Returns logits [B,n_way] of the last step and the new state."""
            feat = self.conv(images).flatten(1)  # (C,H,W) order
            oh = F.one_hot(labels, self.n_way + 1).to(feat.dtype)
            h = self.inp(torch.cat([feat, oh], dim=1)).view(B, L, -1)
            new_state = []
            for i, (sl, ff) in enumerate(zip(self.srwm_layers, self.ff_layers)):
                h, s = sl(h, None if state is None else state[i])
                h = ff(h)
                new_state.append(s)
            return self.head(h[:, -1]), new_state

    return ACLModel


def count_params(model):
    return sum(p.numel() for p in model.parameters())


# ---------------------------------------------------------------------------------------------
# Workloads: each returns a closure running one timed iteration.

def setup_srwm():
    B, H, D, L = SRWM_B, SRWM_H, SRWM_D, SRWM_L
    x = torch.randn(B, H, L, D).requires_grad_()
    shapes = [(B, H, D, D)] * 3 + [(B, H, D, 4)]
    state = [(torch.randn(*s) * D ** -0.5).requires_grad_() for s in shapes]
    Gy = torch.randn(B, H, L, D)
    Gs = [torch.randn(*s) for s in shapes]
    leaves = [x] + state

    def run():
        for t in leaves:
            t.grad = None
        y, st = srwm(x, state)
        loss = (y * Gy).sum() + sum((s * g).sum() for s, g in zip(st, Gs))
        loss.backward()

    return run


def setup_conv4(S):
    net = make_conv4(1, CONV_CHANNELS, 0.1).train()
    x = torch.randn(CONV_IMAGES, 1, S, S)
    with torch.no_grad():
        G = torch.randn_like(net(x))

    def run():
        net.zero_grad(set_to_none=True)
        loss = (net(x) * G).sum()
        loss.backward()

    return run


def make_task(N, K, B, C, S):
    """Random images and labels of one task for B sequences."""
    def perm_labels(n_rep):  # each class n_rep times, shuffled, per sequence
        return torch.stack([torch.arange(N).repeat(n_rep)[torch.randperm(N * n_rep)]
                            for _ in range(B)])
    fs_lab = perm_labels(1)  # [B,N]
    ctx_lab = perm_labels(K)  # [B,N·K]
    q_lab = perm_labels(1)  # [B,N]
    return dict(fs_img=torch.randn(B * N, C, S, S), fs_lab=fs_lab.reshape(-1),
                ctx_img=torch.randn(B * N * K, C, S, S), ctx_lab=ctx_lab.reshape(-1),
                q_img=torch.randn(B * N, C, S, S), q_lab=q_lab.reshape(-1))


def setup_acl_step(model_cls):
    cfg = ACL
    N, K, B = cfg["n_way"], cfg["k_shot"], cfg["batch"]
    C, S = cfg["in_channels"], cfg["image_size"]
    model = model_cls(**cfg).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.995), eps=1e-9)
    task_a = make_task(N, K, B, C, S)
    task_b = make_task(N, K, B, C, S)
    unknown = torch.full((B * N,), N, dtype=torch.long)

    def query_loss(task, state):
        """The task's N queries per sequence, each a length-1 call with the unknown token
        from the sequence's state (state repeated N times: batch B·N)."""
        rep = [tuple(t.repeat_interleave(N, dim=0) for t in layer) for layer in state]
        logits, _ = model(task["q_img"], unknown, B * N, 1, rep)
        return F.cross_entropy(logits, task["q_lab"])  # mean over the B·N queries

    def first_shot(task, state):
        _, s = model(task["fs_img"], task["fs_lab"], B, N, state)
        return query_loss(task, s)

    def context(task, state):
        _, s = model(task["ctx_img"], task["ctx_lab"], B, N * K, state)
        return s

    def run():
        opt.zero_grad(set_to_none=True)
        fs_a = first_shot(task_a, None)  # from W0
        w_a = context(task_a, None)
        main_a = query_loss(task_a, w_a)
        fs_b = first_shot(task_b, w_a)
        w_ab = context(task_b, w_a)
        main_b = query_loss(task_b, w_ab)
        acl_a = query_loss(task_a, w_ab)  # backward transfer
        loss = ACL_C * (ACL_S_A * (fs_a + main_a) + ACL_S_B * (fs_b + main_b) + acl_a)
        loss.backward()
        opt.step()

    return run, count_params(model)


def describe(name):
    if name == "srwm":
        return "srwm forward+backward B%d H%d D%d L%d" % (SRWM_B, SRWM_H, SRWM_D, SRWM_L)
    if name.startswith("conv4_"):
        s = int(name[6:])
        return "conv4 forward+backward %dx1x%dx%d C%d" % (CONV_IMAGES, s, s, CONV_CHANNELS)
    c = ACL
    return ("acl 2-task step (fwd+bwd+adam) N%d K%d B%d hidden %d heads %d layers %d %dx%dx%d"
            % (c["n_way"], c["k_shot"], c["batch"], c["hidden"], c["heads"], c["layers"],
               c["in_channels"], c["image_size"], c["image_size"]))


def add_extra_args(ap):
    ap.add_argument("--check-params", action="store_true",
                    help="build the paper model (hidden 256, 16 heads, 3x32x32), print its "
                         "parameter count, exit 0 if it is 750309 else 1")


def setup(torch_module, dev, args):
    """The module globals the model code uses; --check-params answers here and stops."""
    global torch, nn, F, DEV, MODEL_CLS
    torch, nn, F, DEV = torch_module, torch_module.nn, torch_module.nn.functional, dev
    torch.manual_seed(0)
    MODEL_CLS = build_acl_classes()
    if args.check_params:
        cfg = dict(ACL, hidden=256, heads=16, in_channels=3, image_size=32)
        n = count_params(MODEL_CLS(**cfg))
        ok = n == PAPER_PARAMS
        print("paper ACL model (hidden 256, 16 heads, 2 layers, 3x32x32, N 5): %d parameters"
              " (spec: %d) %s" % (n, PAPER_PARAMS, "OK" if ok else "MISMATCH"))
        return 0 if ok else 1
    return None


def build(torch_module, dev, name):
    if name == "srwm":
        run = setup_srwm()
    elif name in ("conv4_28", "conv4_32"):
        run = setup_conv4(int(name[6:]))
    else:
        run, n_params = setup_acl_step(MODEL_CLS)
        print("acl_step model: %d parameters" % n_params, file=sys.stderr)
    return run, lambda median: {"desc": describe(name)}


def main(argv):
    return bench_common.main(argv, "bench-acl-torch.py", "acl", WORKLOADS, DEFAULT_REPS, build,
                             add_extra_args=add_extra_args, setup=setup)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
