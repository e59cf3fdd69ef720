"""metanet_torch.py — the Sparse-MetaNet fast-weight pieces that the SMN and LM PyTorch baselines
share (tools/torch/bench-smn-torch.py, tools/torch/bench-lm-torch.py): the gradient
preprocessing, a fast weight's state and its meta-learner g_phi. The C side is
src/nn/metanet.c; the shapes and constants here are the ones it uses.
"""

import math

PRE_P = 10.0     # preprocessing exponent P (Andrychowicz et al.)
SLOPE = 0.01     # LeakyReLU slope of g_phi
H_META = 20      # g_phi's hidden width: 2 -> 20 -> 20 -> 1


def preproc(torch, z):
    """z [m] -> [m, 2]: (log|z| / P, sign z) where |z| >= e^-P, else (-1, e^P z)."""
    a = z.abs()
    big = a >= math.exp(-PRE_P)
    x0 = torch.where(big, torch.log(a.clamp_min(1e-30)) / PRE_P, torch.full_like(z, -1.0))
    x1 = torch.where(big, torch.sign(z), z * math.exp(PRE_P))
    return torch.stack([x0, x1], 1)


def make_aug(torch, nn, w, gen):
    """A fast weight for the slow weight w: M, I and g_phi's parameters (output layer 0)."""
    h = H_META
    phi = nn.ParameterList([
        nn.Parameter(torch.randn(h, 2, generator=gen) * math.sqrt(0.5)), nn.Parameter(torch.zeros(h)),
        nn.Parameter(torch.randn(h, h, generator=gen) * math.sqrt(1.0 / h)), nn.Parameter(torch.zeros(h)),
        nn.Parameter(torch.zeros(1, h)), nn.Parameter(torch.zeros(1))])
    return {"w": w, "M": torch.zeros_like(w.detach()), "I": torch.zeros_like(w.detach()), "phi": phi}


def g_phi(torch, phi, zs):
    """zs [m, 2] -> [m]"""
    F = torch.nn.functional
    h = F.leaky_relu(F.linear(zs, phi[0], phi[1]), SLOPE)
    h = F.leaky_relu(F.linear(h, phi[2], phi[3]), SLOPE)
    return F.linear(h, phi[4], phi[5]).squeeze(1)
