"""Seeds trained together: per-image training rate of K seeds stacked with torch.func against K solo runs.

For each paper_layouts candidate at the profile's shapes (default profile: batch 128, 1x32x32, 10 classes),
K models are built with seeds 0..K-1. Solo: each model trains alone as `train.fit` trains it (channels_last,
fused AdamW, forward + backward + optimizer step on its own batch). Stacked: the K models' parameters and
buffers are stacked (`torch.func.stack_module_state`), one `functional_call` of a meta-device copy is
vmapped over parameters, buffers and each seed's own batch (K x B images), the K losses are summed and
backpropagated (each seed's gradient is its own: the seeds share nothing), and one fused AdamW steps the
stacked leaves (elementwise, so each seed's slice gets its solo update). BatchNorm runs in train mode on
stacked running stats; dropout runs with vmap randomness "different".

Both sides run at the same thread count, take turns (solo, stacked, solo, stacked, ...) for ROUNDS rounds so
load from other processes hits both, and keep their best round. Per candidate it prints both rates in
training images/s and their ratio, by wall time and by this process's CPU time (steadier on a shared machine:
at one thread it is the time the step itself ran). The last lines are `cpu_speedup=` and
`speedup=<mean over candidates of stacked / solo images/s, wall time>`.

    python benchmarks/bench_seeds.py [--k 3] [--threads 1] [--profile default] [--candidates C-C-T-T,...]
"""

from __future__ import annotations

import copy
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from coatsearch.budget.prepare import prepare
from coatsearch.models import build
from coatsearch.space.objects import load_space

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"
CANDIDATES = "C-C-C-C,C-C-T-T,C-T-T-T,ViT_REL"
STEPS, ROUNDS = 3, 2


def models_of(spec, k: int) -> list[torch.nn.Module]:
    """K models of `spec`, model i initialized from torch seed i (as a solo run of seed i would be)."""
    out = []
    for seed in range(k):
        torch.manual_seed(seed)
        out.append(build(spec).train())
    return out


def solo_step(model, opt, x, y) -> None:
    """One solo training step (channels_last, as train.fit runs it on CPU)."""
    F.cross_entropy(model(x), y).backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


class Stacked:
    """K models stacked: one vmapped forward + backward and one fused AdamW step per K batches."""

    def __init__(self, models: list[torch.nn.Module], lr: float = 2e-3):
        self.params, self.buffers = stack_module_state(models)
        self.base = copy.deepcopy(models[0]).to("meta")
        self.opt = torch.optim.AdamW(list(self.params.values()), lr=lr, fused=True)

        def one(params, buffers, x):
            return functional_call(self.base, (params, buffers), (x,))

        self.forward = vmap(one, randomness="different")

    def losses(self, xs: torch.Tensor, ys: torch.Tensor) -> torch.Tensor:
        """(K,) cross-entropy of each seed's model on its own batch xs[i] (K, B, C, H, W)."""
        with sdpa_kernel(SDPBackend.MATH):  # CPU flash attention has no gradient for a batched attn_mask
            logits = self.forward(self.params, self.buffers, xs)  # (K, B, classes)
        return F.cross_entropy(logits.flatten(0, 1), ys.flatten(), reduction="none").view(ys.shape).mean(1)

    def step(self, xs: torch.Tensor, ys: torch.Tensor) -> None:
        """One step of every seed on its own batch."""
        self.losses(xs, ys).sum().backward()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def timed(fn, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per call of fn over `steps` calls (CPU: this process's, all its threads)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps


def measure(spec, k: int, batch: int, steps: int, rounds: int) -> dict[str, tuple[float, float]]:
    """{"solo" | "stacked": (wall, CPU-time) training images/s} of `spec`, best of `rounds` interleaved rounds."""
    shape = (k, batch, spec.in_chans, spec.image_size, spec.image_size)
    xs, ys = torch.randn(shape), torch.randint(0, spec.num_classes, (k, batch))
    solos = [m.to(memory_format=torch.channels_last) for m in models_of(spec, k)]
    opts = [torch.optim.AdamW(m.parameters(), lr=2e-3, fused=True) for m in solos]
    xcl = [xs[i].contiguous(memory_format=torch.channels_last) for i in range(k)]
    stacked = Stacked(models_of(spec, k))

    def solo_all() -> None:
        for i in range(k):
            solo_step(solos[i], opts[i], xcl[i], ys[i])

    sides = {"solo": solo_all, "stacked": lambda: stacked.step(xs, ys)}
    best = dict.fromkeys(sides, (0.0, 0.0))
    for fn in sides.values():
        fn()  # warm-up (allocator, oneDNN primitives)
    for _ in range(rounds):
        for side, fn in sides.items():
            wall, cpu = timed(fn, steps)
            best[side] = (max(best[side][0], k * batch / wall), max(best[side][1], k * batch / cpu))
    return best


def main() -> None:
    """Measure every candidate; print rates and ratios, last `speedup=`."""
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=bounded(1, 100), default=3, help="seeds stacked (default 3, the study's seeds)")
    ap.add_argument(
        "--threads", type=bounded(1, 4096), default=1, help="intra-op threads, both sides (default 1: a worker's)"
    )
    ap.add_argument("--profile", default="default")
    ap.add_argument("--candidates", default=CANDIDATES)
    ap.add_argument("--steps", type=bounded(1, 10_000_000), default=STEPS)
    ap.add_argument("--rounds", type=bounded(1, 10_000), default=ROUNDS)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    space = load_space(SPACE, args.profile)
    names = args.candidates.split(",")
    batch = space.candidate(names[0]).resolve()[1].batch_size
    print(f"threads {torch.get_num_threads()}, profile {args.profile}, batch {batch}, k {args.k}, "
          f"{args.steps} steps x {args.rounds} interleaved rounds")  # fmt: skip
    walls, cpus = [], []
    for name in names:
        spec = prepare(space.candidate(name)).model
        r = measure(spec, args.k, batch, args.steps, args.rounds)
        walls.append(r["stacked"][0] / r["solo"][0])
        cpus.append(r["stacked"][1] / r["solo"][1])
        (sw, sc), (tw, tc) = r["solo"], r["stacked"]
        print(f"{name:8} wall: solo {sw:6.1f} img/s, stacked {tw:6.1f} img/s, {walls[-1]:.3f}x   "
              f"CPU time: solo {sc:6.1f}, stacked {tc:6.1f} img/s, {cpus[-1]:.3f}x")  # fmt: skip
    print(f"cpu_speedup={sum(cpus) / len(cpus):.3f}")
    print(f"speedup={sum(walls) / len(walls):.3f}")


if __name__ == "__main__":
    main()
