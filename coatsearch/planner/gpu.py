"""GPU time of a study from its run accounting and each model's MACs, at a stated fraction of a GPU's peak.

No GPU is needed: every distinct trial goes through the real score code with a stand-in for `training.fit` that
records each run's steps, batch and curve points (planner.pilot.Recorder, without its timings), and the work
is counted as multiply-adds: a training image costs _TRAIN_FLOPS_PER_MAC x the model's MACs (forward, and a
backward of twice the forward), an evaluated image _EVAL_FLOPS_PER_MAC x MACs. Seconds = FLOPs / (peak x
fraction). The fraction is an assumption to state (small models at 32x32 are launch-bound and reach a tiny
share of the peak) until a GPU measures it (`benchmarks/bench_throughput.py --device cuda` prints it as
`fraction_of_peak=`, a fraction of this same H200_BF16_PEAK).
Scores that train nothing (robustness: eval passes only; speed: a few steps) are left out and named.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # names for annotations only
    import torch

    from coatsearch.budget.prepare import Prepared
    from coatsearch.space.objects import Space

H200_BF16_PEAK = 989e12  # FLOP/s: NVIDIA H200 (SXM) dense bf16 tensor-core peak, datasheet
_TRAIN_FLOPS_PER_MAC = 6  # 2 FLOPs per multiply-add forward, a backward pass of about twice the forward
_EVAL_FLOPS_PER_MAC = 2
UNCOUNTED = ("robustness", "speed")  # scores with no training run, left out of the count


@dataclass(frozen=True)
class RunCount:
    """One training run of a trial as counted: images trained and evaluated."""

    phase: str
    steps: int
    batch: int
    eval_images: int  # images evaluated over the run's curve points (probe + eval set, each point)


@dataclass(frozen=True)
class GpuPlan:
    """Predicted GPU seconds per trial (by candidate) and for the study at `seeds` seeds."""

    peak: float
    fraction: float
    seeds: int
    runs: dict  # candidate -> tuple[RunCount, ...]
    macs: dict  # candidate -> multiply-adds per image
    trial_s: dict  # candidate -> predicted GPU seconds of one trial
    study_s: float  # all trials, one after another on one GPU

    @property
    def gpu_hours(self) -> float:
        """The study's predicted GPU-hours."""
        return self.study_s / 3600


def _run_flops(run: RunCount, macs: int) -> float:
    """FLOPs of one training run: its trained images forward and backward, its evaluated images forward."""
    return macs * (_TRAIN_FLOPS_PER_MAC * run.steps * run.batch + _EVAL_FLOPS_PER_MAC * run.eval_images)


def _count_trial(space: Space, prep: Prepared, seed: int, device: torch.device) -> tuple[RunCount, ...]:
    """The training runs one candidate's trial would make (steps, batch, evaluated images), nothing timed."""
    import dataclasses

    from coatsearch.planner.pilot import Recorder
    from coatsearch.scores import TrialInput, measure
    from coatsearch.training.subsets import PROBE_MAX

    class Counter(Recorder):
        """The pilot's recorder with its timings skipped: it only records what each run would do."""

        point_images: list[int]  # images each curve point would evaluate, one entry per run (set per instance)

        def _step_time(self, *args: Any) -> float:
            return 0.0

        def _point_time(self, model: Any, train: Any, evaluate: Any, batch: int, validate: Any = None) -> float:
            held = sum(len(d) for d in (evaluate, validate) if d is not None)  # test and validation images
            self.point_images.append(min(PROBE_MAX, len(train)) + held)
            return 0.0

    cand = space.candidate(prep.name)
    scores = dataclasses.replace(cand.scores, **{name: None for name in UNCOUNTED})
    rec = Counter(device)
    rec.point_images = []
    measure(TrialInput(prep.model, prep.optim, space.data, scores, seed), device, fit=rec)
    return tuple(
        RunCount(f.phase, f.steps, f.batch, f.points * n) for f, n in zip(rec.fits, rec.point_images, strict=True)
    )


def gpu_plan(space: Space, fraction: float, peak: float = H200_BF16_PEAK) -> GpuPlan:
    """Count every candidate's trial of `space` (a loaded space) and price it at `peak` x `fraction` FLOP/s."""
    from coatsearch.planner import predict
    from coatsearch.training.fit import pick_device

    d, dev = space, pick_device("cpu")
    preps = [c.prepared for c in space.candidates if c.prepared.ok]
    runs = {p.name: _count_trial(d, p, d.study.seeds[0], dev) for p in preps}
    macs = {p.name: p.macs for p in preps}
    trial_s = {n: sum(_run_flops(r, macs[n]) for r in rs) / (peak * fraction) for n, rs in runs.items()}
    samples = {c.name: d.study.samples if c.dims else 1 for c in d.candidates}
    total = sum(predict.study_durations(trial_s, samples, len(d.study.seeds)))
    return GpuPlan(peak, fraction, len(d.study.seeds), runs, macs, trial_s, total)
