"""bench_torch_device.py — the device choice and the timing loop shared by the PyTorch twins of
`metacl bench` (tools/bench-acl-torch.py, bench-oct-torch.py, bench-smn-torch.py,
bench-lm-torch.py), which import it from their own folder.

  --device cpu | cuda | cuda:N   where the workloads run (default cpu). On CUDA every tensor,
                                 parameter and generator the scripts make is created on the
                                 device (torch.set_default_device, PyTorch >= 2.0), so the
                                 workloads are the same code on either device.
  --warmup N                     untimed iterations before the timed ones (default 1 on the
                                 CPU, as metacl bench does; 3 on CUDA, where the first ones
                                 also choose cuDNN's algorithms and fill the caching allocator)
  --tf32                         CUDA only: allow TF32 in matrix products and convolutions.
                                 Off by default: metacl computes in plain float32 (the OpenCL
                                 backend's GEMM is CLBlast's SGEMM), so PyTorch does too.

Timing: each timed iteration is wall-clock time between two torch.cuda.synchronize() calls on
CUDA (all queued work of the iteration is inside), plain wall-clock time on the CPU.
"""

import re
import statistics
import time


def add_args(ap):
    ap.add_argument("--device", default="cpu",
                    help="cpu (default), cuda or cuda:N: where the workloads run")
    ap.add_argument("--warmup", type=int, default=None,
                    help="untimed iterations first (default 1 on the CPU, 3 on CUDA)")
    ap.add_argument("--tf32", action="store_true",
                    help="CUDA: allow TF32 (default: plain float32, as metacl)")


def check_args(ap, a):
    if a.device != "cpu" and not re.fullmatch(r"cuda(:[0-9]+)?", a.device):
        ap.error("--device must be cpu, cuda or cuda:N (not %r)" % a.device)
    if a.warmup is not None and a.warmup < 0:
        ap.error("--warmup must be >= 0")


class Device:
    """The device of one run: made after `import torch`, before any tensor."""

    def __init__(self, torch, a, prog):
        self.torch = torch
        self.name = a.device
        self.cuda = a.device.startswith("cuda")
        self.warmup = a.warmup if a.warmup is not None else (3 if self.cuda else 1)
        self.tf32 = bool(a.tf32) and self.cuda
        self.device_name = "cpu"
        if not self.cuda:
            return
        if not torch.cuda.is_available():
            raise SystemExit("%s: --device %s: PyTorch %s sees no CUDA device"
                             % (prog, a.device, torch.__version__))
        if not hasattr(torch, "set_default_device"):
            raise SystemExit("%s: --device %s needs PyTorch >= 2.0 (this is %s)"
                             % (prog, a.device, torch.__version__))
        if ":" in a.device:
            torch.cuda.set_device(int(a.device.split(":")[1]))
        torch.set_default_device(a.device)
        torch.backends.cuda.matmul.allow_tf32 = self.tf32
        torch.backends.cudnn.allow_tf32 = self.tf32
        self.device_name = torch.cuda.get_device_name()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def generator(self, seed):
        """A seeded generator on the device (a CPU generator cannot feed CUDA tensors)."""
        return self.torch.Generator(device=self.name).manual_seed(seed)

    def time_reps(self, run, reps):
        """warm-up, then reps timed calls of run(); returns (best ms, median ms)."""
        for _ in range(self.warmup):
            run()
        self.sync()
        ms = []
        for _ in range(reps):
            self.sync()
            t0 = time.perf_counter()
            run()
            self.sync()
            ms.append((time.perf_counter() - t0) * 1e3)
        return min(ms), statistics.median(ms)

    def record(self):
        """The fields a script's JSON record gets."""
        return {"device": self.name, "device_name": self.device_name, "warmup": self.warmup,
                "tf32": self.tf32}
