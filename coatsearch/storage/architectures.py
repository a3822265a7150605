"""The architectures of a study's Optuna trials: each trial's solved structure as its record holds it, and the
distinct architectures ranked by mean objective (what a re-evaluation trial enqueues)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coatsearch.space import search
from coatsearch.storage.record_flat import ATTR

if TYPE_CHECKING:
    from coatsearch.space.objects import Baseline, Candidate


def trial_structure(trial: Any) -> str | None:
    """The solved model's structure an Optuna trial's record holds (None: no record or no model)."""
    return (trial.user_attrs.get(ATTR) or {}).get("model", {}).get("structure")


def ranked(
    trials: Sequence[Any], cand: Candidate | Baseline, direction: str, exclude: Collection[str] = ()
) -> list[dict[str, Any]]:
    """The architectures of complete Optuna trials, best first on equal seeds (rank, below): each one's
    sampled values as Optuna stored them (those of its best trial, `train.*` ones included), so a re-evaluation
    trial enqueues it.
    Trials of one network (`identity`) are one architecture; networks in `exclude` (identities) are left out."""
    paths = [d.path for d in cand.dims]
    model = [d.path for d in search.model_dims(cand)]
    groups: dict[str, list[Any]] = {}
    for t in trials:
        struct = trial_structure(t)
        key = search.identity(struct) if struct else str(tuple(t.params.get(p) for p in model))
        if key not in exclude:
            groups.setdefault(key, []).append(t)

    sign = -1.0 if direction == "maximize" else 1.0
    by_seed: dict[str, dict[Any, float]] = {}
    for key, ts in groups.items():
        seeds: dict[Any, list[float]] = {}
        for t in ts:
            seeds.setdefault(t.params.get("seed"), []).append(t.values[0])
        by_seed[key] = {s: sum(v) / len(v) for s, v in seeds.items()}
    best = [min(groups[key], key=lambda t: sign * t.values[0]) for key in rank(by_seed, direction == "maximize")]
    return [{p: t.params[p] for p in paths if p in t.params} for t in best]


def by_mean(
    records: Iterable[Any], maximize: bool, key: Callable[[Any], str] | None = None
) -> list[tuple[str, list[Any], float]]:
    """(architecture, its records, mean) of the records with a value and a model, best mean first: the one ranking
    of the report's architecture table and `export --best`. A mean is over seeds, each seed's runs averaged first
    (one network on one seed trains alike whichever point built it); `key` groups otherwise (default: the
    architecture, `search.architecture`). The caller passes the search's trials, not re-evaluations."""
    groups: dict[str, list[Any]] = {}
    for r in records:
        if r.value is not None and r.run.model is not None:
            groups.setdefault(key(r) if key else search.architecture(r.run), []).append(r)
    out = []
    for name, rs in groups.items():
        per_seed: dict[Any, list[float]] = {}
        for r in rs:
            per_seed.setdefault(r.seed, []).append(float(r.value))
        out.append((name, rs, statistics.fmean(statistics.fmean(v) for v in per_seed.values())))
    return sorted(out, key=lambda g: -g[2] if maximize else g[2])


def rank(by_seed: Mapping[str, Mapping[Any, float]], maximize: bool) -> list[str]:
    """Networks best first, compared on equal seeds: those measured on the most seeds first, each by its mean over
    its seeds (one value a seed), so a network seen once never outranks one measured on every seed by luck."""
    sign = -1.0 if maximize else 1.0
    return sorted(by_seed, key=lambda n: (-len(by_seed[n]), sign * statistics.fmean(by_seed[n].values()), n))
