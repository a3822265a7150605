"""The report's opening Infos: the plain-words answer with the verdict table, and the regime table per claim.

Both read the study's summary: the judged claims (papers.categories: category, reason, estimate, detectable
difference, what would decide it), the proxy scale and each claim's regime (report.regime computes those), so that
a reader of report.md sees the answer first.
"""

from __future__ import annotations

from dataclasses import dataclass

from coatsearch.analysis.measure_results import Detectable
from coatsearch.analysis.results import Estimate
from coatsearch.report.section import ReportContext
from coatsearch.report.summary import RegimeRow


@dataclass(frozen=True)
class Verdict:
    """One row of the verdict table: the claim, its category, estimate, power, reason, what would decide it."""

    id: str
    title: str
    category: str
    estimate: Estimate | None
    detectable: Detectable | None
    reason: str
    decide: str
    status: str  # confirmatory, registered (no firm verdict possible) or exploratory


@dataclass(frozen=True)
class Answer:
    """The plain-words answer: the proxy scale, every judged claim's verdict row and the untested claims."""

    scale: str  # 'fashion_mnist, 500–1,000 training images, 32x32x1, 4 seeds' ('' when nothing is recorded)
    rows: tuple[Verdict, ...]
    untested: tuple[tuple[str, str], ...]  # (claim id, why not tested)
    after_search: bool = False  # a search study: its own answer (view_search.answer) comes first, the claims after


def answer(ctx: ReportContext) -> Answer | None:
    """The answer from the judged claims; None when the study judges no claim and marks none untestable."""
    claims, untested = ctx.summary.claims, ctx.summary.untested
    if not claims and not untested:
        return None
    rows = tuple(Verdict(c.id, c.title, c.verdict, c.estimate, c.detectable, c.reason or c.why, c.decide,
                         c.status or "") for c in claims)  # fmt: skip
    return Answer(ctx.summary.scale, rows, tuple((u.id, u.reason) for u in untested),
                  ctx.summary.search is not None)  # fmt: skip


@dataclass(frozen=True)
class Regime:
    """The regime table: one row per judged claim."""

    rows: tuple[RegimeRow, ...]


def regime(ctx: ReportContext) -> Regime | None:
    """The regime table of the judged claims; None without any."""
    rows = ctx.summary.regime
    return Regime(rows) if rows else None
