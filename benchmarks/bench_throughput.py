"""Training throughput of every paper_layouts candidate in each mode, against the machine's peak.

Modes: eager, eager + channels_last, compiled (whole model), compiled + channels_last, regional +
channels_last (each stage block compiled on its own, as `compile: auto` does on CPU) and, on CUDA,
captured + channels_last (the whole step, augmentation to optimizer, replayed as one CUDA graph: what `compile:
auto` does on CUDA, training.capture) and compiled + captured + channels_last (`compile: true` on CUDA). Each mode
trains the matched candidate (fused AdamW, the profile's batch size, random inputs of the space's
shape, resident on the device; no host sync inside the timed steps) for WARMUP untimed steps (compiling and
capturing happen there; its time is printed) and then STEPS timed steps. Achieved GFLOP/s = 6 x MACs x images/s
(forward 2 x MACs, backward about twice the forward). On CPU the peak is a large fp32 matmul measured in the same
run; on CUDA it is one stated peak, the H200's dense bf16 datasheet figure the planner prices GPU time at
(planner.gpu.H200_BF16_PEAK; a measured bf16 matmul is printed beside it). Each row is printed (flushed) as it is
measured, with its best mode's fraction of the peak; the last lines are `capture_ratio=<mean over candidates of
captured / eager img/s>` (on CUDA, the planner's tuning.CUDA_CAPTURE_SPEEDUP) and `fraction_of_peak=<mean over
candidates of the best mode's GFLOP/s / peak GFLOP/s>`. A SIGTERM (a time limit) prints them for the rows done.

    python benchmarks/bench_throughput.py [--device cpu|cuda] [--profile full] [--candidates C-C-T-T,...]
                                          [--modes eager,...] [--dry-run]
"""

from __future__ import annotations

import dataclasses
import signal
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from coatsearch.budget.prepare import prepare
from coatsearch.models import build
from coatsearch.planner.gpu import H200_BF16_PEAK
from coatsearch.space.objects import load_space
from coatsearch.training import augment, capture, fit, tuning
from coatsearch.training.curves import autocast

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
MODES = ("eager", "channels_last", "compiled", "compiled+channels_last", "regional+channels_last")
CUDA_MODES = ("channels_last", "captured+channels_last", "compiled+captured+channels_last")
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
    if mode.startswith("compiled"):
        tuning.configure_dynamo()
        return torch.compile(model, dynamic=False)
    return model


def captured_step(model, optim, mode: str, device: torch.device, batch: int, x, y):
    """One step of a captured slot (training.capture) over (x, y): forward, loss, backward and fused AdamW, the work
    of the other modes' step (no augmentation, mixup, label smoothing or clipping), with the run's weight decay."""
    o = dataclasses.replace(optim, batch_size=batch, optimizer="adamw")
    recipe = capture.Recipe(batch, 0.0, 0.0, False, False, True, ("adamw", float(o.weight_decay)))
    slot_mode = "compiled+captured" if "compiled" in mode else "captured"
    slot = capture.Slot(model, recipe, x, y, slot_mode,
                        lambda net, lr: fit.make_optimizer(net, o, lr, capturable=device.type == "cuda"),
                        augment.augment_draws, augment.augment_apply)  # fmt: skip
    gen, idx = torch.Generator(device=device).manual_seed(1), torch.arange(batch, device=device)
    return lambda: slot.step(x, y, idx, gen, float(o.lr), 0.5)


def measure(spec, optim, mode: str, device: torch.device, steps: int, batch: int) -> tuple[float, float]:
    """(training images/s, compile or capture seconds) of one candidate in one mode."""
    torch.manual_seed(0)
    fmt = torch.channels_last if "channels_last" in mode else torch.contiguous_format
    model = build(spec).to(device, memory_format=fmt)
    x = torch.randn(batch, spec.in_chans, spec.image_size, spec.image_size, device=device)
    x = x.contiguous(memory_format=fmt)
    y = torch.randint(0, spec.num_classes, (batch,), device=device)
    if "captured" in mode:
        step = captured_step(model, optim, mode, device, batch, x, y)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
        run = prepare_mode(model, mode)

        def step() -> None:
            with autocast(device):
                loss = F.cross_entropy(run(x).float(), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

    start = time.perf_counter()
    for _ in range(max(WARMUP, capture.WARMUP + 1)):  # a captured step records its graph after its warm-up
        step()
    sync(device)
    warm = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(device)
    per_step = (time.perf_counter() - start) / steps
    return batch / per_step, max(0.0, warm - max(WARMUP, capture.WARMUP + 1) * per_step)


def main(argv: list[str] | None = None) -> None:
    """Measure every candidate in every mode; print a table, the peak, the capture ratio and the fraction of peak."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--candidates", help="comma-separated names (default: all of paper_layouts)")
    ap.add_argument("--profile", default=None, help="space profile (default: full on CUDA, default on CPU)")
    ap.add_argument("--modes", default=None, help=f"comma-separated (default CPU: {','.join(MODES)}; CUDA: "
                    f"{','.join(CUDA_MODES)}); the first is the baseline of the ratios")  # fmt: skip
    ap.add_argument("--steps", type=bounded(1, 10_000_000), default=STEPS)
    ap.add_argument("--threads", type=bounded(1, 4096), default=None, help="intra-op threads (default: torch's)")
    ap.add_argument("--dry-run", action="store_true", help="check the arguments and the space, measure nothing")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    device = fit.parse_device(args.device) if args.dry_run else fit.pick_device(args.device)
    profile = args.profile or ("full" if device.type == "cuda" else "default")
    space = load_space(SPACE, profile)
    names = args.candidates.split(",") if args.candidates else [c.name for c in space.candidates]
    modes = (args.modes or ",".join(CUDA_MODES if device.type == "cuda" else MODES)).split(",")
    optims = {n: space.candidate(n).resolve()[1] for n in names}  # a name the profile lacks stops here
    if args.dry_run:
        print(f"bench_throughput: {len(names)} candidate(s) of {SPACE.name} profile {profile}, modes {modes}: ok")
        return
    peak = H200_BF16_PEAK / 1e9 if device.type == "cuda" else peak_gflops(device)
    batch = optims[names[0]].batch_size
    measured = f"; measured bf16 matmul {peak_gflops(device):.0f} GFLOP/s" if device.type == "cuda" else ""
    print(f"device {device}, threads {torch.get_num_threads()}, profile {profile}, batch {batch}, "
          f"peak {peak:.1f} GFLOP/s ({'H200 dense bf16, datasheet' if device.type == 'cuda' else 'fp32 matmul'})"
          f"{measured}", flush=True)  # fmt: skip
    print(f"{'candidate':10} {'MACs':>7} " + " ".join(f"{m:>24}" for m in modes) + "  best/first  of peak", flush=True)
    fractions: list[float] = []
    ratios: list[float] = []
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # a time limit: print what was measured
    try:
        for name in names:
            prep = prepare(space.candidate(name))
            rates = {m: measure(prep.model, optims[name], m, device, args.steps, batch) for m in modes}
            cells = [f"{r:7.0f} img/s {6 * prep.macs * r / 1e9:5.1f} GF ({c:3.0f}s)" for r, c in rates.values()]
            best = max(r for r, _ in rates.values())
            first = rates[modes[0]][0]
            fractions.append(6 * prep.macs * best / 1e9 / peak)
            captured = [r for m, (r, _) in rates.items() if m.startswith("captured")]
            if captured:
                ratios.append(captured[0] / first)
            print(f"{name:10} {prep.macs / 1e6:6.2f}M " + " ".join(f"{c:>24}" for c in cells)
                  + f"  {best / first:.2f}x  {fractions[-1]:.4f}", flush=True)  # fmt: skip
    except KeyboardInterrupt:
        print(f"interrupted after {len(fractions)} of {len(names)} candidates", flush=True)
    if ratios:
        print(f"capture_ratio={sum(ratios) / len(ratios):.3f}", flush=True)
    if fractions:
        print(f"fraction_of_peak={sum(fractions) / len(fractions):.5f}", flush=True)


if __name__ == "__main__":
    main()
