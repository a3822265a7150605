"""The bounds the command line and the Python API share, and their one check each.

A flag and its API argument take the same values and are refused in the same words; only the name differs
(`--cpus-per-trial` on the command line, `cpus_per_trial` in the API). A check raises `ArgumentError`: its text
is the API's wording, `as_flags()` the command line's, so each face prints its own names from one check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from coatsearch.errors import UserError
from coatsearch.vocab import numbers

WORKERS_MAX = 64  # workers / --workers: parallel training processes on one machine
TRIALS_MAX = 100_000  # trials / --trials: trials started by one command
BUDGET_MAX_S = 366 * 24 * 3600  # plan(budget=...) / --budget: at most a year of wall time
EFFECT_MAX = 100.0  # plan(effect=...) / --effect: a difference in accuracy points
PILOT_SEEDS_MAX = 10  # plan(pilot_seeds=...) / --pilot-seeds
ENGINES = ("optuna", "ray")  # backend / --backend
FORMATS = ("csv", "parquet", "json", "yaml", "timm")  # export's fmt / --format; yaml, timm: the best architectures


@dataclass(frozen=True)
class RayOptions:
    """The arguments only the Ray backend reads (`address`, `cpus_per_trial`, `gpus_per_trial` in the API, their flags
    on the command line); None: not given."""

    address: str | None = None  # the cluster: "auto" or HOST:PORT (None starts a local Ray)
    cpus_per_trial: float | None = None
    gpus_per_trial: float | None = None


_RAY_ARGS = tuple(f.name for f in dataclasses.fields(RayOptions))  # arguments only the Ray backend reads


class ArgumentError(UserError):
    """A refused argument, worded for either face: `str()` names API arguments, `as_flags()` command-line flags."""

    def __init__(self, words: Callable[[bool], str]) -> None:
        super().__init__(words(False))
        self.words = words

    def as_flags(self) -> str:
        """The same message naming command-line flags (`--cpus-per-trial`, `--backend ray`)."""
        return self.words(True)


def named(key: str, flags: bool) -> str:
    """An argument's name: `cpus_per_trial` in the API, `--cpus-per-trial` on the command line."""
    return f"--{key.replace('_', '-')}" if flags else key


def _engine(backend: str, flags: bool) -> str:
    return f"--backend {backend}" if flags else f"backend={backend!r}"


def checked(name: str, check: Any, value: Any, *bounds: Any) -> Any:
    """`check(value, *bounds)` (a `coatsearch.vocab.numbers` check) with its ValueError as a one-line
    ArgumentError naming the argument: the API says what the CLI's argparse says for the same flag."""
    try:
        return check(value, *bounds)
    except ValueError as exc:
        why = str(exc)
    raise ArgumentError(lambda flags: f"{named(name, flags)}: {why}") from None


def check_counts(workers: Any, trials: Any) -> None:
    """Workers "auto" or an int 1..WORKERS_MAX, trials None or 1..TRIALS_MAX."""
    if workers != "auto":
        checked("workers", numbers.count, workers, 1, WORKERS_MAX)
    if trials is not None:
        checked("trials", numbers.count, trials, 1, TRIALS_MAX)


def check_backend_args(backend: str, workers: Any, ray: RayOptions | Mapping[str, Any]) -> None:
    """An argument the chosen backend would ignore is an error, not a silent no-op: Ray's (RayOptions) on the optuna
    backend, `workers` on Ray; an unknown backend is refused naming those that exist."""
    ray = dataclasses.asdict(ray) if isinstance(ray, RayOptions) else ray
    if backend not in ENGINES:
        raise ArgumentError(lambda flags: f"unknown backend {backend!r}; backends: {', '.join(ENGINES)}")
    given = [k for k in _RAY_ARGS if ray.get(k) is not None]
    if backend != "ray" and given:
        raise ArgumentError(lambda flags: f"{', '.join(named(k, flags) for k in given)}: only used with "
                                          f"{_engine('ray', flags)} (this run uses {backend})")  # fmt: skip
    for key in ("cpus_per_trial", "gpus_per_trial"):
        if ray.get(key) is not None:
            checked(key, numbers.real, ray[key])
    if backend == "ray" and workers not in (None, "auto"):
        raise ArgumentError(lambda flags: f"{named('workers', flags)}: only used with {_engine('optuna', flags)}; "
                                          f"Ray sizes trials with {named('cpus_per_trial', flags)}")  # fmt: skip


ALLOW_UNDECIDED = "--allow-undecided"  # `plan`/`run`: go on when the plan cannot decide a claim the profile declares
