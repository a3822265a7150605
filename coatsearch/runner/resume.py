"""Killed trials resume: each trial's checkpoints in the study folder, the record's note, their removal when done.

Around one trial, `trial(space, folder, item)` turns on `training.checkpoint` with the space's `checkpoint:`
settings, in `<study>/checkpoints/<candidate>/seed=<seed>/sample=<sample>/` (the trial's key: the same for the
trial that runs again after a kill). When the trial ends with an outcome (completed, failed or pruned), its
record says which training runs resumed and from which step (`extra.resumed`), and the folder is removed unless
`checkpoint.keep`. A trial whose worker is killed leaves its folder, and the next `coatsearch run` goes on from
it. Ray trials take the same path inside their Ray worker, and each save also goes to Ray (`on_save`: the Ray
backend reports the folder through `tune.report(checkpoint=...)`); a trial Ray restores after its worker died
gets Ray's copy back into its folder (`restored`) before it trains, on whichever machine it lands.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from coatsearch import fsafe
from coatsearch.space.objects import Space
from coatsearch.storage import record as R
from coatsearch.storage.trials import PlanItem
from coatsearch.training import checkpoint

FOLDER = "checkpoints"  # inside the study folder
_Outcome = tuple[str, R.RunRecord | None, Any]


def folder_of(study_folder: Path, item: PlanItem) -> Path:
    """Where the checkpoints of planned trial `item` go."""
    return Path(study_folder) / FOLDER / item.candidate / f"seed={item.seed}" / f"sample={item.sample}"


@contextmanager
def trial(
    space: Space,
    study_folder: Path | None,
    item: PlanItem,
    on_save: Callable[[Path, int], None] | None = None,
    restored: Path | None = None,
) -> Iterator[Callable[[_Outcome], _Outcome]]:
    """Checkpoint the trial's long training runs; yields `done(outcome)`, which notes a resume in the record and
    removes the checkpoints (unless kept). Without a study folder or with `checkpoint.every: 0`, nothing.

    `on_save(folder, step)` hears each save; `restored`: a folder of the trial's checkpoints (Ray's copy) that
    replaces the trial's own before it trains."""
    spec = space.checkpoint
    where = folder_of(study_folder, item) if study_folder is not None and spec.every > 0 else None
    if where is not None and restored is not None:
        _bring_back(Path(restored), where)
    policy = checkpoint.Policy(where, spec.every, spec.min_steps, on_save) if where is not None else None
    with checkpoint.trial(policy) as state:

        def done(outcome: _Outcome) -> _Outcome:
            status, run, value = outcome
            if state is not None and state.resumed and run is not None:
                run = replace(run, extra={**run.extra, "resumed": [dict(r) for r in state.resumed]})
            if where is not None and not spec.keep:
                remove(where, where.parents[2])  # and <study>/checkpoints/<candidate>/seed=<seed> when emptied
            return status, run, value

        yield done


def remove(where: Path, top: Path | None = None) -> None:
    """Remove a trial's checkpoint folder (never through a link), a failure a note line; then its parents up to
    `top` that are left empty (quietly: another trial may be making its folder there)."""
    try:
        if where.is_symlink():
            raise OSError("it is a symbolic link; remove it")
        if where.exists():
            shutil.rmtree(where)
    except OSError as exc:
        print(f"coatsearch: note: {where}: its checkpoints could not be removed ({exc})", file=sys.stderr)
        return
    up = where.parent
    with contextlib.suppress(OSError):
        while top is not None and up.is_relative_to(top) and not up.is_symlink():
            up.rmdir()  # only an empty folder goes (an OSError otherwise, which ends the walk)
            up = up.parent


def _bring_back(source: Path, where: Path) -> None:
    """Copy the checkpoint files of `source` (Ray's copy of a trial's folder) into `where` through the safe writer."""
    for f in sorted(source.glob("fit*.safetensors")):
        fsafe.write(where / f.name, fsafe.read_bytes(f))
