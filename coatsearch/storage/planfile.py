"""The plan a run stored beside its study (plan.json): read back by `status` and the report; imports nothing heavy."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from coatsearch import fsafe
from coatsearch.errors import UserError

PLAN_FILE = "plan.json"  # beside the study's journal: the plan `run` made, read by `status` and the report
SECONDS_MAX = 100 * 31_622_400  # a century: a predicted duration past it is no plan any run could follow
TRIALS_MAX = 100_000_000  # planned trials: far above what a space can plan (10,000 samples x 100 seeds x ...)


class StoredPlan(BaseModel):
    """The fields of plan.json that `status`, the report and `run` read; every other key is kept as it is."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)

    study_s: Annotated[float, Field(gt=0, le=SECONDS_MAX)]  # the whole study's predicted wall seconds
    trials: Annotated[int, Field(ge=1, le=TRIALS_MAX)]  # planned trials the prediction covers
    trial_s: dict[str, Annotated[float, Field(ge=0, le=SECONDS_MAX)]] = {}  # candidate -> seconds of one trial
    processes: Annotated[int, Field(ge=1, le=64)]  # --workers is at most 64
    threads: Annotated[int, Field(ge=1, le=65_536)] | None = None
    device: str = "auto"
    eta_line: str = ""


def load(folder: Path) -> dict | None:
    """The plan.json a run stored in the study's folder, read through `StoredPlan`; None when there is none.

    A plan that cannot be read (not JSON, a link) is ignored silently, as before; one whose values are damaged
    (a string, zero, NaN or infinity where a number belongs, a missing key) is named in one note line and ignored
    by `status`, the report and `run` alike (which then makes a new plan).
    """
    path = Path(folder) / PLAN_FILE
    try:
        stored = fsafe.parse_json(fsafe.read_bytes(path, fsafe.JSON_MAX), path, object)  # bounded: size, depth
    except (OSError, ValueError, UserError):  # none, unreadable, or a link/special/huge/deep file: no plan to check
        return None
    try:
        return StoredPlan.model_validate(stored).model_dump()
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(map(str, first["loc"])) or "(the file)"
        print(f"coatsearch: note: {path}: field '{field}': {first['msg']} (found {first.get('input')!r:.40}); "
              "the stored plan is ignored", file=sys.stderr)  # fmt: skip
        return None


def check(stored: dict | None, environment: dict) -> dict | None:
    """Predicted vs measured wall time of a study: the stored plan's prediction against the trials' elapsed time.

    `environment` is the report's (analysis.tables.environment): elapsed_s runs from the first trial's start to the
    last one's end, and the plan predicts the same span (its pilot, which ran before, is not in either).
    """
    if not stored or stored.get("study_s") is None:
        return None
    measured, per_trial = environment.get("elapsed_s"), stored.get("trial_s") or {}
    done = (environment.get("counts") or {}).get("complete")
    ratio = measured / stored["study_s"] if measured else None
    return {"predicted_s": stored["study_s"], "measured_s": measured, "measured_over_predicted": ratio,
            "planned_trials": stored.get("trials"), "complete_trials": done, "processes": stored.get("processes"),
            "threads": stored.get("threads"), "predicted_trial_s": per_trial}  # fmt: skip
