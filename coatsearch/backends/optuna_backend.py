"""Optuna, the embedded default engine: one JournalStorage file per study, crash-safe claiming of planned trials.

Storage invariants: every planned trial (PlanItem.key) lives in the study as one Optuna trial; a key is
taken while some trial with it is WAITING, RUNNING (by a live process), COMPLETE, PRUNED, or FAIL with a
`fail_reason`. A RUNNING trial whose worker process is gone (kill -9) is marked FAIL without a reason,
which frees its key, so the next run trains it again. Claiming happens under a file lock, so K workers
never run one key twice. Records, once told, are never rewritten. The Ray backend claims, suggests and
tells through the same functions (`claim`, `suggest`, `attempt`, `tell`), so its records are the same.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing as mp
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from coatsearch import plan as P
from coatsearch.errors import UserError
from coatsearch.space import Dim, Space

JOURNAL = "journal.log"


@dataclass(frozen=True)
class RunSummary:
    """What one `coatsearch run` did."""

    study: str
    storage: str
    planned: int
    complete: int
    failed: int
    pruned: int
    ran_now: int
    seconds: float


def storage_file(studies_dir: Path, name: str) -> Path:
    """The journal file that is the study's one store of record."""
    return Path(studies_dir) / name / JOURNAL


def open_storage(path: Path) -> JournalStorage:
    """A JournalStorage on a local file (safe for several processes on one machine)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return JournalStorage(JournalFileBackend(str(path)))


def load_study(studies_dir: Path, name: str) -> optuna.Study:
    """Open an existing study by name; a clear error when there is none."""
    path = storage_file(studies_dir, name)
    if not path.exists():
        raise UserError(f"no study '{name}' under {studies_dir}/ (expected {path}); run `coatsearch run` first")
    return optuna.load_study(study_name=name, storage=open_storage(path))


def create_study(space: Space, studies_dir: Path, name: str) -> optuna.Study:
    """Create or reopen the study for `space`, recording the space with it."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = open_storage(storage_file(studies_dir, name))
    study = optuna.create_study(
        study_name=name,
        storage=storage,
        direction=space.study.direction,
        sampler=_sampler(space),
        pruner=_pruner(space),
        load_if_exists=True,
    )
    record = P.space_record(space)
    stored = study.user_attrs.get("space")
    if stored is None:
        study.set_user_attr("space", record)
    elif stored.get("space") != space.name or stored.get("profile") != space.profile:
        raise UserError(
            f"study '{name}' holds space '{stored.get('space')}' profile '{stored.get('profile')}', "
            f"not '{space.name}' profile '{space.profile}'; pick another --study name"
        )
    return study


def _sampler(space: Space) -> optuna.samplers.BaseSampler:
    seed = space.study.seeds[0]
    if space.study.sampler == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    return optuna.samplers.RandomSampler(seed=seed)


def _pruner(space: Space) -> optuna.pruners.BasePruner:
    return {
        "none": optuna.pruners.NopPruner,
        "median": optuna.pruners.MedianPruner,
        "hyperband": optuna.pruners.HyperbandPruner,
    }[space.study.pruner]()


def run(
    space: Space,
    studies_dir: Path,
    name: str,
    *,
    trials: int | None = None,
    workers: int = 1,
    device: str = "auto",
    progress: bool = True,
) -> RunSummary:
    """Run every planned trial not yet taken (resuming a previous run), with `workers` processes."""
    start = time.perf_counter()
    create_study(space, studies_dir, name)
    run_id = uuid.uuid4().hex[:12]
    args = (space, Path(studies_dir), name, device, run_id, trials, progress and workers == 1)
    if workers <= 1:
        ran = _worker(*args)
    else:
        _spawn(args, workers)
        ran = sum(1 for t in load_study(studies_dir, name).trials if t.user_attrs.get("run_id") == run_id)
    return summary(space, studies_dir, name, ran, time.perf_counter() - start)


def _spawn(args: tuple, workers: int) -> None:
    """Run `workers` worker processes to the end; Ctrl-C stops them quietly (the parent prints one line).

    The workers start with SIGINT ignored (inherited through spawn), so a Ctrl-C reaches the parent only,
    which then terminates them (SIGTERM, which a worker turns into a quiet exit); a trial they leave RUNNING
    is freed by the next run, as after kill -9.
    """
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker_entry, args=(args, workers)) for _ in range(workers)]
    main = threading.current_thread() is threading.main_thread()  # only the main thread may set handlers
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        for p in procs:
            p.start()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    try:
        for p in procs:
            p.join()
    finally:  # Ctrl-C or any error in the parent: no worker outlives it
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join()


def _worker_entry(args: tuple, workers: int) -> None:
    import torch

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # the parent's terminate(): unwind, clean up
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))
    try:
        _worker(*args)
    except KeyboardInterrupt:  # stopped by the parent: exit quietly; the next run frees the trial left RUNNING
        pass


def _worker(space, studies_dir, name, device_name, run_id, limit, progress) -> int:
    """Claim and run planned trials until none is left (or `limit` trials of this run started)."""
    from coatsearch.study import environment
    from coatsearch.train import pick_device

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = load_study(studies_dir, name)
    device = pick_device(device_name)
    items = {i.key: i for i in P.plan(space)}
    env = environment(device)
    ran = 0
    with study_bar(study, items, progress) as bar:
        while (taken := claim(study, items, run_id, limit, studies_dir / name)) is not None:
            trial, item = taken
            _run_trial(space, study, trial, item, device, env, progress)
            ran += 1
            bar(trial.number)
    return ran


def claim(study, items: dict, run_id: str, limit: int | None, folder: Path, backend: str = "optuna"):
    """Under the study lock: fail stale trials, then take the next free key as a RUNNING (trial, PlanItem)."""
    with _locked(folder / "claim.lock"):
        _fail_stale(study)
        trials = study.get_trials(deepcopy=False)
        if limit is not None and sum(t.user_attrs.get("run_id") == run_id for t in trials) >= limit:
            return None
        if not any(t.state == TrialState.WAITING for t in trials):
            taken = {t.user_attrs.get("key") for t in trials if _holds_key(t)}
            item = next((i for k, i in items.items() if k not in taken), None)
            if item is None:
                return None
            study.enqueue_trial({"candidate": item.candidate, "seed": item.seed}, user_attrs={"key": item.key})
        trial = study.ask()
        trial.set_user_attr("run_id", run_id)
        trial.set_user_attr("backend", backend)
        trial.set_user_attr("worker", {"host": socket.gethostname(), "pid": os.getpid()})
        return trial, items[trial.user_attrs["key"]]


def _holds_key(t: optuna.trial.FrozenTrial) -> bool:
    if t.state == TrialState.FAIL:
        return "fail_reason" in t.user_attrs
    return True


def _fail_stale(study: optuna.Study) -> None:
    """Mark FAIL (with no reason, so the key is free again) each RUNNING trial whose process is gone."""
    host = socket.gethostname()
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = t.user_attrs.get("worker") or {}
        if worker.get("host") == host and not _alive(worker.get("pid", -1)):
            study.tell(t.number, state=TrialState.FAIL, skip_if_finished=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run_trial(space, study, trial, item, device, env, progress) -> None:
    """Suggest, train, score and tell one trial; any failure is recorded with its reason."""
    params = suggest(trial, space, item)
    report = epoch_reporter(space, _pruning_sink(trial))
    tell(study, trial, *attempt(space, item, params, device, env, progress=progress, report=report))


def attempt(space, item, params, device, env, progress=False, report=None) -> tuple[TrialState, dict, float | None]:
    """Run one planned trial: (state, user attrs, value); a failure or pruning is an outcome, not an exception."""
    from coatsearch.study import run_item

    try:
        value, attrs = run_item(space, item, params, device, progress=progress, report=report)
    except P.Pruned:
        return TrialState.PRUNED, {}, None
    except (P.TrialFailed, UserError) as exc:
        return TrialState.FAIL, {"fail_reason": str(exc), "env": env}, None
    return TrialState.COMPLETE, {**attrs, "env": env}, value


def tell(study: optuna.Study, trial: optuna.Trial, state: TrialState, attrs: dict, value: float | None) -> None:
    """Write a finished trial's user attrs, then its state and value: the one write-back of every backend."""
    for key, val in attrs.items():
        trial.set_user_attr(key, val)
    study.tell(trial, value if state == TrialState.COMPLETE else None, state=state)


def suggest(trial: optuna.Trial, space: Space, item: P.PlanItem) -> dict[str, Any]:
    """Fix the planned candidate and seed, and sample the candidate's search dimensions."""
    trial.suggest_categorical("candidate", [c.name for c in space.candidates])
    trial.suggest_categorical("seed", list(space.study.seeds))
    return {d.path: _suggest_dim(trial, d) for d in space.candidate(item.candidate).dims}


def _suggest_dim(trial: optuna.Trial, d: Dim) -> Any:
    if d.kind == "choice" and len(d.choices) == 1:
        return d.choices[0]  # a constant, not a parameter (Optuna needs one choice list per name)
    if d.kind == "choice":
        labels = [c if isinstance(c, str | int | float | bool) else json.dumps(c) for c in d.choices]
        picked = trial.suggest_categorical(d.path, labels)
        return d.choices[labels.index(picked)]
    if d.kind == "int":
        return trial.suggest_int(d.path, int(d.low), int(d.high), step=d.step or 1, log=d.log)
    return trial.suggest_float(d.path, d.low, d.high, log=d.log)


def epoch_reporter(space: Space, sink: Callable[[int, float], None]):
    """A `run_item` report callback sending the objective's per-epoch score to `sink` (None: no pruning)."""
    if space.study.pruner == "none":
        return None
    score = space.study.objective.split(".", 1)[0]

    def report(name: str, epoch: int, value: float) -> None:
        if name == score and value is not None:
            sink(epoch, value)

    return report


def _pruning_sink(trial: optuna.Trial) -> Callable[[int, float], None]:
    """Report to the study's pruner; raise Pruned when it says stop."""

    def sink(epoch: int, value: float) -> None:
        trial.report(value, epoch)
        if trial.should_prune():
            raise P.Pruned(f"pruned at epoch {epoch}")

    return sink


@contextmanager
def study_bar(study: optuna.Study, items: dict, enabled: bool):
    """A study-level progress bar (trials done of planned, ETA)."""
    from tqdm.auto import tqdm

    done = sum(1 for t in study.get_trials(deepcopy=False) if t.state.is_finished() and _holds_key(t))
    bar = tqdm(total=len(items), initial=min(done, len(items)), desc="study", unit="trial", disable=not enabled)
    try:
        yield lambda number: bar.update(1)
    finally:
        bar.close()


def summary(space: Space, studies_dir: Path, name: str, ran: int, seconds: float) -> RunSummary:
    """Count the study's trials by state, against the plan."""
    trials = load_study(studies_dir, name).get_trials(deepcopy=False)
    count = {s: sum(t.state == s for t in trials) for s in (TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED)}
    return RunSummary(
        study=name,
        storage=str(storage_file(studies_dir, name)),
        planned=len(P.plan(space)),
        complete=count[TrialState.COMPLETE],
        failed=sum(1 for t in trials if t.state == TrialState.FAIL and "fail_reason" in t.user_attrs),
        pruned=count[TrialState.PRUNED],
        ran_now=ran,
        seconds=seconds,
    )
