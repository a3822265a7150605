"""The search's Infos: what the search found (analysis.search_results, the summary's `search` table) and, per
searched candidate, the rows the text lists (the trials that improved the best so far, the rejected points in all
and the members of a multi-objective search's Pareto front); and the search's answer, which a search study's report
opens with before the papers' claims: its best against the best named candidate on fresh seeds, what that
re-evaluation could resolve, and the random baseline's expected result and regret."""

from __future__ import annotations

import math
from dataclasses import dataclass

from coatsearch.analysis.search_results import IMPORTANCE_SEEDS, RESOLUTION, SAME
from coatsearch.analysis.search_types import Arch, Paired, ParetoPoint, Random, Searched, SearchResults
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
    found: SearchResults | None = ctx.summary.search
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


FAR = 2.0  # a detectable difference above FAR × RESOLUTION: the re-evaluation only demonstrates the machinery


@dataclass(frozen=True)
class Fresh:
    """The search's best re-evaluated architecture against the best named candidate on the fresh seeds, and what that
    re-evaluation could resolve on an accuracy (%): RESOLUTION or not, and the fresh seeds it would need."""

    pair: Paired  # the paired test (analysis.search_results: d, interval, Holm p, detectable, the pair's own noise)
    resolves: bool | None  # detectable <= RESOLUTION; None: not an accuracy in %, or nothing detectable (one seed)
    machinery: bool  # detectable > FAR × RESOLUTION: the re-evaluation demonstrates the machinery, no more
    needed: int | None  # fresh seeds at which RESOLUTION is detectable at 80% power, at the pair's level and paired
    # sd (stats.seeds_needed); None where it resolves already, has no noise, or needs more than stats.MAX_SEEDS
    others: int  # the other architectures the re-evaluation compared (the search section lists them)


@dataclass(frozen=True)
class Lead:
    """One searched candidate's answer: the search's best on its own seeds, the comparison on fresh seeds, the random
    baseline."""

    candidate: str
    trials: int
    best: Arch | None  # the architecture the search ranks first, on the seeds it selected on (None: found nothing)
    named: Arch | None  # the best named candidate on the search's own seeds (None: no named candidate)
    selected: float | None  # best − named on those seeds: the selection-biased figure (None: either missing)
    twin: str | None  # the named candidate that the search's best builds too (search.identity), where it does
    fresh: Fresh | None  # None: no architecture was compared on fresh seeds
    planned: int  # the fresh seeds `study.reevaluate` asks for (0: no re-evaluation)
    random: Random | None  # the random baseline and regret (None: the search found nothing)


@dataclass(frozen=True)
class SearchAnswer:
    """A search study's opening: per searched candidate, the search's answer, before the papers' claims."""

    sampler: str
    label: str
    unit: str
    resolution: float  # RESOLUTION, in the objective's units
    leads: tuple[Lead, ...]


def answer(ctx: ReportContext) -> SearchAnswer | None:
    """The search's answer, or None when the study searched nothing."""
    found: SearchResults | None = ctx.summary.search
    planned = int(((ctx.space.get("study") or {}).get("reevaluate") or {}).get("seeds") or 0)
    return None if found is None else answer_of(found, planned)


def answer_of(found: SearchResults, planned: int) -> SearchAnswer:
    """The search's answer from what it found; `planned`: the fresh seeds `study.reevaluate` asks for."""
    named = found.named[0] if found.named else None
    leads = tuple(_lead(one, named, planned, found.unit == "%") for one in found.searched)
    return SearchAnswer(found.sampler, found.label, found.unit, RESOLUTION, leads)


def _lead(one: Searched, named: Arch | None, planned: int, percent: bool) -> Lead:
    """One searched candidate's answer: the re-evaluated pairs in the search's own ranking (never re-ranked on the
    test images that judge them); the first one that is tested leads."""
    rank = {a.name: i for i, a in enumerate(one.top)}
    pairs = sorted(one.reevaluation, key=lambda p: rank.get(p.found, len(rank)))
    best = one.top[0] if one.top else None
    twin = pairs[0].named if best and pairs and pairs[0].verdict == SAME and pairs[0].found == best.name else None
    tested = [p for p in pairs if p.verdict != SAME]
    fresh = _fresh(tested[0], len(tested) - 1, percent) if tested else None
    selected = best.mean - named.mean if best and named else None
    return Lead(one.candidate, one.trials, best, named, selected, twin, fresh, planned, one.random)


def _fresh(p: Paired, others: int, percent: bool) -> Fresh:
    """What the pair's re-evaluation could resolve, and the fresh seeds RESOLUTION would need."""
    if not percent or p.detectable is None:
        return Fresh(p, None, False, None, others)
    resolves = p.detectable <= RESOLUTION
    return Fresh(p, resolves, p.detectable > FAR * RESOLUTION, None if resolves else p.needed, others)
