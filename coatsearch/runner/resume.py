"""Killed trials resume: each trial's checkpoints in the study folder, the record's note, their removal when done.

Around one trial, `trial(space, folder, item)` makes the trial's `training.checkpoint_policy.Trial` from the space's
`checkpoint:` settings, in `<study>/checkpoints/<candidate>/seed=<seed>/sample=<sample>/` (the trial's key: the same
for the trial that runs again after a kill); the runner passes it down to every `fit` of the trial as an argument
(runner.trial.attempt -> scores.measure -> scores.training.train -> training.fit). When the trial ends with an
outcome (completed, failed or pruned), its record says which training runs resumed and from which step
(`extra.resumed`), and the folder is removed unless `checkpoint.keep`. A trial whose worker is killed leaves its
folder, and the next `coatsearch run` goes on from it. Ray trials take the same path inside their Ray worker, and
each save also goes to Ray (`on_save`: the Ray backend reports the folder through `tune.report(checkpoint=...)`); a
trial Ray restores after its worker died gets Ray's copy back into its folder (`restored`) before it trains, on
whichever machine it lands.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from coatsearch import fsafe
from coatsearch.errors import UserError
from coatsearch.space.objects import Space
from coatsearch.storage import record as R
from coatsearch.storage.trials import PlanItem
from coatsearch.training import checkpoint_policy

FOLDER = "checkpoints"  # inside the study folder
_Outcome = tuple[str, R.RunRecord | None, Any]


def folder_of(study_folder: Path, item: PlanItem) -> Path:
    """Where the checkpoints of planned trial `item` go."""
    return Path(study_folder) / FOLDER / _parts(item)


def _parts(item: PlanItem) -> Path:
    """The trial's checkpoint folder below the study folder's FOLDER."""
    return Path(item.candidate) / f"seed={item.seed}" / f"sample={item.sample}"


@contextmanager
def trial(
    space: Space,
    study_folder: Path | None,
    item: PlanItem,
    on_save: Callable[[Path, int], None] | None = None,
    restored: Path | None = None,
) -> Iterator[tuple[Callable[[_Outcome], _Outcome], checkpoint_policy.Trial | None]]:
    """Checkpoint the trial's long training runs; yields (`done(outcome)`, the trial's checkpointing to pass to its
    fits). `done` notes a resume in the record and removes the checkpoints (unless kept). Without a study folder or
    with `checkpoint.every: 0`, the checkpointing is None.

    Every component of the folder below the study folder is checked (`fsafe.owned`): a link on it (planted after
    `run` checked the study's folders) is a note line, and the trial runs without checkpoints.
    `on_save(folder, step)` hears each save; `restored`: a folder of the trial's checkpoints (Ray's copy) that
    replaces the trial's own before it trains."""
    spec = space.checkpoint
    where = None
    if study_folder is not None and spec.every > 0:
        try:
            where = fsafe.owned(study_folder, FOLDER, _parts(item))
        except UserError as exc:
            print(f"coatsearch: note: {exc}; this trial runs without checkpoints", file=sys.stderr)
    if where is not None and restored is not None:
        _bring_back(Path(restored), where, Path(study_folder))  # type: ignore[arg-type]  # not None with `where`
    policy = (
        None if where is None else checkpoint_policy.Policy(where, spec.every, spec.min_steps, on_save, study_folder)
    )
    state = checkpoint_policy.Trial(policy) if policy is not None else None

    def done(outcome: _Outcome) -> _Outcome:
        status, run, value = outcome
        if state is not None and state.resumed and run is not None:
            run = replace(run, extra={**run.extra, "resumed": [dict(r) for r in state.resumed]})
        if where is not None and not spec.keep:
            remove(Path(study_folder), item)  # type: ignore[arg-type]  # not None with `where`
        return status, run, value

    yield done, state


def remove(study_folder: Path, item: PlanItem) -> None:
    """Remove a trial's checkpoint folder, never through a link on any component of its path (a failure is a
    note line); then its parents up to `<study>/checkpoints` that are left empty (quietly: another trial may be
    making its folder there)."""
    parts = _parts(item)
    try:
        fsafe.remove_owned(study_folder, FOLDER, parts)
    except UserError as exc:
        print(f"coatsearch: note: {exc}; the trial's checkpoints were not removed", file=sys.stderr)
        return
    with contextlib.suppress(OSError, UserError):
        for up in parts.parents[:-1]:  # seed=<seed>, then <candidate>
            os.rmdir(fsafe.owned(study_folder, FOLDER, up))  # only an empty folder goes (an OSError ends the walk)


def _bring_back(source: Path, where: Path, study_folder: Path) -> None:
    """Copy the checkpoint files of `source` (Ray's copy of a trial's folder) into `where` through the safe writer."""
    for f in sorted(source.glob("fit*.safetensors")):
        target = fsafe.owned(study_folder, where.relative_to(study_folder), f.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        fsafe.write(target, fsafe.read_bytes(f))
