"""The report's opening Infos: the plain-words answer with the verdict table, and the regime table per claim.

Both are computed from the judged claims (papers.categories: category, reason, estimate, detectable difference,
what would decide it) and the complete runs, so that a reader of report.md sees the answer first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from coatsearch.analysis import constants as CS
from coatsearch.analysis.measure_results import Detectable
from coatsearch.analysis.results import Estimate
from coatsearch.analysis.tables import METRICS, shape
from coatsearch.papers import categories as K
from coatsearch.papers import verdicts as V
from coatsearch.papers.claim_results import ClaimVerdict
from coatsearch.report.section import ReportContext
from coatsearch.report.summary import StudySummary


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
    scores = [_score_of(c, ctx.summary) for c in claims]
    return Answer(scale(ctx, [s for s in scores if s]), rows, tuple((u.id, u.reason) for u in untested),
                  ctx.summary.search is not None)  # fmt: skip


def _score_of(claim: ClaimVerdict, summary: StudySummary) -> str | None:
    """The measure (metric key) a claim is decided on: its first evidence's, else the study's primary accuracy."""
    return claim.evidence[0].key if claim.evidence else summary.primary_acc


def scale(ctx: ReportContext, keys: Sequence[str]) -> str:
    """'<data set>, <training images>, <size>x<size>x<channels>, <seeds>' of the runs on the claims' scores."""
    size, channels, _ = shape(dict(ctx.space))
    dataset = (ctx.space.get("data") or {}).get("dataset")
    groups = {k.split(".")[0] for k in keys}
    done = ctx.frames.complete
    images = sorted({v for r in done for g in groups if (v := r.run.value(f"{g}.images")) is not None})
    seeds = {r.seed for r in done if any(r.run.value(f"{g}.images") is not None for g in groups)}
    bits = [dataset or "", span(images, "training images"), f"{size}x{size}x{channels}" if size else "",
            f"{len(seeds)} seed(s)" if seeds else ""]  # fmt: skip
    return ", ".join(b for b in bits if b)


def span(values: Sequence[float], what: str, digits: int = 0) -> str:
    """'500 what' or '100–1,300 what' ('' for none)."""
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:,.{digits}f} {what}" if lo == hi else f"{lo:,.{digits}f}–{hi:,.{digits}f} {what}"


@dataclass(frozen=True)
class RegimeRow:
    """One claim's regime at its deciding measure: data seen, the best network, the floors and the verdict's check."""

    claim: str
    measure: str  # the measure's label
    unit: str
    digits: int  # the measure's decimals
    images: tuple[int, ...]  # training images of a run
    processed: tuple[int, ...]  # images processed by a run: steps × batch
    epochs: tuple[float, ...]  # processed / training images
    best: str | None  # the best network of the claim on the measure
    best_value: float | None
    floor: float | None  # the linear floor on the measure (verdicts.floor_of)
    cnn: float | None  # the small CNN baseline's mean on the measure
    in_regime: bool
    why: str  # the first out-of-regime reason ('' in regime)


@dataclass(frozen=True)
class Regime:
    """The regime table: one row per judged claim."""

    rows: tuple[RegimeRow, ...]


def regime(ctx: ReportContext) -> Regime | None:
    """The regime table of the judged claims; None without any."""
    rows = tuple(r for c in ctx.summary.claims or [] if (r := _regime_row(ctx, c)) is not None)
    return Regime(rows) if rows else None


def _regime_row(ctx: ReportContext, claim: ClaimVerdict) -> RegimeRow | None:
    key = _score_of(claim, ctx.summary)
    if not key or key not in METRICS:
        return None
    metric, group, rows = METRICS[key], key.split(".")[0], ctx.summary.candidates
    batch = ((ctx.space.get("scores") or {}).get(group) or {}).get("batch_size")
    images, processed, epochs = set(), set(), set()
    for r in ctx.frames.complete:
        n, steps = r.run.number(f"{group}.images"), r.run.number(f"{group}.steps")
        b = batch or (r.run.optimizer.settings.get("batch_size") if r.run.optimizer else None)
        seen = steps * b if steps and b else (ep * n if (ep := r.run.number(f"{group}.epochs")) and n else None)
        images |= {int(n)} if n else set()
        processed |= {int(seen)} if seen else set()
        epochs |= {round(seen / n, 1)} if seen and n else set()
    names = {m.candidate for e in claim.evidence for m in e.members}
    sign = 1.0 if metric.better == "higher" else -1.0
    mine = [r for r in rows if key in r.metrics and r.candidate not in CS.BASELINES
            and (not names or r.candidate in names)]  # fmt: skip
    best = max(mine, key=lambda r: sign * r.metrics[key].mean, default=None)
    cnn = next((r.metrics[key].mean for r in rows if r.candidate == CS.BASELINES[-1] and key in r.metrics), None)
    out = claim.verdict == K.OUT_OF_REGIME
    why = (claim.reason or claim.why) if out else ""
    return RegimeRow(f"({claim.id})", metric.label, metric.unit, metric.digits, tuple(sorted(images)),
                     tuple(sorted(processed)), tuple(sorted(epochs)), best.candidate if best else None,
                     best.metrics[key].mean if best else None, V.floor_of(key, rows), cnn, not out,
                     why)  # fmt: skip
