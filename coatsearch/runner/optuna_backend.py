"""Optuna, the embedded default engine: K local worker processes claim planned trials from the store and run them.

A thin runner: the study folder, storage, claim lock, telling and the rule that frees a killed trial's key
live in `coatsearch.storage.store` (its docstring states the storage invariants); one trial runs in
`coatsearch.runner.trial`.
Pruning is Optuna's own pruner, fed the per-epoch objective score.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import multiprocessing.connection
import signal
import time
import uuid
from collections.abc import Callable, Iterable
from multiprocessing.context import SpawnContext
from pathlib import Path
from typing import Any

import optuna

from coatsearch.errors import Pruned
from coatsearch.runner import environment, interrupts
from coatsearch.space.objects import Space
from coatsearch.storage import lock, store
from coatsearch.storage import trials as P


def run(
    space: Space,
    studies_dir: Path,
    name: str,
    *,
    trials: int | None = None,
    workers: int = 1,
    threads: int | None = None,
    device: str = "auto",
    progress: bool = True,
    prepared: tuple[optuna.Study, dict] | None = None,
) -> P.RunSummary:
    """Run every planned trial not yet taken (resuming a previous run), with `workers` processes.

    Each worker process runs `threads` intra-op threads (None: the cores shared out evenly between spawned
    workers; a single in-process worker keeps this process's setting). `prepared`: the study and its matched
    candidates when the caller made them (`coatsearch.api.run`), else they are made here.
    """
    start = time.perf_counter()
    study, matched = prepared or store.prepare(space, Path(studies_dir), name)  # solved once, before any worker
    run_id = uuid.uuid4().hex[:12]
    args = (space, Path(studies_dir), name, device, run_id, trials, progress and workers == 1, matched)
    if workers <= 1:
        ran = _in_process(args, threads)
    else:
        from coatsearch.training.tuning import spawned_threads

        _spawn(args, workers, spawned_threads(workers, threads), study)
        ran = store.ran_by(study, run_id)
    return store.summary(space, studies_dir, name, ran, time.perf_counter() - start)


def _in_process(args: tuple, threads: int | None) -> int:
    """Run the worker loop in this process with `threads` intra-op threads (None: as set; restored afterwards)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        return _worker(*args)
    finally:
        torch.set_num_threads(before)


def _spawn(args: tuple, workers: int, threads: int, study: optuna.Study) -> None:
    """Run `workers` worker processes to the end; Ctrl-C stops them quietly (the parent prints one line).

    The workers start with SIGINT blocked (the mask is inherited through spawn), so a Ctrl-C reaches the parent only,
    which then terminates them (SIGTERM, which a worker turns into a quiet exit); a trial they leave RUNNING
    is freed by the next run, as after kill -9. A SIGTERM to the parent (`kill PID`, a batch system) is
    taken as a Ctrl-C, so no worker outlives the parent and writes to a study nobody is running.
    A worker killed by a signal (the OOM killer's SIGKILL) has the signal recorded on its trial and is
    replaced, so the study goes on (`storage.lock` caps the reruns of a trial that keeps killing its worker).
    """
    ctx = mp.get_context("spawn")
    procs: list = []
    with interrupts.sigterm_as_interrupt():
        _watch(ctx, procs, args, threads, workers, study)


def _watch(ctx: SpawnContext, procs: list, args: tuple, threads: int, workers: int, study: optuna.Study) -> None:
    """Start the workers, replace the killed ones, wait for all to end; on any error or interrupt stop them all."""
    try:
        _start(ctx, procs, args, threads, range(workers))
        replaced, limit = 0, (lock.KILL_RETRIES + 1) * len(P.plan(args[0]))
        while alive := [p for p in procs if p.exitcode is None]:  # one poll: a worker ending now is seen next turn
            mp.connection.wait([p.sentinel for p in alive], timeout=5.0)
            for p in [p for p in procs if p.exitcode is not None and p.exitcode < 0]:
                procs.remove(p)
                store.mark(study, store.folder(args[1], args[2]), p.pid, "killed_by", f"signal {-p.exitcode}")
                if replaced < limit:  # every planned trial killed its worker each time: stop
                    replaced += 1
                    _start(ctx, procs, args, threads, [workers + replaced - 1])
    finally:  # Ctrl-C or any error in the parent: no worker outlives it
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join()


def _start(ctx: SpawnContext, procs: list, args: tuple, threads: int, streams: Iterable[int]) -> None:
    """Start one more worker process per sampler stream (SIGINT blocked in them: see `_spawn`)."""
    with interrupts.children_ignore_sigint():
        for stream in streams:
            procs.append(ctx.Process(target=_worker_entry, args=((*args, stream), threads)))
            procs[-1].start()


def _worker_entry(args: tuple, threads: int) -> None:
    from coatsearch.training.tuning import set_worker_threads

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # the parent's terminate(): unwind, clean up
    set_worker_threads(threads)  # intra-op and compile threads: this worker's share of the cores
    try:
        _worker(*args)
    except KeyboardInterrupt:  # stopped by the parent: exit quietly; the next run frees the trial left RUNNING
        pass


def _worker(
    space: Space,
    studies_dir: Path,
    name: str,
    device_name: str,
    run_id: str,
    limit: int | None,
    progress: bool,
    matched: dict | None,
    stream: int = 0,
) -> int:
    """Claim and run planned trials until none is left (or `limit` trials of this run started), sampling with
    the space's sampler on its own seed stream (`store.load_study`). On CUDA worker `stream` pins its GPU
    (`tuning.worker_device`: the workers spread over the GPUs)."""
    from coatsearch.runner.trial import progress_bar
    from coatsearch.training.fit import pick_device
    from coatsearch.training.tuning import worker_device

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = store.load_study(studies_dir, name, space, stream)
    device = pick_device(worker_device(device_name, stream))
    if device.type == "cuda":
        import torch

        torch.cuda.set_device(device)  # its graphs, streams and caches live there
    items = {i.key: i for i in P.plan(space)}
    env = environment.probe(device)
    ran = 0
    folder = store.folder(studies_dir, name)
    with progress_bar(store.counts(study)["finished"], len(items), progress) as bar:
        while (taken := store.claim_point(study, space, items, run_id, limit, folder)) is not None:
            trial, item, params, admitted = taken
            try:
                _run_trial(space, study, trial, item, params, admitted, device, env, progress, matched, folder)
            except KeyboardInterrupt:  # Ctrl-C or SIGTERM: an interruption, not a kill (`storage.lock`)
                with contextlib.suppress(Exception):  # already told: nothing to mark
                    trial.set_user_attr("interrupted", True)
                raise
            ran += 1
            bar(trial.number)
    return ran


def _run_trial(
    space: Space,
    study: optuna.Study,
    trial: optuna.Trial,
    item: P.PlanItem,
    params: dict,
    admitted: Any,
    device: Any,
    env: Any,
    progress: bool,
    matched: dict | None = None,
    folder: Path | None = None,
) -> None:
    """Train, score and tell one claimed, sampled and admitted trial; any failure is recorded with its reason.

    With a `folder`, the trial's long runs are checkpointed there and a killed one resumes (runner.resume), and
    with the space's `log` it is tracked live (runner.tracking), and with its `keep_top` its weights are kept when
    it is among the best (runner.kept)."""
    from coatsearch.runner import kept, resume, tracking
    from coatsearch.runner.trial import attempt, epoch_reporter

    report = epoch_reporter(space, _pruning_sink(trial))
    trained = kept.Trained() if space.keep_top and folder is not None else None
    with (
        resume.trial(space, folder, item) as (done, saves),
        tracking.tracked(space, folder or Path("."), item, params, trial.number) as tracker,
    ):
        heard = tracking.listener(tracker)
        outcome = done(attempt(space, item, params, device, env, progress, report, matched, admitted, saves,
                               trained=trained, listener=heard))  # fmt: skip
        tracking.finish(tracker, *outcome)
    if trained is not None and folder is not None:
        kept.keep(space, study, folder, trial.number, item, outcome, trained)  # before the value is told
    store.tell(study, trial, *outcome)


def _pruning_sink(trial: optuna.Trial) -> Callable[[int, float], None]:
    """Report to the study's pruner; raise Pruned when it says stop."""

    def sink(epoch: int, value: float) -> None:
        if store.report_epoch(trial, epoch, value):
            raise Pruned(f"pruned at epoch {epoch}")

    return sink
