"""The Pareto front of a multi-objective study (`study.objectives`): computed, then rendered.

Per candidate, the mean over its complete runs of each objective; a candidate is on the front when no other
is at least as good in every objective (in its direction) and better in one. Single-objective studies have
no front (the section is left out; view_speed.pareto and markdown_speed.pareto render it).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from coatsearch.analysis.speed_tables import pareto
from coatsearch.analysis.tables import Records, complete, order


@dataclass(frozen=True)
class FrontPoint:
    """One candidate's mean of each objective over its complete runs (record units), and whether it is on the front."""

    candidate: str
    n: int  # complete runs that measured every objective
    means: tuple[float, ...]  # per objective, in the study's order
    pareto: bool


@dataclass(frozen=True)
class ParetoFront:
    """A multi-objective study's objectives with their directions, and a point per measured candidate."""

    objectives: tuple[str, ...]
    directions: tuple[str, ...]  # 'maximize' / 'minimize', per objective
    rows: tuple[FrontPoint, ...]  # in candidate order


def front(space: dict, records: Records) -> ParetoFront | None:
    """Each measured candidate's mean objectives and whether it is on the front; None for a single-objective study."""
    study = space.get("study") or {}
    keys, dirs = list(study.get("objectives") or []), list(study.get("directions") or [])
    if len(keys) < 2:
        return None
    runs: dict[str, list[list[float]]] = {}
    for r in complete(records):
        values = [r.run.number(k) for k in keys]
        if all(v is not None for v in values):
            runs.setdefault(r.candidate, []).append([float(v or 0.0) for v in values])
    names = [n for n in order(space, records) if n in runs]
    means = [tuple(statistics.fmean(a[i] for a in runs[n]) for i in range(len(keys))) for n in names]
    on = pareto(means, [d == "maximize" for d in dirs])
    rows = (FrontPoint(n, len(runs[n]), m, flag) for n, m, flag in zip(names, means, on, strict=True))
    return ParetoFront(tuple(keys), tuple(dirs), tuple(rows))
