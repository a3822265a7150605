"""Throughput of coatsearch.train.fit against a bare PyTorch loop, and of torch.compile + channels_last.

Same model (a small CoAtNet-like net: conv stem, two MBConv stages, one attention stage), same in-memory
synthetic data, same batch size and number of steps. Timings are wall-clock around whole calls, taken as
the best of ROUNDS interleaved repeats. On CPU it runs one intra-op thread by default: it measures loop
overhead, not thread scaling, and on a busy shared CPU two spin-waiting OpenMP threads make timings swing
by 2-10x. The last line is `ratio=<fit images/s / bare images/s>`.

    python benchmarks/bench_train.py [--device cpu|cuda] [--epochs N]
"""

from __future__ import annotations

import argparse
import copy
import time

import torch
import torch.nn.functional as F
from torch import nn

from coatsearch import data, train
from coatsearch.spec import DataSpec, OptimSpec

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


def bare_loop(model: nn.Module, x: torch.Tensor, y: torch.Tensor, batch: int, steps: int, cl: bool) -> float:
    """Plain AdamW loop (no schedule, no metrics); returns wall seconds including the final sync."""
    fmt = torch.channels_last if cl else torch.contiguous_format
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    model.train()
    start = time.perf_counter()
    done = 0
    while done < steps:
        perm = torch.randperm(len(y), generator=gen).to(x.device)
        for i in range(min(len(y) // batch, steps - done)):
            idx = perm[i * batch : (i + 1) * batch]
            loss = F.cross_entropy(model(x[idx].contiguous(memory_format=fmt)), y[idx])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            done += 1
    _sync(x.device)
    return time.perf_counter() - start


def _sync(device: torch.device) -> None:
    """Wait for queued device work."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_fit(model: nn.Module, pool: data.TensorData, optim: OptimSpec, epochs: int, dev) -> float:
    """Wall seconds of one whole fit call (no evaluation, no final clean pass)."""
    start = time.perf_counter()
    train.fit(model, pool, None, optim, epochs, seed=0, device=dev, measure_train=False)
    _sync(dev)
    return time.perf_counter() - start


def main() -> None:
    """Run the comparisons and print images/s, the compile speed-up and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: 1 on CPU, see above)")
    args = ap.parse_args()
    dev = train.pick_device(args.device)
    if args.threads or dev.type == "cpu":
        torch.set_num_threads(args.threads or 1)
    pool, _ = data.load(DataSpec("synthetic"), 32, 1)
    optim = OptimSpec(lr=1e-3, batch_size=args.batch, weight_decay=0.05)
    steps = args.epochs * (len(pool) // args.batch)
    images = steps * args.batch
    torch.manual_seed(0)
    base = tiny_coatnet().to(dev)
    x, y = pool.x.to(dev), pool.y.to(dev)
    print(f"device={dev} threads={torch.get_num_threads()} model=tiny_coatnet 32x32x1 batch={args.batch} "
          f"steps={steps} params={sum(p.numel() for p in base.parameters())}")  # fmt: skip
    bare_loop(copy.deepcopy(base), x, y, args.batch, 3, cl=False)  # warm-up (allocator, kernels)
    fit_s, bare_s = [], []
    for _ in range(ROUNDS):
        fit_s.append(time_fit(copy.deepcopy(base), pool, optim, args.epochs, dev))
        bare_s.append(bare_loop(copy.deepcopy(base), x, y, args.batch, steps, cl=False))
    fit_ips, bare_ips = images / min(fit_s), images / min(bare_s)
    print(f"fit  eager: {fit_ips:8.1f} images/s  (best of {ROUNDS}: {[round(s, 2) for s in fit_s]} s)")
    print(f"bare eager: {bare_ips:8.1f} images/s  (best of {ROUNDS}: {[round(s, 2) for s in bare_s]} s)")
    compiled = torch.compile(copy.deepcopy(base).to(memory_format=torch.channels_last))
    start = time.perf_counter()
    bare_loop(compiled, x, y, args.batch, 2, cl=True)  # compiles forward and backward
    print(f"compile: {time.perf_counter() - start:.1f} s (first two steps)")
    comp_ips = images / min(bare_loop(compiled, x, y, args.batch, steps, cl=True) for _ in range(ROUNDS))
    print(f"bare compiled+channels_last: {comp_ips:8.1f} images/s  speed-up over bare eager: "
          f"{comp_ips / bare_ips:.3f}x")  # fmt: skip
    print(f"ratio={fit_ips / bare_ips:.3f}")


if __name__ == "__main__":
    main()
