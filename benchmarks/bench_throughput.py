"""Training throughput of every paper_layouts candidate eager, eager + channels_last, compiled, compiled +
channels_last,
against the machine's peak measured in the same run.

Each mode trains the matched candidate (fused AdamW, batch 128, random inputs of the space's shape) for
WARMUP untimed steps (compiling happens there; its time is printed) and then STEPS timed steps. Achieved
GFLOP/s = 6 x MACs x images/s (forward 2 x MACs, backward about twice the forward). The peak is a large
square matmul: fp32 on CPU, bf16 on CUDA (where training runs bf16 autocast and channels_last). The last
line is `fraction_of_peak=<mean over candidates of the best mode's GFLOP/s / peak GFLOP/s>`.

    python benchmarks/bench_throughput.py [--device cpu|cuda] [--candidates C-C-T-T,...] [--modes eager,...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from coatsearch import speed, train
from coatsearch.candidates import prepare
from coatsearch.curve import autocast
from coatsearch.models import build
from coatsearch.space import load_space

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
MODES = ("eager", "channels_last", "compiled", "compiled+channels_last")
WARMUP, STEPS, BATCH = 3, 20, 128


def peak_gflops(device: torch.device, n: int | None = None, reps: int = 5) -> float:
    """GFLOP/s of an n x n matmul (fp32 on CPU, bf16 on CUDA): what this device can do at best."""
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    n = n or (8192 if device.type == "cuda" else 2048)
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(reps):
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 / best / 1e9


def sync(device: torch.device) -> None:
    """Wait for queued CUDA work (no-op on CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(spec, mode: str, device: torch.device, steps: int) -> tuple[float, float]:
    """(training images/s, compile seconds) of one candidate in one mode."""
    torch.manual_seed(0)
    fmt = torch.channels_last if "channels_last" in mode else torch.contiguous_format
    model = build(spec).to(device, memory_format=fmt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    compiled = mode.startswith("compiled")
    if compiled:
        speed.configure_dynamo()
    run = torch.compile(model, dynamic=False) if compiled else model
    x = torch.randn(BATCH, spec.in_chans, spec.image_size, spec.image_size, device=device)
    x = x.contiguous(memory_format=fmt)
    y = torch.randint(0, spec.num_classes, (BATCH,), device=device)

    def step() -> None:
        with autocast(device):
            loss = F.cross_entropy(run(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    start = time.perf_counter()
    for _ in range(WARMUP):
        step()
    sync(device)
    warm = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    per_step = (time.perf_counter() - start) / steps
    return BATCH / per_step, max(0.0, warm - WARMUP * per_step)


def main() -> None:
    """Measure every candidate in every mode; print a table, the peak and the fraction of it reached."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--candidates", help="comma-separated names (default: all of paper_layouts)")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = train.pick_device(args.device)
    space = load_space(SPACE)
    names = args.candidates.split(",") if args.candidates else [c.name for c in space.candidates]
    modes = args.modes.split(",")
    peak = peak_gflops(device)
    print(f"device {device}, threads {torch.get_num_threads()}, peak {peak:.1f} GFLOP/s")
    print(f"{'candidate':10} {'MACs':>7} " + " ".join(f"{m:>24}" for m in modes) + "  best/eager")
    fractions = []
    for name in names:
        spec = prepare(space.candidate(name)).model
        macs = prepare(space.candidate(name)).macs
        rates = {m: measure(spec, m, device, args.steps) for m in modes}
        cells = [f"{r:7.0f} img/s {6 * macs * r / 1e9:5.1f} GF ({c:3.0f}s)" for r, c in rates.values()]
        best = max(r for r, _ in rates.values())
        ratio = best / rates["eager"][0] if "eager" in rates else float("nan")
        print(f"{name:10} {macs / 1e6:6.2f}M " + " ".join(f"{c:>24}" for c in cells) + f"  {ratio:.2f}x")
        fractions.append(6 * macs * best / 1e9 / peak)
    print(f"fraction_of_peak={sum(fractions) / len(fractions):.4f}")


if __name__ == "__main__":
    main()
