"""The Pareto front of a multi-objective study (`study.objectives`, issue 23): computed, then rendered.

Per candidate, the mean over its complete runs of each objective; a candidate is on the front when no other
is at least as good in every objective (in its direction) and better in one. Single-objective studies have
no front (the section is left out).
"""

from __future__ import annotations

import statistics
from typing import Any

from coatsearch.report.info import METRICS, Records, complete, order
from coatsearch.report.speed import pareto


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


def section(summary: dict) -> str:
    """'## Pareto front': one row per candidate, its mean objectives in display units, on the front or not."""
    from coatsearch.report.markdown import table

    pf = summary.get("pareto")
    if not pf or not pf["rows"]:
        return ""
    metrics = [METRICS.get(k) for k in pf["objectives"]]
    head = ["candidate"]
    head += [f"{m.label} ({m.unit})" if m else k for m, k in zip(metrics, pf["objectives"], strict=True)]
    head += ["Pareto front", "n"]
    body = []
    for r in pf["rows"]:
        cells = [f"{v * m.scale:.{m.digits}f}" if m else f"{v:.4g}" for v, m in zip(r["means"], metrics, strict=True)]
        body.append([r["candidate"], *cells, "yes" if r["pareto"] else "", r["n"]])
    goals = ", ".join(f"`{k}` ({d})" for k, d in zip(pf["objectives"], pf["directions"], strict=True))
    on = ", ".join(r["candidate"] for r in pf["rows"] if r["pareto"])
    text = (
        f"Multi-objective study: {goals}. Means over complete runs; on the front: {on} (no other candidate is "
        "at least as good in every objective and better in one). The dashboard plots the trials' front."
    )
    return "\n".join(["## Pareto front", "", text, "", table(head, body)])
