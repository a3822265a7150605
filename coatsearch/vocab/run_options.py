"""The options of a run, declared once: `api.run(space, RunOptions(...))` takes them, `coatsearch run` builds them.

Each option is one field here; the command line's flag of the same destination name fills it (cli_run.run_options),
and `api.run(space, study="s", workers=2)` sets the same fields by keyword. A new run option is one field (and, for
the command line, one `add_argument` whose `dest` is the field's name). Values are checked once, by `api.run`,
before anything is written (vocab.bounds: one wording for the API and the flags).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coatsearch.errors import UserError
from coatsearch.vocab.bounds import RayOptions


@dataclass(frozen=True)
class RunOptions:
    """How one run trains and scores a space's planned trials (resuming), and what it writes."""

    study: str | None = None  # the study's name (None: the space's name, plus -PROFILE unless default)
    backend: str = "optuna"  # "optuna" (local worker processes) or "ray" (Ray Tune)
    workers: int | str = "auto"  # optuna: worker processes 1..64, or "auto" (processes x threads from a probe)
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    trials: int | None = None  # run at most this many trials now (None: every one not yet taken)
    profile: str | None = None  # the profile a space file is loaded under (a Space must have been loaded under it)
    studies_dir: str | Path = "studies"
    reports_dir: str | Path = "reports"
    report: bool = True  # write the report at the end
    progress: bool = True  # progress bars
    address: str | None = None  # ray: the cluster ("auto" or HOST:PORT; None starts a local Ray)
    cpus_per_trial: float | None = None  # ray
    gpus_per_trial: float | None = None  # ray
    force_new_space: bool = False  # the study was run with another version of the space: record this one
    plan_first: bool = False  # optuna: pilot first (or reuse the stored plan), print the ETA, store plan.json
    replicate_of: str | None = None  # the study this one replicates (its registration says so)
    log: str | None = None  # none | tensorboard | mlflow (None: the space's `log:`)
    allow_undecided: bool = False  # go on when the plan cannot decide a claim the profile declares it decides
    tracking_uri: str | None = None  # mlflow's store (None: MLFLOW_TRACKING_URI, else SQLite in the study folder)
    keep_top: int | None = None  # keep the final weights of this many best trials (None: the space's `keep_top:`)

    @property
    def ray(self) -> RayOptions:
        """The options only the Ray backend reads."""
        return RayOptions(self.address, self.cpus_per_trial, self.gpus_per_trial)


NAMES = tuple(f.name for f in dataclasses.fields(RunOptions))


def options_of(options: RunOptions | None, given: Mapping[str, Any]) -> RunOptions:
    """`options` (None: the defaults) with the keywords `given` set; anything else is one line naming what exists."""
    if options is not None and not isinstance(options, RunOptions):
        raise UserError(f"options: {options!r} is not allowed; allowed: a coatsearch.RunOptions, or keywords")
    unknown = sorted(set(given) - set(NAMES))
    if unknown:
        raise UserError(f"run: no option {unknown[0]!r}; allowed: {', '.join(NAMES)}")
    return dataclasses.replace(options or RunOptions(), **given)
