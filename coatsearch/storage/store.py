"""The study store: the study folder, its JournalStorage (opened once per process), claiming, telling, records.

Layout: `<studies_dir>/<study>/journal.log` is the one store of record (an Optuna JournalStorage file);
`<studies_dir>/<study>/claim.lock` serializes claims; Ray writes its logs under `<study>/ray/`.

Storage invariants (every backend goes through this module, so they hold for all):
- Every planned trial (PlanItem.key) lives in the study as one Optuna trial; a key is *taken* while some
  trial with it is WAITING, RUNNING (by a live process), COMPLETE, PRUNED, or FAIL with a `fail_reason`.
- A RUNNING trial whose worker process is gone (kill -9) is told FAIL without a reason, which frees its key,
  so the next run trains it again.
- Claiming happens under the claim lock, so K workers never run one key twice.
- A trial's result is ONE user attribute, its `record` (coatsearch.storage.record, JSON), written just before its
  state (`tell`), with Optuna's constraint between them (`sampling.constrain`); records, once told, are never
  rewritten. Claiming adds `key`, `run_id`, `backend`, `worker`.
- A sampled point that trains nothing keeps no key: a rejected one (`rejected`, `reject`), or one whose network
  another trial measures on its seed (`reuse`, `again`: the planned trial samples again; `store.reuse`).
- A `TrialRecord` read from the storage is frozen and a copy: later writes to the storage never change it.
Journals written before the record (7eb0683, b1c4749: one flat attribute per metric) open through `record.read`.
"""

from __future__ import annotations

import copy
import hashlib
import sys
import uuid
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.space import admission
from coatsearch.space.objects import Space
from coatsearch.storage import journal as J
from coatsearch.storage import lock, paths, sampling
from coatsearch.storage import record as R
from coatsearch.storage import trialcheck as TC
from coatsearch.storage import trials as P
from coatsearch.storage.lock import LOCK, holds_key, locked  # noqa: F401 - the store's API
from coatsearch.storage.paths import study_folder

JOURNAL = paths.JOURNAL
MATCHED = "matched"  # study attr: candidate -> {"spec": hash of its candidate spec, "prepared": matched record}
_STATES = ("COMPLETE", "PRUNED", "FAIL")  # the outcomes a trial can be told
REJECTED = "rejected"  # user attribute of a sampled point refused before training (admission.admit): why
_OPEN: dict[Path, JournalStorage] = {}  # journal path -> the storage this process opened on it
IDENTITY = "identity"  # user attr of a journal's first Optuna study: a random id its registration is tied to


def folder(studies_dir: Path, name: str) -> Path:
    """The study's folder: the one place its layout is composed (name and containment checked by `paths`)."""
    return study_folder(Path(studies_dir), name)


def storage_file(studies_dir: Path, name: str) -> Path:
    """The journal file that is the study's one store of record."""
    return folder(studies_dir, name) / JOURNAL


def open_storage(path: Path) -> JournalStorage:
    """The JournalStorage on a local file, opened once per process (safe for several processes on one machine).

    An existing journal is checked line by line first: a damaged one is a one-line UserError naming the
    file and line, and `coatsearch repair`, never a JSONDecodeError from inside optuna.
    """
    path = Path(path).parent.resolve() / Path(path).name  # the file itself is never a link (fsafe)
    fsafe.check_plain(path)
    if path not in _OPEN or not path.exists():
        if path.exists():
            _check_journal(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _OPEN[path] = JournalStorage(JournalFileBackend(str(path), lock_obj=_lock(path)))  # type: ignore[arg-type]
    return _OPEN[path]


def _lock(path: Path) -> J.Lock:
    """The journal's lock (Optuna's protocol, bounded waits), held by every writer while it appends."""
    return J.Lock(Path(path))


def _check_journal(path: Path) -> None:
    """Raise a one-line UserError at the journal's first damaged line, naming `coatsearch repair`."""
    J.check(Path(path), _lock(path))


def claim(
    study: optuna.Study,
    items: Mapping[str, lock.ItemT],
    run_id: str,
    limit: int | None,
    study_folder: Path,
    backend: str = "optuna",
    fixed: Any = None,
) -> tuple[optuna.Trial, lock.ItemT] | None:
    """Claim the next planned trial (`storage.lock.claim`), through the storage this process opened on the journal."""
    storage = open_storage(Path(study_folder) / JOURNAL)
    return lock.claim(study, items, run_id, limit, study_folder, backend, fixed, storage=storage)


def mark(study: optuna.Study, study_folder: Path, pid: int, key: str, value: object) -> int:
    """Set user attribute `key` on worker `pid`'s RUNNING trials (`storage.lock.mark`); how many there were."""
    return lock.mark(study, open_storage(Path(study_folder) / JOURNAL), pid, key, value)


def repair(studies_dir: Path, name: str) -> J.Repaired:
    """Keep every complete record before the journal's first damaged line; move the rest to a backup beside it."""
    path = storage_file(studies_dir, name)
    if not path.exists():
        raise UserError(f"no study '{name}' under {studies_dir}/ (expected {path})")
    done = J.repair(path, _lock(path))
    _OPEN.pop(path.parent.resolve() / path.name, None)
    return done


def load_study(studies_dir: Path, name: str, space: Space | None = None, stream: int = 0) -> optuna.Study:
    """Open an existing study by name (its newest generation, `current`); a clear error when there is none.

    To sample trials pass `space`: the study then asks with the space's sampler, seeded `study.seeds[0] +
    stream` (each worker process its own stream), and its pruner; without it Optuna's defaults, for reading.
    """
    path = storage_file(studies_dir, name)
    if not path.exists():
        raise UserError(f"no study '{name}' under {studies_dir}/ (expected {path}); run `coatsearch run` first")
    storage = open_storage(path)
    _study_id(storage, path, name)
    sampler, pruner = (None, None) if space is None else (sampling.sampler(space, stream), sampling.pruner(space))
    return optuna.load_study(study_name=current(storage, name), storage=storage, sampler=sampler, pruner=pruner)


_GENERATION = "~"  # `<study>~2`: the successor study --force-new-space starts (not a study-name character)


def current(storage: JournalStorage, name: str) -> str:
    """The Optuna study that holds study `name` now: `name`, or its newest successor `name~K` in the journal.

    `run --force-new-space` with a changed space starts a successor study in the same journal (Optuna fixes
    a parameter's choices and the study's directions at creation, so a changed candidate list, seed list or
    objective cannot continue the old one); the earlier studies stay in the journal as they were, readable in
    the dashboard and through `optuna.load_study(study_name=name)`.
    """
    names = {s.study_name for s in storage.get_all_studies()}
    k = 2
    while f"{name}{_GENERATION}{k}" in names:
        k += 1
    return name if k == 2 else f"{name}{_GENERATION}{k - 1}"


def _successor(name: str, now: str) -> str:
    """The name of the study after `now` (study `name`'s current one)."""
    k = int(now.rsplit(_GENERATION, 1)[1]) + 1 if now != name else 2
    return f"{name}{_GENERATION}{k}"


def _study_id(storage: JournalStorage, path: Path, name: str) -> int:
    """The id of study `name` in the journal; a one-line UserError when the journal does not hold it."""
    try:
        return storage.get_study_id_from_name(name)
    except KeyError:
        held = ", ".join(s.study_name for s in storage.get_all_studies()) or "no study at all"
        raise UserError(
            f"{path}: holds no study '{name}' (it holds {held}; deleted from outside coatsearch?); "
            "move the file away to start the study afresh"
        ) from None


def create_study(space: Space, studies_dir: Path, name: str, force_new_space: bool = False) -> optuna.Study:
    """Create or reopen the study for `space` (its sampler and pruner), recording the space with it.

    Reopening with a space that differs from the recorded one is a UserError saying what changed, raised
    before anything is written; `force_new_space` starts a successor study (`current`) in the same journal
    with the new space, its directions and objectives, and keeps the old study's trials as they were.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    path = storage_file(studies_dir, name)
    exists, stored = _stored_space(path, name)
    changed = P.check_space(stored, space, name, force_new_space) if stored is not None else False
    sampler, pruner = sampling.sampler(space), sampling.pruner(space)
    if exists and not changed:  # reopening appends nothing (optuna.create_study appends a create record every time)
        now = current(open_storage(path), name)
        study = optuna.load_study(study_name=now, storage=open_storage(path), sampler=sampler, pruner=pruner)
        changed = _stale_choices(study, space)  # recorded in place by an older --force-new-space: go on anew
    if not exists or changed:
        now = _successor(name, current(open_storage(path), name)) if exists else name
        if exists:
            print(f"coatsearch: note: the space changed: study '{name}' goes on as Optuna study '{now}' in "
                  f"{path} (all its planned trials run there); the earlier trials stay in the journal as they "
                  "were", file=sys.stderr)  # fmt: skip
        study = optuna.create_study(
            study_name=now,
            storage=open_storage(path),
            **_directions(space),
            sampler=sampler,
            pruner=pruner,
            load_if_exists=True,  # another process may create it meanwhile
        )
    if stored is None or changed:
        study.set_user_attr(P.SPACE_ATTR, {**P.space_record(space), "form": P.space_form(space)})
    if not exists and IDENTITY not in study.user_attrs:
        study.set_user_attr(IDENTITY, uuid.uuid4().hex)
    return study


def identity(study_folder: Path, name: str) -> str | None:
    """The identity of study `name` in its folder's journal (IDENTITY); None without one (an older study, none)."""
    path = Path(study_folder) / JOURNAL
    if not path.is_file():  # opening would create it
        return None
    try:
        attrs = open_storage(path).get_study_user_attrs(open_storage(path).get_study_id_from_name(name))
    except (KeyError, OSError, UserError):
        return None
    return attrs[IDENTITY] if isinstance(attrs.get(IDENTITY), str) else None


def _stale_choices(study: optuna.Study, space: Space) -> bool:
    """Whether the study's trials fixed `candidate` or `seed` choices other than the ones the space plans (Optuna
    would refuse every new trial); a study an older coatsearch recorded a changed space into holds such trials."""
    want = P.fixed_choices(space)  # re-evaluation seeds included, as the trials suggest them
    for t in study.get_trials(deepcopy=False):
        for key, choices in want.items():
            dist = t.distributions.get(key)
            if dist is not None and list(getattr(dist, "choices", choices)) != choices:
                return True
    return False


def _directions(space: Space) -> dict:
    """optuna.create_study's direction argument: `directions` for a multi-objective study (study.objectives)."""
    if space.study.objectives:
        return {"directions": list(space.study.directions)}
    return {"direction": space.study.direction}


def _stored_space(path: Path, name: str) -> tuple[bool, dict | None]:
    """Whether study `name` is in the journal at `path`, and its current space record (reads only)."""
    fsafe.check_plain(path)  # a link or a FIFO is refused before Optuna opens it
    if not path.exists():
        return False, None
    if path.stat().st_size == 0:
        raise UserError(
            f"{path}: is empty: it holds no study '{name}' (a journal emptied from outside coatsearch?); "
            "move the file away to start the study afresh"
        )
    storage = open_storage(path)
    _study_id(storage, path, name)
    stored = storage.get_study_user_attrs(storage.get_study_id_from_name(current(storage, name))).get(P.SPACE_ATTR)
    if why := TC.space_problem(stored):
        raise UserError(f"{path}: {why}; the study's space record was overwritten from outside coatsearch")
    return True, stored


def prepare(space: Space, studies_dir: Path, name: str, force_new_space: bool = False) -> tuple[optuna.Study, dict]:
    """The study created or reopened (`create_study`) and its candidates matched (`matched`): once per run."""
    study = create_study(space, studies_dir, name, force_new_space)
    return study, matched(study, space, folder(studies_dir, name))


def matched(study: optuna.Study, space: Space, study_folder: Path) -> dict:
    """Candidate name -> its matched `Prepared`, for every candidate without search dimensions.

    Solved once per study: the first process to ask (under the claim lock) matches what the study does not
    hold yet (each candidate's `prepared`, solved at most once per process) and stores it; every later trial, worker and
    backend reads it back. A record is keyed by a hash of its candidate spec, so an edited space re-matches.
    """
    from coatsearch.budget import prepare as BP

    with locked(study_folder):
        stored = dict(study.user_attrs.get(MATCHED) or {})
        out, new = {}, {}
        for cand in (c for c in space.candidates if not c.dims):
            key = hashlib.sha1(repr((cand.definition, cand.input)).encode()).hexdigest()[:16]
            rec = stored.get(cand.name)
            if rec and rec.get("spec") == key:
                out[cand.name] = BP.from_record(rec["prepared"])
                continue
            out[cand.name] = cand.prepared
            new[cand.name] = {"spec": key, "prepared": BP.to_record(out[cand.name])}
        if new:
            study.set_user_attr(MATCHED, {**stored, **new})
    return out


def tell(
    study: optuna.Study, trial: optuna.Trial, state: str, run: R.RunRecord | None, value: float | list[float] | None
) -> None:
    """Write a finished trial's record as ONE user attribute, then its state (in _STATES) and value.

    Every backend writes back here. A failure's reason is also its own attribute `fail_reason` (the claim
    protocol reads it: a FAIL with a reason keeps its key). A trial finished meanwhile from outside the
    run (the dashboard's tell) is not ours any more: one note line; `trialcheck` leaves its outside result
    out and its key is trained again.
    """
    try:
        if run is not None:
            trial.set_user_attr(R.ATTR, R.to_json(replace(run, state=state)))
            if run.fail_reason is not None:
                trial.set_user_attr("fail_reason", run.fail_reason)
        if state in ("COMPLETE", "PRUNED") and sampling.constrained(study):
            sampling.constrain(trial, False)
        study.tell(trial, value if state == "COMPLETE" else None, state=TrialState[state])
    except OSError as exc:  # a full disk, a file size limit: name the journal, not only the errno
        journal = _journal_of(study)
        raise UserError(f"{journal}: cannot be written ({exc.strerror or exc}); the trial runs again") from None
    except optuna.exceptions.UpdateFinishedTrialError:
        print(
            f"coatsearch: note: trial {trial.number} was finished from outside this run while it trained; "
            "its result is not this run's and is left out (the trial runs again)",
            file=sys.stderr,
        )


def _journal_of(study: optuna.Study) -> Path | str:
    """The journal this process opened that holds `study` (for an error message; 'the study journal' if none)."""
    for path, storage in _OPEN.items():
        try:
            storage.get_study_id_from_name(study.study_name)
            return path
        except (KeyError, OSError):
            continue
    return "the study journal"


def report_epoch(trial: optuna.Trial, epoch: int, value: float) -> bool:
    """Report a per-epoch score to the study's pruner; whether it says stop."""
    trial.report(value, epoch)
    return trial.should_prune()


TrialRecord = R.TrialRecord  # one stored trial, as everything downstream reads it (coatsearch.storage.record)


def record(trial: optuna.trial.FrozenTrial) -> R.TrialRecord:
    """A frozen TrialRecord from one Optuna trial, through the record's migration-on-read (a copy)."""
    params = copy.deepcopy(dict(trial.params))
    done = _state(trial) == "COMPLETE"
    return R.TrialRecord(
        number=trial.number,
        value=trial.values[0] if done and trial.values else None,
        params=MappingProxyType(params),
        start=trial.datetime_start.isoformat() if trial.datetime_start else None,
        complete=trial.datetime_complete.isoformat() if trial.datetime_complete else None,
        run=_rejection(R.read(copy.deepcopy(dict(trial.user_attrs)), _state(trial), params), trial),
    )


def _rejection(run: R.RunRecord, trial: optuna.trial.FrozenTrial) -> R.RunRecord:
    """A rejected point's record carries why, as `extra['rejected']` (it trained nothing, so it has no record)."""
    if run.state != "REJECTED":
        return run
    return replace(run, extra=MappingProxyType({**run.extra, REJECTED: trial.user_attrs[REJECTED]}))


def claim_point(
    study: optuna.Study, space: Space, items: Mapping[str, P.PlanItem], run_id: str, limit: int | None,
    study_folder: Path, backend: str = "optuna",
) -> tuple[optuna.Trial, P.PlanItem, dict[str, Any], Any] | None:  # fmt: skip
    """Claim the next planned trial and sample its point, rejecting (store.reject) every point the constraints or
    the budget refuse before it trains: (trial, item, params, the admitted Prepared or None), or None when done."""
    fixed = sampling.fixed_points(space)
    while (taken := claim(study, items, run_id, limit, study_folder, backend, fixed)) is not None:
        trial, item = taken
        params = sampling.suggest(trial, space, item)
        cand = space.candidate(item.candidate)
        if not cand.dims:  # a named candidate always trains: it is the reference sampled points reuse
            trial.set_user_attr(sampling.NETWORK, sampling.network(cand, _named(study, cand)))
            return trial, item, params, None
        try:
            admitted = admission.admit(space, cand, params)
        except admission.Rejected as exc:
            reject(study, trial, item.key, exc.reason)
            continue
        trial.set_user_attr(sampling.NETWORK, net := sampling.network(cand, admitted))
        if (source := sampling.measured_by(study.get_trials(deepcopy=False), item.seed, net, trial.number)) is None:
            return trial, item, params, admitted
        reuse(study, trial, item.key, source)
    return None


_NAMED: dict[tuple[str, str], Any] = {}  # (candidate, spec hash) -> its matched Prepared, read once per process


def _named(study: optuna.Study, cand: Any) -> Any:
    """A named candidate's matched Prepared as the study stored it (`matched`), else its own."""
    from coatsearch.budget import prepare as BP

    rec = (study.user_attrs.get(MATCHED) or {}).get(cand.name)
    if not rec:
        return cand.prepared
    key = (cand.name, str(rec.get("spec")))
    if key not in _NAMED:
        _NAMED[key] = BP.from_record(rec["prepared"])
    return _NAMED[key]


def reuse(study: optuna.Study, trial: optuna.Trial, key: str, source: optuna.trial.FrozenTrial) -> None:
    """Record a sampled point whose network trial `source` measures on the same seed: nothing trains. Optuna is
    told the measured values (a point still training is told PRUNED), so the sampler learns them, and the planned
    trial samples again; after sampling.REUSE_MAX such points the planned trial ends as this reuse (its key taken)."""
    trial.set_user_attr(sampling.REUSE, source.number)
    trial.set_user_attr("told", "COMPLETE")
    before = sum(t.user_attrs.get("again") == 1 and t.user_attrs.get("key") == key
                 for t in study.get_trials(deepcopy=False))  # fmt: skip
    if before < sampling.REUSE_MAX:
        trial.set_user_attr("again", 1)
    if source.state == TrialState.COMPLETE:
        if sampling.constrained(study):
            sampling.constrain(trial, False)
        study.tell(trial, list(source.values), state=TrialState.COMPLETE)
    else:
        study.tell(trial, None, state=TrialState.PRUNED)


def _state(trial: optuna.trial.FrozenTrial) -> str:
    """The trial's state name; a point refused at sampling is REJECTED (told PRUNED, or COMPLETE at the worst
    value with Optuna's constraint violated), a point whose network was measured already is REUSED."""
    finished = trial.state in (TrialState.PRUNED, TrialState.COMPLETE)
    if finished and isinstance(trial.user_attrs.get(REJECTED), str):
        return "REJECTED"
    if finished and sampling.REUSE in trial.user_attrs:
        return "REUSED"
    return trial.state.name


def reject(study: optuna.Study, trial: optuna.Trial, key: str, why: str) -> None:
    """Record a sampled point refused before training, with `rejected`, as `sampling.tell_rejected` tells it (the
    samplers learn it through Optuna's constraint); its key stays free, so the planned trial samples again, at most
    admission.REJECT_MAX times in all, after which it is recorded as failed with the last reason (the study goes on
    with the other trials)."""
    trial.set_user_attr(REJECTED, why)
    before = sum(
        t.user_attrs.get(REJECTED) is not None and t.user_attrs.get("key") == key
        for t in study.get_trials(deepcopy=False)
    )
    if before >= admission.REJECT_MAX:
        reason = f"no admissible point in {before} samples (last: {why})"
        trial.set_user_attr("fail_reason", reason)
        study.tell(trial, None, state=TrialState.FAIL)
        return
    sampling.tell_rejected(study, trial)


def records(study: optuna.Study, say: bool = True) -> tuple[R.TrialRecord, ...]:
    """Every trial of ours as a frozen TrialRecord, by number (foreign ones: a note each, when `say`)."""
    return tuple(record(t) for t in TC.ours(study.get_trials(deepcopy=False), say=say))


def read(study: optuna.Study) -> tuple[dict, list[R.TrialRecord]]:
    """A study's space record and its trial records (the frozen records the report and the planner read)."""
    return space_of(study), list(records(study))


def space_of(study: optuna.Study) -> dict:
    """The space record stored with the study (a copy; empty, with a note, when missing or not a mapping)."""
    stored = study.user_attrs.get(P.SPACE_ATTR)
    if why := TC.space_problem(stored):
        print(f"coatsearch: note: {why}; the space record is left out", file=sys.stderr)
        return {}
    return copy.deepcopy(dict(stored or {}))


def counts(study: optuna.Study) -> dict[str, int]:
    """Finished trials of ours by outcome (record.count); `finished` counts those that keep their key."""
    n = R.count(records(study, say=False))
    return {**n, "finished": n["complete"] + n["pruned"] + n["failed"]}


def ran_by(study: optuna.Study, run_id: str) -> int:
    """How many trials one run (`run_id`) claimed."""
    return sum(1 for t in study.get_trials(deepcopy=False) if t.user_attrs.get("run_id") == run_id)


def summary(space: Space, studies_dir: Path, name: str, ran: int, seconds: float) -> P.RunSummary:
    """Count the study's trials by outcome, against the plan."""
    n = counts(load_study(studies_dir, name))
    return P.RunSummary(
        study=name,
        storage=str(storage_file(studies_dir, name)),
        planned=len(P.plan(space)),
        complete=n["complete"],
        failed=n["failed"],
        pruned=n["pruned"],
        ran_now=ran,
        seconds=seconds,
    )


Study = optuna.Study  # the type `load_study` returns, for annotations outside the store
