"""Who hears a trial's curve points while it trains: the listener a runner passes down (experiment tracking).

The runner passes one `Listener` to `runner.trial.attempt(listener=)`, which hands it on, as an argument, through
`scores.measure` and each score's `Context` to every training run; `for_phase(listener, phase)` is then that run's
`fit(on_point=)`, which calls `listener(phase, step, point)` at each curve point, as it is measured. None: nobody
hears them (the same wiring as the checkpoint saver, `fit(checkpoints=)`; no context variable or global).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from coatsearch.training.point import Point

Listener = Callable[[str, int, Point], None]  # (run phase, step, point)


def for_phase(listener: Listener | None, phase: str) -> Callable[[int, Point], None] | None:
    """`fit`'s `on_point` for a training run of phase `phase`: the listener's, or None without one."""
    return None if listener is None else partial(listener, phase)
