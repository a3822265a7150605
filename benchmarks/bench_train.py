"""Throughput of coatsearch.training.fit.fit against a bare PyTorch loop doing the same work per step.

Same model (a small CoAtNet-like net: conv stem, two MBConv stages, one attention stage), same in-memory
synthetic data, same batch size and number of steps. Per step, fit and the bare loop both: select the
batch by index from the in-memory tensors, make it channels_last (CPU and CUDA), set the learning rate of
every parameter group, run forward (bf16 autocast on CUDA) and cross-entropy, backward, a fused AdamW step
over two parameter groups (decay / no decay) and zero_grad; they keep the step's loss and hit count in
device buffers and check the losses for NaN (every step on CPU, every 32 on CUDA). fit additionally runs
its schedule, curve bookkeeping and progress bar; its curve points, epoch evaluation and clean train pass
are switched off here (`eval_every=0`, no eval set, `measure_train=False`) since the bare loop does none.
Before this was stated, fit ran about ten curve points on a 2,000-image probe that the benchmark never
asked for, and the ratio read 0.41-0.47.

Timings are wall-clock around whole calls, taken as the best of ROUNDS interleaved repeats. On CPU it runs
one intra-op thread by default: it measures loop overhead, not thread scaling, and on a busy shared CPU two
spin-waiting OpenMP threads make timings swing by 2-10x. The last line is
`ratio=<fit images/s / bare images/s>`.

    python benchmarks/bench_train.py [--device cpu|cuda] [--epochs N] [--no-compile]
"""

from __future__ import annotations

import copy
import time

import torch
import torch.nn.functional as F
from torch import nn

from coatsearch.training import data, fit
from coatsearch.vocab.specs import DataSpec, OptimSpec

ROUNDS = 3


class MBConv(nn.Module):
    """Pre-norm inverted bottleneck, stride 2: x <- Proj(Pool(x)) + Conv(DW(Conv(Norm(x), stride=2)))."""

    def __init__(self, cin: int, cout: int, expand: int = 4):
        super().__init__()
        mid = cout * expand
        self.shortcut = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(cin, cout, 1))
        self.norm = nn.BatchNorm2d(cin)
        self.expand = nn.Conv2d(cin, mid, 1, stride=2)
        self.dw = nn.Conv2d(mid, mid, 3, padding=1, groups=mid)
        self.proj = nn.Conv2d(mid, cout, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, cin, H, W) -> (B, cout, H/2, W/2)."""
        y = F.gelu(self.dw(F.gelu(self.expand(self.norm(x)))))
        return self.shortcut(x) + self.proj(y)


class Attention(nn.Module):
    """Pre-norm transformer block on the (H*W) tokens of a feature map."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, C, H, W)."""
        b, c, h, w = x.shape
        t = x.flatten(2).transpose(1, 2)  # (B, T, C)
        q, k, v = self.qkv(self.norm1(t)).view(b, h * w, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)  # (B, nh, T, hs)
        t = t + self.out(a.transpose(1, 2).reshape(b, h * w, c))
        t = t + self.mlp(self.norm2(t))
        return t.transpose(1, 2).reshape(b, c, h, w)


def tiny_coatnet(in_chans: int = 1, num_classes: int = 10) -> nn.Module:
    """32x32 -> stem 16 @32 -> C 32 @16 -> C 64 @8 -> T 64 @8 (2 heads) -> pool -> linear."""
    stem = nn.Sequential(nn.Conv2d(in_chans, 16, 3, padding=1), nn.BatchNorm2d(16), nn.GELU())
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.LayerNorm(64), nn.Linear(64, num_classes))
    return nn.Sequential(stem, MBConv(16, 32), MBConv(32, 64), Attention(64, 2), head)


def bare_loop(model: nn.Module, x: torch.Tensor, y: torch.Tensor, optim: OptimSpec, steps: int) -> float:
    """A plain loop doing fit's per-step work (module docstring); returns wall seconds incl. the sync."""
    dev = x.device
    fmt = fit.channels_last(dev)
    model = model.to(dev, memory_format=fmt).train()
    opt = fit.make_optimizer(model, optim)
    gen = torch.Generator().manual_seed(0)
    batch, every = optim.batch_size, fit.CHECK_EVERY_CUDA if dev.type == "cuda" else 1
    per_epoch = len(y) // batch
    losses = torch.zeros(per_epoch, device=dev)
    hits = torch.zeros(per_epoch, device=dev, dtype=torch.int64)
    start, done = time.perf_counter(), 0
    while done < steps:
        perm = torch.randperm(len(y), generator=gen).to(dev)
        for i in range(min(per_epoch, steps - done)):
            idx = perm[i * batch : (i + 1) * batch]
            xb, yb = x[idx].contiguous(memory_format=fmt), y[idx]
            for g in opt.param_groups:
                g["lr"] = optim.lr
            with fit.autocast(dev):
                logits = model(xb).float()
            loss = F.cross_entropy(logits, yb)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            losses[i], hits[i] = loss.detach(), (logits.detach().argmax(1) == yb).sum()
            if (i + 1) % every == 0 and not torch.isfinite(losses[i + 1 - every : i + 1]).all():
                raise RuntimeError("non-finite loss")
            done += 1
        hits.sum().item()
    _sync(dev)
    return time.perf_counter() - start


def _sync(device: torch.device) -> None:
    """Wait for queued device work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_fit(model: nn.Module, pool: data.TensorData, optim: OptimSpec, epochs: int, dev) -> float:
    """Wall seconds of one whole fit call (no curve points, no evaluation, no final clean pass)."""
    start = time.perf_counter()
    fit.fit(model, pool, None, optim, epochs, seed=0, device=dev, measure_train=False, eval_every=0)
    _sync(dev)
    return time.perf_counter() - start


def main() -> None:
    """Run the comparisons and print images/s, the compile speed-up and the ratio."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--epochs", type=bounded(1, 1000), default=2)
    ap.add_argument("--batch", type=bounded(1, 8192), default=128)
    ap.add_argument(
        "--threads", type=bounded(0, 4096), default=0, help="torch intra-op threads (0: 1 on CPU, see above)"
    )
    ap.add_argument("--no-compile", action="store_true", help="skip the compiled comparison (about 70 s on CPU)")
    args = ap.parse_args()
    dev = fit.pick_device(args.device)
    if args.threads or dev.type == "cpu":
        torch.set_num_threads(args.threads or 1)
    pool, _ = data.load(DataSpec("synthetic"), 32, 1)
    optim = OptimSpec(lr=1e-3, batch_size=args.batch, weight_decay=0.05, compile=False)
    steps = args.epochs * (len(pool) // args.batch)
    images = steps * args.batch
    torch.manual_seed(0)
    base = tiny_coatnet().to(dev)
    x, y = pool.x.to(dev), pool.y.to(dev)
    print(f"device={dev} threads={torch.get_num_threads()} model=tiny_coatnet 32x32x1 batch={args.batch} "
          f"steps={steps} params={sum(p.numel() for p in base.parameters())}")  # fmt: skip
    bare_loop(copy.deepcopy(base), x, y, optim, 3)  # warm-up (allocator, kernels)
    fit_s, bare_s = [], []
    for _ in range(ROUNDS):
        fit_s.append(time_fit(copy.deepcopy(base), pool, optim, args.epochs, dev))
        bare_s.append(bare_loop(copy.deepcopy(base), x, y, optim, steps))
    fit_ips, bare_ips = images / min(fit_s), images / min(bare_s)
    print(f"fit  eager: {fit_ips:8.1f} images/s  (best of {ROUNDS}: {[round(s, 2) for s in fit_s]} s)")
    print(f"bare eager: {bare_ips:8.1f} images/s  (best of {ROUNDS}: {[round(s, 2) for s in bare_s]} s)")
    if not args.no_compile:
        compiled = torch.compile(copy.deepcopy(base))
        start = time.perf_counter()
        bare_loop(compiled, x, y, optim, 2)  # compiles forward and backward
        print(f"compile: {time.perf_counter() - start:.1f} s (first two steps)")
        comp_ips = images / min(bare_loop(compiled, x, y, optim, steps) for _ in range(ROUNDS))
        print(f"bare compiled: {comp_ips:8.1f} images/s  speed-up over bare eager: {comp_ips / bare_ips:.3f}x")
    print(f"ratio={fit_ips / bare_ips:.3f}")


if __name__ == "__main__":
    main()
