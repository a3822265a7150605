"""Measured speed of every paper_layouts candidate: the `speed` score's method, three runs each.

Each run builds the matched candidate afresh and times it with coatsearch.training.throughput (the score's defaults:
1 warm-up step, 4 timed training steps at the run's batch 128, 4 timed inference steps at batch 128, 20 batch-1
forwards; median step time) at THREADS threads. Prints per candidate the three training and inference rates,
the budget-matched candidates' fastest / slowest ratio, and as its last line
`max_train_ratio=<fastest / slowest mean training images/s>`.

    python benchmarks/bench_speed.py [--profile default|macs_only] [--threads 1] [--runs 3] [--device cpu|cuda]
"""

from __future__ import annotations

import statistics
from pathlib import Path

import torch

from coatsearch.models import build
from coatsearch.scores.speed import SpeedSpec
from coatsearch.space.objects import load_space
from coatsearch.training import throughput

SPACE = Path(__file__).resolve().parent.parent / "spaces" / "paper_layouts.yaml"


def rates(prep, spec: SpeedSpec, threads: int, device: torch.device) -> throughput.Throughput:
    """One run of the speed score's measurement on one candidate."""
    plan = throughput.ThroughputPlan(
        train_batch=spec.train_batch or prep.optim.batch_size,
        infer_batch=spec.infer_batch,
        warmup=spec.warmup,
        repeats=spec.repeats,
        latency_repeats=spec.latency_repeats,
        threads=threads,
        compile=prep.optim.compile is True,
    )
    torch.manual_seed(0)
    m = prep.model
    shape = (m.in_chans, m.image_size, m.image_size)
    return throughput.measure(build(m), shape, m.num_classes, prep.optim, device, plan)


def main() -> None:
    """Measure and print; the last line is max_train_ratio=..."""
    from coatsearch.budget.prepare import prepare
    from coatsearch.cli_types import Parser, bounded  # the CLI's number check and one-line errors

    ap = Parser()
    ap.add_argument("--profile", default="default")
    ap.add_argument("--threads", type=bounded(1, 4096), default=1)
    ap.add_argument("--runs", type=bounded(1, 1000), default=3)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    space, device = load_space(SPACE, args.profile), torch.device(args.device)
    means = {}
    for cand in space.candidates:
        if cand.name.startswith("baseline"):
            continue
        prep = prepare(cand)
        runs = [rates(prep, cand.scores.speed or SpeedSpec(), args.threads, device) for _ in range(args.runs)]
        tr, inf = [r.train_ips for r in runs], [r.infer_ips for r in runs]
        lat = [r.latency_ms for r in runs]
        means[cand.name] = (statistics.fmean(tr), statistics.fmean(inf))
        print(
            f"{cand.name:8s} params {prep.params / 1e6:.3f}M MACs {prep.macs / 1e6:.2f}M  train img/s "
            f"{' '.join(f'{x:.0f}' for x in tr)}  infer img/s {' '.join(f'{x:.0f}' for x in inf)}  "
            f"latency ms {' '.join(f'{x:.2f}' for x in lat)}  ({runs[0].host}, {runs[0].device}, "
            f"{runs[0].threads} thread(s), {statistics.fmean(r.seconds for r in runs):.1f} s a run)",
            flush=True,
        )
    for i, what in enumerate(("train", "infer")):
        fast, slow = max(means, key=lambda n: means[n][i]), min(means, key=lambda n: means[n][i])
        print(f"{what}: fastest {fast} {means[fast][i]:.0f}, slowest {slow} {means[slow][i]:.0f} img/s, "
              f"{means[fast][i] / means[slow][i]:.2f}x")  # fmt: skip
    fast, slow = max(v[0] for v in means.values()), min(v[0] for v in means.values())
    print(f"max_train_ratio={fast / slow:.3f}")


if __name__ == "__main__":
    main()
