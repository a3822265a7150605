"""A run's schedule, without torch: its steps (an epoch drops the last partial batch), the steps it is measured
at, the dense points' rule constants, and a subset's own batch size. The fit loop, the scores, the planner and
the calibration's simulated runs all read it here."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from coatsearch.errors import UserError
from coatsearch.vocab import specs
from coatsearch.vocab.specs import rung_below

_DEFAULT_POINTS = 10  # measured points per run (besides step 0) when eval_every is not given
DENSE_RATIO = 1.3  # a dense point once the running train-loss estimate fell by this factor since the last point
DENSE_WINDOW = 4  # batch losses in the running estimate (128 images at batch 32; a longer window lags more)


def steps_per_epoch(n: int, batch_size: int) -> int:
    """Optimizer steps in one epoch over n images: the last partial batch is dropped (fixed shapes)."""
    return max(1, n // max(1, min(batch_size, n)))


def run_steps(subset: specs.SubsetSpec, n_train: int, batch_size: int) -> int:
    """Optimizer steps of a run on `n_train` images: `max_steps` when given, else `epochs` whole epochs."""
    return subset.max_steps or subset.epochs * steps_per_epoch(n_train, batch_size)


def subset_optim(optim: specs.OptimSpec, subset: specs.SubsetSpec) -> specs.OptimSpec:
    """The optimizer settings of a run on `subset`: its own `batch_size` when it gives one."""
    return dataclasses.replace(optim, batch_size=subset.batch_size) if subset.batch_size else optim


def curve_steps(total: int, eval_every: int | None = None) -> frozenset[int]:
    """Steps after which a run of `total` steps is measured: 0, every `eval_every`, and `total`.

    eval_every None: about _DEFAULT_POINTS points (ceil(total / _DEFAULT_POINTS) apart); 0: no points at all.
    """
    if eval_every is None:
        eval_every = max(1, math.ceil(total / _DEFAULT_POINTS))
    if eval_every < 0:
        raise UserError(f"eval_every must be >= 0 (0 = no curve), got {eval_every}")
    if eval_every == 0:
        return frozenset()
    return frozenset((*range(0, total + 1, eval_every), total))


def dense_budget(levels: Sequence[float]) -> int:
    """The most dense points a monotone run measures over the ladder `levels` (for the planner's time)."""
    top, bottom = max(levels) * DENSE_RATIO**2, rung_below(levels) / DENSE_RATIO
    return math.ceil(math.log(top / bottom) / math.log(DENSE_RATIO)) + 1
