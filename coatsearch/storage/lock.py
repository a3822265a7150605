"""Claiming planned trials under the study's claim lock, and the accounting of trials whose worker was killed.

Part of the store (`coatsearch.storage.store` re-exports these; its docstring states the storage invariants); it
reads trials through their attributes and state names, so it imports no optuna itself.
- A RUNNING trial whose worker process is gone was killed (kill -9, the kernel's OOM killer): it is told
  FAIL without a reason, so the next run trains it again, at most KILL_RETRIES times; the kill after that
  is recorded as FAIL with the reason `worker killed (signal 9; out of memory?)`, which keeps the key taken,
  so the study goes on with the other trials instead of dying on the same one forever.
- A trial stopped by Ctrl-C or SIGTERM is marked `interrupted` and does not count as a kill.
- Foreign trials (`coatsearch.storage.trialcheck`) never block: a foreign WAITING trial is told FAIL with a reason
  (Optuna's `ask` would hand it out first), a foreign RUNNING one is left alone and holds no key.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.storage.trialcheck import problem

if TYPE_CHECKING:  # types only: this module imports no optuna at run time
    import optuna
    from optuna.storages import BaseStorage

LOCK = "claim.lock"
RUN_LOCK = "run.lock"  # held by the one `coatsearch run` (api.run) of a study, from its first write to its end
KILL_RETRIES = 2  # reruns of a trial whose worker was killed, before it is recorded as failed


class _Item(Protocol):
    """What a claim needs of a planned trial: its candidate, seed and unique key."""

    @property
    def candidate(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def key(self) -> str: ...


ItemT = TypeVar("ItemT", bound=_Item)


@contextmanager
def locked(study_folder: Path) -> Iterator[None]:
    """The study's claim lock: an exclusive flock on `<study>/claim.lock` (a regular file, never a link).

    A flock dies with its process, so this lock is never left stale by a killed worker.
    """
    path = fsafe.check_plain(Path(study_folder) / LOCK)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the flock


@contextmanager
def running(study_folder: Path) -> Iterator[None]:
    """One run of a study at a time: a non-blocking exclusive flock on `<study>/run.lock`, held by the driver (the
    process of `coatsearch run` or `api.run`) until it returns; its workers claim trials under `locked` as before.

    A second run of the same study is a one-line UserError naming the holder (its pid and host, written into the
    file), before it writes anything. A flock dies with its process, so a killed run never leaves it held.
    """
    path = fsafe.check_plain(Path(study_folder) / RUN_LOCK)
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not os.path.lexists(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    held = False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = " ".join(os.pread(fd, 200, 0).decode(errors="replace").split()) or "another process"
            raise UserError(
                f"{path}: study '{Path(study_folder).name}' is being run already ({holder}); one run of a study at a "
                "time (give that one more --workers instead): wait for it to end, then run again to resume"
            ) from None
        held = True
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        yield
    except UserError:
        if held and new:  # a run refused before it wrote anything leaves no lock file of its own behind
            os.unlink(path)  # while still holding the flock
        raise
    finally:
        os.close(fd)  # releases the flock


def claim(
    study: optuna.Study,
    items: Mapping[str, ItemT],
    run_id: str,
    limit: int | None,
    study_folder: Path,
    backend: str = "optuna",
    fixed: Callable[[ItemT, list], Mapping[str, Any] | None] | None = None,
    *,
    storage: BaseStorage,
) -> tuple[optuna.Trial, ItemT] | None:
    """Under the claim lock: fail stale and foreign waiting trials, then take the next free key as RUNNING.

    `fixed(item, trials)`: the grid sampler's next point for a planned trial ({"params", "grid"}: its values as
    Optuna labels and its index), enqueued with it; None when that trial's grid is used up (it is skipped).
    `storage`: the one the store opened on the study's journal (`store.claim` hands it in)."""
    with locked(study_folder):
        _fail_stale(study, storage)
        trials = study.get_trials(deepcopy=False)
        mine = [t for t in trials if t.user_attrs.get("run_id") == run_id and not _rejected(t)]
        if limit is not None and len(mine) >= limit:
            return None
        if not any(t.state.name == "WAITING" for t in trials):
            taken = {t.user_attrs.get("key") for t in trials if holds_key(t)}
            free = ((i, fixed(i, trials) if fixed else {}) for k, i in items.items() if k not in taken)
            item, point = next(((i, p) for i, p in free if p is not None), (None, None))
            if item is None or point is None:
                return None
            attrs = {"key": item.key, **({"grid": point["grid"]} if "grid" in point else {})}
            params = {"candidate": item.candidate, "seed": item.seed, **point.get("params", {})}
            study.enqueue_trial(params, user_attrs=attrs)
        trial = study.ask()
        trial.set_user_attr("run_id", run_id)
        trial.set_user_attr("backend", backend)
        trial.set_user_attr("worker", {"host": socket.gethostname(), "pid": os.getpid()})
        return trial, items[trial.user_attrs["key"]]


def holds_key(t: optuna.trial.FrozenTrial) -> bool:
    """Whether a trial keeps its key taken: one of ours in any state but a FAIL without a reason."""
    if problem(t) or _rejected(t):
        return False
    if t.state.name == "FAIL":
        return "fail_reason" in t.user_attrs
    return True


def _rejected(t: optuna.trial.FrozenTrial) -> bool:
    """A sampled point refused before training (store.reject), or one whose network was measured already and
    after which the planned trial samples again (store.reuse): it trained nothing and keeps no key."""
    finished = t.state.name in ("PRUNED", "COMPLETE")
    return finished and (isinstance(t.user_attrs.get("rejected"), str) or t.user_attrs.get("again") == 1)


def _fail_stale(study: optuna.Study, storage: BaseStorage) -> None:
    """Tell FAIL each RUNNING trial whose process is gone, and each foreign or unplanned WAITING trial."""
    host = socket.gethostname()
    trials = study.get_trials(deepcopy=False)
    for t in trials:
        why = problem(t)
        if t.state.name == "WAITING" and why:
            _fail(study, storage, t, f"left out by coatsearch: {why}")
            print(f"coatsearch: note: trial {t.number}: {why}; told FAIL and left out", file=sys.stderr)
        if t.state.name != "RUNNING" or why:
            continue
        if worker_gone(t, host):
            kills = 1 + sum(_killed(o) and o.user_attrs.get("key") == t.user_attrs["key"] for o in trials)
            how = t.user_attrs.get("killed_by") or "process gone"
            reason = f"worker killed ({how}; out of memory?) on {kills} attempts" if kills > KILL_RETRIES else None
            _fail(study, storage, t, reason)


def worker_gone(t: optuna.trial.FrozenTrial, host: str | None = None) -> bool:
    """A RUNNING trial claimed by coatsearch whose worker process on this host is gone (killed: the next `run`
    tells it FAIL and trains its key again). A worker on another host cannot be seen, so it counts as alive."""
    if t.state.name != "RUNNING" or problem(t):
        return False
    worker = t.user_attrs["worker"]
    return worker["host"] == (host or socket.gethostname()) and not _alive(worker["pid"])


def _killed(t: optuna.trial.FrozenTrial) -> bool:
    """A trial freed because its worker died (not interrupted by Ctrl-C, not failed with a reason)."""
    attrs = t.user_attrs
    return t.state.name == "FAIL" and "fail_reason" not in attrs and not attrs.get("interrupted")


def _fail(study: optuna.Study, storage: BaseStorage, t: optuna.trial.FrozenTrial, reason: str | None) -> None:
    """Tell another worker's trial FAIL (with `fail_reason` first when given), through Optuna's public calls:
    `Study.tell` for a RUNNING trial, the storage's documented `set_trial_state_values` for a WAITING one."""
    trial_id = _trial_id(storage, study, t.number)
    if reason is not None:
        storage.set_trial_user_attr(trial_id, "fail_reason", reason)
    fail = type(t.state).FAIL  # optuna's TrialState, not imported here
    if t.state.name == "RUNNING":
        study.tell(t.number, state=fail, skip_if_finished=True)
    else:
        storage.set_trial_state_values(trial_id, fail)


def _trial_id(storage: BaseStorage, study: optuna.Study, number: int) -> int:
    """The storage id of the study's trial `number` (BaseStorage's documented look-ups).

    `optuna.Trial.set_user_attr` needs the trial object of the process that asked for it; another process's
    trial is written through the storage the store opened on the study's journal, by this id.
    """
    return storage.get_trial_id_from_study_id_trial_number(storage.get_study_id_from_name(study.study_name), number)


def mark(study: optuna.Study, storage: BaseStorage, pid: int, key: str, value: object) -> int:
    """Set user attribute `key` on every RUNNING trial of worker `pid` on this host; how many there were."""
    host, n = socket.gethostname(), 0
    for t in study.get_trials(deepcopy=False):
        if t.state.name == "RUNNING" and not problem(t) and t.user_attrs["worker"] == {"host": host, "pid": pid}:
            storage.set_trial_user_attr(_trial_id(storage, study, t.number), key, value)
            n += 1
    return n


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return pid > 0
