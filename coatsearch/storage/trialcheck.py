"""What comes back from the storage is checked before it is used: foreign or malformed trials are left out.

Optuna's own API (the dashboard, a colleague's script) can write anything into a study. A trial is
*ours* when its attributes have the types coatsearch writes (ATTRS), it carries the planned key while
waiting or running, and a COMPLETE trial a run claimed carries the record `store.tell` writes just before
the state, told COMPLETE (in older journals: the `told` mark, or before it the objective every result records).
Anything else is left out of claims, counts and the report
with a one-line note naming it (`trial 7: attribute optim is a str, expected a mapping; left out`).
No optuna import: trials are read through their attributes only.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from coatsearch.storage.record import ATTR
from coatsearch.storage.record import problem as record_problem

_NUM = (int, float)
_STR = (str,)
_MAP = (Mapping,)
_LIST = (list, tuple)
# attribute -> the types coatsearch writes (None is allowed where a value can be missing)
ATTRS: dict[str, tuple[tuple[type, ...], bool]] = {
    **{k: (_STR, False) for k in ("candidate", "model_label", "arch", "layout", "stem", "stages", "key")},
    **{
        k: (_STR, False)
        for k in ("device", "objective", "fail_reason", "run_id", "backend", "killed_by", "told", "rejected")
    },
    "grid": ((int,), False),  # the grid sampler's point index (sampling.grid_points)
    "network": (_STR, False),  # what the trial measures (sampling.network)
    "reuse": ((int,), False),  # the trial whose measurement a sampled point reused (store.reuse)
    "again": ((int,), False),  # 1: a reused point after which its planned trial sampled again
    **{k: (_NUM, False) for k in ("params", "macs", "wall_s")},
    **{k: (_NUM, True) for k in ("budget_macs", "budget_error", "multiplier")},
    **{k: ((int,), True) for k in ("seed", "sample")},
    **{k: (_LIST, False) for k in ("depths", "widths", "tokens")},
    **{k: (_MAP, False) for k in ("optim", "env", "worker")},
}
_NAMES = {int: "an int", float: "a float", str: "a str", list: "a list", tuple: "a list", Mapping: "a mapping"}


def _kind(value: Any) -> str:
    return "None" if value is None else f"a {type(value).__name__}"


def _typed(value: Any, types: tuple[type, ...], optional: bool) -> bool:
    if value is None:
        return optional
    if isinstance(value, bool):  # bool is an int to Python, never to a record
        return False
    return isinstance(value, types) and not (isinstance(value, float) and not math.isfinite(value) and not optional)


def _attr_problem(key: str, value: Any) -> str:
    """Why one user attribute is not of the type coatsearch writes ("" when it is, or is not one of ours)."""
    if key.startswith("curves."):
        return "" if isinstance(value, Mapping) else f"attribute {key} is {_kind(value)}, expected a mapping"
    if key == ATTR:
        return record_problem(value)
    if key in ATTRS:
        types, optional = ATTRS[key]
        if not _typed(value, types, optional):
            return f"attribute {key} is {_kind(value)}, expected {_NAMES.get(types[0], types[0].__name__)}"
        if key == "worker" and not (isinstance(value.get("pid"), int) and isinstance(value.get("host"), str)):
            return "attribute worker has no integer pid and host name"
    return ""


def problem(trial: Any) -> str:
    """Why a trial (FrozenTrial) is foreign or malformed: the first bad attribute or state ("" when it is ours)."""
    attrs, params = trial.user_attrs, trial.params
    for key, value in attrs.items():
        if why := _attr_problem(key, value):
            return why
    if "candidate" in params and not isinstance(params["candidate"], str):
        return f"param candidate is {_kind(params['candidate'])}, expected a str"
    if "seed" in params and not _typed(params["seed"], (int,), False):
        return f"param seed is {_kind(params['seed'])}, expected an int"
    state = trial.state.name
    if state in ("WAITING", "RUNNING") and "key" not in attrs:
        return f"a {state} trial without the key coatsearch plans by (added from outside coatsearch)"
    if state == "RUNNING" and "worker" not in attrs:
        return "a RUNNING trial without a worker (started from outside coatsearch)"
    told = attrs.get("told") == "COMPLETE" or "objective" in attrs or attrs.get(ATTR, {}).get("state") == "COMPLETE"
    claimed = "run_id" in attrs
    if state == "COMPLETE" and claimed and not told:
        return "claimed by a coatsearch run but told COMPLETE from outside it (e.g. the dashboard)"
    return ""


def ours(trials: Iterable[Any], say: bool = True) -> list[Any]:
    """The trials that are ours; each other one is named in one note line on stderr (when `say`)."""
    kept = []
    for t in trials:
        why = problem(t)
        if not why:
            kept.append(t)
        elif say:
            print(f"coatsearch: note: trial {t.number}: {why}; left out", file=sys.stderr)
    return kept


def space_problem(value: Any) -> str:
    """Why a study's `space` attribute is not a space record ("" when it is one or is missing)."""
    if value is None or isinstance(value, Mapping):
        return ""
    return f"study attribute space is {_kind(value)}, expected a mapping"
