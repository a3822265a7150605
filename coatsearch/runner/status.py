"""Where a study stands: its trials counted by state against the space it plans from, and the time left, from the
completed trials' wall times and from the plan `run` stored (plan.json)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coatsearch.errors import UserError

if TYPE_CHECKING:
    from coatsearch.space.objects import Space


@dataclass(frozen=True)
class Status:
    """Where a study stands: trial counts by state, against its plan, and the time left."""

    study: str
    planned: int | None  # None when the space file the study ran is gone
    complete: int
    failed: int  # failed with a reason (kept; not rerun)
    interrupted: int  # failed without a reason, or RUNNING with its worker gone (killed): rerun by the next `run`
    pruned: int
    running: int  # RUNNING with a live worker (or one on another host, which cannot be seen)
    waiting: int
    mean_wall_s: float | None  # mean wall time of the completed trials
    eta_s: float | None  # remaining trials × mean wall time, spread over the running workers (at least 1)
    predicted_s: float | None = None  # the whole study's wall time as its stored plan predicted it (plan.json)
    plan_eta_s: float | None = None  # the plan's prediction for the remaining trials (their share of predicted_s)
    remaining: int | None = None  # planned trials not finished (running ones included) that can still run; None: the
    # space the study ran cannot be read
    reused: int = 0  # sampled points whose network was measured on that seed (nothing trained)
    rejected: int = 0  # sampled points refused before training (a constraint)


def status(study: str, studies_dir: str | Path = "studies") -> Status:
    """Count a study's trials by state and estimate the time left from the completed trials' wall times."""
    from coatsearch.storage import record, store
    from coatsearch.storage.lock import worker_gone
    from coatsearch.storage.trials import plan as plan_of

    st = store.load_study(Path(studies_dir), study)
    trials = store.records(st)  # foreign or malformed trials: one note each, not counted
    n = record.count(trials)
    walls = [w for t in trials if t.state == "COMPLETE" and (w := t.run.number("wall_s")) is not None]
    mean = sum(walls) / len(walls) if walls else None
    space = _planned(st.user_attrs)
    planned = None if space is None else len(plan_of(space))
    left = None if space is None else _left(space, st)
    gone = sum(worker_gone(t) for t in st.get_trials(deepcopy=False))  # liveness, not only the stored state
    eta = None if mean is None or left is None else left * mean / max(1, n["running"] - gone)
    counts = (n["complete"], n["failed"], n["interrupted"] + gone, n["pruned"], n["running"] - gone, n["waiting"])
    predicted, plan_eta = _plan_eta(Path(studies_dir), study, left)
    return Status(study, planned, *counts, mean, eta, predicted, plan_eta, left, n["reused"], n["rejected"])


def _plan_eta(studies_dir: Path, study: str, left: int | None) -> tuple[float | None, float | None]:
    """(predicted study seconds, predicted seconds left) from the plan `run` stored; Nones without one."""
    from coatsearch.storage.planfile import load
    from coatsearch.storage.store import folder

    stored = load(folder(studies_dir, study))
    if not stored or not stored.get("study_s") or not stored.get("trials"):
        return None, None
    share = None if left is None else min(1.0, left / stored["trials"])
    return float(stored["study_s"]), None if share is None else share * float(stored["study_s"])


def _left(space: Space, st: Any) -> int:
    """Planned trials not finished that can still run: a grid used up, or a re-evaluation rank beyond the
    architectures the finished search found, never will (the run skips them), so they are not left."""
    from coatsearch.storage import sampling
    from coatsearch.storage.lock import holds_key
    from coatsearch.storage.trials import REEVAL
    from coatsearch.storage.trials import plan as plan_of

    trials = st.get_trials(deepcopy=False)
    done = {t.user_attrs.get("key") for t in trials if holds_key(t) and t.state.name in ("COMPLETE", "FAIL", "PRUNED")}
    running = any(t.state.name in ("RUNNING", "WAITING") for t in trials)
    point = sampling.fixed_points(space)
    open_items = [i for i in plan_of(space) if i.key not in done]
    search = [i for i in open_items if i.sample < REEVAL and point(i, trials) is not None]
    again = [i for i in open_items if i.sample >= REEVAL and (search or running or point(i, trials) is not None)]
    return len(search) + len(again)


def _planned(user_attrs: Mapping[str, Any]) -> Space | None:
    """The space the study plans its trials from, as recorded; None when it cannot be read.

    The space text recorded with the study comes first (it is what ran, and it does not depend on the working
    directory); studies without it fall back to the space file at its recorded path. Its sampler, samples,
    re-evaluation, seeds and test draw are the recorded ones (an enumerate study, a replicate: space.as_recorded).
    """
    from coatsearch.space.objects import as_recorded
    from coatsearch.space.objects import load_space as _load
    from coatsearch.storage.trials import stored_space_record

    record = stored_space_record(user_attrs)
    text, source = record.get("space_yaml"), record.get("source")
    if not isinstance(source, str):
        return None
    text = text if isinstance(text, str) and text else None  # "" when the file could not be read at the start
    try:
        return as_recorded(_load(source, record.get("profile") or "default", text), record)
    except UserError:
        return None
