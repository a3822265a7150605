"""The measured-speed and Pareto-front sections' Infos, from the tables speed.py and pareto.py computed."""

from __future__ import annotations

from dataclasses import dataclass

from coatsearch.analysis.constants import SPEED_SCORE
from coatsearch.analysis.pareto import ParetoFront
from coatsearch.analysis.speed_tables import SPREAD_NOTE, SpeedTable
from coatsearch.analysis.tables import METRICS
from coatsearch.report.section import ReportContext
from coatsearch.scores import SCORES

Pair = tuple[float | None, float | None]  # mean, sd (None: one run)


@dataclass(frozen=True)
class SpeedRow:
    """One candidate's speed: size, rates (mean, sd), accuracy, whether it is on the front, runs."""

    candidate: str
    macs: float | None
    params: float | None
    train_ips: Pair
    infer_ips: Pair
    latency_ms: Pair
    latency_iqr_ms: Pair
    acc: Pair | None
    pareto: bool
    n: int
    network: str = ""  # model label, stages, MACs, params: rows of one network share one speed on the front
    ranked: bool = False  # a layout with an accuracy: weighed for the Pareto front (baselines are not)


@dataclass(frozen=True)
class Spread:
    """How far apart budget-matched candidates are in one throughput; `noted` when past SPREAD_NOTE."""

    what: str  # "training" | "inference"
    ratio: float
    fast: str
    slow: str
    noted: bool


@dataclass(frozen=True)
class Speed:
    """The speed table, where and how it was measured, what measuring cost, and the spread notes."""

    acc_label: str
    rows: tuple[SpeedRow, ...]
    devices: tuple[str, ...]
    threads: tuple[str, ...]
    train_batch: tuple[str, ...]
    infer_batch: tuple[str, ...]
    max_share: float | None  # the largest share of a trial that measuring took
    spread: tuple[Spread, ...]


def speed(ctx: ReportContext) -> Speed | None:
    """The measured-speed section; None when no trial measured speed."""
    sp: SpeedTable | None = ctx.summary.speed
    if not sp:
        return None
    train, infer, lat, iqr = (m.key for m in SCORES[SPEED_SCORE].metrics[:4])  # the speed score's rates, in order
    rows = tuple(SpeedRow(r.candidate, r.rates["macs"][0], r.rates["params"][0], r.rates[train], r.rates[infer],
                          r.rates[lat], r.rates[iqr], r.acc, bool(r.pareto), r.n, r.network, r.pareto is not None)
                 for r in sp.rows)  # fmt: skip

    def pick(fact: str) -> tuple[str, ...]:
        return tuple(sorted({v for r in sp.rows for v in r.facts[fact]}))

    shares = [r.cost_share for r in sp.rows if r.cost_share is not None]
    notes = tuple(Spread("training" if s.key == train else "inference", s.ratio, s.fast, s.slow,
                         s.ratio > SPREAD_NOTE) for s in sp.spread)  # fmt: skip
    return Speed(sp.acc_label, rows, pick("device"), pick("threads"), pick("train_batch"),
                 pick("infer_batch"), max(shares) if shares else None, notes)  # fmt: skip


@dataclass(frozen=True)
class ParetoRow:
    """One candidate's mean objectives in display units, whether it is on the front, and its runs."""

    candidate: str
    values: tuple[float, ...]
    pareto: bool
    n: int


@dataclass(frozen=True)
class Pareto:
    """The multi-objective front: objectives with directions, column labels and digits, rows, the front."""

    goals: tuple[tuple[str, str], ...]  # (objective, direction)
    labels: tuple[str, ...]  # column heads: the metric's label and unit, or the key when it is no metric
    digits: tuple[int | None, ...]  # the metric's digits (None: 4 significant digits)
    rows: tuple[ParetoRow, ...]
    front: tuple[str, ...]


def pareto(ctx: ReportContext) -> Pareto | None:
    """The Pareto section; None for a single-objective study or one without complete runs."""
    pf: ParetoFront | None = ctx.summary.pareto
    if not pf or not pf.rows:
        return None
    metrics = [METRICS.get(k) for k in pf.objectives]
    rows = tuple(
        ParetoRow(r.candidate, tuple(v * m.scale if m else v for v, m in zip(r.means, metrics, strict=True)),
                  r.pareto, r.n)
        for r in pf.rows
    )  # fmt: skip
    return Pareto(
        tuple(zip(pf.objectives, pf.directions, strict=True)),
        tuple(f"{m.label} ({m.unit})" if m else k for m, k in zip(metrics, pf.objectives, strict=True)),
        tuple(m.digits if m else None for m in metrics), rows, tuple(r.candidate for r in pf.rows if r.pareto),
    )  # fmt: skip
