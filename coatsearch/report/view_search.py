"""The search section's Info: what the search found (analysis.search_results, the summary's `search` table) and,
per searched candidate, the rows the text lists: the trials that improved the best so far, the rejected points in
all and the members of a multi-objective search's Pareto front."""

from __future__ import annotations

import math
from dataclasses import dataclass

from coatsearch.analysis.search_results import IMPORTANCE_SEEDS, ParetoPoint, Searched, SearchResults
from coatsearch.report.section import ReportContext

Step = tuple[int, float | None, float]  # (trial number, seconds since the search's first trial started, value)


@dataclass(frozen=True)
class SearchedView:
    """One searched candidate's result and the rows the text lists of it."""

    found: Searched
    improved: tuple[Step, ...]  # the trials where the best so far changed (elapsed None: not recorded)
    rejected: int  # points rejected before training, in all
    front: tuple[ParetoPoint, ...]  # the Pareto front's members, in the result's order


@dataclass(frozen=True)
class SearchInfo:
    """The search section: the search's results, and per searched candidate what the text lists of it."""

    results: SearchResults
    searched: tuple[SearchedView, ...]  # per results.searched, in order
    forest_seeds: int  # the fANOVA forests each importance is the mean of


def search(ctx: ReportContext) -> SearchInfo | None:
    """The search section's Info, or None when the study searched nothing."""
    found: SearchResults | None = ctx.tables.get("search")
    if found is None:
        return None
    return SearchInfo(found, tuple(_view(one) for one in found.searched), len(IMPORTANCE_SEEDS))


def _view(one: Searched) -> SearchedView:
    rows: list[Step] = []
    best = None
    for number, elapsed, value, so_far in one.history:
        if best is None or so_far != best:
            rows.append((number, None if math.isnan(elapsed) else elapsed, value))
            best = so_far
    on = tuple(p for p in one.front if p.pareto)
    return SearchedView(one, tuple(rows), sum(n for _, n, _ in one.rejected), on)
