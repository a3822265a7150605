"""Training throughput of every paper_layouts candidate in each mode, against the machine's peak measured in
the same run.

Modes: eager, eager + channels_last, compiled (whole model), compiled + channels_last, regional +
channels_last (each stage block compiled on its own, as `compile: auto` does on CPU) and, on CUDA,
captured + channels_last (`mode="reduce-overhead"`: the step's kernels replayed as CUDA graphs, as
`compile: auto` does on CUDA). Each mode trains the matched candidate (fused AdamW, the profile's batch
size, random inputs of the space's shape, resident on the device; no host sync inside the timed steps) for
WARMUP untimed steps (compiling happens there; its time is printed) and then STEPS timed steps. Achieved
GFLOP/s = 6 x MACs x images/s (forward 2 x MACs, backward about twice the forward). The peak is a large
square matmul: fp32 on CPU, bf16 on CUDA (where training runs bf16 autocast and channels_last). The last
line is `fraction_of_peak=<mean over candidates of the best mode's GFLOP/s / peak GFLOP/s>`; each row also
prints its best mode's fraction.

    python benchmarks/bench_throughput.py [--device cpu|cuda] [--profile full] [--candidates C-C-T-T,...]
                                          [--modes eager,...]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from coatsearch.budget.prepare import prepare
from coatsearch.models import build
from coatsearch.space.objects import load_space
from coatsearch.training import fit, tuning
from coatsearch.training.curves import autocast

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
MODES = ("eager", "channels_last", "compiled", "compiled+channels_last", "regional+channels_last")
CUDA_MODES = ("eager", "channels_last", "compiled+channels_last", "captured+channels_last")
WARMUP, STEPS = 3, 20


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


def prepare_mode(model, mode: str):
    """The module to train in `mode` (see the module docstring)."""
    if mode.startswith("regional"):
        tuning.configure_dynamo()
        for block in tuning.regions(model):
            block.compile(dynamic=False)
        return model
    if mode.startswith(("compiled", "captured")):
        tuning.configure_dynamo()
        return torch.compile(model, dynamic=False, mode="reduce-overhead" if mode.startswith("captured") else None)
    return model


def measure(spec, mode: str, device: torch.device, steps: int, batch: int) -> tuple[float, float]:
    """(training images/s, compile seconds) of one candidate in one mode."""
    torch.manual_seed(0)
    fmt = torch.channels_last if "channels_last" in mode else torch.contiguous_format
    model = build(spec).to(device, memory_format=fmt)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    run = prepare_mode(model, mode)
    x = torch.randn(batch, spec.in_chans, spec.image_size, spec.image_size, device=device)
    x = x.contiguous(memory_format=fmt)
    y = torch.randint(0, spec.num_classes, (batch,), device=device)

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
    return batch / per_step, max(0.0, warm - WARMUP * per_step)


def main() -> None:
    """Measure every candidate in every mode; print a table, the peak and the fraction of it reached."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--candidates", help="comma-separated names (default: all of paper_layouts)")
    ap.add_argument("--profile", default=None, help="space profile (default: full on CUDA, default on CPU)")
    ap.add_argument("--modes", default=None, help=f"comma-separated (default CPU: {','.join(MODES)}; CUDA: "
                    f"{','.join(CUDA_MODES)})")  # fmt: skip
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--threads", type=int, default=None, help="intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = fit.pick_device(args.device)
    profile = args.profile or ("full" if device.type == "cuda" else "default")
    space = load_space(SPACE, profile)
    names = args.candidates.split(",") if args.candidates else [c.name for c in space.candidates]
    modes = (args.modes or ",".join(CUDA_MODES if device.type == "cuda" else MODES)).split(",")
    peak = peak_gflops(device)
    batch = space.candidate(names[0]).resolve()[1].batch_size
    print(f"device {device}, threads {torch.get_num_threads()}, profile {profile}, batch {batch}, "
          f"peak {peak:.1f} GFLOP/s ({'bf16' if device.type == 'cuda' else 'fp32'} matmul)")  # fmt: skip
    print(f"{'candidate':10} {'MACs':>7} " + " ".join(f"{m:>24}" for m in modes) + "  best/eager  of peak")
    fractions = []
    for name in names:
        spec = prepare(space.candidate(name)).model
        macs = prepare(space.candidate(name)).macs
        rates = {m: measure(spec, m, device, args.steps, batch) for m in modes}
        cells = [f"{r:7.0f} img/s {6 * macs * r / 1e9:5.1f} GF ({c:3.0f}s)" for r, c in rates.values()]
        best = max(r for r, _ in rates.values())
        ratio = best / rates["eager"][0] if "eager" in rates else float("nan")
        fractions.append(6 * macs * best / 1e9 / peak)
        print(f"{name:10} {macs / 1e6:6.2f}M " + " ".join(f"{c:>24}" for c in cells), end="")
        print(f"  {ratio:.2f}x  {fractions[-1]:.4f}")
    print(f"fraction_of_peak={sum(fractions) / len(fractions):.4f}")


if __name__ == "__main__":
    main()
