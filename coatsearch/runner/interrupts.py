"""How a parent that spawns worker processes treats Ctrl-C and SIGTERM (the run's workers, the plan's pilots).

Children start with SIGINT ignored (inherited through spawn), so a Ctrl-C reaches the parent only, which then
stops them; a SIGTERM to the parent (`kill PID`, a batch system) is taken as a Ctrl-C, so no child outlives it.
Handlers can be set from the main thread only; elsewhere both are no-ops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt as a Ctrl-C does; the previous handler after."""
    if not _main():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """Start child processes within the block: they inherit SIGINT ignored; this process's handler is restored.

    A SIGTERM within the block is held until its end, then raised again: a child half-started (its spawn data
    half-written) when the parent unwound would die of a truncated pipe, printing a traceback nobody asked for.
    """
    if not _main():
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    previous_term = signal.signal(signal.SIGTERM, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.signal(signal.SIGTERM, previous_term)
    if held:
        signal.raise_signal(signal.SIGTERM)
