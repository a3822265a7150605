"""Registries of samplers and pruners: what `study.sampler` and `study.pruner` may name, and what each can take.

No optuna here: a factory is named as "module:Class" and imported on first use (`storage.sampling` makes it), so
spec code stays light. A new sampler is one entry in SAMPLERS (a new pruner one in PRUNERS): the spec check,
the space's compatibility rules (space/load.py), `replay` and the CLI help read the registry when they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from coatsearch.vocab.registry import Registry


@dataclass(frozen=True)
class SamplerKind:
    """One sampler: its Optuna factory, called factory(seed=seed, **options), and what it can sample."""

    text: str  # what it is, for docs and errors
    factory: str  # "module:Class", e.g. "optuna.samplers:TPESampler"
    options: Mapping[str, Any] = field(default_factory=dict)  # keyword arguments besides `seed`
    single: bool = True  # takes a single-objective study (study.objective)
    multi: bool = True  # takes a multi-objective study (study.objectives)
    choices: bool = True  # samples choice lists; False: int and float ranges only, and at least one of them
    constraints: bool = True  # reads Optuna's constraint (a rejected point is infeasible); False: told the worst value
    grid: bool = False  # plans every point of a finite space in turn (enqueued); the factory fills in nothing

    @property
    def replays(self) -> bool:
        """Whether `replay` runs it: one objective, choice lists, a sampler of its own (not the grid's order)."""
        return self.single and self.choices and not self.grid


@dataclass(frozen=True)
class PrunerKind:
    """One pruner: its Optuna factory, called factory(**options)."""

    text: str
    factory: str  # "module:Class", e.g. "optuna.pruners:MedianPruner"
    options: Mapping[str, Any] = field(default_factory=dict)
    prunes: bool = True  # False: the no-op pruner (a study without one; multi-objective studies need it)


SAMPLERS: Registry[SamplerKind] = Registry(
    "sampler",
    {
        "random": SamplerKind("independent uniform draws", "optuna.samplers:RandomSampler"),
        "tpe": SamplerKind(
            "multivariate TPE, grouped, constant liar for parallel workers",
            "optuna.samplers:TPESampler",
            {"multivariate": True, "group": True, "constant_liar": True},
        ),
        "gp": SamplerKind("Gaussian-process Bayesian optimization", "optuna.samplers:GPSampler"),
        "cmaes": SamplerKind(
            "CMA-ES over int and float ranges",
            "optuna.samplers:CmaEsSampler",
            {"warn_independent_sampling": False},
            multi=False,
            choices=False,
            constraints=False,
        ),
        "nsga2": SamplerKind("NSGA-II, for several objectives", "optuna.samplers:NSGAIISampler", single=False),
        # every point is enqueued as fixed values (claiming), which Optuna's GridSampler refuses: the sampler is random
        "grid": SamplerKind(
            "every point of a finite space, each once per seed", "optuna.samplers:RandomSampler", grid=True
        ),
    },
)

PRUNERS: Registry[PrunerKind] = Registry(
    "pruner",
    {
        "none": PrunerKind("no pruning", "optuna.pruners:NopPruner", prunes=False),
        "median": PrunerKind("stop below the median of earlier trials at the same step", "optuna.pruners:MedianPruner"),
        "hyperband": PrunerKind("Hyperband's successive halving", "optuna.pruners:HyperbandPruner"),
    },
)


def check_sampler(name: str) -> str:
    """`name` when it is a registered sampler (the spec's check of `study.sampler`), else ValueError."""
    SAMPLERS.entry(name)
    return name


def check_pruner(name: str) -> str:
    """`name` when it is a registered pruner (the spec's check of `study.pruner`), else ValueError."""
    PRUNERS.entry(name)
    return name


def replayable() -> tuple[str, ...]:
    """The samplers `replay` runs, in registry order."""
    return tuple(name for name, kind in SAMPLERS.items() if kind.replays)
