"""Wall time from pilot timings (pure): a run's time with its compile decision, a trial's, and the study's schedule.

A run of `steps` steps costs setup + points x point + its training steps. Under `compile: auto` the steps are
decided the way `tuning.AutoCompile` decides them: PROBE_STEPS + 1 eager steps, then compiled steps at
eager / speedup after a compile of `compile_s` seconds when `tuning.worth_compiling` says it pays. The study's
wall time is the schedule of its trials in plan order, each taken by the first worker process that is free
(what the optuna backend's workers do), so a study of 9 trials on 2 processes takes 5 rounds, not 4.5.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import re
from collections.abc import Mapping, Sequence

from coatsearch.errors import UserError
from coatsearch.planner.pilot import FitTiming, TrialTiming
from coatsearch.training import tuning

MAX_SEEDS = 64  # --budget looks for the most seeds up to this many
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(h|m|min|s)")


def run_steps(fit: FitTiming) -> float:
    """Steps a run is expected to take: its earlier median when it stops at a target and one is known, else its cap."""
    return min(fit.steps, fit.expected_steps) if fit.stops_early and fit.expected_steps else fit.steps


def with_earlier(trial: TrialTiming, steps: Mapping[str, Mapping[str, float]]) -> TrialTiming:
    """The trial with each stop-at-target run's expected steps taken from an earlier study (candidate -> phase)."""
    known = steps.get(trial.candidate, {})
    fits = tuple(dataclasses.replace(f, expected_steps=known.get(f.phase)) if f.stops_early else f for f in trial.fits)
    return dataclasses.replace(trial, fits=fits)


def compiles(fit: FitTiming) -> bool:
    """Whether the run would train compiled: always with compile True, by `tuning.worth_compiling` under auto."""
    if fit.compile == "True":
        return True
    if fit.compile != "auto":
        return False
    left = math.ceil(run_steps(fit)) - tuning.PROBE_STEPS - 1
    return left > 0 and tuning.worth_compiling(left, fit.step_s, fit.compile_s, fit.speedup)


def _train_seconds(fit: FitTiming) -> float:
    """Seconds of the run's optimizer steps, compile included when it would compile."""
    steps = run_steps(fit)
    if not compiles(fit):
        return steps * fit.step_s
    eager = 0 if fit.compile == "True" else min(steps, tuning.PROBE_STEPS + 1)
    return eager * fit.step_s + fit.compile_s + (steps - eager) * fit.step_s / fit.speedup


def fit_seconds(fit: FitTiming) -> float:
    """Predicted wall seconds of one training run (an upper bound when it stops at a target and no earlier study
    gave its steps): its curve points are those of the steps it is expected to take."""
    points = math.ceil(fit.points * run_steps(fit) / fit.steps) if fit.steps else fit.points
    return fit.setup_s + points * fit.point_s + _train_seconds(fit)


def trial_seconds(trial: TrialTiming) -> float:
    """Predicted wall seconds of one trial: its runs plus the rest it measured."""
    return sum(fit_seconds(f) for f in trial.fits) + trial.other_s


def makespan(durations: Sequence[float], processes: int, start: float = 0.0) -> float:
    """Wall seconds of running `durations` in order, each on the first of `processes` workers to be free.

    Every worker is busy for `start` seconds (its start-up) before its first trial.
    """
    free = [start] * max(1, processes)
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free)


def study_durations(trials: dict[str, float], samples: dict[str, int], seeds: int) -> list[float]:
    """Trial durations in plan order (candidate, then seed, then sample) for `seeds` seeds."""
    return [trials[c] for c in trials for _ in range(seeds) for _ in range(samples.get(c, 1))]


def most_seeds(trials: dict, samples: dict, processes: int, budget_s: float, start: float = 0.0) -> int:
    """The most seeds (up to MAX_SEEDS) whose study fits in `budget_s` seconds; 0 when not even one does."""
    best = 0
    for n in range(1, MAX_SEEDS + 1):  # the makespan grows with n: stop at the first that does not fit
        if makespan(study_durations(trials, samples, n), processes, start) > budget_s:
            break
        best = n
    return best


def parse_duration(text: str) -> float:
    """'30m', '1h30m', '90s', '2h', '45' (minutes) as seconds; a UserError naming the forms otherwise."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s) * 60
    parts = _DURATION.findall(s)
    if not parts or _DURATION.sub("", s).strip():
        raise UserError(f"--budget {text!r}: not a duration; allowed: e.g. 30m, 1h30m, 90s, 2h")
    seconds = sum(float(v) * {"h": 3600, "m": 60, "min": 60, "s": 1}[u] for v, u in parts)
    if seconds <= 0:
        raise UserError(f"--budget {text!r}: must be more than 0")
    return seconds
