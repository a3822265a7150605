"""The search section's Info: what the search found (analysis.search_results, the summary's `search` table) and
the rows of its best-so-far history the text lists."""

from __future__ import annotations

from dataclasses import dataclass

from coatsearch.analysis.search_results import IMPORTANCE_SEEDS, SearchResults
from coatsearch.report.section import ReportContext

Step = tuple[int, float, float]  # (trial number, seconds since the search's first trial started, value)


@dataclass(frozen=True)
class SearchInfo:
    """The search section: the search's results, and per searched candidate the trials that improved its best."""

    results: SearchResults
    improved: tuple[tuple[Step, ...], ...]  # per results.searched, in order: the trials where the best so far changed
    forest_seeds: int  # the fANOVA forests each importance is the mean of


def search(ctx: ReportContext) -> SearchInfo | None:
    """The search section's Info, or None when the study searched nothing."""
    found: SearchResults | None = ctx.tables.get("search")
    if found is None:
        return None
    return SearchInfo(found, tuple(_improved(one.history) for one in found.searched), len(IMPORTANCE_SEEDS))


def _improved(history: tuple[tuple[int, float, float, float], ...]) -> tuple[Step, ...]:
    """The history's rows where the best so far changed (the first row always)."""
    rows, best = [], None
    for number, elapsed, value, so_far in history:
        if best is None or so_far != best:
            rows.append((number, elapsed, value))
            best = so_far
    return tuple(rows)
