"""The timing pilot: every distinct trial of a plan run for a few steps per training run, at its processes x threads.

A trial is run through the real score code (`scores.measure`) with a stand-in for `training.fit` that records what
each training run would do (its planned steps, curve points, batch, compile setting) and returns a one-step fit
on _STAND_IN images, so the score goes on. Each distinct shape (model, batch, augmentation) is timed once: a step by a
short fit of one-step epochs on the run's first batch (the first warms caches and allocators; the median of
the next _STEP_PILOT is kept, so a burst of load from another process does not decide it), a curve point from
the median eval time per image of _POINT_PILOT passes over one batch.
Everything a trial does besides its fits (the linear probe, robustness evaluation) is measured as the rest of
its wall time. Each pilot process first loads the space's data, as each worker does once: that is a worker's
start-up, paid once per worker, not once per trial. Pilot trials
run in `processes` worker processes of `threads` threads each, at the same time, so they contend for the
cores as the study's workers will.
"""

from __future__ import annotations

import dataclasses
import resource
import statistics
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # types only: torch and the score code are imported where a pilot runs
    import torch
    from torch import nn

    from coatsearch.budget.prepare import Prepared
    from coatsearch.space.objects import Space
    from coatsearch.training.data import TensorData
    from coatsearch.training.history import History
    from coatsearch.vocab.specs import OptimSpec

_STEP_PILOT = 3  # timed optimizer steps of a step-time pilot, after one warm-up step (their median is kept)
_STAND_IN = 4  # images of the one-step fit a score gets back in place of its run (BatchNorm needs more than 1)
_POINT_PILOT = 3  # eval passes over one batch timed (after a warm-up pass; their median): a point's cost per image


@dataclass(frozen=True)
class FitTiming:
    """One training run of a trial: what it would do (planned) and what its pilot measured (seconds)."""

    phase: str  # the run's name: generalization, capacity, pretrain, transfer, scratch, ...
    steps: int  # planned optimizer steps (the cap when the run stops at a target)
    points: int  # planned curve points (each evaluates the probe and the eval set)
    batch: int
    images: int  # training images of the run
    stops_early: bool  # the run ends at a loss or accuracy target: `steps` is an upper bound
    compile: str  # the run's compile setting: "auto", "True" or "False"
    step_s: float  # one eager optimizer step, measured
    point_s: float  # one curve point, measured
    setup_s: float  # everything else of the fit (moving data, building the optimizer, the last eval), measured
    compile_s: float  # expected cost of compiling (CPU) or capturing (CUDA) this model here (tuning.step_priors)
    speedup: float  # expected eager / compiled or captured step time (tuning.step_priors)
    expected_steps: float | None = None  # a run that stops at a target: its median steps in an earlier study


@dataclass(frozen=True)
class TrialTiming:
    """The pilot of one candidate's trial: its training runs, the rest of its wall time, and peak memory."""

    candidate: str
    fits: tuple[FitTiming, ...]
    other_s: float  # wall time of the trial outside its fits (data, linear probe, robustness), measured
    peak_mb: float  # peak resident memory of the pilot process after this trial (CPU) or CUDA peak allocated
    pilot_s: float  # wall time the pilot of this trial took
    warmup_s: float = 0.0  # the first trial of a pilot process: its start-up (loading the data), measured


class Recorder:
    """A stand-in for `training.fit` (called with the phase first): records and times the run, returns a stand-in."""

    def __init__(self, device: torch.device):
        self.device = device
        self.fits: list[FitTiming] = []
        self.cache: dict[tuple, float] = {}  # (what, shape) -> measured seconds, so each shape is timed once
        self.spent = 0.0  # wall seconds inside the recorder

    def __call__(
        self,
        phase: str,
        model: nn.Module,
        train: TensorData,
        evaluate: TensorData | None,
        optim: OptimSpec,
        epochs: int,
        **kw: Any,
    ) -> History:
        """Record one training run; return the History of a one-step fit on a few of its images."""
        from coatsearch.training import tuning
        from coatsearch.training.schedule import curve_steps, dense_budget, steps_per_epoch

        begin = time.perf_counter()
        total = kw.get("max_steps") or epochs * steps_per_epoch(len(train), optim.batch_size)
        dense = dense_budget(kw["levels"]) if kw.get("levels") and kw.get("eval_every") != 0 else 0
        dense = min(dense, total)  # at most one dense point a step
        eager, batch = dataclasses.replace(optim, compile=False), min(optim.batch_size, len(train))
        step_s = self._step_time(model, train, eager, batch, kw.get("augment", True))
        point_s = self._point_time(model, train, evaluate, batch, kw.get("validate"))
        hist, setup_s = self._stand_in(model, train, evaluate, eager, kw)
        sig, kind = tuning.signature(model), self.device.type
        self.fits.append(
            FitTiming(
                phase, total, max(1, len(curve_steps(total, kw.get("eval_every")))) + dense, batch, len(train),
                kw.get("stop_at_loss") is not None or kw.get("stop_at_acc") is not None, str(optim.compile),
                step_s, point_s, setup_s, *tuning.step_priors(kind, sig, str(optim.compile)),
            )
        )  # fmt: skip
        self.spent += time.perf_counter() - begin
        return hist

    def _step_time(self, model: nn.Module, train: TensorData, optim: OptimSpec, batch: int, augment: bool) -> float:
        """Seconds of one eager step of this shape: the median of _STEP_PILOT steps on the run's first batch."""
        import copy

        from coatsearch.training.fit import fit
        from coatsearch.training.tuning import signature

        recipe = dataclasses.replace(optim, lr=0.0, weight_decay=0.0, warmup_epochs=0.0)  # these do not change a step
        key = ("step", signature(model), batch, augment, recipe)
        if key not in self.cache:  # one-step epochs: the first warms up, the median of the rest is a step's time
            hist = fit(copy.deepcopy(model), _head(train, batch), None, optim, 1 + _STEP_PILOT, seed=0,
                       device=self.device, augment=augment, eval_every=0, measure_train=False)  # fmt: skip
            self.cache[key] = statistics.median(hist.seconds[1:])
        return self.cache[key]

    def _point_time(
        self, model: nn.Module, train: TensorData, evaluate: TensorData | None, batch: int, validate: Any = None
    ) -> float:
        """Seconds of one curve point: eval passes over the probe (PROBE_MAX training images), the test images and
        the validation images.

        Timed as the median seconds per image of _POINT_PILOT passes over one batch after a warm-up (linear in images).
        """
        from coatsearch.training.curves import eval_batch, eval_tensors
        from coatsearch.training.subsets import PROBE_MAX
        from coatsearch.training.tuning import signature

        key = ("point", signature(model), batch)
        if key not in self.cache:
            net, size = model.to(self.device), eval_batch(self.device, batch)  # the Meter's evaluation batch
            x, y, times = train.x[:size].to(self.device), train.y[:size].to(self.device), []
            for _ in range(_POINT_PILOT + 1):  # the first pass warms up; the median of the rest is timed
                start = time.perf_counter()
                eval_tensors(net, x, y, size)
                times.append((time.perf_counter() - start) / len(y))
            self.cache[key] = statistics.median(times[1:])
        held = (len(evaluate) if evaluate is not None else 0) + (len(validate) if validate is not None else 0)
        return self.cache[key] * (min(PROBE_MAX, len(train)) + held)

    def _stand_in(
        self, model: nn.Module, train: TensorData, evaluate: TensorData | None, optim: OptimSpec, kw: dict[str, Any]
    ) -> tuple[History, float]:
        """(History, seconds besides its one step) of a one-step fit on _STAND_IN images, evaluated on as many."""
        from coatsearch.training.fit import fit

        held = _head(evaluate, _STAND_IN) if evaluate is not None else None
        start = time.perf_counter()
        hist = fit(model, _head(train, _STAND_IN), held, optim, 1, seed=kw.get("seed", 0), device=self.device,
                   augment=kw.get("augment", True), eval_every=0, max_steps=1)  # fmt: skip
        return hist, max(0.0, time.perf_counter() - start - sum(hist.seconds))


def _head(data: TensorData, n: int) -> TensorData:
    """The first `n` images of a TensorData (all of them when it has fewer)."""
    from coatsearch.training.data import TensorData

    n = min(n, len(data))
    return TensorData(data.x[:n], data.y[:n], data.classes, data.hflip)


def peak_mb(device: torch.device) -> float:
    """Peak memory of this process so far: CUDA peak allocated on a GPU, else peak resident set size (MB)."""
    if device.type == "cuda":
        import torch

        return torch.cuda.max_memory_allocated(device) / 2**20
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 2**20 if sys.platform == "darwin" else rss / 2**10  # bytes on macOS, KiB on Linux


def _pilot_trial(space: Space, prep: Prepared, seed: int, device: torch.device) -> TrialTiming:
    """Run one candidate's trial through the score code with a Recorder in place of `training.fit`."""
    from coatsearch.scores import TrialInput, measure

    cand = space.candidate(prep.name)
    from coatsearch.training.history import NonFinite

    rec = Recorder(device)
    if device.type == "cuda":  # each pilot's own peak, not the largest so far in this process
        import torch

        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    try:
        measure(TrialInput(prep.model, prep.optim, space.data, cand.scores, seed), device, fit=rec)
    except NonFinite:  # it diverges at once: the trial will fail there too, and its time is what it took so far
        pass
    wall = time.perf_counter() - start
    return TrialTiming(prep.name, tuple(rec.fits), max(0.0, wall - rec.spent), peak_mb(device), wall)


def _pilot_many(space: Space, preps: list[Prepared], seed: int, device: str, threads: int | None) -> list[TrialTiming]:
    """Pilot each prepared candidate in turn in this process, at `threads` intra-op threads (None: as set)."""
    import torch

    from coatsearch.training import data as D
    from coatsearch.training.fit import pick_device

    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        dev = pick_device(device)
        start = time.perf_counter()
        for prep in preps:  # a worker loads each dataset once (data.load caches it per process)
            D.load(space.data, prep.model.image_size, prep.model.in_chans)
        out = [_pilot_trial(space, p, seed, dev) for p in preps]
        out[0] = dataclasses.replace(out[0], warmup_s=time.perf_counter() - start - sum(t.pilot_s for t in out))
        return out
    finally:
        torch.set_num_threads(before)


def run_pilots(
    space: Space, preps: list[Prepared], seed: int, device: str, processes: int, threads: int | None
) -> list[TrialTiming]:
    """Pilot every candidate: in this process when `processes` is 1, else over that many spawned processes.

    One task per candidate, in plan order, each taken by the first process that is free (as the run's workers take
    trials): a fixed split left one process idle while the other piloted the costly trials (robustness at full size).
    """
    if processes <= 1 or len(preps) <= 1:
        return _pilot_many(space, preps, seed, device, threads)
    from coatsearch.training.tuning import spawned_threads

    each = spawned_threads(processes, threads)  # as the run's spawned workers will have
    done = [t for part in _in_pool([[p] for p in preps], (seed, device, each), space, processes) for t in part]
    order = {p.name: i for i, p in enumerate(preps)}
    return sorted(done, key=lambda t: order[t.candidate])


def _in_pool(
    shares: list[list[Prepared]], args: tuple[int, str, int | None], space: Space, processes: int
) -> list[list[TrialTiming]]:
    """_pilot_many on each share over `processes` spawned processes (`runner.spawned`: a pilot process that dies or
    raises is seen at once, Ctrl-C or SIGTERM stops them all, none outlives this one)."""
    from coatsearch.runner.spawned import run_spawned

    return run_spawned(_pilot_many, [(space, share, *args) for share in shares], processes)
