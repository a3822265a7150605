"""Tasks run over spawned processes, each taken by the first free one, with every way back to the parent bounded.

A result or exception comes back through a pipe the parent waits on together with each process's sentinel, so a
process that dies (a signal, the OOM killer, an exception that cannot be sent) is seen within _POLL_S, never
waited for. An exception that does not pickle on the way out, or does not unpickle on the way in, comes back as
a RuntimeError naming its type and message: `multiprocessing.Pool` lost such a result in its handler thread and
waited forever. Ctrl-C, SIGTERM or any error in the parent terminates every process (see `runner.interrupts`).
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection
import pickle
import signal
from collections.abc import Callable, Sequence
from typing import Any

_POLL_S = 5.0  # the longest the parent waits without looking at every process


def run_spawned(fn: Callable[..., Any], tasks: Sequence[tuple], processes: int) -> list:
    """[fn(*task) for task in tasks], over min(processes, len(tasks)) spawned processes; the first error is raised."""
    from coatsearch.runner import interrupts

    ctx = mp.get_context("spawn")
    procs: list = []
    with interrupts.sigterm_as_interrupt():
        try:
            with interrupts.children_ignore_sigint():
                for _ in range(min(processes, len(tasks))):
                    here, there = ctx.Pipe()
                    procs.append((ctx.Process(target=_serve, args=(fn, there), daemon=True), here))
                    procs[-1][0].start()
                    there.close()
            return _collect(procs, tasks)
        finally:  # done, an error or an interrupt: no process outlives this one
            for proc, conn in procs:
                if proc.is_alive():
                    proc.terminate()
                conn.close()
            for proc, _ in procs:
                proc.join()


def _collect(procs: list, tasks: Sequence[tuple]) -> list:
    """Hand out the tasks in order to free processes and gather their results; raise the first error."""
    results: list = [None] * len(tasks)
    todo, busy = list(enumerate(tasks))[::-1], {}  # busy: connection -> (process, task index)
    for proc, conn in procs:
        if todo:
            index, task = todo.pop()
            conn.send(task)
            busy[conn] = (proc, index)
    while busy:
        ready = mp.connection.wait([*busy, *(p.sentinel for p, _ in busy.values())], timeout=_POLL_S)
        for conn in [c for c in busy if c in ready]:
            proc, index = busy.pop(conn)
            results[index] = _result(conn, proc)
            if todo:
                index, task = todo.pop()
                conn.send(task)
                busy[conn] = (proc, index)
        for conn, (proc, _) in list(busy.items()):
            if proc.exitcode is not None and not conn.poll():  # dead without an answer
                raise RuntimeError(f"a worker process died ({_death(proc.exitcode)}) before it answered")
    return results


def _result(conn: Any, proc: Any) -> Any:
    """The value a process answered, or its exception raised here; a broken answer is a one-line RuntimeError."""
    try:
        ok, value = conn.recv()
    except EOFError:
        proc.join(_POLL_S)
        raise RuntimeError(f"a worker process died ({_death(proc.exitcode)}) before it answered") from None
    except Exception as exc:  # an exception object this side cannot rebuild
        raise RuntimeError(f"a worker process answered what cannot be read here: {type(exc).__name__}: {exc}") from None
    if not ok:
        raise value
    return value


def _death(code: int | None) -> str:
    """How a process ended, in words."""
    if code is not None and code < 0:
        return f"signal {-code}; out of memory?" if -code == signal.SIGKILL else f"signal {-code}"
    return f"exit status {code}"


def _crossing(exc: Exception) -> Exception:
    """`exc` if it survives a pickle round trip, else a RuntimeError naming its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _serve(fn: Callable[..., Any], conn: Any) -> None:
    """In a spawned process: run fn on each task received until the pipe closes; send back (ok, value or error)."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # the parent's terminate(): unwind quietly
    try:
        while True:
            try:
                task = conn.recv()
            except EOFError:
                return
            try:
                answer: tuple = (True, fn(*task))
            except Exception as exc:
                answer = (False, _crossing(exc))
            try:
                conn.send(answer)
            except Exception as exc:  # the value does not pickle: say what it was
                conn.send((False, RuntimeError(f"{type(answer[1]).__name__} could not be sent back: {exc}")))
    except KeyboardInterrupt:
        return
