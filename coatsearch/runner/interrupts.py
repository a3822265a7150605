"""How a parent that spawns worker processes treats Ctrl-C and SIGTERM (the run's workers, the plan's pilots).

Children start with SIGINT blocked (the signal mask is inherited through spawn), so a Ctrl-C reaches the parent
only, which then stops them; a SIGTERM to the parent (`kill PID`, a batch system) is taken as a Ctrl-C, so no
child outlives it.
Handlers can be set from the main thread only; elsewhere both are no-ops. A signal the process inherited ignored
(a shell starts a background job, `cmd &`, with SIGINT ignored; `nohup` ignores SIGHUP) stays ignored: its parent
chose that, and neither block takes it over.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing import resource_tracker


def _main() -> bool:
    return threading.current_thread() is threading.main_thread()


def _ignored(sig: int) -> bool:
    """Whether `sig` is ignored in this process (as inherited from a parent that chose so)."""
    return signal.getsignal(sig) is signal.SIG_IGN


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt as a Ctrl-C does; the previous handler after."""
    if not _main() or _ignored(signal.SIGTERM):
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def children_ignore_sigint() -> Iterator[None]:
    """Start child processes within the block: they inherit SIGINT blocked, so a Ctrl-C never reaches them.

    A Ctrl-C or a SIGTERM within the block is held until its end, then raised again: a child half-started (its
    spawn data half-written) when the parent unwound would die of a truncated pipe, printing a traceback nobody
    asked for. This thread blocks SIGINT (the mask a spawned child inherits and keeps) and a handler holds what
    other threads receive; SIGTERM is held by the handler alone, so that the children can still be stopped by it.
    An ignored SIGINT, as children used to inherit, would be discarded: a Ctrl-C while the workers started was
    lost, and the run went on to its end. A SIGINT (or SIGTERM) the process inherited ignored is left ignored, and
    then so it is in the children (the disposition is inherited through exec).
    """
    if not _main():
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: object) -> None:
        held.append(signum)

    resource_tracker.ensure_running()  # started later, it would unblock SIGINT here (CPython bpo-33613)
    taken = [sig for sig in (signal.SIGINT, signal.SIGTERM) if not _ignored(sig)]
    previous = {sig: signal.signal(sig, hold) for sig in taken}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT} & set(taken))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a SIGINT pending in this thread is raised here
    for signum in dict.fromkeys(held):
        signal.raise_signal(signum)
