"""Who hears a trial's curve points while it trains: one listener per running trial (experiment tracking).

`listening(fn)` sets the listener for the code inside it (a context variable, so threads and tasks keep
their own); every training run of a score then passes `on_point(phase)` to `fit`, which calls
`fn(phase, step, point)` at each curve point, as it is measured. Without a listener nothing is called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial

from coatsearch.training.curves import Point

Listener = Callable[[str, int, Point], None]  # (run phase, step, point)
_LISTENER: ContextVar[Listener | None] = ContextVar("coatsearch_point_listener", default=None)


@contextmanager
def listening(fn: Listener | None) -> Iterator[None]:
    """Send every curve point measured inside the block to `fn` (None: to nobody)."""
    token = _LISTENER.set(fn)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def on_point(phase: str) -> Callable[[int, Point], None] | None:
    """`fit`'s `on_point` for a training run of phase `phase`: the current listener's, or None."""
    fn = _LISTENER.get()
    return None if fn is None else partial(fn, phase)
