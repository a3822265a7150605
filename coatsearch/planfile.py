"""The plan a run stored beside its study (plan.json): read back by `status` and the report; imports nothing heavy."""

from __future__ import annotations

import json
from pathlib import Path

from coatsearch import fsafe
from coatsearch.errors import UserError

PLAN_FILE = "plan.json"  # beside the study's journal: the plan `run` made, read by `status` and the report


def load(folder: Path) -> dict | None:
    """The plan.json a run stored in the study's folder, or None."""
    try:
        stored = json.loads(fsafe.read_bytes(Path(folder) / PLAN_FILE))
    except (OSError, ValueError, UserError):  # none, unreadable, or a link/special file (fsafe): no plan to check
        return None
    return stored if isinstance(stored, dict) else None


def check(stored: dict | None, environment: dict) -> dict | None:
    """Predicted vs measured wall time of a study: the stored plan's prediction against the trials' elapsed time.

    `environment` is the report's (report.info.environment): elapsed_s runs from the first trial's start to the
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
