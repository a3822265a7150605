"""The Pareto front of a multi-objective study (`study.objectives`): computed, then rendered.

Per candidate, the mean over its complete runs of each objective; a candidate is on the front when no other
is at least as good in every objective (in its direction) and better in one. Single-objective studies have
no front (the section is left out; view_speed.pareto and markdown_speed.pareto render it).
"""

from __future__ import annotations

import statistics
from typing import Any

from coatsearch.analysis.speed_tables import pareto
from coatsearch.analysis.tables import Records, complete, order


def front(space: dict, records: Records) -> dict | None:
    """{'objectives', 'directions', 'rows': [{candidate, means, n, pareto}]}; None for a single-objective study."""
    study = space.get("study") or {}
    keys, dirs = list(study.get("objectives") or []), list(study.get("directions") or [])
    if len(keys) < 2:
        return None
    runs: dict[str, list[list[float]]] = {}
    for r in complete(records):
        values = [r.run.number(k) for k in keys]
        if all(v is not None for v in values):
            runs.setdefault(r.candidate, []).append([float(v or 0.0) for v in values])
    rows: list[dict[str, Any]] = [
        {
            "candidate": n,
            "n": len(runs[n]),
            "means": [statistics.fmean(a[i] for a in runs[n]) for i in range(len(keys))],
        }
        for n in order(space, records)
        if n in runs
    ]
    for row, on in zip(rows, pareto([r["means"] for r in rows], [d == "maximize" for d in dirs]), strict=True):
        row["pareto"] = on
    return {"objectives": keys, "directions": dirs, "rows": rows}
